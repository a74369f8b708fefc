"""Compositions split by the number of far-tail steps (dpcalc.core.pld.jumps)."""

import math

import numpy as np
import pytest
from peers import dpa_epsilon as _dpa
from scipy import optimize, stats

from dpcalc.core import pld, sgd
from dpcalc.core.pld import compose as C
from dpcalc.core.pld import directions as Dr
from dpcalc.core.pld import discretise as D
from dpcalc.core.pld import engine as E
from dpcalc.core.pld import jumps as J
from dpcalc.core.pld import query as Qy
from dpcalc.core.pld import retries as R
from dpcalc.core.pld.mechanisms import gaussian, subsampled_gaussian


def _step(kind, h=2.0**-10, q=0.01, s=1.0):
    d = subsampled_gaussian(q, s)[0]
    if kind == "upper":
        return D.discretise_upper(d, h, 1e-14)
    return D.discretise_lower(d, h, 1e-14, times=50)


def test_terms_sum_to_the_whole_composition(monkeypatch):
    # With every term composed (k = 0..T), Σ_k C(T, k)·B^{T−k}*J^k is the T-fold composition itself:
    # the summed upper curve must agree with the single composition's, up to their allowances.
    st = _step("upper")
    t = 12
    ia = int(np.searchsorted(st.losses(), 0.3))
    b, j = J._part(st, 0, ia), J._part(st, ia, st.p.size)
    iota = float(np.sum(j.p))
    sp = J.Split(b, j, t, iota, 0.0, st.p_inf)
    monkeypatch.setattr(J, "TERMS", t + 1)
    tm = J.terms(sp, 1e-6, 1.0, True)
    assert len(tm.items) == t + 1
    lam = float(C.choose_tilts([(st, t)], np.log([1e-6]), [1.0])[0][0])
    cp = C.compose([(st, t)], lam=lam, eta=1e-30)
    for eps in (0.2, 0.6, 1.0, 1.5):
        whole = float(Qy.delta_at(cp, eps, 1.0)[0])
        split = J.curve(tm, eps)
        assert split == pytest.approx(whole, rel=1e-6)
    # The lower parts' moves, conditional on each part, average back to the whole step's (computed apart).
    lo = _step("lower")
    b, j = J._part(lo, 0, ia), J._part(lo, ia, lo.p.size)
    both = b.move_mean * float(np.sum(b.p)) + j.move_mean * float(np.sum(j.p))
    assert both == pytest.approx(lo.move_mean, rel=1e-6)
    # The terms left out (k >= TERMS) carry at most `rest` of P-mass: check the bound against the binomial.
    sp4 = J.split(st, t, 1e-6, share=1e-5, k_terms=4)
    exact_rest = sum(math.comb(t, k) * sp4.iota**k for k in range(4, t + 1))
    assert exact_rest <= sp4.rest


def test_coarser_grids_move_losses_the_safe_way():
    up, lo = _step("upper"), _step("lower")
    cu, cl = J.coarsen_up(up), J.coarsen_down(J._part(lo, 0, lo.p.size))

    def delta(d, eps):
        ell = d.losses()
        return float(np.sum(d.p * np.maximum(-np.expm1(eps - ell), 0.0)))

    for eps in np.linspace(0.0, 1.5, 31):
        assert delta(cu, eps) >= delta(up, eps) * (1 - 1e-15)
        assert delta(cl, eps) <= delta(lo, eps) * (1 + 1e-15)
    assert cu.h == cl.h == 2 * up.h
    assert float(np.sum(cu.p)) >= float(np.sum(up.p))
    # The coarse lower step's recorded moves: each mass moved by its old move plus 0 or 1 fine cell.
    g = lo.k0 + np.arange(lo.p.size)
    extra = (g - 2 * np.floor_divide(g, 2)) * lo.p
    total = (float(np.sum(lo.move1)) + float(np.sum(extra))) / 2
    assert float(np.sum(cl.move1)) == pytest.approx(total, rel=1e-12)
    assert cl.move_mean <= total / float(np.sum(cl.p)) * cl.h


def _gaussian_eps(mu, delta):
    def f(e):
        return stats.norm.sf(e / mu - mu / 2) - math.exp(e) * stats.norm.sf(e / mu + mu / 2) - delta

    return optimize.brentq(f, 0.0, 100.0, xtol=1e-14, rtol=1e-14)


