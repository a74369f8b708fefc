"""Privacy amplification by subsampling.

References
----------
.. [BBG] B. Balle, G. Barthe, M. Gaboardi. Privacy Amplification by
   Subsampling: Tight Analyses via Couplings and Divergences. NeurIPS 2018,
   arXiv:1807.01647: Theorem 8 (Poisson sampling, add/remove neighbours) and
   Theorem 9 (sampling without replacement, substitution neighbours).
"""

from __future__ import annotations

import numpy as np

from ._arrays import all_scalar, checked, finish

__all__ = ["subsample"]


def subsample(epsilon, delta, rate):
    """(ε, δ) → (log(1 + q(e^ε − 1)), qδ) ([BBG] Thm 8 and Thm 9).

    The same formula holds for Poisson sampling at rate q with add/remove
    neighbours, and for sampling m of n records without replacement with
    substitution neighbours (q = m/n). Computed as
    log((1−q) + q e^ε) in log space, so large ε does not overflow.

    Examples
    --------
    >>> e, d = subsample(1.0, 1e-6, 0.01)
    >>> round(e, 6), d
    (0.017037, 1e-08)
    """
    scalar = all_scalar(epsilon, delta, rate)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    q = checked("rate", rate, low=0, high=1, high_open=False)
    with np.errstate(divide="ignore"):
        eps = np.logaddexp(np.log1p(-q), np.log(q) + e)
    eps = np.where(q >= 1, e, np.maximum(eps, 0.0))
    return finish(eps, q * d, scalar=scalar)
