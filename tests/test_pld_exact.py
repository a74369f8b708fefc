"""The exact routes (q = 1 and T = 1) and the floating-point error bounds the engine rests on,
against 50-digit mpmath."""

import json

import mpmath as mp
import numpy as np
import pytest
from click.testing import CliRunner
from mpref import delta_gauss as _delta_gauss
from mpref import delta_step as _delta_step
from mpref import delta_two_steps as _delta_two_steps
from mpref import eps_of as _eps_of

from dpcalc.cli import cli
from dpcalc.core import gdp, pld, sgd
from dpcalc.core.pld import exact
from dpcalc.core.pld import mechanisms as M

mp.mp.dps = 50


def test_gaussian_log_delta_bounds_contain_the_truth():
    rng = np.random.default_rng(0)
    for _ in range(400):
        mu = 10 ** rng.uniform(-4, 4)
        eps = max(mu * mu / 2 + rng.uniform(-3, 40) * mu, 0.0) * rng.choice([1.0, 0.5])
        true = mp.log(_delta_gauss(mu, eps))
        if not mp.isfinite(true) or true < -1600:
            continue
        lo, hi = gdp._log_delta_bounds(np.array(mu), np.array(eps))
        assert lo <= float(true) <= hi
        assert hi - lo < 1e-5


@pytest.mark.parametrize(
    "mu, delta", [(np.sqrt(1000), 1e-12), (1.0, 1e-5), (0.01, 1e-12), (20.0, 0.5), (1e-4, 1e-8), (300.0, 1e-10)]
)
def test_gaussian_interval_contains_the_exact_epsilon(mu, delta):
    lo, up = exact.gaussian_interval(mu, delta)
    true = float(_eps_of(lambda e: _delta_gauss(mu, e), delta))
    assert lo[0] <= true <= up[0]
    assert up[0] - lo[0] <= 1e-9 * max(up[0], 1e-300)


def test_one_subsampled_step_is_exact_across_the_box():
    # q from 1e-9 to 1, σ from 0.3 to 100, δ from 1e-12 to 0.1: the interval holds the 50-digit value
    # and is round-off wide. (Issue 11: q = 1e-5, σ = 1, δ = 1e-12 is 0.002093; q = 1e-9 gave RDP's 0.555.)
    rng = np.random.default_rng(1)
    cases = [(1e-9, 1.0, 1e-12), (1e-5, 1.0, 1e-12), (0.3, 0.3, 1e-12), (1e-6, 100, 1e-12), (0.5, 100, 0.1)]
    for _ in range(25):
        cases.append((10 ** rng.uniform(-6, 0), 10 ** rng.uniform(np.log10(0.3), 2), 10 ** rng.uniform(-12, -1)))
    for q, s, d in cases:
        lo, up = exact.subsampled_step_interval(q, s, d)
        true = float(_eps_of(lambda e: _delta_step(q, s, e), d))
        assert lo[0] <= true <= up[0], (q, s, d)
        assert up[0] - lo[0] <= 1e-11 * max(true, 1e-300) + 1e-300
    lo, up = exact.subsampled_step_interval(1e-5, 1.0, 1e-12)
    assert round(up[0], 6) == 0.002093
    assert 2.2e-8 < exact.subsampled_step_interval(1e-9, 1.0, 1e-12)[1][0] < 2.21e-8


def test_the_engine_takes_the_exact_routes():
    t = sgd.tight_interval([1.0, 1e-5, 0.01], [1.0, 1.0, 1.1], [1000, 1, 1000], [1e-12, 1e-12, 1e-5])
    assert list(t.method) == ["gdp", "privacy-profile", "pld"]
    assert list(t.bound) == ["exact", "exact", "upper"]
    # q = 1, σ = 1, T = 1000 at δ = 1e-12 is μ = √1000: 721.547 (issue 11: was printed as 901.09).
    true = float(_eps_of(lambda e: _delta_gauss(np.sqrt(1000), e), 1e-12))
    assert t.lower[0] <= true <= t.upper[0] and round(true, 3) == 721.547
    # q = 1, σ = 1e4, T = 1000, δ = 1e-12: 0.01862 (was 0.0867).
    lo, up = sgd.pld_interval(1.0, 1e4, 1000, 1e-12)
    true = float(_eps_of(lambda e: _delta_gauss(np.sqrt(1000) / 1e4, e), 1e-12))
    assert lo[0] <= true <= up[0] and round(true, 5) == 0.01862


