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
class DiscreteGaussian:
    """Discrete Gaussian mechanism N_Z(0, σ²) on an integer query of sensitivity Δ (σ is its parameter, not
    its standard deviation)."""

    sigma: float
    sensitivity: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"type": "discrete_gaussian", "sigma": self.sigma, "sensitivity": self.sensitivity}


@dataclass(frozen=True)
class DiscreteLaplace:
    """Discrete Laplace (two-sided geometric) mechanism, P(x) ∝ e^{−|x|/t}, on an integer query of sensitivity Δ."""

    scale: float
    sensitivity: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"type": "discrete_laplace", "scale": self.scale, "sensitivity": self.sensitivity}


@dataclass(frozen=True)
class RandomizedResponse:
    """k-ary randomized response that is ε₀-DP: keep the true value with probability e^{ε₀}/(e^{ε₀} + k − 1)."""

    epsilon: float
    k: int = 2

    def to_dict(self) -> dict[str, Any]:
        return {"type": "randomized_response", "epsilon": self.epsilon, "k": self.k}


@dataclass(frozen=True)
class BoundedRange:
    """An ε₀-bounded-range mechanism (the exponential mechanism, report-noisy-max with Gumbel noise)."""

    epsilon: float

    def to_dict(self) -> dict[str, Any]:
        return {"type": "bounded_range", "epsilon": self.epsilon}


#: The discrete mechanisms (issue 13, item 4).
DISCRETE = (DiscreteGaussian, DiscreteLaplace, RandomizedResponse, BoundedRange)


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


#: Sampling schemes of a subsampled object: Poisson, without replacement, and (for a Gaussian inner
#: mechanism, add/remove neighbours) Poisson with batches capped at max_batch_size of dataset_size records
#: (truncated-poisson), and Poisson sampling of the examples_per_user examples of one user (user-level).
SUBSAMPLED_SCHEMES = ("poisson", "without-replacement", "truncated-poisson", "user-level")


