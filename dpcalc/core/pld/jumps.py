"""T releases of one step, composed by the number of steps that land in its far tail.

Where one step's rare large losses carry δ (small q and σ, 10⁴–10⁶ steps,
δ <= 1e-9), the composed loss is a narrow bulk plus a few "jumps", and no
exponential tilt centres the whole composition on the reads: the tilted
bulk stays near 0, the reads sit 1e-9 of the tilted mass out, and the
window must cover the many jumps of the tilted measure's own tail (grids at
their limit, round-off of several δ). Splitting each step at a loss a into
its bulk B (losses <= a) and its far tail J (above a; ι = J's mass, chosen so
that T·ι is small), the composition is exactly

    (B + J + P[L = ∞])^{*T} = Σ_k C(T, k)·B^{*(T−k)} * J^{*k}  (+ the paths with an infinite loss),

and δ(ε) is linear in the measure. Each term k < K is composed on its own
(:func:`.compose.compose`, every stage in long double), tilted for itself:
the terms that carry δ are centred and read in their bulk. The terms k >= K
hold P-mass at most (Tι)^K/K!/(1 − Tι/(K + 1)) (C(T, k)·ι^k <= (Tι)^k/k!),
added whole to an upper δ and dropped from a lower one; the paths with an
infinite loss add 1 − (1 − P[L = ∞])^T to both.

The lower end gives back the lower discretisation's moves per term: given
which steps are jumps, the steps are independent with their part's
conditional law, so :func:`.errors.lower_shift` applies to each term with the
moves' conditional mean and variance (from the per-point sums of
:class:`.discretise.Discrete`), at a price η_k of that term's mass.

Any ε where the summed upper curve is at most δ is an upper bound on ε(δ),
and any ε where the summed lower curve is above δ a lower bound: both ends
are searched by bisection and each returned point is one where its curve was
evaluated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .compose import FAR_READ, FULL, choose_tilts, compose, parts_log_mgf
from .discretise import Discrete
from .errors import LOWER_ETA, lower_shift
from .query import Reader

__all__ = ["Split", "split", "Terms", "terms", "epsilon_bounds", "TERMS", "TAIL_SHARE"]

_U = float(np.finfo(float).eps)

#: Terms composed: k = 0..TERMS−1 jumps; the rest is bounded by its mass.
TERMS = 4

#: The terms left out may hold at most this share of δ (an upper end adds it).
TAIL_SHARE = 1e-5


@dataclass(frozen=True)
class Split:
    """One step split at a grid index: bulk ``b`` and far tail ``j`` (None: no tail split off), the
    times T, an upper bound ``iota`` on the tail's mass, and an upper bound ``rest`` on the mass of
    the terms with TERMS or more jumps."""

    b: Discrete
    j: Discrete | None
    times: int
    iota: float
    rest: float
    p_inf: float


def _part(d: Discrete, lo: int, hi: int) -> Discrete:
    """Grid points lo..hi−1 of ``d`` as a sub-probability step (no mass at +∞), with the moves' mean and
    variance (lower steps) conditional on landing there."""
    p = d.p[lo:hi].copy()
    mean = var = 0.0
    m1 = m2 = None
    if d.move1 is not None:
        m1, m2 = d.move1[lo:hi].copy(), d.move2[lo:hi].copy()
        mass = float(np.sum(p))
        if mass > 0:
            mu = float(np.sum(m1)) / mass
            second = float(np.sum(m2)) / mass
            # Never credit more than the moves (mean rounded down) nor less spread (variance rounded up):
            # sums of n positive terms err by at most n·u relative, and second − mu² cancels.
            slack = 4 * (p.size + 2) * _U + 1e-9  # (+ the sums within a point, a few atoms each)
            mean = mu * (1 - 1e-9 - slack) * d.h
            var = (max(second - mu * mu, 0.0) * (1 + 1e-6) + 2 * slack * second + 1e-30) * d.h * d.h
    return replace(d, k0=d.k0 + lo, p=p, p_inf=0.0, move_mean=mean, move_var=var, move1=m1, move2=m2)


def split(d: Discrete, times: int, delta: float, share: float = TAIL_SHARE, k_terms: int = TERMS) -> Split:
    """Split at the lowest grid point above which T·(tail mass) is small enough for the terms with
    ``k_terms`` or more jumps to hold at most ``share``·δ."""
    p = d.p
    suffix = np.cumsum(p[::-1])[::-1] * (1 + p.size * _U)  # suffix[i] >= Σ_{j>=i} p_j
    # (Tι)^K/K! <= share·δ·(1 − Tι/(K + 1)): with Tι <= 1 the last factor is >= 1 − 1/(K + 1).
    need = (share * delta * math.factorial(k_terms) * (1 - 1.0 / (k_terms + 1))) ** (1.0 / k_terms)
    ok = np.flatnonzero(times * suffix <= min(need, 1.0))
    ia = int(ok[0]) if ok.size else p.size
    p_inf = float(d.p_inf)
    beta = float(np.sum(p[:ia])) * (1 + p.size * _U)
    iota = float(suffix[ia]) if ia < p.size else 0.0
    if ia >= p.size or not (iota > 0 and beta > 0 and np.any(p[:ia] > 0)):
        # No tail to split off (or no bulk left): the whole step, composed as one term.
        return Split(d if p_inf == 0 else replace(d, p_inf=0.0), None, times, 0.0, 0.0, p_inf)
    m = times * iota * (1 + 4 * _U)
    # Σ_{k>=K} C(T, k)·β^{T−k}·ι^k <= max(1, β)^T·(Tι)^K/K!/(1 − Tι/(K + 1)) (an upper step's mass may
    # exceed 1 by its rounding).
    grow = math.exp(times * max(beta - 1.0, 0.0)) * (1 + 4 * _U)
    rest = grow * m**k_terms / math.factorial(k_terms) / (1 - m / (k_terms + 1)) * (1 + 8 * _U)
    return Split(_part(d, 0, ia), _part(d, ia, p.size), times, iota, rest, p_inf)


#: An upper term whose window exceeds the grid limit is composed on a grid up to 2^COARSER times coarser
#: (the terms with two or more jumps: their window spans that many tails, their share of δ is small).
COARSER = 2


def coarsen_up(d: Discrete) -> Discrete:
    """``d`` on the grid of twice its spacing, each mass moved up to the next point (losses only rise, so
    every δ(ε) of every composition does too): points (2m + c)h = (m + c/2)·2h, m = ⌈(k0 + i)/2⌉."""
    g = d.k0 + np.arange(d.p.size)
    m = -(-g // 2)
    m0 = int(m[0]) if m.size else 0
    p = np.bincount(m - m0, weights=d.p) * (1 + 4 * _U)
    return replace(d, h=2 * d.h, k0=m0, c=d.c / 2, p=p, move_mean=0.0, move_var=0.0, move1=None, move2=None)


def coarsen_down(d: Discrete) -> Discrete:
    """A lower step on the grid of twice its spacing, each mass moved down to the next point (by 0 or
    one fine cell, added to its recorded moves: losses only fall, and the give-back still holds)."""
    g = d.k0 + np.arange(d.p.size)
    m = np.floor_divide(g, 2)
    e = (g - 2 * m).astype(float)  # the extra move, in fine cells
    m0 = int(m[0]) if m.size else 0
    idx = m - m0
    p = np.bincount(idx, weights=d.p) * (1 - 4 * _U)
    m1 = d.move1 if d.move1 is not None else np.zeros_like(d.p)
    m2 = d.move2 if d.move2 is not None else np.zeros_like(d.p)
    # In coarse cells: (d + e)/2 and its square; sums of positive terms rounded down (the variance
    # formed from them is widened in _part).
    c1 = np.bincount(idx, weights=(m1 + e * d.p) / 2) * (1 - 4 * _U)
    c2 = np.bincount(idx, weights=(m2 + 2 * e * m1 + e * e * d.p) / 4) * (1 + 4 * _U)
    coarse = replace(d, h=2 * d.h, k0=m0, c=d.c / 2, p=p, move1=c1, move2=c2)
    return _part(coarse, 0, p.size)


@dataclass
class Terms:
    """The composed terms of one split, for one side (upper or lower) and one δ."""

    upper: bool
    items: list  # (log C(T, k), Reader, give-back s_k, absolute price C(T, k)·mass_k·η_k)
    extra: float  # upper: the left-out terms and the infinite paths; lower: the infinite paths
    #: Where set, each item holds its term's log δ-curve read at these ε (less s_k) instead of a Reader.
    grid: np.ndarray | None = None


def read_tilt(parts, delta: float, guess: float, give: float = 0.0, lam: float | None = None) -> float:
    """The tilt for composing ``parts`` read at level δ near ``guess`` (:func:`.compose.choose_tilts`; ``lam``:
    that tilt if already known). A lower composition is read at ε less the moves it gives back (``give``):
    where that lies more than FAR_READ e-folds of the tilt below the guess, the tilt is chosen for the
    read's level instead, below 0 if need be (q = 1e-6, σ = 0.65, 10⁷ steps, δ = 1e-8: moves of 0.38 in all,
    read ~380 e-folds below a tilt for the guess, in round-off)."""
    ld = np.log([delta])
    if lam is None:
        lam = float(choose_tilts(parts, ld, [max(guess, 0.0)])[0][0])
    if lam * give > FAR_READ:
        lam = float(choose_tilts(parts, ld, [guess - give], signed=True)[0][0])
    return lam


def terms(
    sp: Split,
    delta: float,
    guess: float,
    upper: bool,
    extended: int = FULL,
    blocked=None,
    grid=None,
    cut: float | None = None,
) -> Terms:
    """Compose each term k < TERMS (those with a tail to draw from), tilted to centre at ``guess``.
    ``blocked``: the split's bulk in blocks on a coarser grid (:class:`.blocks.Bulk`), the jumps moved
    onto it; a lower term then gives back three families of moves, at a third of its η each. A tuple of
    them (blocks of one bulk composed with other tilts): term k takes the k-th, the last for the rest.
    ``grid``: each term's curve is read at these ε once and its composition dropped (the terms of a
    large composition need not be held together); :func:`epsilon_bounds` then answers on the grid.
    ``cut`` (with ``grid``, whose points must be at or above it): a certified lower bound on ε — each
    term's window starts there (less its give-back and two cells; see :func:`.compose.compose`), its
    alias at most 1e-9·δ/TERMS once weighted by C(T, k)."""
    T = sp.times
    kmax = TERMS if sp.j is not None else 1
    grid = None if grid is None else np.asarray(grid, float)
    items = []
    for k in range(min(kmax, T + 1)):
        if blocked is not None:
            bk = blocked[min(k, len(blocked) - 1)] if isinstance(blocked, tuple) else blocked
            parts = bk.parts(T - k) + ([(bk.jump, k)] if k > 0 else [])
            families = bk.families(T - k)
        else:
            parts = [(x, t) for x, t in ((sp.b, T - k), (sp.j, k)) if t > 0]
            families = []
        if any(x is None or not np.any(x.p > 0) for x, _ in parts):
            continue  # a part with no mass taken t > 0 times: the term is the zero measure
        log_c = math.log(math.comb(T, k))
        give = 0.0 if upper else sum(t * x.move_mean for x, t in parts) + sum(f[0] for f in families)
        lam = read_tilt(parts, delta, guess, give)
        level = float(parts_log_mgf(parts, [lam])[0]) + log_c + lam * give
        eta = float(np.clip(1e-10 * delta / TERMS * np.exp(np.clip(-level, -700.0, 700.0)), 1e-300, 1e-10))
        kw = {}
        if cut is not None:
            # (The alias is a share of the sub-probability composed; the term weighs it by C(T, k).)
            kw = dict(cut=cut - 2 * parts[0][0].h - give, cut_eta=1e-9 * delta / TERMS * math.exp(-log_c))
        cp = None
        for attempt in range(COARSER + 1 if blocked is None else 1):
            try:
                cp = compose(parts, lam=lam, eta=eta, upper=upper, extended=extended, pow2=blocked is not None, **kw)
                break
            except MemoryError:
                if attempt < COARSER:
                    parts = [(coarsen_up(x) if upper else coarsen_down(x), t) for x, t in parts]
        if cp is None:
            if not upper:
                continue  # a lower end may leave a term out (every term adds to δ)
            raise MemoryError("a term of the split composition exceeds the grid limit")
        s_k, price = 0.0, 0.0
        if not upper:
            # Under P: the term's mass is at most C(T, k)·ι^k (the bulk's share <= 1), η_k of it given up.
            weight = math.comb(T, k) * sp.iota**k * (1 + 4 * _U) if k else 1.0
            eta_k = min(LOWER_ETA * delta / TERMS / weight, 0.5)
            if families:
                share = eta_k / (len(families) + 1)
                s_k = lower_shift(cp.move_mean, cp.move_var, cp.move_b, share)
                s_k = (s_k + sum(lower_shift(m, v, b, share) for m, v, b in families)) * (1 - 4 * _U)
            else:
                s_k = lower_shift(cp.move_mean, cp.move_var, cp.move_b, eta_k)
            price = weight * eta_k if s_k > 0 else 0.0
        r = Reader(cp)
        if grid is not None:
            e = grid - s_k
            r = r.log_delta(r.index_after(e), e, 1.0 if upper else -1.0)
        items.append((log_c * (1 + 4 * _U) if upper else log_c * (1 - 4 * _U), r, s_k, price))
    inf_paths = -math.expm1(T * math.log1p(-min(sp.p_inf, 1.0)))
    if upper:
        extra = (inf_paths * (1 + 8 * _U) + sp.rest) * (1 + 4 * _U)
    else:
        extra = inf_paths * (1 - 8 * _U)
    return Terms(upper, items, extra, grid)


def _summed(tm: Terms, lds: list, shape) -> np.ndarray:
    """The summed upper (or lower) δ-curve from each term's log δ (arrays of one shape)."""
    total = np.full(shape, tm.extra)
    with np.errstate(over="ignore", invalid="ignore"):
        for (log_c, _, _, price), ld in zip(tm.items, lds):
            fin = np.isfinite(ld)
            # exp of a rounded sum: relative error at most u·(|ld| + log C + 2), twice for margin.
            rel = np.where(fin, 2 * _U * (np.abs(ld) + log_c + 2.0), 0.0)
            if tm.upper:
                total = total + np.exp(np.minimum(ld + log_c, 700.0)) * (1 + rel)
            else:
                total = total + np.where(fin, np.exp(ld + log_c) * (1 - rel), 0.0) - price * (1 + 4 * _U)
    n = len(tm.items) + 2
    if tm.upper:
        return total * (1 + n * _U)
    return np.where(total > 0, total * (1 - n * _U), total * (1 + n * _U))


