"""Sampling schemes (issue 12): truncated Poisson, shuffle, balls-in-bins, user level.

Every end of every interval is certified; these tests check the orderings theory gives, the exact
values where one exists, and the peer (dp-accounting 0.6.0) where it has the event.
"""

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

from dpcalc.core import gdp, pld
from dpcalc.core import sampling as S
from dpcalc.core.pld import sampling as PS

# A small DP-SGD setting (fast): N = 2,000, B = 40 (q = 0.02), σ = 1.0.
N, B, SIGMA = 2000, 40, 1.0
Q = B / N


# --------------------------------------------------------------------------- building blocks


def test_binomial_allowance_against_mpmath():
    """The binomial tails the truncated-Poisson pair uses are within BINOM_REL (relative) of 50-digit values
    on a grid (datasets of 300 to a million records)."""
    mp.mp.dps = 50
    worst = 0.0
    for n, q in ((1999, 0.02), (59999, 256 / 60000), (300, 0.3), (999_999, 4096 / 1e6)):
        mean = n * q
        for k in np.unique(np.clip(np.round(mean + np.array([-3, 0, 2, 5, 8]) * np.sqrt(mean)), 1, n)).astype(int):
            ref = mp.mpf(0)
            qq = mp.mpf(q)
            # P[K >= k] by summing the pmf upward until it is negligible.
            term = mp.binomial(n, k) * qq**k * (1 - qq) ** (n - k)
            j = k
            while j <= n and term > ref * mp.mpf(10) ** -40:
                ref += term
                term = term * (n - j) / (j + 1) * qq / (1 - qq)
                j += 1
            got = float(PS._binom_sf(k, n, q))
            worst = max(worst, float(abs(got - ref) / ref))
    assert worst < PS.BINOM_REL / 100


def test_mixture_of_one_is_itself_and_weights_are_linear():
    d = pld.subsampled_gaussian(Q, SIGMA)
    m = PS.mixture([(0.25, 0.0, d[0]), (0.75, 0.0, d[0])])
    x = np.linspace(-0.02, 0.3, 17)
    a, b = d[0].cdf(x, -1), m.cdf(x, -1)
    assert np.allclose(a.sp, b.sp, rtol=1e-14, atol=0) and np.allclose(a.fq, b.fq, rtol=1e-14, atol=0)
    assert np.all(b.esp >= a.esp * 0.999)


def test_generic_monotone_builder_reproduces_poisson():
    """The mixture-of-Gaussians builder with weights (1 − q, q) on shifts (0, 1) is the Poisson pair:
    both certified intervals must overlap, and here agree to the width asked for."""
    mechs_a = [(pld.subsampled_gaussian(Q, SIGMA), 500)]
    mechs_b = [(PS.mixture_of_gaussians(np.log([1 - Q, Q]), np.array([0.0, 1.0]), SIGMA), 500)]
    a = pld.epsilon(mechs_a, 1e-5)
    b = pld.epsilon(mechs_b, 1e-5)
    assert a.lower[0] <= b.upper[0] and b.lower[0] <= a.upper[0]
    assert abs(a.upper[0] - b.upper[0]) <= 2e-3 * a.upper[0]


@pytest.mark.parametrize("side", [-1, 1])
def test_monotone_direction_gap_contract(side):
    """cdf(ℓ, side) returns the tails of a point whose loss (recomputed in 50 digits) lies within the
    gap of ℓ on the side asked for."""
    mu, k = 1.0, 7
    d = PS.max_statistic(mu, k)[0]
    ell = np.array([-1.5, -0.3, 0.0, 0.2, 0.9, 2.0])
    t = d.cdf(ell, side)
    mp.mp.dps = 50
    for e, fq, gap in zip(ell, t.fq, np.broadcast_to(t.gap, ell.shape)):
        # Q[M <= m] = Φ(m)^k: recover m from fq, then the loss at m.
        m = mp.sqrt(2) * mp.erfinv(2 * mp.mpf(fq) ** (mp.mpf(1) / k) - 1)
        r = ((k - 1) * mp.ncdf(m - mu) / mp.ncdf(m) + mp.e ** (mu * m - mu * mu / 2)) / k
        loss = float(mp.log(r))
        tol = 1e-9  # fq itself is rounded: the recovered point is a little off
        if side < 0:
            assert e - gap - tol <= loss <= e + tol
        else:
            assert e - tol <= loss <= e + gap + tol


