"""Exact means exact, upper means never below (issue 15, item 3).

Every closed form is compared with 50-digit (or finer) mpmath at the exact binary value of its inputs,
over the extreme box: ε and q down to 1e-17 and below, δ down to 1e-300, α down to 1e-300 and up to
1 − 1e-16, μ from 1e-300 to 1e3, k up to 1e6. Each printed value must be on its safe side — ε, δ,
σ, advantages, attack TPRs and upper bounds at or above the truth; trade-off β and the largest
admissible μ at or below it — and values labelled exact must be within a few ulps of the truth
(times the condition number of the question where an input passes through Φ⁻¹ or a root is sought:
``ulp_slack``). Upper bounds need only be at or above the truth (the tight ones are also checked to
be close).

The known failures of issue 15 are regression tests at the end (through the CLI's JSON).
"""

import json
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mpref import (
    gdp_delta,
    gdp_eps,
    gdp_mu,
    gdp_tpr,
    gdp_tradeoff,
    kov_eps,
    zcdp_tight,
)

from dpcalc.cli import cli
from dpcalc.core import (
    _fp,
    amplification,
    composition,
    fdp,
    gaussian,
    gdp,
    group,
    laplace,
    sgd,
    zcdp,
)

mp.mp.dps = 50
ULP = 2.0**-52
#: Tolerance for values labelled exact that come out of a long formula (ulps): the value is moved up by its
#: error bound (at most ~26 ulps, at the erfcx difference of δ_μ(ε)), and may have been that far below.
EXACT_ULPS = 48
#: Below the normal range an ulp is absolute.
TINY = 2.0**-1022


def _m(x):
    return mp.mpf(float(x))


def above(got, true, ulps, abs_=0.0):
    """got >= true, and got − true <= ulps·|true| (+ abs_)."""
    got, true = _m(got), mp.mpf(true)
    assert got >= true, f"unsafe: {mp.nstr(got, 20)} below the true {mp.nstr(true, 20)}"
    assert got - true <= ulps * ULP * abs(true) + abs_, (
        f"{mp.nstr(got, 20)} is {float((got - true) / true / ULP):.1f} ulps above {mp.nstr(true, 20)}"
    )


def below(got, true, ulps, abs_=0.0):
    """got <= true, and true − got <= ulps·|true| (+ abs_)."""
    got, true = _m(got), mp.mpf(true)
    assert got <= true, f"unsafe: {mp.nstr(got, 20)} above the true {mp.nstr(true, 20)}"
    assert true - got <= ulps * ULP * abs(true) + abs_, (
        f"{mp.nstr(got, 20)} is {float((true - got) / true / ULP):.1f} ulps below {mp.nstr(true, 20)}"
    )


def logu(lo, hi):
    """Log-uniform doubles in [10^lo, 10^hi]."""
    return st.floats(lo, hi).map(lambda e: float(10.0**e))


MU = st.one_of(logu(-300, 3), st.sampled_from([5.2e-16, 1e-8, 1.0, 8.0, 10.0, 40.0]))
ALPHA = st.one_of(
    logu(-300, -0.31),
    st.floats(1e-300, 1.0, exclude_max=True),
    logu(-16, -1).map(lambda x: 1.0 - x),
    st.sampled_from([1e-17, 1e-12, 1e-300, 0.5, 1.0 - 2.0**-53]),
)


# --------------------------------------------------------------------------- directed single operations


