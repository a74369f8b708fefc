"""Privacy ledgers: a product's releases in a TOML (or JSON) file.

Format (TOML; the JSON form has the same keys)::

    [ledger]
    name = "analytics"          # optional
    delta = 1e-6                # δ at which totals are reported (or --delta)
    max_epsilon = 8             # optional budget (or --max-epsilon)
    neighbours = "add-remove"   # or "substitution"

    [[release]]
    name = "daily counts"
    mechanism = "gaussian"      # gaussian | laplace | dp | gdp | zcdp
    sigma = 20                  # gaussian: sigma (or noise_multiplier), sensitivity
    sensitivity = 1
    times = 365                 # default 1
    rate = 0.01                 # optional sampling rate
    sampling = "poisson"        # poisson (default) | without-replacement

Every error names the file, the release and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10: the tomli backport (same API)
    import tomli as tomllib

from dpcalc.model import DP, GDP, ZCDP, Gaussian, Laplace, ObjectError, Subsampled, _number, _text, check_fields, count

MECHANISMS = {
    "gaussian": {"sigma", "noise_multiplier", "sensitivity"},
    "laplace": {"scale", "sensitivity"},
    "dp": {"epsilon", "delta"},
    "gdp": {"mu"},
    "zcdp": {"rho"},
}
COMMON = {"name", "mechanism", "times", "rate", "sampling", "note"}
HEAD = {"name", "delta", "max_epsilon", "neighbours", "note"}


@dataclass(frozen=True)
class Entry:
    name: str
    obj: Any
    times: int
    where: str


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
        data = loads(text) if is_json else tomllib.loads(text)
    except InputError as exc:
        msg = str(exc)
        raise ObjectError(msg if msg.startswith("ledger ") else f"ledger {path}: not valid JSON: {msg}") from None
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ObjectError(f"ledger {path}: not valid {'JSON' if is_json else 'TOML'}: {exc}") from None
    except (ValueError, RecursionError) as exc:  # tomllib: nesting or integer-size limits
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
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
    entries = [_entry(r, i, path, neighbours) for i, r in enumerate(releases, 1)]
    return Ledger(path, name, delta, max_eps, neighbours, tuple(entries))


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
        obj = DP(
            _number(r, "epsilon", where, low_open=False),
            _number(r, "delta", where, low_open=False, high=1.0, high_open=True, default=0.0),
        )
    elif mech == "gdp":
        obj = GDP(_number(r, "mu", where, low_open=False))
    else:
        obj = ZCDP(_number(r, "rho", where, low_open=False))
    if "rate" in r:
        rate = _number(r, "rate", where, high=1.0)
        sampling = _text(r, "sampling", where, ("poisson", "without-replacement"), default="poisson")
        needed = "add-remove" if sampling == "poisson" else "substitution"
        if needed != neighbours:
            raise ObjectError(
                f"{where}: {sampling} sampling is analysed with {needed} neighbours, but the ledger says "
                f"neighbours = {neighbours!r}"
            )
        if mech in ("gdp", "zcdp"):
            raise ObjectError(f"{where}: subsampling a {mech} guarantee is not supported; give the mechanism")
        obj = Subsampled(obj, rate, sampling, needed)
    elif "sampling" in r:
        raise ObjectError(f"{where}: 'sampling' needs a 'rate'")
    return Entry(name, obj, times, where)


def describe(obj: Any) -> str:
    """A short human description of a ledger entry's mechanism."""
    if isinstance(obj, Subsampled):
        return f"{describe(obj.inner)}, {obj.scheme} q={obj.rate:g}"
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
    return type(obj).__name__
