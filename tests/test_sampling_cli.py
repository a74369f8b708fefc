"""The sampling schemes of issue 12 on the command line: plan-sgd --sampling shuffle|balls-in-bins,
--max-batch-size, --examples-per-user, --users; amplify gaussian --max-batch-size/--examples-per-user.

Each row names its upper end's method and bound and its lower end's method; lower ≤ upper; shuffle's
upper end is the exact GDP conversion of √E/σ; K = 1 at user level is example-level Poisson sampling
exactly; inverse answers meet the target, and the next value toward more loss misses it, in full; bad
combinations stop with one Error line and exit 2."""

from __future__ import annotations

import json
import math
from importlib import resources

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli
from dpcalc.core import sampling as S
from dpcalc.core import sgd
from dpcalc.core.pld import exact

SCHEMA = json.loads(resources.files("dpcalc").joinpath("schema/result-v1.schema.json").read_text())

# A small run (fast): N = 6000, B = 64, 3 epochs (T = ⌈3·6000/64⌉ = 282), σ = 1, δ = 1e-5.
N, B, E, SIGMA, DELTA = 6000, 64, 3, 1.0, 1e-5
T = math.ceil(E * N / B)
NB = f"--dataset-size {N} --batch-size {B}"
RUN = f"{NB} --epochs {E} --noise-multiplier {SIGMA} --delta {DELTA}"


def run(args: str):
    return CliRunner().invoke(cli, args.split())


def doc(args: str) -> dict:
    r = run(args + " --json")
    assert r.exit_code == 0, (args, r.stderr, r.exception)
    d = json.loads(r.stdout)
    jsonschema.validate(d, SCHEMA)
    return d


def one_row(args: str) -> tuple[dict, dict]:
    """The answer row (a user-level answer has the rdp-group row beside it)."""
    d = doc(args)
    assert len(d["rows"]) == 1 or [r["method"] for r in d["rows"][1:]] == ["rdp-group"]
    return d["rows"][0], d


def test_shuffle_rows_and_exact_gdp_upper():
    scheme = "shuffle"
    row, d = one_row(f"plan-sgd {RUN} --sampling {scheme}")
    assert row["scheme"] == scheme
    assert (row["method"], row["bound"], row["lower_method"]) == ("gdp-no-amplification", "upper", "pld-max-statistic")
    assert 0 < row["epsilon_lower"] <= row["epsilon"]
    # The upper end is exactly the GDP conversion of μ = √E/σ (E = 3 epochs: k = 94 batches, T = 282 = 3k),
    # μ rounded up as a ledger composes E releases; the exact route's certified interval holds it.
    mu = math.sqrt(E) / SIGMA
    assert row["epsilon"] == float(S.no_amplification_upper(SIGMA, E, DELTA)[0])
    lo, up = exact.gaussian_interval(np.array([mu]), np.array([DELTA]))
    assert lo[0] <= row["epsilon"] <= up[0] * (1 + 1e-13)
    # And it is the core's interval, both ends.
    core = S.shuffle_interval(N, B, E, SIGMA, DELTA)
    assert (row["epsilon_lower"], row["epsilon"]) == (float(core.lower[0]), float(core.upper[0]))
    # Never Poisson's number: the warning says so, and the upper end is far above it.
    assert any("not a bound for this scheme" in w for w in d["warnings"])
    assert row["epsilon"] > float(sgd.tight_interval(B / N, SIGMA, T, DELTA).upper[0])
    # The object piped on is a shuffled object: E Gaussian mechanisms (√E/σ-GDP), its scheme named.
    assert d["objects"] == [
        {
            "type": "shuffled",
            "scheme": scheme,
            "epochs": E,
            "inner": {"type": "gaussian", "sigma": SIGMA, "sensitivity": 1.0},
        }
    ]
    assert any("substitution or zero-out" in n.lower() or "zero-out" in n for n in d["notes"])