@settings(max_examples=300, deadline=None)
@given(a=logu(-300, 300), b=logu(-20, 20), c=st.one_of(st.just(0.0), logu(-300, 300)))
def test_single_operations_are_correctly_rounded_toward_their_side(a, b, c):
    fa, fb, fc = Fraction(a), Fraction(b), Fraction(c)
    for fn, true in (
        (_fp.mul_up, fa * fb),
        (_fp.div_up, fa / fb),
        (lambda x, y: _fp.add_up(x, -y), fa - fb),
    ):
        got = float(fn(a, b))
        if math.isfinite(got) and abs(true) > 2.0**-960:
            assert Fraction(got) >= true and Fraction(math.nextafter(got, -math.inf)) < true
    for fn, true in ((_fp.mul_down, fa * fb), (_fp.div_down, fa / fb)):
        got = float(fn(a, b))
        if math.isfinite(got) and abs(true) > 2.0**-960:
            assert Fraction(got) <= true and Fraction(math.nextafter(got, math.inf)) > true
    s = float(_fp.sqrt_up(a))
    assert Fraction(s) ** 2 >= fa
    if a > 2.0**-960:  # below, the residual underflows: one ulp up, unchecked (safe, maybe not tight)
        assert Fraction(math.nextafter(s, 0)) ** 2 < fa
    f = float(_fp.fma_up(a, b, c))
    if math.isfinite(f) and fa * fb > 2.0**-960 and fa * fb + fc < 2.0**1000:
        assert Fraction(f) >= fa * fb + fc and Fraction(math.nextafter(f, 0)) < fa * fb + fc


# --------------------------------------------------------------------------- μ-GDP: δ(ε), ε(δ), μ(ε, δ)


@settings(max_examples=400, deadline=None)
@given(mu=MU, t=st.floats(-5, 38), shrink=st.sampled_from([1.0, 1.0, 0.5, 0.0, 1e-10]))
@example(mu=5.2e-16, t=0.0, shrink=0.0)
@example(mu=1e-8, t=0.0, shrink=0.0)
@example(mu=1.275086891396372e-13, t=2.0, shrink=1.0)
@example(mu=15.41256008758456, t=21.6, shrink=1.0)
def test_gdp_delta_is_exact(mu, t, shrink):
    eps = max(mu * mu / 2 + t * mu, 0.0) * shrink
    got = gdp.delta(mu, eps)
    true = gdp_delta(mu, eps)
    if true >= 1e-300:
        above(got, true, EXACT_ULPS)
    else:
        assert _m(got) >= true  # below the CLI's floor: only never below
    lo, hi = gdp._log_delta_bounds(np.array(mu), np.array(eps))
    if true > 0:
        assert lo <= mp.log(true) <= hi


def _delta_prime(mu, eps):
    """dδ/dε = −e^ε Φ(−ε/μ − μ/2)."""
    m, e = _m(mu), mp.mpf(eps)
    return -mp.exp(e) * mp.ncdf(-e / m - m / 2)


@settings(max_examples=80, deadline=None)
@given(mu=logu(-12, 3), delta=st.one_of(logu(-300, -0.05), st.sampled_from([1e-300, 1e-5, 0.5])))
@example(mu=1.0, delta=1e-5)
@example(mu=1e-8, delta=1e-300)
def test_gdp_epsilon_is_exact_and_never_below(mu, delta):
    got = gdp.epsilon(mu, delta)
    true = gdp_eps(mu, delta)
    if true == 0:
        assert got == 0
        return
    # The checked δ carries a bound of ~26 ulps; through the root it moves ε by κ = δ/(ε|δ'|) times that.
    kappa = float(mp.mpf(delta) / (true * abs(_delta_prime(mu, true))))
    above(got, true, 8 + 64 * kappa)


@settings(max_examples=80, deadline=None)
@given(eps=logu(-10, 3), delta=st.one_of(logu(-300, -0.05), st.sampled_from([1e-300, 1e-5, 0.5])))
@example(eps=1.0, delta=1e-5)
def test_gdp_mu_for_dp_is_exact_and_never_above(eps, delta):
    got = gdp.mu_for_dp(eps, delta)
    true = gdp_mu(eps, delta)
    m = true
    a = m / 2 - mp.mpf(eps) / m
    kappa = float(mp.mpf(delta) / (m * mp.npdf(a)))  # ∂δ/∂μ = φ(μ/2 − ε/μ)
    below(got, true, 8 + 64 * kappa)
    # …and the analytic Gaussian σ = Δ/μ is above Δ/μ_true, within the same ulps.
    sigma = gaussian.sigma_analytic(eps, delta, 2.0)
    above(sigma, 2 / true, 10 + 64 * kappa)


# --------------------------------------------------------------------------- trade-off, attack, advantage


