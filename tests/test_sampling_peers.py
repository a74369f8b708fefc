"""Shuffle and balls-in-bins against the reference code of Chua et al. (arXiv:2403.17673, 2412.16802).

Their code: google-research/google-research, folder dpsgd_batch_sampler_accounting/, read at commit
4c4299485319ed72ef782020c81784be5468924e (dpsgd_bounds.py, balls_and_bins.py, monte_carlo_estimator.py).
It is not part of dpcalc. It was run once, outside this repository, with dp-accounting 0.6.0, numpy 2.1.3
and scipy 1.17.1, and its figures are recorded below as constants.

What their code computes:

- ``dpsgd_bounds.ShuffleAccountant(mean_upper, mean_lower)`` gives a lower bound on ε for the pair
  P = MoG(mean_upper), Q = MoG(mean_lower), where MoG(a) = (1/k)Σ_t N(a·e_t, σ²I_k), and only in the
  P-against-Q order. It uses the statistic max_t x_t, as our max statistic does. With one epoch it takes
  the best test {max > C} over C in 0, 0.01, …, 99.99 and inverts δ(ε) by bisection (tolerance 1e-7).
  With E > 1 epochs it slices the max into cells of width 1e-3·σ², floors each cell's privacy loss to a
  multiple of ``discretization`` (an optimistic PLD) and composes E copies with dp_accounting.
- Their shuffle bound is the default pair (2, 1): other records' gradients −1, the differing one +1
  against a zero-gradient record (zero-out). The pair (1, 0) is the lower bound of ``BnBAccountant``
  (``lower_bound_accountant``). It is dpcalc's ``max_statistic`` pair, P against Q.
- ``balls_and_bins.BnBAccountant.estimate_deltas`` is a Monte Carlo estimate of δ(ε) for
  ((1/k)Σ_t N(e_t, σ²I), N(0, σ²I)) composed over E epochs. It returns a mean and a std (not a
  certified bound). For E = 1 it uses importance sampling; for E > 1 it samples directly.

Settings are (σ, k batches per epoch, E epochs, δ), with N = k·B and B = 100, so k = N/B exactly.
"""

import pytest

from dpcalc.core import pld
from dpcalc.core import sampling as S
from dpcalc.core.pld import sampling as PS

B = 100
SETTINGS = [
    (1.0, 10, 1, 1e-5),
    (1.0, 100, 1, 1e-5),
    (2.0, 50, 5, 1e-6),
    (0.8, 20, 3, 1e-5),
    (1.1, 235, 60, 1e-5),  # MNIST: N = 60,000, B = 256 gives k = 235
]

# The pair (1, 0): our max statistic, P against Q. google-research@4c4299485319ed72ef782020c81784be5468924e,
# dpsgd_batch_sampler_accounting/balls_and_bins.py, BnBAccountant.lower_bound_accountant (=
# dpsgd_bounds.ShuffleAccountant(mean_upper=1.0, mean_lower=0.0)), method get_epsilons:
#   BnBAccountant().lower_bound_accountant.get_epsilons(σ, (δ,), k, E)                        -> first value
#   BnBAccountant().lower_bound_accountant.get_epsilons(σ, (δ,), k, E, discretization=1e-4)  -> second (E > 1)
# For E = 1 the discretization is not used: the value is the best threshold test.
THEIR_MAX_STATISTIC = {
    (1.0, 10, 1, 1e-5): (2.181672751903534, None),
    (1.0, 100, 1, 1e-5): (0.5800254642963409, None),
    (2.0, 50, 5, 1e-6): (0.31538773678601184, 0.3175962392328497),
    (0.8, 20, 3, 1e-5): (3.8357416245933775, 3.837077402762192),
    (1.1, 235, 60, 1e-5): (1.0973053707926528, 1.124454086365385),
}

