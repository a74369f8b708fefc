"""CLI fuzz: generated argument lists never give a traceback, NaN or inf."""

import re

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc.cli import cli

COMMANDS = {
    ("calibrate", "gaussian"): ["--epsilon", "--delta", "--mu", "--rho", "--sensitivity", "--method"],
    ("calibrate", "laplace"): ["--epsilon", "--sensitivity"],
    ("convert", "gaussian"): ["--sigma", "--sensitivity", "--delta", "--epsilon", "--to", "--alpha", "--fpr"],
    ("convert", "gdp"): ["--mu", "--delta", "--epsilon", "--to", "--alpha", "--fpr"],
    ("convert", "dp"): ["--epsilon", "--delta", "--to", "--sensitivity", "--alpha", "--fpr"],
    ("convert", "zcdp"): ["--rho", "--delta"],
    ("convert", "rdp"): ["--orders", "--values", "--delta", "--epsilon"],
    ("compose", "dp"): ["--epsilon", "--delta", "--times", "--delta-prime", "--release"],
    ("compose", "gaussian"): ["--sigma", "--sensitivity", "--times", "--delta", "--release"],
    ("compose", "gdp"): ["--mu", "--times", "--delta", "--release"],
    ("compose", "zcdp"): ["--rho", "--times", "--delta", "--release"],
    ("compose", "mixed"): ["--gaussian", "--subsampled-gaussian", "--laplace", "--delta"],
    ("compose", "discrete-gaussian"): ["--sigma", "--sensitivity", "--times", "--delta", "--accountant"],
    ("compose", "discrete-laplace"): ["--scale", "--sensitivity", "--times", "--delta", "--accountant"],
    ("compose", "randomized-response"): ["--epsilon", "--k", "--times", "--delta", "--accountant"],
    ("compose", "bounded-range"): ["--epsilon", "--times", "--delta", "--accountant"],
    ("convert", "discrete-gaussian"): ["--sigma", "--sensitivity", "--delta", "--epsilon", "--to", "--alpha", "--fpr"],
    ("convert", "discrete-laplace"): ["--scale", "--sensitivity", "--delta", "--epsilon", "--to", "--alpha", "--fpr"],
    ("convert", "randomized-response"): ["--epsilon0", "--k", "--delta", "--epsilon", "--to", "--alpha", "--fpr"],
    ("convert", "bounded-range"): ["--epsilon0", "--delta", "--epsilon", "--to", "--alpha", "--fpr"],
    ("amplify", "dp"): ["--epsilon", "--delta", "--rate", "--scheme"],
    ("amplify", "gaussian"): ["--sigma", "--rate", "--steps", "--delta", "--orders"],
    ("group", "dp"): ["--epsilon", "--delta", "--size"],
    ("group", "gdp"): ["--mu", "--size"],
    ("group", "zcdp"): ["--rho", "--size"],
    ("group", "gaussian"): ["--sigma", "--sensitivity", "--size", "--delta"],
    ("plan-sgd",): [
        "--dataset-size",
        "--batch-size",
        "--rate",
        "--epochs",
        "--steps",
        "--noise-multiplier",
        "--delta",
        "--target-epsilon",
        "--accountant",
        "--per-epoch",
        "--solve",
    ],
}

NUMBERS = [
    "0",
    "1",
    "-1",
    "0.5",
    "1e-300",
    "1e-12",
    "1e-5",
    "0.999999",
    "1.5",
    "2",
    "3",
    "60000",
    "256",
    "1e3",
    "1e6",
    "1e9",
    "1e300",
    "nan",
    "inf",
    "-inf",
    "abc",
    "",
    "1,2",
    "1:10:3",
    "1e-9:1:4:log",
    "0.05",
    "1e5",
    "0.01,1.1,1000",
    "2,1,3",
    "0.5,1e-6,10",
    "analytic",
    "classical",
    "dp",
    "tradeoff",
    "attack",
    "gdp",
    "zcdp",
    "rdp",
    "all",
    "pld",
    "gdp-clt",
    "poisson",
    "both",
    "epochs",
    "noise-multiplier",
    "batch-size",
]

args_st = st.sampled_from(sorted(COMMANDS)).flatmap(
    lambda cmd: st.lists(
        st.tuples(st.sampled_from(COMMANDS[cmd]), st.sampled_from(NUMBERS)), min_size=0, max_size=6
    ).map(lambda pairs: list(cmd) + [x for p in pairs for x in (p if p[0] != "--per-epoch" else p[:1])])
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args_st, st.booleans())
def test_no_traceback_no_nan(args, as_json):
    if as_json:
        args = args + ["--json"]
    r = CliRunner().invoke(cli, args)
    out = r.stdout + r.stderr
    assert r.exit_code in (0, 1, 2), (args, out, r.exception)
    assert "Traceback" not in out
    assert "internal error" not in out, (args, out)
    assert "Warning" not in out, (args, out)
    if r.exit_code == 0:
        assert not re.search(r"\b(nan|inf|-inf|Infinity|NaN)\b", r.stdout), (args, r.stdout)
    else:
        assert r.stderr.strip().count("\n") == 0 or r.stderr.startswith("Usage"), (args, r.stderr)