# --- the tails the discretisations use, and their error bounds -----------------------------------


def _remove_tails(q, s, ell):
    q, s, ell = mp.mpf(q), mp.mpf(s), mp.mpf(ell)
    if ell <= mp.log1p(-q):
        return (mp.mpf(0), mp.mpf(0), mp.mpf(1), mp.mpf(1))
    x = s**2 * mp.log((mp.expm1(ell) + q) / q) + mp.mpf(1) / 2
    fa, fb, sa, sb = mp.ncdf(x / s), mp.ncdf((x - 1) / s), mp.ncdf(-x / s), mp.ncdf(-(x - 1) / s)
    return ((1 - q) * fa + q * fb, fa, (1 - q) * sa + q * sb, sa)


def _add_tails(q, s, ell):
    q, s, m = mp.mpf(q), mp.mpf(s), -mp.mpf(ell)
    if m <= mp.log1p(-q):
        return (mp.mpf(1), mp.mpf(1), mp.mpf(0), mp.mpf(0))
    x = s**2 * mp.log((mp.expm1(m) + q) / q) + mp.mpf(1) / 2
    fa, fb, sa, sb = mp.ncdf(x / s), mp.ncdf((x - 1) / s), mp.ncdf(-x / s), mp.ncdf(-(x - 1) / s)
    return (sa, (1 - q) * sa + q * sb, fa, (1 - q) * fa + q * fb)


@pytest.mark.parametrize("direction", [0, 1])
def test_subsampled_gaussian_tails_are_within_their_error_bounds(direction):
    # Each computed tail is within its error bound of the true tail at some loss within the point's gap
    # (the point is found by inverting ℓ(x) in floating point; side -1 keeps it at or below ℓ).
    ref = _remove_tails if direction == 0 else _add_tails
    rng = np.random.default_rng(2 + direction)
    for _ in range(60):
        q, s = 10 ** rng.uniform(-6, -0.1), 10 ** rng.uniform(np.log10(0.3), 2)
        sd = q * np.sqrt(np.expm1(min(1 / s**2, 700)))
        ell = rng.normal() * sd * rng.choice([1, 5, 20]) + rng.choice([0, 0, 1, 5, -1])
        d = M.subsampled_gaussian(q, s)[direction]
        for side in (-1, 0, 1):
            t = d.cdf(np.array([ell]), side)
            g = float(t.gap[0])
            ends = {-1: (ell - g, ell), 0: (ell - g, ell + g), 1: (ell, ell + g)}[side]
            r0, r1 = ref(q, s, ends[0]), ref(q, s, ends[1])
            for k, (val, err) in enumerate([(t.fp, t.efp), (t.fq, t.efq), (t.sp, t.esp), (t.sq, t.esq)]):
                a, b = min(r0[k], r1[k]), max(r0[k], r1[k])
                assert a - float(err[0]) <= val[0] <= b + float(err[0]), (q, s, ell, side, k)


