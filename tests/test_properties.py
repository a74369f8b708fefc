"""Property tests: monotonicity, round trips, bound ordering, scalar/vector agreement."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from dpcalc.core import composition, gaussian, gdp, group, rdp, sgd, zcdp

eps_st = st.floats(1e-3, 50.0)
delta_st = st.floats(1e-15, 0.5).map(lambda d: float(f"{d:.6g}"))
log_delta_st = st.integers(-200, -1).map(lambda k: 10.0**k)
mu_st = st.floats(1e-3, 20.0)
q_st = st.floats(1e-6, 1.0)
sigma_st = st.floats(0.4, 50.0)


@given(eps_st, log_delta_st)
def test_calibrate_then_convert_round_trip(eps, delta):
    sigma = gaussian.sigma_analytic(eps, delta)
    # δ at the returned σ meets the target, and ε at that δ comes back.
    assert gaussian.delta_at(sigma, eps) <= delta
    back = gaussian.epsilon_at(sigma, delta)
    assert back <= eps * (1 + 1e-9)
    assert back >= eps * (1 - 1e-6)


@given(eps_st, eps_st, log_delta_st)
def test_more_epsilon_needs_less_noise(e1, e2, delta):
    assume(abs(e1 - e2) > 1e-6 * max(e1, e2))
    lo, hi = sorted((e1, e2))
    assert gaussian.sigma_analytic(lo, delta) > gaussian.sigma_analytic(hi, delta)


@given(mu_st, mu_st, log_delta_st)
def test_gdp_epsilon_increases_with_mu(m1, m2, delta):
    assume(abs(m1 - m2) > 1e-6 * max(m1, m2))
    lo, hi = sorted((m1, m2))
    assert gdp.epsilon(lo, delta) <= gdp.epsilon(hi, delta)


@given(mu_st, st.floats(0, 100))
def test_gdp_delta_is_a_probability(mu, eps):
    d = gdp.delta(mu, eps)
    assert 0.0 <= d <= 1.0


@given(st.floats(1e-6, 100.0), log_delta_st)
def test_zcdp_bound_ordering(rho, delta):
    exact = gdp.epsilon(np.sqrt(2 * rho), delta)
    tight = zcdp.epsilon_tight(rho, delta)
    simple = zcdp.epsilon_simple(rho, delta)
    assert exact <= tight * (1 + 1e-9) <= simple * (1 + 1e-9)


@given(st.floats(1e-3, 2.0), st.floats(0, 1e-5), st.integers(2, 400), st.floats(1e-9, 1e-3))
def test_composition_ordering_optimal_advanced_basic(e0, d0, k, dp):
    adv_e, adv_d = composition.advanced(e0, d0, k, dp)
    assume(adv_d < 1)
    opt = composition.optimal_homogeneous(e0, d0, k, adv_d)
    assert opt <= adv_e * (1 + 1e-9)
    assert opt <= k * e0 * (1 + 1e-9)


@given(st.floats(0, 5), st.floats(0, 1e-3), st.integers(1, 1000))
def test_group_geometric_below_textbook(e, d, k):
    _, dt = group.dp_tight(e, d, k)
    _, db = group.dp_textbook(e, d, k)
    assert dt <= db * (1 + 1e-12) + 1e-300
    assert 0 <= dt <= 1


@given(q_st, sigma_st, sigma_st, st.integers(1, 10000), log_delta_st)
def test_sgd_more_noise_less_epsilon(q, s1, s2, t, delta):
    assume(abs(s1 - s2) > 1e-3 * max(s1, s2))
    lo, hi = sorted((s1, s2))
    assert sgd.epsilon(q, hi, t, delta) <= sgd.epsilon(q, lo, t, delta) * (1 + 1e-9)


@given(q_st, sigma_st, st.integers(1, 5000), log_delta_st)
def test_sgd_more_steps_more_epsilon(q, s, t, delta):
    assert sgd.epsilon(q, s, t, delta) <= sgd.epsilon(q, s, 2 * t, delta) * (1 + 1e-9)


@given(q_st, sigma_st, st.floats(1.01, 64.0))
def test_subsampled_rdp_between_zero_and_full_gaussian(q, s, alpha):
    r = rdp.subsampled_gaussian(alpha, q, s)
    assert 0 <= r <= alpha / (2 * s * s) * (1 + 1e-9) + 1e-15


@given(st.lists(eps_st, min_size=2, max_size=6), log_delta_st)
def test_scalar_and_vector_calls_agree(epsilons, delta):
    vec = gaussian.sigma_analytic(np.array(epsilons), delta)
    for e, v in zip(epsilons, vec):
        assert gaussian.sigma_analytic(e, delta) == v


@given(mu_st, log_delta_st, log_delta_st)
def test_gdp_epsilon_decreases_with_delta(mu, d1, d2):
    assume(d1 != d2)
    lo, hi = sorted((d1, d2))
    assert gdp.epsilon(mu, hi) <= gdp.epsilon(mu, lo)


@given(q_st, q_st, sigma_st, st.integers(1, 2000), log_delta_st)
def test_sgd_more_sampling_more_epsilon(q1, q2, s, t, delta):
    assume(abs(q1 - q2) > 1e-3 * max(q1, q2))
    lo, hi = sorted((q1, q2))
    assert sgd.epsilon(lo, s, t, delta) <= sgd.epsilon(hi, s, t, delta) * (1 + 1e-6) + 1e-12


@given(st.floats(0.4, 20), st.integers(1, 5000), log_delta_st, log_delta_st)
def test_sgd_epsilon_decreases_with_delta(s, t, d1, d2):
    assume(d1 != d2)
    lo, hi = sorted((d1, d2))
    assert sgd.epsilon(0.01, s, t, hi) <= sgd.epsilon(0.01, s, t, lo) * (1 + 1e-9)


@given(st.floats(0, 3), st.floats(0, 1e-4), st.integers(1, 500), st.integers(1, 500))
def test_group_monotone_in_size(e, d, k1, k2):
    lo, hi = sorted((k1, k2))
    e1, d1 = group.dp_tight(e, d, lo)
    e2, d2 = group.dp_tight(e, d, hi)
    assert e1 <= e2 and d1 <= d2


@given(st.floats(1e-3, 1.0), st.floats(0, 1e-6), st.integers(1, 300), st.integers(1, 300))
def test_optimal_composition_monotone_in_times(e0, d0, k1, k2):
    lo, hi = sorted((k1, k2))
    dt = 1e-3
    assume(1 - (1 - d0) ** hi < dt)
    assert composition.optimal_homogeneous(e0, d0, lo, dt) <= composition.optimal_homogeneous(e0, d0, hi, dt) + 1e-9


@given(st.lists(st.tuples(st.floats(0.5, 50), st.integers(1, 1000)), min_size=1, max_size=4), log_delta_st)
def test_composed_objects_bound_ordering(specs, delta):
    from dpcalc.accounting import compose_parts, flatten, shares
    from dpcalc.model import Composed, Gaussian

    obj = Composed(tuple((Gaussian(s, 1.0), t) for s, t in specs))
    parts = flatten(obj)
    totals = {t.method: t.epsilon for t in compose_parts(parts, delta)}
    # Exact GDP is never above the zCDP and RDP bounds for Gaussians.
    assert totals["gdp"] <= totals["zcdp-rdp"] * (1 + 1e-9)
    assert totals["gdp"] <= totals["rdp"] * (1 + 1e-9)
    assert sum(shares(parts, delta)) == np.float64(1.0) or abs(sum(shares(parts, delta)) - 1) < 1e-9
