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

from . import _fp
from ._arrays import all_scalar, checked, finish
from ._fp import ULP

__all__ = ["subsample"]


def subsample(epsilon, delta, rate):
    """(ε, δ) → (log(1 + q(e^ε − 1)), qδ) ([BBG] Thm 8 and Thm 9), both rounded up.

    The same formula holds for Poisson sampling at rate q with add/remove
    neighbours, and for sampling m of n records without replacement with
    substitution neighbours (q = m/n). Computed as log1p(q·expm1(ε)), so a tiny ε or q keeps its
    relative precision (no 1 + tiny is formed); for ε > 709 as log1p(q·e^{ε/2}·e^{ε/2}), and where even
    that overflows as ε + log(q + (1 − q)e^{−ε}) (then ε′ > 700: no cancellation).

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
    e, d, q = np.broadcast_arrays(e, d, q)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        half = np.exp(np.minimum(0.5 * e, 709.0))
        v = np.where(e <= 709.0, q * np.expm1(np.minimum(e, 709.0)), (q * half) * half)
        eps = np.where(np.isfinite(v), np.log1p(v), e + np.log(q + (1.0 - q) * np.exp(-e)))
    # expm1 and log1p half an ulp each, the product half, log1p's sensitivity at most 1: 2 ulps.
    eps = _fp.widen_up(eps, 2.5 * ULP)
    eps = np.where(q >= 1, e, np.where(e == 0, 0.0, eps))
    return finish(eps, _fp.mul_up(q, d), scalar=scalar)
