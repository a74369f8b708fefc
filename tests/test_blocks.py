"""A narrow step's bulk composed in blocks on a finer grid (dpcalc.core.pld.blocks, retries._by_blocks)."""

import math

import numpy as np
import pytest
from peers import dpa_epsilon as _dpa
from scipy import optimize, stats

from dpcalc.core import pld, sgd
from dpcalc.core.pld import blocks as B
from dpcalc.core.pld import compose as C
from dpcalc.core.pld import discretise as D
from dpcalc.core.pld import engine as E
from dpcalc.core.pld import exact
from dpcalc.core.pld import jumps as J
from dpcalc.core.pld import retries as R
from dpcalc.core.pld.mechanisms import gaussian, subsampled_gaussian


def _delta(d, eps):
    """δ(ε) of a discrete step read straight from its masses (no allowances)."""
    ell = d.losses()
    with np.errstate(over="ignore"):
        return float(np.sum(d.p * np.maximum(-np.expm1(eps - ell), 0.0))) + d.p_inf


def _fine_block(d, times, lam):
    """The same block composed on the fine grid and untilted (the reference the coarse blocks bound)."""
    cp = C.compose([(d, times)], lam=lam, eta=1e-24, upper=True, extended=C.FULL)
    ell = (cp.k0 + np.arange(cp.p.size) + cp.c) * d.h
    with np.errstate(over="ignore"):
        p = cp.p * np.exp(cp.g - lam * ell)
    return D.Discrete(d.h, cp.k0, cp.c, p, cp.p_inf)


@pytest.mark.parametrize("k", [1, 3])
def test_a_block_moves_its_losses_the_safe_way(k):
    # The upper block (connect the dots onto the coarse nodes, the error bound added) has every δ(ε) at
    # least the fine composition's; the lower block (error bound taken off, masses moved down) at most.
    # (The bulk of a split step, tilted for 4096 releases at δ = 1e-8, as the engine's blocks are.)
    d = subsampled_gaussian(1e-3, 0.7)[0]
    h, times, t, delta = 2.0**-16, 512, 4096, 1e-8
    up_step = J.split(D.discretise_upper(d, h, 1e-16), t, delta).b
    low_step = J.split(D.discretise_lower(d, h, 1e-16, times=t), t, delta).b
    lam = float(C.choose_tilts([(low_step, t)], np.log([delta]), [0.5])[0][0])
    up = B.block(up_step, times, k, lam, True)[0]
    low, law = B.block(low_step, times, k, lam, False)
    ref_up = _fine_block(up_step, times, lam)
    ref_low = _fine_block(low_step, times, lam)
    assert up.h == low.h == h * 2**k
    for eps in np.linspace(0.0, 0.6, 25):
        assert _delta(up, eps) >= _delta(ref_up, eps) * (1 - 1e-12)
        assert _delta(low, eps) <= _delta(ref_low, eps) * (1 + 1e-12)
    # The rounding's law: each mass moved by a whole number of fine cells below 2^k, its mean bracketed.
    mean_lo, second_hi, mean_hi = law
    ell = ref_low.losses()
    node = (np.floor((ell / h - ref_low.c) / 2**k + 1e-9) * 2**k + ref_low.c) * h
    moved = ell - node
    mass = float(np.sum(ref_low.p))
    mean = float(np.sum(ref_low.p * moved)) / mass
    assert 0.0 <= mean_lo <= mean <= mean_hi < 2**k * h
    assert second_hi >= float(np.sum(ref_low.p * moved * moved)) / mass
    assert mean_hi - mean_lo < 1e-6 * mean