def curve(tm: Terms, eps: float) -> float:
    """The summed upper (or lower) δ-curve at ε (a point of the terms' grid, where they have one)."""
    if tm.grid is not None:
        i = int(np.searchsorted(tm.grid, eps))
        if not (i < tm.grid.size and tm.grid[i] == eps):
            raise ValueError("the terms were read on a grid: ε must be one of its points")
        return float(_summed(tm, [r[i : i + 1] for _, r, _, _ in tm.items], (1,))[0])
    lds = []
    for _, r, s_k, _ in tm.items:
        e = np.array([eps - s_k])
        lds.append(r.log_delta(r.index_after(e), e, 1.0 if tm.upper else -1.0))
    return float(_summed(tm, lds, (1,))[0])


def _bounds_on_grid(ups: list[Terms], low: Terms | None, delta: float):
    """:func:`epsilon_bounds` for terms read on one grid: the smallest grid point where every upper curve
    is at most δ, and the largest where the lower curve is above it (NaN where none is)."""
    grid = (ups[0] if ups else low).grid
    if any(tm.grid is not grid for tm in [*ups, low] if tm is not None):
        raise ValueError("terms read on a grid are answered together only on that one grid")
    new_up = new_lo = float("nan")
    if ups:
        ok = np.all([_summed(tm, [r for _, r, _, _ in tm.items], grid.shape) <= delta for tm in ups], axis=0)
        if ok.any():
            new_up = float(grid[np.argmax(ok)])
    if low is not None:
        above = _summed(low, [r for _, r, _, _ in low.items], grid.shape) > delta
        if above.any():
            new_lo = float(grid[grid.size - 1 - np.argmax(above[::-1])])
    return new_lo, new_up