@dataclass(frozen=True)
class Subsampled:
    """A mechanism run on a random subsample of the data."""

    inner: Any
    rate: float
    scheme: str  # one of SUBSAMPLED_SCHEMES
    neighbours: str  # "add-remove" or "substitution"
    dataset_size: int | None = None  # truncated-poisson
    max_batch_size: int | None = None  # truncated-poisson
    examples_per_user: int | None = None  # user-level

    def to_dict(self) -> dict[str, Any]:
        d = {
            "type": "subsampled",
            "rate": self.rate,
            "scheme": self.scheme,
            "neighbours": self.neighbours,
            "inner": self.inner.to_dict(),
        }
        for k in ("dataset_size", "max_batch_size", "examples_per_user"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d


#: Schemes of a one-batch-per-epoch object: each record is in exactly one batch of each epoch.
EPOCH_SCHEMES = ("shuffle", "balls-in-bins")


@dataclass(frozen=True)
class Shuffled:
    """A Gaussian mechanism run for ``epochs`` epochs in which every record is in exactly one batch per epoch
    (shuffled epochs, or balls-in-bins), under substitution or zero-out neighbours. Accounted without
    amplification: exactly ``epochs`` Gaussian mechanisms on the record (√E·Δ/σ-GDP).

    Balls-in-bins with ``batches`` (k batches per epoch) is stated for add/remove neighbours (the same as
    zero-out there) and accounted with amplification by random allocation: the PLD engine on the pair of
    :mod:`dpcalc.core.pld.allocation` (the other methods keep the unamplified GDP bound)."""

    inner: Any
    epochs: int
    scheme: str  # one of EPOCH_SCHEMES
    batches: int | None = None  # balls-in-bins only: batches per epoch, for the amplified bound

    def to_dict(self) -> dict[str, Any]:
        d = {"type": "shuffled", "scheme": self.scheme, "epochs": self.epochs, "inner": self.inner.to_dict()}
        if self.batches is not None:
            d["batches"] = self.batches
        return d


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
        if not rows:  # readings whose sound side is low (β of a trade-off curve, an audit's proven ε)
            rows = [r for r in self.rows if r.get("bound") == "lower"]
        if any("tightest" in r for r in rows):
            rows = [r for r in rows if r.get("tightest")]
        return rows

    def to_records(self) -> list[dict[str, Any]]:
        """The rows, one dict per row with every column's key (None where a row has no value)."""
        keys = [c.key for c in self.columns]
        return [{k: r.get(k) for k in keys} for r in self.rows]

    def column(self, key: str) -> list[Any]:
        """One column's values, row by row."""
        if key not in {c.key for c in self.columns}:
            raise KeyError(f"{key!r} is not a column; the columns are {', '.join(c.key for c in self.columns)}")
        return [r.get(key) for r in self.rows]

    def __str__(self) -> str:
        from dpcalc.render import table_text

        return table_text(self)

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


#: The fields each privacy object type may carry (besides ``type``); anything else is refused.
FIELDS: dict[str, tuple[str, ...]] = {
    "gaussian": ("sigma", "sensitivity"),
    "laplace": ("scale", "sensitivity"),
    "discrete_gaussian": ("sigma", "sensitivity"),
    "discrete_laplace": ("scale", "sensitivity"),
    "randomized_response": ("epsilon", "k"),
    "bounded_range": ("epsilon",),
    "dp": ("epsilon", "delta"),
    "gdp": ("mu",),
    "zcdp": ("rho",),
    "rdp": ("orders", "values"),
    "subsampled": ("rate", "scheme", "neighbours", "inner", "dataset_size", "max_batch_size", "examples_per_user"),
    "shuffled": ("scheme", "epochs", "inner", "batches"),
    "composed": ("parts",),
}
#: Largest exact count: integers above 2^53 cannot all be told apart once they pass through a float.
MAX_COUNT = 2**53


#: Defaults taken from input that could hide a forgotten field, each said once on stderr (with the first place it
#: was taken) by the command's output (:func:`input_default_warnings`).
INPUT_DEFAULTS = {
    "dp-delta": "a dp object or release without 'delta' is taken as pure ε-DP (δ = 0): write delta = 0 to say so, "
    "or give its δ (first at {where})",
}


def note_default(key: str, where: str) -> None:
    """Record that input took the default ``key`` at ``where`` (the first place is kept), for the running command."""
    import click

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta.setdefault("dpcalc.input_defaults", {}).setdefault(key, where)


def input_default_warnings(meta: dict) -> list[str]:
    """The warnings for the defaults :func:`note_default` recorded in a command's context ``meta``."""
    taken = meta.get("dpcalc.input_defaults") or {}
    return [INPUT_DEFAULTS[k].format(where=w) for k, w in taken.items()]


def type_name(obj: Any) -> str:
    """The JSON ``type`` of a privacy object (what a user wrote or piped), for messages."""
    try:
        return str(obj.to_dict()["type"])
    except (AttributeError, KeyError, TypeError):
        return type(obj).__name__


def check_fields(d: dict, allowed, where: str, what: str) -> None:
    """Refuse keys of ``d`` outside ``allowed``, naming the nearest allowed one."""
    from dpcalc.strictjson import suggest

    for key in d:
        if key not in allowed:
            names = ", ".join(sorted(allowed))
            raise ObjectError(f"{where}: unknown field {key!r}{suggest(key, allowed)} for {what}; allowed: {names}")


def _text(d: dict, key: str, where: str, choices=None, default=None) -> str:
    from dpcalc.strictjson import suggest

    if key not in d:
        if default is None:
            raise ObjectError(f"{where}: field '{key}' is missing")
        return default
    v = d[key]
    if not isinstance(v, str):
        raise ObjectError(f"{where}: field '{key}' must be a string; got {v!r}")
    if choices is not None and v not in choices:
        opts = " or ".join(repr(x) for x in choices) if len(choices) <= 2 else "one of " + ", ".join(choices)
        raise ObjectError(f"{where}: field '{key}' must be {opts}; got {v!r}{suggest(v, choices)}")
    return v


def count(d: dict, key: str, where: str, default: int | None = 1) -> int:
    """A whole number ≥ 1 read exactly: JSON/TOML integers as they are, a float only when it is an exact integer."""
    if key not in d:
        if default is None:
            raise ObjectError(f"{where}: field '{key}' is missing")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ObjectError(f"{where}: field '{key}' must be a whole number >= 1; got {v!r}")
    if isinstance(v, float):
        if not (v.is_integer() and 1 <= v <= MAX_COUNT):
            raise ObjectError(
                f"{where}: field '{key}' must be a whole number in [1, {MAX_COUNT}] (write it without a decimal "
                f"point); got {v!r}"
            )
        v = int(v)
    if not 1 <= v <= MAX_COUNT:
        raise ObjectError(f"{where}: field '{key}' must be a whole number in [1, {MAX_COUNT}]; got {v!r}")
    return v


#: Largest integer sensitivity of a discrete mechanism (and largest k of randomized response).
MAX_INTEGER = 2**31 - 1
#: Largest integer sensitivity of a discrete Laplace mechanism (its privacy loss has Δ + 1 atoms).
MAX_DLAPLACE_SENSITIVITY = 2**20 - 1
#: Smallest σ of a discrete Gaussian dpcalc computes with.
MIN_DGAUSS_SIGMA = 0.05


def integer(d: dict, key: str, where: str, low: int = 1, high: int = MAX_INTEGER, default: int | None = None) -> int:
    """A whole number in [low, high] read exactly (a float only when it is an exact integer)."""
    if key not in d:
        if default is None:
            raise ObjectError(f"{where}: field '{key}' is missing")
        return default
    v = d[key]
    ok = not isinstance(v, bool) and isinstance(v, (int, float))
    if ok and isinstance(v, float):
        ok = v.is_integer()
    if not ok or not low <= v <= high:
        raise ObjectError(f"{where}: field '{key}' must be a whole number in [{low}, {high}]; got {v!r}")
    return int(v)


def discrete_from_fields(kind: str, d: dict, where: str):
    """A discrete mechanism from its fields (a JSON object or a ledger release), every range checked."""
    if kind == "discrete_gaussian":
        sigma = _number(d, "sigma", where)
        if sigma < MIN_DGAUSS_SIGMA:
            raise ObjectError(f"{where}: field 'sigma' must be a number >= {MIN_DGAUSS_SIGMA:g}; got {d['sigma']!r}")
        return DiscreteGaussian(sigma, integer(d, "sensitivity", where, default=1))
    if kind == "discrete_laplace":
        return DiscreteLaplace(
            _number(d, "scale", where), integer(d, "sensitivity", where, high=MAX_DLAPLACE_SENSITIVITY, default=1)
        )
    if kind == "randomized_response":
        return RandomizedResponse(_number(d, "epsilon", where), integer(d, "k", where, low=2, default=2))
    return BoundedRange(_number(d, "epsilon", where))


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
) -> float:
    import math

    if key not in d:
        if default is not None:
            return default
        raise ObjectError(f"{where}: field '{key}' is missing")
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ObjectError(f"{where}: field '{key}' must be a number; got {v!r}")
    try:
        v = float(v) + 0.0  # (−0.0 is 0: it is echoed as 0, as the command line reads "-0")
    except OverflowError:
        v = math.inf
    ok = math.isfinite(v) and (v > low if low_open else v >= low)
    if high is not None:
        ok = ok and (v < high if high_open else v <= high)
    if not ok:
        lb = "(" if low_open else "["
        rng = (
            f"in {lb}{low:g}, {high:g}{')' if high_open else ']'}"
            if high is not None
            else f"{'>' if low_open else '>='} {low:g}"
        )
        raise ObjectError(f"{where}: field '{key}' must be a number {rng}; got {d[key]!r}")
    return v


