"""Discrete mechanisms: closed forms against mpmath, calibrations re-checked, PLDs against dp-accounting."""

import mpmath as mp
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as PLD

from dpcalc.core import composition, pld, zcdp
from dpcalc.core import discrete as D
from dpcalc.core.errors import ValidationError

mp.mp.dps = 50


# --------------------------------------------------------------------------
# mpmath references (independent of the code under test)
# --------------------------------------------------------------------------


def _dg_pmf(sigma, n):
    s = mp.mpf(sigma)
    f = {x: mp.exp(-(mp.mpf(x) ** 2) / (2 * s * s)) for x in range(-n, n + 1)}
    z = mp.fsum(f.values())
    return {x: v / z for x, v in f.items()}


def mp_dg_delta(sigma, eps, sens=1):
    """δ(ε) of N_Z(0, σ²) vs N_Z(Δ, σ²) as Σ_x (P(x) − e^ε Q(x))₊ over ±60σ."""
    n = int(60 * sigma) + 10 + sens
    p = _dg_pmf(sigma, n)
    e = mp.exp(mp.mpf(eps))
    return mp.fsum(max(p[x] - e * p.get(x - sens, mp.mpf(0)), 0) for x in range(-n, n + 1))


def mp_dg_composed_delta(sigma, sens, k, eps):
    """δ(ε) of k discrete Gaussian steps: the loss is (kΔ² − 2ΔS)/(2σ²) with S the sum of the noises."""
    p = _dg_pmf(sigma, int(20 * sigma) + 8)
    dist = {0: mp.mpf(1)}
    for _ in range(k):
        nd = {}
        for a, pa in dist.items():
            for x, px in p.items():
                nd[a + x] = nd.get(a + x, 0) + pa * px
        dist = nd
    s2 = mp.mpf(sigma) ** 2
    out = mp.mpf(0)
    for s, pr in dist.items():
        loss = (k * sens * sens - 2 * sens * s) / (2 * s2)
        if loss > eps:
            out += pr * (1 - mp.exp(eps - loss))
    return out


def mp_dlap_delta(t, eps, sens=1):
    t = mp.mpf(t)
    a = mp.exp(-1 / t)
    n = int(120 * t) + 10 + sens
    pm = {x: (1 - a) / (1 + a) * a ** abs(x) for x in range(-n, n + 1)}
    e = mp.exp(mp.mpf(eps))
    return mp.fsum(max(pm[x] - e * pm[x - sens], 0) for x in range(-n + sens, n + 1))


def mp_rr_delta(e0, eps, k):
    e0, eps = mp.mpf(e0), mp.mpf(eps)
    keep = mp.exp(e0) / (mp.exp(e0) + k - 1)
    r = 1 / (mp.exp(e0) + k - 1)
    return max(keep - mp.exp(eps) * r, 0)


def mp_grr_delta(e0, eps):
    """δ(ε) of the generalized randomized response with losses t, t − ε₀, as a function of t."""
    e0, eps = mp.mpf(e0), mp.mpf(eps)

    def dt(t):
        p1 = (mp.exp(e0) - mp.exp(t)) / (mp.exp(e0) - 1)
        return max(p1 * (1 - mp.exp(eps - t)), 0)

    return dt


def mp_eps_of(delta_fn, delta, hi=200):
    lo, hi = mp.mpf(0), mp.mpf(hi)
    if delta_fn(lo) <= delta:
        return lo
    for _ in range(120):
        mid = (lo + hi) / 2
        if delta_fn(mid) > delta:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# --------------------------------------------------------------------------
# Discrete Gaussian
# --------------------------------------------------------------------------


@pytest.mark.parametrize("sigma, sens", [(0.3, 1), (1.0, 1), (2.0, 3), (7.5, 2)])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 4.0])
def test_dgauss_delta_interval_contains_mpmath(sigma, sens, eps):
    lo, hi = D.dgauss_delta_interval(sigma, eps, sens)
    exact = mp_dg_delta(sigma, eps, sens)
    assert lo <= exact <= hi
    assert hi - lo <= 1e-12 * hi + 1e-38  # round-off, and the cut tails (<= 1e-40 each)
    assert D.dgauss_delta_at(sigma, eps, sens) == hi


