"""The Gaussian mechanism: calibration and privacy profile.

References
----------
.. [BW] B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential
   Privacy. ICML 2018, arXiv:1805.06530, Theorem 8 (exact condition) and §4.
.. [DR] C. Dwork, A. Roth. The Algorithmic Foundations of Differential
   Privacy, 2014, Theorem A.1 (classical calibration, 0 < ε < 1).
.. [BS] M. Bun, T. Steinke. Concentrated Differential Privacy. TCC 2016,
   arXiv:1605.02065, Proposition 1.6 (ρ = Δ²/(2σ²)).
"""

from __future__ import annotations

import numpy as np

from . import _fp, gdp
from ._arrays import all_scalar, checked, finish
from ._fp import ULP
from .errors import ValidationError

__all__ = [
    "sigma_analytic",
    "sigma_classical",
    "sigma_for_mu",
    "sigma_for_rho",
    "delta_at",
    "epsilon_at",
    "mu_of",
    "rho_of",
]


def _sens(sensitivity):
    return checked("sensitivity", sensitivity, low=0)


def _sigma(sigma):
    return checked("sigma", sigma, low=0)


def sigma_analytic(epsilon, delta, sensitivity=1.0, *, rtol: float = 0.0):
    """Smallest σ (rounded up: within a few ulps above the true one) for which the Gaussian mechanism
    is (ε, δ)-DP.

    Notes
    -----
    The mechanism is (ε, δ)-DP iff
    Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) <= δ  ([BW] Thm 8), valid for
    every ε > 0. We solve for μ = Δ/σ by a bracketing search that keeps the
    checked side (to the last bit, or to ``rtol``), so δ at the returned σ is at most ``delta``; σ = Δ/μ
    is then rounded up.

    Examples
    --------
    >>> round(sigma_analytic(1.0, 1e-5), 4)
    3.7306
    """
    scalar = all_scalar(epsilon, delta, sensitivity)
    e = checked("epsilon", epsilon, low=0)
    d = checked("delta", delta, low=0, high=1)
    s = _sens(sensitivity)
    e, d, s = np.broadcast_arrays(e, d, s)
    shape = e.shape
    mu = gdp._mu_for_dp(e.ravel(), np.log(d.ravel()), rtol, d.ravel()).reshape(shape)
    # μ was checked; σ = Δ/μ is rounded up, so Δ/σ <= μ.
    return finish(_fp.div_up(s, mu), scalar=scalar)


def sigma_classical(epsilon, delta, sensitivity=1.0):
    """Classical calibration σ = Δ √(2 ln(1.25/δ)) / ε ([DR] Thm A.1), rounded up.

    Only proven for 0 < ε < 1; larger ε is refused.

    Examples
    --------
    >>> round(sigma_classical(0.5, 1e-5), 4)
    9.6896
    """
    scalar = all_scalar(epsilon, delta, sensitivity)
    e = checked("epsilon", epsilon, low=0)
    if (e >= 1).any():
        raise ValidationError(
            "epsilon",
            float(e[e >= 1].flat[0]),
            "in (0, 1) for the classical Gaussian formula (use the analytic calibration for ε >= 1)",
        )
    d = checked("delta", delta, low=0, high=1)
    s = _sens(sensitivity)
    # ln(1.25/δ) = ln 1.25 − ln δ: two logs (half an ulp each) and a sum of non-negative terms.
    lg = _fp.widen_up(np.log(1.25) - np.log(d), 2.0 * ULP)
    return finish(_fp.div_up(_fp.mul_up(s, _fp.sqrt_up(2.0 * lg)), e), scalar=scalar)


def sigma_for_mu(mu, sensitivity=1.0):
    """σ = Δ/μ, rounded up: the Gaussian mechanism with this σ is (at least) μ-GDP ([DRS] Thm 2.7)."""
    scalar = all_scalar(mu, sensitivity)
    m = checked("mu", mu, low=0)
    return finish(_fp.div_up(_sens(sensitivity), m), scalar=scalar)


def sigma_for_rho(rho, sensitivity=1.0):
    """σ = Δ/√(2ρ), rounded up: the Gaussian mechanism with this σ is (at least) ρ-zCDP ([BS] Prop 1.6)."""
    scalar = all_scalar(rho, sensitivity)
    r = checked("rho", rho, low=0)
    return finish(_fp.div_up(_sens(sensitivity), _fp.sqrt_down(_fp.mul_down(2.0, r))), scalar=scalar)


def mu_of(sigma, sensitivity=1.0):
    """μ = Δ/σ (exact: correctly rounded up)."""
    scalar = all_scalar(sigma, sensitivity)
    return finish(_fp.div_up(_sens(sensitivity), _sigma(sigma)), scalar=scalar)


def rho_of(sigma, sensitivity=1.0):
    """ρ = Δ²/(2σ²) (exact zCDP of the Gaussian mechanism; rounded up, within 2 ulps)."""
    scalar = all_scalar(sigma, sensitivity)
    mu = _fp.div_up(_sens(sensitivity), _sigma(sigma))
    return finish(_fp.mul_up(_fp.mul_up(mu, mu), 0.5), scalar=scalar)


def delta_at(sigma, epsilon, sensitivity=1.0):
    """Exact δ(ε) of the Gaussian mechanism ([BW] Thm 8), rounded up (within a few ulps)."""
    scalar = all_scalar(sigma, epsilon, sensitivity)
    mu = _fp.div_up(_sens(sensitivity), _sigma(sigma))  # δ grows with μ: the rounded-up μ is safe
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(gdp._delta_upper(*np.broadcast_arrays(mu, e)), scalar=scalar)


def epsilon_at(sigma, delta, sensitivity=1.0):
    """Smallest ε (rounded up: exact, within a few ulps) at which the Gaussian mechanism is (ε, δ)-DP."""
    scalar = all_scalar(sigma, delta, sensitivity)
    mu = _fp.div_up(_sens(sensitivity), _sigma(sigma))
    d = checked("delta", delta, low=0, high=1)
    mu, d = np.broadcast_arrays(mu, d)
    shape = mu.shape
    return finish(gdp._epsilon(mu.ravel(), np.log(d.ravel()), 0.0, d.ravel()).reshape(shape), scalar=scalar)