def test_max_statistic_tails_against_mpmath():
    mu, k = 0.9, 50
    d = PS.max_statistic(mu, k)[0]
    mp.mp.dps = 50
    ell = np.array([-0.5, 0.0, 0.5, 1.5, 2.5])
    t = d.cdf(ell, 0)
    # P and Q masses from the same point must satisfy the closed forms at that point; the point is
    # recovered (in 50 digits) from the smaller of Q's tails, which the double holds accurately.
    for fp, fq, sp, sq, efp, esp, esq, efq in zip(t.fp, t.fq, t.sp, t.sq, t.efp, t.esp, t.esq, t.efq):
        if sq < 0.5:
            m = mp.sqrt(2) * mp.erfinv(2 * (1 - mp.mpf(sq)) ** (mp.mpf(1) / k) - 1)
            rel = 4 * k * float(esq / sq)  # how far the recovered point's masses can be off
            sp_ref = 1 - mp.ncdf(m) ** (k - 1) * mp.ncdf(m - mu)
            assert abs(sp - float(sp_ref)) <= esp + rel * float(sp_ref) + 1e-300
        else:
            m = mp.sqrt(2) * mp.erfinv(2 * mp.mpf(fq) ** (mp.mpf(1) / k) - 1)
            rel = 4 * k * float(efq / fq)
            fp_ref = mp.ncdf(m) ** (k - 1) * mp.ncdf(m - mu)
            assert abs(fp - float(fp_ref)) <= efp + rel * float(fp_ref) + 1e-300


# --------------------------------------------------------------------------- user level


def test_user_level_k1_is_example_level():
    """K = 1 is exactly the example-level Poisson mechanism (the same pair, the same numbers)."""
    a = S.user_level_interval(Q, SIGMA, 300, 1, [1e-5, 1e-7])
    b = pld.epsilon([(pld.subsampled_gaussian(Q, SIGMA), 300)], [1e-5, 1e-7])
    assert np.array_equal(a.lower, b.lower) and np.array_equal(a.upper, b.upper)


@pytest.mark.parametrize("k", [2, 3])
def test_user_level_against_dp_accounting(k):
    from dp_accounting.dp_event import MixtureOfGaussiansDpEvent
    from dp_accounting.pld import pld_privacy_accountant as P

    steps, delta = 300, 1e-5
    a = S.user_level_interval(Q, SIGMA, steps, k, delta)
    assert a.lower[0] <= a.upper[0]
    probs = stats.binom.pmf(np.arange(k + 1), k, Q)
    acc = P.PLDAccountant(value_discretization_interval=5e-4)  # the peer is slow on mixtures
    acc.compose(MixtureOfGaussiansDpEvent(SIGMA, list(range(k + 1)), list(probs)), steps)
    theirs = acc.get_epsilon(delta)
    # Their pessimistic estimate lies in or above our interval, and within their grid's error of it.
    assert theirs >= a.lower[0] - 1e-3
    assert theirs <= a.upper[0] * 1.02 + 5e-3
    # More examples per user: more privacy loss.
    k1 = S.user_level_interval(Q, SIGMA, steps, 1, delta)
    assert a.lower[0] >= k1.upper[0]


# --------------------------------------------------------------------------- truncated Poisson


@pytest.mark.parametrize("bmax", [48, 40, 36])
def test_truncated_poisson_interval_and_dp_accounting(bmax):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant as P

    steps, delta = 200, 1e-5
    r = S.truncated_poisson_interval(N, B, bmax, SIGMA, steps, delta)
    assert 0 <= r.lower[0] <= r.upper[0]
    assert r.method == "pld-truncated-poisson" and r.lower_method == "pld-poisson-qbar"
    acc = P.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.TruncatedSubsampledGaussianDpEvent(N, Q, bmax, SIGMA), steps)
    theirs = acc.get_epsilon(delta)
    # dp-accounting's construction lies in or above our interval (measured: above our upper end).
    assert theirs >= r.lower[0] - 1e-3
    assert theirs >= r.upper[0] * 0.995


def test_truncated_poisson_never_cut_is_poisson():
    r = S.truncated_poisson_interval(N, B, N + 1, SIGMA, 200, 1e-5)
    p = pld.epsilon([(pld.subsampled_gaussian(Q, SIGMA), 200)], 1e-5)
    assert r.lower[0] == p.lower[0] and r.upper[0] == p.upper[0]


def test_truncated_poisson_lower_rate():
    # With B_max far above the batch the effective rate is q; at B_max = B it is visibly below.
    assert PS.truncated_poisson_lower_rate(Q, N - 1, 10 * B) == pytest.approx(Q, rel=1e-9)
    qb = PS.truncated_poisson_lower_rate(Q, N - 1, B)
    # Monte Carlo-free check: q·E[min(1, B/(K+1))] by direct summation.
    k = np.arange(N)
    direct = Q * np.sum(stats.binom.pmf(k, N - 1, Q) * np.minimum(1.0, B / (k + 1.0)))
    assert qb <= direct and qb == pytest.approx(direct, rel=1e-8)


