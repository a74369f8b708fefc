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

from . import gdp
from ._arrays import all_scalar, checked, finish
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


def sigma_analytic(epsilon, delta, sensitivity=1.0, *, rtol: float = 1e-12):
    """Smallest σ (rounded up) for which the Gaussian mechanism is (ε, δ)-DP.

    Notes
    -----
    The mechanism is (ε, δ)-DP iff
    Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) <= δ  ([BW] Thm 8), valid for
    every ε > 0. We solve for μ = Δ/σ by a bracketing search that keeps the
    checked side, so δ at the returned σ is at most ``delta``.

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
    mu = gdp._mu_for_dp(e, np.log(d), rtol)
    sigma = s / mu
    # μ was checked; σ = Δ/μ can round below Δ/μ_checked by half an ulp.
    sigma = np.nextafter(sigma, np.inf)
    return finish(sigma, scalar=scalar)


def sigma_classical(epsilon, delta, sensitivity=1.0):
    """Classical calibration σ = Δ √(2 ln(1.25/δ)) / ε ([DR] Thm A.1).

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
    return finish(s * np.sqrt(2.0 * np.log(1.25 / d)) / e, scalar=scalar)


def sigma_for_mu(mu, sensitivity=1.0):
    """σ = Δ/μ: the Gaussian mechanism with this σ is exactly μ-GDP ([DRS] Thm 2.7)."""
    scalar = all_scalar(mu, sensitivity)
    m = checked("mu", mu, low=0)
    return finish(_sens(sensitivity) / m, scalar=scalar)


def sigma_for_rho(rho, sensitivity=1.0):
    """σ = Δ/√(2ρ): the Gaussian mechanism with this σ is exactly ρ-zCDP ([BS] Prop 1.6)."""
    scalar = all_scalar(rho, sensitivity)
    r = checked("rho", rho, low=0)
    return finish(_sens(sensitivity) / np.sqrt(2.0 * r), scalar=scalar)


def mu_of(sigma, sensitivity=1.0):
    """μ = Δ/σ (exact)."""
    scalar = all_scalar(sigma, sensitivity)
    return finish(_sens(sensitivity) / _sigma(sigma), scalar=scalar)


def rho_of(sigma, sensitivity=1.0):
    """ρ = Δ²/(2σ²) (exact zCDP of the Gaussian mechanism)."""
    scalar = all_scalar(sigma, sensitivity)
    mu = _sens(sensitivity) / _sigma(sigma)
    return finish(mu * mu / 2.0, scalar=scalar)


def delta_at(sigma, epsilon, sensitivity=1.0):
    """Exact δ(ε) of the Gaussian mechanism ([BW] Thm 8)."""
    scalar = all_scalar(sigma, epsilon, sensitivity)
    mu = _sens(sensitivity) / _sigma(sigma)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(np.exp(gdp._log_delta(*np.broadcast_arrays(mu, e))), scalar=scalar)


def epsilon_at(sigma, delta, sensitivity=1.0):
    """Smallest ε (rounded up) at which the Gaussian mechanism is (ε, δ)-DP."""
    scalar = all_scalar(sigma, delta, sensitivity)
    mu = _sens(sensitivity) / _sigma(sigma)
    d = checked("delta", delta, low=0, high=1)
    mu, d = np.broadcast_arrays(mu, d)
    return finish(gdp._epsilon(mu, np.log(d), 1e-12), scalar=scalar)
