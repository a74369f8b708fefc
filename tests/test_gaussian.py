"""Gaussian mechanism calibration: published values, safety, tightness, cross-checks."""

import mpmath
import numpy as np
import pytest
from dp_accounting.pld import accountant, common

from dpcalc.core import gaussian as g
from dpcalc.core.errors import ValidationError


@pytest.mark.parametrize(
    "eps, delta, expected",
    [(1.0, 1e-5, 3.7306), (0.5, 1e-5, 7.0318)],  # FORMULAS.md §1 (Balle & Wang 2018)
)
def test_published_analytic_values(eps, delta, expected):
    assert g.sigma_analytic(eps, delta) == pytest.approx(expected, abs=1e-4)


def test_published_classical_value():
    # Δ√(2 ln(1.25/δ))/ε at (1, 1e-5) is quoted as 4.8448; we refuse ε >= 1,
    # so check the formula at ε = 0.999 scaled back.
    assert g.sigma_classical(0.999, 1e-5) * 0.999 == pytest.approx(4.8448, abs=1e-4)


def test_classical_refuses_large_epsilon():
    with pytest.raises(ValidationError, match="epsilon"):
        g.sigma_classical(1.0, 1e-5)


def _mp_delta(sigma, eps):
    mpmath.mp.dps = 60
    mu = mpmath.mpf(1) / mpmath.mpf(sigma)
    e = mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu)


@pytest.mark.parametrize("eps", [0.01, 0.3, 1.0, 5.0, 40.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-8, 1e-20, 1e-100, 1e-300])
def test_calibration_is_safe_and_tight(eps, delta):
    sigma = g.sigma_analytic(eps, delta)
    exact = _mp_delta(sigma, eps)  # independent 60-digit evaluation
    assert exact <= delta * (1 + 1e-9)
    # Tight: 1e-6 less noise breaks the target.
    assert _mp_delta(sigma * (1 - 1e-6), eps) > delta


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-10])
def test_cross_check_dp_accounting(eps, delta):
    theirs = accountant.get_smallest_gaussian_noise(common.DifferentialPrivacyParameters(eps, delta), 1)
    assert g.sigma_analytic(eps, delta) == pytest.approx(theirs, rel=1e-6)


def test_delta_at_matches_mpmath_in_the_tail():
    for sigma, eps in [(0.5, 10.0), (2.0, 30.0), (0.03, 1000.0), (10.0, 3.0)]:
        assert g.delta_at(sigma, eps) == pytest.approx(float(_mp_delta(sigma, eps)), rel=1e-8)


def test_vectorised_grid_is_one_call_and_matches_scalars():
    eps = np.linspace(0.1, 5, 1000)
    sig = g.sigma_analytic(eps, 1e-6)
    assert sig.shape == (1000,)
    for i in (0, 321, 999):
        assert sig[i] == g.sigma_analytic(float(eps[i]), 1e-6)
    assert np.all(np.diff(sig) < 0)


def test_sensitivity_scales_sigma():
    assert g.sigma_analytic(1.0, 1e-5, 3.0) == pytest.approx(3 * g.sigma_analytic(1.0, 1e-5), rel=1e-10)


def test_mu_rho_targets():
    assert g.sigma_for_mu(0.5) == 2.0
    assert g.sigma_for_rho(0.5) == 1.0
    assert g.rho_of(2.0) == 0.125


@pytest.mark.parametrize("bad", [0.0, -1.0, 1.0, float("nan"), float("inf")])
def test_invalid_delta(bad):
    with pytest.raises(ValidationError, match="delta"):
        g.sigma_analytic(1.0, bad)


def test_analytic_sigma_at_tiny_epsilon_is_the_epsilon_zero_answer():
    """At ε → 0 the smallest σ tends to that of δ_μ(0) = 2Φ(μ/2) − 1 = δ; the search used to start at the tail
    bound's ε/√(2 log 1/δ) and stop hundreds of doublings short (ε = 1e-300 gave σ = 1.5e240, labelled exact)."""
    from scipy import special

    from dpcalc.core import gaussian

    eps = np.array([5e-324, 1e-300, 1e-100, 1e-50, 1e-20])
    sig = gaussian.sigma_analytic(eps, 1e-5)
    sigma0 = 1.0 / (2.0 * np.sqrt(2.0) * special.erfinv(1e-5))
    assert np.all(np.abs(sig / sigma0 - 1.0) < 1e-9)
    assert np.all(gaussian.delta_at(sig, eps) <= 1e-5)
