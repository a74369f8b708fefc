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

import numpy as np
from scipy import special

from ._arrays import all_scalar, checked, finish
from .errors import ValidationError
from .solve import bisect_predicate

__all__ = ["basic", "basic_list", "advanced", "optimal_homogeneous", "KOV_MAX_TIMES"]

#: Largest k for which the optimal (KOV) composition is evaluated; its cost
#: is O(k) per ε evaluation.
KOV_MAX_TIMES = 1_000_000


def _times(times):
    return checked("times", times, low=1, low_open=False, integer=True)


def basic(epsilon, delta, times):
    """k-fold basic composition: (kε, kδ) ([DR] Thm 3.16). δ is capped at 1."""
    scalar = all_scalar(epsilon, delta, times)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    k = _times(times)
    return finish(k * e, np.minimum(k * d, 1.0), scalar=scalar)


def basic_list(epsilons, deltas, times=1):
    """Heterogeneous basic composition: (Σ tᵢεᵢ, Σ tᵢδᵢ)."""
    e = checked("epsilon", epsilons, low=0, low_open=False)
    d = checked("delta", deltas, low=0, high=1, low_open=False)
    k = _times(times)
    e, d, k = np.broadcast_arrays(e, d, k)
    return float(np.sum(k * e)), float(min(np.sum(k * d), 1.0))


def advanced(epsilon, delta, times, delta_prime):
    """Advanced composition ([DRV]; Dwork & Roth Thm 3.20).

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
    with np.errstate(over="ignore"):
        eps = np.sqrt(2.0 * k * -np.log(dp)) * e + k * e * np.expm1(e)
    return finish(eps, np.minimum(k * d + dp, 1.0), scalar=scalar)


def _kov_log_delta_pure(eps, e0, k):
    """log Σ_j C(k,j)(e^{(k−j)ε₀} − e^{ε+jε₀})₊ / (1+e^{ε₀})^k, for 1-D eps, e0 and one k."""
    j = np.arange(0, int(k) // 2 + 1, dtype=np.float64)[None, :]
    e0c = e0[:, None]
    gap = (k - 2 * j) * e0c - eps[:, None]  # term j is positive iff gap > 0
    with np.errstate(all="ignore"):
        terms = special.gammaln(k + 1) - special.gammaln(j + 1) - special.gammaln(k - j + 1)
        terms = terms + (k - j) * e0c + np.log(-np.expm1(-gap))
    terms = np.where(gap > 0, terms, -np.inf)
    norm = k * np.logaddexp(0.0, e0)
    return special.logsumexp(terms, axis=1) - norm


def optimal_homogeneous(epsilon, delta, times, delta_total, *, rtol: float = 1e-10):
    """Optimal k-fold composition of an (ε₀, δ₀) mechanism ([KOV] Thm 3.3).

    Returns the smallest ε (rounded up) such that k-fold composition is
    (ε, ``delta_total``)-DP, using the continuous form
    δ(ε) = 1 − (1−δ₀)^k [1 − Σ_j C(k,j)(e^{(k−j)ε₀} − e^{ε+jε₀})₊ / (1+e^{ε₀})^k].
    Requires δ_total >= 1 − (1−δ₀)^k. Cost O(k) per evaluation; k is limited
    to :data:`KOV_MAX_TIMES`.
    """
    scalar = all_scalar(epsilon, delta, times, delta_total)
    e0 = checked("epsilon", epsilon, low=0)
    d0 = checked("delta", delta, low=0, high=1, low_open=False)
    k = checked("times", times, low=1, high=KOV_MAX_TIMES, low_open=False, high_open=False, integer=True)
    dt = checked("delta_total", delta_total, low=0, high=1)
    e0, d0, k, dt = (a.ravel() for a in np.broadcast_arrays(e0, d0, k, dt))
    shape = np.broadcast_shapes(*(np.shape(x) for x in (epsilon, delta, times, delta_total)))
    # Budget left for the pure part: 1 − δ_pure >= (1 − δ_t)/(1 − δ₀)^k.
    log_keep = np.log1p(-dt) - k * np.log1p(-d0)
    if (log_keep >= 0).any():
        bad = float(dt[log_keep >= 0][0])
        raise ValidationError(
            "delta_total", bad, "larger than 1 − (1 − δ)^k, the δ that k mechanisms spend on their own"
        )
    log_dp_max = np.log(-np.expm1(log_keep))  # δ_pure must be <= this
    out = np.empty_like(e0)
    for kv in np.unique(k):
        sel = k == kv
        # Chunk so that the (cases × k/2) work array stays ~ 2e7 elements.
        step = max(1, int(2e7 // (kv // 2 + 1)))
        idx = np.flatnonzero(sel)
        for start in range(0, idx.size, step):
            ii = idx[start : start + step]
            ee, lim = e0[ii], log_dp_max[ii]
            zero_ok = _kov_log_delta_pure(np.zeros_like(ee), ee, kv) <= lim
            ok, _ = bisect_predicate(
                lambda x, ee=ee, lim=lim: _kov_log_delta_pure(x, ee, kv) <= lim,
                ok=kv * ee,
                bad=np.zeros_like(ee),
                rtol=rtol,
                atol=1e-300,
            )
            out[ii] = np.where(zero_ok, 0.0, ok)
    return finish(out.reshape(shape), scalar=scalar)
