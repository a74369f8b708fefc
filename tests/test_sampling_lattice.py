"""Large grids of sampling-scheme runs on lattices (``plan-sgd``/``amplify gaussian`` with --sampling shuffle,
balls-in-bins, --max-batch-size or --examples-per-user).

A grid of more runs than ``_schemes.GRID_RUNS`` is read at a lattice of (σ, steps) per family of runs that share
N, B and the cap or K; every other row is bracketed between the nearest lattice runs with more and with less
privacy loss. References: the same grid read run by run (the threshold left at its default): a lattice run's
row is its own, and a bracketed row's ends are exactly the nearest lattice runs' own ends on their sides (so
its interval contains the row's own interval, as monotonicity says), except shuffle's upper end, its own
closed form.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import _schemes, cli


def _rows(args: str) -> tuple[list[dict], list[str]]:
    r = CliRunner().invoke(cli, [*args.split(), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    return doc["rows"], doc["warnings"]


def _key(row):
    sigma = row["noise_multiplier"] if "noise_multiplier" in row else row["sigma"]
    return row.get("dataset_size"), row["delta"], sigma, row["steps"]


@pytest.mark.parametrize(
    "args, budget",
    [
        (
            "plan-sgd --dataset-size 6000 --batch-size 600 --epochs 2 --noise-multiplier 1:2:7 --sampling shuffle "
            "--delta 1e-5",
            3,
        ),
        (
            "plan-sgd --dataset-size 6000 --batch-size 600 --steps 10,20,40 --noise-multiplier 1:2:3 "
            "--max-batch-size 700 --delta 1e-5",
            4,
        ),
        ("amplify gaussian --sigma 1:2:3 --rate 0.1 --steps 10,20,40 --examples-per-user 2 --delta 1e-5", 4),
        (
            "plan-sgd --dataset-size 6000 --batch-size 600 --epochs 1,2,3 --noise-multiplier 1:2:3 "
            "--sampling balls-in-bins --delta 1e-5,1e-7",
            4,
        ),
        (  # two families (dataset sizes), each its own lattice of 4
            "plan-sgd --dataset-size 6000,12000 --batch-size 600 --steps 10,20,40 --noise-multiplier 1:2:3 "
            "--max-batch-size 700 --delta 1e-5",
            4,
        ),
    ],
)
def test_bracketed_rows_take_the_nearest_lattice_runs_ends(monkeypatch, args, budget):
    own, _ = _rows(args)
    monkeypatch.setattr(_schemes, "GRID_RUNS", budget)
    rows, warns = _rows(args)
    assert len(rows) == len(own)
    rows = [r for r in rows if r.get("lower_method") is not None or r["method"] != "rdp"]
    own = [r for r in own if r.get("lower_method") is not None or r["method"] != "rdp"]
    read = {_key(r) for r in rows if r.get("lower_method") != "pld-bracket"}
    n_br = sum(r.get("lower_method") == "pld-bracket" for r in rows)
    assert 0 < n_br < len(rows)
    for fam in {k[:2] for k in read}:  # at most max(4, budget / families) runs a family
        assert len([k for k in read if k[:2] == fam]) <= max(4, budget)
    assert any(w.startswith(f"{n_br} rows are bracketed (lower method pld-bracket)") for w in warns)
    by_key = {_key(r): r for r in own}
    for row, o in zip(rows, own):
        assert _key(row) == _key(o) and row["delta"] == o["delta"]
        if row.get("lower_method") != "pld-bracket":
            assert row == o
            continue
        fam, (s, t) = _key(row)[:2], _key(row)[2:]
        mine = [k[2:] for k in read if k[:2] == fam]
        # The nearest lattice runs: more loss (σ' <= σ, T' >= T), less loss (σ' >= σ, T' <= T).
        more = by_key[(*fam, max(a for a, b in mine if a <= s), min(b for a, b in mine if b >= t))]
        less = by_key[(*fam, min(a for a, b in mine if a >= s), max(b for a, b in mine if b <= t))]
        assert row["epsilon_lower"] == less["epsilon_lower"] <= o["epsilon_lower"]
        if row["method"] == "gdp-no-amplification":  # shuffle: the run's own closed form
            assert row["epsilon"] == o["epsilon"]
        else:
            assert row["method"] == "pld-bracket" and row["epsilon"] == more["epsilon"] >= o["epsilon"]
        if "epsilon_lower_zero_out" in row:
            assert row["epsilon_lower_zero_out"] == less["epsilon_lower_zero_out"] <= o["epsilon_lower_zero_out"]


def test_width_warnings_of_a_scheme_grid_are_one_list():
    grid = "--dataset-size 6000 --batch-size 600 --epochs 2 --noise-multiplier 1:2:7 --sampling shuffle --delta 1e-5"
    rows, warns = _rows(f"plan-sgd {grid}")
    named = [w for w in warns if w.startswith("the certified interval for N=6000")]
    assert len(named) == 5 and any(w.startswith("2 more rows have certified intervals wider than asked") for w in warns)


def test_shuffle_rows_keep_their_own_closed_form_to_the_last_digit(monkeypatch):
    # Rows whose nearest lattice run with more loss has the same σ and epochs: the bracket's upper end is the
    # same closed form, so the row's own (with the same digits) is taken and labelled as such.
    args = (
        "plan-sgd --dataset-size 6000 --batch-size 600 --steps 1:10:10 --noise-multiplier 0.5:5:6 "
        "--sampling shuffle --delta 1e-5,1e-7"
    )
    own, _ = _rows(args)
    monkeypatch.setattr(_schemes, "GRID_RUNS", 8)
    rows, _ = _rows(args)
    assert sum(r["lower_method"] == "pld-bracket" for r in rows) > 0
    for row, o in zip(rows, own):
        assert row["method"] == "gdp-no-amplification" and row["epsilon"] == o["epsilon"]
        assert row["epsilon_lower"] <= o["epsilon_lower"] and row["delta"] == o["delta"]


def test_many_runs_closed_forms_have_each_runs_digits():
    from dpcalc.core.sampling import no_amplification_upper, no_amplification_uppers

    rng = np.random.default_rng(5)
    s, e = rng.uniform(0.3, 30, 400), rng.integers(1, 200, 400)
    d = 10.0 ** -rng.uniform(2, 12, 400)
    want = [no_amplification_upper(float(a), int(b), np.array([c]))[0] for a, b, c in zip(s, e, d)]
    assert np.array_equal(no_amplification_uppers(s, e, d), want)


@pytest.mark.parametrize(
    "args, answer, less",
    [
        # (the grid, the field solved for, whether a larger value of it means less privacy loss)
        (
            "plan-sgd --dataset-size 6000 --batch-size 600 --epochs 2 --sampling shuffle --delta 1e-5 "
            "--target-epsilon 1:5:7",
            "noise_multiplier",
            True,
        ),
        (
            "plan-sgd --dataset-size 6000 --batch-size 600 --noise-multiplier 1:2:5 --max-batch-size 700 "
            "--delta 1e-5 --target-epsilon 3",
            "steps",
            False,
        ),
        (
            "plan-sgd --dataset-size 6000 --epochs 1:3:5 --noise-multiplier 1.5 --max-batch-size 700 --delta 1e-5 "
            "--target-epsilon 3",
            "batch_size",
            False,
        ),
    ],
)
def test_scheme_inverse_grids_on_a_lattice(monkeypatch, args, answer, less):
    from dpcalc.cli import plan_sgd

    own, _ = _rows(args)
    monkeypatch.setattr(plan_sgd, "SCHEME_SEARCHES", 3)
    rows, warns = _rows(args)
    br = [i for i, r in enumerate(rows) if r["search"] == "bracketed"]
    assert br and any(w.startswith(f"{len(br)} rows (search: bracketed) lie between") for w in warns)
    searched = [i for i in range(len(rows)) if i not in br]
    for i in searched:
        assert rows[i] == own[i]
    for i in br:
        row, o = rows[i], own[i]
        # A feasible answer (no better than the row's own), its ε an upper bound meeting the row's target, no
        # lower end; the value checked beyond it further out than the row's own answer.
        assert (row[answer] >= o[answer]) if less else (row[answer] <= o[answer])
        assert row["epsilon"] <= row["target_epsilon"] and row["epsilon_lower"] is None and row["found"] is False
        assert (row["checked_next"] < o[answer]) if less else (row["checked_next"] > o[answer])
        if answer == "batch_size":  # the row's own steps for its epochs at that batch size
            assert row["steps"] == int(np.ceil(row["epochs"] * 6000 / row["batch_size"]))
        h = [j for j in searched if rows[j][answer] == row[answer]]
        assert h and row["epsilon"] == rows[h[0]]["epsilon"]