def test_gaussian_tails_cover_a_rounded_mu():
    # μ = Δ/σ reaches the Gaussian mechanism rounded (up by the accounting layer, to nearest elsewhere):
    # each computed tail is within its error bound of the tail for the exact quotient, whichever way
    # (and by up to 2u relative) μ was rounded.
    rng = np.random.default_rng(11)
    for _ in range(80):
        sens, sigma = float(rng.choice([1.0, 3.0, 0.7])), 10 ** rng.uniform(-1.5, 3)
        mu_true = mp.mpf(sens) / mp.mpf(sigma)
        near = sens / sigma
        for mu in (near, float(np.nextafter(near, np.inf)), float(np.nextafter(near, -np.inf))):
            mu = float(np.nextafter(mu, np.inf)) if rng.random() < 0.5 else mu
            if abs(mp.mpf(mu) / mu_true - 1) > 2 * np.finfo(float).eps:
                continue
            z = rng.normal() * rng.choice([1.0, 5.0, 30.0])
            ell = float(mu * mu / 2 + z * mu)
            t = pld.gaussian(mu)[0].cdf(np.array([ell]))
            h = mu_true**2 / 2
            a, b = (mp.mpf(ell) - h) / mu_true, (mp.mpf(ell) + h) / mu_true
            ref = (mp.ncdf(a), mp.ncdf(b), mp.ncdf(-a), mp.ncdf(-b))
            for k, (val, err) in enumerate([(t.fp, t.efp), (t.fq, t.efq), (t.sp, t.esp), (t.sq, t.esq)]):
                assert abs(mp.mpf(float(val[0])) - ref[k]) <= float(err[0]), (sens, sigma, mu, ell, k)


def test_the_hull_at_zero_takes_the_right_limit():
    # Both directions' δ(0) is the total variation distance; the hull's P[L > 0] is the right limit.
    # q = 1e-9, σ = 0.05: the add direction has almost all its mass just above 0, the hull almost none.
    d = pld.sampled_wor_gaussian(1e-9, 0.05)[0]
    t = d.cdf(np.array([0.0]))
    assert t.sp[0] < 1e-8 and t.fp[0] > 1 - 1e-8


# --- ε = 0 by the total variation distance ---------------------------------------------------------


def test_total_variation_bound_is_above_one_steps_exact_distance():
    # One step: TV((1 − q)N(0) + qN(1), N(0)) = q·(2Φ(1/(2σ)) − 1), in 50 digits.
    rng = np.random.default_rng(7)
    for _ in range(200):
        q, s = 10 ** rng.uniform(-9, 0), 10 ** rng.uniform(-1, 3)
        true = mp.mpf(q) * (2 * mp.ncdf(1 / (2 * mp.mpf(s))) - 1)
        bound = exact.total_variation_upper(q, s, 1)
        assert bound >= true, (q, s)
        if s >= 1:  # and not vacuous for small steps: √(χ²/2) ≈ q/(σ√2) against q/(σ√(2π)) + …
            assert bound <= 2.5 * true


def test_the_coupling_bound_is_tight_where_sigma_is_small():
    # Small σ: Pinsker and Bretagnolle–Huber are vacuous (KL ~ q²e^{1/σ²}), the coupling bound is the
    # exact one-step distance, and for T steps it is 1 − (1 − t₁)^T, the distance itself as σ → 0
    # (a sampled record is then always seen). Both in 50 digits, within 1e-13 relative and never below.
    rng = np.random.default_rng(9)
    for _ in range(200):
        q, s, t = 10 ** rng.uniform(-9, 0), 10 ** rng.uniform(-7, -0.5), int(10 ** rng.uniform(0, 9))
        t1 = mp.mpf(q) * (2 * mp.ncdf(1 / (2 * mp.mpf(s))) - 1)
        true = -mp.expm1(t * mp.log1p(-t1))
        bound = exact.total_variation_upper(q, s, t)
        assert true <= bound <= true * (1 + 1e-13), (q, s, t)


def test_the_distance_answers_zero_at_the_jump_of_a_tiny_sigma():
    # q = 1e-9, σ = 0.05 (found by the extremes' plan-sgd search): ε = 0 exactly while the chance of
    # any sampled step, 1 − (1 − q)^T, is at most δ = 0.5, i.e. up to T = 6.93e8; past it one sampled
    # step is seen and ε is about 110. The search used to spend 2 minutes composing there.
    t_jump = np.log(0.5) / np.log1p(-1e-9)
    r = sgd.tight_interval(1e-9, 0.05, [np.floor(t_jump * 0.999), np.floor(t_jump)], 0.5)
    assert list(r.method) == ["total-variation"] * 2 and np.all(r.upper == 0.0)
    assert sgd.tight_interval(1e-9, 0.05, np.ceil(t_jump * 1.001), 0.5, upper_only=True).upper[0] > 100