def test_the_bulks_families_carry_every_blocked_release_and_every_block():
    # Term k takes T − k releases of the bulk: whole blocks, the leftover block, and single releases (moved
    # onto the coarse grid, their moves in their step). The families must count every blocked release's
    # fine move and every block's rounding: (total mean, total variance, b) with the variance at least
    # the blocks' rounding variance — a family that under-counts its variance gives back too much.
    d = subsampled_gaussian(1e-3, 0.7)[0]
    h, t, delta = 2.0**-16, 5000, 1e-8
    sp = J.split(D.discretise_lower(d, h, 1e-16, times=t), t, delta)
    lam = float(C.choose_tilts([(sp.b, t)], np.log([delta]), [0.5])[0][0])
    bulk = B.bulk(sp, 1024, 2, lam, False, J.TERMS - 1)
    assert (bulk.count, bulk.left) == divmod(t - (J.TERMS - 1), 1024) and bulk.leftover is not None
    for k in range(J.TERMS):
        parts = bulk.parts(t - k)
        assert (
            sum(n * (bulk.size if x is bulk.block else 1) for x, n in parts if x is not bulk.leftover) + (bulk.left)
            == t - k
        )
        (m_a, v_a, b_a), (m_b, v_b, b_b) = bulk.families(t - k)
        n = bulk.count * bulk.size + bulk.left
        assert m_a == pytest.approx(n * sp.b.move_mean, rel=1e-12) and v_a >= n * sp.b.move_var
        assert b_a >= sp.b.move_mean
        laws = [bulk.laws[0]] * bulk.count + [bulk.laws[1]]
        assert m_b == pytest.approx(sum(law[0] for law in laws), rel=1e-12)
        assert v_b >= sum(law[1] - law[2] ** 2 for law in laws) > 0
        assert b_b >= max(law[2] for law in laws)
    with pytest.raises(ValueError):
        bulk.parts(t - J.TERMS)


def _gaussian_eps(mu, delta):
    def f(e):
        return stats.norm.sf(e / mu - mu / 2) - math.exp(e) * stats.norm.sf(e / mu + mu / 2) - delta

    return optimize.brentq(f, 0.0, 100.0, xtol=1e-14, rtol=1e-14)


@pytest.mark.parametrize(
    ("sigma", "t", "delta", "h"), [(1000.0, 10**6, 1e-6, 2.0**-12), (300.0, 2 * 10**5, 1e-9, 2.0**-12)]
)
def test_the_blocked_interval_contains_the_exact_gaussian_composition(sigma, t, delta, h):
    # T Gaussian steps (μ-GDP with μ = √T/σ): the exact ε is known; the blocked route, started from a
    # bracket 10 % wide, must narrow it to a fraction of a percent and keep the exact value inside.
    exact = _gaussian_eps(math.sqrt(t) / sigma, delta)
    lo, up = R._by_blocks([(gaussian(1.0 / sigma), t)], delta, 0.9 * exact, 1.1 * exact, h, 1e-3, 1e-4)
    assert lo <= exact <= up
    assert up - lo < 2e-3 * exact


def test_at_an_epsilon_in_the_hundred_thousands_the_blocked_interval_holds_the_exact_value():
    # 10^6 Gaussian steps with σ = 2 (μ = 500, ε ≈ 128,180 at δ = 1e-10): the terms' windows start at
    # the lower end given (cut, their alias weighed by C(T, k)), and a lower end's alias comes off the
    # whole δ. Both ends must hold the exact value and narrow a bracket 2 % wide to 0.01 %.
    mu = 500.0
    lo_e, up_e = exact.gaussian_interval(np.array([mu]), np.array([1e-10]), np.array([mu]))
    ex = float(up_e[0])
    lo, up = R._by_blocks([(gaussian(0.5), 10**6)], 1e-10, 0.99 * ex, 1.01 * ex, 2.0**-6, 1e-3, 1e-4)
    assert lo <= float(up_e[0]) and float(lo_e[0]) <= up
    assert up - lo < 1e-4 * ex


