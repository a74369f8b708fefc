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
* **lower** — the bins themselves are a post-processing of the output, so
  the binned PLD (one atom per bin at log(P_j/Q_j)) is *dominated* by the
  true one. Its atoms are moved down onto a grid shifted by c·h (the c with
  the least expected shift); moving losses down only lowers δ. A certified
  lower bound. Mass below the grid is dropped (moved to −∞).

T-fold self-composition raises the discrete Fourier transform to the T-th
power on a window sized by Chernoff bounds computed from the discrete step
itself; mass that may have wrapped around the window is bounded the same
way and, with an allowance of 4·u·(n + T) for floating-point round-off in
the transforms (u the machine epsilon, n the grid size), added to the
upper δ and subtracted from the lower one. The round-off allowance is an
engineering margin well above the errors we measure, not a proof; it is
why the engine only answers for δ >= 1e-12.

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
"""

from __future__ import annotations

from dataclasses import dataclass
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
    "Composed",
    "compose",
    "epsilon_interval",
    "delta_interval",
]

#: Largest grid (points) for one step or one composition; beyond it the engine declines (MemoryError).
MAX_GRID = 1 << 22


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
        fq = _phi(a)
        fp = (1 - q) * _phi(a) + q * _phi(b)
        sq = _phi(-a)
        sp = (1 - q) * _phi(-a) + q * _phi(-b)
        return fp, fq, sp, sq

    def add(ell):
        # L(x) = −log(1 − q + q e^{(2x−1)/(2σ²)}), decreasing: L <= ℓ  ⇔  x >= x(−ℓ)
        ell = np.asarray(ell, float)
        x = np.where(-ell > log1mq, x_of(np.maximum(-ell, log1mq)), -np.inf)
        a, b = x / sigma, (x - 1) / sigma
        fp = _phi(-a)
        fq = (1 - q) * _phi(-a) + q * _phi(-b)
        sp = _phi(a)
        sq = (1 - q) * _phi(a) + q * _phi(b)
        return fp, fq, sp, sq

    # Median of L under P (roughly): L at x = q (the P-mean of x).
    with np.errstate(all="ignore"):
        med_r = float(np.log1p(q * np.expm1((2 * q - 1) / (2 * s2))))
    return [
        Direction(lo=float(log1mq), hi=np.inf, cdf=remove, median=med_r),
        Direction(lo=-np.inf, hi=float(-log1mq), cdf=add, median=-med_r),
    ]


# ---------------------------------------------------------------------------
# Discretisation
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Discrete:
    """Masses ``p`` at losses (k0 + i + c)·h, i = 0..len(p)−1, plus P[L=+∞]."""

    h: float
    k0: int
    c: float
    p: np.ndarray
    p_inf: float

    def losses(self) -> np.ndarray:
        return (self.k0 + np.arange(self.p.size) + self.c) * self.h


def _range(d: Direction, h: float, tail: float) -> tuple[int, int]:
    """Grid indices [j0, j1] covering all but ``tail`` P-mass on each side."""
    if d.atoms is not None:
        ell = d.atoms[0]
        return int(np.floor(ell.min() / h)) - 1, int(np.ceil(ell.max() / h)) + 1
    lo = d.lo if np.isfinite(d.lo) else None
    hi = d.hi if np.isfinite(d.hi) else None

    # Expand from the median until the tails are below ``tail``.
    def p_below(x):
        return float(d.cdf(np.array([x]))[0][0])

    def p_above(x):
        return float(d.cdf(np.array([x]))[2][0])

    if lo is None:
        step = 1.0
        lo = d.median - step
        while p_below(lo) > tail:
            step *= 2
            lo = d.median - step
    if hi is None:
        step = 1.0
        hi = d.median + step
        while p_above(hi) > tail:
            step *= 2
            hi = d.median + step
    return int(np.floor(lo / h)) - 1, int(np.ceil(hi / h)) + 1


def _bins(d: Direction, h: float, tail: float):
    """Exact (P_j, Q_j) of bins (jh, (j+1)h] for j in [j0, j1), and the masses outside."""
    j0, j1 = _range(d, h, tail)
    if j1 - j0 > MAX_GRID:
        raise MemoryError(f"a step's loss range needs {j1 - j0} grid points (limit {MAX_GRID})")
    edges = np.arange(j0, j1 + 1) * h
    if d.atoms is not None:
        ell, p, q = d.atoms
        idx = np.ceil(ell / h - 1e-12).astype(np.int64) - 1 - j0  # bin (jh, (j+1)h] containing ℓ
        P = np.bincount(idx, weights=p, minlength=j1 - j0)[: j1 - j0]
        Q = np.bincount(idx, weights=q, minlength=j1 - j0)[: j1 - j0]
        return j0, P, Q, (0.0, 0.0), (0.0, 0.0)
    fp, fq, sp, sq = d.cdf(edges)
    upper = edges[:-1] >= d.median
    P = np.where(upper, sp[:-1] - sp[1:], fp[1:] - fp[:-1])
    Q = np.where(upper, sq[:-1] - sq[1:], fq[1:] - fq[:-1])
    P, Q = np.maximum(P, 0.0), np.maximum(Q, 0.0)
    below = (float(fp[0]), float(fq[0]))
    above = (float(sp[-1]), float(sq[-1]))
    return j0, P, Q, below, above


def discretise_upper(d: Direction, h: float, tail: float = 1e-30) -> Discrete:
    """A dominating discrete PLD on the grid jh (connect the dots)."""
    j0, P, Q, below, above = _bins(d, h, tail)
    e_lo = (j0 + np.arange(P.size)) * h
    with np.errstate(all="ignore"):
        qe = np.where(Q > 0, np.exp(np.log(np.where(Q > 0, Q, 1.0)) + e_lo), 0.0)  # Q_j e^{e_j}
        v = (P - qe) / (-np.expm1(-h))  # P-mass sent to the upper end point
    v = np.clip(np.nan_to_num(v, nan=0.0, posinf=0.0), 0.0, P)
    u = P - v
    w = np.zeros(P.size + 1)
    w[:-1] += u
    w[1:] += v
    w[0] += below[0]  # losses below the grid: rounded up to its first point
    return Discrete(h, j0, 0.0, w, float(d.p_inf + above[0]))


def discretise_lower(d: Direction, h: float, tail: float = 1e-30) -> Discrete:
    """A dominated discrete PLD on the grid (j + c)h (binning, then rounding down).

    The bins (jh, (j+1)h] are a post-processing of the output, so the binned
    PLD — one atom per bin at log(P_j/Q_j) — is dominated by the true one.
    Each atom is then moved down to the nearest point of a grid shifted by
    c·h; the shift c is the one with the least expected move (it is one of
    the atoms' own offsets). Moving losses down only lowers δ. When the
    loss distribution is smooth at the scale of h the atoms sit close to a
    common offset and the bias is second order in h.
    """
    j0, P, Q, below, above = _bins(d, h, tail)
    e_lo = (j0 + np.arange(P.size)) * h
    ok = (P > 0) & (Q > 0)
    with np.errstate(all="ignore"):
        ell = np.where(ok, np.log(np.where(ok, P, 1)) - np.log(np.where(ok, Q, 1)), e_lo)
    off = np.where(ok, np.clip((ell - e_lo) / h, 0.0, 1.0), 0.0)  # Q underflow: the bottom of the bin
    # Expected move Σ P_j (o_j − c + [o_j < c]) is piecewise linear in c and jumps
    # just after each o_j, so its minimum is at one of the offsets.
    order = np.argsort(off)
    o_sorted, p_sorted = off[order], P[order]
    below_mass = np.concatenate([[0.0], np.cumsum(p_sorted)[:-1]])
    cost = -o_sorted * p_sorted.sum() + below_mass
    c = float(o_sorted[int(np.argmin(cost))]) if off.size else 0.0
    c = min(max(c, 0.0), 1.0 - 1e-12)
    k = np.arange(P.size) - (off < c)  # index of the grid point (k + c)h below each atom
    w = np.bincount(k + 1, weights=P, minlength=P.size + 1)  # shifted by one so that k = −1 fits
    w[-1] += above[0]  # binned mass above the grid (loss >= top edge) → the top grid point
    # Mass below the grid is dropped (moved to −∞).
    return Discrete(h, j0 - 1, c, w, float(d.p_inf))


# ---------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Composed:
    """A composed discrete PLD, stored exponentially tilted.

    The finite part has masses p̃_i at losses ℓ_i = (k0 + i + c)·h; the true
    masses are p_i = p̃_i · exp(G − λ ℓ_i). Tilting before the transforms
    keeps the floating-point noise small *relative to* the tail that δ reads
    (λ is chosen for the δ or ε asked about). ``wrap`` bounds the untilted
    mass that may have wrapped around the window; ``tilted_wrap`` the tilted
    mass that may have; ``roundoff`` bounds the error of each tilted mass.
    """

    h: float
    k0: int
    c: float
    p: np.ndarray
    p_inf: float
    lam: float
    g: float
    wrap: float
    tilted_wrap: float
    roundoff: float

    def losses(self) -> np.ndarray:
        return (self.k0 + np.arange(self.p.size) + self.c) * self.h


def _log_mgf(d: Discrete, t: np.ndarray) -> np.ndarray:
    """log E[e^{tL}] over the finite part of a discrete PLD, for each t."""
    pos = d.p > 0
    ell = d.losses()[pos]
    p = d.p[pos]
    out = np.empty(np.shape(t))
    with np.errstate(under="ignore", divide="ignore"):
        for i, ti in enumerate(np.atleast_1d(t)):  # one t at a time: memory O(grid), not O(grid × t)
            ref = ell.max() if ti > 0 else ell.min()
            out.flat[i] = ti * ref + np.log(np.dot(np.exp(ti * (ell - ref)), p))
    return out


_TS = np.geomspace(0.1, 60.0, 8)  # Chernoff exponents tried; every one gives a valid bound


def choose_tilt(parts: list[tuple[Discrete, int]], log_delta: float) -> float:
    """The Chernoff exponent that best bounds P[S >= x] at level δ: the tilt for that δ."""
    total = sum(t * _log_mgf(d, _TS) for d, t in parts)
    x = (total - log_delta) / _TS
    return float(_TS[int(np.argmin(x))])


def compose(
    parts: list[tuple[Discrete, int]], lam: float = 0.0, eta: float = 1e-18, max_size: int = MAX_GRID
) -> Composed:
    """Compose discrete PLDs (same h), each ``times`` times, by one FFT power of the tilted steps.

    The window [x_lo, x_hi] holds all but ``eta`` of the finite mass on each
    side, both untilted and tilted (Chernoff bounds computed from the
    discrete steps); mass beyond it may wrap around and is accounted for.
    """
    h = parts[0][0].h
    c_total = sum(t * d.c for d, t in parts)
    shift = int(np.floor(c_total))
    c = c_total - shift

    def logm(t):
        return sum(tt * _log_mgf(d, t) for d, tt in parts)

    g_lam = float(logm(np.array([lam]))[0]) if lam > 0 else 0.0
    up_un = np.min((logm(_TS) - np.log(eta)) / _TS)
    lo_un = np.min((logm(-_TS) - np.log(eta)) / _TS)
    # Tilted measure: log E~[e^{tS}] = logm(λ+t) − logm(λ).
    up_t = np.min((logm(lam + _TS) - g_lam - np.log(eta)) / _TS) if lam > 0 else up_un
    lo_t = np.min((logm(lam - _TS) - g_lam - np.log(eta)) / _TS) if lam > 0 else lo_un
    x_hi, x_lo = max(up_un, up_t), -max(lo_un, lo_t)
    k_lo = int(np.floor(x_lo / h)) - 1
    k_hi = int(np.ceil(x_hi / h)) + 1
    n = sfft.next_fast_len(k_hi - k_lo + 1, real=True)
    if n > max_size:
        raise MemoryError(f"PLD grid of {n} points exceeds the limit {max_size}")
    spec = None
    p_inf_keep = 1.0
    for d, t in parts:
        idx = (d.k0 + np.arange(d.p.size)) % n
        w = d.p
        if lam > 0:
            with np.errstate(divide="ignore", under="ignore"):
                lw = np.log(d.p) + lam * d.losses()
            w = np.exp(lw - special.logsumexp(lw))
        f = sfft.rfft(np.bincount(idx, weights=w, minlength=n))
        f = f**t if t > 1 else f
        spec = f if spec is None else spec * f
        p_inf_keep *= (1.0 - d.p_inf) ** t
    out = sfft.irfft(spec, n)
    roundoff = 4.0 * np.finfo(float).eps * (n + sum(t for _, t in parts))
    start = k_lo - shift
    pos = (start + np.arange(n)) % n
    p = np.maximum(out[pos], 0.0)
    return Composed(h, start + shift, c, p, float(1.0 - p_inf_keep), lam, g_lam, 2.0 * eta, 2.0 * eta, roundoff)


# ---------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------


def _tail_sums(cp: Composed):
    """Losses > 0 and suffix sums of p̃e^{−λℓ}, p̃e^{−(λ+1)ℓ} and e^{−λℓ} (all terms <= 1)."""
    ell = cp.losses()
    pos = ell > 0
    ell, pt = ell[pos], cp.p[pos]
    e1 = np.exp(-cp.lam * ell)
    a = np.cumsum((pt * e1)[::-1])[::-1]
    b = np.cumsum((pt * e1 * np.exp(-ell))[::-1])[::-1]
    r = np.cumsum(e1[::-1])[::-1]
    z = np.zeros(1)
    return ell, np.append(a, z), np.append(b, z), np.append(r, z)


def _delta_parts(cp: Composed, i: np.ndarray, eps: np.ndarray, tails):
    """(δ without allowances, allowance) for ε in the segment starting at suffix index i."""
    ell, a, b, r = tails
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        core = np.exp(cp.g) * np.maximum(a[i] - np.exp(eps) * b[i], 0.0)
        allow = cp.wrap + np.exp(cp.g) * (cp.roundoff * r[i] + cp.tilted_wrap * np.exp(-cp.lam * np.maximum(eps, 0)))
    return np.nan_to_num(core, nan=np.inf, posinf=np.inf), np.nan_to_num(allow, nan=np.inf, posinf=np.inf)


def delta_at(cp: Composed, eps: np.ndarray, sign: float) -> np.ndarray:
    """δ(ε); ``sign`` +1 adds the allowances (upper bound), −1 subtracts them (lower bound)."""
    tails = _tail_sums(cp)
    eps = np.maximum(np.asarray(eps, float), 0.0)
    i = np.searchsorted(tails[0], eps, side="right")
    core, allow = _delta_parts(cp, i, eps, tails)
    return np.clip(core + cp.p_inf + sign * allow, 0.0, 1.0)


def epsilon_at(cp: Composed, delta: np.ndarray, sign: float) -> np.ndarray:
    """Smallest ε >= 0 at which δ(ε) (with allowances per ``sign``) is at most ``delta``."""
    tails = _tail_sums(cp)
    ell = tails[0]
    delta = np.atleast_1d(np.asarray(delta, float))
    # δ just right of each atom (ε = ℓ_j from the right counts atoms > ℓ_j), and at ε = 0.
    pts = np.concatenate([[0.0], ell])
    idx = np.searchsorted(ell, pts, side="right")
    core, allow = _delta_parts(cp, idx, pts, tails)
    curve = np.clip(core + cp.p_inf + sign * allow, 0.0, None)
    out = np.empty(delta.shape)
    for k, dl in enumerate(delta):
        over = curve > dl
        if sign > 0:
            # Upper bound: the first ε where the upper δ-curve is at most δ (any such ε is safe).
            ok = np.flatnonzero(~over)
            if ok.size == 0:
                out[k] = np.inf
                continue
            j = int(ok[0])
        else:
            # Lower bound: every ε where the lower δ-curve is above δ is below the true ε, so the
            # answer is just after the *last* such point (the curve need not be monotone).
            bad = np.flatnonzero(over)
            if bad.size == 0:
                out[k] = 0.0
                continue
            j = int(bad[-1]) + 1
            if j >= pts.size:
                out[k] = float(pts[-1])
                continue
        if j == 0:
            out[k] = 0.0
            continue
        lo_e, hi_e = pts[j - 1], pts[j]
        # Inside the segment δ = e^G (a − e^ε b) + p_inf + sign·allow(lo_e): solve for ε (allowance frozen at
        # the left end, which only makes the upper answer larger and the lower one smaller).
        i = int(idx[j - 1])
        _, al = _delta_parts(cp, np.array([i]), np.array([lo_e]), tails)
        target = (dl - cp.p_inf - sign * al[0]) * np.exp(-cp.g)
        a, b = tails[1][i], tails[2][i]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            e = np.log((a - target) / b) if b > 0 and a > target else (hi_e if sign > 0 else lo_e)
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


def _discretised(mechs, h: float, kind: str) -> list[list[tuple[Discrete, int]]]:
    """Per direction, the discretised parts (direction k of every mechanism; symmetric ones in both)."""
    n_dir = max(len(m) for m, _ in mechs)
    disc = discretise_upper if kind == "upper" else discretise_lower
    cache: dict = {}
    out = []
    for k in range(n_dir):
        parts = []
        for m, t in mechs:
            d = m[min(k, len(m) - 1)]
            if id(d) not in cache:
                cache[id(d)] = disc(d, h)
            parts.append((cache[id(d)], t))
        out.append(parts)
    return out


def _eps_one(mechs, delta, h: float, kind: str) -> np.ndarray:
    """ε(δ) by one discretisation kind: max over directions, each composed with the tilt for its δ."""
    delta = np.atleast_1d(np.asarray(delta, float))
    sign = 1.0 if kind == "upper" else -1.0
    best = np.zeros(delta.shape)
    for parts in _discretised(mechs, h, kind):
        tilts = np.array([choose_tilt(parts, float(np.log(dl))) for dl in delta])
        for lam in np.unique(tilts):
            sel = tilts == lam
            cp = compose(parts, lam=float(lam))
            best[sel] = np.maximum(best[sel], epsilon_at(cp, delta[sel], sign))
    return best


def _delta_one(mechs, eps, h: float, kind: str) -> np.ndarray:
    eps = np.atleast_1d(np.asarray(eps, float))
    sign = 1.0 if kind == "upper" else -1.0
    best = np.zeros(eps.shape)
    for parts in _discretised(mechs, h, kind):
        total = sum(t * _log_mgf(d, _TS) for d, t in parts)
        tilts = np.array([_TS[int(np.argmin(total - _TS * e))] for e in eps])
        for lam in np.unique(tilts):
            sel = tilts == lam
            cp = compose(parts, lam=float(lam))
            best[sel] = np.maximum(best[sel], delta_at(cp, eps[sel], sign))
    return best


def epsilon_interval(mechs, delta, h: float, h_lower: float | None = None):
    """[lower, upper] on ε at each δ for the composition, at grid spacing h (h_lower for the lower bound)."""
    up = _eps_one(mechs, delta, h, "upper")
    lo = _eps_one(mechs, delta, h_lower or h, "lower")
    return Interval(np.minimum(lo, up), up, h)


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


def epsilon(mechs, delta, *, rel: float = REL_WIDTH, abs_: float = ABS_WIDTH, h0: float = 1e-3) -> Answer:
    """Certified [lower, upper] on ε(δ), refining the grid until the width target is met.

    ``mechs`` is a list of (directions, times). The upper and lower bounds
    are refined separately (the lower bound needs a finer grid); a bound
    whose grid would exceed :data:`MAX_GRID` points stops refining and the
    interval is returned as it is, with ``met`` false.
    """
    delta = np.atleast_1d(np.asarray(delta, float))
    if np.any(delta < MIN_DELTA):
        raise ValueError(f"the PLD engine answers for δ >= {MIN_DELTA:g}")
    h_u = h_l = h0
    up = _eps_one(mechs, delta, h_u, "upper")
    lo = _eps_one(mechs, delta, h_l, "lower")
    for _ in range(12):
        width = up - lo
        tgt = _target(up, rel, abs_)
        if np.all(width <= tgt):
            break
        # Which side is worse: compare against the other side's next refinement.
        refined = False
        for kind in ("lower", "upper"):
            h = h_l if kind == "lower" else h_u
            try:
                new = _eps_one(mechs, delta, h / 2, kind)
            except MemoryError:
                continue
            if kind == "lower":
                gain = np.max(new - lo)
                lo, h_l = np.maximum(lo, new), h / 2
            else:
                gain = np.max(up - new)
                up, h_u = np.minimum(up, new), h / 2
            refined = True
            if np.all(up - lo <= _target(up, rel, abs_)):
                break
            if gain < 0.25 * np.max(width) and kind == "lower":
                continue
        if not refined:
            break
    lo = np.minimum(lo, up)
    return Answer(lo, up, h_u, h_l, (up - lo) <= _target(up, rel, abs_) * (1 + 1e-9))