def test_total_variation_bound_is_above_the_composed_distance():
    # T steps: δ(0) of the composition, bounded below by the PLD engine's certified lower end on δ.
    rng = np.random.default_rng(8)
    for _ in range(12):
        q, s, t = 10 ** rng.uniform(-4, -1), 10 ** rng.uniform(0, 1.5), int(10 ** rng.uniform(0, 3))
        bound = exact.total_variation_upper(q, s, t)
        lo = pld.delta_interval([(pld.subsampled_gaussian(q, s), t)], [0.0], 2.0**-12).lower
        assert bound >= lo[0], (q, s, t)


def test_the_engine_answers_zero_where_delta_exceeds_the_distance():
    # The coverage sweep's zero cases: no composition, and the PLD engine's own certified lower end
    # there is 0 too (a bound below the distance would make it positive).
    cases = [
        (1e-6, 100.0, 1, 0.1),
        (0.000178, 1.09, 48, 0.0027),
        (8.66e-06, 22.2, 13, 0.0075),
        (1.24e-06, 29.5, 1368, 1.5e-05),
        (3.92e-05, 8.13, 862979, 0.021),
        (1.91e-06, 0.945, 237684, 0.06),
    ]
    q, s, t, d = (np.array(c) for c in zip(*cases))
    r = sgd.tight_interval(q, s, t, d)
    assert list(r.method) == ["total-variation"] * len(cases)
    assert list(r.bound) == ["exact"] * len(cases)
    assert np.all(r.lower == 0) and np.all(r.upper == 0)
    for qq, ss, tt, dd in cases[1:4]:
        ans = pld.epsilon([(pld.subsampled_gaussian(qq, ss), int(tt))], [dd])
        assert ans.lower[0] == 0.0
    # Just below the bound the route does not apply; sampling without replacement never takes it.
    tv = exact.total_variation_upper(0.000178, 1.09, 48)
    assert sgd.tight_interval(0.000178, 1.09, 48, tv * 0.999).method[0] == "pld"
    # Without replacement the coupling bound alone applies (the changed record is in a batch with
    # probability q): taken where it is at most δ, not where only the Pinsker bound is.
    assert sgd.tight_interval(1e-6, 100.0, 5, 0.1, sampling="without-replacement").method[0] == "total-variation"
    q, s, t = 0.01, 20.0, 100  # Poisson's bound (Pinsker) 0.00354, the coupling bound 0.0197: δ = 0.00357
    assert exact.total_variation_upper(q, s, t) < exact.total_variation_upper(q, s, t, "without-replacement")
    d = float(exact.total_variation_upper(q, s, t)) * 1.01
    w = sgd.tight_interval(q, s, t, d, sampling="without-replacement")
    assert (w.method[0] == "total-variation") == (exact.total_variation_upper(q, s, t, "without-replacement") <= d)


def test_no_distance_bound_for_a_shuffle():
    # A shuffle puts each record in exactly one batch an epoch: the per-step coupling does not apply.
    with pytest.raises(ValueError):
        exact.total_variation_upper(0.01, 1.0, 100, "shuffle")


def test_without_replacement_zero_agrees_with_the_composed_hull():
    # Where the coupling bound answers ε = 0 for sampling without replacement, the PLD engine's
    # certified upper end on the composed hull is 0 there too (an independent route to the same claim).
    from dpcalc.core.pld import mechanisms

    for q, s, t, d in ((1e-4, 2.0, 100, 0.05), (1e-3, 1.0, 50, 0.05), (0.02, 5.0, 20, 0.2)):
        assert exact.total_variation_upper(q, s, t, "without-replacement") <= d
        r = sgd.tight_interval(q, s, t, d, sampling="without-replacement")
        assert r.method[0] == "total-variation" and r.upper[0] == 0.0
        hull = pld.epsilon([(mechanisms.sampled_wor_gaussian(q, s), t)], [d], upper_only=True)
        assert hull.upper[0] == 0.0, (q, s, t, d, hull.upper[0])


