"""Issue 16, output side: terminal-safe text, Unix exit statuses, encodings, the plain table renderer.

Process-level behaviour (pipes, signals, closed or full streams, encodings) is tested on a real
``python -m dpcalc`` subprocess.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpcalc.model import Column, Result
from dpcalc.render import GuardedStream, OutputError, clean, render, spell, table_text, warn

ROOT = Path(__file__).resolve().parent.parent
CONVERT = ["convert", "gdp", "--mu", "0.5:2:3", "--delta", "1e-5"]
BIG = ["convert", "gdp", "--mu", "0.01:10:10000", "--delta", "1e-5"]  # 10,000 rows, ~0.5 MB of table
SLOW = [  # five PLD accountings of 30 million steps: tens of seconds
    "plan-sgd",
    "--dataset-size",
    "1000000000",
    "--batch-size",
    "100",
    "--epochs",
    "3",
    "--noise-multiplier",
    "0.6,0.7,0.8,0.9,1.0",
    "--delta",
    "1e-9",
]
WARNS = ["plan-sgd", "--dataset-size", "100", "--batch-size", "10", "--epochs", "1", "--noise-multiplier", "1"]
WARNS += ["--delta", "0.1"]  # δ ≥ 1/N: a warning on stderr, in a fraction of a second

NAMES = ["[bold]x[/bold] [red]y", "[/]", "a\x1b[2Jb", "bell\x07 del\x7f csi\x9b nl\nend", "rlo\u202eevil", ":smile:"]


def env(**extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "NO_COLOR", "PYTHONUNBUFFERED")}
    e.update(PYTHONPATH=str(ROOT), **extra)
    return e


def dpcalc(*args: str, **kw) -> subprocess.CompletedProcess:
    kw.setdefault("capture_output", True)
    kw["env"] = env(**kw.pop("extra_env", {}))
    kw.setdefault("cwd", ROOT)  # python -m puts the working directory first on sys.path
    return subprocess.run([sys.executable, "-m", "dpcalc", *args], timeout=120, **kw)


def shell(script: str, **extra_env: str) -> subprocess.CompletedProcess:
    """Run a bash script; "$DPCALC" is the dpcalc command line."""
    e = env(DPCALC=f"{sys.executable} -m dpcalc", **extra_env)
    return subprocess.run(["bash", "-c", script], capture_output=True, env=e, timeout=120, cwd=ROOT)


def result_with_names(names, **kw) -> Result:
    cols = (
        Column("entry", "release", "text"),
        Column("epsilon", "ε", "float", "up"),
        Column("delta", "δ", "float"),
        Column("method", "method", "text"),
        Column("bound", "bound", "text"),
    )
    rows = tuple(
        {"entry": n, "epsilon": 0.1 * (i + 1), "delta": 1e-6, "method": "gdp", "bound": "exact"}
        for i, n in enumerate(names)
    )
    return Result(command="compose", inputs={}, columns=cols, rows=rows, **kw)


def ledger(tmp_path: Path, names) -> Path:
    body = "[ledger]\ndelta = 1e-6\n"
    for n in names:
        body += f'[[release]]\nname = {json.dumps(n)}\nmechanism = "gaussian"\nsigma = 20\n'
    path = tmp_path / "ledger.toml"
    path.write_text(body, encoding="utf-8")
    return path


CONTROL = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0), 0x202E]}


# --------------------------------------------------------------------------
# Terminal-safe text
# --------------------------------------------------------------------------


def test_table_cells_title_and_notes_are_never_markup():
    r = result_with_names(NAMES[:2], notes=("largest is '[/]' [bold]",), warnings=("w [/]",))
    out, err = io.StringIO(), io.StringIO()
    render(r, out=out, err=err)
    text = out.getvalue()
    assert "[bold]x[/bold] [red]y" in text
    assert "  [/]  " in text
    assert "  largest is '[/]' [bold]" in text
    assert err.getvalue() == "warning: w [/]\n"


def test_control_characters_become_replacement_characters_in_text_for_people():
    r = result_with_names(NAMES, notes=("note \x1b[31mred",), warnings=("release 'a\x1b[2Jb' is large",))
    out, err = io.StringIO(), io.StringIO()
    render(r, out=out, err=err)
    text, warned = out.getvalue(), err.getvalue()
    assert not CONTROL & set(text.replace("\n", "")), "a control character reached the table"
    assert not CONTROL & set(warned.rstrip("\n"))
    assert "a\ufffd[2Jb" in text
    assert "bell\ufffd del\ufffd csi\ufffd nl\ufffdend" in text
    assert "rlo\ufffdevil" in text
    assert ":smile:" in text  # no emoji codes either
    assert "  note \ufffd[31mred" in text
    assert warned == "warning: release 'a\ufffd[2Jb' is large\n"
    # One line per row: the newline in a name did not break the table.
    assert len(text.splitlines()) == 2 + 2 + len(NAMES) + 1 + 1


def test_title_and_warn_are_cleaned():
    r = Result(command="x\x1b]0;title\x07", inputs={}, columns=(Column("a", "a", "int"),), rows=({"a": 1},))
    assert table_text(r).splitlines()[0] == "x\ufffd]0;title\ufffd"
    err = io.StringIO()
    warn("two\nlines", err)
    assert err.getvalue() == "warning: two\ufffdlines\n"
    assert clean("ok ε [b]") == "ok ε [b]"


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv"])
def test_machine_output_carries_names_verbatim(fmt):
    r = result_with_names(NAMES)
    out, err = io.StringIO(), io.StringIO()
    render(r, fmt, out=out, err=err)
    text = out.getvalue()
    if fmt == "json":
        got = [row["entry"] for row in json.loads(text)["rows"]]
    elif fmt == "ndjson":
        got = [json.loads(line)["entry"] for line in text.splitlines()]
    else:
        got = [row["entry"] for row in csv.DictReader(io.StringIO(text, newline=""))]
    assert got == NAMES


def test_lone_surrogate_in_a_name():
    r = result_with_names(["bad\udcff"])
    out = io.StringIO()
    render(r, out=out, err=io.StringIO())
    assert "bad\ufffd" in out.getvalue()
    for fmt in ("json", "ndjson"):
        out = io.StringIO()
        render(r, fmt, out=out, err=io.StringIO())
        assert "\\udcff" in out.getvalue()
        out.getvalue().encode("utf-8")  # writable to any UTF-8 stdout, and the value is kept
        assert '"bad\\udcff"' in out.getvalue()
    with pytest.raises(OutputError, match="U\\+DCFF"):
        render(r, "csv", out=io.StringIO(), err=io.StringIO())


def test_ledger_names_end_to_end(tmp_path):
    path = ledger(tmp_path, NAMES[:3])
    r = dpcalc("compose", "--ledger", str(path))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "[bold]x[/bold] [red]y" in out and "[/]" in out and "a\ufffd[2Jb" in out
    assert b"\x1b" not in r.stdout + r.stderr
    r = dpcalc("compose", "--ledger", str(path), "--json")
    assert r.returncode == 0, r.stderr
    names = [row.get("entry") for row in json.loads(r.stdout)["rows"]]
    assert all(n in names for n in NAMES[:3])


def test_error_lines_are_one_line_without_control_characters(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(
        '[ledger]\ndelta = 1e-6\n[[release]]\nname = "a\\u001b[2J\\nb"\nmechanism = "gaussian"\nsigma = -1\n'
    )
    r = dpcalc("compose", "--ledger", str(path))
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("Error: ") and err.count("\n") == 1
    assert not CONTROL & set(err.rstrip("\n"))


# --------------------------------------------------------------------------
# The plain table renderer
# --------------------------------------------------------------------------


def _rich_table(result: Result) -> str:
    """The table as dpcalc 0.1 printed it with rich (cells as Text, no markup), trailing spaces removed."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from dpcalc.render import _cell

    buf = io.StringIO()
    console = Console(file=buf, no_color=True, highlight=False, soft_wrap=True, width=10_000)
    table = Table(title=Text(result.command), box=box.SIMPLE_HEAD, title_justify="left")
    for col in result.columns:
        justify = "right" if col.kind in ("float", "int") else "left"
        table.add_column(Text(col.label), justify=justify, no_wrap=True, overflow="fold")
    for row in result.rows:
        table.add_row(*[Text(_cell(c, row.get(c.key))) for c in result.columns])
    console.print(table)
    for note in result.notes:
        console.print(Text(f"  {note}"))
    return "\n".join(line.rstrip(" ") for line in buf.getvalue().split("\n"))


