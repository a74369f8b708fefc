"""Zero-concentrated differential privacy (ρ-zCDP).

References
----------
.. [BS] M. Bun, T. Steinke. Concentrated Differential Privacy: Simplifications,
   Extensions, and Lower Bounds. TCC 2016, arXiv:1605.02065: Prop. 1.3
   (ρ-zCDP ⇒ (ρ + 2√(ρ log(1/δ)), δ)-DP), Prop. 1.4 (ε-DP ⇒ ε²/2-zCDP),
   Prop. 1.6 (Gaussian), Lemma 2.3 (composition), Prop. 5.5 (groups: k²ρ).
.. [CKS] C. Canonne, G. Kamath, T. Steinke, arXiv:2004.00010, Prop. 12
   (tighter conversion through RDP r(α) = αρ).
"""

from __future__ import annotations

import numpy as np

from . import rdp as _rdp
from ._arrays import all_scalar, checked, finish

__all__ = ["epsilon_simple", "epsilon_tight", "rho_from_pure", "compose"]


def epsilon_simple(rho, delta):
    """ε = ρ + 2√(ρ log(1/δ)) ([BS] Prop. 1.3). Sound upper bound.

    Examples
    --------
    >>> round(epsilon_simple(0.5, 1e-5), 4)
    5.2985
    """
    scalar = all_scalar(rho, delta)
    r = checked("rho", rho, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1)
    return finish(r + 2.0 * np.sqrt(r * -np.log(d)), scalar=scalar)


def _tight(r, log_d):
    """min over α > 1 of αρ + log(1−1/α) − (log δ + log α)/(α−1)."""
    r, log_d = np.broadcast_arrays(r, log_d)
    shape = r.shape
    r, log_d = r.ravel(), log_d.ravel()
    # Near-optimal α from the simple bound: α* ≈ 1 + √(log(1/δ)/ρ).
    with np.errstate(divide="ignore"):
        guess = 1.0 + np.sqrt(-log_d / np.maximum(r, 1e-300))
    alphas = 1.0 + (guess[:, None] - 1.0) * np.geomspace(1e-3, 1e3, 241)[None, :]
    alphas = np.maximum(alphas, 1.0 + 1e-9)
    e = _rdp._eps_terms(alphas, alphas * r[:, None], log_d[:, None])
    i = np.argmin(e, axis=1)
    lo = alphas[np.arange(r.size), np.maximum(i - 1, 0)]
    hi = alphas[np.arange(r.size), np.minimum(i + 1, alphas.shape[1] - 1)]
    best = e[np.arange(r.size), i]
    # Golden-section refinement; every α evaluated is a valid bound.
    g = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(60):
        x1 = hi - g * (hi - lo)
        x2 = lo + g * (hi - lo)
        f1 = _rdp._eps_terms(x1, x1 * r, log_d)
        f2 = _rdp._eps_terms(x2, x2 * r, log_d)
        best = np.minimum(best, np.minimum(f1, f2))
        left = f1 < f2
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
    out = np.where(r == 0, 0.0, np.maximum(best, 0.0))
    return out.reshape(shape)


def epsilon_tight(rho, delta):
    """ε at δ for ρ-zCDP through RDP r(α) = αρ and the improved conversion ([CKS] Prop. 12).

    Minimised over continuous α; never larger than :func:`epsilon_simple`.

    Examples
    --------
    >>> round(epsilon_tight(0.5, 1e-5), 4)
    4.7284
    """
    scalar = all_scalar(rho, delta)
    r = checked("rho", rho, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1)
    tight = _tight(r, np.log(d))
    # The simple bound is also valid; report the smaller.
    return finish(np.minimum(tight, r + 2.0 * np.sqrt(r * -np.log(d))), scalar=scalar)


def rho_from_pure(epsilon):
    """ε-DP ⇒ (ε²/2)-zCDP ([BS] Prop. 1.4)."""
    scalar = all_scalar(epsilon)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(e * e / 2.0, scalar=scalar)


def compose(rhos, times=1):
    """ρ of a composition: Σ tᵢ ρᵢ ([BS] Lemma 2.3)."""
    r = checked("rho", rhos, low=0, low_open=False)
    t = checked("times", times, low=1, low_open=False, integer=True)
    return float(np.sum(r * t))
