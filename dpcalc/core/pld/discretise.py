"""Discretisation: a step's loss distribution on a grid, twice — once dominating, once dominated.

The grid is jh (h a power of two, so every node is an exact double). Nodes
are every grid point where the loss has mass, and wider apart in the tails
(:func:`node_edges`); any node set is sound, wider bins are only a little
less tight.

* **upper** (:func:`discretise_upper`) — each bin's mass is spread onto its
  two end nodes so that its P- and Q-mass are kept ("connect the dots",
  Doroshenko et al. 2022, arXiv:2207.04380): a mean-preserving spread of
  e^L under Q, so every δ(ε) can only rise, and so do those of
  compositions. Floating point is rounded toward the safe side: the tails
  come with error bounds, so each bin takes the largest P-mass and the
  largest upper-node share they allow (the resulting measure puts at least
  as much mass above every threshold as the exact construction — enough
  for every δ(ε) of every composition to stay above the truth); the points
  where the tails are evaluated lie at or below their nodes (``side=-1``),
  and the loss they may be below by only lowers the Q-mass used for the
  split (e^{−gap}). Mass below the first node is moved up to it, mass
  above the last goes to +∞.
* **lower** (:func:`discretise_lower`) — the bins are a post-processing of
  the output, so the binned PLD (one atom per bin at log(P_j/Q_j)) is
  dominated by the true one; the bin edges are nudged so that the atoms sit
  near a common offset c. Each atom (its mass rounded down and its loss
  computed from the smallest P and largest Q the error bounds allow) is
  moved down onto the grid (j + c)h; moving losses down only lowers δ. The
  moves are known exactly, and over T steps their sum concentrates, which
  :func:`.errors.lower_shift` gives back. Mass below the first edge is
  dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .mechanisms import Direction

__all__ = ["Discrete", "node_edges", "discretise_upper", "discretise_lower", "MAX_NODES"]

_U = float(np.finfo(float).eps)

#: Largest number of nodes for one step; more and the engine declines this grid (MemoryError).
MAX_NODES = 1 << 21

#: Largest span of one step in grid cells (its masses are stored densely over it).
MAX_SPAN = 1 << 23

#: Tail bins may be 2^k grid cells wide while (their P-mass)·4^k stays below this: the mean shift that
#: connect-the-dots adds per step is (width²/8)·mass, so wide bins cost at most this·h²/8 each. The
#: engine's final upper ends ask for a budget relative to δ instead (a heavy tail makes ε a single
#: step's tail event, which moves with the mass near δ itself).
SPARSE_BUDGET = 1e-8

#: A lower discretisation whose moves vary by more than this (in h², under P) also tries merging its
#: heaviest bin with a neighbour (see :func:`discretise_lower`).
POOR_FIT = 1e-5

#: Nudging targets tried besides mid-bin: the offsets of this many heaviest bins.
HEAVY_TARGETS = 1

#: Merging the heaviest bin with a neighbour is tried only when the best nudge leaves moves varying by
#: more than this (in h²): two or three atoms holding nearly all the mass, a cell or two apart.
MERGE_FIT = 1e-3

#: Fewer steps than this: the lower discretisation's edges are not nudged (their moves, at most a cell
#: per step, hardly concentrate over few steps, and the nudging costs a dozen evaluations of the tails).
FIT_FROM = 64

#: Linear corrections of the nudged edges per target (see ``fit`` in :func:`discretise_lower`).
FIT_ROUNDS = 2

#: Widest tail bin (loss units), unless the grid itself is coarser.
WIDEST_BIN = 1.0 / 128


@dataclass(frozen=True)
class Discrete:
    """Masses ``p`` at losses (k0 + i + c)·h, i = 0..len(p)−1, plus P[L=+∞].

    A lower (dominated) discretisation also records the mean and variance,
    under P, of how far it moved each loss down (``move_mean``,
    ``move_var``); the composition uses them to win most of the moves back
    (see :func:`.errors.lower_shift`).
    """

    h: float
    k0: int
    c: float
    p: np.ndarray
    p_inf: float
    move_mean: float = 0.0
    move_var: float = 0.0
    #: (lower only) per grid point, the P-weighted sums of the moves credited to the atoms it holds and of
    #: their squares (units h and h²; mass credited no move counts 0): the moves' law conditional on a
    #: part of the grid (:mod:`.jumps`).
    move1: np.ndarray | None = None
    move2: np.ndarray | None = None

    def losses(self) -> np.ndarray:
        return (self.k0 + np.arange(self.p.size) + self.c) * self.h

    @cached_property
    def _blocks(self) -> dict:
        return {}

    def nonzero_index(self) -> np.ndarray:
        """Indices of the nonzero masses (cached)."""
        if "idx" not in self._blocks:
            self._blocks["idx"] = np.flatnonzero(self.p > 0)
        return self._blocks["idx"]

    def nonzero_log(self):
        """(losses, log masses) of the nonzero masses (cached)."""
        if "nz" not in self._blocks:
            pos = self.nonzero_index()
            self._blocks["nz"] = ((self.k0 + pos + self.c) * self.h, np.log(self.p[pos]))
        return self._blocks["nz"]

    def mgf_blocks(self, r: int):
        """The masses as blocks of r grid points for :func:`.compose.log_mgf` (None when there are
        none): (blocks (m, r), loss of the first mass, of the last, block starts and offsets relative
        to it). Cached per r."""
        if r not in self._blocks:
            pos = np.flatnonzero(self.p > 0)
            if pos.size == 0:
                self._blocks[r] = None
            else:
                first, last = int(pos[0]), int(pos[-1]) + 1
                p = self.p[first:last]
                m = -(-p.size // r)
                grid = np.zeros(m * r)
                grid[: p.size] = p
                base = (self.k0 + first + self.c) * self.h
                top = base + (p.size - 1) * self.h
                self._blocks[r] = (grid.reshape(m, r), base, top, np.arange(m) * (r * self.h), np.arange(r) * self.h)
        return self._blocks[r]


#: Distances from the median tried when looking for the tails: 2^(k/8) from 2^-45 to 2^14.
_LADDER = 2.0 ** (np.arange(-45 * 8, 14 * 8 + 1) / 8.0)


#: :func:`loss_range`'s answers for the directions met last (an answer's lower and upper ends ask for
#: the same ones): (id, tail, support) -> (the direction, kept so that its id is not reused, and the range).
_RANGES: dict = {}


def loss_range(d: Direction, tail: float, support: bool = True) -> tuple[float, float]:
    """Losses [lo, hi] with at most ``tail`` P-mass below lo and above hi (within the support's
    finite ends when ``support``: those are used as they are)."""
    if d.atoms is not None:
        ell = d.atoms[0]
        return float(ell.min()), float(ell.max())
    key = (id(d), tail, support)
    got = _RANGES.get(key)
    if got is not None and got[0] is d:
        return got[1]
    out = _loss_range(d, tail, support)
    if len(_RANGES) >= 64:
        _RANGES.clear()
    _RANGES[key] = (d, out)
    return out


def _loss_range(d: Direction, tail: float, support: bool) -> tuple[float, float]:
    lo = d.lo if np.isfinite(d.lo) and support else None
    hi = d.hi if np.isfinite(d.hi) and support else None
    scale = max(abs(d.median), 1.0)

    def reach(sign):
        t = d.cdf(d.median + sign * scale * _LADDER)
        outside = t.fp + t.efp if sign < 0 else t.sp + t.esp
        ok = np.flatnonzero(outside <= tail)
        return d.median + sign * scale * (_LADDER[ok[0]] if ok.size else _LADDER[-1])

    if lo is None:
        lo = reach(-1.0)
    if hi is None:
        hi = reach(1.0)
    return float(lo), float(hi)


def node_edges(
    d: Direction, h: float, tail: float, widest: float = WIDEST_BIN, budget: float | None = None
) -> np.ndarray:
    """Grid indices of the nodes (increasing): every grid point where a step's loss has mass, and
    bins of 2^k cells in the tails while their P-mass·4^k <= ``budget`` (default SPARSE_BUDGET) and
    2^k·h <= ``widest``."""
    budget = SPARSE_BUDGET if budget is None else budget
    lo, hi = loss_range(d, tail)
    j0 = int(np.floor(lo / h)) - 1
    j1 = int(np.ceil(hi / h)) + 1
    if j1 - j0 > MAX_SPAN:
        raise MemoryError(f"a step's loss range spans {j1 - j0} grid cells (limit {MAX_SPAN})")
    if max(abs(j0), abs(j1)) > 2**62:  # e.g. one atom at a loss of 1e300: its index does not fit an int64
        raise MemoryError(f"a step's losses lie {max(abs(j0), abs(j1)):.3g} grid cells from 0 (limit 2^62)")
    if d.atoms is not None:
        if j1 - j0 + 1 > MAX_NODES:
            raise MemoryError(f"a step's atoms span {j1 - j0 + 1} grid points (limit {MAX_NODES})")
        return np.arange(j0, j1 + 1)
    # Coarse bins of 2^K cells, K such that they are at most ``widest`` and at most 1/8 of the range.
    big_k = int(max(min(np.floor(np.log2(max(widest, h) / h)), np.floor(np.log2(max(j1 - j0, 1) / 8))), 0))
    width = 1 << big_k
    n_coarse = -(-(j1 - j0) // width)
    if n_coarse + 1 > MAX_NODES:
        raise MemoryError(f"a step's loss range needs {n_coarse} bins of {width} cells (limit {MAX_NODES})")
    coarse = j0 + width * np.arange(n_coarse + 1)
    if big_k == 0:
        return coarse
    P, _, eP, _ = _bin_masses(d.cdf(coarse * h))
    P = np.maximum(P, 0.0) + eP
    # Level k per coarse bin: sub-bins of 2^k cells hold about P·2^(k−K) each; keep that·4^k <= budget.
    with np.errstate(divide="ignore"):
        k = np.floor((np.log2(budget / np.maximum(P, 1e-300)) + big_k) / 3.0)
    k = np.clip(k, 0, big_k).astype(np.int64)
    counts = 1 << (big_k - k)  # sub-bins per coarse bin
    total = int(counts.sum())
    if total + 1 > MAX_NODES:
        raise MemoryError(f"a step needs {total} nodes (limit {MAX_NODES})")
    starts = np.repeat(coarse[:-1], counts)
    step = np.repeat(1 << k, counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    offs = (np.arange(total) - first) * step
    return np.append(starts + offs, coarse[-1])


def _bin_masses(t):
    """(P, Q, errP, errQ) of the bins between consecutive evaluation points, each measure from the
    differences of whichever of its tails (P[L<=·] or P[L>·]) has the smaller error bound there —
    the lower tail below that measure's median, the upper one above (P's and Q's medians can be far
    apart: a Gaussian with μ = 20 has them 400 apart, and Q's upper tail is what is accurate between)."""

    def one(f, s_, ef, es):
        e_f = ef[:-1] + ef[1:]
        e_s = es[:-1] + es[1:]
        use_f = e_f <= e_s
        m = np.where(use_f, f[1:] - f[:-1], s_[:-1] - s_[1:])
        return m, np.where(use_f, e_f, e_s) + _U * np.abs(m)

    P, eP = one(t.fp, t.sp, t.efp, t.esp)
    Q, eQ = one(t.fq, t.sq, t.efq, t.esq)
    return P, Q, eP, eQ


