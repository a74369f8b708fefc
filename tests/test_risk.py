"""Attack risk of composed and subsampled runs (issue 13, item 1): certified intervals on β(α), TPR and advantage.

References: the exact trade-off curve of μ-GDP (a Gaussian mechanism read through the PLD engine must
bracket it), the exact one-step profile of a Poisson-subsampled Gaussian (its f, a sup over a fine ε
grid, must lie in the interval), riskcal (Kulynych et al. 2024) where its discretisation is fine, and
the command line: piped objects answer --to tradeoff|attack with the right bounds.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import norm

from dpcalc.cli import cli
from dpcalc.core import pld
from dpcalc.core.pld import risk
from dpcalc.core.pld.deltas import READ_SLACK, _cover_tilts

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "dpcalc/schema/result-v1.schema.json").read_text())
ALPHA = np.array([1e-8, 1e-5, 1e-3, 0.01, 0.05, 0.2, 0.5, 0.8, 0.99, 1.0])


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 4.0])
def test_gaussian_through_the_engine_brackets_the_exact_curve(mu):
    prof = risk.profile([(pld.gaussian(mu), 1)])
    lo, hi = risk.tradeoff(prof, ALPHA)
    true = norm.cdf(norm.ppf(1 - ALPHA) - mu)
    assert np.all(lo <= true) and np.all(true <= hi), (lo - true, hi - true)
    assert np.max(hi - lo) < 2e-4
    a_lo, a_hi = risk.advantage(prof)
    assert a_lo <= 2 * norm.cdf(mu / 2) - 1 <= a_hi and a_hi - a_lo < 1e-4


def _one_step_f(q, s, alpha):
    """f of one Poisson-subsampled Gaussian step: sup over a fine ε grid of f_{ε, δ(ε)} (a lower bound on the
    true f within ~1e-8; δ(ε) exact, max of both directions)."""
    eps = np.linspace(0, 15, 150_001)
    x = s**2 * np.log((np.expm1(eps) + q) / q) + 0.5
    d_rem = (1 - q) * norm.sf(x / s) + q * norm.sf((x - 1) / s) - np.exp(eps) * norm.sf(x / s)
    with np.errstate(invalid="ignore", divide="ignore"):
        xp = s**2 * np.log((np.expm1(-eps) + q) / q) + 0.5
        d_add = norm.cdf(xp / s) - np.exp(eps) * ((1 - q) * norm.cdf(xp / s) + q * norm.cdf((xp - 1) / s))
    d_add = np.where(np.exp(-eps) > 1 - q, d_add, 0.0)
    d = np.clip(np.maximum(d_rem, np.nan_to_num(d_add)), 0, 1)
    out = []
    for a in alpha:
        out.append(np.max(np.maximum(1 - d - np.exp(eps) * a, np.exp(-eps) * (1 - d - a))))
    return np.maximum(np.array(out), 0.0)


@pytest.mark.parametrize("q, s", [(0.01, 0.5), (0.2, 1.0), (0.5, 2.0)])
def test_one_subsampled_step_is_bracketed(q, s):
    prof = risk.profile([(pld.subsampled_gaussian(q, s), 1)])
    alpha = ALPHA[1:-1]
    lo, hi = risk.tradeoff(prof, alpha)
    ref = _one_step_f(q, s, alpha)
    assert np.all(hi >= ref), hi - ref  # the upper end is at least a value the true f reaches
    assert np.all(lo <= ref + 1e-7), lo - ref  # and the lower end at most the true f (ref is within 1e-8 below)


def test_composed_runs_agree_with_riskcal_where_it_is_fine():
    riskcal = pytest.importorskip("riskcal.analysis")
    from dp_accounting.pld import privacy_loss_distribution as P

    q, s, t = 0.01, 1.1, 1000
    prof = risk.profile([(pld.subsampled_gaussian(q, s), t)])
    alpha = np.array([0.05, 0.1, 0.3, 0.5, 0.9])
    lo, hi = risk.tradeoff(prof, alpha)
    theirs = P.from_gaussian_mechanism(s, sampling_prob=q, use_connect_dots=True, value_discretization_interval=1e-4)
    theirs = theirs.self_compose(t)
    beta = riskcal.get_beta_from_pld(theirs, alpha=alpha)
    # Their β comes from a 1e-4 grid (not certified either way): within it of our interval.
    assert np.all(beta >= lo - 1e-4) and np.all(beta <= hi + 1e-4), (lo, beta, hi)
    a_lo, a_hi = risk.advantage(prof)
    assert a_lo - 1e-5 <= riskcal.get_advantage_from_pld(theirs) <= a_hi + 1e-5


def _pipe(first, second):
    a = CliRunner().invoke(cli, first.split() + ["--json"])
    assert a.exit_code == 0, a.stderr
    return CliRunner().invoke(cli, second.split(), input=a.stdout)


def test_a_dp_sgd_run_piped_to_attack_readings():
    r = _pipe(
        "plan-sgd --rate 0.01 --noise-multiplier 1.1 --steps 1000 --delta 1e-5",
        "convert --to attack --fpr 0.001,0.01 --json",
    )
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    rows = doc["rows"]
    assert [row["fpr"] for row in rows] == [0.001, 0.01]
    for row in rows:
        assert row["method"] == "pld-attack" and row["bound"] == "upper"
        assert row["fpr"] <= row["tpr_lower"] <= row["tpr"] <= 1 and row["tpr"] - row["tpr_lower"] < 1e-4
        assert row["advantage_lower"] <= row["advantage"] and 0.13 < row["advantage"] < 0.15


def test_trade_off_rows_round_beta_down_and_bound_it_from_both_sides():
    r = _pipe(
        "plan-sgd --rate 0.01 --noise-multiplier 1.1 --steps 1000 --delta 1e-5",
        "convert --to tradeoff --alpha 0.01,0.1 --json",
    )
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    cols = {c["key"] for c in doc["columns"]}
    assert {"alpha", "beta", "beta_upper"} <= cols
    for row in doc["rows"]:
        assert row["bound"] == "lower" and row["beta"] <= row["beta_upper"] <= 1 - row["alpha"]
    # --value reads the sound side of β.
    v = _pipe("plan-sgd --rate 0.01 --noise-multiplier 1.1 --steps 1000 --delta 1e-5", "convert --to tradeoff "
              "--alpha 0.01 --value beta")  # fmt: skip
    assert float(v.stdout) == doc["rows"][0]["beta"]


def test_gaussian_only_compositions_are_exact():
    r = _pipe("compose gaussian --sigma 2 --times 100 --delta 1e-5", "convert --to attack --fpr 0.01 --json")
    assert r.exit_code == 0, r.stderr
    row = json.loads(r.stdout)["rows"][0]
    assert row["bound"] == "exact" and row["method"] == "gdp-attack"
    mu = np.sqrt(100) / 2
    assert row["tpr"] == pytest.approx(norm.cdf(mu - norm.ppf(0.99)), rel=1e-9)


def test_objects_without_a_trade_off_curve_are_refused():
    r = CliRunner().invoke(cli, ["convert", "--to", "attack"], input='{"type": "composed", "parts": '
                           '[{"times": 2, "of": {"type": "zcdp", "rho": 0.1}}]}')  # fmt: skip
    assert r.exit_code == 2 and "no trade-off curve" in r.stderr and r.stderr.count("\n") == 1


# ---------------------------------------------------------------- calibration to an attack-risk target (item 2)


@pytest.mark.parametrize("target", [1e-6, 0.01, 0.1, 0.5, 0.9, 0.999999])
def test_calibrate_gaussian_to_an_advantage(target):
    r = CliRunner().invoke(cli, ["calibrate", "gaussian", "--target-advantage", repr(target), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    row = doc["rows"][0]
    mu = 1 / row["sigma"]
    assert 2 * norm.cdf(mu / 2) - 1 <= target  # met at the printed σ
    assert 2 * norm.cdf(mu * (1 + 1e-9) / 2) - 1 > target * (1 - 1e-6)  # and not by much more noise than needed
    rc = pytest.importorskip("riskcal.analysis")
    assert rc.get_advantage_from_gdp(mu) == pytest.approx(target, rel=1e-9)


@pytest.mark.parametrize("tpr, fpr", [(0.02, 0.01), (0.5, 0.01), (0.1, 1e-5), (0.999, 0.5)])
def test_calibrate_gaussian_to_a_tpr_at_an_fpr(tpr, fpr):
    r = CliRunner().invoke(cli, ["calibrate", "gaussian", "--target-tpr", repr(tpr), "--at-fpr", repr(fpr), "--json"])
    assert r.exit_code == 0, r.stderr
    row = json.loads(r.stdout)["rows"][0]
    mu = 1 / row["sigma"]
    assert norm.cdf(mu + norm.ppf(fpr)) <= tpr
    rc = pytest.importorskip("riskcal.analysis")
    assert 1 - rc.get_beta_from_gdp(mu, alpha=fpr) == pytest.approx(tpr, rel=1e-8)


@pytest.mark.parametrize(
    "args, says",
    [
        ("--target-tpr 0.01 --at-fpr 0.05", "a TPR above --at-fpr"),
        ("--target-tpr 0.3", "--at-fpr"),
        ("--at-fpr 0.1 --epsilon 1 --delta 1e-5", "--at-fpr goes with --target-tpr"),
        ("--target-advantage 0.1 --epsilon 1", "cannot be used together"),
        ("--target-advantage 0.1 --delta 1e-5", "--delta goes with --epsilon"),
        ("--target-advantage 1", "--target-advantage"),
    ],
)
def test_risk_targets_refuse_what_they_cannot_mean(args, says):
    r = CliRunner().invoke(cli, ["calibrate", "gaussian", *args.split()])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr


# ---------------------------------------------------------------- plan-sgd readings and risk targets


def _plan(args):
    r = CliRunner().invoke(cli, ["plan-sgd", *args.split(), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    return doc


def test_plan_sgd_to_attack_equals_the_piped_reading():
    doc = _plan("--rate 0.01 --steps 1000 --noise-multiplier 1.1 --to attack --fpr 0.001,0.01")
    piped = _pipe("plan-sgd --rate 0.01 --noise-multiplier 1.1 --steps 1000 --delta 1e-5",
                  "convert --to attack --fpr 0.001,0.01 --json")  # fmt: skip
    want = json.loads(piped.stdout)["rows"]
    for row, w in zip(doc["rows"], want):
        for k in ("fpr", "tpr", "tpr_lower", "advantage", "advantage_lower", "method", "bound"):
            assert row[k] == w[k], k
        assert row["steps"] == 1000 and row["rate"] == 0.01


def test_plan_sgd_to_tradeoff_with_every_record_is_exact_gdp():
    doc = _plan("--rate 1 --steps 100 --noise-multiplier 5 --to tradeoff --alpha 0.01,0.1")
    for row in doc["rows"]:
        assert row["bound"] == "exact"
        assert row["beta"] == pytest.approx(norm.cdf(norm.ppf(1 - row["alpha"]) - 2.0), rel=1e-12)


def test_plan_sgd_target_advantage_is_met_and_tight():
    doc = _plan("--dataset-size 60000 --batch-size 256 --epochs 60 --target-advantage 0.1")
    (row,) = doc["rows"]
    assert row["achieved"] <= 0.1 < row["achieved_next"] and row["found"]
    from dpcalc import risk as rk

    lo, hi = rk.attack_bounds(256 / 60000, row["noise_multiplier"], row["steps"])
    assert hi[0] <= 0.1
    rc = pytest.importorskip("riskcal.calibration.dpsgd")
    theirs = rc.find_noise_multiplier_for_advantage(advantage=0.1, sample_rate=256 / 60000, num_steps=row["steps"])
    assert theirs == pytest.approx(row["noise_multiplier"], rel=2e-3)


def _advantage(q, sigma, steps):
    from dpcalc import risk as rk

    return float(rk.attack_bounds(q, sigma, steps)[1][0])


def test_plan_sgd_target_advantage_solves_steps_met_and_next_missed():
    doc = _plan("--rate 0.01 --noise-multiplier 1.5 --target-advantage 0.2")
    (row,) = doc["rows"]
    assert row["search"] == "found" and row["found"]
    t = row["steps"]
    assert row["epochs"] == pytest.approx(t * 0.01)
    # re-derived independently of the command: T meets the target, the next value checked does not
    assert _advantage(0.01, 1.5, t) <= 0.2 < _advantage(0.01, 1.5, row["checked_next"])
    assert row["checked_next"] - t <= max(1, t // 1000)


def test_plan_sgd_target_tpr_solves_batch_size_with_its_steps():
    doc = _plan("--dataset-size 60000 --epochs 10 --noise-multiplier 1.1 --target-tpr 0.02 --at-fpr 0.001")
    (row,) = doc["rows"]
    b = row["batch_size"]
    assert row["found"] and row["rate"] == pytest.approx(b / 60000)
    assert row["steps"] == -(-10 * 60000 // b)  # ⌈E·N/B⌉
    from dpcalc import risk as rk

    def tpr(bb):
        return float(rk.attack_bounds(bb / 60000, 1.1, -(-10 * 60000 // bb), 0.001)[1][0])

    assert tpr(b) <= 0.02 < tpr(row["checked_next"])


def test_plan_sgd_risk_target_none_and_range_end_are_said():
    args = "--dataset-size 60000 --epochs 10 --noise-multiplier 0.3 --target-advantage 0.01 --json"
    r = CliRunner().invoke(cli, ["plan-sgd", *args.split()])
    doc = json.loads(r.stdout)
    assert r.exit_code == 0 and "even a batch size of 1 exceeds the advantage target 0.01." in doc["warnings"]
    (row,) = doc["rows"]
    assert row["search"] == "none" and row["batch_size"] == 0 and not row["found"]
    doc = _plan("--rate 0.001 --noise-multiplier 50 --target-advantage 0.5")
    (row,) = doc["rows"]
    assert row["search"] == "range-end" and row["steps"] == 10**7 and not row["found"]
    assert row["achieved"] <= 0.5


@pytest.mark.parametrize(
    "args, says",
    [
        ("--rate 0.01 --steps 10 --noise-multiplier 1 --to attack --delta 1e-5", "--delta is not used"),
        ("--rate 0.01 --steps 10 --noise-multiplier 1 --to attack --alpha 0.1", "--alpha"),
        ("--rate 0.01 --steps 10 --noise-multiplier 1 --fpr 0.1 --delta 1e-5", "--fpr"),
        ("--rate 0.01 --steps 10 --target-tpr 0.1", "--at-fpr"),
        ("--rate 0.01 --steps 10 --noise-multiplier 1 --target-advantage 0.1", "leave out the option to solve for"),
        ("--rate 0.01 --noise-multiplier 1 --target-advantage 0.1 --solve batch-size", "--dataset-size"),
        ("--rate 0.01 --target-advantage 0.1", "leave out exactly one"),
        ("--rate 0.01 --steps 10 --target-advantage 0.1 --target-epsilon 1", "cannot be used together"),
    ],
)
def test_plan_sgd_risk_refusals(args, says):
    r = CliRunner().invoke(cli, ["plan-sgd", *args.split()])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr


def test_readme_ledger_attack_reading_is_current(monkeypatch):
    """The README's "What does my ε mean?" quotes the example ledger's attack reading (a pipe, so not a
    console block): the total's loss distribution and the (ε, δ) figure alone, at FPR 0.01."""
    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    r = _pipe("compose --ledger examples/privacy.toml", "convert --to attack --fpr 0.01 --json")
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    assert {r["method"] for r in rows} == {"pld-attack"}  # one object piped on: the composition itself
    tight = rows[0]["tpr"]
    total = CliRunner().invoke(cli, ["compose", "--ledger", "examples/privacy.toml", "--json"])
    best = [r for r in json.loads(total.stdout)["rows"] if r.get("tightest")][0]
    alone = CliRunner().invoke(
        cli,
        ["convert", "dp", "--epsilon", repr(best["epsilon"]), "--delta", repr(best["delta"])]
        + ["--to", "attack", "--fpr", "0.01", "--json"],
    )
    loose = json.loads(alone.stdout)["rows"][0]["tpr"]
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert f"max TPR {tight:.2g} at FPR 0.01" in readme and f"would allow {loose:.2g}" in readme
    assert tight < loose