def test_plain_renderer_matches_rich_layout():
    pytest.importorskip("rich")
    import random

    rng = random.Random(16)
    cols = (
        Column("entry", "release", "text"),
        Column("times", "k", "int"),
        Column("epsilon", "ε", "float", "up"),
        Column("epochs", "epochs", "float", "down"),
        Column("delta", "δ", "float"),
        Column("tightest", "tightest", "bool"),
        Column("method", "method", "text"),
        Column("bound", "bound", "text"),
    )
    names = ["a", "中文の名前", "émoji 😀", "e\u0301te\u0301", "", "x" * 40, "[/]"]
    rows = tuple(
        {
            "entry": rng.choice(names),
            "times": rng.choice([1, 10, 123456, None]),
            "epsilon": rng.random() * 10 ** rng.randint(-9, 9),
            "epochs": rng.random() * 100,
            "delta": rng.choice([1e-5, 1e-300, 0.0, None]),
            "tightest": rng.choice([True, False, None]),
            "method": rng.choice(["pld", "rdp"]),
            "bound": rng.choice(["exact", "upper", "approximate"]),
        }
        for _ in range(400)
    )
    r = Result(command="compose", inputs={}, columns=cols, rows=rows, notes=("one note", "ε ≥ note"))
    assert table_text(r) == _rich_table(r)
    empty = Result(command="compose", inputs={}, columns=cols, rows=())
    assert table_text(empty) == _rich_table(empty)


