"""A few Poisson steps whose rare large losses carry δ (:mod:`dpcalc.core.pld.rare`): both ends against
a quadrature of the two-step curve and against the PLD engine's certified intervals; the tail bounds
it rests on against mpmath; and the box's answers untouched."""

import math
import sys
from pathlib import Path

import mpmath as mp
import numpy as np
import pytest
from mpref import delta_two_steps

from dpcalc.core import pld, sgd
from dpcalc.core.pld import exact, rare

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.mark.parametrize(
    "q, s, d",
    [
        (7.658287363682052e-11, 0.17735393495369417, 3.9458887238849555e-15),
        (1.1061218342417048e-09, 0.35894052923348807, 3.986297738957278e-21),
        (1e-06, 0.25, 1e-12),
    ],
)
def test_two_steps_both_ends_are_true_by_quadrature(q, s, d):
    lo, up, ok = rare.interval(q, s, 2, d, 1e-3, 1e-4)
    assert ok[0] and 0 < lo[0] < up[0]
    # (30 digits and a breakpoint every 2 standard deviations agree with 40 digits and every 1/8 here; at
    # 15 digits the quadrature's own error was 2e-5 of δ at δ = 5.6e-38.)
    with mp.workdps(30):
        assert delta_two_steps(q, s, float(lo[0]), step=2, span=60) > d
        assert delta_two_steps(q, s, float(up[0]), step=2, span=60) <= d


@pytest.mark.parametrize("q, s, t, d", [(1e-06, 0.25, 2, 1e-12), (1e-07, 0.3, 4, 1e-13), (1e-9, 0.35, 50, 1e-18)])
def test_the_route_and_the_pld_engine_agree(q, s, t, d):
    # Two certified intervals on the same ε overlap; the engine is called directly (not routed). They
    # overlap by little: [13.10002, 13.10161] against [13.098069, 13.100024] at the first, [1.876574,
    # 1.877237] against [1.8755906, 1.8765763] at the last.
    lo, up, ok = rare.interval(q, s, t, d, 1e-3, 1e-4)
    assert ok[0]
    eng = pld.epsilon([(sgd._mechanism(q, s, "poisson"), t)], d)
    assert lo[0] <= eng.upper[0] and eng.lower[0] <= up[0]


def test_one_step_bounds_the_few_steps_from_below():
    # More steps never lower ε: the T-step lower end is at least nothing below one step's, and the upper
    # end is at least one step's lower end.
    q, s, t, d = 1e-12, 0.3, 3, 1e-20
    lo, up, ok = rare.interval(q, s, t, d, 1e-3, 1e-4)
    one_lo, one_up = exact.subsampled_step_interval(q, s, d)
    assert ok[0] and up[0] >= one_lo[0] and lo[0] >= one_lo[0]


def test_the_issue_corner_is_narrow_and_fast_through_the_cli_route():
    # q = 1e-12, σ = 0.3, 3 steps, δ = 1e-20: the PLD grids gave [0, 0.839] in 17 s; one step's exact
    # curve puts ε in a certified interval within the width (the true ε is near 0.0354).
    r = sgd.tight_interval(1e-12, 0.3, 3, 1e-20)
    assert r.method[0] == "rare-steps" and r.met[0] and r.bound[0] == "upper"
    assert 0.0354 < r.lower[0] <= r.upper[0] < 0.03543


def test_below_the_pld_range_the_route_answers():
    # δ = 1e-40 is below the PLD engine's range (RDP answered before); the route's interval holds there.
    r = sgd.tight_interval(1e-12, 0.3, 3, 1e-40)
    assert r.method[0] == "rare-steps" and np.isfinite(r.upper[0]) and r.lower[0] > 0


def test_it_stays_out_of_the_box():
    # No case of the coverage sweep with 2..MAX_STEPS steps is answered by the route (its gate looks at a
    # cheap curve only, so the box's answers and times are those of the PLD engine).
    import coverage

    cases = coverage.box_cases() + coverage.ISSUE_CASES + coverage.SMALL_Q_CASES
    few = [c for c in cases if 2 <= c[2] <= rare.MAX_STEPS and c[0] < 1]
    assert len(few) >= 20
    for q, s, t, d in few:
        assert not rare._worth_trying(q, s, t, d, 1e-3, 1e-4), (q, s, t, d)