def test_truncation_buckets_merge_only_near_equal_rates():
    # Truncation rare (B_max 6.4 standard deviations above the mean): clipping would make the single-count
    # bucket [B_max, B_max + 1), whose rate is within 0.1 % of the next: one bucket remains.
    n, q = 999_999, 4096 / 1e6
    assert PS._truncation_buckets(n, q, 4506, 4).tolist() == [4506, n + 1]
    # Small batches: [B, B + 1) has a rate 0.4 % above the next bucket's and stays its own bucket.
    e = PS._truncation_buckets(59_999, 256 / 60_000, 256, 4)
    assert e[:2].tolist() == [256, 257] and e[-1] == 60_000
    rates = 256 / (e[:-1] + 1.0)
    assert np.all(rates[:-1] / rates[1:] - 1 >= 1e-3)


def test_merged_buckets_only_raise_the_upper_end():
    # One bucket for all K >= B_max (each count at the largest rate) against the default's finer buckets.
    n, b, bmax, t, d = 5000, 50, 56, 300, 1e-6
    fine = pld.epsilon([(PS.truncated_poisson_gaussian(b / n, 0.9, n, bmax, buckets=8), t)], d)
    one = pld.epsilon([(PS.truncated_poisson_gaussian(b / n, 0.9, n, bmax, buckets=1), t)], d)
    assert one.upper[0] >= fine.lower[0]
    assert one.upper[0] >= fine.upper[0] - 1e-3 * fine.upper[0]


def test_truncated_poisson_upper_grows_as_the_cap_falls():
    ups = [S.truncated_poisson_interval(N, B, b, SIGMA, 200, 1e-5).upper[0] for b in (60, 44, 40)]
    assert ups[0] <= ups[1] <= ups[2]


# --------------------------------------------------------------------------- shuffle and balls-in-bins


def test_shuffle_upper_is_exact_gdp_and_lower_below():
    epochs, delta = 5, np.array([1e-5, 1e-8])
    r = S.shuffle_interval(N, B, epochs, SIGMA, delta)
    exact = gdp.epsilon(np.sqrt(epochs) / SIGMA, delta)
    assert np.allclose(r.upper, exact, rtol=1e-9)
    assert np.all(r.upper >= exact * (1 - 1e-12))  # certified: at or above the exact value
    assert np.all(0 < r.lower) and np.all(r.lower <= r.upper)
    assert r.method == "gdp-no-amplification" and r.bound == "upper" and r.lower_method == "pld-max-statistic"


def test_balls_in_bins_upper_is_amplified_and_lower_below():
    epochs, delta = 5, np.array([1e-5, 1e-8])
    r = S.balls_in_bins_interval(N, B, epochs, SIGMA, delta)
    exact = gdp.epsilon(np.sqrt(epochs) / SIGMA, delta)
    assert np.all(r.upper < exact / 2)  # amplified
    assert np.all(0 < r.lower) and np.all(r.lower <= r.upper)
    assert r.method == ("pld-random-allocation",) * 2 and r.bound == "upper" and r.lower_method == "pld-max-statistic"
    # one batch per epoch (B >= N): nothing to amplify — the exact GDP bound answers, method per δ says so
    one = S.balls_in_bins_interval(100, 100, epochs, SIGMA, delta)
    assert np.allclose(one.upper, exact, rtol=1e-9) and one.method == ("gdp-no-amplification",) * 2


def test_shuffle_one_batch_is_gaussian():
    """k = 1 (B >= N): every record in every step; the max statistic is the Gaussian itself, so the
    lower end meets the exact upper end."""
    r = S.shuffle_interval(100, 100, 4, SIGMA, 1e-5)
    assert r.lower[0] <= r.upper[0] <= r.lower[0] * (1 + 2e-3) + 1e-4


def test_max_statistic_lower_below_poisson_upper_at_rate_one_over_k():
    """Balls-in-bins is (by its dominating pair) close to Poisson at rate 1/k; its max-statistic lower
    bound must not exceed that pair's ε by more than a little (a sanity check of the construction;
    one epoch, where the two pairs are nearly the same)."""
    k = S.batches_per_epoch(N, B)
    lo = pld.epsilon([(PS.max_statistic(1 / SIGMA, k), 1)], 1e-5).lower[0]
    up = pld.epsilon([(pld.subsampled_gaussian(1.0 / k, SIGMA), k)], 1e-5).upper[0]
    assert 0 < lo <= up * 1.1


