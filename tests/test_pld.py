"""PLD engine: certified intervals contain closed forms and an independent accountant."""

import numpy as np
import pytest
from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent
from dp_accounting.pld import pld_privacy_accountant as P
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpcalc.core import composition, gdp, laplace, pld, sgd


@pytest.mark.parametrize("mu, T, delta", [(0.1, 100, 1e-5), (0.5, 10, 1e-6), (1.0, 1, 1e-10), (0.02, 2500, 1e-3)])
def test_gaussian_composition_interval_contains_exact(mu, T, delta):
    ans = pld.epsilon([(pld.gaussian(mu), T)], delta)
    exact = gdp.epsilon(mu * np.sqrt(T), delta)
    assert ans.lower[0] <= exact <= ans.upper[0]
    assert ans.met[0]
    assert ans.upper[0] - ans.lower[0] <= max(1e-3 * ans.upper[0], 1e-3) * (1 + 1e-9)


@pytest.mark.parametrize("eps0, delta", [(0.5, 1e-6), (2.0, 1e-3), (1.0, 0.05)])
def test_single_laplace_interval_contains_exact(eps0, delta):
    ans = pld.epsilon([(pld.laplace(eps0), 1)], delta)
    exact = laplace.epsilon_at(1.0 / eps0, delta)
    assert ans.lower[0] - 1e-9 <= exact <= ans.upper[0] + 1e-9


@pytest.mark.parametrize("e0, d0, k, dt", [(0.1, 0.0, 100, 1e-5), (0.5, 1e-7, 30, 1e-4), (0.05, 1e-8, 400, 1e-5)])
def test_generic_dp_composition_matches_optimal_kov(e0, d0, k, dt):
    # The k-fold composition of the (ε, δ) worst-case pair is exactly the KOV optimal composition.
    ans = pld.epsilon([(pld.dp(e0, d0), k)], dt)
    kov = composition.optimal_homogeneous(e0, d0, k, dt)
    assert ans.lower[0] - 1e-9 <= kov <= ans.upper[0] + 1e-9


def _dpa(q, s, t, d, h=1e-4):
    acc = P.PLDAccountant(value_discretization_interval=h)
    acc.compose(PoissonSampledDpEvent(q, GaussianDpEvent(s)), t)
    return acc.get_epsilon(d)


DPSGD = [
    (0.01, 1.1, 10000, 1e-5),
    (0.01, 4.0, 10000, 1e-5),
    (256 / 60000, 1.1, 14062, 1e-5),
    (0.1, 2.0, 1000, 1e-5),
    (0.01, 0.6, 1000, 1e-5),
    (0.5, 10.0, 100, 1e-10),
    (1e-4, 0.5, 1, 1e-3),
    (0.05, 1.0, 200, 1e-8),
]


@pytest.mark.parametrize("q, s, t, d", DPSGD)
def test_dpsgd_interval_contains_dp_accounting_and_beats_rdp(q, s, t, d):
    lo, up = sgd.pld_interval(q, s, t, d)
    theirs = _dpa(q, s, t, d)
    # dp-accounting's pessimistic estimate is an upper bound; the true ε is >= our lower bound,
    # and their discretisation error is below 0.2 % here.
    assert lo[0] <= theirs * (1 + 1e-9)
    assert up[0] == pytest.approx(theirs, rel=2e-3)
    # The default upper end is computed on a grid finer than their 1e-4 (pld.UPPER_H): no looser.
    assert up[0] <= theirs
    assert up[0] <= sgd.epsilon(q, s, t, d, "rdp") * (1 + 1e-9)
    assert lo[0] <= up[0]


def test_published_tight_values():
    # FORMULAS.md: Abadi et al. setting, tight ≈ 0.947; MNIST tutorial, tight ≈ 2.38;
    # q=0.01, σ=0.6, T=1000: tight ≈ 7.43 (the CLT says 5.56).
    lo, up = sgd.pld_interval(0.01, 4.0, 10000, 1e-5)
    assert lo[0] <= 0.9470 <= up[0] + 1e-3
    lo, up = sgd.pld_interval(256 / 60000, 1.1, 14063, 1e-5)
    assert up[0] == pytest.approx(2.38, abs=0.01)
    lo, up = sgd.pld_interval(0.01, 0.6, 1000, 1e-5)
    assert up[0] == pytest.approx(7.43, abs=0.01)


