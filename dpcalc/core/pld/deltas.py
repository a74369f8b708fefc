"""δ at given ε: a certified [lower, upper] on one grid.

The risk profiles (:mod:`.risk`) read δ(ε) on a ladder of ε. Each ε is read under a tilt from a ladder
of tilts, as few distinct ones as keep every read's Chernoff exponent within a few nats of its best
(:func:`_cover_tilts`), so that a curve of thousands of points takes a handful of compositions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .compose import compose, parts_log_mgf, spread
from .directions import _discretised
from .errors import lower_shift
from .query import Reader, delta_at

__all__ = ["Interval", "delta_interval"]


@dataclass(frozen=True)
class Interval:
    lower: np.ndarray
    upper: np.ndarray
    h: float


def _delta_dirs(mechs, eps, h: float, kind: str, tilt_step: float = 0.5) -> np.ndarray:
    """δ at each ε by one discretisation kind (max over directions); each ε read under a tilt from a
    ladder of powers 2^tilt_step apart, near the one that minimises its Chernoff bound
    (:func:`_cover_tilts`) — a coarser ladder composes fewer times, with a little more round-off
    allowance on the reads between its rungs. (Any tilt gives sound bounds; it sets their width.)"""
    eps = np.atleast_1d(np.asarray(eps, float))
    sign = 1.0 if kind == "upper" else -1.0
    best = np.zeros(eps.shape)
    tail = 1e-18 / max(sum(t for _, t in mechs), 1)
    for _, parts in _discretised(mechs, h, kind, tail):
        s = spread(parts)
        ts = 2.0 ** np.arange(-12.0, 8.0 - 1e-9, tilt_step) / s
        total = parts_log_mgf(parts, ts)
        tilts = _cover_tilts(ts, total, eps)
        for lam in np.unique(tilts):
            sel = tilts == lam
            cp = compose(parts, lam=float(lam), upper=sign > 0)
            r = Reader(cp)
            dl = delta_at(cp, eps[sel], sign, reader=r)
            if sign < 0:
                # δ_true(ε) >= δ_lower(ε − s) − η (lower_shift), with η a small fixed level.
                eta = 1e-15
                v = lower_shift(cp.move_mean, cp.move_var, cp.move_b, eta)
                if v > 0:
                    dl = np.maximum(dl, delta_at(cp, eps[sel] - v, sign, reader=r) - eta)
            best[sel] = np.maximum(best[sel], dl)
    return best


#: A read of δ(ε) may use a tilt whose Chernoff exponent at ε is up to this many nats above the best
#: rung's (see :func:`_cover_tilts`).
READ_SLACK = 2.0


def _cover_tilts(ts: np.ndarray, total: np.ndarray, eps: np.ndarray, slack: float = READ_SLACK) -> np.ndarray:
    """A tilt for each ε from the ladder ``ts`` (increasing; ``total`` the composition's log-MGF at each),
    as few distinct ones as the greedy cover gives: going up in ε, the current tilt is kept while its
    Chernoff exponent G(λ) − λε stays within ``slack`` of the best rung's for that ε, and where it does
    not, the largest rung that is within it is taken (the best tilt grows with ε, so the largest serves
    the most ε above). The round-off allowance of a read scales with e^{G(λ) − λε} — ``slack`` nats
    let it grow at most e^slack times (about 7×) over the best rung's, far below the discretisation's
    share of the width — for a handful of compositions instead of one per rung (a risk profile of
    2,001 ε read 13 tilts per direction and kind, 155 compositions in all at σ = 0.7; 3-4 now)."""
    with np.errstate(invalid="ignore", over="ignore"):
        ex = np.where(np.isfinite(total)[None, :], total[None, :] - ts[None, :] * eps[:, None], np.inf)
    best = ex.min(axis=1)
    ok = ex <= best[:, None] + slack
    # Where no rung is finite (no Chernoff information): the smallest, as the argmin would have taken.
    none = ~np.isfinite(best)
    ok[none] = False
    ok[none, 0] = True
    order = np.argsort(eps, kind="stable")
    out = np.empty(eps.shape)
    i = 0
    while i < order.size:
        cur = int(np.flatnonzero(ok[order[i]])[-1])
        run = ok[order[i:], cur]
        stop = int(np.argmin(run)) if not run.all() else run.size
        out[order[i : i + stop]] = ts[cur]
        i += stop
    return out


def delta_interval(mechs, eps, h: float, tilt_step: float = 0.5) -> Interval:
    """[lower, upper] on δ at each ε, on the grid h (``tilt_step``: see :func:`_delta_dirs`)."""
    up = _delta_dirs(mechs, eps, h, "upper", tilt_step)
    lo = _delta_dirs(mechs, eps, h, "lower", tilt_step)
    return Interval(np.minimum(lo, up), up, h)