def discretise_upper(
    d: Direction, h: float, tail: float = 1e-30, widest: float = WIDEST_BIN, budget: float | None = None
) -> Discrete:
    """A dominating discrete PLD on the grid jh (connect the dots, rounded toward the safe side).

    For a bin of exact masses (P, Q) between nodes a < b, connect the dots
    puts v = (P − e^a Q)/(1 − e^{a−b}) at b and P − v at a. Here P is raised
    and Q lowered by their error bounds (Q also by e^{−gap}: the bin's
    losses may start up to ``gap`` below a, and moving them up to a first
    would lower Q by at most that factor), and v by the rounding of the
    formula, so that the bin puts at least the exact total mass at or above
    a and at least the exact v at b.
    """
    idx = node_edges(d, h, tail, widest, budget)
    j0 = int(idx[0])
    m = int(idx[-1]) - j0 + 1
    if d.atoms is not None:
        ell, p, _ = d.atoms
        ell = ell + 4 * _U * (np.abs(ell) + 1.0)  # the computed losses may be a few ulps low
        edges = idx * h
        k = np.clip(np.searchsorted(edges, ell, side="left") - 1, 0, edges.size - 2)  # edges[k] < ℓ <= edges[k+1]
        a, b = edges[k], edges[k + 1]
        with np.errstate(all="ignore"):
            v = p * np.expm1(a - ell) / np.expm1(a - b) * (1 + 8 * _U)
        v = np.clip(np.nan_to_num(v, nan=0.0), 0.0, p)
        below = ell <= edges[0]
        above = ell > edges[-1]
        v = np.where(below, 0.0, v)
        w = np.bincount(k, weights=np.where(above | below, 0.0, p - v), minlength=m) + np.bincount(
            k + 1, weights=np.where(above | below, 0.0, v), minlength=m
        )
        w[0] += float(p[below].sum())
        w = w * (1 + 4 * _U)
        return Discrete(h, j0, 0.0, w[:m], float(d.p_inf + p[above].sum()) * (1 + 4 * _U))
    t = d.cdf(idx * h, -1)
    P, Q, eP, eQ = _bin_masses(t)
    a = idx[:-1] * h
    span = np.diff(idx) * h
    gap = np.broadcast_to(np.asarray(t.gap, float), idx.shape)[:-1]
    P_hi = np.maximum(P, 0.0) + eP
    Q_lo = np.maximum(Q - eQ, 0.0)
    with np.errstate(all="ignore"):
        lq = np.log(np.where(Q_lo > 0, Q_lo, 1.0)) + a - gap
        qe = np.where(Q_lo > 0, np.exp(lq), 0.0)  # Q_lo·e^{a − gap}
        num = P_hi - qe + 4 * _U * P_hi + qe * _U * (6.0 + np.abs(lq))
        v = num / (-np.expm1(-span)) * (1 + 4 * _U)  # P-mass sent to the upper node
    v = np.clip(np.nan_to_num(v, nan=0.0, posinf=0.0), 0.0, P_hi)
    u = P_hi - v
    w = np.bincount(idx[:-1] - j0, weights=u, minlength=m) + np.bincount(idx[1:] - j0, weights=v, minlength=m)
    w[0] += t.fp[0] + t.efp[0]  # losses below the grid: moved up to its first node
    w *= 1 + 4 * _U  # the sums' rounding
    p_inf = d.p_inf + t.sp[-1] + t.esp[-1]  # above the last node (its point is at or below it): +∞
    return Discrete(h, j0, 0.0, w, float(p_inf) * (1 + 4 * _U))


