"""Pipes between commands, ledgers, budget gates, bare values, man pages, completion."""

import json
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from dpcalc.cli import cli

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "examples" / "privacy.toml"
SCHEMA = json.loads(resources.files("dpcalc").joinpath("schema/result-v1.schema.json").read_text())


def run(args, input=None):
    return CliRunner().invoke(cli, args.split() if isinstance(args, str) else args, input=input)


def doc(args, input=None):
    r = run(args, input)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    jsonschema.validate(d, SCHEMA)
    return d


# ---------------------------------------------------------------- pipes


def test_calibrate_amplify_compose_pipe():
    a = run("calibrate gaussian --epsilon 1 --delta 1e-6 --json").stdout
    b = run("amplify --rate 0.01 --json", a).stdout
    d = doc("compose --times 5000 --delta 1e-5 --accountant pld --json", b)
    assert d["objects"][0]["type"] == "composed"
    by = {r["method"]: r for r in d["rows"]}
    # Same numbers as composing the subsampled Gaussian directly.
    sigma = json.loads(a)["objects"][0]["sigma"]
    direct = doc(f"compose mixed --subsampled-gaussian 0.01,{sigma!r},5000 --delta 1e-5 --accountant pld --json")
    direct_by = {r["method"]: r for r in direct["rows"]}
    assert by["rdp"]["epsilon"] == pytest.approx(direct_by["rdp"]["epsilon"], rel=1e-12)
    assert by["pld"]["epsilon"] == pytest.approx(direct_by["pld"]["epsilon"], rel=1e-12)
    # The tight engine is marked and is below RDP.
    assert by["pld"]["tightest"] and by["pld"]["epsilon"] < by["rdp"]["epsilon"]


def test_several_documents_compose_together_and_match_exact_gaussian():
    one = run("calibrate gaussian --mu 0.3 --json").stdout
    two = run("calibrate gaussian --mu 0.4 --json").stdout
    d = doc("compose --delta 1e-5 --json", one + two)
    gdp_row = [r for r in d["rows"] if r["method"] == "gdp"][0]
    assert gdp_row["mu"] == pytest.approx(0.5)
    assert gdp_row["bound"] == "exact" and gdp_row["tightest"]


def test_bare_objects_and_lists_are_accepted():
    d = doc("convert --delta 1e-5 --json", '[{"type": "gdp", "mu": 1}, {"type": "zcdp", "rho": 0.5}]')
    assert {r["method"] for r in d["rows"]} >= {"gdp", "zcdp-rdp"}
    d = doc("group --size 3 --json", '{"type": "zcdp", "rho": 0.1}')
    assert d["rows"][0]["rho"] == pytest.approx(0.9)