def test_heterogeneous_gaussians_match_exact():
    mechs = [(pld.gaussian(0.3), 10), (pld.gaussian(0.2), 40)]
    exact = gdp.epsilon(np.sqrt(10 * 0.09 + 40 * 0.04), 1e-6)
    ans = pld.epsilon(mechs, 1e-6)
    assert ans.lower[0] <= exact <= ans.upper[0]


def test_delta_interval_brackets_exact():
    iv = pld.delta_interval([(pld.gaussian(1.0), 4)], [1.0, 3.0, 6.0], 1e-3)
    exact = gdp.delta(2.0, np.array([1.0, 3.0, 6.0]))
    assert np.all(iv.lower <= exact * (1 + 1e-9)) and np.all(exact <= iv.upper * (1 + 1e-9))


def test_self_composition_of_a_million_steps():
    # One FFT power, not a million convolutions.
    lo, up = sgd.pld_interval(4e-3, 3.0, 1_000_000, 1e-6)
    rdp = sgd.epsilon(4e-3, 3.0, 1_000_000, 1e-6)
    assert 0 < lo[0] <= up[0] <= rdp
    # At this size the lower bound may stop at the grid cap before the 0.1 % target.
    assert up[0] - lo[0] <= 5e-3 * up[0]


def test_declines_tiny_delta_and_huge_grids():
    assert np.isnan(sgd.pld_interval(0.01, 1.0, 100, 1e-300)[1][0])
    with pytest.raises(MemoryError):
        pld._node_edges(pld.laplace(1e5)[0], 1e-3, 1e-30)


def test_subsampled_dp_pld_not_above_amplified_kov():
    # Subsampled (ε, δ): PLD of both directions vs amplification then optimal composition (both sound).
    from dpcalc.core.amplification import subsample

    e1, d1 = subsample(1.0, 1e-7, 0.1)
    kov = composition.optimal_homogeneous(e1, d1, 100, 1e-4)
    ans = pld.epsilon([(pld.subsampled_dp(1.0, 1e-7, 0.1), 100)], 1e-4)
    assert ans.upper[0] <= kov * (1 + 1e-6)


# -- the lower bound's give-back (lower_shift) must never push it above the truth ----------------------


@pytest.mark.parametrize("mu", [0.005, 0.02, 0.1])
@pytest.mark.parametrize("T", [100, 10_000, 200_000])
@pytest.mark.parametrize("h", [1e-3, 2.5e-4])
def test_lower_bound_with_give_back_stays_below_exact(mu, T, h):
    # Many narrow steps on a coarse grid: the rounding moves add up to far more than the interval
    # width, so almost all of the lower bound's accuracy comes from the give-back. It must stay sound.
    if mu * mu * T > 400:
        pytest.skip("ε far beyond the interesting range")
    mechs = [(pld.gaussian(mu), T)]
    deltas = np.array([1e-3, 1e-6, 1e-10])
    exact = np.array([gdp.epsilon(mu * np.sqrt(T), d) for d in deltas])
    lo = pld._eps_one(mechs, deltas, h, "lower")
    up = pld._eps_one(mechs, deltas, h, "upper")
    assert np.all(lo <= exact + 1e-12)
    assert np.all(exact <= up + 1e-12)


def test_give_back_is_what_makes_coarse_lower_bounds_tight():
    # Without it the lower bound at h = 1e-3 for 10^5 narrow steps is far off (moves add up).
    mechs = [(pld.subsampled_gaussian(0.001, 0.8), 100_000)]
    cp = pld.compose([(pld.discretise_lower(mechs[0][0][0], 1e-3, times=100_000), 100_000)], lam=3.87)
    plain = pld.epsilon_at(cp, [1e-6], -1.0)[0]
    s = pld.lower_shift(cp, 1e-10)
    assert s > 1.0  # a large, certified give-back
    with_shift = pld._eps_one(mechs, np.array([1e-6]), 1e-3, "lower")[0]
    assert with_shift > plain + 1.0
    assert with_shift <= _dpa(0.001, 0.8, 100_000, 1e-6)