# The same pair in the other order (Q against P), E > 1 only. Same file, dpsgd_bounds.py:
#   ShuffleAccountant(mean_upper=0.0, mean_lower=1.0).get_epsilons(σ, (δ,), k, E, discretization=1e-4)
# (For E = 1 their threshold test takes the wrong tail for this order and returns about 0, so it is not used.)
THEIR_MAX_STATISTIC_SWAPPED = {
    (2.0, 50, 5, 1e-6): 0.40281950732272437,
    (0.8, 20, 3, 1e-5): 2.1592607166860027,
    (1.1, 235, 60, 1e-5): 1.1229567156421674,
}

# Their shuffle lower bound, the pair (2, 1), for zero-out neighbours with σ relative to the clipping norm.
# dpsgd_bounds.py, ShuffleAccountant (defaults mean_upper=2.0, mean_lower=1.0), method get_epsilons:
#   ShuffleAccountant().get_epsilons(σ, (δ,), k, E)                        -> first value
#   ShuffleAccountant().get_epsilons(σ, (δ,), k, E, discretization=1e-4)  -> second (E > 1)
THEIR_SHUFFLE = {
    (1.0, 10, 1, 1e-5): (4.343381226062775, None),
    (1.0, 100, 1, 1e-5): (4.063149765133858, None),
    (2.0, 50, 5, 1e-6): (1.4722043334323907, 1.4744398816595607),
    (0.8, 20, 3, 1e-5): (10.689268921358924, 10.690627794081744),
    (1.1, 235, 60, 1e-5): (10.82311965652276, 10.849804954493145),
}

# Monte Carlo estimates of balls-in-bins δ(ε): (ε, mean, std). balls_and_bins.py, BnBAccountant.estimate_deltas:
#   np.random.seed(20240318)
#   BnBAccountant(max_memory_limit=int(2e7)).estimate_deltas(
#       σ, eps_grid, k, n, E, AdjacencyType.REMOVE, use_importance_sampling=True)
# with n = 1,000,000 (n = 2,000,000 for E = 3, where no importance sampling is used). The other
# direction (AdjacencyType.ADD, same call) at the smallest ε of each grid is in THEIR_BNB_MC_ADD. The
# last point of the first two grids is a separate call with max_memory_limit=int(1e7), n = 20,000,000
# (k = 10, at the ε of our upper end then) and n = 10,000,000 (k = 100).
THEIR_BNB_MC = {
    (1.0, 10, 1, 1e-5): [
        (2.15, 1.2532824887644854e-05, 4.776779329973277e-07),
        (2.16, 1.1486857905419051e-05, 4.530678998413669e-07),
        (2.17, 1.1534648744494336e-05, 4.50783983756166e-07),
        (2.18, 1.069170525962326e-05, 4.1197078012381756e-07),
        (2.19, 1.0058344152322604e-05, 4.0118472586353896e-07),
        (2.20, 9.516486997927087e-06, 3.854010718321036e-07),
        (2.21, 8.739486334218303e-06, 3.633804451191578e-07),
        (2.22, 7.921724622304411e-06, 3.4137394339739107e-07),
        (2.1888545828844945, 1.000464380959865e-05, 8.959872698780238e-08),
    ],
    (1.0, 100, 1, 1e-5): [
        (0.56, 2.019679756940284e-05, 1.8028896280728503e-06),
        (0.58, 1.6200620990465038e-05, 1.4871426839745532e-06),
        (0.60, 1.3555959458254443e-05, 1.6002840573955396e-06),
        (0.62, 9.443218707978032e-06, 1.2181498107702395e-06),
        (0.64, 7.178584274907063e-06, 1.0964074527709162e-06),
        (0.66, 6.731367322367297e-06, 1.0961156057928077e-06),
        (0.6209461106957104, 9.923018374823017e-06, 3.987215925139849e-07),
    ],
    (0.8, 20, 3, 1e-5): [
        (3.80, 1.6106131654187435e-05, 1.6792362375663823e-06),
        (3.85, 1.1824746053132386e-05, 1.4003537914681229e-06),
        (3.90, 9.878279863248743e-06, 1.3689444880832478e-06),
        (3.95, 9.81511091009192e-06, 1.3983109278413646e-06),
        (4.00, 7.062630908864836e-06, 1.1340361913638226e-06),
        (4.05, 5.970518507926521e-06, 1.1045684111598875e-06),
    ],
}
THEIR_BNB_MC_ADD = {  # (ε, mean, std), AdjacencyType.ADD
    (1.0, 10, 1, 1e-5): (2.15, 0.0, 0.0),
    (1.0, 100, 1, 1e-5): (0.56, 1.0271486320572939e-08, 1.0271486320572939e-08),
    (0.8, 20, 3, 1e-5): (3.80, 0.0, 0.0),
}