def test_profile_reads_share_few_tilts_each_within_the_slack_of_the_best():
    # A ladder of tilts and a convex log-MGF: each ε's tilt keeps the Chernoff exponent G(λ) − λε within
    # READ_SLACK of the best rung's (so the round-off allowance grows at most e^READ_SLACK times), and
    # the greedy cover needs far fewer distinct tilts than the per-ε argmin.
    ts = 2.0 ** np.arange(-12.0, 8.0, 0.5)
    total = 2.0 * ts * (ts + 1.0)  # a Gaussian composition's (μ² = 4): convex in λ
    total[-3:] = np.inf  # rungs past the MGF's reach
    eps = np.linspace(0.0, 20.0, 2001)
    ex = np.where(np.isfinite(total), total[None, :] - ts[None, :] * eps[:, None], np.inf)
    best = ex.min(axis=1)
    tilts = _cover_tilts(ts, total, eps)
    idx = np.searchsorted(ts, tilts)
    assert np.all(ts[idx] == tilts)
    assert np.all(ex[np.arange(eps.size), idx] <= best + READ_SLACK)
    argmin = ts[np.argmin(ex, axis=1)]
    assert np.unique(tilts).size < np.unique(argmin).size
    assert np.array_equal(_cover_tilts(ts, total, eps, slack=0.0), argmin)
    # No finite rung at all: the smallest, as before.
    assert np.all(_cover_tilts(ts, np.full(ts.shape, np.inf), eps) == ts[0])