@pytest.mark.parametrize(
    "mu, t, delta, h, rel",
    [(0.2, 100, 1e-10, 2.0**-12, 1e-6), (1.0, 10, 1e-12, 2.0**-12, 1e-6), (0.01, 100_000, 1e-8, 2.0**-14, 2e-5)],
)
def test_split_interval_contains_the_exact_gaussian_composition(mu, t, delta, h, rel):
    # T Gaussian steps with μ compose exactly to μ√T: both ends of the split route must bracket it. In
    # the last case the lower discretisation moved the losses down by 0.0022 in all; the interval is
    # 1.9e-4 wide only if each term gives its moves back.
    exact = _gaussian_eps(mu * math.sqrt(t), delta)
    lo, up = R._by_jumps([(gaussian(mu), t)], delta, 0.0, 2 * exact + 1e-3, h, 1e-3, 1e-4, check=False)
    assert lo <= exact <= up
    assert up - lo <= rel * exact


@pytest.mark.parametrize(
    "q, s, t, d",
    [(0.004193, 2.037, 3772, 3.73e-10), (0.001138, 2.309, 136, 1.15e-4), (0.0001841, 0.9642, 103, 8.4e-10)],
)
def test_split_interval_agrees_with_the_usual_one_and_with_dp_accounting(q, s, t, d):
    mechs = [(subsampled_gaussian(q, s), t)]
    ans = pld.epsilon(mechs, d)
    lo, up = float(ans.lower[0]), float(ans.upper[0])
    jl, ju = R._by_jumps(mechs, d, 0.0, 1.5 * up + 1e-3, 2.0**-17, 1e-3, 1e-4, check=False)
    assert jl <= up and lo <= ju  # two certified intervals of one ε overlap
    assert jl > 0.99 * lo  # and the split one is a real answer, not [0, up]
    assert jl <= _dpa(q, s, t, d, 1e-5)  # their pessimistic PLD is an upper bound


def test_small_rate_tiny_delta_corner_meets_the_width():
    # q = 1.14e-6, σ = 0.635, 82,922 steps, δ = 1.54e-12: one composition gave [0.0343, 0.1306], and with
    # every stage in long double [0.0835, 0.0896] (1e-4 asked): δ comes from single steps' far tails,
    # which no tilt of the whole composition centres. Composed by the number of such steps: met.
    ans = pld.epsilon([(subsampled_gaussian(1.14e-6, 0.635), 82922)], 1.54e-12)
    assert ans.met[0]
    assert ans.upper[0] - ans.lower[0] <= 1e-4
    assert 0.0835 <= ans.lower[0] and ans.upper[0] <= 0.0896
    assert ans.upper[0] <= sgd.epsilon(1.14e-6, 0.635, 82922, 1.54e-12, "rdp")


def test_a_part_without_mass_leaves_its_terms_out():
    # (ε, δ) = (1, 0.95) twice: T·(finite mass) is so small that the split's bulk would be empty; the
    # terms with bulk steps are then the zero measure, not the tail's composition alone (which put the
    # lower end 7.3e-7 above the exact 0.45887683130663 at a tiny width asked for).
    from fractions import Fraction

    def exact_delta(eps):
        p = Fraction(math.exp(1.0)) / (1 + Fraction(math.exp(1.0)))
        tot = 1 - Fraction(1, 20) ** 2
        s = sum(
            math.comb(2, k) * p**k * (1 - p) ** (2 - k) * max(0.0, -math.expm1(eps - (2 * k - 2))) for k in range(3)
        )
        return float(tot + Fraction(1, 20) ** 2 * Fraction(s))

    exact = optimize.brentq(lambda e: exact_delta(e) - 0.99855, 0.0, 2.0, xtol=1e-15)
    ans = pld.epsilon([(pld.dp(1.0, 0.95), 2)], 0.99855, rel=1e-9, abs_=1e-12)
    assert ans.lower[0] <= exact <= ans.upper[0] * (1 + 1e-12)
    exact2 = optimize.brentq(lambda e: exact_delta(e) - 0.9985, 0.0, 2.0, xtol=1e-15)
    lo, up = R._by_jumps([(pld.dp(1.0, 0.95), 2)], 0.9985, 0.5, 0.7, 2.0**-12, 1e-3, 1e-4, check=False)
    assert lo <= exact2 <= up * (1 + 1e-12)