def epsilon_bounds(ups: list[Terms], low: Terms | None, delta: float, lo: float, up: float, steps: int = 60):
    """Bisection between a known lower end ``lo`` and upper end ``up``: the smallest ε found where every
    upper curve (one per direction) is at most δ, and the largest where the lower curve is above it.
    Returns (lower, upper), each NaN where the curves do not improve on the ends given. Terms read on a
    grid (:func:`terms`) are answered on it."""
    if any(tm.grid is not None for tm in [*ups, low] if tm is not None):
        return _bounds_on_grid(ups, low, delta)
    new_up = float("nan")
    if ups and all(curve(tm, up) <= delta for tm in ups):
        a, b = lo, up  # b: checked
        for _ in range(steps):
            mid = 0.5 * (a + b)
            if not (a < mid < b):
                break
            if all(curve(tm, mid) <= delta for tm in ups):
                b = mid
            else:
                a = mid
        new_up = b
    new_lo = float("nan")
    if low is not None and curve(low, lo) > delta:
        a, b = lo, up if np.isnan(new_up) else new_up  # a: checked
        for _ in range(steps):
            mid = 0.5 * (a + b)
            if not (a < mid < b):
                break
            if curve(low, mid) > delta:
                a = mid
            else:
                b = mid
        new_lo = a
    return new_lo, new_up
