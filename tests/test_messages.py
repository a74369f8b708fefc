"""Every error names what the user can fix (issue 16, item 8).

For every option of every command, values outside its range, of the wrong
syntax, and valid but extreme values are tried on a working invocation. Each
either answers or fails with one ``Error:`` line, exit 2, whose every option
name is one the user can type on that command — never an internal parameter
('--i', '--o') or an option of another command ('--sigma' for calibrate).
"""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from dpcalc.cli import COMMANDS, cli
from dpcalc.cli.options import GridType, RecordType

#: A working invocation of each command (the options under test are added to it or replace its own).
BASE = {
    "calibrate gaussian": "--epsilon 1 --delta 1e-5",
    "calibrate laplace": "--epsilon 1",
    "calibrate discrete-gaussian": "--epsilon 1 --delta 1e-5",
    "calibrate discrete-laplace": "--epsilon 1",
    "calibrate randomized-response": "--epsilon 1 --k 4",
    "calibrate bounded-range": "--epsilon 1 --delta 1e-6",
    "convert gaussian": "--sigma 2 --delta 1e-5",
    "convert gdp": "--mu 1 --delta 1e-5",
    "convert dp": "--epsilon 1 --delta 1e-5 --to gdp",
    "convert zcdp": "--rho 0.5 --delta 1e-5",
    "convert rdp": "--orders 2,4 --values 0.1,0.3 --delta 1e-5",
    "convert discrete-gaussian": "--sigma 3 --delta 1e-5",
    "convert discrete-laplace": "--scale 4 --sensitivity 2 --delta 1e-5",
    "convert randomized-response": "--epsilon0 1 --k 4 --delta 1e-5",
    "convert bounded-range": "--epsilon0 1 --delta 1e-5",
    "convert audit": "--true-positives 830 --positives 1000 --false-positives 40 --negatives 1000",
    "compose dp": "--epsilon 1 --delta 1e-6 --times 10",
    "compose gaussian": "--sigma 2 --times 10 --delta 1e-5",
    "compose gdp": "--mu 0.5 --times 10 --delta 1e-5",
    "compose zcdp": "--rho 0.1 --times 10 --delta 1e-5",
    "compose mixed": "--gaussian 2,1,10 --delta 1e-5 --accountant rdp",
    "compose discrete-gaussian": "--sigma 3 --times 10 --delta 1e-5 --accountant rdp",
    "compose discrete-laplace": "--scale 4 --sensitivity 2 --times 10 --delta 1e-5 --accountant rdp",
    "compose randomized-response": "--epsilon 1 --k 4 --times 10 --delta 1e-5 --accountant rdp",
    "compose bounded-range": "--epsilon 0.5 --times 10 --delta 1e-5 --accountant rdp",
    "amplify dp": "--epsilon 1 --delta 1e-6 --rate 0.1",
    "amplify gaussian": "--sigma 1 --rate 0.01 --steps 10 --delta 1e-5 --accountant rdp",
    "group dp": "--epsilon 1 --delta 1e-6 --size 2",
    "group pure": "--epsilon 1 --size 2",
    "group gdp": "--mu 1 --size 2",
    "group zcdp": "--rho 1 --size 2",
    "group gaussian": "--sigma 2 --size 2 --delta 1e-5",
    "plan-sgd": "--dataset-size 60000 --batch-size 256 --epochs 1 --noise-multiplier 1.1 --delta 1e-5 --accountant rdp",
}
#: Valid or invalid, these must never produce a message that points at the wrong option.
EXTREME = ["5e-324", "1e-300", "1e-12", "0.999999", "1e12", "1e300", "1.7e308"]


def _leaves():
    root = click.Context(cli, info_name="dpcalc")
    for name in COMMANDS:
        cmd = cli.get_command(root, name)
        if isinstance(cmd, click.Group):
            for s in cmd.list_commands(root):
                sub = cmd.get_command(root, s)
                if not sub.hidden:
                    yield f"{name} {s}", sub
        else:
            yield name, cmd


LEAVES = dict(_leaves())