@settings(max_examples=400, deadline=None)
@given(mu=st.one_of(logu(-16, 2.5), st.just(0.0)), alpha=ALPHA)
@example(mu=10.0, alpha=1e-17)
@example(mu=10.0, alpha=1e-15)
@example(mu=8.0, alpha=1e-12)
def test_gdp_tradeoff_rounds_down_to_the_truth(mu, alpha):
    got = gdp.tradeoff(mu, alpha)
    true, kappa = gdp_tradeoff(mu, alpha)
    if true >= 1e-300:
        below(got, true, 24 * (1 + kappa))
    else:
        assert _m(got) <= true


@settings(max_examples=400, deadline=None)
@given(mu=st.one_of(logu(-16, 2.5), st.just(0.0)), alpha=ALPHA)
@example(mu=10.0, alpha=1e-17)
def test_gdp_attack_tpr_rounds_up_to_the_truth(mu, alpha):
    got = gdp.attack_tpr(mu, alpha)
    true, kappa = gdp_tpr(mu, alpha)
    if true >= 1e-300:
        above(got, true, 24 * (1 + kappa))
    else:
        assert _m(got) >= true


@settings(max_examples=300, deadline=None)
@given(mu=st.one_of(logu(-300, 3), st.just(0.0)))
def test_gdp_advantage_rounds_up(mu):
    got = gdp.advantage(mu)
    true = mp.erf(_m(mu) / (2 * mp.sqrt(2)))
    if mu == 0:
        assert got == 0
    elif true >= 1e-300:
        above(got, true, 8)


DP_EPS = st.one_of(logu(-17, 2.7), st.sampled_from([0.0, 1e-17, 0.1, 1.0, 700.0, 720.0]))
DP_DELTA = st.one_of(st.just(0.0), logu(-300, -0.1))


@settings(max_examples=400, deadline=None)
@given(eps=DP_EPS, delta=DP_DELTA, alpha=ALPHA)
@example(eps=0.1, delta=0.0, alpha=1e-12)
def test_dp_tradeoff_and_tpr(eps, delta, alpha):
    with mp.workdps(800):  # 1 − δ − e^ε α may cancel hundreds of digits
        e, d, a = _m(eps), _m(delta), _m(alpha)
        beta_true = max(mp.mpf(0), 1 - d - mp.exp(e) * a, mp.exp(-e) * (1 - d - a))
        tpr_true = min(mp.mpf(1), d + mp.exp(e) * a, -mp.expm1(-e) + mp.exp(-e) * (d + a))
    beta = fdp.dp_tradeoff(eps, delta, alpha)
    tpr = fdp.dp_attack_tpr(eps, delta, alpha)
    # β is a max of branches, each a few ulps from its value (plus ε's half ulp through e^ε, κ = ε·e^ε α/β).
    kappa_b = float(e * mp.exp(e) * a / beta_true) if beta_true > 0 else 0.0
    if beta_true > 1e-300:
        below(beta, beta_true, 8 + 4 * kappa_b, abs_=8 * ULP * (d + a))
    else:
        assert beta == 0 or _m(beta) <= beta_true
    if tpr_true > 1e-300:
        above(tpr, tpr_true, 8)
    else:
        assert _m(tpr) >= tpr_true


@settings(max_examples=300, deadline=None)
@given(eps=DP_EPS, delta=DP_DELTA)
def test_dp_advantage_rounds_up(eps, delta):
    e, d = _m(eps), _m(delta)
    true = (mp.expm1(e) + 2 * d) / (mp.exp(e) + 1)
    got = fdp.dp_advantage(eps, delta)
    if true == 0:
        assert got == 0
    elif true > 1e-300:
        above(got, true, 8)


# --------------------------------------------------------------------------- calibrate


