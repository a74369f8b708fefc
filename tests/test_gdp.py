"""μ-GDP: conversion to (ε, δ), trade-off functions, operational meaning, CLT."""

import numpy as np
import pytest
from scipy import stats

from dpcalc.core import gdp


def test_delta_known_value():
    # δ(ε=1) for μ=1: Φ(-0.5) − e Φ(-1.5)
    expected = stats.norm.cdf(-0.5) - np.e * stats.norm.cdf(-1.5)
    assert gdp.delta(1.0, 1.0) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.2, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-12, 1e-200])
def test_epsilon_is_safe_and_tight(mu, delta):
    eps = gdp.epsilon(mu, delta)
    assert gdp.delta(mu, eps) <= delta
    assert eps == 0 or gdp.delta(mu, eps * (1 - 1e-9)) > delta


def test_epsilon_zero_when_delta_is_large():
    # δ(0) = 2Φ(μ/2) − 1; above it ε = 0.
    mu = 0.1
    d0 = 2 * stats.norm.cdf(mu / 2) - 1
    assert gdp.epsilon(mu, d0 * 1.01) == 0.0


def test_mu_for_dp_round_trip():
    mu = gdp.mu_for_dp(np.array([0.5, 1, 2, 8]), 1e-6)
    eps = gdp.epsilon(mu, 1e-6)
    np.testing.assert_allclose(eps, [0.5, 1, 2, 8], rtol=1e-9)
    assert np.all(eps <= np.array([0.5, 1, 2, 8]) * (1 + 1e-12))


def test_tradeoff_endpoints_and_symmetry():
    assert gdp.tradeoff(1.0, 0.0) == 1.0
    assert gdp.tradeoff(1.0, 1.0) == 0.0
    assert gdp.tradeoff(0.0, 0.3) == pytest.approx(0.7)
    # G_μ is symmetric: G_μ(G_μ(α)) = α.
    a = 0.137
    assert gdp.tradeoff(1.3, gdp.tradeoff(1.3, a)) == pytest.approx(a, rel=1e-9)


def test_advantage_and_tpr():
    assert gdp.advantage(1.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1)
    assert gdp.attack_tpr(1.0, 0.05) == pytest.approx(stats.norm.cdf(1 + stats.norm.ppf(0.05)))
    # TPR = 1 − β(α)
    assert gdp.attack_tpr(0.7, 0.2) == pytest.approx(1 - gdp.tradeoff(0.7, 0.2))


def test_clt_mu_formula_and_no_overflow():
    assert gdp.clt_mu(0.01, 1.1, 10000) == pytest.approx(0.01 * np.sqrt(10000 * np.expm1(1 / 1.21)))
    assert np.isfinite(gdp.clt_mu(1e-9, 0.05, 1e9))


def test_compose_mu():
    assert gdp.compose_mu([0.3, 0.4]) == pytest.approx(0.5)


def test_series_on_a_few_points_matches_the_array_run():
    """gdp._series runs its backward recurrence on Python floats for a few points (a search's steps) and on
    arrays otherwise: the same IEEE operations, so the same values, to the bit."""
    from dpcalc.core import gdp as G

    rng = np.random.default_rng(0)
    x = rng.uniform(1.0, 20.0, 300)
    mu = x * rng.uniform(0.01, 0.7, 300)
    assert x.size > G._SCALAR_RUN
    many = G._series(x, mu)
    few = np.concatenate([G._series(x[i : i + 2], mu[i : i + 2]) for i in range(0, x.size, 2)])
    assert np.array_equal(many, few)