def _bad_values(param: click.Option) -> list[str]:
    t = param.type
    if isinstance(t, GridType):
        r = t.allowed
        out = ["abc", "", "nan", "1e309", "1_0"]
        if r.low is not None:
            out.append(repr(r.low - 1) if not r.low_open else repr(r.low))
        if r.high is not None:
            out.append(repr(r.high + 1) if not r.high_open else repr(r.high))
        if r.integer:
            out.append("2.5")
        return out + EXTREME
    if isinstance(t, RecordType):
        n = len(t.fields)
        return ["abc", ",".join(["-1"] * n), ",".join(["1e309"] * n), ",".join(["1.7e308"] * n)]
    if isinstance(t, click.Choice):
        return ["bogus"]
    return []


def _cases():
    for path, cmd in LEAVES.items():
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.is_flag and p.name not in ("fmt", "value"):
                for v in _bad_values(p):
                    yield path, max(p.opts, key=len), v


CASES = list(_cases())


def test_every_command_has_a_base_invocation():
    assert set(LEAVES) == set(BASE)


@pytest.mark.parametrize("path, option, value", CASES, ids=[f"{p} {o}={v}" for p, o, v in CASES])
def test_errors_name_options_the_user_can_type(path, option, value):
    base = BASE[path].split()
    if option in base:  # replace the base's own value
        i = base.index(option)
        del base[i : i + 2]
    args = [*path.split(), *base, option, value]
    r = CliRunner().invoke(cli, args)
    if r.exit_code in (0, 1):
        return
    assert r.exit_code == 2, (args, r.stderr, r.exception)
    assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, (args, r.stderr)
    typable = {o for p in LEAVES[path].params if isinstance(p, click.Option) for o in p.opts}
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", r.stderr))
    assert named <= typable, (args, r.stderr, named - typable)
    assert named or "these inputs" in r.stderr, (args, r.stderr)


@pytest.mark.parametrize(
    "args",
    [
        "calibrate bounded-range --rho 1e308",
        "calibrate gaussian --sensitivity 1e308 --epsilon 1 --delta 1e-5",
        "calibrate discrete-laplace --epsilon 1e-320",
    ],
)
def test_a_derived_value_beyond_floating_point_names_the_options_not_nan(args):
    """A value derived from the inputs that is not finite: the message names the options typed, and prints no
    nan or inf (it printed 'epsilon0 = nan', 'sigma = inf')."""
    r = CliRunner().invoke(cli, args.split())
    assert r.exit_code == 2
    line = r.output.strip()
    assert line.startswith("Error:") and "\n" not in line
    assert not re.search(r"\b(nan|inf)\b", line)
    assert args.split()[2] in line  # the first option typed, with its value


def test_a_byte_that_is_not_utf8_is_shown_as_hex():
    """A command-line byte that is not UTF-8 reaches Python as a lone surrogate (U+DCFF for 0xff): the message
    shows it as \\xff, in a value and in an option name, not as '\\udcff' or a replacement character; a
    backslash the user typed stays as typed."""
    import subprocess
    import sys

    def err(*args):
        r = subprocess.run(
            [sys.executable, "-m", "dpcalc", "calibrate", "gaussian", *args],
            capture_output=True,
            env={"PYTHONUTF8": "1", "PATH": "/usr/bin:/bin"},
        )
        assert r.returncode == 2 and r.stdout == b""
        return r.stderr.decode("utf-8", "replace")

    assert "'1\\xff' is not a number" in err(b"--epsilon", b"1\xff", b"--delta", b"1e-5")
    assert "No such option '--eps\\xffilon'" in err(b"--eps\xffilon", b"1", b"--delta", b"1e-5")
    assert "'1\\\\udcff' is not a number" in err("--epsilon", "1\\udcff", "--delta", "1e-5")


@pytest.mark.parametrize(
    "args, names",
    [
        # An overflow deep in the arithmetic named no option at all.
        ("compose mixed --gaussian 1e-300,1,1 --delta 1e-5", ["--gaussian 1e-300,1,1"]),
        ("compose mixed --laplace 1e-320,1,1 --delta 1e-5", ["--laplace 1e-320,1,1"]),
        # ρ·T past 1e308 was reported as the user having typed --rho inf.
        ("compose zcdp --rho 1e308 --times 2 --delta 1e-5", ["--rho 1e308", "--times 2"]),
    ],
)
def test_overflow_messages_name_what_was_typed(args, names):
    r = CliRunner().invoke(cli, args.split())
    assert r.exit_code == 2 and r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1
    assert all(n in r.stderr for n in names), r.stderr
    assert "'--rho': inf" not in r.stderr


