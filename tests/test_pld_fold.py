"""Exact self-composition of two-atom steps (core/pld/fold.py) and the Laplace threshold pairs.

The folded step replaces k releases of an (ε, δ) pair (or of a Laplace step's binary
post-processing, for lower ends) in the engine; these tests hold it to the exact binomial
composition in 50-digit arithmetic, and the engine's answers to the exact KOV composition and to
dp-accounting's Laplace PLDs.
"""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcalc.core import composition, pld
from dpcalc.core.pld import fold as F
from dpcalc.core.pld import mechanisms as M


def _delta_atoms(d, eps):
    """δ(ε) = P[L = +∞] + Σ p_j (1 − e^{ε − ℓ_j})₊ of an atom direction, in float."""
    ell, p, _ = d.atoms
    return d.p_inf + float(np.sum(p * np.clip(-np.expm1(eps - ell), 0.0, None)))


def _delta_exact(d, k, eps):
    """δ(ε) of the k-fold composition of a two-atom direction, summed in 50-digit arithmetic."""
    mp.mp.dps = 50
    ell, p, _ = d.atoms
    (l1, l2), (p1, p2) = [mp.mpf(float(x)) for x in ell], [mp.mpf(float(x)) for x in p]
    tot = 1 - (1 - mp.mpf(float(d.p_inf))) ** k
    for j in range(k + 1):
        loss = j * l1 + (k - j) * l2
        if loss > eps:
            tot += mp.binomial(k, j) * p1**j * p2 ** (k - j) * (1 - mp.e ** (eps - loss))
    return tot


CASES = [
    (M.dp(0.3, 1e-6)[0], 50),
    (M.dp(1e-4, 0.0)[0], 3000),
    (M.dp(2.0, 1e-9)[0], 40),
    (pld.randomized_response(1.0, 2)[0], 300),
    (M.subsampled_laplace(5e-4, 0.1)[0].dominated, 2000),
    (M.laplace(1e-3)[0].dominated, 1000),
]


@pytest.mark.parametrize("d, k", CASES)
def test_folded_step_brackets_the_exact_composition(d, k):
    assert F.foldable(d)
    up = F.fold(d, k, 1e-30, "upper")
    lo = F.fold(d, k, 1e-30, "lower")
    ell, p, _ = d.atoms
    sd = float(np.sqrt(k) * np.max(np.abs(ell)))
    mean = float(k * np.dot(ell, p))
    for eps in [mean + x * sd for x in (-1.0, 0.0, 1.0, 3.0, 6.0)]:
        if eps < 0:
            continue
        exact = _delta_exact(d, k, eps)
        assert _delta_atoms(lo, eps) <= exact <= _delta_atoms(up, eps)
        # and tight: the folding itself loses only round-off and the 1e-30 tails
        assert float(_delta_atoms(up, eps) - exact) <= 1e-9 * float(exact) + 1e-28
        assert float(exact - _delta_atoms(lo, eps)) <= 1e-9 * float(exact) + 1e-28


def test_fold_keeps_a_window_and_bounds_its_tails():
    d = M.dp(1e-4, 1e-12)[0]
    up = F.fold(d, 10**6, 1e-20, "upper")
    lo = F.fold(d, 10**6, 1e-20, "lower")
    assert 1000 < up.atoms[0].size < 20000  # about ±9.5 sd of 500 atoms around the mode, not 10⁶ + 1
    # P[L = +∞] = 1 − (1 − 1e-12)^k, rounded apart; the finite masses sum to about (1 − 1e-12)^k.
    p_inf = float(-mp.expm1(10**6 * mp.log1p(mp.mpf(-1e-12))))
    assert lo.p_inf <= p_inf <= up.p_inf
    assert up.p_inf - p_inf < 1e-18 + 1e-19
    assert np.sum(lo.atoms[1]) <= 1 - p_inf <= np.sum(up.atoms[1])
    # A window that would exceed the atom limit is declined (the engine composes the step as it is).
    assert F.fold(M.dp(0.5, 0.0)[0], 10**12, 1e-30, "upper") is None


def test_non_two_atom_steps_are_not_folded():
    assert not F.foldable(M.laplace(0.5)[0])
    assert not F.foldable(M.gaussian(1.0)[0])
    assert not F.foldable(pld.randomized_response(1.0, 3)[0])
    assert not F.foldable(M.subsampled_dp(0.5, 1e-7, 0.01)[0])  # three atoms


@pytest.mark.parametrize("eps0, q", [(1e-4, 1.0), (1e-3, 1.0), (5e-4, 0.1), (1e-4, 0.003)])
def test_laplace_threshold_pair_is_the_post_processing(eps0, q):
    """The dominated pair's masses are those of thresholding the output at Δ/2 (scipy's Laplace laws)."""
    b = 1.0 / eps0
    s0, s1 = stats.laplace.sf(0.5, 0, b), stats.laplace.sf(0.5, 1, b)
    dirs = M.laplace(eps0) if q >= 1 else M.subsampled_laplace(eps0, q)
    rem = dirs[0].dominated
    ell, p, qq = rem.atoms
    assert p == pytest.approx([(1 - q) * s0 + q * s1, 1 - ((1 - q) * s0 + q * s1)], rel=1e-12)
    assert qq == pytest.approx([s0, 1 - s0], rel=1e-12)
    assert ell == pytest.approx(np.log(p / qq), rel=1e-9, abs=1e-18)
    if q < 1:
        add = dirs[1].dominated
        assert add.atoms[1] == pytest.approx(qq, rel=1e-12)
        assert add.atoms[0] == pytest.approx(-ell, rel=1e-12)
    # Above the threshold's range it is not attached (it would give up more than the width).
    assert M.laplace(2e-3)[0].dominated is None