DISCRETIZATION = (1e-3, 1e-4)  # theirs, for the two values of E > 1
SEARCH = 1e-6  # their bisection's tolerance (1e-7), and round-off
Z = 3.0  # Monte Carlo: a difference counts as significant beyond Z standard deviations


def _ids(settings):
    return [f"sigma={s}-k={k}-E={e}-delta={d:g}" for s, k, e, d in settings]


def _pair(setting, order):
    """dpcalc's certified [lower, upper] on ε for E epochs of the max-statistic pair, in one order (0: P
    against Q, as in their code; 1: Q against P)."""
    sigma, k, epochs, delta = setting
    a = pld.epsilon([([PS.max_statistic(1.0 / sigma, k)[order]], epochs)], delta)
    return a.lower[0], a.upper[0]


@pytest.mark.parametrize("setting", SETTINGS, ids=_ids(SETTINGS))
def test_max_statistic_agrees_with_their_pair(setting):
    """Their (1, 0) figure is a lower bound for the same pair (a threshold test, or an optimistic PLD), so it
    must not exceed our certified upper end for that pair. With one epoch their threshold test is exact up to
    its C grid, so it must also reach our lower end. With E epochs, flooring each epoch's loss by less than
    one discretization step costs at most E·step in ε."""
    lo, up = _pair(setting, 0)
    epochs = setting[2]
    for theirs, step in zip(THEIR_MAX_STATISTIC[setting], DISCRETIZATION):
        if theirs is None:
            continue
        assert theirs <= up + SEARCH
        slack = 0.0 if epochs == 1 else epochs * step
        assert theirs >= lo - slack - SEARCH
    if epochs == 1:
        assert up - lo <= 1e-3 * up  # the one-epoch comparison above is then to this width


@pytest.mark.parametrize("setting", list(THEIR_MAX_STATISTIC_SWAPPED), ids=_ids(THEIR_MAX_STATISTIC_SWAPPED))
def test_max_statistic_swapped_order_agrees_with_theirs(setting):
    lo, up = _pair(setting, 1)
    theirs = THEIR_MAX_STATISTIC_SWAPPED[setting]
    assert lo - setting[2] * DISCRETIZATION[1] - SEARCH <= theirs <= up + SEARCH


@pytest.mark.parametrize("setting", SETTINGS, ids=_ids(SETTINGS))
def test_our_lower_ends_reach_their_max_statistic_bound(setting):
    """Shuffle and balls-in-bins use the max statistic in both orders, so their lower ends must be at least
    their (1, 0) figure, up to that figure's discretization. At (2, 50, 5, 1e-6) the other order wins:
    0.403 against their 0.318."""
    sigma, k, epochs, delta = setting
    sh = S.shuffle_interval(k * B, B, epochs, sigma, delta)
    bb = S.balls_in_bins_interval(k * B, B, epochs, sigma, delta)
    best = max(t for t in THEIR_MAX_STATISTIC[setting] if t is not None)
    slack = 0.0 if epochs == 1 else epochs * DISCRETIZATION[1]
    for r in (sh, bb):
        assert r.lower[0] >= best - slack - 1e-3 * best
        assert best <= r.upper[0]


