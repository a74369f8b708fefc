"""k runs of one discrete Gaussian by the exact law of their sum (dpcalc.core.dgauss_fold), against mpmath."""

from __future__ import annotations

import json

import mpmath as mp
import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli
from dpcalc.core import dgauss_fold as F


def exact_epsilon(sigma, sens, times, delta, dps=50):
    """ε(δ) of times runs of N_Z(0, σ²) vs N_Z(Δ, σ²), in mpmath: the law of the sum by convolution (masses
    below 10^-(dps+40) dropped), δ(ε) = Σ P[S = s](1 − e^{ε − L(s)})₊, and ε bisected to 2^-120 of 5000."""
    mp.mp.dps = dps
    s = mp.mpf(sigma)
    n = int(40 * sigma) + 8
    w = {x: mp.e ** (-(mp.mpf(x) ** 2) / (2 * s * s)) for x in range(-n, n + 1)}
    z = sum(w.values())
    p = {x: v / z for x, v in w.items()}
    law = {0: mp.mpf(1)}
    for _ in range(times):
        nxt: dict = {}
        for a, pa in law.items():
            for x, px in p.items():
                nxt[a + x] = nxt.get(a + x, 0) + pa * px
        law = {k: v for k, v in nxt.items() if v > mp.mpf(10) ** -(dps + 40)}

    def delta_at(eps):
        total = mp.mpf(0)
        for v, pv in law.items():
            loss = mp.mpf(sens) * (times * sens - 2 * v) / (2 * s * s)
            if loss > eps:
                total += pv * (1 - mp.e ** (eps - loss))
        return total

    if delta_at(0) <= delta:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mp.mpf(5000)
    for _ in range(120):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta_at(mid) > delta else (lo, mid)
    return lo


@pytest.mark.parametrize(
    "sigma, sens, times, deltas",
    [
        (0.1205, 1, 10, [1e-6, 1e-12]),  # one atom of mass ~1, the others 34 loss units apart (PLD: 10 % wide)
        (0.05, 1, 2, [1e-6]),  # below the PLD engine's range of σ
        (0.13, 2, 3, [1e-9, 0.3]),
        (0.3, 1, 10, [1e-6]),
        (1.0, 1, 5, [1e-5, 0.5]),
        (2.5, 3, 4, [1e-3]),
        (0.7, 1, 20, [1e-12, 1e-30]),
    ],
)
def test_the_sum_brackets_the_exact_epsilon_to_round_off(sigma, sens, times, deltas):
    lo, up = F.dgauss_fold_epsilon(sigma, sens, times, deltas)
    for a, b, d in zip(lo, up, deltas):
        ex = exact_epsilon(sigma, sens, times, d)
        assert mp.mpf(float(a)) <= ex <= mp.mpf(float(b))
        assert b - a <= 1e-11 * max(b, 1e-300)


def test_large_folds_give_no_answer_and_small_delta_grids_match_one_delta():
    """Beyond FOLD_SUPPORT integers (a large σ composed many times) the fold declines (None: the PLD engine answers);
    a δ grid gives each δ the digits it has alone."""
    assert F.dgauss_fold_epsilon(50.0, 1, 200, [1e-6]) is None
    grid = F.dgauss_fold_epsilon(0.9, 2, 7, [1e-3, 1e-9, 1e-3])
    for j, d in enumerate([1e-3, 1e-9, 1e-3]):
        alone = F.dgauss_fold_epsilon(0.9, 2, 7, [d])
        assert (grid[0][j], grid[1][j]) == (alone[0][0], alone[1][0])


def test_each_delta_is_answered_on_its_own_and_large_sigma_declines_before_its_table(monkeypatch):
    """A δ below 1e-30 (or below twice the mass left out) gets no answer (NaN) without taking the others' away;
    a σ whose first convolution would exceed FOLD_CELLS declines before its table is built (σ = 5e4: a table of
    about 2.7 M long doubles, 5 s and 0.8 GB found by review)."""
    lo, up = F.dgauss_fold_epsilon(0.3, 2, 7, [1e-31, 1e-6])
    assert np.isnan(lo[0]) and np.isnan(up[0]) and lo[1] <= up[1] < 1e9
    alone = F.dgauss_fold_epsilon(0.3, 2, 7, [1e-6])
    assert (lo[1], up[1]) == (alone[0][0], alone[1][0])
    from dpcalc.core import discrete

    def no_table(sigma):
        raise AssertionError("the table was built")

    monkeypatch.setattr(discrete, "dgauss_table", no_table)
    assert F.dgauss_fold_epsilon(5e4, 1, 5, [1e-6]) is None