def test_no_trailing_spaces_when_piped():
    r = dpcalc(*CONVERT)
    assert r.returncode == 0
    lines = r.stdout.decode().split("\n")
    assert all(line == line.rstrip(" ") for line in lines)
    assert "   0.5    1.9931   1e-05   gdp      exact" in lines
    assert b"\x1b" not in r.stdout


class _Tty(io.StringIO):
    def isatty(self):
        return True


def _approximate_result() -> Result:
    cols = (Column("epsilon", "ε", "float", "up"), Column("bound", "bound", "text"))
    rows = ({"epsilon": 1.0, "bound": "upper"}, {"epsilon": 0.5, "bound": "approximate"})
    return Result(command="convert gdp", inputs={}, columns=cols, rows=rows)


def test_terminal_styles(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    out = _Tty()
    render(_approximate_result(), out=out, err=io.StringIO())
    lines = out.getvalue().splitlines()
    assert lines[0] == "\x1b[3mconvert gdp\x1b[0m"
    assert lines[2].startswith("\x1b[1m")
    assert "\x1b[33m" not in lines[4] and lines[5].startswith("\x1b[33m") and lines[5].endswith("\x1b[0m")
    monkeypatch.setenv("NO_COLOR", "1")
    out = _Tty()
    render(_approximate_result(), out=out, err=io.StringIO())
    assert "\x1b[33m" not in out.getvalue() and "\x1b[1m" in out.getvalue()
    monkeypatch.setenv("TERM", "dumb")
    out = _Tty()
    render(_approximate_result(), out=out, err=io.StringIO())
    assert "\x1b" not in out.getvalue()


def test_output_is_written_in_one_piece_or_not_at_all():
    class Bad:
        def __str__(self):
            raise ValueError("cannot show this value")

    r = result_with_names(["a", "b"])
    rows = (r.rows[0], {**r.rows[1], "entry": Bad()})
    bad = Result(command="c", inputs={}, columns=r.columns, rows=rows, warnings=("w",))
    for fmt in ("table", "json", "csv", "ndjson"):
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises((ValueError, TypeError)):
            render(bad, fmt, out=out, err=err)
        assert out.getvalue() == "" and err.getvalue() == "", fmt


# --------------------------------------------------------------------------
# Broken pipe, interrupts, write errors, closed streams
# --------------------------------------------------------------------------


@pytest.mark.parametrize("unbuffered", ["", "1"])
@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_broken_pipe_is_quiet_141(fmt, unbuffered):
    p = subprocess.Popen(
        [sys.executable, "-m", "dpcalc", *BIG, "--format", fmt],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(PYTHONUNBUFFERED=unbuffered),
        cwd=ROOT,
    )
    assert p.stdout is not None and p.stderr is not None
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=120) == 141
    assert first
    assert err == b""


