"""The Laplace mechanism.

References
----------
.. [DR] C. Dwork, A. Roth 2014, Theorem 3.6 (b = Δ₁/ε gives ε-DP).
.. [BBG] B. Balle, G. Barthe, M. Gaboardi. Privacy Amplification by
   Subsampling. NeurIPS 2018, arXiv:1807.01647 (privacy profile of Laplace).
.. [M] I. Mironov. Rényi Differential Privacy. CSF 2017, arXiv:1702.07476,
   Proposition 6 (RDP of Laplace).
"""

from __future__ import annotations

import numpy as np

from . import _fp
from ._arrays import all_scalar, checked, finish
from ._fp import ULP

__all__ = ["scale_for_epsilon", "epsilon_of", "delta_at", "epsilon_at"]


def scale_for_epsilon(epsilon, sensitivity=1.0):
    """Laplace scale b = Δ₁/ε for pure ε-DP (exact: correctly rounded up, [DR] Thm 3.6).

    Examples
    --------
    >>> scale_for_epsilon(0.5, 2.0)
    4.0
    """
    scalar = all_scalar(epsilon, sensitivity)
    e = checked("epsilon", epsilon, low=0)
    s = checked("sensitivity", sensitivity, low=0)
    return finish(_fp.div_up(s, e), scalar=scalar)


def epsilon_of(scale, sensitivity=1.0):
    """ε₀ = Δ/b, the pure-DP parameter of Laplace noise of scale b (correctly rounded up)."""
    scalar = all_scalar(scale, sensitivity)
    b = checked("scale", scale, low=0)
    s = checked("sensitivity", sensitivity, low=0)
    return finish(_fp.div_up(s, b), scalar=scalar)


def delta_at(scale, epsilon, sensitivity=1.0):
    """Exact δ(ε) = max(0, 1 − e^{(ε−ε₀)/2}) of Laplace noise ([BBG] §3), rounded up (within 2 ulps)."""
    scalar = all_scalar(scale, epsilon, sensitivity)
    e0 = _fp.div_up(checked("sensitivity", sensitivity, low=0), checked("scale", scale, low=0))
    e = checked("epsilon", epsilon, low=0, low_open=False)
    # δ grows with ε₀ − ε, which is rounded up; −expm1 is within half an ulp.
    gap = _fp.add_up(e0, -e) * 0.5
    d = _fp.widen_up(-np.expm1(-np.maximum(gap, 0.0)), ULP)
    return finish(np.where(gap > 0, np.minimum(d, 1.0), 0.0), scalar=scalar)


def epsilon_at(scale, delta, sensitivity=1.0):
    """Exact ε(δ) = max(0, ε₀ + 2 log(1 − δ)) of Laplace noise, rounded up."""
    scalar = all_scalar(scale, delta, sensitivity)
    e0 = _fp.div_up(checked("sensitivity", sensitivity, low=0), checked("scale", scale, low=0))
    d = checked("delta", delta, low=0, high=1, low_open=False)
    # 2·log(1 − δ) <= 0, within half an ulp: its upper end is −(2|log1p(−δ)|)(1 − ulp).
    shrink = _fp.widen_down(-2.0 * np.log1p(-d), ULP)
    return finish(np.maximum(0.0, _fp.add_up(e0, -shrink)), scalar=scalar)