@pytest.mark.parametrize(
    "q, s, t, d",
    [(1e-4, 0.5, 1_000_000, 1e-6), (0.5, 0.8, 10, 1e-3), (0.02, 10.0, 50_000, 1e-10), (0.001, 2.0, 300_000, 1e-8)],
)
def test_dpsgd_extremes_interval_contains_dp_accounting(q, s, t, d):
    lo, up = sgd.pld_interval(q, s, t, d)
    theirs = _dpa(q, s, t, d)
    assert lo[0] <= theirs * (1 + 1e-9)
    assert up[0] <= theirs
    assert up[0] <= sgd.epsilon(q, s, t, d, "rdp") * (1 + 1e-9)
    assert up[0] == pytest.approx(theirs, rel=5e-3)


# --- Gaussian sampled without replacement, substitution neighbours: C_q(G_{1/σ}) -----------------


def _hockey(direction, eps):
    _, _, sp, sq = direction.cdf(np.asarray(eps, float))
    return sp - np.exp(eps) * sq


@pytest.mark.parametrize("q, s, d", [(0.01, 1.1, 1e-5), (0.1, 2.0, 1e-5), (0.5, 0.8, 1e-6), (0.3, 0.5, 1e-3)])
def test_wor_single_step_is_the_max_of_both_directions(q, s, d):
    # One step of C_q(f) has δ(ε) = max(δ_remove, δ_add): the interval must contain that exact ε.
    from scipy import optimize

    remove, add = pld.subsampled_gaussian(q, s)
    exact = optimize.brentq(lambda e: max(_hockey(remove, e), _hockey(add, e)) - d, 0.0, 60.0, xtol=1e-13, rtol=1e-14)
    ans = pld.epsilon([(pld.sampled_wor_gaussian(q, s), 1)], d)
    assert ans.lower[0] - 1e-9 <= exact <= ans.upper[0] + 1e-9
    assert ans.met[0]


def _hull_rdp_epsilon(q, s, t, d):
    """ε by RDP of the symmetrised hull pair, by quadrature — independent of the PLD code.

    With remove dominating for ε >= 0, the hull's loss is L_r(x) under P_r for x > 1/2, its mirror
    −L_r(x) with P-mass Q_r(dx) for x > 1/2, and 0 otherwise. So E_P[e^{(α−1)L}] is
    ∫_{x>1/2} φ_σ(x)(e^{αL_r} + e^{(1−α)L_r}) dx + 1 − P_r[x > 1/2] − Q_r[x > 1/2].
    """
    from scipy import special, stats

    best = np.inf
    for alpha in np.concatenate([np.linspace(1.5, 12, 43), np.arange(13, 80, 1.0), [96, 128, 192, 256]]):
        x = np.linspace(0.5, 0.5 + alpha + 40 * s, 400_001)
        L = np.log1p(q * np.expm1((2 * x - 1) / (2 * s * s)))
        logphi = stats.norm.logpdf(x, scale=s)
        terms = np.logaddexp(logphi + alpha * L, logphi + (1 - alpha) * L)
        dx = x[1] - x[0]
        log_int = special.logsumexp(terms, b=np.r_[0.5, np.ones(x.size - 2), 0.5] * dx)
        a = 0.5 / s
        rest = 1 - ((1 - q) * special.ndtr(-a) + q * special.ndtr(a)) - special.ndtr(-a)
        d_alpha = np.logaddexp(log_int, np.log(rest)) / (alpha - 1)
        eps = t * d_alpha + np.log((alpha - 1) / alpha) - (np.log(d) + np.log(alpha)) / (alpha - 1)
        best = min(best, eps)
    return best


@pytest.mark.parametrize("q, s, t, d", [(0.01, 1.1, 10000, 1e-5), (0.1, 2.0, 1000, 1e-5), (0.05, 0.8, 300, 1e-8)])
def test_wor_composition_below_the_hulls_rdp_and_above_poisson(q, s, t, d):
    remove, add = pld.subsampled_gaussian(q, s)
    eps_grid = np.linspace(0.0, 30.0, 3001)
    assert np.all(_hockey(remove, eps_grid) >= _hockey(add, eps_grid) - 1e-15)  # premise of the quadrature
    lo, up = sgd.pld_interval(q, s, t, d, "without-replacement")
    rdp = _hull_rdp_epsilon(q, s, t, d)
    assert lo[0] <= up[0] <= rdp * (1 + 1e-9)
    assert up[0] - lo[0] <= max(1e-3 * up[0], 1e-3) * (1 + 1e-9)
    # The hull is less private than either Poisson direction: composing those separately would under-report.
    p_lo, p_up = sgd.pld_interval(q, s, t, d)
    assert lo[0] > p_up[0]