@pytest.mark.parametrize(
    "sigma, sens, eps", [(1.0, 30, 569.9), (1.0, 300, 46199.9), (0.5, 20, 800.0), (2.0, 100, 1300.0)]
)
def test_dgauss_delta_far_beyond_the_table_is_exact(sigma, sens, eps):
    """Δ/σ past the table's half-width: the Q-masses of the atoms above ε underflow (e^{−(Δ+4)²/2} at Δ = 300),
    while e^ε times them is of the order of their P-masses. δ stays exact (it was a bound 0.08 too high in ε,
    labelled exact, and the ε search failed past Δ/σ ≈ 200)."""
    lo, hi = D.dgauss_delta_interval(sigma, eps, sens)
    exact = mp_dg_delta(sigma, eps, sens)
    assert lo <= exact <= hi and hi - lo <= 1e-9 * hi


@pytest.mark.parametrize("sigma, sens, delta", [(1.0, 30, 1e-5), (1.0, 300, 1e-5), (1.0, 3000, 1e-3)])
def test_dgauss_epsilon_at_far_beyond_the_table(sigma, sens, delta):
    eps = float(D.dgauss_epsilon_at(sigma, delta, sens))
    assert mp_dg_delta(sigma, eps, sens) <= delta
    assert mp_dg_delta(sigma, eps * (1 - 1e-9), sens) > delta


@pytest.mark.parametrize("sigma, delta", [(1.0, 1e-5), (3.0, 1e-8), (0.5, 1e-3)])
def test_dgauss_epsilon_at_is_a_tight_upper_bound(sigma, delta):
    eps = D.dgauss_epsilon_at(sigma, delta)
    exact = mp_eps_of(lambda e: mp_dg_delta(sigma, e), delta)
    assert exact <= eps <= exact * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("sigma, sens", [(0.7, 1), (2.0, 1), (3.0, 2)])
def test_dgauss_rho_is_renyi_at_order_two_and_bounds_the_rest(sigma, sens):
    rho = D.dgauss_rho_of(sigma, sens)
    n = int(30 * sigma) + 10 + sens
    p = _dg_pmf(sigma, n + sens)

    def renyi(alpha):
        a = mp.mpf(alpha)
        s = mp.fsum(p[x] ** a * p[x - sens] ** (1 - a) for x in range(-n, n + 1))
        return mp.log(s) / (a - 1)

    assert renyi(2) / 2 == pytest.approx(rho, rel=1e-12)  # (α − 1)Δ integer: equality
    assert renyi(1.5) / 1.5 <= rho * (1 + 1e-12)
    assert renyi(2.3) / 2.3 <= rho * (1 + 1e-12)
    sig = D.dgauss_sigma_for_rho(rho, sens)
    assert D.dgauss_rho_of(sig, sens) <= rho


@pytest.mark.parametrize("eps, delta, sens", [(1.0, 1e-5, 1), (0.5, 1e-6, 1), (3.0, 1e-10, 2)])
def test_dgauss_sigma_calibration_checked_and_tight(eps, delta, sens):
    sigma = D.dgauss_sigma(eps, delta, sens)
    assert mp_dg_delta(sigma, eps, sens) <= delta
    assert mp_dg_delta(sigma * (1 - 1e-6), eps, sens) > delta


def count_tables(monkeypatch) -> list[float]:
    """Record the σ of every discrete Gaussian table built (the list fills as it runs); the cache starts empty."""
    built: list[float] = []
    real = D.DGaussTable

    def counted(sigma):
        built.append(sigma)
        return real(sigma)

    monkeypatch.setattr(D, "DGaussTable", counted)
    D.dgauss_table.cache_clear()
    return built


def test_dgauss_sigma_search_takes_a_handful_of_tables(monkeypatch):
    # A calibration builds one table per σ it tries (a tiny ε needs σ = 4e4: 1.6 M atoms each). Bisection
    # to 1e-9 from a 4 % bracket took ~30 of them (15 s); the secant in log σ takes a handful, and the
    # answer keeps its contract: the certified δ at σ meets the target, and 1e-9 below it does not.
    built = count_tables(monkeypatch)
    try:
        for eps, delta in ((1e-8, 1e-5), (1.0, 1e-5), (0.01, 1e-10)):
            built.clear()
            sigma = float(D.dgauss_sigma(eps, delta))
            assert len(built) <= 12, (eps, delta, len(built))
            assert D.dgauss_delta_at(sigma, eps) <= delta
            assert D.dgauss_delta_at(sigma / (1 + 1e-9), eps) > delta
    finally:
        D.dgauss_table.cache_clear()


