"""Certified lower ends of objects whose PLD pair is a dominating construction (found by an audit: a
subsampled (ε, δ) object composed as its amplified guarantee's pair, and the bounded-range class's
dominating pair, printed lower ends above the true ε). Every printed end is checked against an exact
40-digit reference where one exists; where none is known the lower end must be absent."""

import itertools
import json

import mpmath as mp
import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli

mp.mp.dps = 40


def _run(args, stdin=None):
    r = CliRunner().invoke(cli, args, input=stdin)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _subsampled_dp_delta(eps0, delta0, q, times, eps):
    """δ(ε) of T Poisson-subsampled (ε₀, δ₀)-DP steps, exactly: the worst case over the class is the
    randomized-response pair with an atom of δ₀ on the record's presence, P = (δ₀, (1−δ₀)a, (1−δ₀)b, 0),
    Q = (0, (1−δ₀)b, (1−δ₀)a, δ₀), subsampled to (qP + (1−q)Q, Q) and its reverse; the larger δ of the
    two T-fold products (multinomial sums over the four outcomes)."""
    e0, d0, q, eps = (mp.mpf(x) for x in (eps0, delta0, q, eps))
    a = mp.e**e0 / (1 + mp.e**e0)
    b = 1 / (1 + mp.e**e0)
    P = [d0, (1 - d0) * a, (1 - d0) * b, mp.mpf(0)]
    Q = [mp.mpf(0), (1 - d0) * b, (1 - d0) * a, d0]
    M = [q * p + (1 - q) * x for p, x in zip(P, Q)]
    best = mp.mpf(0)
    for X, Y in ((M, Q), (Q, M)):
        total = mp.mpf(0)
        for k in itertools.product(range(times + 1), repeat=3):
            if sum(k) > times:
                continue
            k0 = times - sum(k)  # outcomes 0 (P's +∞ atom) taken k0 times
            c = mp.factorial(times) / (mp.factorial(k0) * mp.factorial(k[0]) * mp.factorial(k[1]) * mp.factorial(k[2]))
            px = c * X[0] ** k0 * X[1] ** k[0] * X[2] ** k[1] * X[3] ** k[2]
            qx = c * Y[0] ** k0 * Y[1] ** k[0] * Y[2] ** k[1] * Y[3] ** k[2]
            total += max(px - mp.e**eps * qx, 0)
        best = max(best, total)
    return best


@pytest.mark.parametrize(
    "eps0, delta0, q, times, delta",
    [(0.8, 0.0, 0.06, 10, 1e-6), (0.8, 1e-6, 0.06, 10, 1e-5), (2.0, 0.0, 0.3, 6, 1e-3), (0.3, 1e-9, 0.01, 12, 1e-7)],
)
def test_subsampled_dp_interval_holds_the_exact_value(eps0, delta0, q, times, delta):
    obj = {
        "type": "subsampled",
        "rate": q,
        "scheme": "poisson",
        "inner": {"type": "dp", "epsilon": eps0, "delta": delta0},
    }
    out = _run(["compose", "--times", str(times), "--delta", repr(delta), "--json"], json.dumps(obj))
    row = next(r for r in out["rows"] if r["method"] == "pld")
    lo, up = row["epsilon_lower"], row["epsilon"]
    assert lo is not None and lo <= up
    # δ at the lower end is above δ (the true ε is above it), at the upper end at most δ.
    assert _subsampled_dp_delta(eps0, delta0, q, times, lo) > delta
    assert _subsampled_dp_delta(eps0, delta0, q, times, up) <= delta
    # ... and the interval is tight: the amplified guarantee's pair (the old route) was above the truth.
    assert up - lo <= max(1e-3 * up, 1e-4)


@pytest.mark.parametrize("q, delta0", [(0.06, 0.0), (0.5, 1e-7)])
def test_subsampled_dp_without_replacement_takes_poissons_realisable_lower_end(q, delta0):
    """Without replacement the upper end composes the amplified guarantee's pair (a bound no datasets are known
    to reach); the lower end is the Poisson pair's, which two datasets realise under substitution too (its exact
    δ at that end is above δ), and never above the upper end."""
    obj = {
        "type": "subsampled",
        "rate": q,
        "scheme": "without-replacement",
        "inner": {"type": "dp", "epsilon": 0.8, "delta": delta0},
    }
    out = _run(["compose", "--times", "10", "--delta", "1e-6", "--json"], json.dumps(obj))
    row = next(r for r in out["rows"] if r["method"] == "pld")
    lo, up = row["epsilon_lower"], row["epsilon"]
    assert lo is not None and lo <= up
    assert _subsampled_dp_delta(0.8, delta0, q, 10, lo) > 1e-6  # below the realisable pair's ε
    assert _subsampled_dp_delta(0.8, delta0, q, 10, up) <= 1e-6  # the upper end is at least that pair's ε