# --------------------------------------------------------------------------- a run that stops mid-epoch


def test_partial_epoch_pair_of_one_batch_is_poisson_at_one_over_k():
    """The max statistic of an epoch cut after r = 1 of k batches is the record's one batch, there with
    probability 1/k: the Poisson-subsampled Gaussian at rate 1/k (to round-off)."""
    sigma, k, d = 1.1, 235, 1e-5
    a = pld.epsilon([(PS.max_statistic(1 / sigma, k, run=1), 1)], d)
    b = pld.epsilon([(pld.subsampled_gaussian(1 / k, sigma), 1)], d)
    assert a.lower[0] == pytest.approx(b.lower[0], rel=1e-9) and a.upper[0] == pytest.approx(b.upper[0], rel=1e-9)


def test_partial_epoch_lower_end_sits_between_whole_epochs():
    """A run of E − 1 epochs and r < k batches: its lower end is at least that of E − 1 whole epochs (more is
    released) and at most that of E whole epochs (the last epoch is a post-processing of a whole one), and
    grows with r."""
    sigma, k, d = 0.8, 20, 1e-5
    n, b = k * 100, 100
    whole = [S.shuffle_interval(n, b, e, sigma, d).lower[0] for e in (2, 3)]
    part = [S.shuffle_interval(n, b, 3, sigma, d, last_batches=r).lower[0] for r in (1, 5, 19)]
    assert whole[0] <= part[0] <= part[1] <= part[2] <= whole[1]
    assert S.shuffle_interval(n, b, 3, sigma, d, last_batches=k).lower[0] == whole[1]
    with pytest.raises(ValueError):
        S.shuffle_interval(n, b, 3, sigma, d, last_batches=k + 1)


def test_cli_lower_end_counts_a_partial_last_epoch_as_partial():
    """plan-sgd with T not a multiple of k: the lower end is E − 1 whole epochs and the partial one, not E
    whole epochs (which would claim more than the run releases)."""
    import json

    from click.testing import CliRunner

    from dpcalc.cli import cli

    args = "plan-sgd --dataset-size 200 --batch-size 100 --steps 3 --noise-multiplier 0.3 --delta 1e-5 --json"
    for sampling in ("shuffle", "balls-in-bins"):
        r = CliRunner().invoke(cli, args.split() + ["--sampling", sampling])
        assert r.exit_code == 0, r.output
        row = json.loads(r.stdout)["rows"][0]
        direct = pld.epsilon([(PS.max_statistic(1 / 0.3, 2), 1), (PS.max_statistic(1 / 0.3, 2, run=1), 1)], 1e-5)
        two_whole = pld.epsilon([(PS.max_statistic(1 / 0.3, 2), 2)], 1e-5)
        assert row["epsilon_lower"] <= direct.lower[0] < two_whole.lower[0]


# --------------------------------------------------------------------------- shuffle under zero-out


def test_zero_out_lower_end_of_one_batch_is_the_gaussian_shift():
    """k = 1 (one batch per epoch): Chua et al.'s pair is N(2μ, 1) against N(μ, 1), a Gaussian shift by μ;
    for one epoch the best threshold test is the likelihood-ratio test, so the lower end is the exact
    Gaussian ε (to the threshold grid), never above it; over E epochs it stays below √E·μ's."""
    for sigma, epochs, d in ((1.0, 1, 1e-5), (0.5, 1, 1e-8), (2.0, 4, 1e-6)):
        got = float(S.shuffle_zero_out_lower(1, epochs, sigma, d)[0])
        exact = float(gdp.epsilon(np.sqrt(epochs) / sigma, d))
        assert got <= exact
        if epochs == 1:
            assert got >= exact - 5e-3


def test_zero_out_lower_end_orders():
    """The zero-out lower end: below the scheme's upper end, non-decreasing in the epochs and in the batches
    the last epoch runs, and None past the epochs it is computed for."""
    sigma, k, d = 1.1, 50, 1e-5
    e = [float(S.shuffle_zero_out_lower(k, n, sigma, d)[0]) for n in (1, 2, 5)]
    assert 0 < e[0] <= e[1] <= e[2]
    part = [float(S.shuffle_zero_out_lower(k, 3, sigma, d, last_batches=r)[0]) for r in (1, 25, 50)]
    assert part[0] <= part[1] <= part[2] == float(S.shuffle_zero_out_lower(k, 3, sigma, d)[0])
    r = S.shuffle_interval(k * 10, 10, 5, sigma, np.array([1e-5, 1e-8]))
    assert np.all(r.zero_out_lower <= r.upper) and np.all(r.zero_out_lower > r.lower)
    assert S.shuffle_zero_out_lower(k, S.ZERO_OUT_MAX_EPOCHS + 1, sigma, d) is None