def test_pipe_through_real_processes(tmp_path):
    exe = [sys.executable, "-m", "dpcalc"]
    p1 = subprocess.run(
        exe + ["calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-6", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    p2 = subprocess.run(
        exe + ["amplify", "--rate", "0.01", "--json"], input=p1.stdout, capture_output=True, text=True, check=True
    )
    p3 = subprocess.run(
        exe + ["compose", "--times", "5000", "--delta", "1e-5", "--value", "epsilon"],
        input=p2.stdout,
        capture_output=True,
        text=True,
        check=True,
    )
    assert 0 < float(p3.stdout.strip()) < 1
    f = tmp_path / "mech.json"
    f.write_text(p1.stdout)
    p4 = subprocess.run(exe + ["group", "--input", str(f), "--size", "2", "--json"], capture_output=True, text=True)
    assert p4.returncode == 0 and json.loads(p4.stdout)["rows"]


PIPE_ERRORS = [
    ("compose --delta 1e-5", '{"schema_version": 99, "objects": []}', "schema_version 99"),
    ("compose --delta 1e-5", "{not json", "not valid JSON"),
    ("compose --delta 1e-5", "", "no input"),
    ("compose --delta 1e-5", '{"type": "gaussian"}', "field 'sigma' is missing"),
    ("compose --delta 1e-5", '{"type": "warp"}', "unknown type 'warp'"),
    ("compose --delta 1e-5", '{"type": "gaussian", "sigma": -2}', "must be a number > 0"),
    ("amplify --rate 0.1", '{"type": "zcdp", "rho": 1}', "amplify takes"),
    ("compose --delta 1e-5", '{"schema_version": 1, "command": "calibrate", "objects": []}', "no privacy object"),
    ("compose --input /nonexistent/x.json --delta 1e-5", None, "--input"),
    ("convert --to tradeoff", '{"type": "zcdp", "rho": 1}', "--to tradeoff"),
]


@pytest.mark.parametrize("args, stdin, mentions", PIPE_ERRORS)
def test_bad_pipe_input_is_one_clear_line(args, stdin, mentions):
    r = run(args, stdin)
    assert r.exit_code == 2
    assert r.stderr.startswith("Error:") and r.stderr.count("\n") == 1
    assert mentions in r.stderr


# ---------------------------------------------------------------- ledgers


def test_example_ledger_totals_and_shares():
    d = doc(f"compose --ledger {LEDGER} --json")
    entries = [r for r in d["rows"] if r["row"] == "entry"]
    totals = [r for r in d["rows"] if r["row"] == "total"]
    assert len(entries) == 4
    assert sum(r["share_pct"] for r in entries) == pytest.approx(100)
    best = [r for r in totals if r["tightest"]][0]
    # The total is more than any single entry and less than their sum.
    assert max(r["epsilon"] for r in entries) < best["epsilon"] < sum(r["epsilon"] for r in entries)
    assert d["inputs"]["delta"] == 1e-6


def test_ledger_json_form_matches_toml(tmp_path):
    from dpcalc.ledger import tomllib  # tomllib, or the tomli backport on Python 3.10

    data = tomllib.loads(LEDGER.read_text())
    p = tmp_path / "ledger.json"
    p.write_text(json.dumps(data))
    a = doc(f"compose --ledger {LEDGER} --value epsilon".replace("--value epsilon", "--json"))
    b = doc(f"compose --ledger {p} --json")
    assert [r["epsilon"] for r in a["rows"]] == [r["epsilon"] for r in b["rows"]]


LEDGER_ERRORS = [
    ('[[release]]\nname = "a"\nmechanism = "gaussian"\nsigma = 1\nrate = 1.5\n', "release 1 ('a'): field 'rate'"),
    ('[[release]]\nname = "a"\nmechanism = "gaussian"\nsigmaa = 1\n', "unknown field 'sigmaa'"),
    ('[[release]]\nmechanism = "fourier"\n', "field 'mechanism' must be one of"),
    ('[[release]]\nname = "x"\nmechanism = "gaussian"\n', "exactly one of 'sigma' or 'noise_multiplier'"),
    (
        '[ledger]\nneighbours = "substitution"\n[[release]]\nmechanism = "gaussian"\nsigma = 1\nrate = 0.1\n',
        "poisson sampling is analysed with add-remove",
    ),
    ("[[release]\nmechanism = 1", "not valid TOML"),
    ('[ledger]\ndelta = 2\n[[release]]\nmechanism = "dp"\nepsilon = 1\n', "field 'delta'"),
    ('[ledger]\n[[release]]\nmechanism = "dp"\nepsilon = 1\ndelta = 0.1\ntimes = 2.5\n', "field 'times'"),
    ("[ledger]\nname = 'empty'\n", "no [[release]] entries"),
]


@pytest.mark.parametrize("text, mentions", LEDGER_ERRORS)
def test_ledger_errors_name_entry_and_field(tmp_path, text, mentions):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    r = run(f"compose --ledger {p} --delta 1e-5")
    assert r.exit_code == 2, r.stdout
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1
    assert mentions in r.stderr
    assert str(p) in r.stderr or "not valid" in r.stderr


# ---------------------------------------------------------------- gates and bare values


def test_budget_gate_exit_codes_and_json_still_printed():
    over = run("compose gaussian --sigma 2 --times 100 --delta 1e-5 --max-epsilon 5 --json")
    assert over.exit_code == 1
    assert over.stderr.startswith("budget exceeded: ε = ") and over.stderr.count("\n") == 1
    d = json.loads(over.stdout)
    assert d["budget"]["exceeded"] is True
    under = run("compose gaussian --sigma 2 --times 100 --delta 1e-5 --max-epsilon 50 --json")
    assert under.exit_code == 0 and json.loads(under.stdout)["budget"]["exceeded"] is False


@pytest.mark.parametrize("limit", [8.385418, 8.38541892, 8.3854189242168])
def test_budget_message_shows_digits_enough_to_tell_epsilon_from_the_budget(limit):
    # ε = 8.385418924216834 (μ = √3): at six digits ε (rounded up) and a budget just below it both read 8.38542.
    r = run(f"compose gaussian --sigma 1 --times 3 --delta 1e-5 --max-epsilon {limit!r} --format markdown")
    assert r.exit_code == 1
    msg = r.stderr.strip()
    eps, _, rest = msg.removeprefix("budget exceeded: ε = ").partition(" > ")
    shown = rest.split(" at ")[0]
    assert float(eps) > float(shown) and float(eps) >= 8.385418924216834
    assert f"is over the budget of {shown}" in r.stdout and f"ε = {eps} at" in r.stdout
    ok = run("compose gaussian --sigma 1 --times 3 --delta 1e-5 --max-epsilon 8.3854189243 --format markdown")
    assert ok.exit_code == 0
    line = next(x for x in ok.stdout.splitlines() if "Budget check: passed." in x)
    e_ok, b_ok = line.split("ε = ")[1].split(" at ")[0], line.split("budget of ")[1].rstrip(".")
    assert float(e_ok) <= float(b_ok)


@pytest.mark.parametrize(
    "args",
    [
        "convert gaussian --sigma 0.01 --epsilon 0.5 --max-epsilon 1",  # δ = 1 at ε = 0.5: no guarantee at all
        "convert gdp --mu 5 --epsilon 0.5,0.7 --max-epsilon 1",
        "convert discrete-gaussian --sigma 0.1 --epsilon 0.5 --max-epsilon 1",
    ],
)
def test_gate_refuses_to_check_an_epsilon_the_user_gave(args):
    """δ at a given ε: the rows' ε is the input, so the gate compared the user's own number with the budget and
    passed whatever δ came out (1 for σ = 0.01). It is refused, naming what to give instead."""
    r = run(args)
    assert r.exit_code == 2 and r.stderr.startswith("Error: --max-epsilon") and "--delta" in r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""
    computed = run(args.replace("--epsilon", "--delta").replace("0.5,0.7", "1e-5").replace("0.5", "1e-5"))
    assert computed.exit_code == 1  # the same mechanisms at a δ one can afford: ε far above 1


def test_converting_a_guarantee_to_gdp_pipes_the_guarantee_not_the_gaussian():
    """`convert dp --to gdp` names the Gaussian that meets (ε, δ); piped on, it carried that Gaussian, so 100
    compositions of a (1, 1e-6)-DP mechanism read 12.33 labelled exact — for a mechanism that need not be GDP,
    whose 100-fold composition has no ε at δ = 1e-5 (its δ alone adds to 1e-4)."""
    src = run("convert dp --epsilon 1 --delta 1e-6 --to gdp --json")
    assert src.exit_code == 0
    assert json.loads(src.stdout)["objects"] == [{"type": "dp", "epsilon": 1.0, "delta": 1e-06}]
    r = run("compose --times 100 --delta 1e-5", input=src.stdout)
    assert r.exit_code == 2 and "δ = 0.0001" in r.stderr
    d = doc("compose --times 100 --delta 1e-3 --json", input=src.stdout)
    best = [x for x in d["rows"] if x.get("tightest")][0]
    assert best["method"] != "gdp" and best["epsilon"] > 12.33  # the Gaussian's exact answer was 12.33 at 1e-5
    bare = json.dumps({"type": "dp", "epsilon": 1.0, "delta": 1e-6})
    ref = doc("compose --times 100 --delta 1e-3 --json", input=bare)
    assert best["epsilon"] == [x for x in ref["rows"] if x.get("tightest")][0]["epsilon"]


@pytest.mark.parametrize("fmt", ["--json", "--format json", "--format csv", "--format ndjson", "--format markdown"])
def test_value_with_another_output_format_is_refused(fmt):
    """--value replaced the output whatever else was asked: `--json --value epsilon` printed a bare number where a
    script expected a document."""
    r = run(f"compose gaussian --sigma 2 --times 10 --delta 1e-5 --value epsilon {fmt}")
    assert r.exit_code == 2 and r.stderr.startswith("Error: --value") and fmt.split()[0] in r.stderr
    assert r.stdout == ""
    ok = run("compose gaussian --sigma 2 --times 10 --delta 1e-5 --value epsilon --format table")
    assert ok.exit_code == 0 and float(ok.stdout) > 0


def test_gate_ignores_approximate_rows():
    # At q=0.01, σ=0.6, T=1000 the CLT value is below the RDP one: a budget between them must fail.
    d = doc("plan-sgd --rate 0.01 --steps 1000 --sigma 0.6 --delta 1e-5 --accountant all --json")
    clt = [r for r in d["rows"] if r["method"] == "gdp-clt"][0]["epsilon"]
    pld = [r for r in d["rows"] if r["method"] == "pld"][0]["epsilon"]
    mid = (clt + pld) / 2
    r = run(f"plan-sgd --rate 0.01 --steps 1000 --sigma 0.6 --delta 1e-5 --accountant all --max-epsilon {mid}")
    assert r.exit_code == 1


def test_ledger_with_a_gaussian_sampled_without_replacement(tmp_path):
    p = tmp_path / "wor.toml"
    p.write_text(
        '[ledger]\ndelta = 1e-5\nneighbours = "substitution"\n'
        '[[release]]\nname = "sgd"\nmechanism = "gaussian"\nnoise_multiplier = 1.1\nrate = 0.01\n'
        'sampling = "without-replacement"\ntimes = 1000\n'
        '[[release]]\nname = "eval"\nmechanism = "gaussian"\nsigma = 20\ntimes = 3\n'
    )
    d = doc(f"compose --ledger {p} --json")
    total = [r for r in d["rows"] if r["row"] == "total"]
    assert [t["method"] for t in total] == ["pld"]  # only PLD bounds such a part
    sgd_only = doc("plan-sgd --rate 0.01 --steps 1000 --sigma 1.1 --delta 1e-5 --sampling without-replacement --json")[
        "rows"
    ][0]
    assert total[0]["epsilon"] > sgd_only["epsilon_lower"]  # the second release adds to the total
    assert sum(r["share_pct"] for r in d["rows"] if r["row"] == "entry") == pytest.approx(100)
    r = run(f"compose --ledger {p} --accountant rdp")
    assert r.exit_code == 0 and "no RDP bound" in r.stderr
    r = run(f"compose --ledger {p} --delta 1e-14")  # the PLD engine answers down to 1e-30 ...
    tiny = json.loads(run(f"compose --ledger {p} --delta 1e-14 --json").stdout)
    assert r.exit_code == 0 and [t["method"] for t in tiny["rows"] if t["row"] == "total"] == ["pld"]
    r = run(f"compose --ledger {p} --delta 1e-40")  # ... and below it nothing else bounds such a part
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and "PLD" in r.stderr


def test_ledger_budget_from_file_and_option():
    assert run(f"compose --ledger {LEDGER}").exit_code == 0  # max_epsilon = 8 in the file
    r = run(f"compose --ledger {LEDGER} --max-epsilon 1")
    assert r.exit_code == 1 and "budget exceeded" in r.stderr


def test_value_prints_bare_numbers():
    r = run("compose gaussian --sigma 2 --times 100 --delta 1e-5 --value epsilon")
    assert r.exit_code == 0
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1 and float(lines[0]) > 0
    from dpcalc.core.gaussian import sigma_analytic

    r = run("calibrate gaussian --epsilon 1,2 --delta 1e-5 --value sigma")
    assert [float(x) for x in r.stdout.split()] == [sigma_analytic(1.0, 1e-5), sigma_analytic(2.0, 1e-5)]
    bad = run("calibrate gaussian --epsilon 1 --delta 1e-5 --value nope")
    assert bad.exit_code == 2 and "--value" in bad.stderr


def test_ndjson_rows():
    r = run("plan-sgd --rate 0.01 --steps 100 --sigma 1 --delta 1e-5 --per-epoch --accountant rdp --format ndjson")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == 1 and rows[0]["method"] == "rdp"
    r = run("group dp --epsilon 0.5 --delta 1e-7 --size 1:5:5 --format ndjson")
    assert len(r.stdout.splitlines()) == 10


# ---------------------------------------------------------------- man pages and completion


def test_man_pages_match_the_cli():
    from dpcalc.manpage import pages

    for name, text in pages().items():
        committed = (ROOT / "man" / name).read_text(encoding="utf-8")
        assert committed == text, f"man/{name} is stale: run python -m dpcalc.manpage"


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
def test_man_pages_render_cleanly():
    for page in sorted((ROOT / "man").glob("*.1")):
        r = subprocess.run(["groff", "-k", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True)
        assert r.returncode == 0 and r.stderr == "", (page, r.stderr)


def test_shell_completion_script():
    env = dict(os.environ, _DPCALC_COMPLETE="bash_source")
    r = subprocess.run(
        [sys.executable, "-c", "from dpcalc.cli import main; main()"], env=env, capture_output=True, text=True
    )
    assert r.returncode == 0 and "_dpcalc_completion" in r.stdout


def test_many_piped_gaussians_convert_and_group_as_each_would_alone():
    """convert and group of a stream compute its Gaussian answers ahead in one vectorised call (2,000 objects: 20 s
    to 2 s); every digit is still the one the object gets converted on its own."""
    objs = [{"type": "gaussian", "sigma": 0.7 + 0.013 * i, "sensitivity": 1.0 + (i % 3)} for i in range(40)]
    objs += [{"type": "gdp", "mu": 0.05 + 0.11 * i} for i in range(20)]
    stream = json.dumps({"schema_version": 1, "objects": objs})
    many = doc("convert --delta 1e-5,1e-9 --json", input=stream)["rows"]
    grouped = doc("group --size 1,3 --delta 1e-6 --json", input=stream)["rows"]
    for i in (0, 17, 39, 45, 59):
        alone = json.dumps(objs[i])
        assert doc("convert --delta 1e-5,1e-9 --json", input=alone)["rows"] == many[2 * i : 2 * i + 2]
        if i < 40:
            assert doc("group --size 1,3 --delta 1e-6 --json", input=alone)["rows"] == grouped[2 * i : 2 * i + 2]


def test_more_piped_objects_than_rows_allowed_are_refused_before_computing():
    stream = "\n".join(json.dumps({"type": "gaussian", "sigma": 1.0 + i * 1e-6}) for i in range(100_001))
    for cmd in ("convert --delta 1e-5", "group --size 2"):
        r = run(cmd, input=stream)
        assert r.exit_code == 2 and "more than 100000 objects" in r.stderr


def test_a_small_budget_is_decided_at_its_scale_in_compose(tmp_path):
    """A ledger (and a piped object) whose total's certified interval contains a budget of 1e-5 at the default
    width ([0, 1.9e-5] for q = 1e-5, σ = 30, 100 steps, δ = 1e-8; the true ε is about 8e-6) is computed again at
    the width an inverse search for the budget uses: the check passes, the release's own row is at the same width,
    and a note says so. RDP alone is not touched (no interval), nor an explicit --pld-width."""
    book = tmp_path / "tiny.toml"
    book.write_text(
        '[ledger]\nname = "tiny"\ndelta = 1e-8\nmax_epsilon = 1e-5\n\n[[release]]\nname = "model"\n'
        'mechanism = "gaussian"\nnoise_multiplier = 30\nrate = 1e-5\ntimes = 100\n'
    )
    r = CliRunner().invoke(cli, ["compose", "--ledger", str(book), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    total = [x for x in d["rows"] if x["kind"] == "total" and x["tightest"]][0]
    release = [x for x in d["rows"] if x["kind"] == "release"][0]
    assert total["epsilon_lower"] <= total["epsilon"] <= 1e-5 and release["epsilon"] == total["epsilon"]
    assert any("--pld-width 1e-05" in n for n in d["notes"])
    kept = CliRunner().invoke(cli, ["compose", "--ledger", str(book), "--pld-width", "1e-3", "--json"])
    assert kept.exit_code == 1
    obj = CliRunner().invoke(cli, "plan-sgd --rate 1e-5 --steps 100 --sigma 30 --delta 1e-8 --json".split()).stdout
    piped = CliRunner().invoke(cli, "compose --delta 1e-8 --max-epsilon 1e-5 --json".split(), input=obj)
    assert piped.exit_code == 0 and json.loads(piped.stdout)["rows"][0]["epsilon"] == total["epsilon"]
    rdp = CliRunner().invoke(cli, "compose --delta 1e-8 --max-epsilon 1e-5 --accountant rdp".split(), input=obj)
    assert rdp.exit_code == 1


def test_compose_mixed_decides_a_small_budget_at_its_scale():
    args = "compose mixed --subsampled-gaussian 1e-5,30,100 --delta 1e-8,1e-6 --max-epsilon 1e-5 --json".split()
    r = run(args)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    pld = [x for x in d["rows"] if x["method"] == "pld"]
    assert len(pld) == 2 and all(x["epsilon_lower"] <= x["epsilon"] <= 1e-5 for x in pld)
    assert any("--pld-width 1e-05" in n for n in d["notes"])
    assert run(args + ["--pld-width", "1e-3"]).exit_code == 1


def test_compose_discrete_decides_a_small_budget_at_its_scale():
    """A discrete Gaussian's k runs (σ = 30000, 100 runs, δ = 1e-8: [0.0011711, 0.0012231] at the default width,
    about 0.0012216 for the continuous Gaussian of the same σ) against a budget of 0.001222 inside that interval:
    the row is computed again at the budget's scale, its upper end meets the budget, both intervals are certified
    (they intersect), and a note says so. An explicit --pld-width, or RDP alone, keeps the row as it was."""
    args = "compose discrete-gaussian --sigma 30000 --times 100 --delta 1e-8 --json".split()
    plain = json.loads(run(args).stdout)
    r = run(args + ["--max-epsilon", "0.001222"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    (before,) = [x for x in plain["rows"] if x["method"] == "pld"]
    (after,) = [x for x in d["rows"] if x["method"] == "pld"]
    assert before["epsilon"] > 0.001222 >= after["epsilon"] and after["tightest"]
    assert max(before["epsilon_lower"], after["epsilon_lower"]) <= min(before["epsilon"], after["epsilon"])
    assert after["epsilon"] - after["epsilon_lower"] < before["epsilon"] - before["epsilon_lower"]
    assert any("--pld-width 0.0001" in n for n in d["notes"])
    assert run(args + ["--max-epsilon", "0.001222", "--pld-width", "1e-3"]).exit_code == 1
    assert run(args + ["--max-epsilon", "0.001222", "--accountant", "rdp"]).exit_code == 1
    # Two settings, one of them far from the budget: only the undecided row is computed again.
    two = json.loads(run(args[:3] + ["30000,3000"] + args[4:] + ["--max-epsilon", "0.001222"]).stdout)
    pld = {x["sigma"]: x for x in two["rows"] if x["method"] == "pld"}
    assert pld[30000]["epsilon"] == after["epsilon"]
    assert (
        pld[3000]["epsilon"]
        == [x for x in json.loads(run(args[:3] + ["3000"] + args[4:]).stdout)["rows"] if x["method"] == "pld"][0][
            "epsilon"
        ]
    )


def test_amplify_decides_a_small_budget_at_its_scale():
    """amplify gaussian, as plan-sgd: q = 1e-5, σ = 30, 100 steps, δ = 1e-8 is [0, 1.9e-5] at the default width and
    about 8e-6 in truth; a budget of 1e-5 passes once the row is computed again at the budget's scale (the same
    interval plan-sgd gives there), and a note says so. An explicit --pld-width keeps the row as it was."""
    args = "amplify gaussian --sigma 30 --rate 1e-5 --steps 100 --delta 1e-8 --max-epsilon 1e-5 --json".split()
    r = run(args)
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    (row,) = [x for x in d["rows"] if x["method"] == "pld"]
    assert 0 < row["epsilon_lower"] <= row["epsilon"] <= 1e-5 and row["tightest"]
    assert any("--pld-width 1e-05" in n for n in d["notes"])
    plan = json.loads(
        run("plan-sgd --sigma 30 --rate 1e-5 --steps 100 --delta 1e-8 --max-epsilon 1e-5 --json".split()).stdout
    )
    assert [x["epsilon"] for x in plan["rows"] if x["method"] == "pld"] == [row["epsilon"]]
    assert run(args + ["--pld-width", "1e-3"]).exit_code == 1
