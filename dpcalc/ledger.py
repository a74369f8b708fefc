"""Privacy ledgers: a product's releases in a TOML (or JSON) file.

Format (TOML; the JSON form has the same keys)::

    [ledger]
    name = "analytics"          # optional
    delta = 1e-6                # δ at which totals are reported (or --delta)
    max_epsilon = 8             # optional budget (or --max-epsilon)
    neighbours = "add-remove"   # or "substitution"

    [[release]]
    name = "daily counts"
    mechanism = "gaussian"      # gaussian | laplace | dp | gdp | zcdp | discrete_gaussian |
                                # discrete_laplace | randomized_response | bounded_range
    sigma = 20                  # gaussian: sigma (or noise_multiplier), sensitivity
    sensitivity = 1
    times = 365                 # default 1
    rate = 0.01                 # optional sampling rate
    sampling = "poisson"        # poisson (default) | without-replacement | truncated-poisson | user-level
                                # | shuffle | balls-in-bins (gaussian releases; see below)

Sampling schemes of a DP-SGD run (gaussian releases, ``noise_multiplier`` or ``sigma``):
``truncated-poisson`` needs ``rate``, ``dataset_size`` and ``max_batch_size`` (``times``: the steps);
``user-level`` needs ``rate`` and ``examples_per_user``; both add-remove neighbours and accounted by the
PLD engine. ``shuffle`` and ``balls-in-bins`` need ``epochs`` (each record in one batch per epoch; no
``rate``: no amplification is assumed, so ``times`` counts whole runs) and a ledger with
``neighbours = "substitution"``. ``balls-in-bins`` with ``batches`` (k batches per epoch) is instead
amplified by random allocation — add/remove neighbours, accounted by the PLD engine (the other
accountants bound it unamplified). A field another scheme needs is refused.

Discrete mechanisms take the fields of their JSON objects: discrete_gaussian sigma and
(integer) sensitivity; discrete_laplace scale and sensitivity; randomized_response epsilon
(ε₀) or keep (the probability of reporting the true value; ε₀ from it, rounded up) and k;
bounded_range epsilon (ε₀). They cannot be subsampled here.

Every error names the file, the release and the field.

Reading scales with the number of releases: a TOML ledger in the plain form
above (bare keys, one-line strings, decimal numbers, booleans, comments,
[ledger] and [[release]] headers) is read line by line by :func:`_plain_toml`,
each distinct line once; anything else is read by ``tomllib`` (the same
values: the plain form is the part of TOML whose meaning is simple enough to
read directly, and any doubt — a repeated key, a header it does not know —
sends the whole file to ``tomllib`` for its own answer and message). Releases
that differ only in their name or note are validated once. TOML has no
streaming reader; the file is read whole (bounded by
:data:`dpcalc.strictjson.MAX_INPUT_BYTES`), and so is a JSON ledger.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10: the tomli backport (same API)
    import tomli as tomllib

from dpcalc.model import (
    DP,
    EPOCH_SCHEMES,
    GDP,
    SUBSAMPLED_SCHEMES,
    ZCDP,
    BoundedRange,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    ObjectError,
    RandomizedResponse,
    Shuffled,
    Subsampled,
    _number,
    _text,
    check_fields,
    count,
    discrete_from_fields,
    integer,
    note_default,
    scheme_fields,
)

MECHANISMS = {
    "gaussian": {"sigma", "noise_multiplier", "sensitivity"},
    "laplace": {"scale", "sensitivity"},
    "dp": {"epsilon", "delta"},
    "gdp": {"mu"},
    "zcdp": {"rho"},
    "discrete_gaussian": {"sigma", "sensitivity"},
    "discrete_laplace": {"scale", "sensitivity"},
    "randomized_response": {"epsilon", "keep", "k"},
    "bounded_range": {"epsilon"},
}
DISCRETE = ("discrete_gaussian", "discrete_laplace", "randomized_response", "bounded_range")
COMMON = {
    "name", "mechanism", "times", "rate", "sampling", "note", "epochs", "batches", "dataset_size", "max_batch_size",
    "examples_per_user",
}  # fmt: skip
#: Every sampling value a release may give.
SAMPLINGS = SUBSAMPLED_SCHEMES + EPOCH_SCHEMES
HEAD = {"name", "delta", "max_epsilon", "neighbours", "note"}


@dataclass(frozen=True)
class Entry:
    name: str
    obj: Any
    times: int
    path: str
    number: int  # 1-based place in the ledger
    named: bool  # whether the release has a name of its own

    @property
    def where(self) -> str:
        """How messages name the release: ``ledger PATH release N ('NAME')``."""
        return f"ledger {self.path} release {self.number}" + (f" ({self.name!r})" if self.named else "")


@dataclass(frozen=True)
class Ledger:
    path: str
    name: str
    delta: float | None
    max_epsilon: float | None
    neighbours: str
    entries: tuple[Entry, ...]


def load(path: str) -> Ledger:
    """Read and validate a ledger; raises ObjectError with a precise location.

    Strict like piped documents: unknown sections and fields (with the nearest
    allowed name), repeated keys or sections, wrong types (a boolean is not a
    number, a number is not a name) and values out of range are refused.
    """
    from dpcalc.strictjson import InputError, loads, read_text

    is_json = path.endswith(".json")
    try:
        text = read_text(path, f"ledger {path}")
        data, bodies = (loads(text), None) if is_json else _toml(text)
    except InputError as exc:
        msg = str(exc)
        raise ObjectError(msg if msg.startswith("ledger ") else f"ledger {path}: not valid JSON: {msg}") from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ObjectError(f"ledger {path}: not valid {'JSON' if is_json else 'TOML'}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # tomllib: nesting or integer-size limits
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        if "integer string conversion" in why:  # Python's int-string limit: say it as dpcalc's own limit
            why = "an integer of more than 4300 digits (at most 100 are accepted)"
        raise ObjectError(f"ledger {path}: not valid {'JSON' if is_json else 'TOML'}: {why}") from None
    if not isinstance(data, dict):
        raise ObjectError(f"ledger {path}: the top level must be a table")
    check_fields(data, ("ledger", "release"), f"ledger {path}", "a ledger (sections [ledger] and [[release]])")
    head = data.get("ledger", {})
    if not isinstance(head, dict):
        raise ObjectError(f"ledger {path}: [ledger] must be a table")
    where = f"ledger {path} [ledger]"
    check_fields(head, HEAD, where, "the [ledger] table")
    name = _text(head, "name", where, default=path)
    if "note" in head:
        _text(head, "note", where)
    delta = _number(head, "delta", where, high=1.0, high_open=True) if "delta" in head else None
    max_eps = _number(head, "max_epsilon", where, low_open=False) if "max_epsilon" in head else None
    neighbours = _text(head, "neighbours", where, ("add-remove", "substitution"), default="add-remove")
    releases = data.get("release")
    if not isinstance(releases, list) or not releases:
        raise ObjectError(f"ledger {path}: no [[release]] entries ('release' must be a list of tables)")
    # Each distinct release body (all but its name and note) is validated once.
    known: dict[tuple, tuple[Any, int]] = {}
    entries = []
    for i, r in enumerate(releases, 1):
        key = bodies[i - 1] if bodies is not None else _body(r)
        hit = known.get(key) if key is not None else None
        if hit is None:
            e = _entry(r, i, path, neighbours)
            if key is not None:
                known[key] = (e.obj, e.times)
        else:
            named = "name" in r
            e = Entry(r["name"] if named else f"release {i}", hit[0], hit[1], path, i, named)
        entries.append(e)
    return Ledger(path, name, delta, max_eps, neighbours, tuple(entries))


def _body(r: Any) -> tuple | None:
    """What a release's validation depends on (None when it may fail on its name or note): each field
    but those two, with its value's repr (which tells 1 from 1.0 and True, and -0.0 from 0.0)."""
    if not isinstance(r, dict) or not isinstance(r.get("name", ""), str) or not isinstance(r.get("note", ""), str):
        return None
    return tuple((k, repr(v)) for k, v in r.items() if k != "name" and k != "note")


