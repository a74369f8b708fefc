"""Issue 16: inverse searches optimal on both sides over the whole range, no empty success, bounded
--orders, and the shared computations (ε curves, δ grids) giving the numbers computed one at a time.

No timings here: speed is measured by benchmarks/scale.py.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli
from dpcalc.core import sgd, solve
from dpcalc.core.pld import query

MNIST = "--dataset-size 60000 --batch-size 256 --epochs 60 --delta 1e-5"
Q, T = 256 / 60000, 14063


def run(args: str):
    return CliRunner().invoke(cli, args.split())


def doc(args: str) -> dict:
    r = run(args + " --json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


# ----------------------------------------------------------------- inverse: optimal on both sides


@pytest.mark.parametrize("target", [1000.0, 1e6])
def test_sigma_search_is_optimal_on_both_sides(target):
    d = doc(f"plan-sgd {MNIST} --target-epsilon {target:g}")
    r = d["rows"][0]
    assert r["found"] and r["search"] == "optimal"
    sig, nxt = r["noise_multiplier"], r["checked_next"]
    assert r["epsilon"] <= target < r["epsilon_next"]
    # The next σ checked is within the stated tolerance below the answer.
    assert sig / (1 + sgd.SIGMA_RTOL["best"]) * (1 - 1e-12) <= nxt < sig
    # The same bound, evaluated again here, on both sides.
    final = sgd._final_bound("best", "poisson")
    for s, meets in ((sig, True), (nxt, False)):
        e, _ = final(
            np.array([Q]),
            np.array([s]),
            np.array([float(T)]),
            np.array([1e-5]),
            np.array([np.nan]),
            np.array([None], dtype=object),
        )
        assert (e[0] <= target) == meets
    assert any("relative 0.001" in n for n in d["notes"])


def test_sigma_search_has_no_floor():
    sig = {t: doc(f"plan-sgd {MNIST} --target-epsilon {t} --accountant rdp")["rows"][0] for t in ("1e6", "1e9")}
    assert sig["1e9"]["found"] and sig["1e6"]["found"]
    assert sig["1e9"]["noise_multiplier"] < 0.5 * sig["1e6"]["noise_multiplier"]


def test_sigma_search_goes_on_past_the_edge_of_what_pld_can_account():
    # PLD stops answering near σ = 0.0057 (ε ≈ 1.5e6). The search stopped there ("edge") until the same steps'
    # no-subsampling bound (exactly μ-GDP) answered beyond it: the pld row now goes on with it to the σ it
    # certifies, and RDP — whose order search now reaches α near 1, where ε in the millions has its optimum —
    # goes further still.
    d = doc(f"plan-sgd {MNIST} --target-epsilon 1e9 --accountant all")
    r = next(x for x in d["rows"] if x["method"] == "no-subsampling")
    assert r["found"] and r["search"] == "optimal" and r["noise_multiplier"] < 0.0057
    assert sgd.no_subsampling_upper(r["noise_multiplier"], 14063, 1e-5)[0] == r["epsilon"] <= 1e9 < r["epsilon_next"]
    rdp = next(x for x in d["rows"] if x["method"] == "rdp")
    assert rdp["found"] and rdp["noise_multiplier"] < r["noise_multiplier"]


def test_a_next_value_past_pld_is_searched_by_the_sound_bounds_there():
    # q = 0.001, 1000 steps, target ε = 10⁶: PLD meets it with 125,221 at σ = 0.0056576, and cannot account
    # σ/(1 + 10⁻³). RDP's fallback said 1.56·10⁷ there (its orders stopped at 1.02), and the answer was the
    # edge; with orders down to 1 + 2^-20 it says 1.39·10⁵, and the search goes on by RDP to σ ≈ 0.0021.
    d = doc("plan-sgd --rate 0.001 --steps 1000 --delta 1e-5 --target-epsilon 1e6")
    (r,) = d["rows"]
    assert r["found"] and r["search"] == "optimal" and r["method"] == "rdp"
    assert 0.0019 < r["noise_multiplier"] < 0.0023
    q, t, dl = np.array([0.001]), np.array([1000.0]), np.array([1e-5])
    assert float(sgd._rdp_epsilon(q, np.array([r["noise_multiplier"]]), t, dl)[0]) <= 1e6
    assert r["epsilon"] <= 1e6 < r["epsilon_next"]


def test_tiny_target_that_no_sigma_meets():
    # δ = 1e-40 is below the total variation bound even at σ = 1e12 (q·√(T/2)/σ = 3.6e-13), and below the PLD
    # engine's range; RDP, whose orders end, reaches no ε as small as 1e-6 there. The same steps without
    # subsampling do (exactly μ-GDP, μ = √T/σ: σ ≈ 1.4e9), but no σ up to 1e12 makes even them 1e-10-DP.
    d = doc("plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --delta 1e-40 --target-epsilon 1e-10")
    r = d["rows"][0]
    assert not r["found"] and r["search"] == "none" and r["noise_multiplier"] is None
    assert any("no noise multiplier up to 1e+12" in w for w in d["warnings"])
    d = doc("plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --delta 1e-40 --target-epsilon 1e-6")
    r = d["rows"][0]
    assert r["found"] and r["method"] == "no-subsampling" and r["bound"] == "upper"
    assert sgd.no_subsampling_upper(r["noise_multiplier"], 14063, 1e-40)[0] == r["epsilon"] <= 1e-6
    assert 1.3e9 < r["noise_multiplier"] < 1.5e9 and r["epsilon_next"] > 1e-6


def test_tiny_target_met_where_delta_exceeds_the_total_variation():
    # At δ = 1e-8 a σ of about q·√(T/2)/δ makes ε = 0 exactly (method total-variation).
    d = doc("plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --delta 1e-8 --target-epsilon 1e-9")
    r = d["rows"][0]
    assert r["found"] and r["method"] == "total-variation" and r["epsilon"] == 0
    q, t = 256 / 60000, 14063
    assert 0.9 * q * (t / 2) ** 0.5 / 1e-8 < r["noise_multiplier"] < 1.1 * q * (t / 2) ** 0.5 / 1e-8


def test_tiny_target_met_without_subsampling_far_below_the_total_variation_route():
    # At δ = 1e-12, ε <= 1e-6: the total variation route needed σ ≈ q·√(T/2)/δ ≈ 3.6e11 (the PLD interval's upper
    # end may be as wide as the absolute width 1e-4); the same steps on every record are 1e-6-DP from σ ≈ 4.9e8.
    d = doc("plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --delta 1e-12 --target-epsilon 1e-6")
    r = d["rows"][0]
    assert r["found"] and r["method"] == "no-subsampling" and r["bound"] == "upper"
    assert sgd.no_subsampling_upper(r["noise_multiplier"], 14063, 1e-12)[0] == r["epsilon"] <= 1e-6
    assert 4e8 < r["noise_multiplier"] < 6e8


def test_steps_search_exact_and_range_end():
    r = doc(
        "plan-sgd --dataset-size 60000 --batch-size 256 --sigma 1.1 --delta 1e-5 --target-epsilon 3 --accountant rdp"
    )["rows"][0]
    t = r["steps"]
    assert r["found"] and r["checked_next"] == t + 1
    assert sgd.epsilon(Q, 1.1, t, 1e-5) <= 3 < sgd.epsilon(Q, 1.1, t + 1, 1e-5)
    d = doc(
        "plan-sgd --dataset-size 60000 --batch-size 256 --sigma 1.1 --delta 1e-5 --target-epsilon 1e6 --accountant rdp"
    )
    r = d["rows"][0]
    assert not r["found"] and r["search"] == "range-end" and r["steps"] == int(sgd.MAX_STEPS)
    assert any("every step count up to 1e+09" in w for w in d["warnings"])
    r = doc("plan-sgd --rate 0.01 --sigma 0.3 --delta 1e-5 --target-epsilon 0.01 --accountant rdp")["rows"][0]
    assert not r["found"] and r["search"] == "none"


def test_batch_search_checks_the_next_batch():
    base = "plan-sgd --dataset-size 60000 --epochs 60 --sigma 1.1 --delta 1e-5 --accountant rdp"
    r = doc(f"{base} --target-epsilon 3")["rows"][0]
    b = r["batch_size"]
    assert r["found"] and r["checked_next"] == b + 1

    def eps(bb):
        return sgd.epsilon(bb / 60000, 1.1, sgd.steps_for_epochs(60, 60000, bb), 1e-5)

    assert eps(b) <= 3 < eps(b + 1)
    d = doc(f"{base} --target-epsilon 1000")
    r = d["rows"][0]
    assert r["found"] and r["search"] == "range-end" and r["batch_size"] == 60000
    r = doc(f"{base} --target-epsilon 1e-3")["rows"][0]
    assert not r["found"] and r["search"] == "none" and r["batch_size"] is None


def test_walk_and_bisect_keeps_checked_points_only():
    from dpcalc.core.solve import walk_and_bisect

    calls = []

    def ev(rows, x):
        calls.append(x.copy())
        v = np.where(x < 50, x / 10.0, np.nan)  # grows with x; no answer from 50 on
        return v, np.full(x.size, "f", dtype=object)

    def step(x, k, direction, rows=None):
        return x + direction * 2.0**k

    def mid(a, b):
        return np.floor((a + b) / 2)

    def narrow(a, b):
        return b - a <= 1

    target = np.array([2.0, 100.0, -1.0])
    ok, bad, e_ok, e_bad, _, _ = walk_and_bisect(
        ev, target, np.array([5.0, 5.0, 5.0]), np.ones(3), np.full(3, 1000.0), step, mid, narrow
    )
    assert ok[0] == 20 and bad[0] == 21 and e_ok[0] == 2.0 and e_bad[0] > 2.0
    assert ok[1] == 49 and bad[1] == 50 and np.isnan(e_bad[1])  # the edge: no answer past 49
    assert np.isnan(ok[2])  # not met even at lo
    seen = np.concatenate(calls)
    assert all(x in seen for x in (20, 21, 49, 50))


def _walk(f, target, x0, tol, interp):
    """walk_and_bisect over a continuous x with ``f`` growing in x; returns (ok, bad, points evaluated)."""
    from dpcalc.core.solve import walk_and_bisect

    seen = []

    def ev(rows, x):
        seen.append(x.copy())
        return f(x), np.full(x.size, "f", dtype=object)

    def step(x, k, direction, rows=None):
        return x + direction * 0.25 * 2.0**k

    n = np.size(target)
    ok, bad, e_ok, e_bad, _, _ = walk_and_bisect(
        ev,
        np.asarray(target, float),
        np.full(n, x0),
        np.full(n, -50.0),
        np.full(n, 50.0),
        step,
        lambda a, b: 0.5 * (a + b),
        lambda a, b: np.abs(b - a) <= tol,
        interp=interp,
    )
    return ok, bad, e_ok, e_bad, np.concatenate(seen)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.exp(0.7 * x),  # smooth and convex: the secant converges
        lambda x: np.where(x < 1.3, 0.01 * x, 5.0 + x),  # a jump: the secant stalls on one side
        lambda x: np.floor(8 * x) / 8,  # steps: flat stretches (no secant where both ends are equal)
    ],
)
def test_secant_points_are_checked_and_the_answer_as_narrow(f):
    """With ``interp`` (the searches' secant step), the answer is still a point evaluated as meeting
    the target, the next a point evaluated as missing it, within the tolerance — on a smooth curve, a
    jump where the secant stalls (bisection takes over), and a staircase."""
    tol = 1e-3
    targets = np.array([0.2, 1.0, 2.5, 7.0])
    ok, bad, e_ok, e_bad, seen = _walk(f, targets, 0.0, tol, solve.secant(lambda a, b: tol))
    assert np.all(np.isfinite(ok) & np.isfinite(bad))
    assert np.all(bad - ok <= tol) and np.all(bad > ok)
    assert np.all(np.isin(ok, seen) & np.isin(bad, seen))
    assert np.all(f(ok) <= targets) and np.all(f(bad) > targets)
    assert np.array_equal(e_ok, f(ok)) and np.array_equal(e_bad, f(bad))


def test_secant_needs_fewer_evaluations_on_a_smooth_curve():
    """The secant's points close a smooth curve's bracket in a few evaluations, where bisection needs
    about log2(width/tolerance) of them (this is what cut the 2.4·10⁸-step search from 10 full
    evaluations to 4)."""

    def f(x):
        return np.exp(0.7 * x)

    tol, target = 1e-4, np.array([3.0])
    _, _, _, _, plain = _walk(f, target, 0.0, tol, None)
    ok, bad, _, _, secant = _walk(f, target, 0.0, tol, solve.secant(lambda a, b: tol))
    assert bad[0] - ok[0] <= tol and f(ok[0]) <= 3.0 < f(bad[0])
    assert secant.size <= plain.size - 8


# ----------------------------------------------------------------- no empty success


@pytest.mark.parametrize("extra", ["", "--accountant all", "--accountant rdp", "--accountant gdp-clt"])
def test_no_empty_success(extra):
    args = f"plan-sgd --dataset-size 60000 --batch-size 256 --epochs 1 --noise-multiplier 1e-308 --delta 1e-5 {extra}"
    r = subprocess.run([sys.executable, "-m", "dpcalc", *args.split()], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:")
    assert "--noise-multiplier" in lines[0] and "see the" not in lines[0]


def test_amplify_no_empty_success():
    for args in ("--steps 10", "--orders 2"):
        r = run(f"amplify gaussian --sigma 1e-308 --rate 0.01 {args}")
        assert r.exit_code == 2 and r.stderr.startswith("Error:") and "--sigma" in r.stderr


# ----------------------------------------------------------------- --orders


@pytest.mark.parametrize("orders", ["1e8", "1e12", "2,1e6:1e6:1,2e6"])
def test_orders_limit(orders):
    r = run(f"amplify gaussian --sigma 1 --rate 0.01 --orders {orders}")
    assert r.exit_code == 2 and "'--orders'" in r.stderr and "1e+06" in r.stderr


def test_orders_total_work_limit():
    r = run("amplify gaussian --sigma 1 --rate 0.01 --orders 2:1e6:400")
    assert r.exit_code == 2 and "'--orders'" in r.stderr


def test_large_order_chunked_equals_unchunked():
    from dpcalc.core import rdp

    q, s = np.array([0.01, 0.2]), np.array([1.0, 3.0])
    whole = rdp._log_a_minus_1_int(q, s, 5000, _chunk=10**9)
    parts = rdp._log_a_minus_1_int(q, s, 5000, _chunk=777)
    np.testing.assert_allclose(parts, whole, rtol=1e-13)


# ----------------------------------------------------------------- shared computations


def test_per_epoch_rows_equal_independent_rows():
    curve = doc("plan-sgd --dataset-size 60000 --batch-size 256 --epochs 3 --sigma 1.1 --delta 1e-5 --per-epoch")
    rows = curve["rows"]
    assert len(rows) == 3
    for r in rows:
        one = doc(f"plan-sgd --dataset-size 60000 --batch-size 256 --epochs {r['epochs']:g} --sigma 1.1 --delta 1e-5")
        o = one["rows"][0]
        assert o["steps"] == r["steps"]
        assert (o["epsilon"], o["epsilon_lower"], o["method"]) == (r["epsilon"], r["epsilon_lower"], r["method"])


def test_curve_brackets_are_certified_and_composed_points_exact():
    e = np.arange(1, 41)
    steps = np.ceil(e / Q - 1e-9)
    c = sgd.tight_curve(Q, 1.1, steps, 1e-5, max_points=6)
    composed = c.method != sgd.BRACKET
    assert 2 <= composed.sum() <= 7 and composed[0] and composed[-1]
    for k in [0, 1, 4, 12, 25, 39]:
        one = sgd.tight_interval(Q, 1.1, steps[k], 1e-5)
        if composed[k]:
            assert (c.lower[k], c.upper[k]) == (one.lower[0], one.upper[0])
        else:
            # Both certified: they overlap, and the bracket is wider (its ends come from other step counts).
            assert c.lower[k] <= one.upper[0] and one.lower[0] <= c.upper[k]
            assert c.upper[k] - c.lower[k] >= one.upper[0] - one.lower[0]
    assert np.all(np.diff(c.upper[~composed]) >= 0)


def test_delta_grid_read_at_once_equals_read_one_at_a_time(monkeypatch):
    deltas = np.logspace(-12, -3, 40)
    shared = sgd.tight_interval(Q, 1.1, 2000, deltas)
    monkeypatch.setattr(query, "MANY", 10**9)  # every δ by its own search on the same compositions
    searched = sgd.tight_interval(Q, 1.1, 2000, deltas)
    # The same grid points and segments; the segment solve's last bits may differ (each end checked).
    np.testing.assert_allclose(shared.upper, searched.upper, rtol=1e-13)
    np.testing.assert_allclose(shared.lower, searched.lower, rtol=1e-13)


def test_delta_grid_agrees_with_single_delta_runs():
    deltas = np.logspace(-12, -3, 40)
    grid = sgd.tight_interval(Q, 1.1, 2000, deltas)
    assert np.all(np.isfinite(grid.upper)) and grid.met.all()
    for k in (0, 13, 27, 39):
        one = sgd.tight_interval(Q, 1.1, 2000, deltas[k])
        # Certified both ways: the intervals overlap, and each is as narrow as asked.
        assert grid.lower[k] <= one.upper[0] and one.lower[0] <= grid.upper[k]
        assert abs(grid.upper[k] - one.upper[0]) <= max(1e-3 * one.upper[0], 1e-4)


def test_secant_on_log_epsilon_closes_a_steep_bracket():
    """σ searches take the secant of log ε in x = −log σ (ε goes like a power of σ): on ε = e^{6x},
    which rises 400-fold across the first bracket, the plain secant crawls along the met side (a point
    at a time, six in a row) while the log secant lands on the root; and after a bisection the secant is
    tried again (it used to bisect on to the end once two outcomes fell on one side)."""

    def f(x):
        return np.exp(6.0 * x)

    tol, target = 1e-3, np.array([500.0])
    _, _, _, _, plain = _walk(f, target, 0.0, tol, None)
    ok, bad, _, _, lg = _walk(f, target, 0.0, tol, solve.secant(lambda a, b: tol, log=True))
    assert bad[0] - ok[0] <= tol and f(ok[0]) <= 500.0 < f(bad[0])
    assert lg.size <= 6 < plain.size


def test_illinois_after_repeated_sides_beats_bisection():
    """A curve the secant under-shoots from one side (x⁴, convex): after two outcomes on one side the
    far end counts half (Illinois), so the bracket closes in fewer points than bisection."""

    def f(x):
        return np.maximum(x, 0.0) ** 4 + 1e-3

    tol, target = 1e-3, np.array([50.0])
    _, _, _, _, plain = _walk(f, target, 0.0, tol, None)
    ok, bad, _, _, seen = _walk(f, target, 0.0, tol, solve.secant(lambda a, b: tol))
    assert bad[0] - ok[0] <= tol and f(ok[0]) <= 50.0 < f(bad[0])
    assert seen.size <= plain.size - 4


def test_quick_bound_tight_where_round_off_dominates():
    """The searches' quick upper end may compose in long double as the full answer does: at q = 1e-6,
    σ = 0.58, 10 steps, δ = 1e-12 it was 0.0916 (round-off of the double-precision reads, 4.2× the
    certified ε ≈ 0.0216) and sent the σ search through 17 full evaluations; it stays sound."""
    case = (1e-6, 0.58, 10, 1e-12)
    quick = sgd.tight_interval(*case, upper_only=True)
    full = sgd.tight_interval(*case)
    assert full.lower[0] <= quick.upper[0] <= 1.05 * full.upper[0]


# ----------------------------------------------------------------- grids of q, σ and T: a lattice


@pytest.mark.parametrize(
    "sizes, per_axis, total, want",
    [
        ([1, 10000, 1], 128, 256, [1, 128, 1]),
        ([1, 3, 100], 128, 256, [1, 3, 85]),
        ([100, 100, 100], 128, 256, [7, 6, 6]),
        ([1, 1, 1], 128, 256, [1, 1, 1]),
        ([5, 200, 2], 4, 20, [2, 4, 2]),
        # A short axis (at most SHORT_AXIS values) keeps them all: steps 10, 30, 1,000 beside 3,000 noise
        # multipliers were read at 10 and 1,000 only, the rows at 30 bracketed 70 % wide (4 % now).
        ([1, 3000, 3], 128, 256, [1, 85, 3]),
    ],
)
def test_lattice_picks_stay_within_both_budgets(sizes, per_axis, total, want):
    k = sgd._picks_per_axis(sizes, per_axis, total)
    assert k == want
    assert np.prod(k) <= total and all(1 <= a <= min(n, per_axis) for a, n in zip(k, sizes))


@pytest.mark.parametrize(
    "values, k",
    [
        (np.concatenate([[0.001], np.linspace(0.5, 2.0, 3000)]), 128),  # an outlier before a dense grid
        (np.concatenate([np.linspace(0.5, 2.0, 500), [1e4]]), 64),  # ... and after it
        (np.linspace(0.1, 100.0, 200), 150),  # a linear grid: dense wanted points at its low end
        (np.unique(np.round(np.geomspace(1, 1e7, 3000))), 128),  # whole numbers, crowded at the low end
    ],
)
def test_geometric_picks_fill_their_budget_whatever_the_spread(values, k):
    """Wanted points evenly in log scale that fall on one value are not lost: the widest log gaps between
    picks (with values inside) are split until k values are picked; both ends always, every pick a value."""
    v = np.unique(values)
    p = sgd._geometric_pick(v, k)
    assert p.size == k and p[0] == v[0] and p[-1] == v[-1]
    assert np.all(np.diff(p) > 0) and np.all(np.isin(p, v))
    # The values the log-even wanted points land on are all kept (the fill only adds).
    landed = v[np.clip(np.searchsorted(v, np.geomspace(v[0], v[-1], k)), 0, v.size - 1)]
    assert np.all(np.isin(landed, p)) and np.unique(landed).size < k
    # An outlier costs one pick, not most of them: the rest go to the dense part.
    dense = (v >= 0.5) & (v <= 2.0)
    if dense.sum() == v.size - 1:  # (the first two cases)
        assert np.isin(p, v[dense]).sum() == k - 1


def _grid(qs, ss, ts, ds=(1e-5,)):
    g = np.meshgrid(qs, ss, ts, ds, indexing="ij")
    return tuple(a.ravel() for a in g)


@pytest.mark.parametrize("sampling", ["poisson", "without-replacement"])
def test_grid_of_rates_noise_and_steps_brackets_contain_direct_answers(sampling):
    # ε grows with q and T and falls with σ: a row between lattice settings takes the lower end of the
    # nearest one with less loss and the upper end of the nearest with more. Every bracket must overlap
    # the row's own certified interval (both contain the true ε) and be at least as wide.
    q, s, t, d = _grid(
        [0.004, 0.01, 0.02], [1.0, 1.3, 2.0], [50, 100, 200], [1e-5, 1e-7] if sampling == "poisson" else [1e-5]
    )
    c = sgd.tight_curve(q, s, t, d, sampling, max_points=2, budget=8, direct=0)
    composed = c.method != sgd.BRACKET
    assert composed.any() and (~composed).sum() > q.size // 2
    assert np.all(np.isfinite(c.lower) & np.isfinite(c.upper))
    direct = sgd.tight_interval(q, s, t, d, sampling)
    assert np.all(c.lower[composed] == direct.lower[composed]) and np.all(c.upper[composed] == direct.upper[composed])
    b = ~composed
    assert np.all(c.lower[b] <= direct.upper[b]) and np.all(direct.lower[b] <= c.upper[b])
    assert np.all(c.upper[b] >= direct.upper[b] * (1 - 1e-12))
    # The lattice's corners: rows at the grid's smallest loss take their lower end, at its largest the upper.
    assert np.all(c.upper[b] <= direct.upper.max()) and np.all(c.lower[b] >= 0)


def test_a_large_sigma_grid_composes_the_lattice_only(monkeypatch):
    calls = []
    real = sgd.tight_interval

    def counting(q, sigma, steps, delta, *a, **k):
        calls.append(np.unique(np.stack([np.ravel(q), np.ravel(sigma), np.ravel(steps)]), axis=1).shape[1])
        return real(q, sigma, steps, delta, *a, **k)

    monkeypatch.setattr(sgd, "tight_interval", counting)
    s = np.linspace(0.8, 2.0, 400)
    c = sgd.tight_curve(0.01, s, 100, 1e-5, max_points=8, budget=16, direct=100)
    assert sum(calls) <= 8 and (c.method == sgd.BRACKET).sum() >= 390
    # ε falls with σ, and so do the bracket's ends (each taken from a lattice setting).
    assert np.all(np.diff(c.upper) <= 0) and np.all(np.diff(c.lower) <= 0)
    for k in (1, 57, 200, 398):
        one = real(0.01, s[k], 100, 1e-5)
        assert c.lower[k] <= one.lower[0] and one.upper[0] <= c.upper[k]


def test_best_of_a_large_grid_is_the_smaller_sound_bound_at_every_row():
    # Bracketed rows too: RDP's computed bound is not monotone in σ (its order search is coarse above
    # α = 128): at σ = 3.311 it is 0.0198, below the bracket's 0.0203 from σ = 2.2, while at σ = 3.3115 it is
    # 0.0220 (found by review). So RDP is computed at every row and the smaller bound taken.
    s = np.array([2.2, 3.311, 3.3115])
    b = sgd.best(0.002913, s, 91, 0.00044, curve=True, max_points=2, budget=4, direct=0)
    assert b.tight.method[1] == sgd.BRACKET
    rdp = np.asarray(sgd._rdp_epsilon(np.full(3, 0.002913), s, np.full(3, 91.0), np.full(3, 0.00044)))
    assert np.array_equal(b.upper, np.minimum(rdp, b.tight.upper)) and b.method[1] == "rdp"
    s = np.geomspace(0.9, 1.1, 300)
    b = sgd.best(0.02, s, 300, 1e-6, curve=True, max_points=12, budget=12, direct=100)
    rdp = np.asarray(sgd._rdp_epsilon(np.full(s.size, 0.02), s, np.full(s.size, 300.0), np.full(s.size, 1e-6)))
    assert (b.tight.method == sgd.BRACKET).sum() > 250
    assert np.array_equal(b.upper, np.fmin(rdp, b.tight.upper))


def test_plan_sgd_noise_grid_beyond_the_budget_is_bracketed_and_said():
    n = sgd.DIRECT_POINTS + 76  # one composition per σ would be more than DIRECT_POINTS: a lattice
    d = doc(f"plan-sgd --rate 0.01 --steps 20 --noise-multiplier 1:2:{n} --delta 1e-5")
    rows = d["rows"]
    assert len(rows) == n
    br = [r for r in rows if r["method"] == "pld-bracket"]
    assert len(br) >= n - sgd.CURVE_POINTS
    assert any("pld-bracket" in w and "falls with σ" in w for w in d["warnings"])
    for r in br[::40]:
        one = sgd.tight_interval(0.01, r["noise_multiplier"], 20, 1e-5)
        assert r["epsilon_lower"] <= one.lower[0] and one.upper[0] <= r["epsilon"]


# ----------------------------------------------------------------- grids of targets: searched at some, bracketed


def test_sigma_targets_beyond_the_budget_are_bracketed_by_checked_points(monkeypatch):
    monkeypatch.setattr(sgd, "TARGET_POINTS", 4)
    targets = np.geomspace(0.5, 8.0, 13)
    sol = sgd.solve_sigma(0.01, 1000, 1e-5, targets, "rdp")
    br = sol.status == sgd.BRACKETED
    assert br.sum() >= 8 and np.all(sol.status[~br] == sgd.OPTIMAL) and not sol.found[br].any()
    direct = [sgd.solve_sigma(0.01, 1000, 1e-5, x, "rdp") for x in targets[br]]  # one by one: each searched
    assert all(o.found[0] for o in direct)
    direct = sgd.Solution(*(np.concatenate([getattr(o, f) for o in direct]) for f in ("value", "epsilon", "found")))
    # The answer meets the target, the value checked beyond it misses it, and the optimum lies between.
    assert np.all(sol.epsilon[br] <= targets[br]) and np.all(sol.next_epsilon[br] > targets[br])
    assert np.all(sol.next_value[br] <= direct.value) and np.all(direct.value <= sol.value[br])
    e_at = sgd.epsilon(0.01, sol.value[br], 1000, 1e-5, "rdp")
    e_next = sgd.epsilon(0.01, sol.next_value[br], 1000, 1e-5, "rdp")
    assert np.all(e_at <= targets[br]) and np.all(e_next > targets[br])
    # ε is monotone in σ, and the answers in the target.
    assert np.all(np.diff(sol.value) <= 0)


def test_step_targets_bracketed_and_none_carried_over(monkeypatch):
    monkeypatch.setattr(sgd, "TARGET_POINTS", 4)
    # The smallest targets are not met even by one step (status none); they stay none between picks.
    targets = np.geomspace(0.02, 5.0, 16)
    sol = sgd.solve_steps(0.01, 2.0, 1e-5, targets, "rdp")
    one = [sgd.solve_steps(0.01, 2.0, 1e-5, x, "rdp") for x in targets]
    assert (sol.status == sgd.BRACKETED).sum() >= 4 and (sol.status == sgd.NONE).sum() >= 4
    for k, o in enumerate(one):
        if o.status[0] == sgd.NONE:
            assert sol.status[k] == sgd.NONE and sol.value[k] == 0
        elif sol.status[k] == sgd.BRACKETED:
            assert sol.value[k] <= o.value[0] < sol.next_value[k]
            assert sol.epsilon[k] <= targets[k] < sol.next_epsilon[k]
        else:
            assert (sol.value[k], sol.status[k]) == (o.value[0], o.status[0])


def test_plan_sgd_target_grid_beyond_the_budget_says_so():
    d = doc(f"plan-sgd {MNIST} --target-epsilon 1:8:70 --accountant rdp")
    rows = d["rows"]
    n_br = sum(r["search"] == "bracketed" for r in rows)
    assert len(rows) == 70 and n_br >= 70 - sgd.TARGET_POINTS
    assert all(
        not r["found"] and r["epsilon"] <= r["target_epsilon"] < r["epsilon_next"]
        for r in rows
        if r["search"] == "bracketed"
    )
    assert any(f"{n_br} rows (search: bracketed)" in w for w in d["warnings"])


def test_grids_within_the_direct_budget_are_composed_row_by_row():
    # (Review: a product lattice bracketed 298 of 300 rows of a --dataset-size grid, 28 % wide, and per-epoch
    # curves of 20 noise multipliers; both are composed row by row while that is at most DIRECT_POINTS
    # compositions.) q and T varying together, as a dataset-size grid makes them:
    n = np.array([3000.0, 4000, 6000, 9000, 13000, 20000])
    q, t = 50 / n, np.ceil(2 * n / 50)
    c = sgd.tight_curve(q, 1.0, t, 1e-6, max_points=4, budget=8, direct=6)
    assert not (c.method == sgd.BRACKET).any()
    one = sgd.tight_interval(q, 1.0, t, 1e-6)
    assert np.array_equal(c.upper, one.upper) and np.array_equal(c.lower, one.lower)
    # Curves of several σ: each σ's curve bracketed along its own T only (5 σ × 4 composed step counts).
    s, tt = np.meshgrid([0.8, 0.9, 1.0, 1.1, 1.2], np.arange(10, 90, 10), indexing="ij")
    c = sgd.tight_curve(0.01, s.ravel(), tt.ravel(), 1e-5, max_points=4, budget=8, direct=20)
    br = c.method == sgd.BRACKET
    assert br.sum() == 5 * (8 - 4)
    direct = sgd.tight_interval(0.01, s.ravel(), tt.ravel(), 1e-5)
    assert np.array_equal(c.upper[~br], direct.upper[~br])
    # A bracket from its own σ's curve is at most one step count's worth wide: its ends are the σ's own answers
    # at the composed step counts on either side.
    for k in np.flatnonzero(br)[:6]:
        same = (s.ravel() == s.ravel()[k]) & ~br
        above = same & (tt.ravel() > tt.ravel()[k])
        assert c.upper[k] == direct.upper[above][0]