def test_lower_moves_are_credited_from_the_offset_that_places_each_atom():
    # Atoms on a lattice (discrete Laplace's losses are multiples of 1/t): with the grid's offset at an
    # atom's own offset, x = ℓ/h − c rounds onto integers; the credit must come from that same x.
    from fractions import Fraction

    d = pld.discrete_laplace(3.0, 5)[0]
    h = 2.0**-12
    st = D.discretise_lower(d, h, 1e-14, times=1000)
    ell, p, _ = d.atoms
    ell = ell - 4 * np.finfo(float).eps * (np.abs(ell) + 1.0)
    p = p * (1 - 4 * np.finfo(float).eps)
    x = ell / h - st.c
    k = np.floor(x).astype(np.int64)
    for kk in np.unique(k):
        sel = k == kk
        moved = sum(
            Fraction(float(pi)) * (Fraction(float(li)) / Fraction(h) - Fraction(st.c) - int(kk))
            for li, pi in zip(ell[sel], p[sel])
        )
        assert Fraction(float(st.move1[kk - st.k0])) <= moved * (1 + Fraction(1, 10**12))


def test_the_split_is_tried_only_where_far_tail_steps_carry_delta():
    # Many sampled steps, Gaussian-like (run.py's 1e-5 mode, case 4): the bulk's own composition reaches
    # δ, so the split would be the same composition again — it is not tried, and the answer is untouched.
    mechs = [(subsampled_gaussian(0.001, 0.8), 100_000)]
    st = D.discretise_upper(mechs[0][0][0], 2.0**-14, 1e-20)
    assert not R._jumps_carry(J.split(st, 100_000, 1e-6), 1e-6, 2.9)
    # (Nor does its far tail block the whole composition's tilt.)
    assert not R._tilt_blocked(st, J.split(st, 100_000, 1e-6), 1e-6, 2.95)[0]
    # The corner's case: one step's far tail carries δ.
    mechs = [(subsampled_gaussian(1.14e-6, 0.635), 82922)]
    st = D.discretise_upper(mechs[0][0][0], 2.0**-16, 1e-30)
    assert R._jumps_carry(J.split(st, 82922, 1.54e-12), 1.54e-12, 0.0835)


def test_a_lower_end_in_long_double_with_far_tail_steps_goes_to_the_split_on_the_starting_grid(monkeypatch):
    # q = 1e-6, σ = 0.5, δ = 1e-12: the lower end's first composition needs every stage in long double
    # and the far-tail steps carry δ above it. The grids were halved (long-double compositions of
    # millions of points at 100 steps), the answer retried, and only then split on the finest grid:
    # 17 compositions and 2.96 s for two steps, 15.5 s for 100. Now the split follows one round on the
    # starting grid, its lower end halved up to JUMP_HALVINGS_FIRST times until the width is met.
    from mpref import delta_two_steps

    seen = {"split": 0, "compositions": 0}
    by_jumps, compose = E._by_jumps, Dr.compose

    def counted_split(*a, **k):
        seen["split"] += 1
        return by_jumps(*a, **k)

    def counted_compose(*a, **k):
        seen["compositions"] += 1
        return compose(*a, **k)

    monkeypatch.setattr(E, "_by_jumps", counted_split)
    monkeypatch.setattr(Dr, "compose", counted_compose)
    q, s, d = 1e-6, 0.5, 1e-12
    r = sgd.tight_interval(q, s, 2, d)
    lo, up = float(r.lower[0]), float(r.upper[0])
    assert r.met[0] and r.method[0] == "pld"
    # One round of the usual route (the lower end in double, then every stage in long double; the
    # upper bracket), the split's other direction (double, then long double): 5, no retry.
    assert seen["split"] == 1 and seen["compositions"] <= 6, seen
    # Both ends are true, by a quadrature of the two-step curve.
    assert delta_two_steps(q, s, up, step=2, span=60) <= d
    assert delta_two_steps(q, s, lo, step=2, span=60) >= d


