"""convert audit (issue 13, item 3): ε lower bounds from observed attack counts.

The bounds are checked three ways: their parts against mpmath (Clopper–Pearson tails, the
one-run p-value as exact binomial sums), their soundness by simulation (a mechanism of known ε
audited many times: the bound exceeds the true ε in at most about 1 − confidence of the runs),
and their use (a contradicted claim exits 1).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import mpmath as mp
import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli
from dpcalc.core import audit

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "dpcalc/schema/result-v1.schema.json").read_text())
mp.mp.dps = 40


def _binom_sf(k, n, p):
    """P[Bin(n, p) >= k] exactly (mpmath)."""
    p = mp.mpf(p)
    return mp.fsum(mp.binomial(n, j) * p**j * (1 - p) ** (n - j) for j in range(max(k, 0), n + 1))


@pytest.mark.parametrize("k, n", [(0, 10), (1, 10), (5, 10), (10, 10), (3, 200), (190, 200), (40, 1000)])
@pytest.mark.parametrize("level", [0.9, 0.975, 0.999])
def test_clopper_pearson_is_on_its_conservative_side(k, n, level):
    lo = float(audit.clopper_pearson(k, n, level, "lower"))
    hi = float(audit.clopper_pearson(k, n, level, "upper"))
    assert 0 <= lo <= k / n <= hi <= 1
    if k > 0:  # at p_lo, seeing k or more is at most as likely as the tail allowed: p_lo is not too high
        tail = _binom_sf(k, n, lo)
        assert tail <= 1 - level
        assert tail >= (1 - level) * (1 - 1e-9)  # and not needlessly low
    if k < n:  # at p_hi, seeing k or fewer is at most 1 − level
        tail = 1 - _binom_sf(k + 1, n, hi)
        assert tail <= 1 - level
        assert tail >= (1 - level) * (1 - 1e-9)


def test_classic_bound_is_the_formula():
    eps, tpr, fpr = audit.classic_epsilon(830, 1000, 40, 1000, 1e-5, 0.95)
    lo = audit.clopper_pearson(830, 1000, 0.975, "lower")
    hi = audit.clopper_pearson(40, 1000, 0.975, "upper")
    assert tpr == lo and fpr == hi
    want = max(math.log((lo - 1e-5) / hi), math.log((1 - hi - 1e-5) / (1 - lo)))
    assert want * (1 - 1e-14) <= float(eps) <= want
    # Nothing proven: an attack at chance gives 0.
    assert float(audit.classic_epsilon(500, 1000, 500, 1000, 1e-5, 0.95)[0]) == 0.0


def _p_value_mp(m, r, v, eps, delta):
    q = 1 / (1 + mp.e ** (-mp.mpf(eps)))
    pmf = [mp.binomial(r, j) * q**j * (1 - q) ** (r - j) for j in range(r + 1)]
    beta = mp.fsum(pmf[v:])
    alpha = max([mp.fsum(pmf[v - i : v]) / i for i in range(1, v + 1)], default=0)
    return min(beta + alpha * delta * 2 * m, 1)


@pytest.mark.parametrize("m, r, v", [(100, 20, 18), (1000, 100, 95), (50, 50, 30), (10, 0, 0)])
@pytest.mark.parametrize("delta", [0.0, 1e-5, 1e-2])
def test_one_run_p_value_and_search_against_exact_sums(m, r, v, delta):
    for eps in (0.0, 0.5, 2.0):
        want = float(_p_value_mp(m, r, v, eps, delta))
        assert audit.one_run_p_value(m, r, v, eps, delta) == pytest.approx(want, rel=1e-9, abs=1e-300)
    eps, status = audit.one_run_epsilon(m, r, v, delta, 0.95)
    if status == "bound":  # the answer is rejected; a hair above it is not
        assert _p_value_mp(m, r, v, eps, delta) <= 0.05
        assert _p_value_mp(m, r, v, eps * (1 + 1e-6) + 1e-12, delta) > 0.05
    else:
        assert status == "none" and eps == 0.0 and _p_value_mp(m, r, v, 0, delta) > 0.05


def _rr(eps, inside, rng, n):
    """n runs of ε-DP randomised response on one bit: says 'in' with probability e^ε/(1+e^ε) when in."""
    p = 1 / (1 + math.exp(-eps))
    return rng.binomial(n, p if inside else 1 - p)


def test_classic_audit_of_a_known_mechanism_is_sound_and_useful():
    rng = np.random.default_rng(7)
    true_eps, runs, n = 1.0, 400, 2000
    tp = np.array([_rr(true_eps, True, rng, n) for _ in range(runs)])
    fp = np.array([_rr(true_eps, False, rng, n) for _ in range(runs)])
    eps = audit.classic_epsilon(tp, n, fp, n, 0.0, 0.95)[0]
    assert np.mean(eps > true_eps) <= 0.05  # at most 1 − confidence (it is far below: CP is conservative)
    assert np.median(eps) > 0.8  # and the audit has power: it proves most of ε


def test_one_run_audit_of_a_known_mechanism_is_sound_and_useful():
    rng = np.random.default_rng(11)
    true_eps, m, runs = 2.0, 1000, 60
    found = []
    for _ in range(runs):
        inside = rng.random(m) < 0.5
        says_in = rng.random(m) < np.where(inside, 1, 0) * (1 / (1 + math.exp(-true_eps))) + np.where(
            inside, 0, 1 / (1 + math.exp(true_eps))
        )
        v = int(np.sum(says_in == inside))  # guess on every canary
        found.append(audit.one_run_epsilon(m, m, v, 0.0, 0.95)[0])
    found = np.array(found)
    assert np.mean(found > true_eps) <= 0.1
    assert np.median(found) > 1.5


def run(args):
    return CliRunner().invoke(cli, ["convert", "audit", *args.split()])


def test_a_claim_just_below_the_proof_is_shown_below_it():
    # The audit proves ε >= 2.700818262...; a claim of 2.7008182 reads 2.70082 at six digits, above 2.70081.
    r = run("--true-positives 830 --positives 1000 --false-positives 40 --negatives 1000 --claimed-epsilon 2.7008182")
    assert r.exit_code == 1
    proven, claimed = r.stderr.split("ε ≥ ")[1].split(" at ")[0].split(" > ")
    assert float(proven) > float(claimed) == 2.7008182 and float(proven) <= 2.700818262045008


def test_a_contradicted_claim_exits_1_and_says_why():
    r = run("--canaries 1000 --guesses 100 --correct 95 --delta 1e-5 --claimed-epsilon 1 --json")
    assert r.exit_code == 1
    assert r.stderr.startswith("claim contradicted: the audit proves ε ≥ 2.16") and r.stderr.count("\n") == 1
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    assert doc["audit"] == {"claimed_epsilon": 1.0, "contradicted": True}
    assert doc["rows"][0]["bound"] == "lower" and doc["rows"][0]["contradicted"] is True
    ok = run("--canaries 1000 --guesses 100 --correct 95 --delta 1e-5 --claimed-epsilon 3 --json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["audit"]["contradicted"] is False


def test_grids_of_delta_and_confidence():
    r = run("--true-positives 830 --positives 1000 --false-positives 40 --negatives 1000 "
            "--delta 0,1e-5,1e-2 --confidence 0.9,0.99 --json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    eps = {(row["delta"], row["confidence"]): row["epsilon"] for row in doc["rows"]}
    assert len(eps) == 6
    assert eps[(0.0, 0.9)] > eps[(0.0, 0.99)]  # more confidence proves less
    assert eps[(0.0, 0.9)] > eps[(1e-2, 0.9)]  # so does a larger δ in the claim


@pytest.mark.parametrize(
    "args, says",
    [
        ("", "give a classic audit's counts"),
        ("--true-positives 5 --positives 10 --canaries 10", "give the counts of one audit"),
        ("--true-positives 5 --positives 10 --false-positives 1", "Missing option '--negatives'"),
        ("--true-positives 11 --positives 10 --false-positives 1 --negatives 10", "more than --positives"),
        ("--canaries 10 --guesses 11 --correct 1", "more than --canaries"),
        ("--canaries 10 --guesses 5 --correct 6", "more than --guesses"),
        ("--canaries 1e8 --guesses 5 --correct 6", "--canaries"),
        ("--true-positives 1.5 --positives 10 --false-positives 1 --negatives 10", "--true-positives"),
        ("--canaries 10 --guesses 5 --correct 5 --confidence 1", "--confidence"),
    ],
)
def test_bad_counts_are_one_line_errors(args, says):
    r = run(args)
    assert r.exit_code == 2 and r.stderr.startswith("Error:") and r.stderr.count("\n") == 1, r.stderr
    assert says in r.stderr