def test_wor_full_batch_is_the_plain_gaussian():
    ans = pld.epsilon([(pld.sampled_wor_gaussian(1.0, 2.0), 50)], 1e-6)
    exact = gdp.epsilon(np.sqrt(50) / 2.0, 1e-6)
    assert ans.lower[0] <= exact <= ans.upper[0]


# --- floating-point round-off of the FFT composition, against extended precision -----------------


def _compose_longdouble(parts, cp_n, k_lo_start, lam):
    """The same tilted composition as pld.compose, in numpy's extended precision."""
    from scipy import fft as sfft

    spec = None
    for d, t in parts:
        idx = (d.k0 + np.arange(d.p.size)) % cp_n
        p = d.p.astype(np.longdouble)
        with np.errstate(divide="ignore", under="ignore"):
            lw = np.log(p) + np.longdouble(lam) * d.losses().astype(np.longdouble)
        w = np.exp(lw - lw.max())
        w = w / w.sum()
        x = np.zeros(cp_n, dtype=np.longdouble)
        np.add.at(x, idx, w)
        f = sfft.rfft(x) ** t
        spec = f if spec is None else spec * f
    out = sfft.irfft(spec, cp_n)
    return np.maximum(out[(k_lo_start + np.arange(cp_n)) % cp_n], 0)


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(float).eps, reason="no extended precision here")
@pytest.mark.parametrize(
    "mechs, h",
    [
        ([(pld.subsampled_gaussian(0.01, 1.1), 10000)], 5e-4),
        ([(pld.gaussian(0.1), 1000)], 2.5e-4),
        ([(pld.sampled_wor_gaussian(0.1, 2.0), 1000)], 1e-4),
        ([(pld.subsampled_gaussian(0.001, 0.8), 100000)], 1.25e-4),
        ([(pld.subsampled_gaussian(0.05, 1.0), 300), (pld.laplace(0.3), 20)], 5e-4),
    ],
)
def test_roundoff_bound_covers_measured_fft_error(mechs, h):
    (_, parts), *_ = pld._discretised(mechs, h, "upper", 1e-20, dirs=[0])
    lam, _ = pld.choose_tilt(parts, np.log(1e-6))
    cp = pld.compose(parts, lam=lam, eta=1e-15)
    exact = _compose_longdouble(parts, cp.p.size, cp.k0 - int(np.floor(sum(t * d.c for d, t in parts))), lam)
    err = float(np.sqrt(np.sum((cp.p.astype(np.longdouble) - exact) ** 2)))
    assert err <= cp.roundoff
    assert err > 0  # the comparison sees float64 noise (else it would prove nothing)


# --- Laplace noise under subsampling ------------------------------------------------------------


def _hockey_quad(p, q, eps):
    from scipy import integrate, optimize

    def f(x):
        return max(p(x) - np.exp(eps) * q(x), 0.0)

    # Split at 0, 1 (the kinks of the densities) and where p = e^ε q in between (the kink of f).
    cuts = [0.0, 1.0]
    g = lambda x: np.log(p(x)) - np.log(q(x)) - eps  # noqa: E731 - monotone on (0, 1)
    if g(1e-12) * g(1 - 1e-12) < 0:
        cuts.insert(1, optimize.brentq(g, 1e-12, 1 - 1e-12, xtol=1e-15))
    pieces = zip([-np.inf] + cuts, cuts + [np.inf])
    return sum(integrate.quad(f, a, b, limit=200, epsabs=1e-18, epsrel=1e-13)[0] for a, b in pieces)


