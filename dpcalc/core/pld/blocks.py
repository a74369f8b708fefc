"""T releases of one narrow step: the step's bulk composed in blocks on a finer grid.

Where one step's loss is narrow next to the grid the composition can
afford (small q: a spread of a few cells at 10⁶ steps), the grid's errors
come once per step, T times over: the lower discretisation's binning drops
a visible share of each step's loss variance (and its moves are given back
only up to √(2·T·var·log(1/η))), connect the dots adds about a cell's
spread. Here the step is discretised on a grid 2^k times finer, B releases
of its bulk (:func:`.jumps.split`: the losses below its far tail) are
composed there, and each block is put onto the coarse grid once: the coarse
grid's errors come T/B times instead of T, the fine grid's T times at 4^k
less. The bulk's releases left over make one block of their own (and the up
to three by which a term with jumps falls short of T go singly), the jumps
go onto the coarse grid as they are (:func:`.jumps.coarsen_down` /
:func:`.jumps.coarsen_up`), and the terms with k jumps are composed and
read as in :mod:`.jumps`.

Soundness. Every δ(ε) read here is E[(1 − e^{ε−S})₊] of a measure that is
multilinear in the steps' measures and monotone in each (more mass, or mass
at a higher loss, only raises it):

* Upper: the block is the computed B-fold composition of the dominating
  fine step *plus* the FFT's error bound at every point (the round-off
  bound and the wrapped tilted mass, each at most that at any one point);
  of the mass outside the window (the stored step's mass to the power B,
  less what the window's lower bounds hold) the part above it (tilted mass
  at most BLOCK_ETA beyond x_hi) goes to +∞ and all of it also to the
  window's first point. Each point then goes onto its two coarse nodes
  keeping its P- and Q-mass (connect the dots): with g(y) = (1 − Cy)₊
  convex, E[g(e^{−X})] >= g(e^{−ℓ}) for the two-point X with
  E[e^{−X}] = e^{−ℓ}, so every δ of every composition rises.
* Lower: the block is the computed composition *minus* the error bound at
  every point, nothing outside the window (a sub-measure of the B-fold
  composition of the dominated fine step), each mass moved down to the
  coarse node at or below it. Given which steps are jumps, the steps are
  independent with their part's conditional law, so the true loss of the
  binned composition is the coarse sum plus independent non-negative moves
  in three families — the blocked releases' own (fine) roundings, the
  blocks' roundings (their law read off the computed block: its mean
  bounded below, its second moment and mean above, with what the window's
  lower bounds do not hold counted at the largest move), and the single
  releases' and jumps' (recorded in their steps) — each given back by
  Bernstein's inequality (:func:`.errors.lower_shift`) at a third of the
  term's η.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .compose import FULL, Composed, compose
from .discretise import Discrete
from .jumps import Split, coarsen_down, coarsen_up

__all__ = ["Bulk", "bulk", "BLOCK_ETA"]

_U = float(np.finfo(float).eps)

#: The tilted mass each side of a block's window (of the block's tilted total): wrapped around, it is
#: taken from every point of the window.
BLOCK_ETA = 1e-24

#: Bernstein's b is at least each term's mean (the steps' means are rounded down by 1e-9).
_GROW = 1 + 1.5e-8


def _masses(cp: Composed, h: float, upper: bool) -> np.ndarray:
    """Per point of a composition, a lower (upper) bound on the true mass: the tilted mass less (plus)
    the round-off bound and the wrapped tilted mass (each at most that at any one point), untilted and
    rounded down (up)."""
    ell = (cp.k0 + np.arange(cp.p.size) + cp.c) * h
    err = cp.roundoff + cp.tilted_wrap
    with np.errstate(over="ignore", under="ignore"):
        # exp of a rounded argument: ℓ, λℓ and G − λℓ each rounded (relative error at most
        # u·(2|G| + 3|λℓ| + 8) of the result), and G's own (g_rel).
        rel = _U * (2 * abs(cp.g) + 3 * np.abs(cp.lam * ell) + 8.0) + cp.g_rel
        scale = np.exp(cp.g - cp.lam * ell)
        if upper:
            return (cp.p + err) * scale * (1 + rel) * (1 + 4 * _U)
        less = cp.p - err
        return np.where(less > 0, less * scale, 0.0) * (1 - rel) * (1 - 4 * _U)


def _power(x: float, n: int, up: bool) -> float:
    """x^n rounded up (or down), for x >= 0."""
    if x <= 0:
        return 0.0
    return math.exp(n * math.log(x)) * ((1 + 4 * (n + 2) * _U) if up else (1 - 4 * (n + 2) * _U))


def block(fine: Discrete, times: int, k: int, lam: float, upper: bool, extended: int = FULL):
    """``times`` releases of the sub-probability step ``fine`` (grid h), composed and put onto the grid
    of spacing 2^k·h: (the block as a coarse step, with no moves of its own; and, for a lower block,
    the law of its rounding given that every step lands in ``fine``: a lower bound on the mean move,
    upper bounds on its second moment and on its mean, in loss units).

    Upper: the computed masses plus the error bound; of the mass outside the window (the stored
    step's mass to the power B, less what the window's lower bounds hold), the part above it (tilted
    mass <= BLOCK_ETA beyond x_hi) goes to +∞ and all of it also to the window's first point; each
    point then onto its two coarse nodes, keeping its P- and Q-mass (connect the dots). Lower: the
    computed masses less the error bound, each moved down to the coarse node at or below it."""
    cp = compose([(fine, times)], lam=lam, eta=BLOCK_ETA, upper=upper, extended=extended, pow2=True)
    h = fine.h
    r = 1 << k
    g = cp.k0 + np.arange(cp.p.size)  # fine index; the block's losses are (g + c)·h
    j = np.floor_divide(g, r)  # the coarse node at or below: (j + c/r)·(r·h) = (j·r + c)·h
    off = g - j * r  # fine cells above it
    j0 = int(j[0])
    size = int(j[-1]) - j0 + 2
    n = cp.p.size + 4
    lower = _masses(cp, h, False)
    held = float(np.sum(lower)) * (1 - n * _U)
    # The stored step's mass β (the measure composed) to the power B, rounded up and down.
    beta = float(np.sum(fine.p))
    m = fine.p.size + 4
    b_hi = _power(beta * (1 + m * _U), times, True)
    if upper:
        outside = max(b_hi - held, 0.0) * (1 + 4 * _U)
        above = BLOCK_ETA * math.exp(min(cp.g - cp.lam * cp.x_hi, 700.0)) * (1 + cp.g_rel) * (1 + 8 * _U)
        w = _masses(cp, h, True)
        w[0] += outside
        with np.errstate(all="ignore"):
            up_share = np.expm1(-off * h) / np.expm1(-r * h)  # v/p = (1 − e^{a−ℓ})/(1 − e^{a−b})
        up_share = np.where(off > 0, np.clip(up_share * (1 + 8 * _U), 0.0, 1.0), 0.0)
        v = w * up_share
        p = np.bincount(j - j0, weights=w - v, minlength=size) + np.bincount(j - j0 + 1, weights=v, minlength=size)
        p_inf = min((cp.p_inf + above) * (1 + 4 * _U), 1.0)
        # (Each node sums up to 2r terms in turn: relative error at most (2r + 1)·u.)
        return Discrete(r * h, j0, cp.c / r, p * (1 + (2 * r + 4) * _U), p_inf), None
    p = np.bincount(j - j0, weights=lower, minlength=size) * (1 - (2 * r + 4) * _U)
    e = off * h  # each point's move (a whole number of fine cells: exact)
    # The law of B steps conditioned to land in ``fine``: fine^{*B}/β^B. What the window's lower bounds
    # do not hold moves by less than r·h.
    b_lo = _power(beta * (1 - m * _U), times, False)
    rest = max(b_hi - held, 0.0) * (1 + 4 * _U)
    s1, s2 = float(np.sum(lower * e)), float(np.sum(lower * e * e))
    mean_lo = s1 * (1 - n * _U) / b_hi * (1 - 4 * _U)
    mean_hi = (s1 * (1 + n * _U) + rest * r * h) / b_lo * (1 + 8 * _U)
    second_hi = (s2 * (1 + n * _U) + rest * (r * h) ** 2) / b_lo * (1 + 8 * _U)
    return Discrete(r * h, j0, cp.c / r, p, 0.0), (mean_lo, second_hi, mean_hi)


@dataclass(frozen=True)
class Bulk:
    """A split step's bulk for the terms of :func:`.jumps.terms` (term k: T − k releases of the bulk),
    on the grid 2^k times coarser than the fine step's: ``count`` blocks of ``size`` releases
    (``block``), one block of the ``left`` releases left over (``leftover``, None if none), and single
    releases (``single``: the fine bulk moved onto the coarse grid) for the k' <= TERMS − 1 by which a
    term falls short of T; the far tail ``jump`` moved onto the coarse grid. Lower: each block's
    rounding law (mean lower bound, second moment and mean upper bounds) and the fine bulk's moves
    per release (mean, variance)."""

    upper: bool
    size: int
    count: int
    left: int
    block: Discrete
    leftover: Discrete | None
    single: Discrete
    jump: Discrete | None
    laws: tuple = ()
    fine_moves: tuple[float, float] = (0.0, 0.0)

    def parts(self, times: int) -> list[tuple[Discrete, int]]:
        """``times`` releases of the bulk (at least count·size + left): the blocks and single releases."""
        extra = times - self.count * self.size - self.left
        if extra < 0:
            raise ValueError("fewer releases than the blocks hold")
        out = [(self.block, self.count)]
        if self.leftover is not None:
            out.append((self.leftover, 1))
        if extra:
            out.append((self.single, extra))
        return out

    def families(self, times: int) -> list[tuple[float, float, float]]:
        """Lower: the blocked releases' moves as (total mean, total variance, Bernstein's b) — their fine
        roundings, and the blocks' (the single releases' moves are recorded in their step). None (an
        empty list) for an upper bulk."""
        if self.upper:
            return []
        n = self.count * self.size + self.left
        mean, var = self.fine_moves
        m_tot = v_tot = b = 0.0
        for (mean_lo, second_hi, mean_hi), c in zip(self.laws, (self.count, 1)):
            m_tot += c * mean_lo
            v_tot += c * (max(second_hi - mean_lo * mean_lo, 0.0) * (1 + 4 * _U) + 1e-300)
            b = max(b, mean_hi)
        return [
            (n * mean * (1 - 4 * _U), n * var * (1 + 4 * _U), mean * _GROW),
            (m_tot * (1 - 4 * _U), v_tot * (1 + 4 * _U), b * _GROW),
        ]


def bulk(sp: Split, size: int, k: int, lam: float, upper: bool, spare: int, extended: int = FULL) -> Bulk:
    """The bulk of the split ``sp`` (of a step on the fine grid, upper or lower) blocked for
    :func:`.jumps.terms`: blocks of ``size`` releases composed with tilt ``lam``, the coarse grid 2^k
    times the fine one; the blocks hold T − ``spare`` releases (the terms take T − k, k <= spare)."""
    count, left = divmod(sp.times - spare, size)
    if count < 1:
        raise ValueError("no whole block")
    blk, law = block(sp.b, size, k, lam, upper, extended)
    laws = [law]
    leftover = None
    if left:
        leftover, law_left = block(sp.b, left, k, lam, upper, extended)
        laws.append(law_left)
    single, jump = sp.b, sp.j
    move = coarsen_up if upper else coarsen_down
    for _ in range(k):
        single = move(single)
        jump = None if jump is None else move(jump)
    if upper:
        return Bulk(True, size, count, left, blk, leftover, single, jump)
    return Bulk(False, size, count, left, blk, leftover, single, jump, tuple(laws), (sp.b.move_mean, sp.b.move_var))
