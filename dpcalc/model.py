"""The objects that flow between commands and into JSON.

Privacy objects describe a mechanism or a guarantee (what a result *is*);
:class:`Result` is what a command computed about them (rows of numbers, each
with its method and bound). Everything serialises through ``to_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1


class UnrepresentableResult(ValueError):
    """A computed value does not fit in a double: the inputs are beyond what dpcalc can answer."""


#: How a number relates to the truth.
BOUNDS = ("exact", "upper", "approximate")


# --------------------------------------------------------------------------
# Privacy objects
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Gaussian:
    """Gaussian mechanism: noise N(0, σ²) on a query of L2 sensitivity Δ."""

    sigma: float
    sensitivity: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"type": "gaussian", "sigma": self.sigma, "sensitivity": self.sensitivity}


@dataclass(frozen=True)
class Laplace:
    """Laplace mechanism: noise Lap(b) on a query of L1 sensitivity Δ."""

    scale: float
    sensitivity: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"type": "laplace", "scale": self.scale, "sensitivity": self.sensitivity}


@dataclass(frozen=True)
class DP:
    """An (ε, δ)-DP guarantee (δ = 0 for pure ε-DP)."""

    epsilon: float
    delta: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"type": "dp", "epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class GDP:
    """A μ-GDP guarantee."""

    mu: float

    def to_dict(self) -> dict[str, Any]:
        return {"type": "gdp", "mu": self.mu}


@dataclass(frozen=True)
class ZCDP:
    """A ρ-zCDP guarantee."""

    rho: float

    def to_dict(self) -> dict[str, Any]:
        return {"type": "zcdp", "rho": self.rho}


@dataclass(frozen=True)
class RDPCurve:
    """An RDP guarantee given at a list of orders."""

    orders: tuple[float, ...]
    values: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "rdp", "orders": list(self.orders), "values": list(self.values)}


@dataclass(frozen=True)
class Subsampled:
    """A mechanism run on a random subsample of the data."""

    inner: Any
    rate: float
    scheme: str  # "poisson" or "without-replacement"
    neighbours: str  # "add-remove" or "substitution"

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "subsampled",
            "rate": self.rate,
            "scheme": self.scheme,
            "neighbours": self.neighbours,
            "inner": self.inner.to_dict(),
        }


@dataclass(frozen=True)
class Composed:
    """Several mechanisms or guarantees applied to the same data, each ``times`` times."""

    parts: tuple[tuple[Any, int], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "composed",
            "parts": [{"times": t, "of": p.to_dict()} for p, t in self.parts],
        }


# --------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A result column.

    ``safe`` says which way display rounding must go so that a printed value
    never looks more private than the computed one: ``"up"`` for ε, δ, μ, ρ
    and calibrated noise, ``"down"`` for budgets such as a number of epochs,
    ``"nearest"`` for inputs echoed back.
    """

    key: str
    label: str
    kind: str = "float"  # float | int | text | bool
    safe: str = "nearest"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "label": self.label, "kind": self.kind}


@dataclass(frozen=True)
class Result:
    """What a command computed: rows with method and bound, warnings, and objects."""

    command: str
    inputs: dict[str, Any]
    columns: tuple[Column, ...]
    rows: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...] = ()
    objects: tuple[Any, ...] = ()
    notes: tuple[str, ...] = ()
    #: Exit status the command asks for (e.g. a failed budget check).
    status: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from dpcalc import __version__

        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "dpcalc_version": __version__,
            "command": self.command,
            "inputs": self.inputs,
            "columns": [c.to_dict() for c in self.columns],
            "rows": [dict(r) for r in self.rows],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "objects": [o.to_dict() for o in self.objects],
        }
        doc.update(self.extra)
        return doc