@pytest.mark.parametrize(
    "e0, d0, k, dt",
    [(1e-4, 1e-12, 10000, 1e-6), (0.01, 0.0, 20000, 1e-8), (0.5, 1e-9, 3000, 1e-5), (2.0, 0.0, 30, 1e-6)],
)
def test_many_dp_releases_contain_the_exact_kov_value(e0, d0, k, dt):
    ans = pld.epsilon([(pld.dp(e0, d0), k)], dt)
    kov = composition.optimal_homogeneous(e0, d0, k, dt)
    assert ans.lower[0] <= kov <= ans.upper[0]
    assert ans.met[0]


def test_mixed_ledger_of_tiny_releases_is_tight_on_a_coarse_grid(monkeypatch):
    """The issue-15 mix in small: pure-ε, (ε, δ) and Laplace releases by the thousand beside Gaussians.
    Folded, the interval meets the default width without refining past a 2^-17 grid, and it
    overlaps the interval the engine gives without folding (each is certified)."""
    mechs = [
        (pld.dp(1e-4, 1e-12), 5000),
        (pld.dp(5e-5, 0.0), 2500),
        (pld.laplace(1e-4), 5000),
        (pld.laplace(2e-5), 4000),
        (pld.subsampled_laplace(2e-4, 0.1), 2500),
        (pld.gaussian(1 / 2000), 25000),
    ]
    ans = pld.epsilon(mechs, 1e-6)
    assert ans.met[0]
    assert ans.h_lower >= 2.0**-17 and ans.h_upper >= 2.0**-17
    from dpcalc.core.pld import directions

    monkeypatch.setattr(directions, "FOLD_FROM", 10**12)
    old = pld.epsilon(mechs, 1e-6)
    assert old.h_lower < ans.h_lower  # unfolded, the lower end needed a finer grid
    assert ans.lower[0] <= old.upper[0] and old.lower[0] <= ans.upper[0]


@pytest.mark.parametrize(
    "eps0, k, q, delta", [(5e-4, 2000, 1.0, 1e-6), (1e-4, 20000, 1.0, 1e-8), (2e-4, 3000, 0.2, 1e-6)]
)
def test_many_laplace_releases_against_dp_accounting(eps0, k, q, delta):
    """The lower end now comes from the threshold pairs: it must stay below dp-accounting's
    pessimistic (upper) Laplace PLD, and our upper end above their optimistic one."""
    from dp_accounting.pld import privacy_loss_distribution as PLD

    mech = pld.laplace(eps0) if q >= 1 else pld.subsampled_laplace(eps0, q)
    ans = pld.epsilon([(mech, k)], delta)
    kw = dict(parameter=1.0 / eps0, sensitivity=1.0, value_discretization_interval=eps0 / 50, sampling_prob=q)
    pes = PLD.from_laplace_mechanism(pessimistic_estimate=True, **kw).self_compose(k)
    opt = PLD.from_laplace_mechanism(pessimistic_estimate=False, **kw).self_compose(k)
    assert ans.lower[0] <= pes.get_epsilon_for_delta(delta) + 1e-12
    assert ans.upper[0] >= opt.get_epsilon_for_delta(delta) - 1e-12
    assert ans.met[0]


def test_large_epsilon_releases_lower_end_is_below_the_exact_value():
    """ε₀ = 17.7 released 23,027 times: the second atom's mass 1/(1 + e^ε₀) was once formed as 1 − a, whose
    rounding (relative 1e-8) added up over the releases into a lower end 1.5e-4 above the exact ε."""
    e0, k, dt = 17.722568713573104, 23027, 0.0011982774962302851
    ans = pld.epsilon([(pld.dp(e0, 0.0), k)], dt)
    mp.mp.dps = 50
    a = 1 / (1 + mp.e ** (-mp.mpf(e0)))
    exact = k * mp.mpf(e0) + mp.log(1 - mp.mpf(dt) / a**k)  # between the top two atoms: one term of δ(ε)
    assert mp.mpf(float(ans.lower[0])) <= exact <= mp.mpf(float(ans.upper[0]))
    assert list(M.dp(e0, 0.0)[0].atoms[0]) == [e0, -e0]


@settings(max_examples=25, deadline=None)
@given(st.floats(-6, 1.3), st.sampled_from([0.0, 1e-12, 1e-9, 1e-7]), st.floats(0.3, 6), st.floats(-12, -1))
def test_dp_releases_bracket_kov_across_the_range(le0, d0, lk, ldt):
    e0, k, dt = 10.0**le0, int(10.0**lk), 10.0**ldt
    assume(1 - (1 - d0) ** k < 0.5 * dt)
    kov = composition.optimal_homogeneous(e0, d0, k, dt)
    ans = pld.epsilon([(pld.dp(e0, d0), k)], dt)
    assert ans.lower[0] <= kov * (1 + 1e-12) and ans.upper[0] >= kov * (1 - 1e-12)