def test_zero_out_lower_end_of_a_delta_grid_is_each_delta_alone():
    """A δ grid is read at once (every δ its own thresholds, the same whatever else is asked): each row has the
    digits of its δ asked alone, in any order and with repeats, with or without a partial last epoch."""
    d = np.array([1e-3, 1e-12, 3e-7, 1e-3, 0.2, 1e-9])
    for k, epochs, sigma, last in ((235, 10, 1.1, None), (50, 3, 0.7, 20), (1, 4, 2.0, None), (1000, 2, 5.0, 881)):
        grid = S.shuffle_zero_out_lower(k, epochs, sigma, d, last)
        alone = [float(S.shuffle_zero_out_lower(k, epochs, sigma, x, last)[0]) for x in d]
        assert grid.tolist() == alone
        assert np.any(grid > 0) and grid[0] == grid[3]


def test_binary_lowers_are_certified_and_agree_with_bisection():
    """The zero-out end's crossings: for rows of binomial outcome masses (P_x, Q_x as given), each ε returned has
    the exact δ(ε) = Σ [P_x − e^ε Q_x]_+ above the row's δ (mpmath, 40 digits: a true lower bound), 1e-6 more
    has it at or below δ (tight), 0 is returned where δ(0) is not above δ, and the closed form agrees with plain
    bisection from [0, top] (both within 1e-12 of max(ε, 1) of the crossing)."""
    from scipy import stats as st

    rng = np.random.default_rng(5)
    rows, deltas = [], []
    for i in range(40):
        # Few outcomes, or 2 × 101 (a product with one more step: the terms too small to matter dropped).
        n = 12 if i % 2 else 100
        a = float(rng.uniform(0.05, 0.95))
        b = float(a * (rng.uniform(0.2, 0.99) if i % 7 else 0.999))  # (every seventh: δ(0) below δ, ε = 0)
        j = np.arange(n + 1)
        lp, lq = st.binom.logpmf(j, n, a), st.binom.logpmf(j, n, b)
        if n == 100:
            lp = (lp[:, None] + np.log([1 - a, a])[None, :]).ravel()
            lq = (lq[:, None] + np.log([1 - b, b])[None, :]).ravel()
        else:
            lp, lq = np.pad(lp, (0, 189), constant_values=-np.inf), np.pad(lq, (0, 189), constant_values=-np.inf)
        rows.append((lp, lq))
        deltas.append(float(np.exp(rng.uniform(np.log(1e-12), np.log(0.9)))) if i % 7 else 0.5)
    lp = np.array([r[0] for r in rows])
    lq = np.array([r[1] for r in rows])
    d = np.array(deltas)
    got = S._binary_lowers(lp, lq, d)
    slow = S._binary_lowers(lp, lq, d, closed_form=False)
    assert np.all(np.abs(got - slow) <= 2.5e-12 * np.maximum(np.maximum(got, slow), 1.0))
    mp.mp.dps = 40

    def exact(i, eps):
        e = mp.exp(mp.mpf(float(eps)))
        return sum(max(mp.exp(mp.mpf(float(x))) - e * mp.exp(mp.mpf(float(y))), 0) for x, y in zip(lp[i], lq[i]))

    zeros = 0
    for i in range(len(rows)):
        if got[i] == 0:
            zeros += 1
            assert exact(i, 0.0) <= d[i] * (1 + 1e-9)
            continue
        assert exact(i, got[i]) > d[i]
        assert exact(i, got[i] + 1e-6) <= d[i]
    assert 0 < zeros < len(rows)


def test_a_zero_out_lower_end_above_the_upper_end_is_not_reported(monkeypatch):
    """Above the upper end one of the two ends would be false: the zero-out lower end is then withheld (NaN,
    None in JSON), not clipped to the upper end."""
    monkeypatch.setattr(S, "shuffle_zero_out_lower", lambda *a, **k: np.array([1e9]))
    r = S.shuffle_interval(500, 10, 3, 1.0, 1e-5)
    assert np.isnan(r.zero_out_lower[0]) and np.isfinite(r.upper[0])
    from dpcalc.cli import _schemes as sch

    assert sch.interval_fields(r, 0, "shuffle")["epsilon_lower_zero_out"] is None