@pytest.mark.parametrize(
    "target", ["--target-advantage 0.9999999999999999", "--target-advantage 0.96", "--target-tpr 0.97 --at-fpr 0.01"]
)
def test_plan_sgd_risk_target_every_sigma_meets_is_said_fast(target):
    """A target above what a record's inclusion alone allows (advantage <= 1 − (1 − q)^T whatever σ): the σ search
    walked down to σ = 1e-3 through ever costlier PLDs (minutes) and reported that as the smallest σ."""
    doc = _plan(f"--dataset-size 60000 --batch-size 256 --epochs 3 {target}")
    (row,) = doc["rows"]
    p = 1 - (1 - 256 / 60000) ** 704
    assert row["search"] == "any" and row["noise_multiplier"] is None and not row["found"]
    assert row["method"] == "inclusion-bound" and row["bound"] == "upper"
    assert p <= row["achieved"] - (0.01 if "fpr" in target else 0) <= p * (1 + 1e-9)
    assert any("every noise multiplier meets" in w for w in doc["warnings"])
    if target.endswith("0.96"):  # just below the inclusion bound the search runs, and its σ is a real one
        doc = _plan("--dataset-size 60000 --batch-size 256 --epochs 3 --target-advantage 0.94")
        assert doc["rows"][0]["search"] == "found" and doc["rows"][0]["noise_multiplier"] > 0
