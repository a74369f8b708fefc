"""A δ grid is one reading: composition commands answer every δ of a grid from one PLD reading (an ε(δ)
curve shares its compositions) and every other method from one vectorised call, with the same digits as
δ by δ for the closed forms and RDP, and PLD intervals that are sound wherever either is."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc import accounting as A
from dpcalc.accounting import flatten
from dpcalc.cli import cli
from dpcalc.core import pld, sgd
from dpcalc.model import (
    DP,
    BoundedRange,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    RandomizedResponse,
    Subsampled,
)

DELTAS = [1e-12, 3e-10, 1e-8, 2e-6, 1e-4, 5e-3]

#: One release kind of each family the composition commands grid over δ (flattened as the commands do).
PARTS = {
    "subsampled+laplace": flatten(Subsampled(Gaussian(1.1), 0.02, "poisson", "add-remove"), 300)
    + flatten(Laplace(2.0), 3),
    "discrete-gaussian": flatten(DiscreteGaussian(3.0), 40),
    "discrete-laplace": flatten(DiscreteLaplace(3.0), 40),
    "randomized-response": flatten(RandomizedResponse(0.5, 2), 30),
    "bounded-range": flatten(BoundedRange(0.3), 50),
    "discrete-gaussian once": flatten(DiscreteGaussian(3.0), 1),
}


def key(t):
    return (t.method, t.bound)


@pytest.mark.parametrize("name", sorted(PARTS))
def test_a_grid_of_deltas_matches_delta_by_delta(name):
    parts = PARTS[name]
    many = A.compose_parts_many(parts, DELTAS, with_pld=True)
    assert len(many) == len(DELTAS)
    for d, got in zip(DELTAS, many):
        alone = {key(t): t for t in A.compose_parts(parts, d, with_pld=True)}
        assert {key(t) for t in got} == set(alone)
        for t in got:
            ref = alone[key(t)]
            assert t.delta == ref.delta  # (basic: the δ it spends, 0 for pure parts)
            if t.method != "pld":
                # Closed forms, zCDP, RDP and basic: one vectorised call, the same digits as δ by δ (the
                # bisections stop per element, on the safe side).
                assert t.epsilon == pytest.approx(ref.epsilon, rel=1e-11, abs=0), (name, d, t.method)
                assert t.epsilon >= ref.epsilon * (1 - 1e-11)
                continue
            # PLD: both certified intervals hold the true ε, so they meet, and each is within its width (a
            # dominating pair's reading — bounded range — has its upper end alone).
            assert (t.epsilon_lower is None) == (ref.epsilon_lower is None)
            low, ref_low = (x if x is not None else -np.inf for x in (t.epsilon_lower, ref.epsilon_lower))
            assert low <= ref.epsilon and ref_low <= t.epsilon, (name, d)
            assert t.met and ref.met


def count_readings(monkeypatch) -> list[int]:
    """Record the number of δ of each reading of the PLD engine (the list returned fills as it runs)."""
    calls: list[int] = []
    real = pld.epsilon

    def counted(mechs, delta, **kw):
        calls.append(np.atleast_1d(delta).size)
        return real(mechs, delta, **kw)

    monkeypatch.setattr(pld, "epsilon", counted)
    return calls


def test_a_delta_grid_takes_one_reading_of_the_engine(monkeypatch):
    calls = count_readings(monkeypatch)
    parts = PARTS["subsampled+laplace"]
    dense = list(np.logspace(-9.0, -6.5, 20))
    got = A.pld_totals(parts, dense)
    assert calls == [20]
    assert all(t is not None and t.method == "pld" for t in got)
    # A grid over many decades: one reading per run of δ within DELTA_SPAN of its smallest (a δ far below the
    # others would hold their grids back), and the answers come back in the caller's order.
    calls.clear()
    shuffled = DELTAS[::-1]
    back = A.pld_totals(parts, shuffled)
    assert sorted(calls) == [2, 2, 2] and sum(calls) == len(DELTAS)
    assert [t.delta for t in back] == shuffled
    ups = [t.epsilon for t in back]
    assert ups == sorted(ups)  # ε falls as δ grows: the largest δ, given first, has the smallest ε


def test_a_row_that_misses_its_width_in_a_run_is_read_again_alone():
    # A fake engine: read together, the row at 1e-6 misses its width ([1.0, 1.1]); alone it reads [1.05, 1.2].
    # The row keeps the larger lower end and the smaller upper end (both certified), and meets the width then.
    d = np.array([1e-6, 2e-6, 5e-6])
    reads = []

    def read(sel):
        reads.append(list(sel))
        if len(sel) > 1:
            return np.array([1.0, 0.9, 0.8])[sel], np.array([1.1, 0.9005, 0.8005])[sel], np.array([False, True, True])
        return np.array([1.05]), np.array([1.0504]), np.array([False])

    into = (np.full(3, np.nan), np.full(3, np.nan), np.zeros(3, bool))
    sgd.read_in_runs(read, np.arange(3), d, into, 1e-3, 1e-4)
    assert reads == [[0, 1, 2], [0]]
    lo, up, met = into
    assert list(lo) == [1.05, 0.9, 0.8] and list(up) == [1.0504, 0.9005, 0.8005]
    assert list(met) == [True, True, True]  # [1.05, 1.0504] is within 0.1 % of ε


def test_a_reading_that_fails_for_small_deltas_still_answers_the_others(monkeypatch):
    real = pld.epsilon

    def fussy(mechs, delta, **kw):
        if np.min(delta) < 1e-7:
            raise MemoryError("no grid fits")
        return real(mechs, delta, **kw)

    monkeypatch.setattr(pld, "epsilon", fussy)
    got = A.pld_totals(PARTS["subsampled+laplace"], DELTAS)
    assert [t is None for t in got] == [d < 1e-7 for d in DELTAS]
    for t, d in zip(got, DELTAS):
        if t is not None:
            assert t.delta == d and t.epsilon_lower <= t.epsilon


def test_deltas_below_the_engines_range_are_left_to_the_other_methods():
    small = pld.MIN_DELTA / 10
    got = A.pld_totals(PARTS["subsampled+laplace"], [small, 1e-6])
    assert got[0] is None and got[1] is not None
    totals = A.compose_parts_many(PARTS["subsampled+laplace"], [small, 1e-6], with_pld=True)
    assert "pld" not in {t.method for t in totals[0]} and "rdp" in {t.method for t in totals[0]}
    assert "pld" in {t.method for t in totals[1]}


def test_a_closed_form_out_of_range_at_one_delta_answers_the_others():
    # The discrete Gaussian's exact ε(δ) needs δ >= 1e-30: one call for both would refuse both.
    p = PARTS["discrete-gaussian once"][0]
    got = A._discrete_closed_forms(p, [1e-40, 1e-6])
    assert got[0] is None
    assert got[1] is not None and got[1].epsilon == A._discrete_closed_form(p, 1e-6).epsilon


def rows(args):
    r = CliRunner().invoke(cli, args.split())
    assert r.exit_code == 0, r.stderr
    return list(csv.DictReader(io.StringIO(r.stdout)))


@pytest.mark.parametrize(
    "command",
    [
        "compose mixed --subsampled-gaussian 0.02,1.1,300 --laplace 2,1,3",
        "compose discrete-laplace --scale 3 --times 40",
        "compose bounded-range --epsilon 0.3 --times 50",
    ],
)
def test_the_commands_read_a_delta_grid_at_once(command, monkeypatch):
    calls = count_readings(monkeypatch)
    grid = rows(f"{command} --delta 1e-7:1e-5:7:log --format csv")
    assert calls and max(calls) == 7 and len(calls) <= 2  # (bounded range: its pair, plus one lower end)
    monkeypatch.undo()
    pld_rows = [r for r in grid if r["method"] == "pld"]
    assert len(pld_rows) == 7
    for r in pld_rows:
        one = [x for x in rows(f"{command} --delta {r['delta']} --format csv") if x["method"] == "pld"][0]
        # Sound both ways: each interval holds the true ε, so they meet (bounded range: upper ends alone).
        assert float(r.get("epsilon_lower") or "-inf") <= float(one["epsilon"])
        assert float(one.get("epsilon_lower") or "-inf") <= float(r["epsilon"])
    others = [(r["delta"], r["method"], r["epsilon"]) for r in grid if r["method"] != "pld"]
    for d, method, eps in others[:4]:
        one = [x for x in rows(f"{command} --delta {d} --format csv") if x["method"] == method][0]
        assert float(eps) == pytest.approx(float(one["epsilon"]), rel=1e-11)


def test_a_mesh_over_several_inputs_matches_each_point_alone():
    # Mesh points are grouped by every input but δ: a grouping that ignored one (the count, the scale) would
    # answer one point with another's totals.
    grid = rows("compose discrete-laplace --scale 2,3 --times 1,40 --delta 1e-6,1e-5 --format csv")
    for r in grid:
        one = rows(
            f"compose discrete-laplace --scale {r['scale']} --times {r['times']} --delta {r['delta']} --format csv"
        )
        mine = [x for x in one if x["method"] == r["method"]]
        assert len(mine) == 1, r
        if r["method"] == "pld":
            assert float(r["epsilon_lower"]) <= float(mine[0]["epsilon"])
            assert float(mine[0]["epsilon_lower"]) <= float(r["epsilon"])
        else:
            assert float(r["epsilon"]) == pytest.approx(float(mine[0]["epsilon"]), rel=1e-11)


def test_duplicate_and_unsorted_deltas_keep_their_rows():
    grid = rows(
        "compose mixed --subsampled-gaussian 0.02,1.1,300 --laplace 2,1,3 --delta 1e-3,1e-9,1e-6,1e-9 --format csv"
    )
    pld_rows = [r for r in grid if r["method"] == "pld"]
    assert [float(r["delta"]) for r in pld_rows] == [1e-3, 1e-9, 1e-6, 1e-9]
    assert pld_rows[1]["epsilon"] == pld_rows[3]["epsilon"]
    assert pld_rows[1]["epsilon_lower"] == pld_rows[3]["epsilon_lower"]


#: The routes of pld_totals other than the engine reading of several parts.
ROUTES = {
    "one step": flatten(Subsampled(Gaussian(1.1), 0.02, "poisson", "add-remove"), 1),
    "every record": flatten(Subsampled(Gaussian(3.0), 1.0, "poisson", "add-remove"), 50),
    "without replacement": flatten(Subsampled(Gaussian(1.1), 0.02, "without-replacement", "substitution"), 30),
    "capped batches": flatten(
        Subsampled(Gaussian(1.1), 0.02, "truncated-poisson", "add-remove", dataset_size=5000, max_batch_size=120), 30
    ),
    "subsampled (ε, δ) without replacement": flatten(
        Subsampled(DP(0.5, 1e-7), 0.05, "without-replacement", "substitution"), 20
    ),
}


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_every_route_reads_a_grid_as_it_reads_one_delta(name):
    parts = ROUTES[name]
    deltas = [1e-8, 1e-7, 3e-6]
    grid = A.pld_totals(parts, deltas)
    for d, t in zip(deltas, grid):
        one = A.pld_total(parts, d)
        assert (t is None) == (one is None), (name, d)
        if t is None:
            continue
        assert (t.method, t.bound, t.delta) == (one.method, one.bound, one.delta)
        assert (t.epsilon_lower is None) == (one.epsilon_lower is None), (name, d)
        low = -np.inf if t.epsilon_lower is None else t.epsilon_lower
        one_low = -np.inf if one.epsilon_lower is None else one.epsilon_lower
        assert low <= one.epsilon and one_low <= t.epsilon, (name, d)