def test_a_huge_mu_reads_a_trade_off_curve_not_an_overflow():
    """β at μ = 1e308 is 0 (past every double) for α > 0: it was NaN, refused as "too large to represent"."""
    r = CliRunner().invoke(cli, "convert gdp --mu 1e308 --to tradeoff --alpha 0,0.5,1 --json".split())
    assert r.exit_code == 0, r.stderr
    import json

    assert [row["beta"] for row in json.loads(r.stdout)["rows"]] == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "args, shown",
    [
        ("plan-sgd --users 10000:1000000:1000 --batch-size 256 --epochs 5 --noise-multiplier 1 --delta 1e-7",
         "the grid point 10990.99099099099099099099 of '10000:1000000:1000' is not a whole number (choose"),
        ("plan-sgd --rate 0.01 --steps 1:10:3 --noise-multiplier 1 --delta 1e-5",
         "the grid point 5.5 of '1:10:3' is not a whole number (choose"),
        # past 10^14 a 15-digit display rounded the point to a whole number
        ("plan-sgd --rate 0.01 --steps 123456789012345:123456789012346:3 --noise-multiplier 1 --delta 1e-5",
         "the grid point 123456789012345.5 of"),
        # past 2^52 the point itself was rounded to a whole number, and accepted
        ("plan-sgd --rate 0.01 --steps 4503599627370496:4503599627370497:3 --noise-multiplier 1 --delta 1e-5",
         "the grid point 4503599627370496.5 of"),
        # a :log range has no additive step: no advice about one
        ("plan-sgd --rate 0.01 --steps 1:10:3:log --noise-multiplier 1 --delta 1e-5",
         "the grid point 3.16227766016838 of '1:10:3:log' is not a whole number; expected"),
    ],
)  # fmt: skip
def test_a_grid_point_that_is_not_whole_is_named_as_such(args, shown):
    """A whole-number range whose points are not all whole: the point is shown exactly and called not whole
    (it was shown rounded, "10991 is out of range; expected a whole number in [1, …]", as if it were inside;
    past 2^52 it was rounded to a whole number and accepted)."""
    r = CliRunner().invoke(cli, args.split())
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and shown in lines[0] and "out of range" not in lines[0]
    assert "--users" in lines[0] or "--steps" in lines[0]
    assert ("(choose START:STOP:N" in lines[0]) == (":log" not in args)


@pytest.mark.parametrize(
    "raised, code",
    [
        (MemoryError("Unable to allocate 184. MiB for an array with shape (24148182,) and data type float64"), 2),
        (MemoryError(), 2),
        # the engine's own size limit, as a signal: caught where it arises; one that escaped is a bug
        (MemoryError("PLD grid of 123456789 points exceeds the limit 67108864"), 3),
    ],
)
def test_running_out_of_memory_is_one_line_and_exit_2(monkeypatch, raised, code):
    """A computation too large for the machine is not a bug: one line naming what was typed, the allocation
    refused, and what to do. The engine's own MemoryErrors (size limits, with their own text) stay internal."""
    from dpcalc.core import gdp

    def no_memory(*a, **k):
        raise raised

    monkeypatch.setattr(gdp, "epsilon", no_memory)
    r = CliRunner().invoke(cli, ["convert", "gdp", "--mu", "1", "--delta", "1e-5"])
    assert r.exit_code == code, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1
    if code == 2:
        assert lines[0].startswith("Error: out of memory for these inputs (--mu 1, --delta 1e-5) (")
        assert "fewer grid points" in lines[0] and "internal error" not in lines[0]
        assert (str(raised) or "MemoryError") in lines[0]
    else:
        assert "internal error" in lines[0] and str(raised) in lines[0]


@pytest.mark.parametrize(
    "lower, upper, shown",
    [
        (1.0, 1.001002, "(0.001002 > 0.001001: "),  # at 3 digits both read 0.001: more digits, never "0.001 > 0.001"
        (1.0, 1.5, "(0.5 > 0.0015: "),
        (1.0, 1.0009, "(0.0009 against 0.001: "),  # the engine's verdict, not this comparison: no false ">"
    ],
)
def test_width_warning_compares_widths_with_digits_enough(lower, upper, shown):
    from dpcalc.cli._common import width_warnings

    (msg,) = width_warnings(["row"], [lower], [upper], [False])
    assert shown in msg and msg.endswith("both ends are still certified bounds.")
