"""Privacy loss distributions (PLD): tight ε with a certified interval.

Each mechanism is described, per direction of the neighbouring relation, by
the distribution of its privacy loss L = log(P(X)/Q(X)), X ~ P. On a grid of
spacing h we compute the exact P- and Q-mass of every loss bin (jh, (j+1)h]
and build two discrete PLDs from them:

* **upper** — each bin's mass is spread onto its two end points so that its
  P-mass and Q-mass are kept ("connect the dots", Doroshenko, Ghazi, Kamath,
  Kumar & Manurangsi 2022, arXiv:2207.04380). Spreading e^{−L} can only
  raise every δ(ε), so this PLD *dominates* the true one, and so do its
  compositions: a certified upper bound, with error second order in h.
  Mass above the grid goes to +∞ (it is counted in δ, never dropped).
  In a step's far tails (coarse bins of at most SPARSE_MASS) only every
  SPARSE-th grid point is a node: connecting fewer dots is still sound
  (and the lower bound's bins are that wide there: still a partition).
* **lower** — the bins themselves are a post-processing of the output, so
  the binned PLD (one atom per bin at log(P_j/Q_j)) is *dominated* by the
  true one (a second pass nudges the bin edges so that the atoms sit near
  a common offset). Each atom is moved down onto a grid shifted by c·h;
  moving losses down only lowers δ. The moves d_j are known exactly, and
  over T steps their sum concentrates: by Bernstein's inequality it is at
  least its mean minus a margin except with probability η, so
  δ_true(ε) >= δ_lower(ε − s) − η (:func:`lower_shift`). Without this
  give-back the lower bound would drift by T times the mean move.
  Mass below the grid is dropped (moved to −∞).

Per-step tails holding at most 1e-9·δ/T of P-mass are cut (to +∞ for the
upper bound, dropped for the lower). T-fold self-composition raises the
discrete Fourier transform of the exponentially tilted step to the T-th
power on a window sized by Chernoff bounds on the tilted measure; the
tilted mass that may have wrapped around is bounded the same way and,
with an allowance for floating-point round-off in the transforms (a bound
on the Euclidean norm of the error vector from the standard FFT error
analysis, about 10·u·log2(n)·Σ T_j·||x_j||_2 with u the machine epsilon,
times the norm of the weights δ reads the masses with), added to the
upper δ and subtracted from the lower one. The FFT constant is a margin
over the radix-2 analysis, checked against extended precision in the
tests rather than proved for pocketfft's mixed radices; round-off is why
the engine only answers for δ >= 1e-12. The rounding of the tilt itself
(an error vector per step), of G, of the weights δ is read with and of
its suffix sums (summed in blocks: at most ~10³·u relative) is bounded
and allowed for as well. An upper bound's window may start at a
certified lower bound on ε instead (:func:`compose`, ``cut``): the mass
below wraps onto the top, which only raises δ, by at most e^{−λW}.

The upper end is computed on a grid no coarser than :data:`UPPER_H`
(1e-3/16) whatever width is asked for: its error is second order in h,
so it is then about 0.4× that of a 1e-4 grid — the spacing peer
accountants use — and no looser than theirs.

Mechanisms with two directions (Poisson subsampling) are bounded by the
larger δ of the two; the refinement spends its effort on the direction
whose upper bound is the largest (a bound on any grid is sound, so the
other keeps its coarser one). Sampling without replacement with
substitution neighbours is a single symmetric direction: the symmetrised
hull of the two Poisson directions (:func:`_symmetrised_hull`).

References
----------
.. [SMM] D. Sommer, S. Meiser, E. Mohammadi. Privacy Loss Classes: The Central
   Limit Theorem in Differential Privacy. PETS 2019 (PLD, δ(ε) formula).
.. [KJH] A. Koskela, J. Jälkö, A. Honkela. Computing Tight Differential Privacy
   Guarantees Using FFT. AISTATS 2020, arXiv:1906.03049.
.. [DGKKM] Doroshenko et al. 2022, arXiv:2207.04380 (connect the dots).
.. [ZDW] Y. Zhu, J. Dong, Y.-X. Wang. Optimal Accounting of Differential
   Privacy via Characteristic Function. AISTATS 2022, arXiv:2106.08567
   (dominating pairs of Poisson subsampling: remove and add directions).
.. [DRS] J. Dong, A. Roth, W. Su. Gaussian Differential Privacy. JRSS-B 2022,
   arXiv:1905.02383 (Thm 4.2: subsampling without replacement, C_q(f)).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np
from scipy import fft as sfft
from scipy import special

__all__ = [
    "Direction",
    "gaussian",
    "laplace",
    "dp",
    "subsampled_gaussian",
    "subsampled_dp",
    "subsampled_laplace",
    "sampled_wor_gaussian",
    "sampled_wor_laplace",
    "Composed",
    "compose",
    "epsilon",
    "delta_interval",
]

#: Finest starting grid is 1e-3 / 2**MAX_HALVINGS; steps narrower than 16 such cells are declined
#: (ValueError; callers fall back to RDP, which is close to tight for such tiny steps).
MAX_HALVINGS = 10

#: The lower bound trades η = LOWER_ETA·δ of δ for the concentration of its rounding (lower_shift).
LOWER_ETA = 1e-4

#: Largest grid (points) for one step or one composition; beyond it the engine declines (MemoryError).
MAX_GRID = 1 << 22

#: Largest grid (points) for one step's loss range; wider steps are declined (MemoryError).
MAX_STEP_GRID = 1 << 19


# ---------------------------------------------------------------------------
# Mechanisms: loss distributions per direction
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Direction:
    """One direction of a dominating pair, as the distribution of its privacy loss.

    Either continuous — ``cdf(ell)`` returns (P[L<=ℓ], Q[L<=ℓ], P[L>ℓ], Q[L>ℓ])
    for finite losses on the support [lo, hi] — or discrete atoms
    ``(losses, p, q)``. ``p_inf`` is P[L = +∞].
    """

    lo: float
    hi: float
    cdf: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None = None
    atoms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    p_inf: float = 0.0
    #: A point where P[L<=ℓ] is about 1/2, to choose cdf or survival differences.
    median: float = 0.0


def _phi(x):
    return special.ndtr(x)


def gaussian(mu: float) -> list[Direction]:
    """The Gaussian mechanism with μ = Δ/σ: L ~ N(μ²/2, μ²) under P, N(−μ²/2, μ²) under Q (symmetric)."""

    def cdf(ell):
        a = (ell - mu * mu / 2) / mu
        b = (ell + mu * mu / 2) / mu
        return _phi(a), _phi(b), _phi(-a), _phi(-b)

    return [Direction(lo=-np.inf, hi=np.inf, cdf=cdf, median=mu * mu / 2)]


def laplace(eps0: float) -> list[Direction]:
    """Laplace noise with ε₀ = Δ/b (symmetric; losses in [−ε₀, ε₀] with atoms at both ends)."""

    def cdf(ell):
        ell = np.asarray(ell, float)
        inside = (ell >= -eps0) & (ell < eps0)
        fp = np.where(ell >= eps0, 1.0, np.where(inside, 0.5 * np.exp(-(eps0 - ell) / 2), 0.0))
        sq = np.where(ell >= eps0, 0.0, np.where(inside, 0.5 * np.exp(-(eps0 + ell) / 2), 1.0))
        sp = np.where(ell >= eps0, 0.0, 1.0 - fp)
        fq = 1 - sq
        return fp, fq, sp, sq

    return [Direction(lo=-eps0, hi=eps0, cdf=cdf, median=eps0 - 2 * np.log(2) if eps0 > 2 * np.log(2) else 0.0)]


def _dp_pair(eps: float, delta: float):
    """The worst-case pair of an (ε, δ) guarantee over outcomes (+∞, ε, −ε, −∞)."""
    a = 1.0 / (1.0 + np.exp(-eps))  # e^ε/(1+e^ε)
    b = 1.0 - a
    p = np.array([delta, (1 - delta) * a, (1 - delta) * b, 0.0])
    q = np.array([0.0, (1 - delta) * b, (1 - delta) * a, delta])
    return p, q


def _atoms_from_pair(p, q):
    """Losses of outcome probabilities; returns finite atoms and P[L=+∞]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ell = np.log(p) - np.log(q)
    finite = (p > 0) & (q > 0)
    p_inf = float(np.sum(p[(p > 0) & (q == 0)]))
    return (ell[finite], p[finite], q[finite]), p_inf


def dp(eps: float, delta: float) -> list[Direction]:
    """A generic (ε, δ)-DP mechanism via its worst-case pair (symmetric)."""
    atoms, p_inf = _atoms_from_pair(*_dp_pair(eps, delta))
    return [Direction(lo=-eps, hi=eps, atoms=atoms, p_inf=p_inf)]