@pytest.mark.parametrize("eps0, q, d", [(1.0, 0.01, 1e-5), (2.0, 0.1, 1e-3), (0.5, 0.3, 1e-5)])
def test_subsampled_laplace_single_step_matches_quadrature(eps0, q, d):
    # Densities in x, integrated directly: independent of the loss-space algebra in pld.py.
    from scipy import optimize

    b = 1.0 / eps0

    def lap(x, mu):
        return np.exp(-abs(x - mu) / b) / (2 * b)

    def mix(x):
        return (1 - q) * lap(x, 0.0) + q * lap(x, 1.0)

    def base(x):
        return lap(x, 0.0)

    worst = 0.0
    for p_, q_ in ((mix, base), (base, mix)):
        if _hockey_quad(p_, q_, 0.0) > d:
            worst = max(worst, optimize.brentq(lambda e: _hockey_quad(p_, q_, e) - d, 0.0, 20.0, xtol=1e-12))
    for mech in (pld.subsampled_laplace(eps0, q), pld.sampled_wor_laplace(eps0, q)):
        # One step: Poisson's larger direction and the without-replacement hull have the same δ(ε).
        ans = pld.epsilon([(mech, 1)], d)
        assert ans.lower[0] - 1e-9 <= worst <= ans.upper[0] + 1e-9


@pytest.mark.parametrize("eps0, q, t", [(1.0, 0.05, 400), (2.0, 0.1, 1000)])
def test_subsampled_laplace_composition_below_kov_and_wor_above_poisson(eps0, q, t):
    amplified = float(np.log1p(q * np.expm1(eps0)))  # the subsampled step is ε'-DP
    kov = composition.optimal_homogeneous(amplified, 0.0, t, 1e-5)
    p = pld.epsilon([(pld.subsampled_laplace(eps0, q), t)], 1e-5)
    w = pld.epsilon([(pld.sampled_wor_laplace(eps0, q), t)], 1e-5)
    assert p.lower[0] <= p.upper[0] < kov  # the worst case of an ε'-DP step is far from Laplace's
    assert w.lower[0] <= w.upper[0] <= composition.optimal_homogeneous(amplified, 0.0, t, 1e-5) * (1 + 1e-9)
    assert w.lower[0] > p.upper[0]


def test_laplace_with_every_record_sampled_is_plain_laplace():
    a = pld.epsilon([(pld.subsampled_laplace(0.3, 1.0), 50)], 1e-6)
    b = pld.epsilon([(pld.laplace(0.3), 50)], 1e-6)
    assert a.upper[0] == b.upper[0] and a.lower[0] == b.lower[0]


# --- properties over random DP-SGD settings -----------------------------------------------------


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    q=st.floats(1e-3, 0.5),
    sigma=st.floats(0.6, 8.0),
    t=st.integers(1, 300),
    log_delta=st.integers(-10, -3),
)
def test_pld_interval_properties(q, sigma, t, log_delta):
    from dp_accounting.pld import privacy_loss_distribution as pldlib

    d = 10.0**log_delta
    lo, up = sgd.pld_interval(q, sigma, t, d)
    assume(np.isfinite(up[0]))
    assert lo[0] <= up[0]
    assert up[0] - lo[0] <= max(1e-3 * up[0], 1e-3) * (1 + 1e-9)
    assert up[0] <= sgd.epsilon(q, sigma, t, d, "rdp") * (1 + 1e-9)  # tight is never above RDP
    # dp-accounting's optimistic estimate (losses rounded down, by at most T·h in all) is an
    # independent certified lower bound on the true ε: our upper end can never be below it.
    h = min(max(0.03 / t, 1e-4), 2e-3)
    opt = pldlib.from_gaussian_mechanism(
        sigma, pessimistic_estimate=False, value_discretization_interval=h, sampling_prob=q, use_connect_dots=False
    )
    assert up[0] >= opt.self_compose(t).get_epsilon_for_delta(d) - 1e-12


def test_an_epsilon_curve_over_delta_comes_from_one_composition_per_tilt():
    deltas = np.array([1e-14, 1e-10, 1e-7, 1e-5, 1e-3])
    lo, up = sgd.pld_interval(0.01, 1.1, 2000, deltas)
    assert np.isnan(lo[0]) and np.isnan(up[0])  # below the engine's δ range; the others still answer
    assert np.all(np.diff(up[1:]) < 0) and np.all(lo[1:] <= up[1:])
    assert np.all(up[1:] - lo[1:] <= np.maximum(1e-3 * up[1:], 1e-3) * (1 + 1e-9))
    for k in range(1, deltas.size):
        one_lo, one_up = sgd.pld_interval(0.01, 1.1, 2000, deltas[k])
        # Both are certified intervals for the same ε: they must overlap.
        assert lo[k] <= one_up[0] and one_lo[0] <= up[k]