def discretise_lower(
    d: Direction, h: float, tail: float = 1e-30, times: int = 1, widest: float = WIDEST_BIN, enough: float = 0.0
) -> Discrete:
    """A dominated discrete PLD on the grid (j + c)h (binning, then rounding down).

    The bins between the evaluation points are a post-processing of the
    output, so the binned PLD — one atom per bin at log(P_j/Q_j) — is
    dominated by the true one. Each atom takes the smallest P-mass and the
    lowest loss its error bounds allow, and is then moved down to the
    nearest point of a grid shifted by c·h; moving losses down only lowers
    δ. The moves d_j >= 0 are known exactly, so their mean and variance
    under P are recorded: over many steps the total move concentrates
    around its mean, which :func:`.errors.lower_shift` gives back. The
    shift c is chosen (among the atoms' own offsets) to make that give-back
    largest for ``times`` steps. The edges are :func:`node_edges`' nodes,
    nudged within a cell so that the atoms share an offset, and where that
    leaves the moves varying, the edges next to the heaviest bin placed one
    by one (:func:`_aligned_edges`) — any partition is a post-processing, and
    each atom still moves by less than h. The search for the best fit stops once the spread part of
    the give-back penalty, √(2·times·var·L) in cells, is at most ``enough`` (the engine passes a
    quarter of the width asked for, in cells: a better fit would not change whether the width is met).
    """
    idx = node_edges(d, h, tail, widest)
    j0 = int(idx[0])
    lo_edges = idx[:-1]

    def good(fit_) -> bool:
        return fit_[2] <= POOR_FIT or float(np.sqrt(2.0 * max(times, 1) * fit_[2] * 25.0)) <= enough

    if d.atoms is not None:
        ell, p, _ = d.atoms
        ell = ell - 4 * _U * (np.abs(ell) + 1.0)
        p = p * (1 - 4 * _U)
        off = ell / h - np.floor(ell / h)
        c = _best_offset(off, p, times)[0]
        x = ell / h - c
        k = np.floor(x).astype(np.int64)
        k0 = int(k.min())
        w = np.bincount(k - k0, weights=p)
        dj = _credit(x)
        mean, var = _move_stats(p, dj)
        m1 = np.bincount(k - k0, weights=p * dj, minlength=w.size)
        m2 = np.bincount(k - k0, weights=p * dj * dj, minlength=w.size)
        return Discrete(h, k0, c, w, float(d.p_inf) * (1 - 4 * _U), mean * h, var * h * h, m1, m2)

    def bins(nodes, nudge=None):
        edges = nodes * h
        if nudge is not None:
            edges = edges + nudge * h
        t = d.cdf(edges)
        P, Q, eP, eQ = _bin_masses(t)
        P_lo = np.maximum(P - eP, 0.0)
        Q_hi = Q + eQ
        above = max(float(t.sp[-1] - t.esp[-1]), 0.0)
        # A bin's losses are above its lower edge's point, whose loss is within the gap of the edge:
        # its atom is no lower (offsets in cells from the unshifted grid point, a hair lower still).
        gap = np.broadcast_to(np.asarray(t.gap, float), edges.shape)
        # (Less the rounding of that difference: u per operation, relative to |edge/h| and the gap.)
        e_h, g_h = edges[:-1] / h, gap[:-1] / h
        floor = (edges[:-1] - gap[:-1]) / h - nodes[:-1] - 1e-9 - 4 * _U * (np.abs(e_h) + np.abs(g_h) + 1.0)
        return P_lo, Q_hi, above, floor, float(gap[-1]) / h

    def nudged(nodes, nudge, b, o, target, frozen=None):
        """Linear corrections of the inner edges (those between bins of one cell, less ``frozen``)
        towards atoms at offset ``target``; returns (nudge, bins, offsets)."""
        one = np.diff(nodes) == 1
        inner = np.zeros(b[0].size + 1, dtype=bool)
        inner[1:-1] = one[:-1] & one[1:]  # only edges between bins of one cell move
        if frozen is not None:
            inner &= ~frozen
        nudge = nudge.copy()
        free = np.zeros(nudge.size, dtype=bool)
        free[1:-1] = True if frozen is None else ~frozen[1:-1]
        for _ in range(FIT_ROUNDS):  # linear corrections
            excess = np.clip((o - target + 0.5) % 1.0 - 0.5, -0.25, 0.25)
            nudge[inner] -= 0.5 * (excess[:-1] + excess[1:])[inner[1:-1]]
            nudge[free] = np.clip(nudge[free], -0.45, 0.45)  # edges stay in order
            b = bins(nodes, nudge)
            o = np.maximum(_offsets(nodes[:-1], b[0], b[1], h), b[3])
        return nudge, b, o

    def fit(nodes, first=None):
        """Nudge the edges so that the atoms sit near a common target offset and the moves vary
        little (a smaller give-back penalty in lower_shift); any partition is a post-processing, so
        this stays a lower bound. Targets tried: mid-bin, and the offsets of the heaviest bins (HEAVY_TARGETS)
        (mass that cannot be moved by nudging — a point mass such as the zero loss of a symmetrised
        hull or Laplace's ±ε₀, or mass piled against a finite end of the support — is met by
        shifting the others) — until one leaves moves that vary little enough (``good``); where none
        does, the edges next to the heaviest bin are placed one by one (:func:`_aligned_edges`).
        Returns the best (penalty, bins, offset fit, offsets, nodes)."""
        lo_e = nodes[:-1]
        b0 = first if first is not None else bins(nodes)
        o0 = np.maximum(_offsets(lo_e, b0[0], b0[1], h), b0[3])
        if b0[0].size <= 2:
            f = _best_offset(o0, b0[0], times)
            return f[3], b0, f, o0, nodes
        heavy = [float(o0[i] % 1.0) for i in np.argsort(b0[0])[::-1][:HEAVY_TARGETS]]
        targets = [0.5] + [x for k, x in enumerate(heavy) if all(abs(x - y) > 0.02 for y in [0.5] + heavy[:k])]
        best = None
        last = None
        for target in targets:
            shift = np.zeros(b0[0].size + 1)
            shift[1:-1] = target - 0.5  # a uniform move of the inner edges puts mid-bin atoms at the target
            b = bins(nodes, shift) if target != 0.5 else b0
            o = np.maximum(_offsets(lo_e, b[0], b[1], h), b[3])  # offsets from the unshifted grid points
            nudge, b, o = nudged(nodes, shift, b, o, target)
            f = _best_offset(o, b[0], times)
            if best is None or f[3] < best[0]:
                best = (f[3], b, f, o, nodes)
            if good(f):
                return best  # the moves hardly vary (or vary little enough): stop searching
            last = (target, nudge, b, o)
        if times >= FIT_FROM and last is not None:
            target, nudge, b, o = last
            placed = _aligned_edges(d, h, nodes, nudge, b[0], o)
            if placed is not None:
                nodes2, nudge2, frozen, target = placed
                b2 = bins(nodes2, nudge2)
                o2 = np.maximum(_offsets(nodes2[:-1], b2[0], b2[1], h), b2[3])
                _, b2, o2 = nudged(nodes2, nudge2, b2, o2, target, frozen)
                f = _best_offset(o2, b2[0], times)
                if f[3] < best[0]:
                    best = (f[3], b2, f, o2, nodes2)
        return best

    b_first = bins(idx)
    if times < FIT_FROM:
        o = np.maximum(_offsets(lo_edges, b_first[0], b_first[1], h), b_first[3])
        f = _best_offset(o, b_first[0], times)
        best = (f[3], b_first, f, o, idx)
    else:
        best = fit(idx, b_first)
    if times >= FIT_FROM and b_first[0].size > 4 and not good(best[2]) and best[2][2] > MERGE_FIT:
        # Mass concentrated within a cell or two (the bulk of a small sampling rate, piled against
        # the support's end) leaves two or three heavy atoms that no nudge can line up: merging the
        # heaviest bin with a neighbour (any coarser partition is still a post-processing) often
        # costs less than their moves do.
        i = int(np.argmax(b_first[0]))
        for drop in ([i], [i + 1], [i, i + 1], [i - 1, i + 1]):
            if all(0 < e < idx.size - 1 for e in drop):
                cand = fit(np.delete(idx, drop))
                if cand[0] < best[0]:
                    best = cand
    _, (P, Q, above, _, top_gap), (c, _, _, _), off, idx = best
    lo_edges = idx[:-1]
    # Grid point (k + c)h at or below each atom, k relative to j0; the move credited from the same
    # rounded offset that places it.
    x = off - c
    k = (lo_edges - j0) + np.floor(x).astype(np.int64)
    k0 = int(min(k.min(), 0)) if k.size else 0
    top = int(idx[-1]) - j0
    w = np.bincount(k - k0, weights=P, minlength=top - k0)
    dj = _credit(x)
    mean, var = _move_stats(P, dj)
    m1 = np.bincount(k - k0, weights=P * dj, minlength=w.size)
    m2 = np.bincount(k - k0, weights=P * dj * dj, minlength=w.size)
    # The bin above the last edge (which is not nudged): its atom is above that edge's point, whose
    # loss is within the direction's gap of top·h: two cells, and the gap, down is below it (credited
    # no move).
    w[max(top - 2 - int(np.ceil(top_gap)) - k0, 0)] += above
    # Mass below the grid is dropped (moved to −∞, credited 0).
    return Discrete(h, j0 + k0, c, w, float(d.p_inf) * (1 - 4 * _U), mean * h, var * h * h, m1, m2)