@settings(max_examples=300, deadline=None)
@given(
    eps=st.floats(1e-300, 1.0, exclude_max=True),
    delta=st.one_of(logu(-300, -0.01), st.sampled_from([1e-300, 0.5])),
    sens=logu(-50, 50),
)
def test_classical_and_laplace_sigma_round_up(eps, delta, sens):
    e, d, s = _m(eps), _m(delta), _m(sens)
    true = s * mp.sqrt(2 * mp.log(mp.mpf(5) / 4 / d)) / e
    if true > 1.7976931348623157e308:
        assert gaussian.sigma_classical(eps, delta, sens) == math.inf
        return
    above(gaussian.sigma_classical(eps, delta, sens), true, 8)
    above(laplace.scale_for_epsilon(eps, sens), s / e, 1)  # correctly rounded up: exact quotients stay exact


def test_subnormal_alpha_is_refused():
    with pytest.raises(ValueError, match="alpha"):
        gdp.tradeoff(1.0, 1e-310)
    with pytest.raises(ValueError, match="fpr"):
        gdp.attack_tpr(1.0, 5e-324)
    r = CliRunner().invoke(cli, "convert gdp --mu 1 --to tradeoff --alpha 1e-310".split())
    assert r.exit_code == 2 and r.stderr.startswith("Error:") and r.stderr.count("\n") == 1
    assert "--alpha" in r.stderr


def test_exact_quotients_stay_exact():
    assert laplace.scale_for_epsilon(0.5, 2.0) == 4.0
    assert gaussian.sigma_for_mu(0.5, 2.0) == 4.0
    assert gaussian.sigma_for_rho(2.0, 4.0) == 2.0
    assert group.pure(0.5, 4) == 2.0
    assert composition.basic(0.25, 0.0, 4) == (1.0, 0.0)


@settings(max_examples=300, deadline=None)
@given(x=logu(-150, 150), sens=logu(-50, 50))
def test_sigma_for_mu_and_rho_round_up(x, sens):
    above(gaussian.sigma_for_mu(x, sens), _m(sens) / _m(x), 1)
    above(gaussian.sigma_for_rho(x, sens), _m(sens) / mp.sqrt(2 * _m(x)), 2)
    sigma = gaussian.sigma_for_mu(x, sens)
    above(gaussian.mu_of(sigma, sens), _m(sens) / _m(sigma), 1)
    above(gaussian.rho_of(sigma, sens), (_m(sens) / _m(sigma)) ** 2 / 2, 3)


# --------------------------------------------------------------------------- zCDP


@settings(max_examples=150, deadline=None)
@given(rho=logu(-12, 3), delta=st.one_of(logu(-300, -0.1), st.sampled_from([1e-300, 1e-5])))
@example(rho=0.5, delta=1e-5)
def test_zcdp_conversions_are_sound(rho, delta):
    r, d = _m(rho), _m(delta)
    simple = r + 2 * mp.sqrt(r * mp.log(1 / d))
    above(zcdp.epsilon_simple(rho, delta), simple, 8)
    tight = zcdp.epsilon_tight(rho, delta)
    best = max(min(zcdp_tight(rho, delta), simple), mp.mpf(0))  # ε is clipped at 0
    assert _m(tight) >= best  # every α gives a bound: nothing below the minimum over α
    assert _m(tight) - best <= 1e-9 * best + 1e-300
    above(zcdp.rho_from_pure(rho), r * r / 2, 2)


# --------------------------------------------------------------------------- compose


K = st.one_of(st.integers(1, 10**6), st.sampled_from([1, 2, 100, 10**6]))


@settings(max_examples=300, deadline=None)
@given(eps=DP_EPS, delta=DP_DELTA, k=K, dprime=logu(-300, -0.1))
def test_basic_and_advanced_composition_never_below(eps, delta, k, dprime):
    e, d, kk, dp_ = _m(eps), _m(delta), mp.mpf(k), _m(dprime)
    be, bd = composition.basic(eps, delta, k)
    above(be, kk * e, 1, abs_=mp.mpf(2) ** -1074)
    assert _m(bd) >= min(kk * d, 1)
    ae, ad = composition.advanced(eps, delta, k, dprime)
    true = mp.sqrt(2 * kk * mp.log(1 / dp_)) * e + kk * e * mp.expm1(e)
    if math.isfinite(ae) and true > 1e-300:
        above(ae, true, 8)
    assert _m(ad) >= min(kk * d + dp_, 1)