def test_dgauss_epsilon_over_many_sigmas_builds_each_table_once(monkeypatch):
    # ε(δ) over more σ than the table cache holds: the search runs σ by runs the cache keeps, so each table is
    # built once (not once a bisection round), every case's arithmetic at once — the same digits as σ by σ.
    sig = np.linspace(0.5, 40.0, 3 * D.TABLE_CACHE_SIZE + 5)
    sens = np.where(np.arange(sig.size) % 3 == 0, 2, 1)
    delta = np.geomspace(1e-12, 1e-2, sig.size)
    one = np.array([D.dgauss_epsilon_at(float(s), float(dl), int(k)) for s, dl, k in zip(sig, delta, sens)])
    built = count_tables(monkeypatch)
    try:
        grid = D.dgauss_epsilon_at(sig, delta, sens)
        assert sorted(built) == sorted(set(built)) and len(built) == sig.size
        assert np.array_equal(grid, one)
        lo, hi = D.dgauss_delta_interval(sig, grid, sens)
        assert np.all(hi <= delta) and np.all(lo <= hi)
    finally:
        D.dgauss_table.cache_clear()


def test_dgauss_sigma_grid_reads_rows_together_with_each_rows_digits(monkeypatch):
    # A calibration grid reads its rows' tables together (in chunks of at most READ_ATOMS atoms): each row gets
    # the σ it gets alone, however the rows are chunked, and the contract holds row by row.
    eps = np.array([0.02, 0.5, 3.0, 0.05, 1.0, 8.0, 0.2])
    delta = np.array([1e-6, 1e-10, 1e-3, 1e-20, 1e-5, 1e-8, 0.05])
    sens = np.array([1, 2, 1, 3, 1, 1, 2])
    alone = np.array([D.dgauss_sigma(float(a), float(b), int(c)) for a, b, c in zip(eps, delta, sens)])
    assert np.array_equal(D.dgauss_sigma(eps, delta, sens), alone)
    monkeypatch.setattr(D, "READ_ATOMS", 60)  # a chunk a row or so
    assert len(D._atom_chunks(np.array([1.0, 2.0, 3.0, 40.0]))) >= 3
    assert np.array_equal(D.dgauss_sigma(eps, delta, sens), alone)
    assert np.all(D.dgauss_delta_at(alone, eps, sens) <= delta)
    assert np.all(D.dgauss_delta_at(alone / (1 + 1e-9), eps, sens) > delta)


def test_dgauss_delta_grid_reads_its_tables_in_chunks_with_each_cases_digits(monkeypatch):
    # δ at ε over many σ lays out at most READ_ATOMS atoms of tables at once (12 σ near the cap took 5.6 GB when
    # all were laid out together): the same digits however the cases are chunked.
    sig = np.array([0.3, 40.0, 2.5, 900.0, 0.3, 7.0, 40.0])
    eps = np.array([0.5, 0.01, 3.0, 1e-4, 0.0, 1.0, 0.2])
    sens = np.array([1, 2, 1, 5, 3, 1, 1])
    whole = D.dgauss_delta_interval(sig, eps, sens)
    monkeypatch.setattr(D, "READ_ATOMS", 60)
    assert len(D._atom_chunks(sig)) >= 5
    chunked = D.dgauss_delta_interval(sig, eps, sens)
    assert all(np.array_equal(a, b) for a, b in zip(whole, chunked))
    one = [D.dgauss_delta_interval(float(s), float(e), int(k)) for s, e, k in zip(sig, eps, sens)]
    assert np.array_equal(np.array([o[1] for o in one]), whole[1])


def test_dgauss_table_cache_is_bounded_by_atoms(monkeypatch):
    monkeypatch.setattr(D, "TABLE_CACHE_ATOMS", 50_000)
    D.dgauss_table.cache_clear()
    try:
        big = [D.dgauss_table(s) for s in (1000.0, 1100.0, 1200.0)]  # about 27,000 atoms each
        assert D.dgauss_table(1200.0) is big[2]  # the newest is kept ...
        assert D.dgauss_table(1000.0) is not big[0]  # ... the oldest went once the atoms passed the cap
        small = D.dgauss_table(1.5)
        assert D.dgauss_table(1.5) is small
    finally:
        D.dgauss_table.cache_clear()


def test_dgauss_variance_below_sigma_squared():
    for s in (0.3, 1.0, 5.0):
        v = D.dgauss_variance(s)
        p = _dg_pmf(s, int(40 * s) + 10)
        exact = mp.fsum(x * x * w for x, w in p.items())
        assert exact <= v <= exact * (1 + 1e-12) and v <= s * s