def scheme_fields(d: dict, scheme: str, where: str) -> dict[str, int]:
    """The fields a sampling scheme needs (whole numbers >= 1), each required for its scheme and refused for
    any other: dataset_size and max_batch_size (truncated-poisson), examples_per_user (user-level)."""
    needs = {"truncated-poisson": ("dataset_size", "max_batch_size"), "user-level": ("examples_per_user",)}
    own = needs.get(scheme, ())
    for k in ("dataset_size", "max_batch_size", "examples_per_user"):
        if k in d and k not in own:
            goes = [s for s, ks in needs.items() if k in ks][0]
            raise ObjectError(f"{where}: field '{k}' goes with sampling {goes!r}, not {scheme!r}")
    return {k: count(d, k, where, default=None) for k in own}


def repeated(values) -> tuple[int, int] | None:
    """The positions (i, j), i < j, of the first value given again (an RDP curve's order), or None."""
    first: dict = {}
    for j, x in enumerate(values):
        if x in first:
            return first[x], j
        first[x] = j
    return None


def from_dict(d: Any, where: str = "object"):
    """Build a privacy object from its ``to_dict`` form, validating every field.

    Unknown fields, wrong types and values out of range are refused with a
    message naming ``where`` and the field.
    """
    from dpcalc.strictjson import suggest

    if not isinstance(d, dict):
        raise ObjectError(f"{where}: expected a JSON object with a 'type'; got {type(d).__name__}")
    kind = d.get("type")
    if not isinstance(kind, str) or kind not in FIELDS:  # (a list or object as the type is no type)
        known = ", ".join(FIELDS)
        hint = suggest(kind, FIELDS) if isinstance(kind, str) else ""
        got = "no 'type'" if "type" not in d else f"unknown type {kind!r}{hint}"
        raise ObjectError(f"{where}: {got}; expected one of {known}")
    check_fields(d, ("type", *FIELDS[kind]), where, f"a {kind} object")
    if kind == "gaussian":
        return Gaussian(_number(d, "sigma", where), _number(d, "sensitivity", where, default=1.0))
    if kind == "laplace":
        return Laplace(_number(d, "scale", where), _number(d, "sensitivity", where, default=1.0))
    if kind in ("discrete_gaussian", "discrete_laplace", "randomized_response", "bounded_range"):
        return discrete_from_fields(kind, d, where)
    if kind == "dp":
        if "delta" not in d:
            note_default("dp-delta", where)
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
        o = tuple(_number({"orders": x}, "orders", f"{where} order {i}", low=1.0) for i, x in enumerate(orders, 1))
        v = tuple(
            _number({"values": x}, "values", f"{where} value {i}", low_open=False) for i, x in enumerate(values, 1)
        )
        twice = repeated(o)
        if twice is not None:
            i, j = twice
            raise ObjectError(
                f"{where}: order {o[j]:g} is given twice (orders {i + 1} and {j + 1}); give each order once"
            )
        return RDPCurve(o, v)
    if kind == "subsampled":
        scheme = _text(d, "scheme", where, SUBSAMPLED_SCHEMES, default="poisson")
        default_nb = "substitution" if scheme == "without-replacement" else "add-remove"
        nb = _text(d, "neighbours", where, ("add-remove", "substitution"), default=default_nb)
        inner = from_dict(d.get("inner"), f"{where} inner")
        if isinstance(inner, (Subsampled, Composed, Shuffled)):
            raise ObjectError(f"{where}: the inner mechanism of a subsampled object must be a single mechanism")
        if isinstance(inner, DISCRETE):
            raise ObjectError(
                f"{where}: subsampling a {inner.to_dict()['type']} mechanism is not supported; "
                "the inner mechanism must be gaussian, laplace or dp"
            )
        extra = scheme_fields(d, scheme, where)
        if extra and not isinstance(inner, Gaussian):
            raise ObjectError(f"{where}: {scheme} sampling is accounted for a Gaussian inner mechanism only")
        # Each scheme is analysed under one neighbouring relation; another one named is refused, not
        # ignored (Poisson with substitution neighbours is a different, less private, mechanism).
        needed = "substitution" if scheme == "without-replacement" else "add-remove"
        if nb != needed:
            raise ObjectError(
                f"{where}: {scheme} sampling is analysed with {needed} neighbours; got neighbours = {nb!r} "
                "(dpcalc makes no claim for it)"
            )
        rate = _number(d, "rate", where, high=1.0)
        return Subsampled(inner, rate, scheme, nb, **extra)
    if kind == "shuffled":
        scheme = _text(d, "scheme", where, EPOCH_SCHEMES)
        inner = from_dict(d.get("inner"), f"{where} inner")
        if not isinstance(inner, Gaussian):
            raise ObjectError(f"{where}: the inner mechanism of a shuffled object must be a gaussian")
        batches = None
        if "batches" in d:
            if scheme != "balls-in-bins":
                raise ObjectError(f"{where}: field 'batches' goes with scheme 'balls-in-bins', not {scheme!r}")
            batches = count(d, "batches", where, default=None)
        return Shuffled(inner, count(d, "epochs", where, default=None), scheme, batches)
    parts = d.get("parts")
    if not isinstance(parts, list) or not parts:
        raise ObjectError(f"{where}: 'parts' must be a non-empty list")
    out = []
    for i, p in enumerate(parts, 1):
        w = f"{where} part {i}"
        if not isinstance(p, dict):
            raise ObjectError(f"{w}: expected an object with 'times' and 'of'")
        check_fields(p, ("times", "of"), w, "a part of a composed object")
        out.append((from_dict(p.get("of"), w), count(p, "times", w)))
    return Composed(tuple(out))