def subsampled_dp(eps: float, delta: float, rate: float) -> list[Direction]:
    """An (ε, δ) mechanism under Poisson subsampling at rate q (add/remove): both directions."""
    p, q = _dp_pair(eps, delta)
    out = []
    for pp, qq in (((1 - rate) * q + rate * p, q), (q, (1 - rate) * q + rate * p)):
        atoms, p_inf = _atoms_from_pair(pp, qq)
        out.append(Direction(lo=float(atoms[0].min()), hi=float(atoms[0].max()), atoms=atoms, p_inf=p_inf))
    return out


def subsampled_gaussian(rate: float, sigma: float) -> list[Direction]:
    """Poisson-subsampled Gaussian (sensitivity 1, noise multiplier σ), add/remove neighbours.

    remove: P = (1−q)N(0,σ²) + qN(1,σ²) vs Q = N(0,σ²);
    add:    P = N(0,σ²) vs Q = (1−q)N(0,σ²) + qN(1,σ²)   ([ZDW] Prop. 30).
    """
    if rate >= 1.0:
        return gaussian(1.0 / sigma)
    q, s2 = rate, sigma * sigma
    log1mq = np.log1p(-q)

    def x_of(ell):
        # L(x) = log(1 − q + q e^{(2x−1)/(2σ²)}) = ell  ⇔  x = σ² log((e^ℓ − 1 + q)/q) + 1/2
        with np.errstate(all="ignore"):
            return s2 * (np.log(np.expm1(ell) + q) - np.log(q)) + 0.5

    def remove(ell):
        ell = np.asarray(ell, float)
        x = np.where(ell > log1mq, x_of(np.maximum(ell, log1mq)), -np.inf)
        a, b = x / sigma, (x - 1) / sigma
        fq, sq = _phi(a), _phi(-a)
        fp = (1 - q) * fq + q * _phi(b)
        sp = (1 - q) * sq + q * _phi(-b)
        return fp, fq, sp, sq

    def add(ell):
        # L(x) = −log(1 − q + q e^{(2x−1)/(2σ²)}), decreasing: L <= ℓ  ⇔  x >= x(−ℓ)
        ell = np.asarray(ell, float)
        x = np.where(-ell > log1mq, x_of(np.maximum(-ell, log1mq)), -np.inf)
        a, b = x / sigma, (x - 1) / sigma
        fp, sp = _phi(-a), _phi(a)
        fq = (1 - q) * fp + q * _phi(-b)
        sq = (1 - q) * sp + q * _phi(b)
        return fp, fq, sp, sq

    # Median of L under P (roughly): L at x = q (the P-mean of x).
    with np.errstate(all="ignore"):
        med_r = float(np.log1p(q * np.expm1((2 * q - 1) / (2 * s2))))
    return [
        Direction(lo=float(log1mq), hi=np.inf, cdf=remove, median=med_r),
        Direction(lo=-np.inf, hi=float(-log1mq), cdf=add, median=-med_r),
    ]


def _laplace_cdf(x, mu: float, b: float):
    """(F, 1 − F) of Laplace(μ, b) at x (x may be ±∞)."""
    z = (np.asarray(x, float) - mu) / b
    with np.errstate(over="ignore", invalid="ignore"):
        half = 0.5 * np.exp(-np.abs(z))
    below = z < 0
    return np.where(below, half, 1.0 - half), np.where(below, 1.0 - half, half)


def subsampled_laplace(eps0: float, rate: float) -> list[Direction]:
    """Poisson-subsampled Laplace noise (ε₀ = Δ/b; sensitivity 1, b = 1/ε₀), add/remove neighbours.

    remove: P = (1−q)Lap(0,b) + qLap(1,b) vs Q = Lap(0,b); add: the reverse. With
    ℓ₀(x) = (|x| − |x−1|)/b ∈ [−ε₀, ε₀], the loss is log(1 − q + q e^{ℓ₀(x)})
    (remove) or minus that (add): atoms at both ends of the support, continuous
    in between, where x = (ℓ₀/ε₀ + 1)/2.
    """
    if rate >= 1.0:
        return laplace(eps0)
    q, b = rate, 1.0 / eps0
    top = float(np.log1p(q * np.expm1(eps0)))  # log(1 − q + q e^{ε₀})
    bottom = float(np.log1p(q * np.expm1(-eps0)))  # log(1 − q + q e^{−ε₀})

    def m_of(ell):
        # ℓ₀ with log(1 − q + q e^{ℓ₀}) = ℓ (−∞ where 1 − q + ... cannot reach e^ℓ)
        with np.errstate(all="ignore"):
            return np.where(np.expm1(ell) + q > 0, np.log(np.maximum(np.expm1(ell) + q, 1e-300)) - np.log(q), -np.inf)

    def x_of(m):
        return (np.clip(m, -eps0, eps0) / eps0 + 1.0) / 2.0

    def remove(ell):
        # L <= ℓ  ⇔  ℓ₀(x) <= m  ⇔  x <= x*(m) (none below −ε₀, all from ε₀ on)
        m = m_of(np.asarray(ell, float))
        x = np.where(m < -eps0, -np.inf, np.where(m >= eps0, np.inf, x_of(m)))
        f0, s0 = _laplace_cdf(x, 0.0, b)
        f1, s1 = _laplace_cdf(x, 1.0, b)
        return (1 - q) * f0 + q * f1, f0, (1 - q) * s0 + q * s1, s0

    def add(ell):
        # L = −log(1 − q + q e^{ℓ₀(x)}) <= ℓ  ⇔  ℓ₀(x) >= m(−ℓ)  ⇔  x >= x* (all up to −ε₀, none past ε₀)
        m = m_of(-np.asarray(ell, float))
        x = np.where(m <= -eps0, -np.inf, np.where(m > eps0, np.inf, x_of(m)))
        f0, s0 = _laplace_cdf(x, 0.0, b)
        f1, s1 = _laplace_cdf(x, 1.0, b)
        return s0, (1 - q) * s0 + q * s1, f0, (1 - q) * f0 + q * f1

    return [
        Direction(lo=bottom, hi=top, cdf=remove, median=0.0),
        Direction(lo=-top, hi=-bottom, cdf=add, median=0.0),
    ]


def _symmetrised_hull(remove: Direction, add: Direction) -> list[Direction]:
    """The loss distribution of C_q(f) = min{f_q, f_q⁻¹}** from the two Poisson directions.

    For sampling m of n without replacement with substitution neighbours, a
    mechanism that is f-DP (f symmetric) becomes C_q(f)-DP, q = m/n ([DRS]
    Thm 4.2), and that is tight. f_q = q·f + (1 − q)·Id and f_q⁻¹ are the
    trade-offs of the add and remove pairs of Poisson subsampling, so for
    every ε the hull's curve is δ(ε) = max(δ_remove(ε), δ_add(ε)) (the
    conjugate of a convex hull of a minimum is the maximum of the
    conjugates). The hull is symmetric, and a symmetric trade-off's loss L
    has, for ε >= 0,

        P[L > ε] = δ(ε) − δ'(ε),   Q[L > ε] = −e^{−ε} δ'(ε),
        P[L < −ε] = Q[L > ε],      Q[L < −ε] = P[L > ε],

    with the rest of the mass at L = 0. Where one direction's δ is the
    larger, these are that direction's own survival functions; where the
    larger one changes, the jump is an atom. Composing the two directions
    separately and taking the larger δ would *under*-state ε: the hull is
    less private than either direction.
    """

    def survival(e):
        # (P[L > e], Q[L > e]) of the hull for e >= 0, from the direction with the larger δ(e).
        _, _, spr, sqr = remove.cdf(e)
        _, _, spa, sqa = add.cdf(e)
        with np.errstate(over="ignore", invalid="ignore"):
            use_add = (spa - np.exp(e) * sqa) > (spr - np.exp(e) * sqr)
        return np.where(use_add, spa, spr), np.where(use_add, sqa, sqr)

    def cdf(ell):
        ell = np.asarray(ell, float)
        sp, sq = survival(np.abs(ell))
        neg = ell < 0
        # ℓ < 0: P[L <= ℓ] = Q[L >= −ℓ], Q[L <= ℓ] = P[L >= −ℓ] (atoms sit off the grid edges).
        fp = np.where(neg, sq, 1.0 - sp)
        fq = np.where(neg, sp, 1.0 - sq)
        return fp, fq, np.where(neg, 1.0 - sq, sp), np.where(neg, 1.0 - sp, sq)

    top = float(max(remove.hi, add.hi))
    return [Direction(lo=-top, hi=top, cdf=cdf, median=0.0)]


def sampled_wor_gaussian(rate: float, sigma: float) -> list[Direction]:
    """Gaussian on a sample of m of n records drawn without replacement (q = m/n), substitution neighbours.

    G_{1/σ} (σ relative to the substitution sensitivity) becomes C_q(G_{1/σ}):
    see :func:`_symmetrised_hull`.
    """
    if rate >= 1.0:
        return gaussian(1.0 / sigma)
    return _symmetrised_hull(*subsampled_gaussian(rate, sigma))