def test_compose_marks_the_sum_where_the_pld_interval_is_wide():
    """compose discrete-gaussian at σ = 0.1205, 10 runs (where the PLD row is [344.35, 378.59]: its grids cannot
    separate atoms 34 loss units apart at δ = 1e-6): the discrete-gaussian-sum row is the tightest, round-off
    wide around the exact 344.34668724572…. Piped as an object, the same row."""
    # (--accountant rdp: the PLD engine's own reading of this case takes about 10 s; the sum is read either way.)
    args = ["compose", "discrete-gaussian", "--sigma", "0.1205", "--times", "10", "--delta", "1e-6", "--json"]
    args += ["--accountant", "rdp"]
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    (row,) = [x for x in doc["rows"] if x["tightest"]]
    assert row["method"] == "discrete-gaussian-sum" and row["bound"] == "upper"
    ex = exact_epsilon(0.1205, 1, 10, 1e-6)
    assert mp.mpf(row["epsilon_lower"]) <= ex <= mp.mpf(row["epsilon"]) and row["epsilon_width"] < 1e-9
    piped = CliRunner().invoke(
        cli, ["compose", "--delta", "1e-6", "--accountant", "rdp", "--json"], input=json.dumps(doc["objects"][0])
    )
    assert piped.exit_code == 0, piped.output
    (prow,) = [x for x in json.loads(piped.stdout)["rows"] if x["tightest"]]
    assert (prow["method"], prow["epsilon"], prow["epsilon_lower"]) == (
        row["method"],
        row["epsilon"],
        row["epsilon_lower"],
    )
    assert np.isfinite(prow["epsilon"])


def test_the_pld_engine_runs_only_for_the_deltas_the_sum_leaves(monkeypatch):
    """By default the PLD engine is not run for a δ the law of the sum answers within the width asked (σ = 0.1205,
    10 runs: its reading takes about 10 s and 0.9 GB for a row 10 % wide); a δ the sum cannot answer (below
    1e-30) still goes to it, a σ too large for the sum gets its PLD row, and --accountant all shows the PLD row
    beside the sum's."""
    from dpcalc import accounting

    asked: list = []
    real = accounting.pld_totals

    def spy(parts, deltas, width=None):
        asked.append(list(deltas))
        return real(parts, deltas, width)

    monkeypatch.setattr(accounting, "pld_totals", spy)

    def methods(*extra):
        args = ["compose", "discrete-gaussian", "--json", *extra]
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 0, r.output
        return [x["method"] for x in json.loads(r.stdout)["rows"]]

    got = methods("--sigma", "0.1205", "--times", "10", "--delta", "1e-6,1e-3,1e-40")
    assert asked == [[1e-40]] and "pld" not in got and got.count("discrete-gaussian-sum") == 2
    asked.clear()
    got = methods("--sigma", "3", "--times", "5", "--delta", "1e-6", "--accountant", "all")
    assert asked == [[1e-6]] and "pld" in got and "discrete-gaussian-sum" in got
    asked.clear()
    got = methods("--sigma", "300", "--times", "100", "--delta", "1e-6")
    assert asked == [[1e-6]] and "pld" in got and "discrete-gaussian-sum" not in got


def test_a_ledger_release_and_its_total_agree_and_all_shows_the_pld_row(tmp_path):
    """A ledger of one discrete Gaussian release: its own ε and the total's tightest are the same digits (both the
    law of the sum where it answers), and --accountant all adds the PLD total row, as compose discrete-gaussian
    does."""
    book = tmp_path / "dg.toml"
    book.write_text('[ledger]\ndelta = 0.031\n\n[[release]]\nname = "a"\nmechanism = "discrete_gaussian"\n'
                    'sigma = 0.102\nsensitivity = 2\ntimes = 50\n')  # fmt: skip
    for acc, methods in (("pld", {"discrete-gaussian-sum", "zcdp-rdp", "rdp"}), ("all", None)):
        r = CliRunner().invoke(cli, ["compose", "--ledger", str(book), "--accountant", acc, "--json"])
        assert r.exit_code == 0, r.output
        rows = json.loads(r.stdout)["rows"]
        (rel,) = [x for x in rows if x["kind"] == "release"]
        (best,) = [x for x in rows if x["kind"] == "total" and x["tightest"]]
        assert rel["epsilon"] == best["epsilon"] and rel["method"] == best["method"]
        got = {x["method"] for x in rows if x["kind"] == "total"}
        assert got == methods if methods else "pld" in got and "discrete-gaussian-sum" in got