def test_a_bracket_the_split_does_not_settle_is_refined_as_before(monkeypatch):
    # Where the split tried first misses the width, the first answer (only its bracket: the upper end on
    # a coarse grid) is refined by the usual route after all, and intersected with what the split found:
    # the answer is at least as narrow as the usual route's alone.
    monkeypatch.setattr(E, "JUMP_HALVINGS_FIRST", 0)  # the split stops on the starting grid: it misses
    q, s, d = 1e-7, 0.45, 1e-13
    mechs = [(subsampled_gaussian(q, s), 2)]
    a = E._once(mechs, np.array([d]), 1e-3, 1e-4, None, False, True, None, jumps_first=True)
    assert a.bracket and not a.met[0]
    calls = []
    once = E._once

    def counted(*args, **kw):
        calls.append((kw.get("jumps_first", False), kw.get("tail_share")))
        return once(*args, **kw)

    monkeypatch.setattr(E, "_once", counted)
    r = E.epsilon(mechs, [d])
    assert calls[:2] == [(True, None), (False, None)], calls  # the bracket, then the usual route
    usual = once(mechs, np.array([d]), 1e-3, 1e-4, None, False, True, None)
    assert r.met[0] and usual.lower[0] <= r.upper[0] and r.lower[0] <= usual.upper[0]
    assert r.upper[0] - r.lower[0] <= usual.upper[0] - usual.lower[0]
    assert a.lower[0] <= r.lower[0] and r.upper[0] <= a.upper[0]


def test_the_split_is_tried_where_the_far_tail_blocks_the_whole_compositions_tilt():
    # q = 1e-6, σ = 0.7, 10⁷ steps, δ = 1e-12: the bulk's Chernoff bound still reaches δ/2 at the answer
    # (about 0.0715), so the far-tail steps do not "carry" δ by that test — but they hold the whole
    # composition's tilt at about 58 where the bulk's own is about 1000, and the whole's reads at ε ≈ 0.07
    # were drowned in round-off: [0.056, 0.091], the width missed. The split, each term tilted for itself,
    # and the blocks now answer it (tests/test_extremes.py has the whole answer).
    mechs = [(subsampled_gaussian(1e-6, 0.7), 10**7)]
    st = D.discretise_upper(mechs[0][0][0], 2.0**-18, 1e-24)
    sp = J.split(st, 10**7, 1e-12)
    assert not R._jumps_carry(sp, 1e-12, 0.07)
    blocked, lam_bulk = R._tilt_blocked(st, sp, 1e-12, 0.07)
    lam_whole = float(C.choose_tilts([(st, 10**7)], np.log([1e-12]), np.array([0.07]))[0][0])
    assert blocked and lam_bulk >= 10 * lam_whole


def test_a_signed_tilt_is_chosen_for_a_level_below_zero():
    # A lower term read below its guess by the moves it gives back takes a tilt for that level, which may be
    # negative: the largest tilt whose centre is at most it (positive and finite), not a tilt for 0.
    st = D.discretise_lower(subsampled_gaussian(1e-4, 0.7)[0], 2.0**-16, 1e-20, times=10**5)
    parts = [(st, 10**5)]
    mean = 10**5 * float(np.dot(st.p, st.losses()))
    ld = np.log([1e-9])
    assert mean < 0  # (the moves, about 0.05 in all, outweigh the steps' loss)
    for level in (mean / 2, mean / 4):
        lam = float(C.choose_tilts(parts, ld, np.array([level]), signed=True)[0][0])
        lam0 = float(C.choose_tilts(parts, ld, np.array([level]))[0][0])
        assert 0 < lam < np.inf and lam < lam0  # (unsigned: the level is taken as 0, above it)
        _, centre = C.parts_log_mgf(parts, np.array([lam]), with_mean=True)
        assert centre[0] <= level


def test_a_split_taken_for_a_blocked_tilt_reads_one_lower_grid(monkeypatch):
    # Taken only because the far tail blocks the tilt (the bulk carries δ), halving the lower end's grid
    # would not help it: the split reads the lower end on the grid given, however many halvings are asked.
    mechs = [(subsampled_gaussian(1e-6, 0.7), 10**7)]
    grids = []
    one = R._discretise_one

    def counted(d, h, kind, *a, **k):
        if kind == "lower":
            grids.append(h)
        return one(d, h, kind, *a, **k)

    monkeypatch.setattr(R, "_discretise_one", counted)
    h = 2.0**-18
    lo, up = R._by_jumps(mechs, 1e-12, 0.0359, 0.341, h, 1e-3, 1e-4, halvings=4)
    assert grids == [h] and 0.0359 <= lo <= up <= 0.341 and up < 0.09