def test_a_curve_that_fails_as_a_whole_is_answered_delta_by_delta(monkeypatch):
    real = pld.epsilon

    def only_one_delta(mechs, delta, **kw):
        if np.size(delta) > 1:
            raise MemoryError("pretend the smallest δ needs too large a grid")
        return real(mechs, delta, **kw)

    monkeypatch.setattr(pld, "epsilon", only_one_delta)
    lo, up = sgd.pld_interval(0.01, 1.1, 1000, [1e-8, 1e-5])
    alone = [sgd.pld_interval(0.01, 1.1, 1000, d) for d in (1e-8, 1e-5)]
    assert np.all(np.isfinite(up)) and list(up) == [a[1][0] for a in alone]


# --- the engine's shortcuts: each one sound on its own ------------------------------------------


def _delta_of(disc, eps):
    """δ(ε) of a discrete PLD, summed directly."""
    ell, p = disc.losses(), disc.p
    return np.array([np.sum(p[ell > e] * -np.expm1(e - ell[ell > e])) + disc.p_inf for e in eps])


@pytest.mark.parametrize("direction", [0, 1])
def test_sparse_tail_nodes_stay_above_the_dense_connect_the_dots_and_the_truth(direction, monkeypatch):
    d = pld.subsampled_gaussian(0.05, 0.9)[direction]
    h = 1e-3
    monkeypatch.setattr(pld, "SPARSE_MASS", 0.0)
    dense = pld.discretise_upper(d, h, 1e-16)
    monkeypatch.setattr(pld, "SPARSE_MASS", 1e-5)  # far more than the default leaves coarse
    sparse = pld.discretise_upper(d, h, 1e-16)
    assert np.count_nonzero(sparse.p) < 0.6 * np.count_nonzero(dense.p)  # the coarse nodes are used
    # Same P- and Q-mass (connect the dots keeps both, on any nodes).
    for disc in (dense, sparse):
        assert disc.p.sum() + disc.p_inf == pytest.approx(1.0, abs=1e-12)
    q_of = lambda disc: np.sum(disc.p * np.exp(-disc.losses()))  # noqa: E731
    assert q_of(sparse) == pytest.approx(q_of(dense), rel=1e-12)
    eps = np.linspace(-3.0, 2.5, 600)  # negative ε too: the add direction's far tail is below 0
    d_sparse, d_dense = _delta_of(sparse, eps), _delta_of(dense, eps)
    # Fewer nodes: the minimal dominating PLD on the dense grid is below it, the true δ below both.
    assert np.all(d_sparse >= d_dense - 1e-15)
    assert np.any(d_sparse > d_dense * (1 + 1e-9))
    assert np.all(d_dense >= _hockey(d, eps) - 1e-15)


@pytest.mark.parametrize("direction", [0, 1])
def test_sparse_tail_bins_keep_the_lower_discretisation_below_the_truth(direction, monkeypatch):
    d = pld.subsampled_gaussian(0.05, 0.9)[direction]
    monkeypatch.setattr(pld, "SPARSE_MASS", 1e-5)
    low = pld.discretise_lower(d, 1e-3, 1e-16, times=100)
    monkeypatch.setattr(pld, "SPARSE_MASS", 0.0)
    dense = pld.discretise_lower(d, 1e-3, 1e-16, times=100)
    assert np.count_nonzero(low.p) < 0.8 * np.count_nonzero(dense.p)  # wide tail bins are used
    assert low.p.sum() + low.p_inf <= 1.0 + 1e-12
    eps = np.linspace(-3.0, 2.5, 600)
    assert np.all(_delta_of(low, eps) <= _hockey(d, eps) + 1e-15)


