"""f-DP trade-off functions and the operational reading of (ε, δ).

References
----------
.. [DRS] J. Dong, A. Roth, W. Su. Gaussian Differential Privacy,
   arXiv:1905.02383: Prop. 2.5 (f_{ε,δ}(α) = max{0, 1−δ−e^ε α, e^{−ε}(1−δ−α)});
   Wasserman & Zhou 2010 / Kairouz et al. 2015 for the hypothesis-testing view.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from . import _fp
from ._arrays import all_scalar, checked, finish
from ._fp import ULP, two_prod, two_sum

__all__ = ["dp_tradeoff", "dp_advantage", "dp_attack_tpr"]


def _ed(epsilon, delta):
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    return e, d


def dp_tradeoff(epsilon, delta, alpha):
    """Type II error β = f_{ε,δ}(α) = max{0, 1−δ−e^ε α, e^{−ε}(1−δ−α)} ([DRS] Prop. 2.5), rounded down.

    1 − δ and 1 − δ − α are formed in double-double and e^ε·α with Dekker's product, so each branch is
    within a few ulps of its true value (plus the half ulp of e^ε), and each is moved down by its bound:
    a β too high would make the best attack look weaker than it is.

    Examples
    --------
    >>> round(dp_tradeoff(1.0, 0.0, 0.1), 6)
    0.728172
    """
    scalar = all_scalar(epsilon, delta, alpha)
    e, d = _ed(epsilon, delta)
    a = checked("alpha", alpha, low=0, high=1, low_open=False, high_open=False)
    e, d, a = np.broadcast_arrays(e, d, a)
    with np.errstate(all="ignore"):
        ch, cl = two_sum(1.0, -d)  # 1 − δ
        small_e = e <= 709.0
        big = np.exp(np.minimum(e, 709.0))
        p, pe, ok = two_prod(big, a)
        ok = ok & small_e
        half = np.exp(0.5 * e)
        p = np.where(small_e, p, (half * a) * half)  # e^ε·α past e^709 (α tiny), to 1.6 ulps
        pe = np.where(ok, pe, 0.0)
        hi1, lo1 = two_sum(ch, -p)
        first = hi1 + (lo1 + (cl - pe))
        # e^ε has half an ulp (0.53 measured): that much of p, plus the final rounding (and p's own
        # roundings where Dekker's product was not used).
        err1 = (0.6 + np.where(ok, 0.0, 1.1)) * ULP * p + ULP * np.abs(first)
        first = _fp.add_down(first, -err1)
        first = np.where(a > 0, np.where(np.isfinite(p), first, -np.inf), _fp.add_down(ch, cl))
        gh, gl = two_sum(ch, -a)  # 1 − δ − α
        g = gh + (gl + cl)
        second = _fp.widen_down(np.exp(-e) * g, 2.5 * ULP)
        second = np.where(g > 0, second, 0.0)
    beta = np.maximum(np.maximum(first, second), 0.0)
    return finish(np.clip(beta, 0.0, 1.0), scalar=scalar)


def dp_advantage(epsilon, delta):
    """Best attack advantage TPR − FPR under (ε, δ)-DP: (e^ε + 2δ − 1)/(e^ε + 1), rounded up.

    Computed as tanh(ε/2) + 2δ·e^{−ε}/(1 + e^{−ε}) (a sum of non-negative terms: no cancellation as
    ε → 0, no overflow as ε grows).
    """
    scalar = all_scalar(epsilon, delta)
    e, d = _ed(epsilon, delta)
    with np.errstate(all="ignore"):
        v = np.tanh(0.5 * e) + 2.0 * d * special.expit(-e)
    # tanh 0.7 ulps, expit 0.7, products and the sum 1.5.
    v = _fp.widen_up(v, 3.0 * ULP)
    return finish(np.where((e == 0) & (d == 0), 0.0, np.minimum(v, 1.0)), scalar=scalar)


def dp_attack_tpr(epsilon, delta, fpr):
    """Largest attack TPR at false-positive rate α: 1 − f_{ε,δ}(α) = min{1, δ + e^ε α, 1 − e^{−ε}(1 − δ − α)},
    rounded up. The last branch is (1 − e^{−ε}) + e^{−ε}(δ + α): non-negative terms, so a small TPR is
    not the difference of two numbers near 1."""
    scalar = all_scalar(epsilon, delta, fpr)
    e, d = _ed(epsilon, delta)
    a = checked("fpr", fpr, low=0, high=1, low_open=False, high_open=False)
    e, d, a = np.broadcast_arrays(e, d, a)
    with np.errstate(all="ignore"):
        big = _fp.widen_up(np.exp(np.minimum(e, 709.0)), ULP)
        u1 = np.where(e <= 709.0, _fp.add_up(d, _fp.mul_up(big, a)), np.inf)
        u1 = np.where(a == 0, d, u1)
        small = _fp.widen_up(np.exp(-e), ULP)
        u2 = _fp.add_up(_fp.widen_up(-np.expm1(-e), ULP), _fp.mul_up(small, _fp.add_up(d, a)))
    tpr = np.minimum(np.minimum(u1, u2), 1.0)
    return finish(tpr, scalar=scalar)