@settings(max_examples=25, deadline=None)
@given(
    e0=logu(-2, 0.5),
    d0=st.one_of(st.just(0.0), logu(-16, -6)),
    k=st.integers(1, 300),
    dprime=logu(-31, -2),
)
@example(e0=0.3, d0=1e-16, k=100, dprime=1e-31)
@example(e0=0.3, d0=1e-12, k=200, dprime=1e-6)
def test_optimal_composition_is_a_tight_upper_bound(e0, d0, k, dprime):
    dt = float(_fp.fma_up(k, d0, dprime))  # the total δ the CLI prints
    got = composition.optimal_homogeneous(e0, d0, k, dt)
    true = kov_eps(e0, d0, k, dt)
    assert _m(got) >= true
    assert _m(got) - true <= 1e-12 * true + 1e-300


def test_optimal_composition_at_large_k():
    # k = 4,000 against mpmath (2,000 terms per evaluation); k = 10⁶ stays quick and below advanced.
    dt = float(_fp.fma_up(4000, 1e-10, 1e-6))
    got = composition.optimal_homogeneous(0.01, 1e-10, 4000, dt)
    true = kov_eps(0.01, 1e-10, 4000, dt)
    assert true <= _m(got) <= true * (1 + mp.mpf(1e-12))
    big = composition.optimal_homogeneous(0.01, 1e-10, 10**6, float(_fp.fma_up(10**6, 1e-10, 1e-6)))
    adv, _ = composition.advanced(0.01, 1e-10, 10**6, 1e-6)
    assert 0 < big < adv


@settings(max_examples=200, deadline=None)
@given(mu=logu(-150, 2), k=K, sens=logu(-5, 5))
def test_gaussian_composition_mu_rounds_up(mu, k, sens):
    above(gdp.homogeneous_mu(mu, k), mp.sqrt(k) * _m(mu), 3)
    above(gdp.compose_mu([mu, mu / 3]), mp.sqrt(_m(mu) ** 2 + _m(mu / 3) ** 2), 4)
    above(zcdp.compose([mu, mu], [k, 1]), _m(mu) * k + _m(mu), 2)


# --------------------------------------------------------------------------- amplify and group


@settings(max_examples=400, deadline=None)
@given(eps=st.one_of(DP_EPS, st.sampled_from([1e-8, 710.0, 1000.0])), delta=DP_DELTA, q=logu(-300, 0))
@example(eps=1e-17, delta=0.0, q=0.5)
@example(eps=1e-8, delta=0.0, q=0.01)
@example(eps=1.0, delta=1e-300, q=1e-12)
def test_amplification_never_below(eps, delta, q):
    e, d, qq = _m(eps), _m(delta), _m(q)
    got_e, got_d = amplification.subsample(eps, delta, q)
    true = mp.log1p(qq * mp.expm1(e))
    if eps == 0:
        assert got_e == 0
    elif true >= TINY:
        # (Results below 2^53 TINY may have passed through the subnormal range: widen_up adds 16 subnormal
        # ulps there — q = 3.16e-300, ε = 1e-8 gives 3.16e-308, 15 ulps above.)
        above(got_e, true, 8, abs_=16 * mp.mpf(2) ** -1074)
    else:
        assert _m(got_e) >= true
    # qδ is correctly rounded up (one ulp more where its error term would be subnormal).
    assert _m(got_d) >= qq * d and (qq * d == 0 or qq * d < TINY or _m(got_d) - qq * d <= 2 * ULP * qq * d)