def _offsets(lo_edges: np.ndarray, P: np.ndarray, Q: np.ndarray, h: float) -> np.ndarray:
    """Each bin's atom log(P_j/Q_j), lowered by its rounding, as an offset from its lower edge (grid
    index) in units of h (P or Q zero: 0)."""
    e_lo = lo_edges * h
    ok = (P > 0) & (Q > 0)
    with np.errstate(all="ignore"):
        lp, lq = np.log(np.where(ok, P, 1)), np.log(np.where(ok, Q, 1))
        ell = np.where(ok, lp - lq, e_lo)
        # Lowered by the rounding of both logarithms, their difference and the offset's subtraction.
        ell = ell - 4 * _U * (np.abs(lp) + np.abs(lq) + np.abs(ell) + np.abs(e_lo) + 1.0)
    return np.where(ok, (ell - e_lo) / h, 0.0)


#: :func:`_aligned_edges` places at most this many edges on each side of the heaviest bin ...
ALIGN_BINS = 24
#: ... and stops where the P-mass beyond its last edge is below this. A neighbour of the heaviest bin
#: holding at least ABSORB_SHARE of its mass whose atom cannot be placed joins it (up to ABSORB on each side).
ALIGN_REST = 1e-6
ABSORB_SHARE = 0.01
ABSORB = 2


