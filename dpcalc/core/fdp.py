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

from ._arrays import all_scalar, checked, finish

__all__ = ["dp_tradeoff", "dp_advantage", "dp_attack_tpr"]


def _ed(epsilon, delta):
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    return e, d


def dp_tradeoff(epsilon, delta, alpha):
    """Type II error β = f_{ε,δ}(α) = max{0, 1−δ−e^ε α, e^{−ε}(1−δ−α)} ([DRS] Prop. 2.5).

    Examples
    --------
    >>> round(dp_tradeoff(1.0, 0.0, 0.1), 6)
    0.728172
    """
    scalar = all_scalar(epsilon, delta, alpha)
    e, d = _ed(epsilon, delta)
    a = checked("alpha", alpha, low=0, high=1, low_open=False, high_open=False)
    with np.errstate(all="ignore"):
        first = 1 - d - np.where(a > 0, np.exp(np.minimum(e + np.log(np.where(a > 0, a, 1.0)), 700.0)), 0.0)
        second = np.exp(-e) * (1 - d - a)
    return finish(np.clip(np.maximum(np.maximum(first, second), 0.0), 0.0, 1.0), scalar=scalar)


def dp_advantage(epsilon, delta):
    """Best attack advantage TPR − FPR under (ε, δ)-DP: (e^ε + 2δ − 1)/(e^ε + 1).

    Computed as 1 − 2(1−δ)/(e^ε + 1) so large ε does not overflow.
    """
    scalar = all_scalar(epsilon, delta)
    e, d = _ed(epsilon, delta)
    return finish(1.0 - 2.0 * (1.0 - d) * special.expit(-e), scalar=scalar)


def dp_attack_tpr(epsilon, delta, fpr):
    """Largest attack TPR at false-positive rate α: 1 − f_{ε,δ}(α)."""
    scalar = all_scalar(epsilon, delta, fpr)
    return finish(1.0 - np.asarray(dp_tradeoff(epsilon, delta, fpr)), scalar=scalar)
