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
    #: One line for stderr when a budget check failed.
    failure: str | None = None

    def answer_rows(self) -> list[dict[str, Any]]:
        """The rows that answer the question: the tightest sound ones where marked, else every sound row."""
        rows = [r for r in self.rows if r.get("bound") in ("exact", "upper")]
        if any("tightest" in r for r in rows):
            rows = [r for r in rows if r.get("tightest")]
        return rows

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


# --------------------------------------------------------------------------
# Reading objects back (pipes and ledgers)
# --------------------------------------------------------------------------


class ObjectError(ValueError):
    """A privacy object in JSON or a ledger is malformed; the message says where."""


def _number(
    d: dict,
    key: str,
    where: str,
    *,
    low: float = 0.0,
    low_open: bool = True,
    high: float | None = None,
    high_open: bool = False,
    default: float | None = None,
    integer: bool = False,
) -> float:
    import math

    if key not in d:
        if default is not None:
            return default
        raise ObjectError(f"{where}: field '{key}' is missing")
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ObjectError(f"{where}: field '{key}' must be a number; got {v!r}")
    v = float(v)
    ok = math.isfinite(v) and (v > low if low_open else v >= low)
    if high is not None:
        ok = ok and (v < high if high_open else v <= high)
    if integer:
        ok = ok and v == math.floor(v)
    if not ok:
        lb = "(" if low_open else "["
        rng = (
            f"in {lb}{low:g}, {high:g}{')' if high_open else ']'}"
            if high is not None
            else f"{'>' if low_open else '>='} {low:g}"
        )
        kind = "a whole number" if integer else "a number"
        raise ObjectError(f"{where}: field '{key}' must be {kind} {rng}; got {d[key]!r}")
    return v


def from_dict(d: Any, where: str = "object"):
    """Build a privacy object from its ``to_dict`` form, validating every field."""
    if not isinstance(d, dict):
        raise ObjectError(f"{where}: expected a JSON object with a 'type'; got {type(d).__name__}")
    kind = d.get("type")
    if kind == "gaussian":
        return Gaussian(_number(d, "sigma", where), _number(d, "sensitivity", where, default=1.0))
    if kind == "laplace":
        return Laplace(_number(d, "scale", where), _number(d, "sensitivity", where, default=1.0))
    if kind == "dp":
        return DP(
            _number(d, "epsilon", where, low_open=False),
            _number(d, "delta", where, low_open=False, high=1.0, high_open=True, default=0.0),
        )
    if kind == "gdp":
        return GDP(_number(d, "mu", where, low_open=False))
    if kind == "zcdp":
        return ZCDP(_number(d, "rho", where, low_open=False))
    if kind == "rdp":
        orders, values = d.get("orders"), d.get("values")
        if not isinstance(orders, list) or not isinstance(values, list) or len(orders) != len(values) or not orders:
            raise ObjectError(f"{where}: 'orders' and 'values' must be non-empty lists of equal length")
        o = tuple(_number({"o": x}, "o", f"{where} orders", low=1.0) for x in orders)
        v = tuple(_number({"v": x}, "v", f"{where} values", low_open=False) for x in values)
        return RDPCurve(o, v)
    if kind == "subsampled":
        scheme = d.get("scheme", "poisson")
        if scheme not in ("poisson", "without-replacement"):
            raise ObjectError(f"{where}: field 'scheme' must be 'poisson' or 'without-replacement'; got {scheme!r}")
        default_nb = "add-remove" if scheme == "poisson" else "substitution"
        nb = d.get("neighbours", default_nb)
        if nb not in ("add-remove", "substitution"):
            raise ObjectError(f"{where}: field 'neighbours' must be 'add-remove' or 'substitution'; got {nb!r}")
        inner = from_dict(d.get("inner"), f"{where} inner")
        if isinstance(inner, (Subsampled, Composed)):
            raise ObjectError(f"{where}: the inner mechanism of a subsampled object must be a single mechanism")
        return Subsampled(inner, _number(d, "rate", where, high=1.0), scheme, nb)
    if kind == "composed":
        parts = d.get("parts")
        if not isinstance(parts, list) or not parts:
            raise ObjectError(f"{where}: 'parts' must be a non-empty list")
        out = []
        for i, p in enumerate(parts, 1):
            w = f"{where} part {i}"
            if not isinstance(p, dict):
                raise ObjectError(f"{w}: expected an object with 'times' and 'of'")
            times = int(_number(p, "times", w, low=1.0, low_open=False, integer=True, default=1.0))
            out.append((from_dict(p.get("of"), w), times))
        return Composed(tuple(out))
    known = "gaussian, laplace, dp, gdp, zcdp, rdp, subsampled, composed"
    raise ObjectError(f"{where}: unknown type {kind!r}; expected one of {known}")