def _atoms_from(d: Direction, a: float, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log(P/Q) of the bin between the loss ``a`` and each loss in ``xs`` (NaN where a measure is 0), and
    the P-mass beyond each x (above it, or below). For choosing edges only: the bins used are computed
    again, with their error bounds."""
    t = d.cdf(np.concatenate([[a], xs]))
    up = xs > a

    def mass(f, s_, ef, es):
        by_f = np.where(up, f[1:] - f[0], f[0] - f[1:])
        by_s = np.where(up, s_[0] - s_[1:], s_[1:] - s_[0])
        return np.where(ef[0] + ef[1:] <= es[0] + es[1:], by_f, by_s)

    P = mass(t.fp, t.sp, t.efp, t.esp)
    Q = mass(t.fq, t.sq, t.efq, t.esq)
    with np.errstate(all="ignore"):
        atom = np.where((P > 0) & (Q > 0), np.log(np.maximum(P, 1e-300)) - np.log(np.maximum(Q, 1e-300)), np.nan)
    return atom, np.where(up, t.sp[1:], t.fp[1:])


#: :func:`_edge_for` looks for an edge among this many points, twice (the second time between the
#: two points of the first that bracket it).
EDGE_POINTS = 128


def _edge_for(d: Direction, h: float, a: float, v: float, reach: float) -> tuple[float, float] | None:
    """The edge x (cells; beyond v, within ``reach`` cells of ``a``) at which the bin between a and x has
    its atom at v (cells), to within reach/EDGE_POINTS² of x — the atom lies strictly between the
    bin's edges and moves monotonically with x (the bin takes in higher losses, or lower ones) —
    and the P-mass beyond x. None where no such x is found."""
    sign = 1.0 if v > a else -1.0
    lo, hi = v, a + sign * reach
    if sign * (hi - lo) <= 0:
        return None
    for _ in range(2):
        xs = lo + (hi - lo) * np.linspace(0.0, 1.0, EDGE_POINTS + 1)[1:]
        atom, beyond = _atoms_from(d, a * h, xs * h)
        g = sign * (atom / h - v)  # below 0 until the crossing
        ok = np.flatnonzero(g >= 0)
        if ok.size == 0 or not np.all(np.isfinite(g[: ok[0] + 1])):
            return None
        j = int(ok[0])
        lo, hi = (lo if j == 0 else float(xs[j - 1])), float(xs[j])
    return hi, float(beyond[j])


def _aligned_edges(d: Direction, h: float, nodes: np.ndarray, nudge: np.ndarray, P: np.ndarray, off: np.ndarray):
    """Edges next to the heaviest bin placed one at a time so that each bin's atom sits at a point
    m + τ (cells), τ the heaviest bin's own offset (``off``, from its lower node): going up, each
    bin's lower edge is the last one placed and its upper edge is solved for (:func:`_edge_for`);
    going down, the mirror image. A neighbour holding a share of the anchor's mass whose own atom
    cannot be placed first joins the anchor (the pile against the support's end beside the heaviest
    bin). (Where most of the mass sits against an end of the support — the bulk of a small sampling
    rate — the atoms there hardly move with the edges the linear nudges correct, and their offsets
    stay apart by a few hundredths of a cell: a give-back of √(2·T·var·L) that does not shrink with
    the grid.) Returns (nodes, nudges, frozen, τ) with the
    placed edges spliced in among the others (each node the nearest grid index, its nudge the rest),
    or None where nothing was placed."""
    edges = nodes + nudge
    i = int(np.argmax(P))
    target = float(off[i] % 1.0)
    lo_a, hi_a = float(edges[i]), float(edges[i + 1])  # the anchor bin
    top = float(edges[-2]) if edges.size > 2 else float(edges[-1])
    bottom = float(edges[1]) if edges.size > 2 else float(edges[0])
    solved: dict = {}

    def next_edge(x: float, side: int):
        """The edge beyond x (up: side 1, down: −1) that puts the atom of the bin from x on the next
        point m + target at least a quarter cell away (each solved once)."""
        v = target + (np.ceil(x + 0.25 - target) if side > 0 else np.floor(x - 0.25 - target))
        if (x, v) not in solved:
            solved[(x, v)] = _edge_for(d, h, x, v, 4.0)
        return solved[(x, v)]

    # A neighbour holding a share of the anchor's mass whose own atom cannot be placed (the pile against
    # the support's end just below the heaviest bin: its atom stays at the end whatever its upper edge)
    # joins the anchor, whose atom then sets the offset.
    lo_i, hi_i, mass = i, i, float(P[i])  # the anchor's bins, and its P-mass
    for side in (-1, 1):
        for _ in range(ABSORB):
            j = lo_i - 1 if side < 0 else hi_i + 1
            if not (1 <= j < P.size - 1) or P[j] < ABSORB_SHARE * mass:
                break
            if next_edge(lo_a if side < 0 else hi_a, side) is not None:
                break
            if side < 0:
                lo_i, lo_a = j, float(edges[j])
            else:
                hi_i, hi_a = j, float(edges[j + 1])
            mass += float(P[j])
            atom = _atoms_from(d, lo_a * h, np.array([hi_a * h]))[0][0] / h
            if not np.isfinite(atom):
                return None
            target = float(atom % 1.0)
    placed: dict = {}
    for side, start, limit in ((1, hi_a, top - 1.0), (-1, lo_a, bottom + 1.0)):
        x, placed[side] = start, []
        for _ in range(ALIGN_BINS):
            got = next_edge(x, side)
            if got is None or side * (got[0] - limit) >= 0:
                break
            x = got[0]
            placed[side].append(x)
            if got[1] < ALIGN_REST:
                break
    placed_up, placed_down = placed[1], placed[-1]
    if not placed_up and not placed_down:
        return None
    lo_new = placed_down[-1] if placed_down else lo_a
    hi_new = placed_up[-1] if placed_up else hi_a
    below = edges[edges < lo_new - 0.5]
    above = edges[edges > hi_new + 0.5]
    mid = np.array(placed_down[::-1] + [lo_a, hi_a] + placed_up)
    new = np.concatenate([below, mid, above])
    # (Placed edges are a quarter cell apart or more, and the others keep their nodes and nudges, within
    # ±0.45 of a cell — and the nudges that follow keep them there: formed again as node + nudge, the
    # edges keep their order. The check is a guard.)
    if not np.all(np.diff(new) > 1e-6) or new[0] != edges[0] or new[-1] != edges[-1]:
        return None
    n_new = np.floor(new + 0.5).astype(np.int64)
    n_new[0], n_new[-1] = nodes[0], nodes[-1]
    frozen = np.zeros(new.size, dtype=bool)
    frozen[below.size : below.size + mid.size] = True
    return n_new, new - n_new, frozen, target


def _best_offset(off: np.ndarray, p: np.ndarray, times: int) -> tuple[float, float, float, float]:
    """The grid offset c, the mean and variance (in units of h, h², under P) of the moves it causes, and its penalty.

    An atom at offset o moves down by o − c, or o − c + 1 when o < c. The
    candidates are the atoms' own offsets (the moves are piecewise linear in
    c between them); the one chosen minimises the give-back penalty of
    :func:`.errors.lower_shift` for ``times`` steps (about m·L/3 + √(2·times·v·L)).
    Mass not in ``p`` (dropped or infinite) is credited a move of 0.
    """
    if off.size == 0:
        return 0.0, 0.0, 0.0, 0.0
    off = off - np.floor(off)  # only the position within a grid cell matters
    order = np.argsort(off)
    o, w = off[order], p[order]
    s0, s1, s2 = np.cumsum(w), np.cumsum(w * o), np.cumsum(w * o * o)
    b0 = np.concatenate([[0.0], s0[:-1]])  # P-mass strictly before each candidate (o < c)
    b1 = np.concatenate([[0.0], s1[:-1]])
    t0, t1, t2 = s0[-1], s1[-1], s2[-1]
    c = o
    mean = t1 - c * t0 + b0
    second = t2 - 2 * c * t1 + c * c * t0 + 2 * (b1 - c * b0) + b0
    var = np.maximum(second - mean * mean, 0.0)
    L = 25.0
    cost = mean * L / 3 + np.sqrt(2 * max(times, 1) * var * L)
    i = int(np.argmin(cost))
    ci = float(min(max(c[i], 0.0), 1.0 - 1e-12))
    # Recompute at the chosen offset directly (the cumulative sums above can lose digits).
    dj = _moves(off, ci)
    m = float(np.dot(p, dj))
    v = float(np.dot(p, (dj - m) ** 2) + max(1.0 - float(p.sum()), 0.0) * m * m)
    return ci, m * (1 - 1e-9), v * (1 + 1e-6) + 1e-30, float(cost[i])


def _moves(off: np.ndarray, c: float) -> np.ndarray:
    """The move (in cells) of atoms at offsets ``off`` (in [0, 1)) rounded down onto the grid offset
    ``c``: o − c, or o − c + 1 when o < c, a hair below (for choosing c; the moves recorded are
    :func:`_credit`'s)."""
    dj = np.where(off < c, off - c + 1.0, off - c)
    return np.maximum(dj - 1e-9, 0.0)


def _credit(x: np.ndarray) -> np.ndarray:
    """The move (in cells) credited to an atom at x cells above the grid's offset, placed at ⌊x⌋: from
    the same rounded x that places it, less its rounding error (u·|x|) and a hair, so that the credit
    never exceeds the move."""
    x = np.asarray(x, float)
    return np.maximum(x - np.floor(x) - 1e-9 - 2 * _U * (np.abs(x) + 1.0), 0.0)


def _move_stats(p: np.ndarray, dj: np.ndarray) -> tuple[float, float]:
    """Mean (rounded down) and variance (rounded up) of the credited moves under P, in cells; mass not
    in ``p`` (dropped, infinite, or placed without a move) is credited 0."""
    m = float(np.dot(p, dj))
    v = float(np.dot(p, (dj - m) ** 2) + max(1.0 - float(p.sum()), 0.0) * m * m)
    return m * (1 - 1e-9), v * (1 + 1e-6) + 1e-30