@pytest.mark.parametrize(
    ("q", "sigma", "t", "delta", "h"), [(1e-3, 0.8, 8192, 1e-6, 2.0**-15), (5e-4, 1.0, 50000, 1e-5, 2.0**-16)]
)
def test_the_blocked_interval_overlaps_the_usual_one_and_sits_below_dp_accounting(q, sigma, t, delta, h):
    # Subsampled steps with jumps split off: both ends of the blocked route are certified, so they must
    # overlap the usual engine's narrow interval — within a few 1e-4 of it — and the lower end stay
    # below dp-accounting's pessimistic (connect the dots) answer.
    m = [(subsampled_gaussian(q, sigma), t)]
    ref = pld.epsilon(m, delta, rel=1e-4, abs_=1e-5)
    ref_lo, ref_up = float(ref.lower[0]), float(ref.upper[0])
    lo, up = R._by_blocks(m, delta, 0.95 * ref_lo, 1.05 * ref_up, h, 1e-3, 1e-4)
    assert lo <= ref_up and ref_lo <= up
    assert ref_lo - lo < 3e-4 and up - ref_up < 2e-4
    assert lo <= _dpa(q, sigma, t, delta, 2e-5) * (1 + 1e-9)


def test_the_terms_read_on_a_grid_answer_as_the_bisection_does():
    # Reading each term's curve on a fixed grid (and dropping its composition) gives the same ends as
    # the bisection over the held terms, to the grid's spacing.
    st = D.discretise_lower(subsampled_gaussian(1e-3, 0.6)[0], 2.0**-12, 1e-16, times=3000)
    sp = J.split(st, 3000, 1e-8)
    assert sp.j is not None
    held = J.terms(sp, 1e-8, 3.9, False)
    lo0, up0 = 3.0, 5.0
    grid = np.linspace(lo0, up0, 4097)
    read = J.terms(sp, 1e-8, 3.9, False, grid=grid)
    a, _ = J.epsilon_bounds([], held, 1e-8, lo0, up0)
    b, _ = J.epsilon_bounds([], read, 1e-8, lo0, up0)
    assert lo0 < b <= a < up0 and a - b <= grid[1] - grid[0]
    assert J.curve(read, b) > 1e-8
    with pytest.raises(ValueError):
        J.curve(read, b + 1e-9)


def test_a_million_narrow_steps_at_a_tiny_delta_are_answered_within_the_width():
    # q = 1.23e-6, σ = 0.785, 1.25e6 steps, δ = 1.05e-11: one step's loss spreads over a few cells of the
    # finest grid that fits, and the binned lower end lagged 5e-4 behind: [0.014800, 0.015562], 7.6
    # times the width asked for. Both ends are certified: the new interval lies inside that one.
    q, s, t, d = 1.2285240957060973e-06, 0.7851655522407585, 1246375, 1.0525819199602743e-11
    r = sgd.tight_interval(q, s, t, d)
    lo, up = float(r.lower[0]), float(r.upper[0])
    assert r.met[0] and r.method[0] == "pld"
    assert up - lo <= max(1e-3 * up, 1e-4)
    # (The upper end is 0.01556174 on two cores and 0.015562057 on one: OpenBLAS splits the blocked
    # log-MGF's matrix product across its threads, which changes the order of its sums, the tilts' last
    # digits, and so the grid point reached. The old interval's end bounds it, not the two-core value.)
    assert 0.0147999 <= lo and up <= 0.0155621


