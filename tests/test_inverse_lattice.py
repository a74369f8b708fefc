"""Inverse searches over large grids of settings (``plan-sgd --target-epsilon`` with grids of σ, q, T, epochs, δ).

A grid that would need more than ``sgd.SETTINGS_DIRECT`` searches is searched on a lattice of its settings and
targets; every other row is bracketed between the nearest lattice points with more and with less privacy loss
(:func:`dpcalc.core.sgd._bracket_settings`). References: each row searched on its own — a lattice row's answer is
its own; a bracketed row's answer is the harder point's, and it must meet the row's own target by the same
(deterministic, monotone) RDP bound, and its checked_next must miss it there; the answers must be those of the
nearest lattice points.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli
from dpcalc.core import sgd


@pytest.fixture
def small_lattice(monkeypatch):
    monkeypatch.setattr(sgd, "SETTINGS_DIRECT", 3)
    monkeypatch.setattr(sgd, "SETTINGS_POINTS", 4)


def _check_rows(sol, own, rows_eps, nxt_eps, target):
    br = sol.status == sgd.BRACKETED
    assert br.any() and (~br).any()
    for i in np.flatnonzero(~br):
        assert sol.value[i] == own[i].value[0] and sol.status[i] == own[i].status[0]
    for i in np.flatnonzero(br):
        assert not sol.found[i]
        assert rows_eps(i, sol.value[i]) <= target[i]  # the answer meets the row's own target
        assert nxt_eps(i, sol.next_value[i]) > target[i]  # and checked_next misses it there


def test_steps_over_a_sigma_grid(small_lattice):
    q, d = 0.01, 1e-5
    s = np.linspace(0.8, 2.0, 9)
    target = np.full(s.size, 2.0)
    sol = sgd.solve_steps(q, s, d, target, "rdp")
    own = [sgd.solve_steps(q, s[i], d, target[i], "rdp") for i in range(s.size)]

    def eps(i, t):
        return float(sgd.epsilon(q, s[i], int(t), d, "rdp"))

    _check_rows(sol, own, eps, eps, target)
    read = [i for i in range(s.size) if sol.status[i] != sgd.BRACKETED]
    assert len(read) == 4
    for i in np.flatnonzero(sol.status == sgd.BRACKETED):
        h = max(j for j in read if s[j] <= s[i])  # more loss: the nearest smaller σ searched
        e = min(j for j in read if s[j] >= s[i])
        assert sol.value[i] == own[h].value[0] <= own[i].value[0]
        assert sol.next_value[i] == own[e].next_value[0] >= own[i].next_value[0]


def test_sigma_over_a_steps_and_delta_grid(small_lattice):
    q = 0.02
    t = np.array([100, 200, 400, 800, 100, 200, 400, 800], dtype=float)
    d = np.array([1e-5] * 4 + [1e-6] * 4)
    target = np.full(t.size, 3.0)
    sol = sgd.solve_sigma(q, t, d, target, "rdp")
    own = [sgd.solve_sigma(q, t[i], d[i], target[i], "rdp") for i in range(t.size)]

    def eps(i, sigma):
        return float(sgd.epsilon(q, sigma, int(t[i]), d[i], "rdp"))

    _check_rows(sol, own, eps, eps, target)
    for i in np.flatnonzero(sol.status == sgd.BRACKETED):
        assert sol.value[i] >= own[i].value[0]  # more noise than the row needs: feasible


def test_batch_size_keeps_each_dataset_size_apart(small_lattice):
    n = np.array([10000.0] * 6 + [50000.0] * 6)
    s = np.tile(np.linspace(0.9, 1.5, 6), 2)
    target = np.full(n.size, 2.0)
    sol = sgd.solve_batch_size(n, 5, s, 1e-6, target, "rdp")
    own = [sgd.solve_batch_size(n[i], 5, s[i], 1e-6, target[i], "rdp") for i in range(n.size)]

    def eps(i, b):
        b = int(b)
        return float(sgd.epsilon(b / n[i], s[i], int(sgd.steps_for_epochs(5, n[i], b)), 1e-6, "rdp"))

    _check_rows(sol, own, eps, eps, target)
    for i in range(n.size):
        assert sol.value[i] <= n[i]


def test_small_grids_are_searched_row_by_row():
    q, d = 0.01, 1e-5
    s = np.array([0.9, 1.1, 1.3])
    sol = sgd.solve_steps(q, s, d, 2.0, "rdp")
    for i in range(s.size):
        assert sol.value[i] == sgd.solve_steps(q, s[i], d, 2.0, "rdp").value[0]
    assert not np.any(sol.status == sgd.BRACKETED)


def test_plan_sgd_says_which_rows_are_bracketed(small_lattice):
    args = "plan-sgd --rate 0.01 --delta 1e-5 --noise-multiplier 0.8:2:9 --target-epsilon 2 --accountant rdp --json"
    r = CliRunner().invoke(cli, args.split())
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    br = [row for row in doc["rows"] if row["search"] == "bracketed"]
    assert br and all(row["found"] is False and row["checked_next"] > row["steps"] for row in br)
    assert any("rows (search: bracketed) lie between the points that are searched" in w for w in doc["warnings"])


def test_rows_left_over_by_the_lattice_are_searched_alone_not_on_a_lattice_again(monkeypatch):
    # Many rows whose harder point meets nothing (none) while the easier one is found: they are searched again,
    # on their own — a lattice of them could leave the same rows over, without end (a RecursionError once).
    monkeypatch.setattr(sgd, "SETTINGS_DIRECT", 32)
    monkeypatch.setattr(sgd, "SETTINGS_POINTS", 32)
    g = np.meshgrid(
        [0.001, 0.004, 0.01, 0.05, 0.2], [0.6, 0.9, 1.3, 3.0], [1e-7, 1e-5], [0.05, 0.3, 1, 3, 8], indexing="ij"
    )
    q, s, d, x = (a.ravel() for a in g)
    sol = sgd.solve_steps(q, s, d, x, "rdp")
    # (Each row checked on its own settings; the core takes them all in one call.)
    met = np.isin(sol.status, [sgd.OPTIMAL, sgd.BRACKETED])
    none = sol.status == sgd.NONE
    assert met.any() and none.any()
    a, b = sol.value[met].astype(np.int64), sol.next_value[met].astype(np.int64)
    assert np.all(sgd.epsilon(q[met], s[met], a, d[met], "rdp") <= x[met])
    assert np.all(sgd.epsilon(q[met], s[met], b, d[met], "rdp") > x[met])
    assert np.all(sgd.epsilon(q[none], s[none], np.ones(int(none.sum()), np.int64), d[none], "rdp") > x[none])


def test_a_row_nothing_meets_reports_its_own_epsilon_next(monkeypatch):
    # The easier point meeting nothing says nothing meets the row either, but its ε at one step is below the
    # row's: such a row is searched on its own, and its epsilon_next is its own.
    monkeypatch.setattr(sgd, "SETTINGS_DIRECT", 8)
    monkeypatch.setattr(sgd, "SETTINGS_POINTS", 8)
    g = np.meshgrid([0.001, 0.03, 0.2], [0.9, 3.0], [0.05, 0.3], indexing="ij")
    q, s, x = (a.ravel() for a in g)
    sol = sgd.solve_steps(q, s, 1e-5, x, "rdp")
    none = np.flatnonzero(sol.status == sgd.NONE)
    assert none.size
    for i in none:
        assert sol.next_epsilon[i] == sgd.solve_steps(q[i], s[i], 1e-5, x[i], "rdp").next_epsilon[0]


def test_parameters_that_move_together_are_searched_row_by_row(monkeypatch):
    # A dataset-size grid: q falls as T grows. A product lattice would be mostly corners no row is near (the
    # harder point of a middle row far harder than it): searched row by row instead.
    monkeypatch.setattr(sgd, "SETTINGS_DIRECT", 8)
    monkeypatch.setattr(sgd, "SETTINGS_POINTS", 8)
    q = np.repeat([0.1, 0.01, 0.001], 4)
    t = np.repeat([10.0, 100.0, 1000.0], 4)
    x = np.tile([0.5, 1.0, 2.0, 4.0], 3)
    sol = sgd.solve_sigma(q, t, 1e-5, x, "rdp")
    assert not np.any(sol.status == sgd.BRACKETED)
    for i in range(q.size):
        assert sol.value[i] == sgd.solve_sigma(q[i], t[i], 1e-5, x[i], "rdp").value[0]
