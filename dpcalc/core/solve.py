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

__all__ = ["bisect_predicate", "expand_until", "walk_and_bisect", "secant"]

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
        # Rounding must not carry the midpoint out of the bracket (two adjacent doubles).
        mid = np.clip(mid, np.minimum(ok, bad), np.maximum(ok, bad))
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


#: Secant points with the Illinois weighting are taken until this many outcomes in a row on one side;
#: then one bisection (see :func:`walk_and_bisect`).
ILLINOIS_MAX = 4


def walk_and_bisect(ev, target, x0, lo, hi, step, mid, narrow, bad0=None, at_x0=None, interp=None):
    """Per row, the largest x in [lo, hi] where ``ev`` meets the target — ``ev`` grows with x.

    ``ev(rows, x)`` → (value, tag) at x for those rows (e.g. ε and the method that bounded it; NaN:
    no answer, which counts as missing the target: a point is kept only where it was evaluated and
    held). From x0, steps of growing size (``step(x, k, ±1, rows)``, k = 0, 1, …) up while the target
    is met, down while it is not, until a met point ``ok`` and a missed point ``bad`` above it are
    found or the range ends; then bisection (``mid``) until ``narrow(ok, bad)``.

    ``bad0`` = (x, value, tag, value at x0, tag at x0), where x is finite: a point above x0 known to
    miss the target, x0 known to meet it — such a row goes straight to bisection. ``at_x0``:
    (values, tags) at x0 if already evaluated. Returns ok (NaN: not met even at lo), bad (NaN: met
    at hi), and the values and tags at both.

    ``interp(ok, bad, e_ok, e_bad, target, last, w_ok, w_bad)`` (optional): a point strictly inside
    each bracket from the values at its ends (``last``: +1 where the row's last point met the target,
    −1 where it missed, 0 before any) — e.g. the secant root nudged by under half the tolerance toward
    the side not just moved, so that an accurate secant closes the bracket in two evaluations. It is
    taken where finite and strictly inside. After two or more outcomes in a row on one side (the
    secant is stalling on a curved stretch) the weight of the other end's distance from the target
    (``w_ok`` or ``w_bad``, else 1) is halved for each repeat (the Illinois rule: ``interp`` scales
    the distances by them in the space it interpolates in), and after ILLINOIS_MAX of them that row
    bisects once (``mid``), then takes the secant again. Either way every point returned was evaluated; only
    the number of evaluations changes.
    """
    n = x0.size
    ok, bad = np.full(n, np.nan), np.full(n, np.nan)
    e_ok, e_bad = np.full(n, np.nan), np.full(n, np.nan)
    m_ok, m_bad = np.full(n, None, dtype=object), np.full(n, None, dtype=object)

    def put(rows, x, e, m, good):
        g, b = rows[good], rows[~good]
        ok[g], e_ok[g], m_ok[g] = x[good], e[good], m[good]
        bad[b], e_bad[b], m_bad[b] = x[~good], e[~good], m[~good]

    rows = np.arange(n)
    known = np.zeros(n, dtype=bool) if bad0 is None else np.isfinite(bad0[0])
    if known.any():
        kr = rows[known]
        ok[kr], e_ok[kr], m_ok[kr] = x0[kr], bad0[3][kr], bad0[4][kr]
        bad[kr], e_bad[kr], m_bad[kr] = bad0[0][kr], bad0[1][kr], bad0[2][kr]
    rows = rows[~known]
    e, m = ev(rows, x0[rows]) if at_x0 is None else (at_x0[0][rows], at_x0[1][rows])
    good = e <= target[rows]
    put(rows, x0[rows], e, m, good)
    for direction, todo in ((1, rows[good]), (-1, rows[~good])):
        x = x0.copy()
        k = 0
        while todo.size:
            end = hi[todo] if direction > 0 else lo[todo]
            todo = todo[x[todo] != end]  # at the end of the range: met at hi, or not met at lo
            if not todo.size:
                break
            nxt = step(x[todo], k, direction, todo)
            nxt = np.minimum(nxt, hi[todo]) if direction > 0 else np.maximum(nxt, lo[todo])
            e, m = ev(todo, nxt)
            good = e <= target[todo]
            put(todo, nxt, e, m, good)
            x[todo] = nxt
            todo = todo[good] if direction > 0 else todo[~good]
            k += 1
    last = np.zeros(n, dtype=np.int8)  # +1: the row's last bisection point met the target; −1: missed
    same = np.zeros(n, dtype=np.int8)  # how many outcomes in a row were on that side
    for _ in range(200):
        act = np.flatnonzero(np.isfinite(ok) & np.isfinite(bad))
        act = act[~narrow(ok[act], bad[act])]
        if not act.size:
            break
        x = mid(ok[act], bad[act])
        use = np.zeros(act.size, dtype=bool)
        if interp is not None:
            a, b = ok[act], bad[act]
            with np.errstate(all="ignore"):
                # Illinois: after two outcomes in a row on one side, the other end's distance from the
                # target counts half (a quarter after three, ...), pulling the secant across the root.
                w = 0.5 ** np.maximum(same[act].astype(float) - 1.0, 0.0)
                w_ok, w_bad = np.where(last[act] < 0, w, 1.0), np.where(last[act] > 0, w, 1.0)
                xi = np.asarray(interp(a, b, e_ok[act], e_bad[act], target[act], last[act], w_ok, w_bad), float)
                use = np.isfinite(xi) & (same[act] < ILLINOIS_MAX) & (xi > np.minimum(a, b)) & (xi < np.maximum(a, b))
            x = np.where(use, xi, x)
        inside = (x != ok[act]) & (x != bad[act])
        act, x = act[inside], x[inside]
        if not act.size:
            break
        e, m = ev(act, x)
        good = e <= target[act]
        put(act, x, e, m, good)
        side = np.where(good, 1, -1).astype(np.int8)
        same[act] = np.where(side == last[act], same[act] + 1, 1)
        same[act] = np.where(use[inside], same[act], 0)  # after a bisection, the secant again
        last[act] = side
    return ok, bad, e_ok, e_bad, m_ok, m_bad