def test_head_in_a_shell_pipeline():
    r = shell(
        'set -o pipefail; $DPCALC convert gdp --mu 0.01:10:10000 --delta 1e-5 | head -1; echo "status ${PIPESTATUS[*]}"'
    )
    assert r.stdout.decode().splitlines() == ["convert gdp", "status 141 0"]
    assert r.stderr == b""


def test_sigint_gives_one_line_and_130():
    p = subprocess.Popen(
        [sys.executable, "-m", "dpcalc", *SLOW], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(), cwd=ROOT
    )
    time.sleep(3)
    assert p.poll() is None, "the command finished before it could be interrupted; pick a slower one"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130
    assert err == b"Error: interrupted.\n"
    assert out == b""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [CONVERT, [*CONVERT, "--json"], [*CONVERT, "--format", "csv"], BIG, ["-h"]])
def test_full_disk_gives_74_and_one_line(args):
    with open("/dev/full", "w") as full:
        r = dpcalc(*args, stdout=full, capture_output=False, stderr=subprocess.PIPE)
    assert r.returncode == 74
    err = r.stderr.decode()
    assert err.startswith("Error: cannot write to stdout (") and err.endswith(").\n") and err.count("\n") == 1


@pytest.mark.parametrize("args", [CONVERT, [*CONVERT, "--json"], ["-V"]])
def test_closed_stdout_gives_74(args):
    r = subprocess.run(
        ["bash", "-c", 'exec "$@" >&-', "_", sys.executable, "-m", "dpcalc", *args],
        capture_output=False,
        stderr=subprocess.PIPE,
        env=env(),
        timeout=120,
        cwd=ROOT,
    )
    assert r.returncode == 74
    assert r.stderr == b"Error: cannot write to stdout (it is closed).\n"


def test_usage_error_with_closed_stdout_is_still_2():
    r = subprocess.run(
        ["bash", "-c", 'exec "$@" >&-', "_", sys.executable, "-m", "dpcalc", "convert", "gdp", "--mu", "-1"],
        stderr=subprocess.PIPE,
        env=env(),
        timeout=120,
        cwd=ROOT,
    )
    assert r.returncode == 2 and r.stderr.startswith(b"Error: ")