@settings(max_examples=300, deadline=None)
@given(eps=st.one_of(logu(-17, 2), st.just(0.0)), delta=DP_DELTA, k=st.integers(1, 10**6))
def test_group_privacy_never_below(eps, delta, k):
    e, d, kk = _m(eps), _m(delta), mp.mpf(k)
    ek, dk = group.dp_tight(eps, delta, k)
    above(ek, kk * e, 1, abs_=mp.mpf(2) ** -1074)
    # (k = 1 is δ itself: the 50-digit quotient of expm1s can land a hair above it.)
    true = d * kk if eps == 0 or k == 1 else d * mp.expm1(kk * e) / mp.expm1(e)
    if true >= 1:
        assert dk == 1.0
    elif true >= 1e-300:
        above(dk, true, 16)
    else:
        assert _m(dk) >= true
    _, db = group.dp_textbook(eps, delta, k)
    true_b = kk * mp.exp((kk - 1) * e) * d
    if true_b >= 1:
        assert db == 1.0
    elif true_b >= 1e-300:
        above(db, true_b, 8)
    above(group.zcdp(eps, k), kk * kk * e, 2, abs_=mp.mpf(2) ** -1074)
    above(group.gdp(eps, k), kk * e, 1, abs_=mp.mpf(2) ** -1074)


@settings(max_examples=200, deadline=None)
@given(scale=logu(-3, 3), eps=st.one_of(logu(-17, 3), st.just(0.0)), delta=st.one_of(st.just(0.0), logu(-300, -0.1)))
def test_laplace_profile_never_below(scale, eps, delta):
    e0 = 1 / _m(scale)
    d_true = max(mp.mpf(0), 1 - mp.exp((_m(eps) - e0) / 2))
    got = laplace.delta_at(scale, eps)
    if d_true > 1e-300:
        above(got, d_true, 8 + float(e0 / d_true))  # ε₀ − ε may cancel: κ = ε₀/(2δ) at most
    else:
        assert _m(got) >= d_true
    e_true = max(mp.mpf(0), e0 + 2 * mp.log1p(-_m(delta)))
    assert _m(laplace.epsilon_at(scale, delta)) >= e_true


# --------------------------------------------------------------------------- step counts


@settings(max_examples=300, deadline=None)
@given(digits=st.integers(1, 10**12), exp10=st.integers(-12, 2), n=st.integers(1, 10**7), frac=st.floats(0, 1))
@example(digits=10000000005, exp10=-10, n=1000, frac=1.0)
@example(digits=3, exp10=0, n=1000, frac=1.0)
@example(digits=1, exp10=-1, n=1000, frac=0.1)
def test_step_counts_are_exact_ceilings(digits, exp10, n, frac):
    b = max(1, min(n, round(frac * n)))  # a batch of at most N
    typed = Fraction(digits) * Fraction(10) ** exp10
    epochs = float(typed)
    if Fraction(repr(epochs)) != typed:  # more digits than a double holds: not a value a user can type
        return

    def same_or_above(got, whole):  # above 2⁵³ the nearest double at or above the count
        assert got >= whole and (whole > 2**53 or got == whole)

    same_or_above(sgd.steps_for_epochs(epochs, n, b), math.ceil(typed * n / b))
    q = float(Fraction(b, n))
    same_or_above(sgd.steps_for_epochs_at_rate(epochs, q), math.ceil(typed / Fraction(repr(q))))
    t = int(math.ceil(typed * n / b))
    if t > 2**53:
        return
    whole, frac = sgd.whole_epochs(t, dataset_size=n, batch_size=b)
    assert whole == math.floor(Fraction(t * b, n)) and Fraction(frac) <= Fraction(t * b, n)


# --------------------------------------------------------------------------- vectorised


def test_a_grid_of_10000_points_is_one_call():
    rng = np.random.default_rng(0)
    mu = 10 ** rng.uniform(-8, 2, 10000)
    eps = mu * mu / 2 + rng.uniform(-3, 20, 10000) * mu
    eps = np.maximum(eps, 0.0)
    d = gdp.delta(mu, eps)
    assert d.shape == (10000,)
    for i in range(0, 10000, 997):
        assert d[i] == gdp.delta(float(mu[i]), float(eps[i]))
    beta = gdp.tradeoff(mu, rng.uniform(0, 1, 10000))
    assert beta.shape == (10000,) and np.all((beta >= 0) & (beta <= 1))
    e = gdp.epsilon(mu[:2000], 1e-6)
    assert np.all(np.isfinite(e))


# --------------------------------------------------------------------------- the known failures, through the CLI


