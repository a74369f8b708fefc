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

import math

import numpy as np

from . import _fp
from . import rdp as _rdp
from ._arrays import all_scalar, checked, finish
from ._fp import ULP

__all__ = ["epsilon_simple", "epsilon_tight", "rho_from_pure", "compose"]


def epsilon_simple(rho, delta):
    """ε = ρ + 2√(ρ log(1/δ)) ([BS] Prop. 1.3). Sound upper bound, rounded up.

    Examples
    --------
    >>> round(epsilon_simple(0.5, 1e-5), 4)
    5.2985
    """
    scalar = all_scalar(rho, delta)
    r = checked("rho", rho, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1)
    return finish(_simple_up(r, d), scalar=scalar)


def _simple_up(r, d):
    """ρ + 2√(ρ log(1/δ)) rounded up (log: half an ulp; then directed operations)."""
    lg = _fp.widen_up(-np.log(d), ULP)
    return _fp.add_up(r, 2.0 * _fp.sqrt_up(_fp.mul_up(r, lg)))


def _terms_up(alpha, r, log_d):
    """αρ + log(1 − 1/α) − (log δ + log α)/(α − 1), rounded up by a bound on its rounding errors
    (each term to a few ulps; α − 1 is exact for α <= 2 and within half an ulp above)."""
    with np.errstate(all="ignore"):
        t1 = alpha * r
        am1 = alpha - 1.0  # exact for α <= 2 (Sterbenz)
        la, lm = np.log(alpha), np.log(am1)
        # log(1 − 1/α): as log(α − 1) − log α near 1, where 1 − 1/α would lose the digits of α − 1.
        t2 = np.where(alpha < 2.0, lm - la, np.log1p(-1.0 / alpha))
        t3 = -(log_d + la) / am1
        v = t1 + t2 + t3
        near = np.where(alpha < 2.0, np.abs(lm) + np.abs(la), 0.0)  # the two logs of t2 near α = 1
        err = 4.0 * ULP * (np.abs(t1) + np.abs(t2) + np.abs(t3) + np.abs(v) + near)
        err = err + 2.0 * ULP * (np.abs(log_d) + np.abs(la)) / am1
        return np.where(np.isfinite(v), _fp.add_up(v, err), np.inf)


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
    best_a = alphas[np.arange(r.size), i]
    # Golden-section refinement; every α evaluated is a valid bound.
    g = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(60):
        x1 = hi - g * (hi - lo)
        x2 = lo + g * (hi - lo)
        f1 = _rdp._eps_terms(x1, x1 * r, log_d)
        f2 = _rdp._eps_terms(x2, x2 * r, log_d)
        better1 = (f1 < best) & (f1 <= f2)
        better2 = (f2 < best) & ~better1
        best_a = np.where(better1, x1, np.where(better2, x2, best_a))
        best = np.minimum(best, np.minimum(f1, f2))
        left = f1 < f2
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
    # Every α gives a valid bound; the best one found is evaluated again with its rounding error.
    val = _terms_up(best_a, r, log_d)
    out = np.where(r == 0, 0.0, np.maximum(val, 0.0))
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
    # The caller's log δ may be half an ulp high: the conversion is evaluated at a log δ rounded down.
    tight = _tight(r, np.nextafter(np.log(d), -np.inf))
    # The simple bound is also valid; report the smaller.
    return finish(np.minimum(tight, _simple_up(r, d)), scalar=scalar)


def rho_from_pure(epsilon):
    """ε-DP ⇒ (ε²/2)-zCDP ([BS] Prop. 1.4), rounded up."""
    scalar = all_scalar(epsilon)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(_fp.mul_up(_fp.mul_up(e, e), 0.5), scalar=scalar)


def compose(rhos, times=1):
    """ρ of a composition: Σ tᵢ ρᵢ ([BS] Lemma 2.3), rounded up (the sum is exact before its last rounding)."""
    r = checked("rho", rhos, low=0, low_open=False)
    t = checked("times", times, low=1, low_open=False, integer=True)
    r, t = np.broadcast_arrays(r, t)
    return sum_up(_fp.mul_up(r, t).ravel())


def sum_up(values) -> float:
    """Σ values (finite doubles) rounded up: math.fsum rounds the exact sum to nearest, and the exact
    residual decides whether that fell below."""
    vals = [float(v) for v in np.ravel(values)]
    s = math.fsum(vals)
    if math.isfinite(s) and math.fsum(vals + [-s]) > 0:
        s = math.nextafter(s, math.inf)
    return s
