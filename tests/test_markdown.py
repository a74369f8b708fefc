"""--format markdown: valid GitHub-flavoured Markdown carrying the same numbers as JSON, rounded as the table."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpcalc.cli import cli
from dpcalc.render import format_number

markdown_it = pytest.importorskip("markdown_it")

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    "calibrate gaussian --epsilon 0.5,1,2 --delta 1e-6",
    "convert gdp --mu 1 --delta 1e-10,1e-5",
    "convert dp --epsilon 1 --delta 1e-5 --to tradeoff --alpha 0,0.5,1",
    "compose dp --epsilon 0.1 --delta 1e-7 --times 100",
    "compose gaussian --sigma 2 --times 1000 --delta 1e-5 --max-epsilon 500",
    "amplify gaussian --sigma 1.1 --rate 0.01 --steps 1,100",
    "group dp --epsilon 0.5 --delta 1e-7 --size 1:4:4",
    "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 2 --noise-multiplier 1.1 --delta 1e-5 --accountant all",
    "compose --ledger examples/privacy.toml --accountant rdp",
]


def run(args, **kw):
    return CliRunner().invoke(cli, shlex.split(args) if isinstance(args, str) else args, **kw)


def parse(text: str):
    """GFM as GitHub reads it (tables on; autolinks need an extra package and change no cell here)."""
    md = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    return md.parse(text)


def tables(tokens) -> list[list[list[str]]]:
    """Each table as rows of cell texts (the header first), as a renderer would show them."""
    out, rows, cells, inside = [], None, None, False
    for t in tokens:
        if t.type == "table_open":
            rows = []
        elif t.type == "tr_open":
            cells = []
        elif t.type in ("th_open", "td_open"):
            inside = True
        elif t.type == "inline" and inside:
            cells.append(_text(t))
            inside = False
        elif t.type in ("th_close", "td_close") and inside:
            cells.append("")
            inside = False
        elif t.type == "tr_close":
            rows.append(cells)
        elif t.type == "table_close":
            out.append(rows)
    return out


def _text(inline) -> str:
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


@pytest.mark.parametrize("args", CASES)
def test_markdown_is_one_gfm_table_with_the_json_numbers(args, monkeypatch):
    monkeypatch.chdir(ROOT)
    r = run(f"{args} --format markdown")
    assert r.exit_code == 0, r.stderr
    doc = json.loads(run(f"{args} --json").stdout)
    tokens = parse(r.stdout)
    assert tokens[0].type == "heading_open" and tokens[1].content == f"dpcalc {doc['command']}"
    [table] = tables(tokens)
    header, body = table[0], table[1:]
    assert header == [c["label"] for c in doc["columns"]]
    assert len(body) == len(doc["rows"])
    kinds = {c["key"]: c for c in doc["columns"]}
    table_text = run(args).stdout
    for cells, row in zip(body, doc["rows"]):
        for col, cell in zip(doc["columns"], cells):
            value = row.get(col["key"])
            if value is None:
                assert cell == "–"
            elif col["kind"] == "float":
                number = float(cell)
                assert math.isclose(number, value, rel_tol=1e-5, abs_tol=1e-300), (col["key"], cell, value)
                assert cell in table_text  # the very text of the table
            elif col["kind"] == "int":
                assert int(cell) == value
            elif col["kind"] == "bool":
                assert cell == ("yes" if value else "no")
            else:
                assert cell == str(value)
    assert set(kinds) == {c["key"] for c in doc["columns"]}


def test_numbers_are_rounded_toward_the_safe_side():
    """Upper ends round up, lower ends down, as in the table (0.9000000000000001 is shown as 0.900001)."""
    args = "amplify gaussian --sigma 1.1 --rate 0.01 --steps 100"
    doc = json.loads(run(f"{args} --json").stdout)
    [table] = tables(parse(run(f"{args} --format markdown").stdout))
    keys = [c["key"] for c in doc["columns"]]
    for cells, row in zip(table[1:], doc["rows"]):
        shown = dict(zip(keys, cells))
        assert shown["epsilon"] == format_number(row["epsilon"], "up")
        assert float(shown["epsilon"]) >= row["epsilon"]
        if row.get("epsilon_lower") is not None:
            assert shown["epsilon_lower"] == format_number(row["epsilon_lower"], "down")
            assert float(shown["epsilon_lower"]) <= row["epsilon_lower"]


def test_notes_warnings_and_the_approximate_mark(monkeypatch):
    args = "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 2 --sigma 1.1 --delta 1e-4 --accountant all"
    r = run(f"{args} --format markdown")
    doc = json.loads(run(f"{args} --json").stdout)
    assert r.stderr == ""  # the warnings are in the report, as in JSON
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(r.stdout)
    assert "<strong>Warnings</strong>" in html
    for w in doc["warnings"]:
        assert f"<li>{w}</li>" in html.replace("&gt;", ">").replace("&lt;", "<")
    for n in doc["notes"]:
        assert f"<p>{n}</p>" in html.replace("&gt;", ">").replace("&lt;", "<")
    assert "<td><strong>approximate</strong></td>" in html


LEDGER = """\
[ledger]
name = "a | b *c* <script>x</script> [l](http://x) $m$ ~d~"
delta = 1e-6
max_epsilon = {budget}