_WS = r"[ \t]*"
#: One line of a plain TOML ledger: a key and a one-line value, a [table] or [[array]] header, or
#: nothing; then an optional comment. Values: basic and literal strings without escapes, booleans,
#: decimal integers of up to 100 digits and floats without underscores (TOML 1.0, as tomllib reads them).
_PLAIN_LINE = re.compile(
    rf"{_WS}(?:"
    rf"(?P<key>[A-Za-z0-9_-]+){_WS}={_WS}(?:"
    r'"(?P<basic>[^"\\\x00-\x08\x0a-\x1f\x7f]*)"'
    r"|'(?P<literal>[^'\x00-\x08\x0a-\x1f\x7f]*)'"
    r"|(?P<bool>true|false)"
    r"|(?P<int>[+-]?(?:0|[1-9][0-9]{0,99}))(?P<frac>(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
    r")"
    rf"|\[{_WS}(?P<table>[A-Za-z0-9_-]+){_WS}\]"
    rf"|\[\[{_WS}(?P<array>[A-Za-z0-9_-]+){_WS}\]\]"
    rf")?{_WS}(?:#[^\x00-\x08\x0a-\x1f\x7f]*)?"
)


def _toml(text: str) -> tuple[dict, list | None]:
    """The TOML document ``text``, and its releases' bodies when it is plain (see :func:`_plain_toml`;
    else tomllib reads it, and the bodies are None)."""
    plain = _plain_toml(text)
    return (tomllib.loads(text), None) if plain is None else plain


