"""dpcalc — a command-line privacy budget calculator for differential privacy."""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``dpcalc.plan_sgd(...)`` and the other API functions (see :mod:`dpcalc.api`), imported on first use so that
    the command line's start-up does not pay for them."""
    if name.startswith("_"):
        raise AttributeError(name)
    import importlib

    api = importlib.import_module("dpcalc.api")  # not 'from dpcalc import api', which would come back here
    if name in api.__all__:
        return getattr(api, name)
    raise AttributeError(f"module 'dpcalc' has no attribute {name!r}")