def test_dgauss_without_extended_precision_matches(monkeypatch):
    monkeypatch.setattr(D, "EXTENDED", False)
    D.dgauss_table.cache_clear()
    try:
        lo, hi = D.DGaussTable(1.5).delta_bounds(np.array([0.5]), 1)
        exact = mp_dg_delta(1.5, 0.5)
        assert lo[0] <= exact <= hi[0]
    finally:
        D.dgauss_table.cache_clear()


# --------------------------------------------------------------------------
# Discrete Laplace, randomized response, bounded range
# --------------------------------------------------------------------------


@pytest.mark.parametrize("t, sens", [(0.5, 1), (2.0, 1), (3.0, 2), (10.0, 5)])
@pytest.mark.parametrize("frac", [0.0, 0.3, 0.9, 1.0])
def test_dlaplace_delta_matches_mpmath(t, sens, frac):
    e0 = sens / t
    eps = frac * e0
    exact = mp_dlap_delta(t, eps, sens)
    got = D.dlaplace_delta_at(t, eps, sens)
    # (ε = Δ/t rounded may sit a half-ulp off the top loss: the bound then carries that loss's round-off)
    assert exact - 1e-40 <= got <= exact * (1 + 1e-12) + 2e-16
    assert D.dlaplace_epsilon_of(t, sens) >= e0 and D.dlaplace_delta_at(t, D.dlaplace_epsilon_of(t, sens), sens) == 0


def test_dlaplace_calibration_exact_and_safe():
    e = np.array([0.1, 0.3, 1.0, 1 / 3, 2.7])
    for sens in (1, 2, 7):
        t = D.dlaplace_scale_for_epsilon(e, sens)
        # Δ/t <= ε in exact arithmetic (rational check)
        from fractions import Fraction

        for ti, ei in zip(t, e):
            assert Fraction(sens) / Fraction(float(ti)) <= Fraction(float(ei))
        assert np.all(D.dlaplace_epsilon_of(t, sens) <= np.nextafter(e, np.inf))
    eps = D.dlaplace_epsilon_at(4.0, 1e-3, 2)
    exact = mp_eps_of(lambda x: mp_dlap_delta(4.0, x, 2), 1e-3)
    assert exact <= eps <= exact * (1 + 1e-9)
    assert D.dlaplace_variance(2.0) == pytest.approx(2 * np.exp(-0.5) / (1 - np.exp(-0.5)) ** 2, rel=1e-14)


@pytest.mark.parametrize("e0, k", [(0.5, 2), (1.0, 4), (3.0, 100), (0.01, 7)])
def test_randomized_response_closed_forms(e0, k):
    for eps in (0.0, 0.3 * e0, 0.99 * e0, e0):
        exact = mp_rr_delta(e0, eps, k)
        got = D.rr_delta_at(e0, eps, k)
        assert exact - 1e-40 <= got <= exact * (1 + 1e-13) + 1e-300  # (mpmath round-off: 1e-50)
    keep = D.rr_keep_of(e0, k)
    assert keep <= mp.exp(e0) / (mp.exp(e0) + k - 1)
    assert D.rr_epsilon_of_keep(keep, k) <= e0
    assert mp.log(mp.mpf(keep) * (k - 1) / (1 - mp.mpf(keep))) <= D.rr_epsilon_of_keep(keep, k)
    eps = D.rr_epsilon_at(e0, 1e-3, k)
    assert mp_rr_delta(e0, eps, k) <= 1e-3
    assert eps == 0 or mp_rr_delta(e0, eps * (1 - 1e-9), k) > 1e-3


@pytest.mark.parametrize("e0", [0.05, 1.0, 5.0, 30.0])
def test_bounded_range_delta_is_the_max_over_t(e0):
    for frac in (0.0, 0.2, 0.7):
        eps = frac * e0
        dt = mp_grr_delta(e0, eps)
        exact = dt((mp.mpf(e0) + eps) / 2)
        got = D.br_delta_at(e0, eps)
        assert exact <= got <= exact * (1 + 1e-12)
        # and no t does better
        for t in np.linspace(eps, e0, 41):  # the maximum over t is at (ε₀ + ε)/2
            assert dt(mp.mpf(t)) <= exact * (1 + 1e-30)
        closed = (mp.exp(mp.mpf(e0) / 2) - mp.exp(mp.mpf(eps) / 2)) ** 2 / mp.expm1(e0)
        assert exact == pytest.approx(closed, rel=1e-30)
    assert D.br_delta_at(1.0, 0.0) == pytest.approx(np.tanh(0.25), rel=1e-14)