def test_a_guess_is_certified_or_ignored():
    # The few-row path guesses the root on a cheap curve and certifies it on a ladder; a wrong guess
    # (or none) falls back to the full search, and many rows at once take the search: all agree.
    rng = np.random.default_rng(11)
    q, s, d = 10 ** rng.uniform(-6, 0, 20), 10 ** rng.uniform(np.log10(0.3), 2, 20), 10 ** rng.uniform(-12, -1, 20)
    lo_v, up_v = exact.subsampled_step_interval(q, s, d)  # 20 rows: the search
    for i in range(20):
        lo, up = exact.subsampled_step_interval(q[i], s[i], d[i])  # one row: the guess
        assert lo[0] <= up_v[i] and lo_v[i] <= up[0]
        assert up[0] - lo[0] <= 1e-11 * up[0] + 1e-300
    mu, log_d = np.array([0.7]), np.log(np.array([1e-6]))
    top = mu * mu / 2 + mu * np.sqrt(-2.0 * log_d)
    bounds = lambda e: gdp._log_delta_bounds(mu, e)  # noqa: E731
    plain = exact._bracket(bounds, log_d, top)
    for wrong in ([np.nan], [0.0], [plain[1][0] * 1.5], [plain[1][0] * (1 + 1e-9)]):
        lo, up = exact._bracket(bounds, log_d, top, guess=np.array(wrong))
        assert lo[0] <= plain[1][0] and plain[0][0] <= up[0] and up[0] - lo[0] <= 1e-12 * up[0]


def test_total_variation_makes_no_claim_outside_the_normal_range():
    # q² underflowing (q < 1e-154) or σ² overflowing made the bound 0, and compose printed ε = 0 as exact
    # where the exact one-step ε is 527.84 (found by review). Now: no claim, and the exact route answers.
    # The coupling bound q·(1 − 2Φ̄(1/(2σ))) stays in the normal range there and answers; it is never
    # below the exact one-step distance (50 digits), and makes no claim where that underflows.
    for q, s in ((1e-170, 0.04), (1e-170, 1.0), (1.0, 1e200), (1e-150, 1e12)):
        bound = exact.total_variation_upper(q, s, 1)
        assert bound >= mp.mpf(q) * (2 * mp.ncdf(1 / (2 * mp.mpf(s))) - 1), (q, s)
        assert bound > 1e-300  # so the δ = 1e-300 rows below take the exact routes
    assert np.isinf(exact.total_variation_upper(1e-300, 1e12, 1))
    assert exact.total_variation_upper(0.0, 1.0, 10) == 0.0  # q = 0 releases nothing
    t = sgd.tight_interval([1e-170, 1e-170, 1.0], [0.04, 1.0, 1e200], [1, 1, 1], [1e-300] * 3)
    assert list(t.method) == ["privacy-profile", "privacy-profile", "gdp"]
    assert 527.84 < t.lower[0] <= t.upper[0] < 527.85
    assert 5.1e-160 < t.lower[1] and 2.1e-199 < t.lower[2]


def test_compose_does_not_print_zero_for_a_tiny_rate():
    r = CliRunner().invoke(cli, "compose mixed --subsampled-gaussian 1e-170,0.04,1 --delta 1e-300 --json".split())
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    tight = [x for x in rows if x.get("tightest")][0]
    assert tight["method"] == "privacy-profile" and 527.84 < tight["epsilon"] < 527.85


def test_a_tie_at_zero_marks_the_tight_row():
    # RDP also gives 0 here; the answer is the row that carries the certified lower end (as amplify does).
    r = CliRunner().invoke(
        cli, "plan-sgd --rate 8.66e-6 --noise-multiplier 22.2 --steps 13 --delta 0.0075 --accountant all --json".split()
    )
    assert r.exit_code == 0, r.stderr
    rows = {x["method"]: x for x in json.loads(r.stdout)["rows"]}
    assert rows["total-variation"]["tightest"] and not rows["rdp"]["tightest"]
    assert rows["total-variation"]["epsilon"] == rows["rdp"]["epsilon"] == 0


