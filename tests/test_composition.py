import numpy as np
import pytest
from dp_accounting.pld import accountant, common
from scipy.special import comb

from dpcalc.core import composition as comp
from dpcalc.core import gdp


def test_basic_and_advanced_formulas():
    assert comp.basic(0.1, 1e-6, 100) == (pytest.approx(10.0), pytest.approx(1e-4))
    e, d = comp.advanced(0.1, 1e-6, 100, 1e-6)
    assert e == pytest.approx(np.sqrt(200 * np.log(1e6)) * 0.1 + 100 * 0.1 * np.expm1(0.1))
    assert d == pytest.approx(1e-4 + 1e-6)


@pytest.mark.parametrize("e0, d0, k, dt", [(0.1, 1e-6, 100, 1.01e-4), (0.5, 0.0, 30, 1e-6), (0.01, 1e-8, 500, 1e-5)])
def test_optimal_vs_dp_accounting_kov(e0, d0, k, dt):
    # dp-accounting's advanced_composition evaluates KOV Thm 3.3 at its
    # breakpoints ε = (k − 2i)ε₀; our continuous form is at most that and
    # within one breakpoint step below it.
    theirs = accountant.advanced_composition(common.DifferentialPrivacyParameters(e0, d0), k, dt)
    ours = comp.optimal_homogeneous(e0, d0, k, dt)
    assert ours <= theirs + 1e-9
    assert ours >= theirs - 2 * e0 - 1e-9


def _kov_discrete(e0, d0, k, i):
    """KOV Thm 3.3 at ε = (k−2i)ε₀: δ = 1 − (1−δ₀)^k (1−δ_i)."""
    terms = (comb(k, j) * (np.exp((k - j) * e0) - np.exp((k - 2 * i + j) * e0)) for j in range(i))
    di = sum(terms) / (1 + np.exp(e0)) ** k
    return (k - 2 * i) * e0, 1 - (1 - d0) ** k * (1 - di), di


@pytest.mark.parametrize("e0, d0, k", [(0.1, 0.0, 10), (0.5, 1e-6, 20), (0.05, 1e-8, 50), (1.0, 0.0, 7)])
def test_optimal_matches_kov_theorem_at_its_breakpoints(e0, d0, k):
    for i in range(1, k // 2):
        eps_i, delta_i, pure_i = _kov_discrete(e0, d0, k, i)
        # Skip points where the pure part is lost in float next to kδ₀.
        if not 0 < delta_i < 1 or pure_i < 1e-3 * delta_i:
            continue
        ours = comp.optimal_homogeneous(e0, d0, k, delta_i)
        assert ours <= eps_i * (1 + 1e-8) + 1e-12
        assert ours == pytest.approx(eps_i, rel=1e-6, abs=1e-9)


def test_optimal_is_below_advanced_and_basic():
    e0, d0, k, dp = 0.1, 1e-7, 1000, 1e-6
    adv_e, adv_d = comp.advanced(e0, d0, k, dp)
    opt = comp.optimal_homogeneous(e0, d0, k, adv_d)
    assert opt <= adv_e
    assert opt <= k * e0


def test_optimal_tends_to_gdp_limit():
    # k-fold (ε₀, 0) with ε₀ = 1/√k tends to μ = 1 GDP (Dong, Roth & Su Thm 3.4).
    k = 100_000
    opt = comp.optimal_homogeneous(1 / np.sqrt(k), 0.0, k, 1e-5)
    assert opt == pytest.approx(gdp.epsilon(1.0, 1e-5), rel=5e-3)


def test_optimal_refuses_delta_below_what_k_mechanisms_spend():
    with pytest.raises(ValueError, match="delta_total"):
        comp.optimal_homogeneous(0.1, 1e-3, 100, 1e-3)


def test_basic_list():
    assert comp.basic_list([0.5, 1.0], [1e-6, 0.0], [10, 2]) == (pytest.approx(7.0), pytest.approx(1e-5))
