import numpy as np
import pytest

from dpcalc.core import gdp, zcdp


def test_published_values():
    # FORMULAS.md §5: ρ = 0.5, δ = 1e-5 → 5.2985 (simple) vs 4.7284 (tighter)
    assert zcdp.epsilon_simple(0.5, 1e-5) == pytest.approx(5.2985, abs=1e-4)
    assert zcdp.epsilon_tight(0.5, 1e-5) == pytest.approx(4.7284, abs=1e-4)


@pytest.mark.parametrize("rho", [1e-6, 1e-3, 0.1, 1.0, 50.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-8, 1e-50])
def test_ordering_exact_gaussian_tight_simple(rho, delta):
    # A Gaussian with ρ = μ²/2 has exact ε via GDP; both zCDP bounds are above it.
    exact = gdp.epsilon(np.sqrt(2 * rho), delta)
    tight = zcdp.epsilon_tight(rho, delta)
    simple = zcdp.epsilon_simple(rho, delta)
    assert exact <= tight * (1 + 1e-9)
    assert tight <= simple * (1 + 1e-12)


def test_tight_is_the_minimum_over_alpha():
    rho, delta = 0.3, 1e-6
    alphas = np.linspace(1.01, 200, 200000)
    brute = np.min(alphas * rho + np.log1p(-1 / alphas) - (np.log(delta) + np.log(alphas)) / (alphas - 1))
    assert zcdp.epsilon_tight(rho, delta) <= brute + 1e-9
    assert zcdp.epsilon_tight(rho, delta) >= brute - 1e-4


def test_pure_and_compose():
    assert zcdp.rho_from_pure(2.0) == 2.0
    assert zcdp.compose([0.1, 0.2], [3, 1]) == pytest.approx(0.5)