def test_one_step_at_rate_one_is_the_gaussian():
    # At q = 1 the add direction's ε = −log1p(q·expm1(−x)) cancels in doubles: the one-step route gave
    # [28.46730, 28.46730] where the truth is 28.4672666 (σ = 0.3, δ = 1e-12; library only — the tight
    # engine sends q = 1 to the gdp route). It now takes the Gaussian's own curve there.
    for s, d in ((0.3, 1e-12), (0.5, 1e-10), (0.05, 1e-12), (1.0, 1e-5)):
        lo, up = exact.subsampled_step_interval(1.0, s, d)
        true = float(_eps_of(lambda e: _delta_step(1, s, e), d))
        assert lo[0] <= true <= up[0], (s, d)
        assert up[0] - lo[0] <= 1e-11 * true
    lo, up = exact.subsampled_step_interval([1.0, 0.5], [0.3, 0.3], [1e-12, 1e-12])
    assert lo[1] <= float(_eps_of(lambda e: _delta_step(0.5, 0.3, e), 1e-12)) <= up[1]


def test_exact_routes_hold_for_the_true_parameters_to_the_last_bit():
    # An independent audit found the q = 1 route, in batches of more than 16 rows (the full search, whose
    # ends are checked within an ulp or two), printing ends on the wrong side of the exact ε by 1–2 ulps:
    # μ = √T/σ rounded to nearest can be an ulp too small (upper end) or too large (lower end), and
    # ε moves about twice as much. The ends now come from μ rounded up and down, and log δ's own
    # rounding has room. Checked here as certified ends are defined — δ(upper) <= δ < δ(lower), at
    # the true √T/σ, in 60-digit arithmetic (comparing with the exact ε rounded to a double would
    # hide an ulp).
    rng = np.random.default_rng(11)
    with mp.workdps(60):
        for steps, s in ((7308850, 3.96489), (645978, 3.75159), (3330684, 0.2784), (1000, 1.0), (7, 0.61)):
            deltas = 10 ** rng.uniform(-12, -1, 20)
            mu = mp.sqrt(mp.mpf(steps)) / mp.mpf(s)
            for batch in (sgd.tight_interval(np.ones(20), s, steps, deltas), None):
                for i, d in enumerate(deltas[:20] if batch is not None else deltas[:3]):
                    r = batch if batch is not None else sgd.tight_interval(1.0, s, steps, d)
                    k = i if batch is not None else 0
                    lo, up = float(r.lower[k]), float(r.upper[k])
                    assert _delta_gauss(mu, up) <= mp.mpf(d), (steps, s, d, up)
                    assert lo == 0 or _delta_gauss(mu, lo) > mp.mpf(d), (steps, s, d, lo)
        for q, s in ((1e-5, 1.0), (0.3, 0.3), (0.02, 7.3), (1e-9, 1.0)):
            deltas = 10 ** rng.uniform(-12, -1, 20)
            batch = exact.subsampled_step_interval(np.full(20, q), s, deltas)
            for i, d in enumerate(deltas):
                one = exact.subsampled_step_interval(q, s, d)
                for lo, up in ((batch[0][i], batch[1][i]), (one[0][0], one[1][0])):
                    assert _delta_step(q, s, float(up)) <= mp.mpf(d), (q, s, d, up)
                    assert lo == 0 or _delta_step(q, s, float(lo)) > mp.mpf(d), (q, s, d, lo)