def test_bounded_range_inverses_and_calibrations():
    for e0, d in [(1.0, 1e-3), (0.3, 1e-6), (8.0, 1e-5)]:
        eps = D.br_epsilon_at(e0, d)
        assert D.br_delta_at(e0, eps) <= d * (1 + 1e-9)
        assert eps == 0 or D.br_delta_at(e0, eps * (1 - 1e-8)) > d
    for eps, d in [(0.5, 0.1), (1.0, 1e-6), (3.0, 1e-9)]:
        e0 = D.br_epsilon0_for(eps, d)
        assert D.br_delta_at(e0, eps) <= d
        assert D.br_delta_at(e0 * (1 + 1e-9), eps) > d
    e0 = D.br_epsilon0_for_rho(0.125)
    assert D.br_rho_of(e0) <= 0.125 and e0 == pytest.approx(1.0, rel=1e-14)


@pytest.mark.parametrize("e0", [0.1, 1.0, 4.0])
def test_bounded_range_zcdp_hoeffding(e0):
    # every generalized randomized response (losses t, t − ε₀) has D_α <= α ε₀²/8
    e0m = mp.mpf(e0)
    rho = D.br_rho_of(e0)
    for t in np.linspace(0.01, 0.99, 13) * e0:
        t = mp.mpf(t)
        p1 = (mp.exp(e0m) - mp.exp(t)) / (mp.exp(e0m) - 1)
        p0 = 1 - p1
        q1, q0 = p1 * mp.exp(-t), p0 * mp.exp(e0m - t)
        for a in (1.5, 2, 5, 20):
            a = mp.mpf(a)
            dv = mp.log(p1**a * q1 ** (1 - a) + p0**a * q0 ** (1 - a)) / (a - 1)
            assert dv <= a * rho


# --------------------------------------------------------------------------
# Vectorisation and validation
# --------------------------------------------------------------------------


def test_grids_are_one_call_and_match_scalars():
    eps = np.linspace(0.0, 3.0, 1000)
    for f, args in [
        (D.dgauss_delta_at, (1.5,)),
        (D.dlaplace_delta_at, (2.0,)),
        (lambda a, e: D.rr_delta_at(a, e, 3), (2.5,)),
        (D.br_delta_at, (2.0,)),
    ]:
        grid = f(*args, eps)
        assert grid.shape == (1000,)
        for i in (0, 137, 999):
            assert grid[i] == f(*args, float(eps[i]))
    sig = D.dgauss_epsilon_at(np.array([1.0, 2.0, 3.0]), 1e-5)
    assert sig.shape == (3,) and np.all(np.diff(sig) < 0)


def test_dlaplace_scale_grids_are_rows_of_one_array_and_match_scalars(monkeypatch):
    # Many scales (and sensitivities) are one array of atom rows, not a loop per scale: the same digits as
    # scale by scale, in chunks or not, and one atom build per sensitivity and chunk.
    rng = np.random.default_rng(5)
    t = np.exp(rng.uniform(np.log(0.05), np.log(200.0), 60))
    sens = rng.choice([1, 2, 7, 50], t.size)
    t[:10] = t[0]  # repeated scales share their atoms
    eps = rng.uniform(0.0, 1.2, t.size) * sens / t
    grid = D.dlaplace_delta_at(t, eps, sens)
    one = np.array([D.dlaplace_delta_at(float(a), float(e), int(s)) for a, e, s in zip(t, eps, sens)])
    assert np.array_equal(grid, one)
    builds = []
    real = D._dlaplace_atom_rows
    monkeypatch.setattr(D, "_dlaplace_atom_rows", lambda ts, s: builds.append(ts.size) or real(ts, s))
    monkeypatch.setattr(D, "_DL_CELLS", 64)  # chunks of a few cases
    assert np.array_equal(D.dlaplace_delta_at(t, eps, sens), one)
    assert len(builds) > 4 and max(builds) <= 32  # (64 cells: at most 32 cases of Δ = 1 a chunk)
    monkeypatch.setattr(D, "_DL_CELLS", 1 << 20)
    builds.clear()
    scales = np.linspace(0.5, 5.0, 1000)
    e = D.dlaplace_epsilon_at(scales, 1e-6)
    assert set(builds) == {1000}  # each bisection round: one build of all 1,000 scales
    assert e.shape == (1000,) and e[17] == D.dlaplace_epsilon_at(float(scales[17]), 1e-6)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: D.dgauss_delta_at(-1.0, 0.5), "sigma"),
        (lambda: D.dgauss_delta_at(1.0, 0.5, 1.5), "sensitivity"),
        (lambda: D.dgauss_epsilon_at(1.0, 2.0), "delta"),
        (lambda: D.dgauss_delta_at(1e7, 0.5), "sigma"),
        (lambda: D.dlaplace_scale_for_epsilon(0.0), "epsilon"),
        (lambda: D.rr_keep_of(1.0, 1), "k"),
        (lambda: D.rr_epsilon_of_keep(0.2, 3), "keep"),
        (lambda: D.br_delta_at(float("nan"), 0.1), "epsilon0"),
        (lambda: pld.discrete_gaussian(0.01), "sigma"),
        (lambda: pld.randomized_response(1.0, 2.5), "k"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValidationError) as err:
        call()
    assert err.value.name == name