@pytest.mark.parametrize("redirect", ["<&-", "0>>{tmp}/write-only"])
def test_closed_or_unreadable_stdin_gives_2(redirect, tmp_path):
    r = shell(f"$DPCALC convert {redirect.format(tmp=tmp_path)}")
    assert r.returncode == 2
    err = r.stderr.decode()
    assert err.startswith("Error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_streams_are_restored_after_main():
    from click.testing import CliRunner

    from dpcalc.cli import cli

    before = sys.stdout, sys.stderr
    r = CliRunner().invoke(cli, CONVERT)
    assert r.exit_code == 0 and "1.9931" in r.stdout
    assert (sys.stdout, sys.stderr) == before


def test_guarded_stream_refuses_bytes_and_names_faults():
    class Broken(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

    class Full(io.StringIO):
        def write(self, s):
            raise OSError(28, "No space left on device")

    with pytest.raises(TypeError):  # click checks this to tell text streams from binary ones
        GuardedStream("stdout", io.StringIO()).write(b"")
    inner = io.StringIO()
    GuardedStream("stdout", inner).write("σ = 1\n".encode())  # click 8.5 echoes the completion script as bytes
    assert inner.getvalue() == "σ = 1\n"
    with pytest.raises(OutputError) as e:
        GuardedStream("stdout", Broken()).write("x")
    assert e.value.broken_pipe
    with pytest.raises(OutputError) as e:
        GuardedStream("stdout", Full()).write("x")
    assert str(e.value) == "cannot write to stdout (No space left on device)" and not e.value.broken_pipe
    with pytest.raises(OutputError, match="it is closed"):
        GuardedStream("stdout", None).write("x")


# --------------------------------------------------------------------------
# Encodings
# --------------------------------------------------------------------------


def test_ascii_spellings():
    assert spell("εδσμρΔαβ", "ascii") == "epsdeltasigmamurhoDeltaalphabeta"
    assert spell("≥ ≤ × √ ′ – — · ∞ − ─", "ascii") == ">= <= x sqrt ' - - * inf - -"
    assert spell("σ² at 10⁻⁶, ε₀, café, 中", "ascii") == "sigma^2 at 10^-6, eps_0, cafe, ?"
    assert spell("σ² × 2 · ε", "latin-1") == "sigma² × 2 · eps"  # only what latin-1 lacks is spelled
    assert spell("ε\ufffd", "utf-8") == "ε\ufffd"


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_table_and_warnings_in_a_narrow_encoding(encoding):
    r = dpcalc(*CONVERT, extra_env={"PYTHONIOENCODING": encoding})
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("ascii")
    assert "    mu       eps   delta   method   bound" in out.splitlines()
    assert " " + "-" * 41 in out.splitlines()
    assert "   0.5    1.9931   1e-05   gdp      exact" in out.splitlines()
    r = dpcalc(*WARNS, extra_env={"PYTHONIOENCODING": encoding})
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode("ascii")
    assert "warning: delta is at least 1/N" in err and "?" not in err
    assert "eps" in r.stdout.decode("ascii")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_json_in_a_narrow_encoding_has_the_same_values(encoding):
    utf8 = dpcalc(*CONVERT, "--json")
    narrow = dpcalc(*CONVERT, "--json", extra_env={"PYTHONIOENCODING": encoding})
    assert narrow.returncode == 0, narrow.stderr
    assert narrow.stdout.isascii()
    assert json.loads(narrow.stdout.decode("ascii")) == json.loads(utf8.stdout.decode("utf-8"))
    assert json.loads(narrow.stdout)["columns"][1]["label"] == "ε"


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize("args", [["-h"], ["convert", "gdp", "-h"], ["plan-sgd", "-h"]])
def test_help_in_a_narrow_encoding(encoding, args):
    r = dpcalc(*args, extra_env={"PYTHONIOENCODING": encoding})
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode(encoding)
    assert text.startswith("Usage: dpcalc") and r.stderr == b""
    assert "ε" not in text and "?" not in text.replace("?)", "")


def test_csv_that_the_encoding_cannot_carry_is_refused_not_changed(tmp_path):
    path = ledger(tmp_path, ["ε-release"])
    r = dpcalc("compose", "--ledger", str(path), "--format", "csv", extra_env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 74 and r.stdout == b""
    err = r.stderr.decode("ascii")
    assert err.startswith("Error: cannot write to stdout (the csv output holds U+") and err.count("\n") == 1
    r = dpcalc(*CONVERT, "--format", "csv", extra_env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and r.stdout.startswith(b"mu,epsilon,delta,method,bound\n")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_c_locale_is_utf8_or_ascii_safe():
    r = shell("$DPCALC convert gdp --mu 0.5 --delta 1e-5", LC_ALL="C", LANG="C")
    assert r.returncode == 0 and r.stderr == b""