def test_one_step_keeps_a_tiny_rates_epsilon_past_a_gaussian_variable_of_30():
    # A review found the remove direction's ε = ε' + log(q + (1 − q)e^{−ε'}) (used for ε' > 30)
    # cancelling to nothing where q·e^{ε'} is small: q = 3.4e-172 printed upper 3.4e-172 (the add
    # direction) against a true 9.86e-154, and two lower ends came out above the truth. ε' up to 700 now
    # goes by log1p(q·expm1(ε')); beyond, by log(e^{log q + ε'} + 1 − q) with its own error bound.
    cases = [
        (1.7422747266548062e-17, 0.2636010680569797, 3.0965094760566387e-28),
        (1e-20, 0.25, 1e-30),
        (3.415654230567534e-172, 0.22889682165932917, 2.780128453859781e-186),
        (1e-300, 0.01, 1e-305),  # ε' past 700
    ]
    with mp.workdps(200):
        for q, s, d in cases:
            batch = exact.subsampled_step_interval(np.full(17, q), s, np.full(17, d))
            one = exact.subsampled_step_interval(q, s, d)
            for lo, up in ((batch[0][0], batch[1][0]), (one[0][0], one[1][0])):
                assert 0 < up < np.inf, (q, s, d)
                assert _delta_step(q, s, float(up)) <= mp.mpf(d), (q, s, d, up)
                assert lo == 0 or _delta_step(q, s, float(lo)) > mp.mpf(d), (q, s, d, lo)
    assert 9.85e-154 < exact.subsampled_step_interval(cases[2][0], cases[2][1], cases[2][2])[1][0] < 9.87e-154


def test_a_closed_form_interval_wider_than_asked_says_so_and_keeps_rdp_beside_it():
    # At σ = 1e-7 (ε ≈ 5e13) the one-step route's error bounds make its interval 9 % wide: the row is
    # not "met" and not labelled exact; RDP (5.1e13, smaller than its upper end) stays beside it in
    # searches, and at σ = 1e-150, where the closed form has no answer, RDP answers (found by review).
    r = sgd.tight_interval([0.5, 0.5, 1.0], [1e-7, 1.0, 1.0], [1, 1, 10], 1e-5)
    assert list(r.met) == [False, True, True]
    assert list(r.bound) == ["upper", "exact", "exact"]
    assert r.lower[0] < r.upper[0]
    c = sgd.tight_curve([0.5, 0.5], [1e-7, 1.0], [1, 1], 1e-5)
    assert list(c.met) == [False, True] and list(c.bound) == ["upper", "exact"]
    e, m = sgd._search_bound("best", "poisson")(
        np.array([0.5, 0.5]), np.array([1e-7, 1e-150]), np.array([1.0, 1.0]), np.array([1e-5, 1e-5])
    )
    # (The same step without subsampling, exactly μ-GDP, and RDP — whose orders now reach α near 1 — are
    # beside it: the smaller answers.)
    assert set(m) <= {"no-subsampling", "rdp"} and e[0] < r.upper[0] and np.isfinite(e[1])
    full = sgd.no_subsampling_upper(np.array([1e-7, 1e-150]), np.array([1.0, 1.0]), np.array([1e-5, 1e-5]))
    assert np.all(e <= full)
    rdp = sgd._rdp_epsilon(np.array([0.5, 0.5]), np.array([1e-7, 1e-150]), np.array([1.0, 1.0]), np.array([1e-5, 1e-5]))
    assert np.all(e <= rdp)