def _rows(args):
    r = CliRunner().invoke(cli, args.split() + ["--json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)["rows"]


def test_tradeoff_at_tiny_alpha_is_not_one():
    # β was 1 (exact) at α = 1e-17: 1 − α was formed. Truth Φ(Φ⁻¹(1 − α) − 10) = 0.0660…
    (row,) = _rows("convert gdp --mu 10 --to tradeoff --alpha 1e-17")
    true, _ = gdp_tradeoff(10.0, 1e-17)
    below(row["beta"], true, 24)
    (row,) = _rows("convert gdp --mu 8 --to tradeoff --alpha 1e-12")
    true, _ = gdp_tradeoff(8.0, 1e-12)
    below(row["beta"], true, 24)
    assert row["bound"] == "exact"


def test_delta_of_a_tiny_mu_at_zero():
    for mu in (5.2e-16, 1e-8):
        (row,) = _rows(f"convert gdp --mu {mu} --epsilon 0")
        above(row["delta"], mp.erf(_m(mu) / (2 * mp.sqrt(2))), EXACT_ULPS)
        assert row["bound"] == "exact"


def test_amplification_of_a_tiny_epsilon():
    for eps, q in ((1e-17, 0.5), (1e-8, 0.01)):
        for row in _rows(f"amplify dp --epsilon {eps} --rate {q}"):
            above(row["epsilon"], mp.log1p(_m(q) * mp.expm1(_m(eps))), 8)


def test_subnormal_amplified_delta_is_shown_at_its_floor():
    rows = _rows("amplify dp --epsilon 1 --delta 1e-300 --rate 1e-12")
    assert {r["delta"] for r in rows} == {1e-300} and {r["bound"] for r in rows} == {"upper"}


def test_optimal_composition_never_below():
    for args, (e0, d0, k) in (
        ("--epsilon 0.3 --delta 1e-16 --times 100 --delta-prime 1e-31", (0.3, 1e-16, 100)),
        ("--epsilon 0.3 --delta 1e-12 --times 200", (0.3, 1e-12, 200)),
    ):
        (row,) = [r for r in _rows("compose dp " + args) if r["method"] == "optimal-kov"]
        assert _m(row["delta"]) >= mp.mpf(k) * _m(d0)  # the printed total δ is never below kδ + δ′…
        true = kov_eps(e0, d0, k, row["delta"])  # …and ε is the optimum at that δ, from above
        assert true <= _m(row["epsilon"]) <= true * (1 + mp.mpf(1e-12))


def test_attack_tpr_at_tiny_fpr():
    (row,) = _rows("convert dp --epsilon 0.1 --delta 0 --to attack --fpr 1e-12")
    above(row["tpr"], mp.exp(_m(0.1)) * _m(1e-12), 8)


def test_step_count_is_never_rounded_down():
    (row,) = _rows(
        "plan-sgd --dataset-size 1000 --batch-size 1000 --epochs 1.0000000005 --noise-multiplier 1 --delta 1e-5"
    )
    assert row["steps"] == 2
    (row,) = _rows("plan-sgd --dataset-size 1000 --batch-size 1000 --epochs 3 --noise-multiplier 1 --delta 1e-5")
    assert row["steps"] == 3
    (row,) = _rows("plan-sgd --dataset-size 1000 --batch-size 100 --epochs 0.1 --noise-multiplier 1 --delta 1e-5")
    assert row["steps"] == 1
    (row,) = _rows("plan-sgd --dataset-size 1000 --rate 0.1 --epochs 0.3 --noise-multiplier 1 --delta 1e-5")
    assert row["steps"] == 3


def test_table_rounds_each_column_toward_its_safe_side():
    from dpcalc.render import format_number

    assert format_number(0.16714316925038086, "down") == "0.167143"
    assert format_number(0.16714316925038086, "up") == "0.167144"
    r = CliRunner().invoke(cli, ["convert", "gdp", "--mu", "8", "--to", "tradeoff", "--alpha", "1e-12"])
    assert "0.167143 " in r.stdout and "0.167144" not in r.stdout