def test_balls_in_bins_rows_amplified_upper():
    row, d = one_row(f"plan-sgd {RUN} --sampling balls-in-bins")
    assert row["scheme"] == "balls-in-bins"
    assert (row["method"], row["bound"], row["lower_method"]) == ("pld-random-allocation", "upper", "pld-max-statistic")
    assert 0 < row["epsilon_lower"] <= row["epsilon"]
    # Amplified: far below the unamplified √E/σ-GDP bound, at most Poisson's at q = 1/k (Feldman & Shenfeld
    # 2026: random allocation is at least as private), and inside Feldman & Shenfeld's own range for this
    # run — pld-accounting 2.0, gaussian_allocation_epsilon_range(δ=1e-5, σ=1, num_steps=94,
    # num_epochs=3) = (upper 1.01178, lower 0.97073), measured 2026-12-01.
    gdp = float(exact.gaussian_interval(np.array([math.sqrt(E) / SIGMA]), np.array([DELTA]))[1][0])
    k = -(-N // B)
    poisson = float(sgd.tight_interval(1 / k, SIGMA, E * k, DELTA).upper[0])
    assert row["epsilon"] < gdp / 2
    assert 0.97073 <= row["epsilon"] <= min(poisson, 1.01178)
    core = S.balls_in_bins_interval(N, B, E, SIGMA, DELTA)
    assert (row["epsilon_lower"], row["epsilon"]) == (float(core.lower[0]), float(core.upper[0]))
    assert not any("not a bound for this scheme" in w for w in d["warnings"])
    # The object piped on carries the k batches per epoch, and composes to the same digits.
    assert d["objects"] == [
        {
            "type": "shuffled",
            "scheme": "balls-in-bins",
            "epochs": E,
            "inner": {"type": "gaussian", "sigma": SIGMA, "sensitivity": 1.0},
            "batches": k,
        }
    ]
    r = CliRunner().invoke(cli, ["compose", "--delta", str(DELTA), "--json"], input=json.dumps(d))
    assert r.exit_code == 0, r.stderr
    tot = json.loads(r.stdout)["rows"][0]
    assert (tot["method"], tot["epsilon"], tot.get("epsilon_lower")) == ("pld", row["epsilon"], None)
    assert any("add/remove" in n.lower() for n in d["notes"])


def test_shuffle_warning_goes_to_stderr_in_table_mode():
    r = run(f"plan-sgd {RUN} --sampling shuffle")
    assert r.exit_code == 0
    assert "no amplification" in r.stderr and "not a bound" in r.stderr
    assert "pld-max-statistic" in r.stdout and "gdp-no-amplification" in r.stdout


def test_partial_epoch_counts_whole_for_shuffle():
    """2.5 epochs touch 3 epochs' batches: the upper end is that of √3/σ, never of √2/σ."""
    row, _ = one_row(f"plan-sgd {NB} --epochs 2.5 --noise-multiplier 1 --sampling shuffle")
    assert row["epsilon"] == float(S.no_amplification_upper(1.0, 3, 1e-4)[0])
    assert row["epsilon"] > float(exact.gaussian_interval(np.array([math.sqrt(2)]), np.array([1e-4]))[1][0])


def test_truncated_poisson_rows_and_core():
    bmax = 70
    row, d = one_row(f"plan-sgd {RUN} --max-batch-size {bmax}")
    assert row["scheme"] == "truncated-poisson" and row["max_batch_size"] == bmax
    assert (row["method"], row["bound"], row["lower_method"]) == ("pld-truncated-poisson", "upper", "pld-poisson-qbar")
    core = S.truncated_poisson_interval(N, B, bmax, SIGMA, T, DELTA)
    assert (row["epsilon_lower"], row["epsilon"]) == (float(core.lower[0]), float(core.upper[0]))
    assert row["epsilon_lower"] <= row["epsilon"]
    assert any("For comparison, Poisson sampling without the cap" in n for n in d["notes"])
    # The object is T steps of a truncated-Poisson subsampled Gaussian.
    step = d["objects"][0]["parts"][0]
    assert step["times"] == T and step["of"]["scheme"] == "truncated-poisson"
    assert (step["of"]["dataset_size"], step["of"]["max_batch_size"]) == (N, bmax)
    # A tighter cap can only cost privacy: the upper end grows as B_max falls.
    tighter, _ = one_row(f"plan-sgd {RUN} --max-batch-size {B}")
    assert tighter["epsilon"] >= row["epsilon"]


def test_user_level_k1_is_example_level_exactly():
    row, _ = one_row(f"plan-sgd {RUN} --examples-per-user 1")
    assert (row["method"], row["bound"], row["lower_method"], row["scheme"]) == (
        "pld-user-level",
        "upper",
        "pld-user-level",
        "user-level",
    )
    poisson = sgd.tight_interval(B / N, SIGMA, T, DELTA)
    assert (row["epsilon_lower"], row["epsilon"]) == (float(poisson.lower[0]), float(poisson.upper[0]))
    p_row = [r for r in doc(f"plan-sgd {RUN} --accountant all")["rows"] if r["method"] == "pld"][0]
    assert (row["epsilon_lower"], row["epsilon"]) == (p_row["epsilon_lower"], p_row["epsilon"])
    k2, _ = one_row(f"plan-sgd {RUN} --examples-per-user 2")
    assert row["epsilon"] < k2["epsilon_lower"] <= k2["epsilon"]


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_user_level_rdp_group_row_is_an_upper_bound_beside_the_interval(k):
    d = doc(f"plan-sgd {RUN} --examples-per-user {k}")
    pld_row, rdp_row = d["rows"]
    assert (rdp_row["method"], rdp_row["bound"], rdp_row["epsilon_lower"]) == ("rdp-group", "upper", None)
    # sound: never below the certified lower end of the exact pair; looser than the PLD upper end
    assert rdp_row["epsilon"] >= pld_row["epsilon_lower"]
    assert rdp_row["epsilon"] >= pld_row["epsilon"] * (1 - 1e-9)
    # K = 1 is example-level RDP (no group step); more examples per user never cost less
    if k == 1:
        assert rdp_row["epsilon"] >= sgd.epsilon(B / N, SIGMA, T, DELTA, "rdp") * (1 - 1e-6)
    assert S.user_level_rdp(B / N, SIGMA, T, k + 1, DELTA)[0] >= rdp_row["epsilon"]
    assert any("rdp-group row" in x for x in d["notes"])


def test_user_level_rdp_rows_equal_the_run_by_run_values():
    """The batched rdp-group values (orders that cannot win skipped) are the per-run function's, bit for bit,
    over random runs of every K the CLI takes (K = 1 goes run by run) — a floor that rose too fast would skip
    a winning order and show here as a larger value."""
    rng = np.random.default_rng(27)
    n = 120
    k = rng.choice([1, 2, 3, 4, 5, 8, 16, 33, 64], n)
    q = 10 ** rng.uniform(-5, 0, n)
    s = np.maximum(10 ** rng.uniform(np.log10(0.3), 2, n), k / 32)
    t = (10 ** rng.uniform(0, 6, n)).astype(int)
    d = 10 ** rng.uniform(-12, -1, n)
    rows = S.user_level_rdp_rows(q, s, t, k, d)
    one = np.array([S.user_level_rdp(q[i], s[i], t[i], k[i], d[i])[0] for i in range(n)])
    assert np.array_equal(rows, one)


def test_user_level_grid_rdp_rows_match_single_runs():
    """The rdp-group rows of a grid (computed in one call) equal those of the same runs asked alone."""
    grid = doc(f"plan-sgd {NB} --epochs 1,4 --noise-multiplier 0.8,2 --delta {DELTA} --examples-per-user 2,3")
    got = [r for r in grid["rows"] if r["method"] == "rdp-group"]
    assert len(got) == 8
    for r in got:
        alone = doc(
            f"plan-sgd {NB} --epochs {r['epochs']:g} --noise-multiplier {r['noise_multiplier']:g} --delta {DELTA} "
            f"--examples-per-user {r['examples_per_user']}"
        )
        assert [x["epsilon"] for x in alone["rows"] if x["method"] == "rdp-group"] == [r["epsilon"]]


def test_rdp_group_property_orders_and_scale():
    from dpcalc.core import group

    o, r = group.rdp([2.0, 4.0, 8.0, 16.0], [0.1, 0.2, 0.4, 0.8], 3)  # 2^c = 4 >= 3: c = 2
    assert o.tolist() == [2.0, 4.0] and r == pytest.approx([9 * 0.4, 9 * 0.8])
    assert r[0] >= 9 * 0.4  # rounded up


def test_users_is_standard_accounting_over_users():
    users = doc(f"plan-sgd --users {N} --batch-size {B} --epochs {E} --noise-multiplier {SIGMA} --delta {DELTA}")
    plain = doc(f"plan-sgd {RUN}")
    assert [(r["epsilon_lower"], r["epsilon"]) for r in users["rows"]] == [
        (r["epsilon_lower"], r["epsilon"]) for r in plain["rows"]
    ]
    assert any("q = B/U" in n for n in users["notes"]) and not any("q = B/U" in n for n in plain["notes"])
    assert users["inputs"]["users"] == N and "dataset_size" not in users["inputs"]


def test_poisson_answers_name_the_assumption_once():
    d = doc(f"plan-sgd {RUN}")
    said = [n for n in d["notes"] if "assumes Poisson sampling" in n]
    assert len(said) == 1 and "--sampling shuffle" in said[0]
    assert not any("assumes Poisson" in n for n in doc(f"plan-sgd {RUN} --sampling shuffle")["notes"])


def test_amplify_gaussian_schemes_match_plan_sgd():
    q = B / N
    a = doc(f"amplify gaussian --sigma {SIGMA} --rate {q!r} --steps {T} --delta {DELTA} --examples-per-user 2")
    p, _ = one_row(f"plan-sgd {RUN} --examples-per-user 2")
    assert (a["rows"][0]["epsilon_lower"], a["rows"][0]["epsilon"]) == (p["epsilon_lower"], p["epsilon"])
    t = doc(
        f"amplify gaussian --sigma {SIGMA} --rate {q!r} --steps {T} --delta {DELTA} --max-batch-size 70"
        f" --dataset-size {N}"
    )
    core = S.truncated_poisson_interval(N, q * N, 70, SIGMA, T, DELTA)
    assert (t["rows"][0]["epsilon_lower"], t["rows"][0]["epsilon"]) == (float(core.lower[0]), float(core.upper[0]))
    assert t["rows"][0]["lower_method"] == "pld-poisson-qbar"


def _forward_upper(args: str) -> float:
    row, _ = one_row(args)
    return row["epsilon"]


@pytest.mark.parametrize(
    "extra, target",
    [
        ("--sampling shuffle", 8.0),
        ("--sampling balls-in-bins", 2.0),
        ("--max-batch-size 70", 2.0),
        ("--examples-per-user 2", 3.0),
    ],
)
def test_inverse_sigma_meets_target_and_is_rechecked(extra, target):
    row, d = one_row(f"plan-sgd {NB} --epochs {E} --delta {DELTA} --target-epsilon {target} {extra}")
    assert row["found"] is True and row["search"] == "optimal"
    assert row["epsilon"] <= target < row["epsilon_next"]
    assert row["checked_next"] < row["noise_multiplier"]
    # Re-checked independently: the forward command at the answer meets the target, at the next value misses it.
    base = f"plan-sgd {NB} --epochs {E} --delta {DELTA} {extra}"
    assert _forward_upper(f"{base} --noise-multiplier {row['noise_multiplier']!r}") <= target
    assert _forward_upper(f"{base} --noise-multiplier {row['checked_next']!r}") > target
    assert any("re-computed in full" in n for n in d["notes"])


def test_inverse_sigma_closed_form_for_shuffle():
    target = 8.0
    row, _ = one_row(f"plan-sgd {NB} --epochs {E} --delta {DELTA} --target-epsilon {target} --sampling shuffle")
    from dpcalc.core import gdp

    mu = float(np.asarray(gdp.mu_for_dp(target, DELTA)).reshape(-1)[0])
    assert row["noise_multiplier"] == pytest.approx(math.sqrt(E) / mu, rel=1e-8)


@pytest.mark.parametrize(
    "extra, target",
    [
        ("--sampling shuffle", 8.0),
        ("--sampling balls-in-bins", 2.0),
        ("--max-batch-size 70", 6.0),
        ("--examples-per-user 2", 3.0),
    ],
)
def test_inverse_epochs_meets_target(extra, target):
    row, _ = one_row(f"plan-sgd {NB} --noise-multiplier {SIGMA} --delta {DELTA} --target-epsilon {target} {extra}")
    assert row["found"] is True
    assert row["epsilon"] <= target < row["epsilon_next"]
    base = f"plan-sgd {NB} --noise-multiplier {SIGMA} --delta {DELTA} {extra}"
    assert _forward_upper(f"{base} --steps {row['steps']}") <= target
    assert _forward_upper(f"{base} --steps {row['checked_next']}") > target
    if "shuffle" in extra or "balls-in-bins" in extra:  # whole epochs of k = 94 batches
        assert row["steps"] % 94 == 0 and row["checked_next"] == row["steps"] + 94
        assert row["epochs"] == row["steps"] // 94


@pytest.mark.parametrize(
    "extra, target", [("--max-batch-size 70", 4.0), ("--examples-per-user 2", 3.0), ("--sampling balls-in-bins", 1.0)]
)
def test_inverse_batch_size_meets_target_with_its_steps(extra, target):
    row, d = one_row(f"plan-sgd --dataset-size {N} --epochs {E} --noise-multiplier {SIGMA} --delta {DELTA} "
                     f"--target-epsilon {target} {extra}")  # fmt: skip
    b = row["batch_size"]
    assert row["found"] is True and row["search"] == "optimal"
    assert row["rate"] == pytest.approx(b / N) and row["steps"] == math.ceil(E * N / b)
    assert row["epsilon"] <= target < row["epsilon_next"]
    assert row["checked_next"] - b == max(1, int(1e-3 * b))
    # re-checked independently through the forward command, each B with its own ⌈E·N/B⌉ steps
    base = f"plan-sgd --dataset-size {N} --epochs {E} --noise-multiplier {SIGMA} --delta {DELTA} {extra}"
    assert _forward_upper(f"{base} --batch-size {b}") <= target
    assert _forward_upper(f"{base} --batch-size {row['checked_next']}") > target
    assert any("the batch size B" in n for n in d["notes"])


def test_inverse_batch_size_under_shuffle_says_none_or_range_end():
    """No batch size buys privacy without amplification: E epochs cost √E/σ whatever B is."""
    base = f"plan-sgd --dataset-size {N} --epochs {E} --noise-multiplier {SIGMA} --delta {DELTA} --sampling shuffle"
    r = run(f"{base} --target-epsilon 2 --json")
    d = json.loads(r.stdout)
    assert r.exit_code == 0 and any("even a batch size of 1 exceeds" in w for w in d["warnings"])
    row = d["rows"][0]
    assert (row["search"], row["found"], row.get("batch_size")) == ("none", False, None)
    row, _ = one_row(f"{base} --target-epsilon 30")
    assert (row["search"], row["batch_size"], row["found"]) == ("range-end", N, False)
    assert row["epsilon"] <= 30


BAD = [
    f"plan-sgd {RUN} --sampling shuffle --max-batch-size 70",
    f"plan-sgd {RUN} --sampling without-replacement --examples-per-user 2",
    f"plan-sgd {RUN} --max-batch-size 70 --examples-per-user 2",
    f"plan-sgd {RUN} --users 5000",
    f"plan-sgd --users {N} --batch-size {B} --epochs {E} --noise-multiplier 1 --examples-per-user 2",
    f"plan-sgd {RUN} --sampling shuffle --accountant rdp",
    f"plan-sgd {RUN} --sampling balls-in-bins --accountant all",
    f"plan-sgd {RUN} --max-batch-size 70 --accountant gdp-clt",
    f"plan-sgd {RUN} --sampling shuffle --per-epoch",
    f"plan-sgd {NB} --epochs {E} --noise-multiplier 1 --sampling shuffle --to attack",
    "plan-sgd --rate 0.01 --epochs 3 --noise-multiplier 1 --delta 1e-5 --sampling shuffle",
    "plan-sgd --rate 0.01 --steps 30 --noise-multiplier 1 --delta 1e-5 --max-batch-size 70",
    f"plan-sgd {RUN} --sampling shuffle --delta 1e-13",
    f"plan-sgd --dataset-size {N} --steps 30 --noise-multiplier 1 --target-epsilon 3 --max-batch-size 70",
    f"plan-sgd {NB} --epochs {E} --noise-multiplier 1 --target-epsilon 3 --solve batch-size --max-batch-size 70",
    "amplify gaussian --sigma 1 --rate 0.01 --steps 10 --examples-per-user 2 --scheme both",
    "amplify gaussian --sigma 1 --rate 0.01 --steps 10 --max-batch-size 20",
    "amplify gaussian --sigma 1 --rate 0.01 --steps 10 --dataset-size 20",
    "amplify gaussian --sigma 1 --rate 0.01 --steps 10 --examples-per-user 2 --accountant rdp",
    "amplify gaussian --sigma 1 --rate 0.01 --examples-per-user 2 --orders 2,4",
]


@pytest.mark.parametrize("args", BAD)
def test_bad_combinations_exit_2_with_one_line(args):
    r = run(args)
    assert r.exit_code == 2, (args, r.stdout, r.stderr, r.exception)
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "--" in r.stderr  # names an option


def test_grid_over_delta_shares_one_computation_and_stays_ordered():
    d = doc(f"plan-sgd {NB} --epochs {E} --noise-multiplier 1 --delta 1e-5,1e-7 --max-batch-size 70")
    ups = [r["epsilon"] for r in d["rows"]]
    assert len(ups) == 2 and ups[1] > ups[0]
    for r in d["rows"]:
        assert r["epsilon_lower"] <= r["epsilon"]


# --------------------------------------------------------------------------
# Pipes and ledgers (item 4): a run under a scheme is an object compose accounts the same way
# --------------------------------------------------------------------------


def _compose(stdin: str, *extra: str) -> dict:
    r = CliRunner().invoke(cli, ["compose", "--delta", str(DELTA), "--json", *extra], input=stdin)
    assert r.exit_code == 0, (r.stderr, r.exception)
    d = json.loads(r.stdout)
    jsonschema.validate(d, SCHEMA)
    return d


@pytest.mark.parametrize("extra", ["--sampling shuffle", "--max-batch-size 70", "--examples-per-user 2"])
def test_piped_run_composes_to_its_upper_end(extra):
    r = run(f"plan-sgd {RUN} {extra} --json")
    assert r.exit_code == 0
    row = json.loads(r.stdout)["rows"][0]
    total = [t for t in _compose(r.stdout)["rows"] if t.get("tightest")][0]
    assert total["epsilon"] == row["epsilon"]
    assert total["bound"] == "upper"  # never "exact": the scheme's true ε may be lower
    if "max-batch-size" in extra:  # the dominating pair is not two datasets: no lower end is claimed
        assert total.get("epsilon_lower") is None
    if "examples-per-user" in extra:  # that pair is realisable: the lower end stands
        assert total["epsilon_lower"] == row["epsilon_lower"]


LEDGER_SHUFFLE = """
[ledger]
delta = 1e-5
neighbours = "{nb}"

[[release]]
name = "shuffled run"
mechanism = "gaussian"
noise_multiplier = 1
sampling = "{sampling}"
{extra}
"""


def _ledger(tmp_path, text: str):
    p = tmp_path / "l.toml"
    p.write_text(text)
    return CliRunner().invoke(cli, ["compose", "--ledger", str(p), "--json"])


@pytest.mark.parametrize("scheme", ["shuffle", "balls-in-bins"])
def test_ledger_holds_a_shuffled_run(tmp_path, scheme):
    # Without 'batches' (substitution neighbours) both are the unamplified √E/σ-GDP bound: shuffle's row.
    r = _ledger(tmp_path, LEDGER_SHUFFLE.format(nb="substitution", sampling=scheme, extra=f"epochs = {E}"))
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    entry = [x for x in d["rows"] if x["row"] == "entry"][0]
    row, _ = one_row(f"plan-sgd {RUN} --sampling shuffle")
    assert entry["epsilon"] == row["epsilon"] and entry["bound"] == "upper"
    assert f"{scheme} {E} epochs" in entry["mechanism"]


def test_ledger_holds_an_amplified_balls_in_bins_run(tmp_path):
    k = -(-N // B)
    r = _ledger(
        tmp_path, LEDGER_SHUFFLE.format(nb="add-remove", sampling="balls-in-bins", extra=f"epochs = {E}\nbatches = {k}")
    )
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    entry = [x for x in d["rows"] if x["row"] == "entry"][0]
    row, _ = one_row(f"plan-sgd {RUN} --sampling balls-in-bins")
    assert (entry["epsilon"], entry["bound"], entry["method"]) == (row["epsilon"], "upper", "pld")
    assert f"balls-in-bins {E} epochs of {k} batches" in entry["mechanism"]
    # 'batches' needs add-remove neighbours, and goes with balls-in-bins only: one Error line, exit 2.
    for nb, sampling in (("substitution", "balls-in-bins"), ("add-remove", "shuffle")):
        bad = _ledger(tmp_path, LEDGER_SHUFFLE.format(nb=nb, sampling=sampling, extra=f"epochs = {E}\nbatches = {k}"))
        assert bad.exit_code == 2 and "batches" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


LEDGER_PLD = """
[ledger]
delta = 1e-5

[[release]]
name = "run"
mechanism = "gaussian"
noise_multiplier = 1
rate = {rate!r}
times = {times}
{extra}
"""


@pytest.mark.parametrize(
    "extra, flag",
    [
        ('sampling = "truncated-poisson"\ndataset_size = 6000\nmax_batch_size = 70', "--max-batch-size 70"),
        ('sampling = "user-level"\nexamples_per_user = 2', "--examples-per-user 2"),
    ],
)
def test_ledger_holds_capped_and_user_level_runs(tmp_path, extra, flag):
    r = _ledger(tmp_path, LEDGER_PLD.format(rate=B / N, times=T, extra=extra))
    assert r.exit_code == 0, r.stderr
    entry = [x for x in json.loads(r.stdout)["rows"] if x["row"] == "entry"][0]
    row, _ = one_row(f"plan-sgd {RUN} {flag}")
    assert entry["epsilon"] == row["epsilon"]


BAD_LEDGERS = [
    # shuffled runs: substitution only, epochs required, no rate, no other scheme's fields
    (LEDGER_SHUFFLE.format(nb="add-remove", sampling="shuffle", extra="epochs = 3"), "neighbours"),
    (LEDGER_SHUFFLE.format(nb="substitution", sampling="shuffle", extra=""), "'epochs'"),
    (LEDGER_SHUFFLE.format(nb="substitution", sampling="shuffle", extra="epochs = 3\nrate = 0.01"), "'rate'"),
    (LEDGER_SHUFFLE.format(nb="substitution", sampling="shuffle", extra="epochs = 2.5"), "'epochs'"),
    (LEDGER_SHUFFLE.format(nb="substitution", sampling="balls-in-bins", extra="epochs = 3\nexamples_per_user = 2"),
     "'examples_per_user'"),
    (LEDGER_SHUFFLE.format(nb="substitution", sampling="shufle", extra="epochs = 3"), "'sampling'"),
    # capped and user-level runs: their own fields, required; nothing else's
    (LEDGER_PLD.format(rate=0.01, times=10, extra='sampling = "truncated-poisson"\ndataset_size = 6000'),
     "'max_batch_size'"),
    (LEDGER_PLD.format(rate=0.01, times=10, extra='sampling = "user-level"'), "'examples_per_user'"),
    (LEDGER_PLD.format(rate=0.01, times=10, extra='sampling = "user-level"\nexamples_per_user = 2\nmax_batch_size = 5'),
     "'max_batch_size'"),
    (LEDGER_PLD.format(rate=0.01, times=10, extra="epochs = 3"), "'epochs'"),
    (LEDGER_PLD.format(rate=0.01, times=10, extra="max_batch_size = 3"), "'max_batch_size'"),
    (LEDGER_PLD.format(rate=0.01, times=10, extra='sampling = "user-level"\nexamples_per_user = 0'),
     "'examples_per_user'"),
    (LEDGER_PLD.format(rate=0.01, times=10, extra='sampling = "user-level"\nexamples_per_user = true'),
     "'examples_per_user'"),
]  # fmt: skip


@pytest.mark.parametrize("text, names", BAD_LEDGERS)
def test_ledger_scheme_fields_are_strict(tmp_path, text, names):
    r = _ledger(tmp_path, text)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    assert names in r.stderr and "release 1" in r.stderr


def _obj(**kw):
    g = {"type": "gaussian", "sigma": 1.0, "sensitivity": 1.0}
    return json.dumps({"type": "composed", "parts": [{"times": 10, "of": dict(kw, inner=g)}]})


BAD_OBJECTS = [
    (_obj(type="subsampled", rate=0.01, scheme="user-level"), "'examples_per_user'"),
    (_obj(type="subsampled", rate=0.01, scheme="user-level", examples_per_user=2, dataset_size=5), "'dataset_size'"),
    (_obj(type="subsampled", rate=0.01, scheme="truncated-poisson", dataset_size=100), "'max_batch_size'"),
    (_obj(type="subsampled", rate=0.01, scheme="poisson", max_batch_size=5), "'max_batch_size'"),
    (_obj(type="subsampled", rate=0.01, scheme="user-level", examples_per_user=2, neighbours="substitution"),
     "add-remove"),
    (_obj(type="subsampled", rate=0.01, scheme="user-level", examples_per_user=2.5), "'examples_per_user'"),
    (_obj(type="shuffled", scheme="shuffle"), "'epochs'"),
    (_obj(type="shuffled", scheme="shuffle", epochs=0), "'epochs'"),
    (_obj(type="shuffled", scheme="poisson", epochs=3), "'scheme'"),
    (_obj(type="shuffled", scheme="shuffle", epochs=3, rate=0.1), "'rate'"),
]  # fmt: skip


@pytest.mark.parametrize("doc_text, names", BAD_OBJECTS)
def test_piped_scheme_objects_are_strict(doc_text, names):
    r = CliRunner().invoke(cli, ["compose", "--delta", "1e-5"], input=doc_text)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
    assert names in r.stderr


def test_shuffled_inner_must_be_gaussian():
    bad = json.dumps({"type": "shuffled", "scheme": "shuffle", "epochs": 3, "inner": {"type": "laplace", "scale": 1}})
    r = CliRunner().invoke(cli, ["compose", "--delta", "1e-5"], input=bad)
    assert r.exit_code == 2 and "gaussian" in r.stderr


def test_user_level_beyond_its_range_is_one_line_not_a_hang():
    for args in (
        f"plan-sgd {RUN} --examples-per-user 65",
        f"plan-sgd {NB} --epochs 1 --noise-multiplier 0.5 --examples-per-user 20",
    ):
        r = run(args)
        assert r.exit_code == 2 and r.stderr.startswith("Error: --examples-per-user") and r.stderr.count("\n") == 1


def test_shuffle_with_more_batches_than_the_lower_end_handles_still_answers_the_upper_end():
    row, d = one_row(
        "plan-sgd --dataset-size 9007199254740992 --batch-size 1 --epochs 1 --noise-multiplier 1 --delta 1e-12"
        " --sampling shuffle"
    )
    assert row["epsilon_lower"] is None and row["lower_method"] is None
    assert row["epsilon"] == float(S.no_amplification_upper(1.0, 1, 1e-12)[0])
    assert any("no lower end" in n for n in d["notes"])
    # Five steps of that epoch: the partial epoch's pair (the record ran with probability 5/k) has a lower end.
    row, _ = one_row(
        "plan-sgd --dataset-size 9007199254740992 --batch-size 1 --steps 5 --noise-multiplier 1 --delta 1e-12"
        " --sampling shuffle"
    )
    assert row["lower_method"] == "pld-max-statistic" and 0 <= row["epsilon_lower"] <= row["epsilon"]


@pytest.mark.parametrize(
    "curve",
    [
        lambda s: 2.76 * s**-2.7,  # a power of σ (the amplified regime)
        lambda s: 1.3 / s + 0.4 / s**4,  # a steeper tail at small σ
        lambda s: math.inf if s < 0.3 else 5.0 / s,  # nothing can be said below 0.3 (GDP-like above)
        lambda s: 40.0 * math.exp(-3 * s),  # not a power at all
    ],
)
@pytest.mark.parametrize("target", [0.5, 3.0, 8.0, 30.0])
def test_sigma_search_brackets_to_rtol_in_few_bounds(curve, target):
    from dpcalc.cli import _schemes as sch

    calls = []

    def value(s):
        calls.append(s)
        return curve(s)

    rtol = 1e-3
    got = sch.search_sigma(value, target, 1.0, rtol)
    if not any(curve(s) <= target for s in np.geomspace(1e-6, 1e12, 2000)):
        assert got is None
        return
    s, below = got
    assert curve(s) <= target < curve(below)
    assert s / below == pytest.approx(1 + rtol)
    # Bisection from a bracket of ratio 2 alone takes ten; at the edge of where anything can be said (an
    # infinite bound just below the answer) there is nothing to interpolate, and it bisects.
    assert len(calls) <= (20 if math.isinf(curve(below)) else 10)


def test_sigma_search_says_none_when_nothing_meets():
    from dpcalc.cli import _schemes as sch

    assert sch.search_sigma(lambda s: 5.0, 1.0, 1.0) is None


def test_balls_in_bins_fallback_is_warned():
    """Where the random-allocation construction does not fit (tiny δ, small σ, many batches), the upper end
    falls back to the unamplified √E/σ-GDP bound: the row says so on stderr (table) and in the JSON warnings,
    not only in a note; an amplified row carries no such warning."""
    args = "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 5 --noise-multiplier 1.1 --sampling balls-in-bins"
    row, d = one_row(f"{args} --delta 3e-21")
    assert row["method"] == "gdp-no-amplification"
    assert any("does not fit" in w and "δ=3e-21" in w for w in d["warnings"]), d["warnings"]
    r = run(f"{args} --delta 3e-21")
    assert r.exit_code == 0 and "warning:" in r.stderr and "unamplified" in r.stderr
    row, d = one_row(f"{args} --delta 1e-10")
    assert row["method"] == "pld-random-allocation"
    assert not any("does not fit" in w for w in d["warnings"])


def test_balls_in_bins_says_when_the_engine_could_not_certify_its_construction():
    """N = 4, B = 2 (k = 2), σ = 0.7, δ = 1e-5: the construction fits but the PLD engine found no certified ε for it
    (inf): the √E/σ-GDP upper end is taken with a warning naming σ, k and δ — not silently as "the smaller"
    (helper-62). A fallback's warning names the actual k, not "many batches"."""
    args = "plan-sgd --dataset-size 4 --batch-size 2 --epochs 2 --sampling balls-in-bins --delta 1e-5"
    row, d = one_row(f"{args} --noise-multiplier 0.7")
    assert row["method"] == "gdp-no-amplification" and row["epsilon_lower"] <= row["epsilon"]
    assert any("could not certify" in w and "k = 2 batches" in w and "1e-05" in w for w in d["warnings"]), d["warnings"]
    row, d = one_row(f"{args} --noise-multiplier 0.5")
    assert any("does not fit at σ = 0.5, k = 2 batches" in w for w in d["warnings"]), d["warnings"]
    assert not any("many batches" in w for w in d["warnings"])


def test_more_examples_per_user_than_records_is_refused():
    r = run("plan-sgd --dataset-size 10 --batch-size 2 --epochs 1 --noise-multiplier 1 --examples-per-user 20")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "--examples-per-user" in r.stderr and "20 is larger than the dataset size 10" in r.stderr
    ok = run("plan-sgd --dataset-size 10 --batch-size 2 --epochs 1 --noise-multiplier 1 --examples-per-user 10 --json")
    assert ok.exit_code == 0