def test_a_large_one_step_grid_in_blocks_gives_the_same_values(monkeypatch):
    """Grids of single steps are taken ROWS_AT_ONCE rows at a time (their ladders held ~90 KB a row: 100,000
    rows peaked near 9 GB). The blocks are of equal size: a last block of a dozen rows would take the few-rows
    route of the batched roots (GUESS_UP_TO) and print other digits. Every value equals the one-call value."""
    from dpcalc.core import _arrays

    rng = np.random.default_rng(11)
    n = 300 + 12
    q = 10 ** rng.uniform(-9, 0, n)
    q[::37] = 1.0
    s = 10 ** rng.uniform(np.log10(0.05), 4, n)
    d = 10 ** rng.uniform(-15, -0.5, n)
    t = 10 ** rng.uniform(0, 7, n)
    whole = exact.subsampled_step_interval(q, s, d)
    rdp_whole = sgd._rdp_epsilon(q, s, t, d)
    monkeypatch.setattr(exact, "ROWS_AT_ONCE", 100)
    monkeypatch.setattr(_arrays, "ROWS_AT_ONCE", 100)
    seen = []
    real = _arrays.by_rows

    def spy(fn, *arrays, size=100):
        seen.append(arrays[0].shape[0])
        return real(fn, *arrays, size=size)

    monkeypatch.setattr(exact, "by_rows", spy)
    monkeypatch.setattr(sgd, "by_rows", spy)
    blocks = exact.subsampled_step_interval(q, s, d)
    assert seen and all(np.array_equal(a, b) for a, b in zip(whole, blocks))
    assert np.array_equal(sgd._rdp_epsilon(q, s, t, d), rdp_whole) and len(seen) == 2
    # ... and the blocks themselves: equal sizes, each more than half the limit
    cuts = []
    real(lambda x: cuts.append(x.size) or x, np.arange(312.0), size=100)
    assert sorted(cuts) == [78, 78, 78, 78]


@pytest.mark.parametrize(
    "q, s, d",
    [(0.99, 1.0, 1e-5), (1 - 1e-4, 0.5, 1e-8), (0.9, 3.0, 1e-3), (1 - 1e-6, 20.0, 1e-12), (0.999, 0.3, 1e-10)],
)
def test_near_full_batch_interval_holds_one_and_two_steps_exact_values(q, s, d):
    """The route's ends against 50-digit references: one step's exact curve (where its lower end is the remove
    direction's own formula, q^T = q) and two steps' by quadrature — at the lower end the true δ is at least
    δ (so the true ε is at least it), at the upper end at most δ."""
    with mp.workdps(30):
        lo, up = exact.near_full_batch_interval(q, s, 1, d)
        true = float(_eps_of(lambda e: _delta_step(q, s, e), d))
        assert lo[0] <= true <= up[0]
        lo2, up2 = exact.near_full_batch_interval(q, s, 2, d)
        assert 0 < lo2[0] <= up2[0]
        assert _delta_two_steps(q, s, lo2[0]) >= d
        assert _delta_two_steps(q, s, up2[0]) <= d


def test_near_full_batch_route_agrees_with_pld_and_answers_where_the_grids_crawl():
    """Where q^T is near 1 the route's interval is within the width asked for; it must overlap the PLD
    engine's own certified interval (random settings), and it answers q = 0.99999959, σ = 2.418e7, 180
    steps, δ = 1.5336e-13 — where the grids took 46 s for [0, 4.9e-4] — at [2.59937e-6, 2.59957e-6]."""
    from dpcalc.core.sgd import _mechanism

    rng = np.random.default_rng(7)
    seen = 0
    for _ in range(40):
        q, s = 1 - 10 ** rng.uniform(-8, -3), 10 ** rng.uniform(np.log10(0.3), 2)
        t, d = int(10 ** rng.uniform(0.5, 3.5)), 10 ** rng.uniform(-12, -2)
        r = sgd.tight_interval(q, s, t, d)
        if r.method[0] != "near-full-batch":
            continue
        seen += 1
        assert r.met[0] and r.upper[0] - r.lower[0] <= 1e-3 * r.upper[0]
        a = pld.epsilon([(_mechanism(q, s, "poisson"), t)], np.array([d]))
        assert r.lower[0] <= a.upper[0] and a.lower[0] <= r.upper[0], (q, s, t, d)
    assert seen >= 10
    r = sgd.tight_interval(0.9999995895916592, 24178967.45503139, 180, 1.5335637442137097e-13)
    assert r.method[0] == "near-full-batch" and 2.599e-6 < r.lower[0] <= r.upper[0] < 2.6e-6
    w = sgd.tight_interval(0.9999995895916592, 24178967.45503139, 180, 1.5335637442137097e-13, "without-replacement")
    assert w.method[0] == "near-full-batch" and w.lower[0] == r.lower[0] and w.upper[0] == r.upper[0]