def sampled_wor_laplace(eps0: float, rate: float) -> list[Direction]:
    """Laplace noise (ε₀ = Δ/b, substitution sensitivity) on a sample of m of n without replacement."""
    if rate >= 1.0:
        return laplace(eps0)
    return _symmetrised_hull(*subsampled_laplace(eps0, rate))


# ---------------------------------------------------------------------------
# Discretisation
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Discrete:
    """Masses ``p`` at losses (k0 + i + c)·h, i = 0..len(p)−1, plus P[L=+∞].

    A lower (dominated) discretisation also records the mean and variance,
    under P, of how far it moved each loss down (``move_mean``,
    ``move_var``); the composition uses them to win most of the moves back
    (see :func:`lower_shift`).
    """

    h: float
    k0: int
    c: float
    p: np.ndarray
    p_inf: float
    move_mean: float = 0.0
    move_var: float = 0.0

    def losses(self) -> np.ndarray:
        return (self.k0 + np.arange(self.p.size) + self.c) * self.h

    @cached_property
    def _blocks(self) -> dict:
        return {}

    def mgf_blocks(self, r: int):
        """The masses as blocks of r grid points for :func:`_log_mgf` (None when there are none):
        (blocks (m, r), loss of the first mass, of the last, block starts and offsets relative to it).
        Cached per r."""
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


def _range(d: Direction, h: float, tail: float) -> tuple[int, int]:
    """Grid indices [j0, j1] covering all but ``tail`` P-mass on each side."""
    if d.atoms is not None:
        ell = d.atoms[0]
        return int(np.floor(ell.min() / h)) - 1, int(np.ceil(ell.max() / h)) + 1
    lo = d.lo if np.isfinite(d.lo) else None
    hi = d.hi if np.isfinite(d.hi) else None

    # The nearest distance from the median, on a geometric ladder (ratio 2^(1/16)), beyond which
    # each tail is below ``tail`` (any point with a small enough tail is valid): one cdf call.
    dist = 2.0 ** (np.arange(-64, 16 * 14 + 1) / 16.0)

    def reach(sign):
        fp, _, sp, _ = d.cdf(d.median + sign * dist)
        outside = fp if sign < 0 else sp
        ok = np.flatnonzero(outside <= tail)
        return d.median + sign * (dist[ok[0]] if ok.size else dist[-1])

    if lo is None:
        lo = reach(-1.0)
    if hi is None:
        hi = reach(1.0)
    return int(np.floor(lo / h)) - 1, int(np.ceil(hi / h)) + 1


#: Connect-the-dots nodes: every grid point where a step's loss has mass, every SPARSE-th one in its
#: far tails (coarse bins holding at most SPARSE_MASS of P-mass; see :func:`discretise_upper`).
SPARSE = 16
SPARSE_MASS = 1e-10