def _plain_toml(text: str) -> tuple[dict, list] | None:
    """A TOML document in the plain form (see :data:`_PLAIN_LINE`) as tomllib reads it, else None.

    Line by line, each distinct line matched once (a small cache; release names are each new).
    None for anything outside the form or in doubt — a line it does not match, a repeated key or
    table, a header over a key already defined — so that tomllib reads the file and words the error.

    Also returns, for each ``[[release]]``, what its validation depends on (as :func:`_body` does):
    the text of its lines but its name and note (a line's text fixes its key and value), or None
    when its name or note is not a string.
    """
    root: dict = {}
    current = root
    arrays: set = set()
    seen: dict = {}
    bodies: list = []
    body: list | None = None  # the lines of the release being read (None: not in a release)
    plain = True  # whether its name and note are strings
    match = _PLAIN_LINE.fullmatch
    if text.count("\r") != text.count("\r\n"):
        return None  # a carriage return that does not end a line
    for line in text.split("\n"):
        if not line:
            continue
        got = seen.get(line)
        if got is None:
            m = match(line[:-1] if line.endswith("\r") else line)
            if m is None:
                return None
            key, basic, literal, boolean, digits, frac, table, array = m.groups()
            if key is None:
                got = (1, table, None) if table is not None else (2, array, None) if array is not None else (3, 0, 0)
            elif basic is not None or literal is not None:
                got = (0, key, basic if basic is not None else literal)
            elif boolean is not None:
                got = (0, key, boolean == "true")
            else:
                got = (0, key, float(digits + frac) if frac else int(digits))
            if len(seen) > 4096:
                seen.clear()
            seen[line] = got
        kind, key, value = got
        if kind == 0:
            if key in current:
                return None
            current[key] = value
            if body is not None:
                if key == "name" or key == "note":
                    plain = plain and isinstance(value, str)
                else:
                    body.append(line)
        elif kind == 3:
            continue
        else:
            if body is not None:
                bodies.append(tuple(body) if plain else None)
            body, plain = ([], True) if kind == 2 and key == "release" else (None, True)
            if kind == 1:
                if key in root:
                    return None
                current = root[key] = {}
            else:
                if key in root and key not in arrays:
                    return None
                arrays.add(key)
                current = {}
                root.setdefault(key, []).append(current)
    if body is not None:
        bodies.append(tuple(body) if plain else None)
    return root, bodies


