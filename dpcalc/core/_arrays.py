"""Array plumbing shared by the core: validation, broadcasting, scalar return.

Every public core function takes array_like arguments, broadcasts them, and
returns a Python float (or tuple of floats) when all inputs were scalars.
Validation raises ``ValueError`` naming the parameter, the offending value
and the allowed range; the CLI turns that into a one-line error (exit 2).
"""

from __future__ import annotations

import numpy as np

from .errors import ValidationError

__all__ = ["checked", "finish", "log_expm1", "ValidationError"]


def _first_bad(arr: np.ndarray, bad: np.ndarray) -> float:
    return float(arr[bad].flat[0])


def checked(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = True,
    high_open: bool = True,
    integer: bool = False,
) -> np.ndarray:
    """Return ``value`` as a float64 array after checking its range.

    NaN and infinities are always refused. ``low``/``high`` bound the range;
    ``*_open`` says whether the bound itself is excluded.
    """
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(name, value, "a number") from exc
    if arr.size == 0:
        raise ValidationError(name, value, "at least one value")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValidationError(name, _first_bad(arr, bad), "a finite number")
    parts = []
    if low is not None:
        parts.append(f"> {low:g}" if low_open else f">= {low:g}")
        bad = arr <= low if low_open else arr < low
        if bad.any():
            raise ValidationError(name, _first_bad(arr, bad), _describe(low, high, low_open, high_open, integer))
    if high is not None:
        bad = arr >= high if high_open else arr > high
        if bad.any():
            raise ValidationError(name, _first_bad(arr, bad), _describe(low, high, low_open, high_open, integer))
    if integer:
        bad = arr != np.floor(arr)
        if bad.any():
            raise ValidationError(name, _first_bad(arr, bad), _describe(low, high, low_open, high_open, integer))
    return arr


def _describe(low, high, low_open, high_open, integer) -> str:
    kind = "a whole number" if integer else "a number"
    if low is not None and high is not None:
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        return f"{kind} in {lb}{low:g}, {high:g}{hb}"
    if low is not None:
        return f"{kind} {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"{kind} {'<' if high_open else '<='} {high:g}"
    return kind


def finish(*arrays: np.ndarray, scalar: bool):
    """Return arrays as they are, or as Python floats when ``scalar``."""
    if scalar:
        out = tuple(float(np.asarray(a).reshape(-1)[0]) if np.ndim(a) == 0 or np.size(a) == 1 else a for a in arrays)
    else:
        out = tuple(np.asarray(a) for a in arrays)
    return out[0] if len(out) == 1 else out


def log_expm1(x):
    """log(e^x − 1) for x >= 0 without overflow (−inf at 0)."""
    with np.errstate(divide="ignore"):
        return np.where(x > 30, x + np.log1p(-np.exp(-x)), np.log(np.expm1(np.minimum(x, 30))))


def all_scalar(*values: object) -> bool:
    return all(np.ndim(v) == 0 for v in values)


#: Rows a memory-hungry vectorised computation takes at once (:func:`by_rows`): its temporaries grow with
#: the rows times its own inner size (ladders of points, orders), about 50–90 KB a row; a grid of 100,000
#: rows at once peaked near 9 GB.
ROWS_AT_ONCE = 2048


def by_rows(fn, *arrays: np.ndarray, size: int = ROWS_AT_ONCE):
    """``fn(*arrays)`` for 1-D arrays of one length, computed ``size`` rows at a time and joined (each
    output a 1-D array, or a tuple of them). For computations whose rows do not interact — the same
    values as one call, with memory bounded by ``size`` rows. The blocks are of equal size (within one),
    each more than ``size``/2 rows: a computation that takes another route for a few rows (a batched
    root narrowed from its guess only up to 16 elements) takes the same one for every block."""
    n = arrays[0].shape[0] if arrays else 0
    if n <= size:
        return fn(*arrays)
    cuts = np.linspace(0, n, -(-n // size) + 1).round().astype(int)
    parts = [fn(*(a[i:j] for a in arrays)) for i, j in zip(cuts[:-1], cuts[1:])]
    if isinstance(parts[0], tuple):
        return tuple(np.concatenate([p[j] for p in parts]) for j in range(len(parts[0])))
    return np.concatenate(parts)
