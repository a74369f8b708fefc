"""Attack-risk readings of large DP-SGD grids on a lattice (``plan-sgd --to tradeoff|attack``).

A grid of more sampled runs than :data:`dpcalc.risk.GRID_RUNS` is read at a lattice of them; the other
rows are bracketed between the nearest lattice runs with more and with less privacy loss. References:
each run read on its own (:func:`dpcalc.risk.rows`) — a lattice run's rows must be exactly its own, and
a bracketed row's interval must contain its own run's certified interval (a lattice run with more loss
has a higher TPR and a lower β by far more than the readings' width here: the lattice is coarse) —
and the command line's JSON and warning.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc import risk
from dpcalc.cli import cli


def _grid(qs, sigmas, steps):
    g = np.meshgrid(np.asarray(qs, float), np.asarray(sigmas, float), np.asarray(steps), indexing="ij")
    q, s, t = (a.ravel() for a in g)
    bases = [{"rate": float(a), "noise_multiplier": float(b), "steps": int(c)} for a, b, c in zip(q, s, t)]
    return q, s, t.astype(np.int64), bases


def _own(q, s, t, sampling, target, points):
    _, rows, _, _ = risk.rows([risk.sgd_mechanisms(float(q), float(s), int(t), sampling)], target, points)
    return rows


@pytest.mark.parametrize("target", ["attack", "tradeoff"])
def test_lattice_rows_are_their_own_and_brackets_contain_the_own_reading(target):
    points = [0.01, 0.1]
    q, s, t, bases = _grid([0.05], np.linspace(1.0, 2.0, 9), [20])
    cols, rows, _, warns = risk.sgd_rows(q, s, t, "poisson", target, points, bases, budget=4)
    assert len(rows) == q.size * len(points)
    methods = {r["method"] for r in rows}
    assert methods == {f"pld-{target}", f"pld-{target}-bracket"}
    n_br = sum(r["method"].endswith("bracket") for r in rows) // len(points)
    assert n_br == q.size - 4 and warns
    assert warns[-1].startswith(f"{n_br} settings of the grid ({n_br} distinct runs; method pld-{target}-bracket)")
    read = sorted({r["noise_multiplier"] for r in rows if r["method"] == f"pld-{target}"})
    for i in range(q.size):
        own = _own(q[i], s[i], t[i], "poisson", target, points)
        for k, row in enumerate(rows[i * len(points) : (i + 1) * len(points)]):
            assert row["noise_multiplier"] == s[i] and row[("fpr" if target == "attack" else "alpha")] == points[k]
            if row["method"] == f"pld-{target}":
                assert row == {**bases[i], **own[k]}
                continue
            o = own[k]
            # Each end is the nearest lattice run's on its side: more loss is the next smaller σ read.
            more = _own(q[i], max(x for x in read if x < s[i]), t[i], "poisson", target, points)[k]
            less = _own(q[i], min(x for x in read if x > s[i]), t[i], "poisson", target, points)[k]
            side, other = ("tpr", "tpr_lower") if target == "attack" else ("beta", "beta_upper")
            assert row[side] == more[side] and row[other] == less[other]
            if target == "attack":
                # Sound side above the run's own upper end, other end below its own lower end; and apart.
                assert row["tpr"] >= o["tpr"] and row["tpr_lower"] <= o["tpr_lower"]
                assert row["advantage"] >= o["advantage"] and row["advantage_lower"] <= o["advantage_lower"]
                assert row["tpr"] - row["tpr_lower"] > o["tpr"] - o["tpr_lower"]
                assert row["bound"] == "upper"
            else:
                assert row["beta"] <= o["beta"] and row["beta_upper"] >= o["beta_upper"]
                assert row["beta_upper"] - row["beta"] > o["beta_upper"] - o["beta"]
                assert row["bound"] == "lower"


def test_small_grids_are_read_run_by_run_as_before():
    points = [0.001, 0.01]
    q, s, t, bases = _grid([0.02, 0.05], [1.0, 1.5], [10])
    _, rows, _, warns = risk.sgd_rows(q, s, t, "poisson", "attack", points, bases, budget=4)
    want = [{**bases[i], **r} for i in range(q.size) for r in _own(q[i], s[i], t[i], "poisson", "attack", points)]
    assert rows == want and not any("lattice" in w for w in warns)


def test_a_two_parameter_grid_brackets_along_both():
    points = [0.05]
    q, s, t, bases = _grid([0.02, 0.03, 0.05], [1.2, 1.6], [5, 10, 20])
    _, rows, _, _ = risk.sgd_rows(q, s, t, "poisson", "attack", points, bases, budget=8)
    on = [r for r in rows if r["method"] == "pld-attack"]
    assert 0 < len(on) <= 8
    for i, row in enumerate(rows):
        if row["method"] != "pld-attack-bracket":
            continue
        o = _own(q[i], s[i], t[i], "poisson", "attack", points)[0]
        assert row["tpr"] >= o["tpr"] and row["tpr_lower"] <= o["tpr_lower"]


def test_every_record_runs_stay_exact_and_without_replacement_keeps_its_sound_side_only():
    points = [0.01]
    q = np.array([1.0, 0.05, 0.05, 0.05, 0.05, 0.05])
    s = np.array([2.0, 1.0, 1.25, 1.5, 1.75, 2.0])
    t = np.array([10, 20, 20, 20, 20, 20], dtype=np.int64)
    bases = [{"i": i} for i in range(q.size)]
    _, rows, _, _ = risk.sgd_rows(q, s, t, "without-replacement", "attack", points, bases, budget=2)
    assert rows[0]["method"] == "gdp-attack" and rows[0]["bound"] == "exact"
    br = [r for r in rows if r["method"] == "pld-attack-bracket"]
    assert len(br) == 3
    for r in rows[1:]:
        assert r["tpr_lower"] is None and r["advantage_lower"] is None  # a dominating construction: one side
        o = _own(q[r["i"]], s[r["i"]], t[r["i"]], "without-replacement", "attack", points)[0]
        assert r["tpr"] >= o["tpr"] and r["advantage"] >= o["advantage"]


def test_plan_sgd_reads_a_large_grid_on_the_lattice(monkeypatch):
    monkeypatch.setattr(risk, "GRID_RUNS", 3)
    args = "--rate 0.05 --steps 20 --noise-multiplier 1:2:7 --to attack --fpr 0.01 --json"
    r = CliRunner().invoke(cli, ["plan-sgd", *args.split()])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [row["method"] for row in doc["rows"]].count("pld-attack-bracket") == 4
    assert any("distinct runs; method pld-attack-bracket) lie between the 3 runs" in w for w in doc["warnings"])
    assert len(doc["objects"]) == 7  # every run is still piped on as its own composition
    table = CliRunner().invoke(cli, ["plan-sgd", *args.replace(" --json", "").split()])
    assert table.exit_code == 0 and "pld-attack-bracket" in table.stdout and "lattice" in table.stderr


def test_a_lattice_run_that_does_not_fit_leaves_its_rows_to_be_read_alone(monkeypatch):
    # Rows where q and T grow together: the lattice's corners are runs no row asked for.
    points = [0.01]
    q = np.array([0.02, 0.03, 0.05])
    s = np.full(3, 1.5)
    t = np.array([5, 10, 20], dtype=np.int64)
    bases = [{"i": i} for i in range(3)]
    real = risk._run_rows
    failed = []

    def run(rate, sigma, steps, *a):
        if (rate, steps) in ((0.05, 5), (0.05, 20)) and (rate, steps) not in failed:
            failed.append((rate, steps))  # the corner no row asked for, and the first read of the last row's run
            raise risk.RunTooLarge(rate, sigma, steps)
        return real(rate, sigma, steps, *a)

    monkeypatch.setattr(risk, "_run_rows", run)
    _, rows, _, warns = risk.sgd_rows(q, s, t, "poisson", "attack", points, bases, budget=2)
    assert sorted(failed) == [(0.05, 5), (0.05, 20)]
    # The middle row's sound side would come from (0.05, 20), which did not fit on the lattice: read alone,
    # as is the last row (its lattice run did not fit, its own read does).
    assert [r["method"] for r in rows] == ["pld-attack"] * 3 and not any("lattice" in w for w in warns)
    for i, row in enumerate(rows):
        assert row == {**bases[i], **_own(q[i], s[i], t[i], "poisson", "attack", points)[0]}


def _solve_rows(args):
    r = CliRunner().invoke(cli, ["plan-sgd", *args.split(), "--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    return doc["rows"], doc["warnings"]


def _alone_and_on_a_lattice(monkeypatch, args: str, searches: int = 3):
    """The rows of a risk-target grid searched row by row, then on a lattice of ``searches`` points; its
    warnings, and the indices of the bracketed rows."""
    from dpcalc.cli import plan_sgd

    own, _ = _solve_rows(args)
    monkeypatch.setattr(plan_sgd, "RISK_SEARCHES", searches)
    rows, warns = _solve_rows(args)
    return own, rows, warns, [i for i, r in enumerate(rows) if r["search"] == "bracketed"]


def test_risk_targets_on_a_lattice_meet_each_rows_target(monkeypatch):
    own, rows, warns, br = _alone_and_on_a_lattice(monkeypatch, "--rate 0.05 --steps 20 --target-advantage 0.1:0.5:5")
    assert len(br) == 2 and any(w.startswith("2 rows (search: bracketed) lie between") for w in warns)
    searched = [i for i in range(len(rows)) if i not in br]
    for i in searched:
        assert rows[i] == own[i]
    for i in br:
        row, target = rows[i], rows[i]["target_advantage"]
        h = max(j for j in searched if rows[j]["target_advantage"] <= target)  # harder: the smaller target
        e = min(j for j in searched if rows[j]["target_advantage"] >= target)
        assert row["noise_multiplier"] == rows[h]["noise_multiplier"] >= own[i]["noise_multiplier"]
        assert row["achieved"] == rows[h]["achieved"] and row["found"] is False
        assert row["checked_next"] == rows[e]["checked_next"] < own[i]["noise_multiplier"]
        # The same run (only the target differs): the bound at the answer meets the row's target, and the
        # bound at checked_next misses it.
        assert risk.attack_bounds(0.05, row["noise_multiplier"], 20)[1][0] <= target
        assert risk.attack_bounds(0.05, row["checked_next"], 20)[1][0] > target


def test_risk_steps_over_a_sigma_grid_on_a_lattice(monkeypatch):
    args = "--rate 0.05 --noise-multiplier 1.5:2.5:5 --target-tpr 0.1 --at-fpr 0.01"
    own, rows, _, br = _alone_and_on_a_lattice(monkeypatch, args)
    assert len(br) == 2
    for i in range(len(rows)):
        if i not in br:
            assert rows[i] == own[i]
            continue
        row = rows[i]
        assert row["steps"] <= own[i]["steps"] < row["checked_next"]
        assert risk.attack_bounds(0.05, row["noise_multiplier"], row["steps"], 0.01)[1][0] <= 0.1


def test_a_run_asked_for_twice_is_read_once(monkeypatch):
    calls = []
    real = risk._run_rows

    def run(*a):
        calls.append(a[:3])
        return real(*a)

    monkeypatch.setattr(risk, "_run_rows", run)
    q, s, t = np.full(4, 0.05), np.array([1.5, 1.5, 2.0, 1.5]), np.full(4, 10, dtype=np.int64)
    _, rows, _, _ = risk.sgd_rows(q, s, t, "poisson", "attack", [0.01], [{"i": i} for i in range(4)])
    assert sorted(calls) == [(0.05, 1.5, 10), (0.05, 2.0, 10)]
    assert [r["i"] for r in rows] == [0, 1, 2, 3] and rows[0]["tpr"] == rows[1]["tpr"] == rows[3]["tpr"]
