"""Vectorised monotone root finding that stops on the safe side.

Privacy calibrations are searches for the boundary of a monotone predicate
("δ at this σ is at most the target"). We never return a point that was not
checked: :func:`bisect_predicate` keeps a bracket ``[ok, bad]`` in which the
predicate has been *evaluated* true at ``ok`` and false at ``bad``, and returns
``ok``. Rounding in the predicate can therefore move the answer by at most the
final bracket width, never across the boundary.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["bisect_predicate", "expand_until"]

Predicate = Callable[[np.ndarray], np.ndarray]


def expand_until(
    pred: Predicate,
    start: np.ndarray,
    *,
    factor: float = 2.0,
    max_steps: int = 200,
    want: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Multiply ``start`` by ``factor`` until ``pred`` equals ``want``.

    Returns ``(x, found)``; where ``found`` is false the search hit
    ``max_steps`` and ``x`` is the last point tried.
    """
    x = np.array(start, dtype=np.float64, copy=True)
    found = pred(x) == want
    for _ in range(max_steps):
        if found.all():
            break
        todo = ~found
        x = np.where(todo, x * factor, x)
        with np.errstate(all="ignore"):
            found = found | (pred(x) == want)
        if not np.isfinite(x).all():
            break
    return x, found


def bisect_predicate(
    pred: Predicate,
    ok: np.ndarray,
    bad: np.ndarray,
    *,
    rtol: float = 1e-12,
    atol: float = 0.0,
    max_iter: int = 200,
    geometric: bool = False,
    pred_rows: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Shrink brackets where ``pred(ok)`` is true and ``pred(bad)`` false.

    Works element-wise on arrays; ``ok`` may be above or below ``bad``.
    Stops when ``|bad - ok| <= atol + rtol * |ok|`` everywhere (or after
    ``max_iter`` halvings). ``geometric`` bisects in log space, which needs
    both ends positive and suits scale-free quantities such as σ.

    Returns the final ``(ok, bad)``; ``ok`` is always a point at which the
    predicate was evaluated true (or the caller's initial ``ok``).

    ``pred_rows(idx, x)``, if given, is used instead of ``pred`` and
    evaluates only the rows still being narrowed (``idx``) — for
    predicates that cost per row.
    """
    ok = np.array(ok, dtype=np.float64, copy=True)
    bad = np.array(bad, dtype=np.float64, copy=True)
    ok, bad = np.broadcast_arrays(ok, bad)
    ok = ok.copy()
    bad = bad.copy()
    for _ in range(max_iter):
        width = np.abs(bad - ok)
        active = width > atol + rtol * np.abs(ok)
        if not active.any():
            break
        if geometric:
            mid = np.sqrt(ok) * np.sqrt(bad)
        else:
            mid = ok + 0.5 * (bad - ok)
        # A midpoint equal to an end means the bracket is at float resolution.
        active &= (mid != ok) & (mid != bad)
        if not active.any():
            break
        with np.errstate(all="ignore"):
            if pred_rows is not None:
                good = np.zeros(mid.shape, dtype=bool)
                rows = np.flatnonzero(active)
                good[rows] = np.asarray(pred_rows(rows, mid[rows]), dtype=bool)
            else:
                good = np.asarray(pred(mid), dtype=bool)
        ok = np.where(active & good, mid, ok)
        bad = np.where(active & ~good, mid, bad)
    return ok, bad