# --------------------------------------------------------------------------
# PLD directions: single steps against the closed forms, compositions against dp-accounting
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dirs, exact",
    [
        (lambda: pld.discrete_gaussian(2.0), lambda d: D.dgauss_epsilon_at(2.0, d)),
        (lambda: pld.discrete_gaussian(1.0, 3), lambda d: D.dgauss_epsilon_at(1.0, d, 3)),
        (lambda: pld.discrete_laplace(2.0, 2), lambda d: D.dlaplace_epsilon_at(2.0, d, 2)),
        (lambda: pld.randomized_response(1.0, 5), lambda d: D.rr_epsilon_at(1.0, d, 5)),
        (lambda: pld.bounded_range(1.0), lambda d: D.br_epsilon_at(1.0, d)),
    ],
)
@pytest.mark.parametrize("delta", [1e-6, 1e-2])
def test_single_step_interval_contains_closed_form(dirs, exact, delta):
    ans = pld.epsilon([(dirs(), 1)], delta)
    e = exact(delta)
    assert ans.lower[0] - 1e-9 * e <= e <= ans.upper[0] + 1e-9 * e


def test_composed_discrete_gaussian_contains_mpmath():
    # σ = 0.5: every loss is an even integer, so dp-accounting's grid is exact — yet its float sums land
    # ~2e-9 below the truth; the certified interval contains the 50-digit value.
    ans = pld.epsilon([(pld.discrete_gaussian(0.5), 5)], 1e-6)
    exact = mp_eps_of(lambda e: mp_dg_composed_delta(0.5, 1, 5, e), mp.mpf("1e-6"), hi=64)
    assert ans.lower[0] <= exact <= ans.upper[0]
    theirs = PLD.from_discrete_gaussian_mechanism(0.5, 1).self_compose(5).get_epsilon_for_delta(1e-6)
    assert theirs == pytest.approx(float(exact), abs=1e-8)


def _theirs(p, k, delta=1e-6):
    return (p.self_compose(k) if k > 1 else p).get_epsilon_for_delta(delta)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda: [(pld.discrete_gaussian(2.0), 10)], lambda: _theirs(PLD.from_discrete_gaussian_mechanism(2.0, 1), 10)),
        (lambda: [(pld.discrete_laplace(10.0), 50)], lambda: _theirs(PLD.from_discrete_laplace_mechanism(0.1, 1), 50)),
        (
            lambda: [(pld.discrete_laplace(5.0, 3), 20)],
            lambda: _theirs(PLD.from_discrete_laplace_mechanism(0.2, 3), 20),
        ),
        (
            lambda: [(pld.randomized_response(0.5, 4), 100)],
            # noise parameter p: keep = 1 − p + p/k = e^ε/(e^ε + k − 1)
            lambda: _theirs(PLD.from_randomized_response((1 - np.exp(0.5) / (np.exp(0.5) + 3)) * 4 / 3, 4), 100),
        ),
        (
            lambda: [(pld.discrete_gaussian(3.0), 20), (pld.gaussian(0.2), 50)],
            lambda: (
                PLD.from_discrete_gaussian_mechanism(3.0, 1)
                .self_compose(20)
                .compose(PLD.from_gaussian_mechanism(5.0).self_compose(50))
                .get_epsilon_for_delta(1e-6)
            ),
        ),
    ],
)
def test_compositions_against_dp_accounting(ours, theirs):
    ans = pld.epsilon(ours(), 1e-6)
    th = theirs()
    # their pessimistic PLD (1e-4 grid) is at or above our certified lower end (up to their float
    # round-off) and close to our upper end
    assert th >= ans.lower[0] - 1e-8
    assert abs(th - ans.upper[0]) <= 2e-3 * ans.upper[0]
    assert ans.met[0]


