"""dpcalc — a command-line privacy budget calculator for differential privacy."""

__version__ = "0.1.0"