@pytest.mark.parametrize("q, s", [(1e-9, 0.2), (1e-4, 0.5), (0.3, 2.0)])
def test_the_loss_tail_bounds_hold(q, s):
    qm, sm = mp.mpf(q), mp.mpf(s)
    ell = np.array([1e-9, 1e-4, 0.01, 0.3, 2.0, 9.0, 30.0])
    up = rare._log_loss_sf(q, s, ell, up=True)
    low = rare._log_loss_sf(q, s, ell, up=False)
    with mp.workdps(40):
        for e, u, v in zip(ell, up, low):
            x = mp.mpf(1) / 2 + sm**2 * mp.log(1 + mp.expm1(mp.mpf(e)) / qm)
            p = (1 - qm) * mp.ncdf(-x / sm) + qm * mp.ncdf(-(x - 1) / sm)
            if p == 0:
                continue
            assert v <= mp.log(p) <= u, (e, v, mp.log(p), u)


def test_the_several_tail_steps_bound_is_above_a_part_of_them():
    # Two steps: R = P[L1 + L2 > ε, both above a] is at least P[L1 > ε − a', L2 > a'] for a' >= a; the
    # computed bound must be at least that (and below 1).
    q, s, a, eps = 1e-6, 0.3, 1e-4, 6.0
    r = rare._rest_up(q, s, 2, a, eps)
    for a2 in (a, 0.01, 1.0, 3.0):
        part = math.exp(rare._log_loss_sf(q, s, np.array([eps - a2]), up=False)[0]) * math.exp(
            rare._log_loss_sf(q, s, np.array([a2]), up=False)[0]
        )
        assert r >= part
    assert r < 1


def test_a_search_takes_the_route_and_solves_in_the_corner():
    # The quick upper end of a search (upper_only) comes from the route where it answers, and plan-sgd's
    # inverse solve for σ walks it (each step of the search milliseconds, not the grids' tens of seconds).
    r = sgd.tight_interval(1e-9, 0.2, 3, 1e-20, upper_only=True)
    assert r.method[0] == "rare-steps" and r.lower[0] == 0 and 25.4716 < r.upper[0] < 25.4718
    import json

    from click.testing import CliRunner

    from dpcalc.cli import cli

    args = "plan-sgd --rate 1e-9 --steps 3 --delta 1e-20 --target-epsilon 25 --json".split()
    (row,) = json.loads(CliRunner().invoke(cli, args).stdout)["rows"]
    assert row["method"] == "rare-steps" and row["found"] and 0.2 < row["noise_multiplier"] < 0.203
    assert row["epsilon"] <= 25


def test_sums_on_the_geometric_grid_land_where_a_search_puts_them():
    # The convolution by diagonals (and prefix sums past where off reaches 1) gives every grid point the
    # mass a direct search puts there: each pair's sum on the first grid point at or above it.
    rng = np.random.default_rng(0)
    u = float(np.finfo(float).eps)
    for n, a in [(50, 1e-3), (400, 1e-7), (1200, 3e-9)]:
        g = a * rare.GRID_RATIO ** np.arange(n + 1, dtype=float)
        dist = rng.random(n + 2) * np.exp(-rng.random(n + 2) * 30)
        m = rng.random(n + 2) * np.exp(-rng.random(n + 2) * 30)
        pts = np.concatenate([g, [np.inf]])
        with np.errstate(invalid="ignore"):
            tot = (pts[:, None] + pts[None, :]) * (1 + 4 * u)
            idx = np.minimum(np.searchsorted(g, tot.ravel(), side="left").reshape(tot.shape), n + 1)
        ref = np.bincount(idx.ravel(), weights=np.outer(dist, m).ravel(), minlength=n + 2)
        got = rare._convolve_up(dist, m, rare._offsets(n))
        assert np.allclose(got, ref, rtol=1e-12, atol=0)
        # every point's sum lands at or above it
        off = rare._offsets(n)
        for d in sorted({0, 1, 7, min(100, n), n // 2}):
            i = np.arange(d, n + 1 - off[d])
            assert np.all(g[i + off[d]] >= (g[i] + g[i - d]) * (1 + 4 * u))