def test_bounded_range_composition_between_nonadaptive_lower_and_pure_dp():
    e0, k, d = 0.5, 50, 1e-6
    up = pld.epsilon([(pld.bounded_range(e0), k)], d)
    # k non-adaptive generalized randomized responses at one t are k ε₀-BR mechanisms: a lower bound
    low = max(float(pld.epsilon([(pld.generalized_rr(e0, t * e0), k)], d).lower[0]) for t in (0.55, 0.62, 0.7))
    assert low <= up.lower[0]
    assert up.upper[0] < composition.optimal_homogeneous(e0, 0.0, k, d)
    # many small steps: the zCDP bound ε₀²/8 per step can be the tighter one (the CLI takes the minimum)
    z = zcdp.epsilon_tight(k * D.br_rho_of(e0), d)
    assert low <= z


def test_discrete_gaussian_many_steps_and_large_sigma():
    ans = pld.epsilon([(pld.discrete_gaussian(1000.0), 1000)], 1e-6)
    # close to the continuous Gaussian with μ = √1000/1000 (the discrete one is a little different)
    from dpcalc.core import gdp

    cont = gdp.epsilon(np.sqrt(1000) / 1000, 1e-6)
    assert ans.lower[0] <= ans.upper[0] and abs(ans.upper[0] - cont) < 1e-3


@pytest.mark.parametrize("refuse", ["raises", "float64"])
def test_q_sums_without_a_long_double_lfilter_are_the_same(monkeypatch, refuse):
    """The long-double recurrence S_i = p_i + r·S_{i−1} behind the discrete Gaussian's Q-sums: scipy's lfilter
    warns that long double is deprecated; a SciPy that refuses it, or returns doubles (which would void the
    (3n + 2)·u_ld bound), is met by the same steps in a loop — the same values, bit for bit."""
    import scipy.signal

    rng = np.random.default_rng(3)
    ld = np.longdouble
    p = rng.random(3000).astype(ld) / ld(3)
    r = np.exp(-ld(1) / ld(7))
    fast = D._first_order_sums(p, r)
    real = scipy.signal.lfilter

    def broken(b, a, x):
        if refuse == "raises":
            raise TypeError("dtype=float128 is not supported by lfilter")
        return real(np.asarray(b, float), np.asarray(a, float), np.asarray(x, float))

    monkeypatch.setattr(scipy.signal, "lfilter", broken)
    slow = D._first_order_sums(p, r)
    assert slow.dtype == ld and np.array_equal(slow, fast)
    # ... and it is the recurrence: checked against a plain loop in the same precision
    acc, ref = ld(0), []
    for x in p[:50]:
        acc = x + r * acc
        ref.append(acc)
    assert np.array_equal(fast[:50], np.array(ref, dtype=ld))


def test_the_table_cache_makes_room_before_it_builds(monkeypatch):
    """The tables kept and the one being built fit the atom budget together: the oldest go before the new one
    is formed (a calibration near the largest σ peaked above 1 GB keeping two tables while building a third)."""
    from dpcalc.core import discrete as Dd

    cache = Dd._TableCache()
    size = {s: 2 * Dd._dg_half_width(s) + 1 for s in (50.0, 50.5, 51.0)}
    budget = size[50.5] + size[51.0]  # room for two of them, not three
    monkeypatch.setattr(Dd, "TABLE_CACHE_ATOMS", budget)
    kept_while_building = []
    real = Dd.DGaussTable

    def spy(sigma):
        kept_while_building.append(sum(t.p.size for t in cache._tables.values()) + size[sigma])
        return real(sigma)

    monkeypatch.setattr(Dd, "DGaussTable", spy)
    for s in (50.0, 50.5, 51.0, 50.0):
        cache(s)
    assert len(kept_while_building) == 4 and max(kept_while_building) <= budget
    assert list(cache._tables) == [51.0, 50.0]


