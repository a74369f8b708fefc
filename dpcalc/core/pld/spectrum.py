"""A step's spectrum with long-double accuracy where the composition needs it: the low frequencies.

The T-th power of a step's spectrum F turns an error b in a coefficient into about T·b·|F|^{T−1}.
Where |F|^T is negligible the double-precision FFT's error (κ·||w||₁, κ ≈ 10·u·log₂ n) does no
harm; only the frequencies where |F|^T is not — for a composed loss spread over N_s grid points,
about n/N_s of the n — need the step's transform in long double (see :mod:`.compose`). A full
long-double FFT of length n costs 3–4 times a double one. Here the double FFT gives every
coefficient and tells which frequencies matter (j < K), and those are computed again in long
double from block moments, at a small fraction of that cost:

with positions s = B·a + b (0 <= b < B, B a power of two dividing n, N = n/B), β_b = b/B − 1/2
and y_j = 2πj/N,

    X_j = Σ_s w_s e^{−2πi j s/n}
        = e^{−i y_j/2} Σ_p (−i y_j)^p / p! · Σ_a M_p[a] e^{−2πi j a/N} + R_j,
    M_p[a] = Σ_b w_{Ba+b} β_b^p,    |R_j| <= ||w||₁ · (y_j/2)^{P+1}/(P+1)!

(Taylor's remainder of e^{−i y β}, |y β| <= y/2): P + 1 long-double FFTs of length N of the
moments. B is chosen so that y_K <= 1/4, and P is the fewest terms whose remainder is below 1e-21
(at most 11); the remainder is part of the bound either way.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft as sfft

from .errors import FFT_ERROR_PER_LEVEL

__all__ = ["low_band_rfft", "MIN_BLOCK", "MIN_TIMES"]

_U = float(np.finfo(float).eps)
_UL = float(np.finfo(np.longdouble).eps)

#: The smallest block: the band's P + 1 transforms have length at most n/MIN_BLOCK.
MIN_BLOCK = 64

#: Fewer steps than this take the whole transform in long double: their power keeps too many
#: frequencies (and above its band a single step would keep the double FFT's error undamped).
MIN_TIMES = 16

#: π in long double (np.pi is the double nearest π, 360 long-double ulps off).
_PI_L = 4 * np.arctan(np.longdouble(1))

#: Terms of the Taylor series (p = 0 … P) at most.
_P = 11

#: |F|^T below this (in log) counts as negligible when choosing the band.
_LOG_NEGLIGIBLE = math.log(1e-8)


def _tree_sum(blocks: np.ndarray) -> np.ndarray:
    """Row sums of a (rows, 2^k) array by pairwise halving: within k·u of the sum of |terms|."""
    while blocks.shape[1] > 1:
        half = blocks.shape[1] // 2
        blocks = blocks[:, :half] + blocks[:, half:]
    return blocks[:, 0]


def low_band_rfft(idx: np.ndarray, w: np.ndarray, n: int, times: int, span: int, first: int):
    """(f, b, |f|) for the real FFT of length n of the long-double weights ``w`` at distinct positions
    ``idx`` (0 <= idx < n, within the run of ``span`` positions mod n that starts at ``first``): f the spectrum in
    double, b a bound on |f_j − X_j| per frequency against the exact DFT X of ``w`` (and |f|); or None where
    the method does not apply (fewer than MIN_TIMES steps, no small low band, n without a suitable
    power of two, or positions out of the run's order) and the caller takes the full long-double FFT.

    Above the band: the double FFT of w rounded to double, b = (κ_n + 2u)·||w||₁. In the band: the
    block moments above, b = ||w||₁·((y/2)^{P+1}/(P+1)! + e^{y/2}·u_L·(κ_N/u_L + S + P + 40 + 8y))
    + 2u·|f_j|. The rounding, in long-double ulps u_L of ||w||₁, per term p of the series, whose
    coefficients y^p/p! times the moments' scale 2^{−p} sum to e^{y/2} (and, weighted by p, to
    (y/2)·e^{y/2}): the moments (p products, then a pairwise sum of each block's points), p + S with
    S the blocks' mass-weighted mean of ⌈log₂ count⌉ (at most log₂B); their
    length-N FFT, κ_N/u_L; the coefficient (−iy)^p/p! (y = 2πj/N within 3.5 ulps), 6p; its product
    with the moment's transform, 3; the sum of the P + 1 terms, P + 1; the phase
    e^{−πi (2j·a0 + j)/N} from an exact residue (the angle, at most π, within 8 ulps; cos and sin
    within two each) and its product, 27. Then rounding to double, 2u·|f_j|."""

    if times < MIN_TIMES:
        return None
    wd = w.astype(np.float64)
    # A first look, before any transform: |F(ω)| >= 1 − ω²·Var/2 (Var the variance of the positions under
    # w), so the band reaches at least the ω where (1 − ω²·Var/2)^T is negligible. Where that alone asks
    # for blocks below MIN_BLOCK, the full transform is due anyway. (Only the time depends on this.)
    keep = -math.expm1(_LOG_NEGLIGIBLE / times)
    off = ((idx - first) % n).astype(np.float64)
    mean = float(np.dot(wd, off))
    var = float(np.dot(wd, (off - mean) ** 2))
    if var > 0:
        k_gauss = math.sqrt(2 * keep / var) * n / (2 * math.pi)
        if n / (8 * math.pi * max(k_gauss - 1, 1)) < MIN_BLOCK:
            return None
    x = np.zeros(n)
    x[idx] = wd
    f = sfft.rfft(x)
    total = float(np.sum(w, dtype=np.longdouble))
    kappa = FFT_ERROR_PER_LEVEL * _U * math.log2(max(n, 2))
    b_hi = (kappa + 2 * _U) * total * (1 + 1e-6)
    absf = np.abs(f)
    big = np.flatnonzero(absf + b_hi > math.exp(_LOG_NEGLIGIBLE / times))
    k_band = int(big[-1]) + 1 if big.size else 1
    # B: the largest power of two dividing n with y_K = 2π(K − 1)B/n <= 1/4; at least MIN_BLOCK, or the
    # band's transforms would cost about as much as the full one.
    twos = (n & -n).bit_length() - 1
    limit = n / (8 * math.pi * max(k_band - 1, 1))
    bb = 1 << min(twos, max(int(math.floor(math.log2(limit))), 0), 16)
    if bb < MIN_BLOCK or span + bb > n:
        return None
    band = _band(idx, w, n, k_band, bb, int(first), total)
    if band is None:
        return None
    low, bound = band
    f_low = low.astype(np.complex128)
    b_low = bound + 2 * _U * np.abs(f_low)
    f[:k_band] = f_low
    absf[:k_band] = np.abs(f_low)
    b = np.full(f.shape, b_hi)
    b[:k_band] = b_low
    return f, b, absf


def _band(idx: np.ndarray, w: np.ndarray, n: int, k_band: int, bb: int, first: int, total: float):
    """(X̃_j, bound_j) for j < ``k_band``: the DFT of length n of ``w`` in long double from the block
    moments (block size ``bb``, see the module notes) and a bound on its error against the exact DFT;
    or None unless the positions, taken from the block holding ``first`` on (mod n), increase strictly
    (the run in order, wrapping around n at most once and not into its own first block)."""
    nn = n // bb
    a0 = first // bb
    rel = (idx - a0 * bb) % n
    if rel.size > 1 and not bool(np.all(rel[1:] > rel[:-1])):
        return None
    # Each block's points, packed in order into a row whose width is the next power of two of their
    # count (rows grouped by width), are summed pairwise: ⌈log₂ count⌉ ulps of the block's mass — and
    # the work follows a step's points, not its run (its sparse tail bins spread over most of it).
    blk = rel // bb
    starts = np.flatnonzero(np.r_[True, blk[1:] != blk[:-1]])
    count = np.diff(np.r_[starts, blk.size])
    level = np.ceil(np.log2(count)).astype(np.int64)
    rank = np.arange(blk.size) - np.repeat(starts, count)  # each point's place in its block
    block_of = np.repeat(np.arange(starts.size), count)  # each point's block (in order)
    # β = b/B − 1/2 in [−1/2, 1/2), exact (B a power of two): e^{−iy b/B} = e^{−iy/2}·e^{−iyβ}.
    beta = ((rel % bb).astype(np.longdouble) - np.longdouble(bb // 2)) / np.longdouble(bb)
    row_of = np.empty(starts.size, dtype=np.int64)  # each block's row within its width's group
    groups = []  # (block indices, packed weights, packed β)
    for lv in np.unique(level):
        rows = np.flatnonzero(level == lv)
        row_of[rows] = np.arange(rows.size)
        pts = np.flatnonzero(level[block_of] == lv)
        r_pt = row_of[block_of[pts]]
        wg = np.zeros((rows.size, 1 << int(lv)), dtype=np.longdouble)
        bg = np.zeros_like(wg)
        wg[r_pt, rank[pts]] = w[pts]
        bg[r_pt, rank[pts]] = beta[pts]
        groups.append((blk[starts[rows]], wg, bg))
    # The summation error in ulps of the blocks' mass: their mass-weighted mean of ⌈log₂ count⌉.
    mass = np.add.reduceat(w.astype(np.float64), starts)
    sum_ulps = float(np.dot(mass, level)) / max(float(mass.sum()), 1e-300)
    j = np.arange(k_band)
    y = 2 * _PI_L * j.astype(np.longdouble) / np.longdouble(nn)
    z = -1j * y.astype(np.clongdouble)
    acc = np.zeros(k_band, dtype=np.clongdouble)
    coef = np.ones(k_band, dtype=np.clongdouble)
    m = np.zeros(nn, dtype=np.longdouble)
    # Terms: the fewest with the remainder (y/2)^{P+1}/(P+1)! at most 1e-21 (next to the 2u·|f| of rounding).
    y_max = 2 * math.pi * (k_band - 1) / nn
    terms = 1
    while terms < _P + 1 and (y_max / 2) ** terms / math.factorial(terms) > 1e-21:
        terms += 1
    for p in range(terms):
        if p:
            coef = coef * z / np.longdouble(p)
        for where, wg, bg in groups:
            if p:
                np.multiply(wg, bg, out=wg)
            m[where] = _tree_sum(wg)
        g = sfft.fft(m)[:k_band]
        acc += coef * g
    # The phase e^{−2πi j a0/N}·e^{−iy/2} = e^{−πi (2·j·a0 + j)/N}, from the exact residue of
    # 2·j·a0 + j mod 2N, taken in (−N, N]: |angle| <= π.
    jj = j.astype(np.int64)
    r = (2 * ((jj * a0) % nn) + jj) % (2 * nn)
    r = np.where(r > nn, r - 2 * nn, r)
    ang = _PI_L * r.astype(np.longdouble) / np.longdouble(nn)
    low = acc * (np.cos(ang) - 1j * np.sin(ang))
    yf = y.astype(np.float64)
    rem = (yf / 2) ** terms / math.factorial(terms)
    kappa_n = FFT_ERROR_PER_LEVEL * math.log2(max(nn, 2))
    bound = total * (1 + 1e-3) * (rem + np.exp(yf / 2) * _UL * (kappa_n + sum_ulps + _P + 40 + 8 * yf))
    return low, bound
