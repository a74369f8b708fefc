"""calibrate for discrete mechanisms (issue 13, item 4): every answer meets its target, re-checked, as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli
from dpcalc.core import discrete as d

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "dpcalc/schema/result-v1.schema.json").read_text())


def rows(args):
    r = CliRunner().invoke(cli, ["calibrate", *args.split(), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    return doc["rows"]


@pytest.mark.parametrize("eps, delta, sens", [(0.1, 1e-6, 1), (1, 1e-5, 1), (2, 1e-9, 3), (8, 1e-3, 1)])
def test_discrete_gaussian_sigma_meets_the_target_and_no_less_noise_would(eps, delta, sens):
    (row,) = rows(f"discrete-gaussian --epsilon {eps} --delta {delta} --sensitivity {sens}")
    assert row["delta_check"] <= delta and d.dgauss_delta_at(row["sigma"], eps, sens) <= delta
    assert d.dgauss_delta_at(row["sigma"] * (1 - 1e-6), eps, sens) > delta
    assert row["rho"] == pytest.approx(sens**2 / (2 * row["sigma"] ** 2), rel=1e-12)
    assert row["std"] <= row["sigma"] * (1 + 1e-12)


def test_discrete_gaussian_for_rho():
    (row,) = rows("discrete-gaussian --rho 0.5 --sensitivity 2")
    assert row["rho_check"] <= 0.5 and row["sigma"] == pytest.approx(2.0, rel=1e-12)


def test_discrete_laplace_scale_is_exact():
    out = rows("discrete-laplace --epsilon 0.5,1 --sensitivity 2")
    assert [r["scale"] for r in out] == [4.0, 2.0]
    assert all(r["epsilon_check"] <= r["epsilon"] for r in out)


def test_randomized_response_keep_probability():
    import math

    for r in rows("randomized-response --epsilon 1 --k 2,4,10"):
        want = math.e / (math.e + r["k"] - 1)
        assert r["keep"] <= want and r["keep"] == pytest.approx(want, rel=1e-12)
        assert r["epsilon_check"] <= 1.0


def test_bounded_range():
    pure, approx = rows("bounded-range --epsilon 1 --delta 0,1e-6")
    assert pure["epsilon0"] == 1.0 and pure["delta_check"] == 0.0
    assert approx["epsilon0"] > 1.0 and approx["delta_check"] <= 1e-6
    (z,) = rows("bounded-range --rho 0.1")
    assert z["epsilon0"] ** 2 / 8 <= 0.1 and z["bound"] == "upper"


@pytest.mark.parametrize(
    "args, says",
    [
        ("discrete-gaussian --epsilon 1", "--delta"),
        ("discrete-gaussian --epsilon 1 --delta 1e-5 --sensitivity 1.5", "--sensitivity"),
        ("discrete-gaussian --rho 1 --delta 1e-5", "--delta goes with --epsilon"),
        ("randomized-response --epsilon 1 --k 1", "--k"),
        ("bounded-range --rho 1 --epsilon 1", "cannot be used together"),
    ],
)
def test_refusals(args, says):
    r = CliRunner().invoke(cli, ["calibrate", *args.split()])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr


def test_convert_discrete_gaussian_delta_is_exact_only_where_its_interval_is_round_off_wide():
    """Far out in ε the sums' cut tails are the whole upper end (δ ≈ 2.4e-50 at σ = 1.5869 for ε = 10, 11 and 12
    alike, the true δ far below): that row is an upper bound, not exact; near the bulk it stays exact."""
    r = CliRunner().invoke(cli, "convert discrete-gaussian --sigma 1.5869 --epsilon 5,10,12 --json".split())
    assert r.exit_code == 0, r.stderr
    got = {row["epsilon"]: row for row in json.loads(r.stdout)["rows"]}
    for e, row in got.items():
        lo, hi = d.dgauss_delta_interval(1.5869, e)
        assert row["delta"] == hi
        assert row["bound"] == ("exact" if hi - lo <= 1e-9 * hi else "upper")
    assert got[5.0]["bound"] == "exact" and got[12.0]["bound"] == "upper"


def test_a_discrete_gaussian_sigma_at_the_floor_is_an_upper_bound_with_a_warning():
    """ε = 1000, δ = 0.9 is met at σ = 0.05, dpcalc's smallest discrete-Gaussian σ, and by smaller σ too (about
    0.0224): the row says 'upper' (sound, not the smallest) and a warning says why (found by helper-64)."""
    r = CliRunner().invoke(cli, ["calibrate", "discrete-gaussian", "--epsilon", "1000,1", "--delta", "0.9", "--json"])
    doc = json.loads(r.stdout)
    by_eps = {row["epsilon"]: row for row in doc["rows"]}
    assert by_eps[1000.0]["sigma"] == 0.05 and by_eps[1000.0]["bound"] == "upper"
    assert by_eps[1.0]["bound"] == "exact"
    assert any("0.05" in w for w in doc["warnings"])