[[release]]
name = "weekly | count *star* `tick` _u_ # 1. - & &amp;"
mechanism = "gaussian"
sigma = 20
times = 52

[[release]]
name = "- looks like a list"
mechanism = "gdp"
mu = 0.1
"""


@pytest.mark.parametrize("budget, verdict, code", [(8, "passed", 0), (0.5, "failed", 1)])
def test_ledger_report_escapes_names_and_gives_the_verdict(tmp_path, budget, verdict, code):
    ledger = tmp_path / "l.toml"
    ledger.write_text(LEDGER.format(budget=budget), encoding="utf-8")
    r = run(["compose", "--ledger", str(ledger), "--format", "markdown"])
    assert r.exit_code == code, r.stderr
    doc = json.loads(run(["compose", "--ledger", str(ledger), "--json"]).stdout)
    tokens = parse(r.stdout)
    [table] = tables(tokens)
    names = [row[1] for row in table[1:]]
    assert names == [row["entry"] for row in doc["rows"]]  # literal, pipes and all: no cell split, no markup
    assert all(len(row) == len(table[0]) for row in table)
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(r.stdout).rsplit("<p><em>Numbers", 1)[0]
    for markup in ("<script>", "<em>", "<strong>c", "<a ", "<code>", "<ol", "<ul", "<h1", "<s>"):
        assert markup not in html, markup
    para = [_text(t) for t in tokens if t.type == "inline"]
    assert any(p.startswith(f"Budget check: {verdict}.") for p in para), para
    total = max(row["epsilon"] for row in doc["rows"] if row["kind"] == "total" and row["tightest"])
    line = next(p for p in para if p.startswith("Budget check"))
    assert f"ε = {format_number(total, 'up')}" in line
    assert any(doc["notes"][0] == p for p in para)  # the ledger's name, literal
    if code:
        assert r.stderr.startswith("budget exceeded: ")
        assert "is over the budget of 0.5" in line


def test_plot_dash_in_markdown_is_a_fenced_code_block():
    r = run("group pure --epsilon 0.5 --size 1,2,4 --format markdown --plot -")
    tokens = parse(r.stdout)
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 1 and fences[0].info == "text" and "ε group" in fences[0].content


def test_ascii_stdout_spells_the_report():
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="ascii")
    args = ["group", "pure", "--epsilon", "0.5", "--size", "1,2", "--format", "markdown", "--plot", "-"]
    p = subprocess.run([sys.executable, "-m", "dpcalc", *args], capture_output=True, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    text = p.stdout.decode("ascii")
    assert "| eps | k | eps group | method | bound |" in text and "\neps group\n" in text