#: :func:`secant` moves the secant root by this share of the tolerance (0.45 gave answers up to 0.7 of
#: the tolerance short of the optimum; 0.2 stalled into bisection more often: about as many evaluations
#: as plain bisection).
NUDGE = 0.3


def secant(tol, whole: bool = False, log: bool = False):
    """``interp`` for :func:`walk_and_bisect`: the secant root of ε(x) = target between the met
    end a and the missed end b (each end's distance from the target scaled by its Illinois weight),
    moved by NUDGE of the tolerance ``tol(a, b)`` (the bracket width at which the search stops) toward
    the end that did not move last — so that where the secant is accurate the next two points land on
    either side of the root within the tolerance — and kept at least half the tolerance inside the
    bracket (a root next to an end: the next point is then one that closes the bracket or moves that
    end by half the tolerance); ``whole``: rounded to a whole number (step counts, batch sizes);
    ``log``: the secant of log ε where ε and the target are positive (x = −log σ: ε goes like a power
    of σ, so log ε is nearly straight in x, where ε itself can bend by a factor of 100 across a
    bracket)."""

    def interp(a, b, e_a, e_b, target, last, w_a=1.0, w_b=1.0):
        with np.errstate(all="ignore"):
            if log:
                pos = (e_a > 0) & (e_b > 0) & (target > 0)
                e_a, e_b, target = (np.where(pos, np.log(v), v) for v in (e_a, e_b, target))
            f_a, f_b = (e_a - target) * w_a, (e_b - target) * w_b
            root = a + (-f_a) / (f_b - f_a) * (b - a)
            t = tol(a, b)
            x = root + np.where(last > 0, NUDGE, -NUDGE) * t * np.sign(b - a)
            lo_, hi_ = np.minimum(a, b), np.maximum(a, b)
            x = np.where(hi_ - lo_ > t, np.clip(x, lo_ + 0.5 * t, hi_ - 0.5 * t), x)
        return np.round(x) if whole else x

    return interp