def test_a_cut_window_gives_the_same_upper_bound_and_never_claims_below_the_cut():
    mechs = [(pld.subsampled_gaussian(0.01, 1.1), 10_000)]
    (_, parts), *_ = pld._discretised(mechs, 2.5e-4, "upper", 1e-16, dirs=[0])
    lam, _ = pld.choose_tilt(parts, np.log(1e-5))
    full = pld.compose(parts, lam=lam, eta=1e-15)
    e_full = pld.epsilon_at(full, [1e-5], 1.0)[0]
    cut = pld.compose(parts, lam=lam, eta=1e-15, cut=e_full - 0.3, cut_eta=1e-14)
    assert cut.p.size < 0.8 * full.p.size  # the window really is smaller
    e_cut = pld.epsilon_at(cut, [1e-5], 1.0)[0]
    assert e_cut == pytest.approx(e_full, rel=1e-7)
    # A cut above the answer: the window holds nothing about ε below it, so that is all it can say.
    high = pld.compose(parts, lam=lam, eta=1e-15, cut=e_full + 0.5, cut_eta=1e-14)
    assert pld.epsilon_at(high, [1e-5], 1.0)[0] >= high.read_from >= e_full
    # A lower bound read from it finds nothing above the cut and claims nothing.
    (_, lparts), *_ = pld._discretised(mechs, 2.5e-4, "lower", 1e-16, dirs=[0])
    lo_high = pld.compose(lparts, lam=lam, eta=1e-15, cut=e_full + 0.5, cut_eta=1e-14)
    assert pld.epsilon_at(lo_high, [1e-5], -1.0)[0] == -np.inf
    lo_cut = pld.compose(lparts, lam=lam, eta=1e-15, cut=e_full - 0.3, cut_eta=1e-14)
    lo_full = pld.compose(lparts, lam=lam, eta=1e-15)
    assert pld.epsilon_at(lo_cut, [1e-5], -1.0)[0] == pytest.approx(pld.epsilon_at(lo_full, [1e-5], -1.0)[0], rel=1e-7)


def test_blocked_log_mgf_matches_direct_sums():
    from scipy.special import logsumexp

    d = pld.discretise_upper(pld.subsampled_gaussian(0.01, 1.1)[0], 1e-4, 1e-16)
    t = np.concatenate([-np.geomspace(0.02, 100, 9), [0.0], np.geomspace(0.02, 160, 11)])
    ell, p = d.losses()[d.p > 0], d.p[d.p > 0]
    direct = np.array([logsumexp(x * ell, b=p) for x in t])
    assert np.allclose(pld._log_mgf(d, t), direct, rtol=1e-13, atol=1e-13)


def test_blocked_suffix_sums_meet_their_error_bound():
    import math

    mechs = [(pld.subsampled_gaussian(0.01, 1.1), 3000)]
    (_, parts), *_ = pld._discretised(mechs, 2.5e-4, "upper", 1e-16, dirs=[0])
    cp = pld.compose(parts, lam=3.87, eta=1e-15)
    tails = pld._Tails(cp, 1.0)
    assert tails.m > 20 * tails.B
    w = tails.w.reshape(2, -1)[:, : tails.m]  # the weighted terms, as the engine formed them
    idx = np.array([0, 1, 511, 512, 513, tails.m // 2, tails.m - 1, tails.m])
    a, b = tails.ab(idx)
    sum_rel = (tails.B + tails.k + 2) * np.finfo(float).eps
    for row, got in ((0, a), (1, b)):
        for i, g in zip(idx, got):
            exact = math.fsum(w[row, i:])
            assert abs(g - exact) <= sum_rel * exact
    assert a[-1] == 0.0 and b[-1] == 0.0 and tails.rel < 1e-10
    # The suffix index of the first loss above ε, including ε on and next to grid points.
    ell = tails.loss(np.arange(tails.m))
    for e in (1.0, ell[0], ell[7] - 1e-12, ell[7], ell[7] + 1e-12, ell[-1], ell[-1] + 1.0):
        assert tails.index_after(np.array([e]))[0] == np.searchsorted(ell, e, side="right")
    # Reads agree with a direct sum of the δ formula.
    eps = 4.0
    i = tails.index_after(np.array([eps]))[0]
    ell, p = cp.losses(), cp.p
    sel = ell > eps
    direct = math.fsum(np.exp(cp.g - cp.lam * ell[sel]) * p[sel] * -np.expm1(eps - ell[sel]))
    core, _ = pld._delta_parts(cp, np.array([i]), np.array([eps]), tails)
    assert core[0] == pytest.approx(direct, rel=1e-10)