def test_a_lower_curve_takes_a_cut_windows_alias_off_the_whole_delta():
    # A cut window may have wrapped mass from below the cut onto its top: at most ``alias`` of δ. A lower
    # curve must take all of it off — off P[L = ∞] as far as that goes, the rest off the finite part
    # (before, only off P[L = ∞]: with none there, nothing came off).
    st = D.discretise_lower(subsampled_gaussian(0.01, 1.0)[0], 2.0**-10, 1e-16, times=100)
    cp = C.compose([(st, 100)], lam=3.0, eta=1e-20, upper=False)
    eps = np.array([0.5, 1.0, 1.5])
    from dataclasses import replace

    from dpcalc.core.pld.query import Reader

    r0 = Reader(replace(cp, alias=0.0, p_inf=0.0))
    d0 = np.exp(r0.log_delta(r0.index_after(eps), eps, -1.0))
    for p_inf in (0.0, 1e-3 * float(d0.min())):
        alias = 1e-2 * d0
        for e, a, base in zip(eps, alias, d0):
            r = Reader(replace(cp, alias=float(a), p_inf=p_inf))
            got = float(np.exp(r.log_delta(r.index_after(np.array([e])), np.array([e]), -1.0))[0])
            assert got <= base + p_inf - a * (1 - 1e-9)
            assert got >= (base + p_inf - a) * (1 - 1e-9)


def test_blocks_are_tried_only_for_steps_narrow_next_to_the_lower_ends_grid():
    # The misses the blocks meet had a step spread of 1–13 cells of the lower end's grid; a wide step
    # (q = 0.001, σ = 0.8: 509 cells of 2^-18, at a width of 1e-5) gains nothing from them and would
    # pay about 24 s: it is not tried.
    def answer(h_lower):
        return E.Answer(np.zeros(1), np.ones(1), h_lower, h_lower, np.zeros(1, dtype=bool))

    wide = [(subsampled_gaussian(0.001, 0.8), 100000)]
    narrow = [(subsampled_gaussian(1.2285240957060973e-06, 0.7851655522407585), 1246375)]
    assert not R._narrow(wide, answer(2.0**-18), answer(2.0**-18))
    assert R._narrow(narrow, answer(2.0**-21), answer(2.0**-20))
    assert not R._narrow(narrow, answer(2.0**-28), answer(2.0**-28))


def test_a_discarded_lower_end_takes_no_blocks(monkeypatch):
    # Sampling without replacement replaces the hull's lower end by Poisson sampling's (the hull's is no
    # bound on the mechanism): its misses must not pay for blocks that raise a lower end nobody reads.
    def boom(*a, **k):
        raise AssertionError("blocks tried for a lower end that is discarded")

    monkeypatch.setattr(E, "_by_blocks", boom)
    r = sgd.tight_interval(1e-4, 0.7, 10000, 1e-8, sampling="without-replacement")
    assert not r.met[0] and r.lower[0] < r.upper[0]

    # (A miss with its lower end used does try them: q = 1e-6, σ = 0.7, 10⁷ steps, δ = 1e-12, right after
    # the split — stopped there.)
    class Tried(Exception):
        pass

    def tried(*a, **k):
        raise Tried

    monkeypatch.setattr(E, "_by_blocks", tried)
    with pytest.raises(Tried):
        pld.epsilon([(subsampled_gaussian(1e-6, 0.7), 10**7)], 1e-12)


