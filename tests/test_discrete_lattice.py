"""Grids of discrete compositions too large to account setting by setting: a lattice of settings, the rest
bracketed (``compose discrete-laplace|randomized-response|bounded-range|discrete-gaussian``)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli
from dpcalc.cli import compose as C

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "dpcalc/schema/result-v1.schema.json").read_text())


def doc(args):
    r = CliRunner().invoke(cli, ["compose", *args.split(), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    jsonschema.validate(out, SCHEMA)
    return out


def ends(rows, key):
    """Per setting and δ: the smallest sound upper end of any method and the largest certified lower end."""
    out: dict = {}
    for r in rows:
        lo, up = out.get((r[key], r["times"], r["delta"]), (0.0, np.inf))
        if r["bound"] in ("exact", "upper"):
            up = min(up, r["epsilon"])
        got = r["epsilon"] if r["bound"] == "exact" else r["epsilon_lower"]
        out[(r[key], r["times"], r["delta"])] = (max(lo, got if got is not None else 0.0), up)
    return out


@pytest.fixture
def small_lattice(monkeypatch):
    """A lattice from 12 settings on, of at most 6, axes of at most 3 values kept whole (the same route as 256,
    128 and 16, at test cost)."""
    monkeypatch.setattr(C, "DISCRETE_DIRECT", 12)
    monkeypatch.setattr(C, "DISCRETE_LATTICE", 6)
    monkeypatch.setattr(C, "DISCRETE_SHORT_AXIS", 3)


@pytest.mark.parametrize(
    "command, key, grid",
    [
        ("discrete-laplace --scale 2:9:14 --sensitivity 2", "scale", "--times 20"),
        ("randomized-response --epsilon 0.2:1.5:14 --k 3", "epsilon_each", "--times 20"),
        ("bounded-range --epsilon 0.2:1.5:14", "epsilon_each", "--times 20"),
        ("randomized-response --epsilon 0.5", "epsilon_each", "--times 1:27:14"),
        ("discrete-gaussian --sigma 4", "sigma", "--times 1:27:14"),
    ],
)
def test_a_bracketed_row_holds_the_rows_own_interval(small_lattice, command, key, grid):
    """Each bracketed row (method bracket) overlaps the interval of its setting accounted alone (the smallest
    sound upper end and largest certified lower end of its rows) — both contain the true ε; a setting on the
    lattice keeps its own rows; the warning (the JSON's warnings) counts the bracketed rows."""
    out = doc(f"{command} {grid} --delta 1e-6,1e-9")
    rows = out["rows"]
    br = [r for r in rows if r["method"] == C.DISCRETE_BRACKET]
    between = {(r[key], r["times"], r["delta"]) for r in rows if r["method"] == C.DISCRETE_BRACKET}
    own = [r for r in rows if (r[key], r["times"], r["delta"]) not in between]
    assert 0 < len(br) < 28 and own
    assert all(r["bound"] == "upper" for r in br)
    marks: dict = {}
    for r in rows:
        marks.setdefault((r[key], r["times"], r["delta"]), []).append(r["tightest"])
    assert all(sum(v) == 1 for v in marks.values())
    assert any(f"{len(br)} rows (method bracket)" in w for w in out["warnings"])
    C.DISCRETE_DIRECT = 10**9  # (the fixture restores it) each setting alone below
    alone = ends(doc(f"{command} {grid} --delta 1e-6,1e-9")["rows"], key)
    for r in br:
        lo_a, up_a = alone[(r[key], r["times"], r["delta"])]
        assert r["epsilon_lower"] <= up_a and lo_a <= r["epsilon"]
        # Taken at a setting with as much loss or more: not below the row's own upper end by more than the width
        # an interval may have (bounded range has no lower end to overlap: this is its check of direction).
        assert r["epsilon"] >= up_a - max(1e-3 * up_a, 1e-4)
    for r in own:
        if r["tightest"]:
            assert alone[(r[key], r["times"], r["delta"])][1] == r["epsilon"]


def test_a_short_axis_is_kept_whole_and_each_bracket_has_its_basic_row(small_lattice):
    """--times 1,30,1000 beside a long ε₀ axis: the lattice keeps 30 (with only the ends, a row at 30 runs took
    its upper end from 1,000 runs: 3,434 where its own basic kε₀ is 97, found by review); every bracketed setting
    of a pure ε-DP mechanism also has its own basic row, and the tightest mark goes to the smaller."""
    rows = doc("randomized-response --epsilon 0.2:3:14 --times 1,30,1000 --delta 1e-8")["rows"]
    br = [r for r in rows if r["method"] == C.DISCRETE_BRACKET]
    assert br and any(r["times"] == 30 and r["method"] not in (C.DISCRETE_BRACKET, "basic") for r in rows)
    for r in br:
        (basic,) = [
            x
            for x in rows
            if x["method"] == "basic" and (x["epsilon_each"], x["times"]) == (r["epsilon_each"], r["times"])
        ]
        assert basic["epsilon"] == pytest.approx(r["times"] * r["epsilon_each"], rel=1e-12)
        assert r["tightest"] == (r["epsilon"] <= basic["epsilon"]) != basic["tightest"]


def test_small_grids_and_exact_axes_are_accounted_row_by_row(small_lattice):
    """At most DISCRETE_DIRECT settings, or a grid along an input kept exact (the discrete Gaussian's σ, whose
    privacy is not known to be monotone), has no bracketed row."""
    for args in ("discrete-laplace --scale 2:9:12 --times 20", "discrete-gaussian --sigma 2:9:14 --times 20"):
        assert all(r["method"] != C.DISCRETE_BRACKET for r in doc(f"{args} --delta 1e-6")["rows"])


def test_the_discrete_laplace_is_monotone_in_its_scale():
    """The claim behind bracketing along t: DL(t') = DL(t) + Z, Z equal to 0 with probability
    w = (p/p')(1 − p')²/(1 − p)² and to DL(t') otherwise (p = e^{−1/t}), so DL(t') is a post-processing of DL(t)."""

    def dl(t, n):
        p = np.exp(-1 / t)
        return (1 - p) / (1 + p) * p ** np.abs(np.arange(-n, n + 1))

    n = 3000
    for t, t2 in ((0.5, 0.7), (1.0, 3.0), (2.0, 2.01), (0.3, 40.0)):
        p, p2 = np.exp(-1 / t), np.exp(-1 / t2)
        w = (p / p2) * (1 - p2) ** 2 / (1 - p) ** 2
        assert 0 < w < 1
        z = (1 - w) * dl(t2, n)
        z[n] += w
        conv = np.convolve(dl(t, n), z)[n : 3 * n + 1]
        assert np.max(np.abs(conv[n - 100 : n + 100] - dl(t2, n)[n - 100 : n + 100])) < 1e-15