def _entry(r: Any, i: int, path: str, neighbours: str) -> Entry:
    label = f"release {i}"
    if isinstance(r, dict) and isinstance(r.get("name"), str):
        label += f" ({r['name']!r})"
    where = f"ledger {path} {label}"
    if not isinstance(r, dict):
        raise ObjectError(f"{where}: must be a table")
    mech = _text(r, "mechanism", where, tuple(MECHANISMS))
    check_fields(r, COMMON | MECHANISMS[mech], where, f"a {mech} release")
    name = _text(r, "name", where, default=label)
    if "note" in r:
        _text(r, "note", where)
    times = count(r, "times", where)
    if mech == "gaussian":
        if ("sigma" in r) == ("noise_multiplier" in r):
            raise ObjectError(f"{where}: give exactly one of 'sigma' or 'noise_multiplier'")
        if "noise_multiplier" in r:
            if "sensitivity" in r:
                raise ObjectError(f"{where}: 'noise_multiplier' already means σ/Δ; drop 'sensitivity' or use 'sigma'")
            obj: Any = Gaussian(_number(r, "noise_multiplier", where), 1.0)
        else:
            obj = Gaussian(_number(r, "sigma", where), _number(r, "sensitivity", where, default=1.0))
    elif mech == "laplace":
        obj = Laplace(_number(r, "scale", where), _number(r, "sensitivity", where, default=1.0))
    elif mech == "dp":
        if "delta" not in r:
            note_default("dp-delta", where)
        obj = DP(
            _number(r, "epsilon", where, low_open=False),
            _number(r, "delta", where, low_open=False, high=1.0, high_open=True, default=0.0),
        )
    elif mech == "randomized_response" and "keep" in r:
        if "epsilon" in r:
            raise ObjectError(f"{where}: give exactly one of 'epsilon' or 'keep'")
        obj = _rr_of_keep(r, where)
    elif mech in DISCRETE:
        obj = discrete_from_fields(mech, r, where)
    elif mech == "gdp":
        obj = GDP(_number(r, "mu", where, low_open=False))
    else:
        obj = ZCDP(_number(r, "rho", where, low_open=False))
    sampling = _text(r, "sampling", where, SAMPLINGS, default="poisson")
    if sampling in EPOCH_SCHEMES or sampling in ("truncated-poisson", "user-level"):
        if mech != "gaussian":
            raise ObjectError(f"{where}: sampling {sampling!r} is accounted for gaussian releases only")
    if "epochs" in r and sampling not in EPOCH_SCHEMES:
        raise ObjectError(f"{where}: field 'epochs' goes with sampling 'shuffle' or 'balls-in-bins', not {sampling!r}")
    if "batches" in r and sampling not in EPOCH_SCHEMES:
        this = repr(sampling) if "rate" in r or "sampling" in r else "an unsampled release"
        raise ObjectError(f"{where}: field 'batches' goes with sampling 'balls-in-bins', not {this}")
    if sampling in EPOCH_SCHEMES:
        scheme_fields(r, sampling, where)  # refuses dataset_size, max_batch_size, examples_per_user
        if "rate" in r:
            raise ObjectError(
                f"{where}: sampling {sampling!r} takes no 'rate' (no amplification is assumed: each record is in one "
                "batch per epoch); give 'epochs'"
            )
        batches = None
        if "batches" in r:
            if sampling != "balls-in-bins":
                raise ObjectError(f"{where}: field 'batches' goes with sampling 'balls-in-bins', not {sampling!r}")
            batches = count(r, "batches", where, default=None)
            if neighbours != "add-remove":
                raise ObjectError(
                    f"{where}: balls-in-bins with 'batches' (amplified by random allocation) is analysed with "
                    f"add-remove neighbours, but the ledger says neighbours = {neighbours!r} (without 'batches' it is "
                    "accounted unamplified under substitution)"
                )
        elif neighbours != "substitution":
            raise ObjectError(
                f"{where}: {sampling} sampling is analysed with substitution (or zero-out) neighbours, but the ledger "
                f"says neighbours = {neighbours!r} (dpcalc makes no claim for it under add/remove"
                + (
                    "; balls-in-bins with 'batches', the batches per epoch, is accounted under add/remove)"
                    if sampling == "balls-in-bins"
                    else ")"
                )
            )
        obj = Shuffled(obj, count(r, "epochs", where, default=None), sampling, batches)
    elif "rate" in r:
        rate = _number(r, "rate", where, high=1.0)
        extra = scheme_fields(r, sampling, where)
        needed = "substitution" if sampling == "without-replacement" else "add-remove"
        if needed != neighbours:
            raise ObjectError(
                f"{where}: {sampling} sampling is analysed with {needed} neighbours, but the ledger says "
                f"neighbours = {neighbours!r}"
            )
        if mech in ("gdp", "zcdp"):
            raise ObjectError(f"{where}: subsampling a {mech} guarantee is not supported; give the mechanism")
        if mech in DISCRETE:
            raise ObjectError(f"{where}: subsampling a {mech} mechanism is not supported; drop 'rate'")
        obj = Subsampled(obj, rate, sampling, needed, **extra)
    elif "sampling" in r:
        raise ObjectError(f"{where}: 'sampling' needs a 'rate'")
    else:
        scheme_fields(r, sampling, where)  # no scheme: its fields are refused
    return Entry(name, obj, times, path, i, isinstance(r.get("name"), str))