def test_the_infinite_mass_of_sub_probability_parts_is_bounded_by_their_own_masses():
    # A split's term composes sub-probability parts: a far-tail step of mass ι taken k times beside blocks
    # that carry the tilted mass beyond their windows at +∞. Its infinite mass is Π(m + π)^T − Π m^T, about
    # ι^k times 1 − Π(1 − π)^T — which the weight C(T, k) multiplied (q = 1e-6, σ = 0.7, 10⁷ steps: the
    # three-jump term's upper δ was 4e-4 at every ε). Checked against exact rational arithmetic.
    from fractions import Fraction

    rng = np.random.default_rng(5)
    h = 2.0**-10
    block = D.Discrete(h, 0, 0.0, rng.random(300) * (0.999 / 150), 3e-20)
    jump = D.Discrete(h, 500, 0.0, rng.random(40) * 1e-11 / 20, 0.0)
    single = D.Discrete(h, 0, 0.0, rng.random(50) * (1.0 / 25), 0.0)
    for parts in ([(block, 10), (jump, 1)], [(block, 10), (jump, 3), (single, 2)], [(block, 7)]):
        exact_inf = Fraction(1)
        exact_fin = Fraction(1)
        old = 0.0
        for d, t in parts:
            m = sum(Fraction(float(x)) for x in d.p)
            exact_inf *= (m + Fraction(d.p_inf)) ** t
            exact_fin *= m**t
            old += t * np.log1p(-d.p_inf)
        exact = exact_inf - exact_fin
        got = C._sub_infinite(parts)
        assert Fraction(got) >= exact
        assert got <= float(exact) * (1 + 1e-9)
        assert got <= -np.expm1(old) * (1 + 1e-9)
        cp = C.compose(parts, lam=2.0, eta=1e-20, upper=True)
        assert cp.p_inf == min(got, cp.p_inf) and Fraction(cp.p_inf) >= exact
    # Probability steps (no part short of 1): the formula for them, 1 − Π(1 − π)^T, as before.
    whole = D.Discrete(h, 0, 0.0, np.full(4, (1 - 1e-9) / 4), 1e-9)
    assert C._sub_infinite([(whole, 5)]) == np.inf
    assert C.compose([(whole, 5)], lam=1.0, upper=True).p_inf == pytest.approx(-np.expm1(5 * np.log1p(-1e-9)))


def test_lower_blocks_are_tilted_for_the_level_their_terms_are_read_at(monkeypatch):
    # q = 1e-6, σ = 0.65, 10⁷ steps, δ = 1e-8 (the bulk carries δ): on one fit of the fine grid the steps'
    # moves add up to 0.38, given back when the terms are read — 0.38 below the guess, where blocks tilted
    # for the guess (λ ≈ 4,300) hold their masses below the round-off: the lower end found nothing. Tilted
    # for the read's level it meets the width. (Both ends are certified: the old upper end, 0.0442699 on
    # this grid, bounds the new lower one.)
    mechs = [(subsampled_gaussian(1e-6, 0.65), 10**7)]
    lo, up = R._by_blocks(mechs, 1e-8, 0.04415, 0.04433, 2.0**-21, 1e-3, 1e-4)
    assert 0.04422 <= lo <= 0.0442699 and up - lo <= 1e-4
    tilts = R._block_tilts
    monkeypatch.setattr(R, "_block_tilts", lambda whole, sp, delta, guess, give=0.0: tilts(whole, sp, delta, guess))
    lo2, _ = R._by_blocks(mechs, 1e-8, 0.04415, 0.04433, 2.0**-21, 1e-3, 1e-4)
    assert lo2 < lo - 5e-5


def test_blocks_for_the_terms_with_jumps_take_their_own_tilt(monkeypatch):
    # q = 1e-6, σ = 0.7, 10⁷ steps, δ = 1e-12 (one far-tail step carries δ): blocks tilted for the bulk
    # alone (λ ≈ 1000) read by the one-jump term near the bulk's centre gave an upper δ of 3e-8 — no upper
    # end; tilted for that term (λ ≈ 42) they give 0.071504. References: the split without blocks on
    # 2^-20 gave [0.07116, 0.07324], the engine before [0.05598, 0.09104] (each certified).
    mechs = [(subsampled_gaussian(1e-6, 0.7), 10**7)]
    lo, up = R._by_blocks(mechs, 1e-12, 0.0712, 0.0801, 2.0**-19, 1e-3, 1e-4)
    assert 0.07141 <= lo and up <= 0.07151 and up - lo <= 1e-4
    assert lo <= 0.07324 and up >= 0.07116

    def bulk_tilt_only(whole, sp, delta, guess, give=0.0):
        return [R._tilt_blocked(whole, sp, delta, guess)[1]]

    monkeypatch.setattr(R, "_block_tilts", bulk_tilt_only)
    _, up2 = R._by_blocks(mechs, 1e-12, 0.0712, 0.0801, 2.0**-19, 1e-3, 1e-4)
    assert up2 > up + 1e-3