@pytest.mark.parametrize("setting", SETTINGS, ids=_ids(SETTINGS))
def test_their_shuffle_bound_is_below_our_upper_end(setting):
    """Their (2, 1) pair comes from actual zero-out neighbours (σ relative to the clipping norm), so our
    certified √E/σ-GDP upper end must be above it. It is much higher than our max-statistic lower end
    (MNIST: 10.85 against 1.127), which also holds under substitution."""
    sigma, k, epochs, delta = setting
    r = S.shuffle_interval(k * B, B, epochs, sigma, delta)
    for theirs in THEIR_SHUFFLE[setting]:
        if theirs is not None:
            assert theirs <= r.upper[0] + SEARCH


@pytest.mark.parametrize("setting", SETTINGS, ids=_ids(SETTINGS))
def test_our_zero_out_lower_end_reads_their_pair_through_threshold_tests(setting):
    """Our zero-out lower end is their (2, 1) pair read through one threshold test per epoch, composed
    exactly: for one epoch that is their own method (the best threshold, theirs on a finer grid of c), so
    the two agree closely; over E epochs a composed threshold test is weaker than their composed PLD, so ours
    is below theirs — and far above our max-statistic lower end."""
    sigma, k, epochs, delta = setting
    r = S.shuffle_interval(k * B, B, epochs, sigma, delta)
    ours = float(r.zero_out_lower[0])
    theirs = THEIR_SHUFFLE[setting][0]
    assert ours <= r.upper[0]
    assert ours <= theirs + SEARCH + 1e-3  # their grid of c is finer (step 0.01); round-off
    if epochs == 1:
        assert ours >= theirs - 5e-3
    else:
        assert ours >= r.lower[0]


@pytest.mark.parametrize("setting", list(THEIR_BNB_MC), ids=_ids(THEIR_BNB_MC))
def test_balls_in_bins_interval_against_their_monte_carlo(setting):
    """At an ε at or above our certified upper end, the true δ is at most δ. So their estimate (one order
    only, which can only understate δ) must not be significantly above δ. At an ε at or below our lower end,
    the true δ (the larger of the two orders) is at least δ. So the sum of the two orders' estimates must not
    be significantly below δ."""
    sigma, k, epochs, delta = setting
    r = S.balls_in_bins_interval(k * B, B, epochs, sigma, delta)
    lo, up = r.lower[0], r.upper[0]
    _, add_mean, add_std = THEIR_BNB_MC_ADD[setting]
    add_hi = add_mean + Z * add_std  # the ADD order's δ is decreasing in ε: this covers every ε of the grid
    checked = 0
    for eps, mean, std in THEIR_BNB_MC[setting]:
        if eps >= up:
            assert mean - Z * std <= delta, (eps, up)
            checked += 1
        if eps <= lo:
            assert mean + Z * std + add_hi >= delta, (eps, lo)
            checked += 1
    assert checked >= 3  # the grid brackets our interval


def test_monte_carlo_at_our_upper_end_is_close():
    """k = 10, one epoch: at our upper end 2.18885, their 2e7-sample estimate is 1.0005e-5 ± 0.009e-5. δ falls
    by about 4.5e-5 per unit of ε here, so Z standard deviations put the true ε within 0.006 of that point.
    Our certified upper end must stay within that distance: lower would contradict their estimate, higher
    would mean our bound got looser."""
    setting = (1.0, 10, 1, 1e-5)
    sigma, k, epochs, delta = setting
    eps, mean, std = THEIR_BNB_MC[setting][-1]
    assert abs(mean - delta) <= Z * std  # their estimate at that point is δ, to within its noise
    up = S.balls_in_bins_interval(k * B, B, epochs, sigma, delta).upper[0]
    assert abs(up - eps) <= 6e-3