def _node_edges(d: Direction, h: float, tail: float) -> np.ndarray:
    """Grid indices of the bin edges for :func:`discretise_upper` (increasing)."""
    j0, j1 = _range(d, h, tail)
    if j1 - j0 > MAX_STEP_GRID:
        raise MemoryError(f"a step's loss range needs {j1 - j0} grid points (limit {MAX_STEP_GRID})")
    if d.atoms is not None or j1 - j0 <= 8 * SPARSE:
        return np.arange(j0, j1 + 1)
    k = -(-(j1 - j0) // SPARSE)
    coarse = j0 + SPARSE * np.arange(k + 1)
    P = _masses(d, coarse * h)[0]
    heavy = np.flatnonzero(P > SPARSE_MASS)
    if heavy.size == 0:
        return coarse
    a, b = max(int(heavy[0]) - 1, 0), min(int(heavy[-1]) + 2, k)
    return np.concatenate([coarse[:a], np.arange(coarse[a], coarse[b]), coarse[b:]])


def _masses(d: Direction, edges: np.ndarray):
    """Exact (P, Q) of the bins between consecutive ``edges`` (losses (e_i, e_{i+1}]), and the masses
    below the first and above the last edge."""
    if d.atoms is not None:
        ell, p, q = d.atoms
        idx = np.searchsorted(edges, ell, side="left") - 1  # bin (e_i, e_{i+1}] containing ℓ
        inside = (idx >= 0) & (idx < edges.size - 1)
        m = edges.size - 1
        P = np.bincount(idx[inside], weights=p[inside], minlength=m)[:m]
        Q = np.bincount(idx[inside], weights=q[inside], minlength=m)[:m]
        below = (float(p[idx < 0].sum()), float(q[idx < 0].sum()))
        above = (float(p[idx >= m].sum()), float(q[idx >= m].sum()))
        return P, Q, below, above
    fp, fq, sp, sq = d.cdf(edges)
    upper = edges[:-1] >= d.median
    P = np.where(upper, sp[:-1] - sp[1:], fp[1:] - fp[:-1])
    Q = np.where(upper, sq[:-1] - sq[1:], fq[1:] - fq[:-1])
    return np.maximum(P, 0.0), np.maximum(Q, 0.0), (float(fp[0]), float(fq[0])), (float(sp[-1]), float(sq[-1]))


def discretise_upper(d: Direction, h: float, tail: float = 1e-30) -> Discrete:
    """A dominating discrete PLD on the grid jh (connect the dots).

    Each bin (a, b] between nodes sends its P-mass to its two end points in
    the proportions that keep both its P- and Q-mass. The nodes are grid
    points: all of them where the loss has mass, every SPARSE-th in the far
    tails (a coarser bin is still connected soundly; it is only a little
    less tight, on mass that hardly moves δ). Mass below the first node is
    rounded up to it; mass above the last goes to +∞.
    """
    idx = _node_edges(d, h, tail)
    j0 = int(idx[0])
    P, Q, below, above = _masses(d, idx * h)
    a = idx[:-1] * h
    span = np.diff(idx) * h
    with np.errstate(all="ignore"):
        qe = np.where(Q > 0, np.exp(np.log(np.where(Q > 0, Q, 1.0)) + a), 0.0)  # Q_j e^{a_j}
        v = (P - qe) / (-np.expm1(-span))  # P-mass sent to the upper end point
    v = np.clip(np.nan_to_num(v, nan=0.0, posinf=0.0), 0.0, P)
    u = P - v
    m = int(idx[-1]) - j0 + 1
    w = np.bincount(idx[:-1] - j0, weights=u, minlength=m) + np.bincount(idx[1:] - j0, weights=v, minlength=m)
    w[0] += below[0]  # losses below the grid: rounded up to its first point
    return Discrete(h, j0, 0.0, w, float(d.p_inf + above[0]))


def discretise_lower(d: Direction, h: float, tail: float = 1e-30, times: int = 1) -> Discrete:
    """A dominated discrete PLD on the grid (j + c)h (binning, then rounding down).

    The bins (jh, (j+1)h] are a post-processing of the output, so the binned
    PLD — one atom per bin at log(P_j/Q_j) — is dominated by the true one.
    Each atom is then moved down to the nearest point of a grid shifted by
    c·h; moving losses down only lowers δ. The moves d_j >= 0 are known
    exactly, so their mean and variance under P are recorded: over many
    steps the total move concentrates around its mean, which
    :func:`lower_shift` gives back. The shift c is chosen (among the atoms'
    own offsets) to make that give-back largest for ``times`` steps. In the
    far tails the bins are SPARSE grid cells wide (the same nodes as
    :func:`discretise_upper`; still a partition, and each atom still moves
    by less than h).
    """
    idx = _node_edges(d, h, tail)
    j0 = int(idx[0])
    lo_edges = idx[:-1]

    def bins(nudge=None):
        edges = idx * h
        if nudge is not None and d.atoms is None:
            edges = edges + nudge * h
        return _masses(d, edges)

    P, Q, below, above = bins()
    off = _offsets(lo_edges, P, Q, h)
    if d.atoms is None and P.size > 2:
        # Nudge the edges so that the atoms sit near a common target offset and the moves vary
        # little (a smaller give-back penalty in lower_shift). Any partition is a post-processing,
        # so this stays a lower bound. Targets tried: mid-bin, and the offset of the heaviest bin
        # (a point mass — the zero loss of a symmetrised hull, Laplace's ±ε₀ — cannot be nudged,
        # so the others are shifted to meet it). The one with the smaller penalty is kept.
        best = None
        i = int(np.argmax(P))
        heavy = float(off[i] % 1.0)
        # A point mass: one bin holding far more than its neighbours.
        atom = P[i] > 4.0 * max(P[max(i - 1, 0)] if i > 0 else 0.0, P[i + 1] if i + 1 < P.size else 0.0)
        for target in (0.5, heavy) if atom and abs(heavy - 0.5) > 0.05 else (0.5,):
            shift = np.zeros(P.size + 1)
            shift[1:-1] = target - 0.5  # a uniform move of the inner edges puts mid-bin atoms at the target
            b = bins(shift) if target != 0.5 else (P, Q, below, above)
            o = _offsets(lo_edges, b[0], b[1], h)  # offsets from the unshifted grid points
            excess = np.clip((o - target + 0.5) % 1.0 - 0.5, -0.25, 0.25)
            nudge = shift.copy()
            nudge[1:-1] -= 0.5 * (excess[:-1] + excess[1:])
            b = bins(nudge)
            o = _offsets(lo_edges, b[0], b[1], h)
            fit = _best_offset(o, b[0], times)
            if best is None or fit[3] < best[1][3]:
                best = (b, fit, o)
        (P, Q, below, above), (c, mean, var, _), off = best
    else:
        c, mean, var, _ = _best_offset(off, P, times)
    # Grid point (k + c)h at or below each atom, k relative to j0.
    k = (lo_edges - j0) + np.floor(off - c).astype(np.int64)
    k0 = int(min(k.min(), 0)) if k.size else 0
    top = int(idx[-1]) - j0
    w = np.bincount(k - k0, weights=P, minlength=top - k0)
    w[top - 1 - k0] += above[0]  # binned mass above the grid → a grid point below the top edge (credited 0)
    # Mass below the grid is dropped (moved to −∞, credited 0).
    return Discrete(h, j0 + k0, c, w, float(d.p_inf), mean * h, var * h * h)


def _offsets(lo_edges: np.ndarray, P: np.ndarray, Q: np.ndarray, h: float) -> np.ndarray:
    """Each bin's atom log(P_j/Q_j) as an offset from its lower edge (grid index) in units of h
    (Q underflow: 0)."""
    e_lo = lo_edges * h
    ok = (P > 0) & (Q > 0)
    with np.errstate(all="ignore"):
        ell = np.where(ok, np.log(np.where(ok, P, 1)) - np.log(np.where(ok, Q, 1)), e_lo)
    return np.where(ok, (ell - e_lo) / h, 0.0)


def _best_offset(off: np.ndarray, p: np.ndarray, times: int) -> tuple[float, float, float, float]:
    """The grid offset c, the mean and variance (in units of h, h², under P) of the moves it causes, and its penalty.

    An atom at offset o moves down by o − c, or o − c + 1 when o < c. The
    candidates are the atoms' own offsets (the moves are piecewise linear in
    c between them); the one chosen minimises the give-back penalty of
    :func:`lower_shift` for ``times`` steps (about m·L/3 + √(2·times·v·L)).
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
    dj = np.where(off < ci, off - ci + 1.0, off - ci)
    dj = np.maximum(dj - 1e-9, 0.0)  # a hair below the exact move: credit never exceeds the move
    m = float(np.dot(p, dj))
    v = float(np.dot(p, (dj - m) ** 2) + max(1.0 - float(p.sum()), 0.0) * m * m)
    return ci, m * (1 - 1e-9), v * (1 + 1e-6) + 1e-30, float(cost[i])


# ---------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Composed:
    """A composed discrete PLD, stored exponentially tilted.

    The finite part has masses p̃_i at losses ℓ_i = (k0 + i + c)·h; the true
    masses are p_i = p̃_i · exp(G − λ ℓ_i). Tilting before the transforms
    keeps the floating-point noise small *relative to* the tail that δ reads
    (λ is chosen for the δ or ε asked about). ``tilted_wrap`` bounds the
    tilted mass that may have wrapped around the window (both sides, counted
    twice: missing above and misplaced); ``roundoff`` bounds the Euclidean
    norm of the round-off error in the tilted masses (:func:`_roundoff_l2`).
    """

    h: float
    k0: int
    c: float
    p: np.ndarray
    p_inf: float
    lam: float
    g: float
    tilted_wrap: float
    roundoff: float
    move_mean: float = 0.0  # Σ over steps of the mean move of the lower discretisation
    move_var: float = 0.0  # Σ over steps of its variance
    move_b: float = 0.0  # the largest per-step mean move (Bernstein's one-sided bound)
    #: δ(ε) is read for ε >= read_from only (the window was cut there, see compose) ...
    read_from: float = -np.inf
    #: ... and mass from below the cut, wrapped onto the window, adds at most this to δ.
    alias: float = 0.0
    #: Relative error of e^G from the round-off in forming G (see compose).
    g_rel: float = 0.0

    def losses(self) -> np.ndarray:
        return (self.k0 + np.arange(self.p.size) + self.c) * self.h


def lower_shift(cp: Composed, eta: float) -> float:
    """A shift s >= 0 with P[total move < s] <= η (one-sided Bernstein inequality).

    The lower discretisation moved each step's loss L_i down by d_i >= 0, so
    the true composed loss is S' + D with D = Σ d_i, the d_i independent
    with known means m_i and variances v_i. With X_i = m_i − d_i <= m_i <= b,
    P[D < Σm_i − t] <= exp(−t² / (2(Σv_i + b·t/3))). On the event D >= s,
    (1 − e^{ε−S})₊ >= (1 − e^{ε−s−S'})₊, so for every ε

        δ_true(ε) >= δ_lower(ε − s) − η,

    i.e. the lower bound may be shifted right by s at the price of η in δ.
    """
    if cp.move_mean <= 0 or not (0 < eta < 1):
        return 0.0
    L = float(np.log(1.0 / eta))
    a = cp.move_b * L / 3.0
    t = a + np.sqrt(a * a + 2.0 * cp.move_var * L)
    return float(max(cp.move_mean - t, 0.0))


def _log_mgf(d: Discrete, t: np.ndarray) -> np.ndarray:
    """log E[e^{tL}] over the finite part of a discrete PLD, for each t.

    The losses are a regular grid, so with ℓ = b_j + k·h (blocks j of r
    points, k < r) the sum is Σ_j e^{t b_j} Σ_k p_{jk} e^{tkh}: exponentials
    of the block starts and of r offsets, and one matrix product — not one
    exponential per grid point and t. Each t's sum is centred at the end
    that dominates it (terms <= 1).
    """
    t = np.asarray(t, float)
    flat = np.atleast_1d(t).ravel()
    # Block length r (a power of 2, for the cache): e^{|t|·r·h} <= e^{0.5}.
    tmax = float(np.max(np.abs(flat))) if flat.size else 0.0
    r = 1 << int(np.clip(np.floor(np.log2(0.5 / max(tmax * d.h, 1e-300))), 0, 10))
    blocks = d.mgf_blocks(r)
    if blocks is None:
        return np.full(t.shape, -np.inf)
    grid, base, top, starts, offs = blocks
    out = np.empty(flat.shape)
    with np.errstate(under="ignore", divide="ignore", over="ignore"):
        for positive in (True, False):
            sel = flat > 0 if positive else flat <= 0
            ts = flat[sel]
            if ts.size == 0:
                continue
            ref = top - base if positive else 0.0  # dominant end, relative to base
            inner = grid @ np.exp(np.outer(offs, ts))  # (m, n_t): Σ_k p_jk e^{t k h}
            outer = np.exp(np.outer(starts - ref, ts))  # e^{t (b_j − ref)} <= e^{|t| r h}
            out[sel] = ts * (base + ref) + np.log(np.einsum("jt,jt->t", outer, inner))
    return out.reshape(t.shape)


def _parts_log_mgf(parts: list[tuple[Discrete, int]], t) -> np.ndarray:
    """log E[e^{tS}] of the composition (each part ``times`` times), for each t."""
    return sum(times * _log_mgf(d, np.atleast_1d(np.asarray(t, float))) for d, times in parts)


_TS = np.geomspace(0.1, 60.0, 8)  # tilts tried (and Chernoff exponents for δ queries)


def choose_tilt(parts: list[tuple[Discrete, int]], log_delta: float, guess: float | None = None) -> tuple[float, float]:
    """The exponential tilt λ for answering at level δ, and G(λ) − λ·ε_g.

    Tilting by λ centres the composed loss near G'(λ) (G = log E[e^{λS}])
    and keeps the transforms' round-off small next to the masses there.
    With a ``guess`` ε_g of the answer (a previous upper bound) λ is the
    grid exponent whose centre G'(λ) is nearest above ε_g; without one it
    is the Chernoff exponent with the smallest bound x on ε at δ, and
    ε_g = 0.8·x. Only accuracy depends on this choice: every allowance is
    computed for the λ and window used.
    """
    total = _parts_log_mgf(parts, _TS)
    if guess is None:
        x = (total - log_delta) / _TS
        i = int(np.argmin(x))
        eps_g = 0.8 * max(float(x[i]), 0.0)
    else:
        # Interpolate (in log λ) the exponent whose centre G'(λ) is ε_g; G' increases with λ.
        eps_g = max(float(guess), 0.0)
        centre = np.gradient(total, _TS)
        lam = float(np.exp(np.interp(eps_g, np.maximum.accumulate(centre), np.log(_TS))))
        g = float(_parts_log_mgf(parts, lam)[0])
        return lam, g - lam * eps_g
    return float(_TS[i]), float(total[i] - _TS[i] * eps_g)


def _int_power(z: np.ndarray, t: int) -> np.ndarray:
    """z**t for a whole t >= 1 by repeated squaring (numpy uses exp/log past t = 100, ~8× slower).

    Each complex product errs by at most √5·u relative, so z**t errs by at most (t − 1)·√5·u
    relative — inside the round-off allowance's u·(π t + 1)·|z**t| (see :func:`_roundoff_l2`).
    """
    t = int(t)
    result = None
    base = z.copy()
    while t:
        if t & 1:
            result = base.copy() if result is None else np.multiply(result, base, out=result)
        t >>= 1
        if t:
            np.multiply(base, base, out=base)
    return result


_CHERNOFF_TS = np.geomspace(0.02, 100.0, 10)


def _best_chernoff(f, log_eta: float, k: int) -> np.ndarray:
    """For each of k convex functions f_i with f_i(0) <= 0, min over t > 0 of (f_i(t) − log η)/t:
    Chernoff tail bounds. ``f(ts)`` takes and returns (k, len) arrays (row i: f_i).

    Every t tried gives a valid bound; a geometric grid (ratio 2.6) and a
    finer one around each best point (two vectorised calls of f) find a good one.
    """
    ts = np.tile(_CHERNOFF_TS, (k, 1))
    rows = np.arange(k)
    best = np.full(k, np.inf)
    for _ in range(2):
        with np.errstate(all="ignore"):
            vals = (f(ts) - log_eta) / ts
        vals = np.where(np.isfinite(vals), vals, np.inf)
        i = np.argmin(vals, axis=1)
        best = np.minimum(best, vals[rows, i])
        lo = ts[rows, np.maximum(i - 1, 0)]
        hi = ts[rows, np.minimum(i + 1, ts.shape[1] - 1)]
        ts = np.exp(np.linspace(np.log(lo), np.log(hi), 7, axis=1))[:, 1:-1]
    return best


def compose(
    parts: list[tuple[Discrete, int]],
    lam: float = 0.0,
    eta: float = 1e-18,
    max_size: int = MAX_GRID,
    cut: float | None = None,
    cut_eta: float = 1e-18,
) -> Composed:
    """Compose discrete PLDs (same h), each ``times`` times, by one FFT power of the tilted steps.

    The window [x_lo, x_hi] holds all but ``eta`` of the tilted finite mass
    on each side (Chernoff bounds computed from the discrete steps); mass
    beyond it may wrap around and is accounted for.

    ``cut``: start the window at ``cut`` instead, as long as it stays at
    least log(1/``cut_eta``)/λ wide. Mass below it then wraps around onto
    the top of the window, which can only *raise* δ — by little: P-mass at
    x lands at x + W (W the window's width) where δ weighs it e^{−λW} times
    its own mass, at most e^{−λW} <= ``cut_eta`` in all (``alias``; an upper
    bound may keep it, a lower bound subtracts it). δ is then read only for
    ε >= cut (``read_from``): the mass between ε and the cut is not in the
    window.
    """
    h = parts[0][0].h
    c_total = sum(t * d.c for d, t in parts)
    shift = int(np.floor(c_total))
    c = c_total - shift
    eta_t = min(eta, 1e-6)

    def logm(t):
        return _parts_log_mgf(parts, t)

    # Each step tilted by λ and normalised; G = Σ T_j·log Σ p e^{λℓ} is the very constant divided
    # out, so that true masses are tilted ones times e^{G − λℓ} up to the round-off of the tilt:
    # per entry, relative u·(|log p| + |λℓ| + |lw| + |lw − max| + 2) (the logarithm, product and
    # sum forming lw, the shift, exp, the division), carried as an error vector into the round-off
    # bound; and in G, u·(|max| + |log s| + 2) per step, carried as a relative error of δ (g_rel).
    u = float(np.finfo(float).eps)
    tilted = []
    tilt_err = []
    g_lam = 0.0
    g_rel = 0.0
    for d, t in parts:
        w = d.p
        err = u * np.linalg.norm(w) * 2.0  # untilted: the masses as given (no rounding beyond this)
        if lam > 0:
            with np.errstate(divide="ignore", under="ignore"):
                logp = np.log(d.p)
                lw = logp + lam * d.losses()
            mx = float(np.max(lw))
            with np.errstate(under="ignore", invalid="ignore"):
                e = np.exp(lw - mx)
            total = float(e.sum())
            w = e / total
            lse = mx + float(np.log(total))
            g_lam += t * lse
            g_rel += t * u * (abs(mx) + abs(np.log(total)) + 2.0)
            pos = w > 0
            rel = u * (np.abs(logp[pos]) + np.abs(lam * d.losses()[pos]) + np.abs(lw[pos]) + (mx - lw[pos]) + 2.0)
            err = float(np.linalg.norm(w[pos] * rel))
        tilted.append(w)
        tilt_err.append(err)

    # Window from the tilted measure alone (λ = 0: the untilted one): log E~[e^{tS}] = logm(λ+t) − G.
    # Any tilted mass W~ beyond it (both sides) changes δ(ε) by at most 2·W~·e^{G−λε}
    # (the mass missing above the window plus its wrapped copy), for every ε inside it.
    def both(ts):  # rows: upper tail (λ + t), lower tail (λ − t); one log-MGF call
        return logm(np.stack([lam + ts[0], lam - ts[1]])) - g_lam

    up_t, lo_t = _best_chernoff(both, np.log(eta_t), 2)
    x_hi, x_lo = up_t, -lo_t
    read_from, alias = -np.inf, 0.0
    if cut is not None and lam > 0:
        top_cut = min(float(cut), x_hi + np.log(cut_eta) / lam)  # keeps λ·W >= log(1/cut_eta)
        if top_cut > x_lo + h:
            x_lo = read_from = top_cut
            alias = float(np.exp(-lam * (x_hi - x_lo)))
    k_lo = int(np.floor(x_lo / h)) - 1
    k_hi = max(int(np.ceil(x_hi / h)) + 1, k_lo + 2)
    n = sfft.next_fast_len(k_hi - k_lo + 1, real=True)
    if n > max_size:
        raise MemoryError(f"PLD grid of {n} points exceeds the limit {max_size}")
    spec = None
    p_inf_keep = 1.0
    norms = []  # (times, Euclidean norm of the tilted step vector, of its tilt error)
    for (d, t), w, err in zip(parts, tilted, tilt_err):
        idx = (d.k0 + np.arange(d.p.size)) % n
        norms.append((t, float(np.linalg.norm(w)), err))
        f = _int_power(sfft.rfft(np.bincount(idx, weights=w, minlength=n)), t)
        spec = f if spec is None else spec * f
        p_inf_keep *= (1.0 - d.p_inf) ** t
    out = sfft.irfft(spec, n)
    move_mean = sum(t * d.move_mean for d, t in parts)
    move_var = sum(t * d.move_var for d, t in parts)
    move_b = max(d.move_mean for d, _ in parts)
    roundoff = _roundoff_l2(n, norms, float(np.linalg.norm(out)))
    start = k_lo - shift
    p = np.maximum(np.roll(out, -(start % n)), 0.0)  # out[(start + i) mod n]
    return Composed(
        h,
        start + shift,
        c,
        p,
        float(1.0 - p_inf_keep),
        lam,
        g_lam,
        4.0 * eta_t,
        roundoff,
        move_mean,
        move_var,
        move_b,
        read_from,
        alias,
        float(np.expm1(g_rel)),
    )


#: Error of a length-n FFT relative to its output, per log2(n) (Euclidean norms): radix-2 analysis
#: gives about 6.7·u (Higham, Accuracy and Stability of Numerical Algorithms, Thm 24.2); the
#: mixed radices of pocketfft get a margin. The tests measure errors against extended precision.
FFT_ERROR_PER_LEVEL = 10.0


def _roundoff_l2(n: int, norms: list[tuple[int, float, float]], out_norm: float) -> float:
    """A bound on the Euclidean norm of the round-off error of the composed tilted masses.

    Each tilted step x_j (||x_j||_1 <= 1, so every Fourier coefficient has modulus <= 1), itself off
    by a vector of Euclidean norm e_j from the tilt (:func:`compose`), is transformed with error
    at most κ·√n·||x_j||_2 (κ = FFT_ERROR_PER_LEVEL·u·log2 n, u = 2^-52); raising to the power
    T_j multiplies a coefficient's error by at most T_j·(1 + error)^{T_j−1}; the power itself errs
    by at most u·(1/e + (π T_j + 1)|coefficient|) (exp/log, or (T_j − 1)·√5·u relative by
    repeated squaring, :func:`_int_power`); products of parts add u each; the
    inverse transform (1/√n in norm) adds κ·||y||_2. In all,

        ||Δy||_2 <= g·Σ T_j (κ ||x_j||_2 + e_j) + (κ + u·(π ΣT_j + 2·parts + 1))·||y||_2 + u·parts/e,

    g = exp(max_j T_j·√n·(κ||x_j||_2 + e_j)) (about 1). Clipping negative outputs to 0 only
    shrinks errors. δ reads the masses with weights w_i <= e^{G−λℓ_i}, so its error is at most
    ||w||_2 times this (Cauchy–Schwarz): see :func:`_delta_parts`.
    """
    u = float(np.finfo(float).eps)
    kappa = FFT_ERROR_PER_LEVEL * u * np.log2(max(n, 2))
    s = sum(t * (kappa * x + e) for t, x, e in norms)
    t_all = sum(t for t, _, _ in norms)
    grow = float(np.exp(min(max(t * np.sqrt(n) * (kappa * x + e) for t, x, e in norms), 700.0)))
    k = len(norms)
    return float(grow * s + (kappa + u * (np.pi * t_all + 2 * k + 1)) * out_norm * (1 + 1e-6) + u * k / np.e)


# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------


def _geometric(rate: float, x0: float, h: float, m: int) -> np.ndarray:
    """exp(rate·(x0 + i·h)) for i < m, as products of block and offset exponentials (2.5 u relative)."""
    r = 512
    k = -(-m // r)
    with np.errstate(under="ignore", over="ignore"):
        out = np.multiply.outer(np.exp(rate * (x0 + np.arange(k) * (r * h))), np.exp(rate * h * np.arange(r)))
    return out.ravel()[:m]


class _Tails:
    """What δ-reads of a composed PLD need above ε = f (f = ``floor``), on demand.

    For the losses ℓ_i > f (a suffix of the grid, indexed i = 0..m−1 from the
    first of them): suffix sums a_i = Σ_{j>=i} p̃_j e^{−λ(ℓ_j−f)} and
    b_i = Σ_{j>=i} p̃_j e^{−(λ+1)(ℓ_j−f)} (a_m = b_m = 0), bounds
    r_i = e^{−λ(ℓ_i−f)}/√(1 − e^{−2λh}) on the Euclidean norms of the suffixes
    of e^{−λ(ℓ−f)} (the grid is regular), and ``rel``, a bound on the relative
    round-off of a and b as δ reads them: the weights e^{−λ(ℓ−f)}, e^{−(ℓ−f)}
    err by at most u·((λ + 1)(ℓ − f) + 3) (their arguments and
    :func:`_geometric`), e^{G−λf} by u·(|G − λf| + 1), G by ``g_rel``, and the
    sums are formed in blocks of B — the sum of each block, then running sums
    over the blocks above and within the block — so each is a sum of at most
    B + k + 1 rounded terms (k blocks): (B + k + 1)·u, not m·u. Only the
    blocks a read falls in are summed within (a search reads a few).
    """

    B = 512

    def __init__(self, cp: Composed, floor: float):
        self.cp, self.floor = cp, floor
        # Losses increase, so those > f are a suffix: its first index, from the grid (then checked).
        first = int(np.clip(np.floor(floor / cp.h - cp.k0 - cp.c) - 1, 0, cp.p.size)) if np.isfinite(floor) else 0
        while first < cp.p.size and (cp.k0 + first + cp.c) * cp.h <= floor:
            first += 1
        self.first = first
        m = self.m = cp.p.size - first
        x0 = (cp.k0 + first + cp.c) * cp.h - floor if m else 0.0
        k = self.k = max(-(-m // self.B), 1)
        self.e1 = _geometric(-cp.lam, x0, cp.h, m)
        w = np.zeros((2, k * self.B))
        np.multiply(cp.p[first:], self.e1, out=w[0, :m])
        np.multiply(w[0, :m], _geometric(-1.0, x0, cp.h, m), out=w[1, :m])
        self.w = w.reshape(2, k, self.B)
        self.sums = self.w.sum(axis=2)  # (2, k)
        self.above = np.zeros((2, k))  # Σ over the blocks after each block
        self.above[:, :-1] = np.cumsum(self.sums[:, :0:-1], axis=1)[:, ::-1]
        u = float(np.finfo(float).eps)
        span = (cp.k0 + cp.p.size - 1 + cp.c) * cp.h - floor if m else 0.0
        self.rel = (self.B + k + 2) * u + u * ((cp.lam + 1.0) * span + abs(cp.g - cp.lam * floor) + 8.0) + cp.g_rel

    def loss(self, i):
        """ℓ_i (suffix index i < m)."""
        return (self.cp.k0 + self.first + np.asarray(i) + self.cp.c) * self.cp.h

    def index_after(self, eps):
        """For each ε >= f: the suffix index of the first loss > ε (m if none)."""
        cp = self.cp
        eps = np.asarray(eps, float)
        i = np.clip(np.floor(eps / cp.h - cp.k0 - cp.c - self.first), 0, self.m).astype(np.int64)
        top = max(self.m - 1, 0)
        while True:  # the estimate is within a step or two: move it until exact
            up = (i < self.m) & (self.loss(np.minimum(i, top)) <= eps)
            down = (i > 0) & (self.loss(np.maximum(i - 1, 0)) > eps)
            if not (np.any(up) or np.any(down)):
                return i
            i = i + up - down

    def ab(self, i):
        """(a_i, b_i) for suffix indices i in [0, m]."""
        i = np.asarray(i, dtype=np.int64)
        flat = i.ravel()
        a = np.zeros((2, flat.size))
        start = (flat < self.m) & (flat % self.B == 0)  # a block's start: its sum and those above
        a[:, start] = self.sums[:, flat[start] // self.B] + self.above[:, flat[start] // self.B]
        inside = (flat < self.m) & ~start
        blk, off = flat[inside] // self.B, flat[inside] % self.B
        ub, pos = np.unique(blk, return_inverse=True)
        within = np.cumsum(self.w[:, ub, ::-1], axis=2)[:, :, ::-1]  # (2, blocks read, B)
        a[:, inside] = within[:, pos, off] + self.above[:, blk]
        return a[0].reshape(i.shape), a[1].reshape(i.shape)

    def r(self, i):
        i = np.asarray(i, dtype=np.int64)
        out = np.zeros(i.shape)
        inside = i < self.m
        if self.cp.lam > 0:
            with np.errstate(divide="ignore"):
                out[inside] = self.e1[i[inside]] / np.sqrt(-np.expm1(-2.0 * self.cp.lam * self.cp.h))
        else:
            out[inside] = np.sqrt(self.m - i[inside])
        return out


def _delta_parts(cp: Composed, i: np.ndarray, eps: np.ndarray, tails: _Tails):
    """(δ without allowances, allowance) for ε in the segment starting at suffix index i.

    δ(ε) = e^G Σ_{ℓ>ε} p̃ e^{−λℓ}(1 − e^{ε−ℓ}); the allowance bounds the
    round-off (the error vector's norm times that of the weights e^{G−λℓ}
    over ℓ > ε), the tilted mass that may have wrapped (2·W~·e^{G−λε}
    for ε up to the top of the window), and the round-off of the sums and
    weights δ is read with (relative; |a − e^{ε−f}b| + their errors <= 2a·rel,
    as e^{ε−f}b <= a, whatever ε in the segment).
    """
    f = tails.floor
    a, b = tails.ab(i)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        scale = np.exp(cp.g - cp.lam * f)
        core = scale * np.maximum(a - np.exp(eps - f) * b, 0.0)
        top = (cp.k0 + cp.p.size - 1 + cp.c) * cp.h
        reach = np.minimum(eps, top)
        allow = (
            scale * (cp.roundoff * tails.r(i) + 2.0 * tails.rel * a) + np.exp(cp.g - cp.lam * reach) * cp.tilted_wrap
        )
        allow = allow + cp.alias
    return np.nan_to_num(core, nan=np.inf, posinf=np.inf), np.nan_to_num(allow, nan=np.inf, posinf=np.inf)


def delta_at(cp: Composed, eps: np.ndarray, sign: float, floor: float = 0.0) -> np.ndarray:
    """δ(ε) for ε >= ``floor`` (smaller ε are raised to it); ``sign`` +1 adds the allowances
    (upper bound), −1 subtracts them (lower bound)."""
    if cp.read_from > floor:
        raise ValueError("δ below a cut window's start is not in the window")
    tails = _Tails(cp, floor)
    eps = np.maximum(np.asarray(eps, float), floor)
    i = tails.index_after(eps)
    core, allow = _delta_parts(cp, i, eps, tails)
    return np.clip(core + cp.p_inf + sign * allow, 0.0, 1.0)


def epsilon_at(cp: Composed, delta: np.ndarray, sign: float, floor: float = 0.0) -> np.ndarray:
    """Smallest ε >= ``floor`` at which δ(ε) (with allowances per ``sign``) is at most ``delta``.

    For the lower bound (sign −1) the answer is the end of the last ε >= floor
    where the lower δ-curve is above ``delta`` (``floor`` when there is none —
    or −∞, no claim, when the window was cut above ``floor``: it knows
    nothing below the cut).
    """
    no_claim = floor
    if cp.read_from > floor:
        floor, no_claim = cp.read_from, -np.inf
    tails = _Tails(cp, floor)
    delta = np.atleast_1d(np.asarray(delta, float))
    # δ just right of each atom (ε = ℓ_j from the right counts atoms > ℓ_j), and at ε = floor:
    # point j is ε = floor (j = 0) or ℓ_{j−1}, and its suffix index is j.
    n_pts = tails.m + 1

    def pts(j):
        j = np.asarray(j)
        return np.where(j == 0, floor, tails.loss(np.maximum(j - 1, 0)))

    def curve(j, allow_sign):
        core, allow = _delta_parts(cp, j, pts(j), tails)
        return np.clip(core + cp.p_inf + (allow_sign * allow if allow_sign else 0.0), 0.0, None)

    def first_at_most(level, allow_sign):
        """First point where curve(·, allow_sign) <= level (n_pts if none), for a curve that is
        non-increasing: a coarse pass at block starts, then the stretch that holds the crossing.
        (Only tightness depends on monotonicity: every point the upper search returns was
        checked, and the lower search below checks the points it returns.)"""
        step = tails.B * max(1, -(-n_pts // (256 * tails.B)))
        coarse = np.arange(0, n_pts, step)
        hit = np.flatnonzero(curve(coarse, allow_sign) <= level)
        if hit.size and hit[0] == 0:
            return 0
        lo_j = coarse[hit[0] - 1] if hit.size else coarse[-1]
        hi_j = coarse[hit[0]] if hit.size else n_pts
        block = np.arange(lo_j, hi_j)
        hit_b = np.flatnonzero(curve(block, allow_sign) <= level)
        return int(block[hit_b[0]]) if hit_b.size else int(hi_j)

    out = np.empty(delta.shape)
    for k, dl in enumerate(delta):
        if sign > 0:
            # Upper bound: the first ε where the upper δ-curve is at most δ (any such ε is safe).
            j = first_at_most(dl, 1.0)
            if j >= n_pts:
                out[k] = np.inf
                continue
        else:
            # Lower bound: every ε where the lower δ-curve is above δ is below the true ε, so the
            # answer is just after the *last* such point (the curve need not be monotone). The
            # allowance only lowers the curve, so such points lie before the first point where δ
            # without allowances is at most δ; search backwards from there, block by block.
            end = first_at_most(dl, 0.0)
            last = -1
            while end > 0 and last < 0:
                block = np.arange(max(end - 256, 0), end)
                over = np.flatnonzero(curve(block, -1.0) > dl)
                last = int(block[over[-1]]) if over.size else -1
                end = int(block[0])
            if last < 0:
                out[k] = no_claim
                continue
            j = last + 1
            if j >= n_pts:
                out[k] = float(pts(n_pts - 1))
                continue
        if j == 0:
            out[k] = floor
            continue
        lo_e, hi_e = float(pts(j - 1)), float(pts(j))
        # Inside the segment δ = e^G (a − e^ε b) + p_inf + sign·allow(lo_e): solve for ε (allowance frozen at
        # the left end, which only makes the upper answer larger and the lower one smaller).
        i = j - 1
        _, al = _delta_parts(cp, np.array([i]), np.array([lo_e]), tails)
        with np.errstate(over="ignore"):
            target = (dl - cp.p_inf - sign * al[0]) * np.exp(-(cp.g - cp.lam * floor))
        a, b = (float(v[0]) for v in tails.ab(np.array([i])))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            e = floor + np.log((a - target) / b) if b > 0 and a > target else (hi_e if sign > 0 else lo_e)
        e = float(np.clip(e, lo_e, hi_e)) if np.isfinite(e) else (hi_e if sign > 0 else lo_e)
        out[k] = e
    return out


# ---------------------------------------------------------------------------
# Intervals
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    lower: np.ndarray
    upper: np.ndarray
    h: float


def _tail_for(mechs, delta_min: float) -> float:
    """Per-step P-mass left outside the grid: at most 1e-9·δ in total over all steps."""
    total = sum(t for _, t in mechs)
    return float(min(max(1e-9 * delta_min / max(total, 1), 1e-300), 1e-12))


def _discretised(
    mechs, h: float, kind: str, tail: float = 1e-30, dirs=None
) -> list[tuple[int, list[tuple[Discrete, int]]]]:
    """Per direction k (all, or those in ``dirs``), the discretised parts: direction k of every
    mechanism (symmetric ones serve every direction)."""
    n_dir = max(len(m) for m, _ in mechs)
    times: dict = {}
    for m, t in mechs:
        for d in m:
            times[id(d)] = times.get(id(d), 0) + t
    cache: dict = {}
    out = []
    for k in range(n_dir) if dirs is None else dirs:
        parts = []
        for m, t in mechs:
            d = m[min(k, len(m) - 1)]
            if id(d) not in cache:
                cache[id(d)] = (
                    discretise_upper(d, h, tail)
                    if kind == "upper"
                    else discretise_lower(d, h, tail, times=times[id(d)])
                )
            parts.append((cache[id(d)], t))
        out.append((k, parts))
    return out


def _eps_dirs(mechs, delta, h: float, kind: str, guess=None, dirs=None, cut=None) -> np.ndarray:
    """ε(δ) by one discretisation kind, per direction (rows; NaN for directions not in ``dirs``),
    each composed with the tilt for its δ. The answer for the mechanism is the maximum over
    directions. ``guess`` (one per δ, e.g. a previous upper bound) centres the tilt.

    ``cut`` (one per δ): a certified lower bound on the mechanism's ε. The windows start there
    (:func:`compose`), so a direction's upper bound is never reported below it — which cannot
    change the maximum over directions, as the mechanism's ε is at least ``cut`` — and a lower
    bound that finds nothing above it makes no claim (0).
    """
    delta = np.atleast_1d(np.asarray(delta, float))
    sign = 1.0 if kind == "upper" else -1.0
    n_dir = max(len(m) for m, _ in mechs)
    out = np.full((n_dir, delta.size), np.nan)
    for k, parts in _discretised(mechs, h, kind, _tail_for(mechs, float(delta.min())), dirs):
        best = np.zeros(delta.shape)
        gs = [None] * delta.size if guess is None else np.broadcast_to(np.asarray(guess, float), delta.shape)
        chosen = [choose_tilt(parts, float(np.log(dl)), g_) for dl, g_ in zip(delta, gs)]
        tilts = np.array([lam for lam, _ in chosen])
        for lam in np.unique(tilts):
            sel = tilts == lam
            dl = delta[sel]
            # Wrap-around allowances of about 1e-10·δ: untilted η = 1e-10·δ; tilted η small enough at
            # ε down to the tilt's guess (allowance e^{G−λε}·4η; see choose_tilt).
            level = max(v for (l_, v) in chosen if l_ == lam)
            eta_t = float(np.clip(1e-10 * dl.min() * np.exp(-level), 1e-300, 1e-10))
            c_ = None if cut is None else float(np.min(np.broadcast_to(cut, delta.shape)[sel])) - 2 * h
            # A cut window adds at most e^{−λW} <= 1e-9·δ to δ (see compose).
            cp = compose(parts, lam=float(lam), eta=eta_t, cut=c_, cut_eta=1e-9 * float(dl.min()))
            if sign > 0:
                eps = epsilon_at(cp, dl, sign)
            else:
                # Give back the concentrated part of the lower discretisation's moves (lower_shift),
                # at the price η = LOWER_ETA·δ; only where the unshifted answer is positive.
                # δ_true(ε) >= δ_lower(ε − s) − η, so ε_true >= s + (the lower answer at δ + η for ε' >= −s).
                eta = LOWER_ETA * dl
                s_ = np.array([lower_shift(cp, float(e)) for e in eta])
                eps = np.zeros(dl.shape)
                for v in np.unique(s_):
                    sel_v = s_ == v
                    # Without a give-back (v = 0) the plain lower answer; with one, the shifted answer
                    # (the plain one could only win by about η/|δ'(ε)|, far below the interval width).
                    eps[sel_v] = (
                        epsilon_at(cp, dl[sel_v] + eta[sel_v], sign, floor=-v) + v
                        if v > 0
                        else epsilon_at(cp, dl[sel_v], sign)
                    )
            best[sel] = np.maximum(best[sel], eps)
        out[k] = best
    return out


def _eps_one(mechs, delta, h: float, kind: str, guess=None) -> np.ndarray:
    """ε(δ) by one discretisation kind: the maximum over all directions."""
    return np.nanmax(_eps_dirs(mechs, delta, h, kind, guess), axis=0)


def _upper_dirs(
    mechs, delta, h: float, guess=None, h_other: float | None = None, cut=None
) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds per direction and the spacing each was computed at.

    Direction 0 (remove, for subsampled mechanisms) usually dominates, so it
    is computed at ``h`` and the others at ``h_other`` (default 4·h); an
    upper bound at any spacing is sound, so a coarse one that stays below
    direction 0 settles its direction. Those that do not are recomputed at
    ``h``. ``cut``: see :func:`_eps_dirs`.
    """
    delta = np.atleast_1d(np.asarray(delta, float))
    n_dir = max(len(m) for m, _ in mechs)
    vals = _eps_dirs(mechs, delta, h, "upper", guess, dirs=[0], cut=cut)
    hs = np.full(n_dir, float(h))
    if n_dir > 1:
        others = list(range(1, n_dir))
        h_other = h_other or 4 * h
        coarse_vals = _eps_dirs(mechs, delta, h_other, "upper", guess, dirs=others, cut=cut)
        vals[others] = coarse_vals[others]
        hs[others] = h_other
        redo = [k for k in others if np.any(vals[k] >= vals[0])]
        if redo:
            vals[redo] = _eps_dirs(mechs, delta, h, "upper", guess, dirs=redo, cut=cut)[redo]
            hs[redo] = h
    return vals, hs


def _delta_one(mechs, eps, h: float, kind: str) -> np.ndarray:
    eps = np.atleast_1d(np.asarray(eps, float))
    sign = 1.0 if kind == "upper" else -1.0
    best = np.zeros(eps.shape)
    for _, parts in _discretised(mechs, h, kind, 1e-18 / max(sum(t for _, t in mechs), 1)):
        total = _parts_log_mgf(parts, _TS)
        tilts = np.array([_TS[int(np.argmin(total - _TS * e))] for e in eps])
        for lam in np.unique(tilts):
            sel = tilts == lam
            cp = compose(parts, lam=float(lam))
            dl = delta_at(cp, eps[sel], sign)
            if sign < 0:
                # δ_true(ε) >= δ_lower(ε − s) − η (lower_shift), with η a small fixed level.
                eta = 1e-15
                v = lower_shift(cp, eta)
                dl = np.maximum(dl, delta_at(cp, eps[sel] - v, sign, floor=-v) - eta)
            best[sel] = np.maximum(best[sel], dl)
    return best


def delta_interval(mechs, eps, h: float):
    """[lower, upper] on δ at each ε."""
    up = _delta_one(mechs, eps, h, "upper")
    lo = _delta_one(mechs, eps, h, "lower")
    return Interval(np.minimum(lo, up), up, h)


# ---------------------------------------------------------------------------
# Accuracy-controlled answers
# ---------------------------------------------------------------------------

#: Smallest δ the PLD engine answers for: below it, floating-point round-off in
#: the FFT (about 1e-16 per grid point) is no longer negligible next to δ.
MIN_DELTA = 1e-12

#: The upper end is computed on a grid no coarser than this (1e-3/16). Both ends are connect-the-dots
#: bounds whose error is second order in h, so on this grid the upper end is about 0.4× as far
#: above the true ε as a bound on a 1e-4 grid (the spacing peers such as dp-accounting use): an
#: upper end no looser than theirs, whatever interval width is asked for.
UPPER_H = 1e-3 / 16

#: Default interval width: at most 0.1 % of ε, or 1e-3 absolute for small ε.
REL_WIDTH = 1e-3
ABS_WIDTH = 1e-3


@dataclass(frozen=True)
class Answer:
    lower: np.ndarray
    upper: np.ndarray
    h_upper: float
    h_lower: float
    met: np.ndarray  # whether the width target was met


def _target(upper: np.ndarray, rel: float, abs_: float) -> np.ndarray:
    return np.maximum(rel * upper, abs_)


def initial_h(mechs, clamp: bool = False) -> float:
    """A starting grid spacing: 1/16 of the per-step loss spread of the dominant part, at most 1e-3.

    A grid coarser than the per-step distribution makes both bounds loose
    (the lower one especially), so narrow steps (small q or large σ) start
    finer. Powers of two below 1e-3 keep answers reproducible. Raises
    ValueError past :data:`MAX_HALVINGS` halvings (``clamp``: returns the
    finest spacing instead — bounds stay sound, the interval may be wide).
    """
    best, spread = -1.0, 1.0
    for m, t in mechs:
        d = discretise_upper(m[0], 1e-3, 1e-12)
        ell, p = d.losses(), d.p
        mass = p.sum()
        if mass <= 0:
            continue
        mean = float(np.dot(ell, p) / mass)
        var = float(np.dot((ell - mean) ** 2, p) / mass)
        if t * var > best:
            best, spread = t * var, np.sqrt(var)
    k = int(max(np.ceil(np.log2(1e-3 * 16 / max(spread, 1e-300))), 0))
    if k > MAX_HALVINGS and clamp:
        return 1e-3 / 2**MAX_HALVINGS  # sound, but the interval may stay wider than asked
    if k > MAX_HALVINGS:
        raise ValueError(f"the per-step privacy loss spread ({spread:.3g}) is too narrow for the PLD grid")
    return 1e-3 / 2**k


def epsilon(
    mechs,
    delta,
    *,
    rel: float = REL_WIDTH,
    abs_: float = ABS_WIDTH,
    h0: float | None = None,
    coarse_ok: bool = False,
) -> Answer:
    """Certified [lower, upper] on ε(δ), refining the grid until the width target is met.

    ``mechs`` is a list of (directions, times). Direction 0's lower bound
    comes first, on the starting grid h0 (:func:`initial_h`); the upper
    bounds follow on min(h0, :data:`UPPER_H`) in windows cut at it. Then
    the two ends are refined separately: each round halves the spacing of
    the side whose last halving moved it more (expected, for an upper end
    not refined yet), for the direction(s) whose upper bound is the
    largest; the others keep the coarser (still sound) bounds they have. A bound whose grid would exceed
    :data:`MAX_GRID` points stops refining and the interval is returned as
    it is, with ``met`` false. ``coarse_ok`` answers steps too narrow for the
    finest starting grid on that grid (sound, possibly wide) instead of
    raising ValueError.
    """
    delta = np.atleast_1d(np.asarray(delta, float))
    if np.any(delta < MIN_DELTA):
        raise ValueError(f"the PLD engine answers for δ >= {MIN_DELTA:g}")
    h0 = h0 or initial_h(mechs, clamp=coarse_ok)
    # Per direction: upper bounds and their spacings (the mechanism's bound is the maximum), and
    # lower bounds for the directions that dominate (any one direction's lower bound is sound).
    # Direction 0's lower bound comes first: the upper ends' windows start at it (the cut of
    # compose), which saves the part of the grid below the answer.
    h_lo = h0
    lo_dir = _eps_dirs(mechs, delta, h_lo, "lower", dirs=[0])

    def cut():
        return np.nanmax(lo_dir, axis=0)

    h_up = min(h0, UPPER_H)
    try:
        up_dir, h_dir = _upper_dirs(mechs, delta, h_up, h_other=4 * h0, cut=cut())
    except MemoryError:
        h_up = h0  # the finer grid does not fit: the upper end starts where the lower one does
        up_dir, h_dir = _upper_dirs(mechs, delta, h_up, cut=cut())

    def dominant() -> list[int]:
        return sorted(set(np.argmax(up_dir, axis=0).tolist()))

    more = [k for k in dominant() if k != 0]
    if more:
        lo_dir[more] = _eps_dirs(mechs, delta, h_lo, "lower", dirs=more)[more]
    # A side not yet refined goes first — except an upper end that started on the finer grid: its
    # next halving is expected to move it by about 3/4 of its error there, which is at most
    # (h_up/h0)² of the first gap if connect-the-dots error (second order) made all of it.
    gap0 = float(np.max(up_dir.max(axis=0) - np.nanmax(lo_dir, axis=0)))
    moved = {"upper": np.inf if h_up >= h0 else 0.75 * (h_up / h0) ** 2 * gap0, "lower": np.inf}
    stuck: set = set()
    for _ in range(24):
        up, lo = up_dir.max(axis=0), np.nanmax(lo_dir, axis=0)
        if np.all(up - lo <= _target(up, rel, abs_)):
            break
        sides = [k for k in ("lower", "upper") if k not in stuck]
        if not sides:
            break
        kind = max(sides, key=lambda k: moved[k])
        # A first interval that is far too wide usually means the Chernoff tilt sits far from the
        # answer (few steps): centre the tilt at the current upper bound instead.
        guess = up if np.any(up - lo > 0.25 * up) else None
        try:
            if kind == "upper":
                for k in dominant():
                    new = _eps_dirs(mechs, delta, h_dir[k] / 2, "upper", guess, dirs=[k], cut=cut())[k]
                    h_dir[k] /= 2
                    up_dir[k] = np.minimum(up_dir[k], new)
                moved[kind] = float(np.max(up - up_dir.max(axis=0)))
            else:
                dirs = dominant()
                # The window starts at the current lower bound: the finer one is sought above it (where
                # it finds nothing it makes no claim, and the current bound stays).
                new = _eps_dirs(mechs, delta, h_lo / 2, "lower", guess, dirs=dirs, cut=cut())
                h_lo /= 2
                lo_dir[dirs] = np.fmax(lo_dir[dirs], new[dirs])
                moved[kind] = float(np.max(np.nanmax(lo_dir, axis=0) - lo))
        except MemoryError:
            stuck.add(kind)
    up = up_dir.max(axis=0)
    lo = np.minimum(np.nanmax(lo_dir, axis=0), up)
    h_up = float(min(h_dir[k] for k in dominant()))
    return Answer(lo, up, h_up, h_lo, (up - lo) <= _target(up, rel, abs_) * (1 + 1e-9))