def test_series_is_within_its_error_bound_of_the_truth():
    """gdp._series' backward runs start (√n + 21/x)² terms up from each point's own x (a few points) or the
    band's smallest x (arrays): within _S_ULPS ulps of S = (R(x) − R(x+μ))/R(x) in 50-digit arithmetic, at
    the bands' edges and across μ/x, on both paths."""
    import mpmath as mp

    from dpcalc.core import gdp as G

    mp.mp.dps = 50

    def mills(v):
        return mp.sqrt(mp.pi / 2) * mp.erfc(v / mp.sqrt(2)) * mp.exp(v * v / 2)

    rng = np.random.default_rng(7)
    edges = np.array([1.0, 1.0 + 1e-12, 2.4999999, 2.5, 5.9999999, 6.0, 40.0, 1e4])
    x = np.concatenate([edges, 10 ** rng.uniform(0, 2, 40)])
    x = np.repeat(x, 3)
    mu = x * np.tile([1e-6, 0.05, 0.7], x.size // 3)
    for got in (G._series(x, mu), np.concatenate([G._series(x[i : i + 1], mu[i : i + 1]) for i in range(x.size)])):
        for xi, mi, gi in zip(x, mu, got):
            rx = mills(mp.mpf(xi))
            true = (rx - mills(mp.mpf(xi) + mp.mpf(mi))) / rx
            assert abs(mp.mpf(gi) - true) <= G._S_ULPS * G.ULP * true, (xi, mi)


@pytest.mark.parametrize(
    "mu, eps, delta",
    [
        (1e15, 1.0, 1.0),  # δ = 1 − (far below an ulp)
        (1e50, 3.1142944245061517, 1.0),
        (1e-30, 1.2246433773465426e-05, 1e-300),  # δ = e^{−7.5e49}: the floor, labelled upper
        (1e-10, 2.5160885839846157, 1e-300),
        (1.0599189093832449e-08, 1000.0, 1e-300),
    ],
)
def test_convert_answers_delta_at_extreme_mu(mu, eps, delta):
    # An audit found these refused with "the result δ is too large to represent (over 1e308)": δ is at
    # most 1, but e^{−x²/2} of a huge x gave 0·∞ = NaN in exp_half_sq.
    import json

    from click.testing import CliRunner

    from dpcalc.cli import cli

    res = CliRunner().invoke(cli, ["convert", "gdp", "--mu", repr(mu), "--epsilon", repr(eps), "--json"])
    assert res.exit_code == 0, res.output
    row = json.loads(res.output)["rows"][0]
    assert row["delta"] == delta
    assert row["bound"] == ("exact" if delta == 1.0 else "upper")
    assert np.isfinite(gdp.log_delta(mu, eps)) and gdp.log_delta(mu, eps) <= 0.0


@pytest.mark.parametrize("mu", [40.0, 1e6, 1e300, 1e308])
def test_tradeoff_and_tpr_far_past_the_tail(mu):
    """μ near 1e308 overflowed the error bound (inf·0 = NaN), reported to the user as "too large to represent"."""
    alpha = np.array([0.0, 1e-300, 0.05, 0.5, 1.0])
    beta = np.asarray(gdp.tradeoff(mu, alpha))
    tpr = np.asarray(gdp.attack_tpr(mu, alpha))
    assert np.all(np.isfinite(beta)) and np.all(np.isfinite(tpr))
    assert list(beta) == [1.0, 0.0, 0.0, 0.0, 0.0] or mu == 40.0
    assert list(tpr[1:]) == [1.0] * 4 or mu == 40.0
    assert beta[0] == 1.0 and tpr[0] == 0.0


@pytest.mark.parametrize(
    "mu, alpha, bound", [(40.0, 0.5, "lower"), (40.0, 1e-10, "exact"), (40.0, 1.0, "exact"), (3.0, 0.5, "exact")]
)
def test_a_beta_below_every_double_is_labelled_a_lower_bound(mu, alpha, bound):
    """β = Φ(Φ⁻¹(1−α) − μ) > 0 for α < 1; where it underflows (Φ(−40) ≈ 4e-350) the 0 shown is it rounded
    down — a lower bound on β, the safe side — and says so instead of "exact"."""
    import json

    from click.testing import CliRunner

    from dpcalc.cli import cli

    res = CliRunner().invoke(
        cli, ["convert", "gdp", "--mu", repr(mu), "--to", "tradeoff", "--alpha", repr(alpha), "--json"]
    )
    assert res.exit_code == 0, res.output
    row = json.loads(res.output)["rows"][0]
    assert row["bound"] == bound
    assert (row["beta"] == 0.0) == (bound == "lower" or alpha == 1.0)


def test_mu_for_dp_at_epsilon_zero():
    """(0, δ)-DP has a Gaussian too: δ_μ(0) = 2Φ(μ/2) − 1, so μ = 2√2·erf⁻¹(δ), rounded down (convert dp --epsilon 0
    --to gdp was refused; found by helper-65)."""
    import mpmath as mp

    mp.mp.dps = 40
    for d in (0.5, 1e-5, 0.9, 1e-100):
        got = gdp.mu_for_dp(0.0, d)
        true = 2 * mp.sqrt(2) * mp.erfinv(mp.mpf(d))
        assert got <= true and got >= true * (1 - 2.0**-46)