EXTREMES = [
    "calibrate gaussian --epsilon 1e3 --delta 1e-300",
    "calibrate gaussian --epsilon 1e-6 --delta 1e-300",
    "compose dp --epsilon 1e3 --delta 0 --times 1e9",
    "compose dp --epsilon 1e-6 --delta 1e-12 --times 1e6",
    "compose gaussian --sigma 0.05 --times 1e9 --delta 1e-300",
    "compose zcdp --rho 1e3 --times 1e9 --delta 1e-300",
    "group dp --epsilon 1e3 --delta 1e-300 --size 1e6",
    "group zcdp --rho 1e3 --size 1e6",
    "plan-sgd --rate 1e-9 --steps 1e9 --sigma 0.05 --delta 1e-300",
    "plan-sgd --rate 1 --steps 1e9 --sigma 0.05 --delta 1e-300",
    "plan-sgd --rate 1e-9 --steps 1 --sigma 1e5 --delta 1e-300",
    "amplify gaussian --sigma 1e5 --rate 1 --steps 1e9",
    "amplify dp --epsilon 1e3 --delta 0.5 --rate 1e-9",
    "convert gdp --mu 1e3 --delta 1e-300",
    "convert gaussian --sigma 0.05 --epsilon 1e3",
    "convert zcdp --rho 1e-300 --delta 1e-300",
    "convert dp --epsilon 1e3 --delta 1e-300 --to gdp",
    "convert rdp --orders 2 --values 0.1 --epsilon 1e3",
    "compose discrete-gaussian --sigma 0.05 --times 1e9 --delta 1e-300",
    "compose discrete-gaussian --sigma 1e5 --sensitivity 2147483647 --times 1e6 --delta 1e-300",
    "compose randomized-response --epsilon 1e3 --k 2147483647 --times 1e9 --delta 1e-300",
    "compose bounded-range --epsilon 1e-300 --times 1e9 --delta 1e-300",
    "compose discrete-laplace --scale 1e-3 --sensitivity 1048575 --times 1e6 --delta 1e-300",
    "convert discrete-gaussian --sigma 0.05 --epsilon 1e3",
    "convert bounded-range --epsilon0 1e3 --delta 1e-300",
    "convert randomized-response --epsilon0 1e-300 --k 2147483647 --epsilon 0",
]


@pytest.mark.parametrize("args", EXTREMES)
def test_extremes_give_finite_sound_numbers(args):
    import json

    r = CliRunner().invoke(cli, args.split() + ["--json"])
    assert r.exit_code == 0, r.stderr
    doc = json.loads(r.stdout)
    for row in doc["rows"]:
        for key in ("epsilon", "delta", "mu", "rho"):
            v = row.get(key)
            if isinstance(v, float):
                assert v >= 0
        # A printed δ of exactly 0 must come from an input δ of 0, not underflow.
        if row.get("delta") == 0.0:
            assert doc["inputs"].get("delta", 0) == 0


PIPE_INPUTS = [
    "",
    "{",
    "[]",
    "null",
    "42",
    '{"type": "gaussian", "sigma": 1e-300}',
    '{"type": "gaussian", "sigma": 1e300}',
    '{"type": "dp", "epsilon": 1e3, "delta": 0.999}',
    '{"type": "gdp", "mu": 1e200}',
    '{"type": "rdp", "orders": [2], "values": [1e300]}',
    '{"schema_version": 1, "objects": [{"type": "zcdp", "rho": 0}]}',
    '{"type": "subsampled", "rate": 1e-9, "inner": {"type": "gaussian", "sigma": 0.05}}',
    '{"type": "composed", "parts": [{"times": 1e9, "of": {"type": "laplace", "scale": 1e-5}}]}',
    '{"type": "subsampled", "rate": 0.5, "inner": {"type": "subsampled", "rate": 0.5, "inner": {"type": "gdp"}}}',
    '{"type": "discrete_gaussian", "sigma": 1e300, "sensitivity": 3}',
    '{"type": "discrete_laplace", "scale": 1e-300}',
    '{"type": "randomized_response", "epsilon": 1e300, "k": 2147483647}',
    '{"type": "composed", "parts": [{"times": 1e9, "of": {"type": "bounded_range", "epsilon": 1e-5}}]}',
]
PIPE_ARGS = [
    "compose --delta 1e-5",
    "compose --times 1e9 --delta 1e-300",
    "amplify --rate 1e-9",
    "group --size 1e6",
    "convert --delta 1e-300",
    "convert --epsilon 1e3",
    "compose --ledger /dev/null --delta 1e-5",
]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(PIPE_ARGS), st.sampled_from(PIPE_INPUTS), st.booleans())
def test_pipe_input_never_crashes(args, stdin, as_json):
    r = CliRunner().invoke(cli, args.split() + (["--json"] if as_json else []), input=stdin)
    out = r.stdout + r.stderr
    assert r.exit_code in (0, 1, 2), (args, stdin, out, r.exception)
    assert "Traceback" not in out and "internal error" not in out and "Warning" not in out, (args, stdin, out)
    if r.exit_code == 2:
        assert r.stderr.startswith("Error:") and r.stderr.count("\n") == 1, (args, stdin, r.stderr)


@pytest.mark.parametrize("args", EXTREMES[:6] + ["compose --ledger examples/privacy.toml"])
def test_same_command_same_bytes(args, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    outs = {CliRunner().invoke(cli, args.split()).stdout for _ in range(3)}
    assert len(outs) == 1