@pytest.mark.parametrize(
    "e0, delta, k",
    [
        (1e-8, 4.03e-19, 245),
        (8.7e-8, 2.5e-17, 10),
        (1.653e-8, 2.08e-19, None),
        (7.0255e-8, 6.46e-17, None),
        (2.0, 1e-3, 5),
        (1.0, 0.24491866202616847, None),  # ε ≈ 1e-9: ε₀ + 2 log(1 − r) cancels nine digits
        (10.0, 0.9996, 4),  # ε ≈ 1.76 from ε₀ = 10: four digits
        (3.0, 0.5, 3),
        (1.0, 0.9, 3),  # δ above keep: ε = 0
    ],
)
def test_randomized_response_and_bounded_range_epsilon_are_exact(e0, delta, k):
    """ε(δ) of randomized response and of the bounded-range class are labelled exact: within 2^-46 of the truth
    (above it), at a tiny ε₀ and where ε₀ + log(…) cancels (there in decimal); their lower ends below it. An
    absolute error term put ε₀ = 1e-8 up to 4e-7 relative above (helper-65), and the cancellation 9.5e-6 — which
    compose's brackets took as a lower end, above the truth (helper-66)."""
    mp.mp.dps = 50
    E0, Dl = mp.mpf(e0), mp.mpf(delta)
    if k is None:
        true = E0 + 2 * mp.log(1 - mp.sqrt(Dl * (1 - mp.exp(-E0))))
        lo, hi = D.br_epsilon_bounds(e0, delta)
        assert D.br_epsilon_at(e0, delta) == hi
    else:
        keep = 1 / (1 + (k - 1) * mp.exp(-E0))
        true = E0 + mp.log(1 - Dl / keep)
        lo, hi = D.rr_epsilon_bounds(e0, delta, k)
        assert D.rr_epsilon_at(e0, delta, k) == hi
    if not mp.im(true) == 0 or true <= 0:
        assert lo == hi == 0.0
    else:
        assert true * (1 - 2.0**-46) <= lo <= true <= hi <= true * (1 + 2.0**-46)


def test_discrete_certified_lower_ends_are_below_the_truth():
    """The lower ends compose's brackets take from a discrete mechanism's exact ε (its search's tolerance, or its
    formula's error bound, apart from it): at most the truth, and close to it."""
    from dpcalc.accounting import Part, closed_form_lowers

    for dl in (1e-3, 0.2449, 1e-9):
        lo = D.dlaplace_epsilon_at(2.0, dl, 1, lower=True)
        up = D.dlaplace_epsilon_at(2.0, dl, 1)
        assert lo <= up and (up == 0 or lo >= up * (1 - 1e-9))
        assert D.dlaplace_delta_at(2.0, lo * (1 - 1e-15), 1) > dl or lo == 0
        glo, gup = D.dgauss_epsilon_at(3.0, dl, 1, lower=True), D.dgauss_epsilon_at(3.0, dl, 1)
        assert glo <= gup and (gup == 0 or glo >= gup * (1 - 1e-9))
    assert closed_form_lowers([Part(kind="br", epsilon=1.0, times=1)], [0.24491866202616847])[0] <= 1e-9
    assert closed_form_lowers([Part(kind="br", epsilon=1.0, times=2)], [0.1]) == [None]


def test_compose_brackets_take_certified_lower_ends():
    """A grid of bounded-range ε₀ a few ulps apart at a δ where ε ≈ 1e-9 (ε₀ + 2 log(1 − r) cancels): every
    bracket row's ε ≥ is at most the true ε (172 were above it, by the exact value's rounding: helper-66)."""
    import json

    from click.testing import CliRunner

    from dpcalc.cli import cli

    e0s = [1.0 + j * 2.0**-52 for j in range(300)]
    r = 1 - mp.exp(-(mp.mpf(1) - mp.mpf("1e-9")) / 2)
    dl = float(r * r / (1 - mp.exp(-mp.mpf(1))))
    args = ["compose", "bounded-range", "--epsilon", ",".join(map(repr, e0s)), "--times", "1", "--delta", repr(dl)]
    out = CliRunner().invoke(cli, [*args, "--json"])
    rows = [row for row in json.loads(out.stdout)["rows"] if row["method"] == "bracket"]
    assert len(rows) > 100
    for row in rows:
        e0 = mp.mpf(row["epsilon_each"])
        true = e0 + 2 * mp.log(1 - mp.sqrt(mp.mpf(row["delta"]) * (1 - mp.exp(-e0))))
        assert row["epsilon_lower"] <= true <= row["epsilon"]


def test_randomized_response_keep_below_one_at_a_huge_epsilon0():
    """Where the keep-probability rounds to 1 (ε₀ = 500), the largest double below 1 is the answer: below the true
    keep (safe), and its own ε is below ε₀ (found by an independent audit, helper-64: it was refused)."""
    keep = D.rr_keep_of(500.0, 6)
    assert keep == np.nextafter(1.0, 0.0)
    assert D.rr_epsilon_of_keep(keep, 6) <= 500.0
