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

__all__ = ["low_band_rfft", "MIN_BLOCK"]

_U = float(np.finfo(float).eps)
_UL = float(np.finfo(np.longdouble).eps)

#: The smallest block: the band's P + 1 transforms have length at most n/MIN_BLOCK.
MIN_BLOCK = 64

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
    the method does not apply (no small low band, or n without a suitable power of two) and the
    caller takes the full long-double FFT.

    Above the band: the double FFT of w rounded to double, b = (κ_n + 2u)·||w||₁. In the band: the
    block moments above, b = ||w||₁·((y/2)^{P+1}/(P+1)! + e^{y/2}·u_L·(κ_N/u_L + log₂B + P + 40 + 8y))
    + 2u·|f_j|. The rounding, in long-double ulps u_L of ||w||₁, per term p of the series, whose
    coefficients y^p/p! times the moments' scale 2^{−p} sum to e^{y/2} (and, weighted by p, to
    (y/2)·e^{y/2}): the moments (p products, then a pairwise sum of B terms), p + log₂B; their
    length-N FFT, κ_N/u_L; the coefficient (−iy)^p/p! (y = 2πj/N within 3.5 ulps), 6p; its product
    with the moment's transform, 3; the sum of the P + 1 terms, P + 1; the phase
    e^{−πi (2j·a0 + j)/N} from an exact residue (the angle, at most π, within 8 ulps; cos and sin
    within two each) and its product, 27. Then rounding to double, 2u·|f_j|."""

    wd = w.astype(np.float64)
    # A first look, before any transform: |F(ω)| >= 1 − ω²·Var/2 (Var the variance of the positions under
    # w), so the band reaches at least the ω where (1 − ω²·Var/2)^T is negligible. Where that alone asks
    # for blocks below MIN_BLOCK, the full transform is due anyway. (Only the time depends on this.)
    keep = -math.expm1(_LOG_NEGLIGIBLE / max(times, 1))
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
    big = np.flatnonzero(absf + b_hi > math.exp(_LOG_NEGLIGIBLE / max(times, 1)))
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
    or None where the run (from ``first``, mod n) does not fit in n/bb blocks."""
    nn = n // bb
    # The run may wrap around n: positions relative to the block holding its first point.
    a0 = first // bb
    rel = (idx - a0 * bb) % n
    nblocks = -(-(int(rel.max()) + 1) // bb)
    if nblocks > nn:
        return None
    # Blocks holding at least B/4 of the points are summed as rows of a dense array (pairwise: log₂B
    # ulps); the others — a step's sparse tail bins, spread over most of its run — point by point
    # (any order: count − 1 ulps), so that the work follows the points, not the run.
    blk = rel // bb
    starts = np.flatnonzero(np.r_[True, blk[1:] != blk[:-1]])  # rel is increasing: blocks in order
    count = np.diff(np.r_[starts, blk.size])
    is_dense = count >= bb // 4
    pt_dense = np.repeat(is_dense, count)
    d_blocks = blk[starts[is_dense]]
    d_rows = np.repeat(np.arange(d_blocks.size), count[is_dense])
    blocks = np.zeros((d_blocks.size, bb), dtype=np.longdouble)
    blocks[d_rows, rel[pt_dense] % bb] = w[pt_dense]
    s_blocks = blk[starts[~is_dense]]
    s_w = w[~pt_dense]
    s_beta = ((rel[~pt_dense] % bb).astype(np.longdouble) - np.longdouble(bb // 2)) / np.longdouble(bb)
    s_starts = np.flatnonzero(np.r_[True, blk[~pt_dense][1:] != blk[~pt_dense][:-1]]) if s_w.size else None
    # Each block's summation error, in ulps of its mass: log₂B (dense) or count − 1 (sparse); the bound
    # takes their mass-weighted mean.
    mass = np.add.reduceat(w.astype(np.float64), starts)
    sum_ulps = float(np.dot(mass, np.where(is_dense, math.log2(bb), count - 1.0))) / max(float(mass.sum()), 1e-300)
    # β = b/B − 1/2 in [−1/2, 1/2), exact (B a power of two): e^{−iy b/B} = e^{−iy/2}·e^{−iyβ}.
    frac = (np.arange(bb, dtype=np.longdouble) - np.longdouble(bb // 2)) / np.longdouble(bb)
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
            np.multiply(blocks, frac, out=blocks)
            np.multiply(s_w, s_beta, out=s_w)
            coef = coef * z / np.longdouble(p)
        if d_blocks.size:
            m[d_blocks] = _tree_sum(blocks)
        if s_w.size:
            m[s_blocks] = np.add.reduceat(s_w, s_starts)
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
