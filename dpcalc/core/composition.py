"""Composition of (ε, δ)-DP mechanisms: basic, advanced, optimal homogeneous.

References
----------
.. [DR] C. Dwork, A. Roth 2014, Theorem 3.16 (basic composition).
.. [DRV] C. Dwork, G. Rothblum, S. Vadhan. Boosting and Differential
   Privacy. FOCS 2010; Dwork & Roth Theorem 3.20 (advanced composition).
.. [KOV] P. Kairouz, S. Oh, P. Viswanath. The Composition Theorem for
   Differential Privacy. ICML 2015, arXiv:1311.0776, Theorem 3.3.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from . import _fp
from ._arrays import all_scalar, checked, finish
from ._fp import ULP, two_prod, two_sum
from .errors import ValidationError
from .solve import bisect_predicate

__all__ = ["basic", "basic_list", "advanced", "optimal_homogeneous", "KOV_MAX_TIMES"]

#: Largest k for which the optimal (KOV) composition is evaluated; its cost
#: is O(k) per case (the binomial terms, once) plus O(√k) per ε evaluation.
KOV_MAX_TIMES = 1_000_000


def _times(times):
    return checked("times", times, low=1, low_open=False, integer=True)


def basic(epsilon, delta, times):
    """k-fold basic composition: (kε, kδ) ([DR] Thm 3.16), correctly rounded up. δ is capped at 1."""
    scalar = all_scalar(epsilon, delta, times)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    k = _times(times)
    return finish(_fp.mul_up(k, e), np.minimum(_fp.mul_up(k, d), 1.0), scalar=scalar)


def _sum_up(values) -> float:
    """Σ values rounded up: math.fsum rounds the exact sum to nearest; the exact residual says if it fell below."""
    vals = [float(v) for v in np.ravel(values)]
    s = math.fsum(vals)
    if math.isfinite(s) and math.fsum(vals + [-s]) > 0:
        s = math.nextafter(s, math.inf)
    return s


def basic_list(epsilons, deltas, times=1):
    """Heterogeneous basic composition: (Σ tᵢεᵢ, Σ tᵢδᵢ), rounded up (δ capped at 1)."""
    e = checked("epsilon", epsilons, low=0, low_open=False)
    d = checked("delta", deltas, low=0, high=1, low_open=False)
    k = _times(times)
    e, d, k = np.broadcast_arrays(e, d, k)
    return _sum_up(_fp.mul_up(k, e)), min(_sum_up(_fp.mul_up(k, d)), 1.0)


def advanced(epsilon, delta, times, delta_prime):
    """Advanced composition ([DRV]; Dwork & Roth Thm 3.20), rounded up.

    k-fold (ε, δ) is (√(2k ln(1/δ′)) ε + k ε (e^ε − 1), kδ + δ′)-DP.

    Returns ``(epsilon_total, delta_total)``. Where kε(e^ε − 1) overflows
    the bound is useless (basic composition is far tighter) and ε is inf;
    callers drop such rows.
    """
    scalar = all_scalar(epsilon, delta, times, delta_prime)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    k = _times(times)
    dp = checked("delta_prime", delta_prime, low=0, high=1)
    with np.errstate(over="ignore", invalid="ignore"):
        lg = _fp.widen_up(-np.log(dp), ULP)  # ln(1/δ′), half an ulp
        first = _fp.mul_up(_fp.sqrt_up(_fp.mul_up(2.0 * k, lg)), e)
        em1 = _fp.widen_up(np.expm1(e), ULP)
        second = _fp.mul_up(_fp.mul_up(k, e), em1)
        eps = _fp.add_up(first, second)
        eps = np.where(np.isnan(eps), np.inf, eps)
    return finish(eps, np.minimum(_fp.fma_up(k, d, dp), 1.0), scalar=scalar)


# --------------------------------------------------------------------------- optimal composition (KOV)

#: stirlerr(n) = log n! − (n + ½) log n + n − log √(2π) for n = 1…15 (50-digit mpmath, rounded).
_STIRLERR = np.array(
    [
        0.0,
        0.08106146679532726,
        0.0413406959554093,
        0.02767792568499834,
        0.020790672103765093,
        0.016644691189821193,
        0.013876128823070748,
        0.01189670994589177,
        0.010411265261972096,
        0.009255462182712733,
        0.00833056343336287,
        0.007573675487951841,
        0.00694284010720953,
        0.006408994188004207,
        0.0059513701127588475,
        0.005554733551962801,
    ]
)
_LOG_2PI = 1.8378770664093453


def _stirlerr(n):
    """log n! − log(√(2πn)(n/e)ⁿ) for whole n >= 1 (Loader 2000): a table to 15, the Stirling series above
    (whose first omitted term is below 1e-16 there). Absolute error below 2⁻⁵⁵."""
    n = np.asarray(n, dtype=np.float64)
    small = np.minimum(n, 15).astype(np.int64)
    with np.errstate(divide="ignore"):
        inv = 1.0 / n
        i2 = inv * inv
        series = inv * (1 / 12 - i2 * (1 / 360 - i2 * (1 / 1260 - i2 * (1 / 1680 - i2 / 1188))))
    return np.where(n <= 15, _STIRLERR[small], series)


def _bd0(x, m):
    """(bd0, error bound): x log(x/M) + M − x >= 0 (Loader 2000), without the cancellation of the direct
    form near x = M: with v = (x − M)/(x + M), bd0 = (x − M)v + 2x Σ_{j>=1} v^{2j+1}/(2j+1) for |v| < 1/2."""
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = x - m
        v = diff / (x + m)
        ser = diff * v
        t = 2.0 * x * v
        v2 = v * v
        for j in range(1, 30):
            t = t * v2
            ser = ser + t / (2 * j + 1)
        direct = x * np.log(x / m) + m - x
        near = np.abs(v) < 0.5
        val = np.where(near, ser, direct)
        err = np.where(near, 4.0 * ULP * np.abs(ser), 2.0 * ULP * (np.abs(x * np.log(x / m)) + m + x))
    # M carries its own rounding (1.5 ulps): ∂bd0/∂M = 1 − x/M.
    return np.where(x == 0, m, val), err + 2.0 * ULP * (np.abs(diff) + ULP * m)


def _log_pmf(j, k, e0):
    """(log b_j, error bound) for b_j = C(k, j) e^{(k−j)ε₀}/(1 + e^{ε₀})^k, the Binomial(k, 1/(1 + e^{ε₀}))
    probability of j, by Loader's saddle-point form (every term small where b_j is not: no lgamma
    differences). ``j`` is a row of whole numbers 0…k/2, ``k`` a whole number, ``e0`` a column."""
    q = special.expit(-e0)  # 1/(1 + e^{ε₀})
    p = special.expit(e0)
    kq, kp = k * q, k * p
    inner = (j > 0) & (j < k)
    jj = np.where(inner, j, 1.0)
    kj = np.maximum(k - jj, 1.0)  # (k − j >= 1 wherever the value is used)
    b1, e1 = _bd0(jj, kq)
    b2, e2 = _bd0(kj, kp)
    half = 0.5 * (np.log(k) - _LOG_2PI - np.log(jj) - np.log(kj))
    st = _stirlerr(k) - _stirlerr(jj) - _stirlerr(kj)
    val = st - b1 - b2 + half
    err = e1 + e2 + 2.0 * ULP * (np.abs(half) + np.log(k) + 1.0) + ULP * np.abs(val)
    # j = 0: b_0 = p^k, log = −k log1p(e^{−ε₀}) (log1p and the product: an ulp).
    edge = -k * np.log1p(np.exp(-e0))
    val = np.where(j == 0, edge, val)
    err = np.where(j == 0, 2.0 * ULP * np.abs(edge), err)
    return val, err


def _budget(d0, k, dt):
    """(log B, valid): a lower bound on log B, B = 1 − (1 − δ_t)/(1 − δ₀)^k the δ left for the pure part.

    With D = 1 − (1 − δ₀)^k: B = (δ_t − D)/(1 − D), and δ_t − D = (δ_t − kδ₀) + (kδ₀ − D), where kδ₀ − D =
    ψ(L) − kφ(δ₀) with L = k log(1 − δ₀), φ(x) = −log(1 − x) − x, ψ(L) = e^L − 1 − L: every piece formed
    without cancelling the kδ₀ that δ_t and D share (at δ′ = 1e-31 next to kδ₀ = 1e-14 it is all of B).
    """
    with np.errstate(all="ignore"):
        # φ(δ₀) = Σ_{n>=2} δ₀ⁿ/n, and ψ(L) = Σ_{n>=2} Lⁿ/n! for small arguments.
        phi_ser = np.zeros_like(d0)
        t = d0.copy()
        for n in range(2, 40):
            t = t * d0
            phi_ser = phi_ser + t / n
        phi = np.where(d0 < 0.25, phi_ser, -np.log1p(-d0) - d0)
        p, pe, ok = two_prod(k, d0)
        pe = np.where(ok, pe, 0.0)
        kphi = k * phi
        L = -(p + (pe + kphi))
        psi_ser = np.zeros_like(L)
        t = np.ones_like(L)
        for n in range(1, 40):
            t = t * L / n
            if n >= 2:
                psi_ser = psi_ser + t
        psi = np.where(np.abs(L) < 0.5, psi_ser, np.expm1(L) - L)
        s, se = two_sum(dt, -p)
        a_part = s + (se - pe)  # δ_t − kδ₀
        c_part = psi - kphi  # kδ₀ − D
        num = a_part + c_part
        err = 6.0 * ULP * (np.abs(psi) + np.abs(kphi)) + 2.0 * ULP * (np.abs(a_part) + np.abs(num))
        err = err + np.where(ok, 0.0, ULP * np.abs(p))  # kδ₀ not split exactly (beyond 1e±290)
        num_lo = num - err
        valid = num_lo > 0
        # log B >= log(num_lo) − L·(1 − 2ulp) (L <= 0: 1 − D = e^L), each rounded down.
        lb = np.log(np.where(valid, num_lo, 1.0))
        log_b = _fp.add_down(np.nextafter(lb, -np.inf), np.nextafter(-L * (1 - 2 * ULP), -np.inf))
    return np.where(valid, log_b, np.nan), valid & (num > 0)


def _kov_case_block(e0, kv, log_b):
    """Smallest ε (certified: δ_pure at it, with every rounding bounded, is at most B) for 1-D ε₀ and
    log B, one k. Terms more than 60 nats below log B are dropped and bounded by their count."""
    j = np.arange(0, int(kv) // 2 + 1, dtype=np.float64)[None, :]
    e0c = e0[:, None]
    lp, lerr = _log_pmf(j, float(kv), e0c)
    # Terms whose pmf (an upper bound on them) is far below B cannot matter: keep a common window.
    keep = (lp + lerr) >= (log_b[:, None] - 60.0)
    dropped = np.sum(~keep, axis=1)
    cols = np.flatnonzero(keep.any(axis=0))
    if cols.size == 0:
        cols = np.array([0])
    lo_c, hi_c = cols.min(), cols.max() + 1
    j = j[:, lo_c:hi_c]
    lp = np.where(keep[:, lo_c:hi_c], lp[:, lo_c:hi_c] + lerr[:, lo_c:hi_c], -np.inf)
    # Everything dropped is below e^{log B − 60} each.
    log_drop = np.where(dropped > 0, np.log(np.maximum(dropped, 1)) + log_b - 60.0, -np.inf)
    coef = kv - 2.0 * j  # (k − 2j), exact
    cap = _fp.mul_up(kv, e0)  # kε₀ rounded up: δ_pure = 0 there
    n_terms = j.shape[1]

    def log_pure_upper(eps):
        with np.errstate(all="ignore"):
            gap = _fp.add_up(_fp.mul_up(coef, e0c), -eps[:, None])  # >= (k − 2j)ε₀ − ε
            w = -np.expm1(-gap)
            lw = np.log(w)
            terms = np.where(gap > 0, lp + lw + ULP * (1.0 + np.abs(lw)), -np.inf)
            lse = special.logsumexp(terms, axis=1)
            lse = _fp.add_up(lse, ULP * (np.log2(n_terms + 1.0) + 4.0 + np.abs(lse)))
            return np.logaddexp(np.where(np.isnan(lse), -np.inf, lse), log_drop) + 4 * ULP

    def ok(x):
        return log_pure_upper(x) <= log_b

    zero_ok = ok(np.zeros_like(e0))
    least = np.full(e0.shape, 5e-324)
    least_ok = ok(least)
    good, _ = bisect_predicate(ok, ok=cap, bad=least, rtol=0.0, geometric=True)
    return np.where(zero_ok, 0.0, np.where(least_ok, least, good))


def optimal_homogeneous(epsilon, delta, times, delta_total, *, rtol: float = 0.0):
    """Optimal k-fold composition of an (ε₀, δ₀) mechanism ([KOV] Thm 3.3), rounded up.

    Returns the smallest ε such that k-fold composition is (ε, ``delta_total``)-DP, using the
    continuous form δ(ε) = 1 − (1−δ₀)^k [1 − δ_pure(ε)] with
    δ_pure(ε) = Σ_j C(k,j)(e^{(k−j)ε₀} − e^{ε+jε₀})₊ / (1+e^{ε₀})^k = Σ_j b_j (1 − e^{−((k−2j)ε₀ − ε)})₊,
    b_j binomial probabilities (:func:`_log_pmf`). The δ left for the pure part is formed without
    cancellation (:func:`_budget`), and the search keeps an ε at which an upper bound on δ_pure —
    every rounding bounded — was evaluated and met it (to the last bit). Requires
    δ_total > 1 − (1−δ₀)^k. Cost O(k) per case once, then O(√k) per evaluation; k is limited to
    :data:`KOV_MAX_TIMES`. ``rtol`` is accepted for compatibility and ignored.
    """
    scalar = all_scalar(epsilon, delta, times, delta_total)
    e0 = checked("epsilon", epsilon, low=0)
    d0 = checked("delta", delta, low=0, high=1, low_open=False)
    k = checked("times", times, low=1, high=KOV_MAX_TIMES, low_open=False, high_open=False, integer=True)
    dt = checked("delta_total", delta_total, low=0, high=1)
    e0, d0, k, dt = (a.ravel() for a in np.broadcast_arrays(e0, d0, k, dt))
    shape = np.broadcast_shapes(*(np.shape(x) for x in (epsilon, delta, times, delta_total)))
    log_b, valid = _budget(d0, k, dt)
    if not valid.all():
        bad = float(dt[~valid][0])
        raise ValidationError(
            "delta_total", bad, "larger than 1 − (1 − δ)^k, the δ that k mechanisms spend on their own"
        )
    out = np.empty_like(e0)
    for kv in np.unique(k):
        sel = k == kv
        # Chunk so that the (cases × k/2) work array stays ~ 2e7 elements.
        step = max(1, int(2e7 // (kv // 2 + 1)))
        idx = np.flatnonzero(sel)
        for start in range(0, idx.size, step):
            ii = idx[start : start + step]
            out[ii] = _kov_case_block(e0[ii], kv, log_b[ii])
    return finish(out.reshape(shape), scalar=scalar)