def test_bounded_range_composition_has_no_lower_end():
    # The class's dominating pair composed 103 times: its lower end (9.3296) was above the zCDP upper
    # bound (8.5155) — the pair is not the output of any one mechanism's datasets.
    out = _run(
        ["compose", "bounded-range", "--epsilon", "0.234729", "--times", "103", "--delta", "2.866e-11", "--json"]
    )
    rows = {r["method"]: r for r in out["rows"]}
    assert rows["pld"]["epsilon_lower"] is None
    tight = min(r["epsilon"] for r in out["rows"])
    assert tight <= 8.5156
    # One release: the pair is the class's exact worst case, and its lower end stays (below the DDR value).
    one = _run(["compose", "bounded-range", "--epsilon", "0.234729", "--times", "1", "--delta", "2.866e-11", "--json"])
    rows = {r["method"]: r for r in one["rows"]}
    assert rows["pld"]["epsilon_lower"] is not None
    assert rows["pld"]["epsilon_lower"] <= rows["bounded-range-ddr"]["epsilon"]


def test_amplified_laplace_pipes_on_as_the_laplace_mechanism():
    """amplify of a piped Laplace object reports the amplified (ε, 0) guarantee, but the object it passes on is
    the subsampled Laplace mechanism (it was a subsampled ε-DP object: looser, and its exact worst case is
    randomized response's, 0.6477 here, not the Laplace's 0.5934)."""
    lap = json.dumps({"type": "laplace", "scale": 1.25, "sensitivity": 1})
    out = _run(["amplify", "--rate", "0.06", "--scheme", "poisson", "--json"], lap)
    assert [o["inner"]["type"] for o in out["objects"]] == ["laplace"]
    assert out["rows"][0]["epsilon"] == pytest.approx(0.0709546, abs=1e-7)  # the guarantee, as before
    piped = _run(["compose", "--times", "10", "--delta", "1e-6", "--json"], json.dumps(out))
    direct = _run(
        ["compose", "--times", "10", "--delta", "1e-6", "--json"],
        json.dumps({"type": "subsampled", "rate": 0.06, "scheme": "poisson", "inner": json.loads(lap)}),
    )
    row = next(r for r in piped["rows"] if r["method"] == "pld")
    assert row == next(r for r in direct["rows"] if r["method"] == "pld")
    assert row["epsilon_lower"] <= 0.593421 and 0.593426 <= row["epsilon"] < 0.6477  # dp-accounting at 1e-6


@pytest.mark.parametrize("eps0", [705.0, 750.0, 1000.0])
def test_subsampled_dp_at_huge_epsilon_answers_or_refuses_cleanly(eps0):
    """Past ε = 700 the object's own pair is not representable: compose answers by the amplified guarantee
    (upper end only) or the closed forms, and convert --to attack answers its sound side or refuses in one line
    (an internal error before)."""
    obj = json.dumps({"type": "subsampled", "rate": 0.3, "scheme": "poisson", "inner": {"type": "dp", "epsilon": eps0}})
    out = _run(["compose", "--times", "3", "--delta", "1e-6", "--json"], obj)
    assert all(r["epsilon_lower"] is None for r in out["rows"])
    assert min(r["epsilon"] for r in out["rows"]) >= 3 * (eps0 + np.log(0.3)) - 1e-9
    r = CliRunner().invoke(cli, ["convert", "--to", "attack", "--fpr", "0.01", "--json"], input=obj)
    if r.exit_code == 0:
        row = json.loads(r.stdout)["rows"][0]
        assert row["tpr_lower"] is None and row["tpr"] >= 0.01
    else:
        assert r.exit_code == 2 and r.output.startswith("Error:") and r.output.count("\n") == 1


def test_subsampled_dp_at_rate_one_is_the_mechanism():
    from dpcalc.core import pld

    (d,) = pld.subsampled_dp(0.5, 1e-6, 1.0)
    assert d.p_inf == 1e-6 and sorted(d.atoms[0].tolist()) == [-0.5, 0.5]