def _rr_of_keep(r: dict, where: str) -> RandomizedResponse:
    """Randomized response given by its keep-probability: ε₀ = log(keep·(k − 1)/(1 − keep)), rounded up (the
    object can only overstate ε)."""
    from dpcalc.core import discrete as _d

    k = integer(r, "k", where, low=2, default=2)
    keep = _number(r, "keep", where, low=1.0 / k, low_open=False, high=1.0, high_open=True)
    eps = float(_d.rr_epsilon_of_keep(keep, k))
    if not eps > 0:
        raise ObjectError(f"{where}: field 'keep' must be above 1/k = {1.0 / k:g} (at 1/k the output says nothing)")
    return RandomizedResponse(eps, k)


def describe(obj: Any) -> str:
    """A short human description of a ledger entry's mechanism."""
    if isinstance(obj, Subsampled):
        extra = (
            f" N={obj.dataset_size} B_max={obj.max_batch_size}"
            if obj.scheme == "truncated-poisson"
            else f" K={obj.examples_per_user}"
            if obj.scheme == "user-level"
            else ""
        )
        return f"{describe(obj.inner)}, {obj.scheme} q={obj.rate:g}{extra}"
    if isinstance(obj, Shuffled):
        k = f" of {obj.batches} batches" if obj.batches is not None else ""
        return f"{describe(obj.inner)}, {obj.scheme} {obj.epochs} epochs{k}"
    if isinstance(obj, Gaussian):
        return f"gaussian σ={obj.sigma:g} Δ={obj.sensitivity:g}"
    if isinstance(obj, Laplace):
        return f"laplace b={obj.scale:g} Δ={obj.sensitivity:g}"
    if isinstance(obj, DP):
        return f"dp ε={obj.epsilon:g} δ={obj.delta:g}"
    if isinstance(obj, GDP):
        return f"gdp μ={obj.mu:g}"
    if isinstance(obj, ZCDP):
        return f"zcdp ρ={obj.rho:g}"
    if isinstance(obj, DiscreteGaussian):
        return f"discrete gaussian σ={obj.sigma:g} Δ={obj.sensitivity}"
    if isinstance(obj, DiscreteLaplace):
        return f"discrete laplace t={obj.scale:g} Δ={obj.sensitivity}"
    if isinstance(obj, RandomizedResponse):
        return f"randomized response ε₀={obj.epsilon:g} k={obj.k}"
    if isinstance(obj, BoundedRange):
        return f"bounded range ε₀={obj.epsilon:g}"
    return type(obj).__name__
