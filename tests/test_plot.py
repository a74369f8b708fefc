"""--plot: the axes each command's rows give, the text chart (golden files), image files, refusals, start-up.

Golden text charts live in tests/golden/charts/NAME.txt: the first line is the command, the rest its chart.
``python tests/test_plot.py`` rewrites them from the current code (read the diff before committing it).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpcalc.cli import cli

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "charts"

#: name → command: one of each curve kind (ε against δ, β against α, TPR against FPR, σ against ε, ε against
#: steps with a certified band and an approximate line, ε against epochs, δ against k, σ against target ε).
CHARTS = {
    "epsilon-delta": "convert gdp --mu 0.5,1,2",
    "tradeoff": "convert dp --epsilon 1 --delta 1e-5 --to tradeoff",
    "attack": "convert gaussian --sigma 1,2 --to attack --fpr 0:1:11",
    "sigma-epsilon": "calibrate gaussian --epsilon 0.1:0.9:9 --delta 1e-6 --method classical",
    "epsilon-steps": "amplify gaussian --sigma 1.1 --rate 0.01 --steps 1,10,100,1000,10000",
    "epsilon-epochs": "plan-sgd --dataset-size 10000 --batch-size 100 --epochs 5 --noise-multiplier 1 --delta 1e-5 "
    "--per-epoch --accountant all",
    "delta-size": "group dp --epsilon 0.5 --delta 1e-7 --size 1:10:10",
    "sigma-target": "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --delta 1e-5 "
    "--target-epsilon 1,2,4,8 --accountant rdp",
}


def run(args: str | list[str], **kw):
    return CliRunner().invoke(cli, shlex.split(args) if isinstance(args, str) else args, **kw)


def _chart(args: str) -> str:
    """The text chart of ``args`` (drawn on stderr next to --json, whose stdout it leaves alone)."""
    r = run(f"{args} --json --plot -")
    assert r.exit_code == 0, r.stderr
    plain = run(f"{args} --json")
    assert r.stdout == plain.stdout
    return r.stderr


@pytest.fixture(scope="module")
def charts():
    return {name: _chart(args) for name, args in CHARTS.items()}


@pytest.mark.parametrize("name", list(CHARTS))
def test_text_chart_matches_its_golden_file(name, charts):
    lines = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8").split("\n", 1)
    assert lines[0] == f"$ dpcalc {CHARTS[name]} --plot -", "the golden file is for another command"
    assert charts[name] == lines[1]


def test_text_chart_shape(charts):
    """What each golden chart must show, independently of its exact drawing."""
    c = charts["epsilon-steps"]
    assert c.splitlines()[0] == "ε (log scale)" and "T (log scale)" in c
    assert "gdp-clt (approximate) - may be below the true value" in c
    assert "  : certified interval of * between ε ≥ (certified) and ε" in c.splitlines()
    assert "rdp (upper)" in c
    assert "epochs" in charts["epsilon-epochs"] and "δ group (log scale)" in charts["delta-size"]
    assert charts["tradeoff"].splitlines()[0] == "β (type II)" and "α (type I)" in charts["tradeoff"]
    assert charts["sigma-target"].splitlines()[0] == "σ" and "target ε" in charts["sigma-target"]
    for chart in charts.values():
        assert all(len(line) <= 80 and line == line.rstrip() for line in chart.splitlines())


def test_axis_ends_are_rounded_outward(charts):
    """The labelled y range holds every plotted value: the top is rounded up, the bottom down."""
    doc = json.loads(run(CHARTS["sigma-target"] + " --json").stdout)
    ys = [r["noise_multiplier"] for r in doc["rows"]]
    labels = [ln.split("|")[0].strip() for ln in charts["sigma-target"].splitlines() if "|" in ln]
    assert float(labels[0]) >= max(ys) and float(labels[-1]) <= min(ys)


def test_text_chart_goes_under_the_table():
    args = "group dp --epsilon 0.5 --delta 1e-7 --size 1:10:10"
    table = run(args).stdout
    r = run(f"{args} --plot -")
    assert r.exit_code == 0
    assert r.stdout == table + "\n" + _chart(args)


def test_text_chart_in_a_markdown_report_is_a_code_block():
    args = "group dp --epsilon 0.5 --delta 1e-7 --size 1:10:10"
    report = run(f"{args} --format markdown").stdout
    r = run(f"{args} --format markdown --plot -")
    assert r.stdout == report + "\n```text\n" + _chart(args) + "```\n"


@pytest.mark.parametrize("fmt", ["--json", "--format csv", "--format ndjson", "--value delta"])
def test_plot_never_touches_machine_output(fmt):
    args = f"group dp --epsilon 0.5 --delta 1e-7 --size 1:10:10 {fmt}"
    plain = run(args)
    r = run(f"{args} --plot -")
    assert r.stdout == plain.stdout
    assert r.stderr.endswith(_chart("group dp --epsilon 0.5 --delta 1e-7 --size 1:10:10"))


def test_ascii_streams_spell_the_chart():
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="ascii")
    for fmt, stream in (("table", "stdout"), ("json", "stderr")):
        cmd = [sys.executable, "-m", "dpcalc", "convert", "gdp", "--mu", "0.5,1", "--plot", "-", "--format", fmt]
        p = subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)
        assert p.returncode == 0, p.stderr
        chart = getattr(p, stream).decode("ascii")
        assert "eps" in chart.splitlines() and "delta (log scale)" in chart and "mu=0.5: gdp (exact)" in chart


# --------------------------------------------------------------------------
# Which axes: the declarations
# --------------------------------------------------------------------------


def _figure(args: str):
    from dpcalc.cli import _common as c
    from dpcalc.plot import figure_for

    with c.collecting() as results:
        r = run(args)
        assert r.exit_code == 0, r.stderr
    return figure_for(c.merge(results, "x") if len(results) > 1 else results[0])


@pytest.mark.parametrize(
    "args, x, y, lines",
    [
        ("calibrate gaussian --epsilon 0.5,1,2 --delta 1e-6,1e-5", "epsilon", "sigma", 2),
        ("calibrate gaussian --rho 0.5,1,2", "rho", "sigma", 1),  # not μ, which is derived from ρ
        ("convert gaussian --sigma 2 --epsilon 0.5,1,2", "epsilon", "delta", 1),  # --epsilon given: δ is the answer
        ("convert gaussian --sigma 1,2", "delta", "epsilon", 2),  # the default δ grid
        ("convert dp --epsilon 1,2 --delta 1e-5 --to tradeoff", "alpha", "beta", 2),
        ("compose dp --epsilon 0.1 --delta 1e-7 --times 10,100,1000", "times", "epsilon", 3),
        ("amplify dp --epsilon 1 --rate 0.01,0.1 --scheme poisson", "rate", "epsilon", 1),
        ("amplify gaussian --sigma 1 --rate 0.01 --orders 2,4,8.5", "order", "rdp", 1),
        ("group pure --epsilon 0.5 --size 1,2,4", "size", "epsilon", 1),
        # A grid of batch sizes: B is the x axis, not the steps or q it implies.
        ("plan-sgd --dataset-size 6000 --batch-size 60,120 --epochs 2 --sigma 1 --delta 1e-5 --accountant rdp",
         "batch_size", "epsilon", 1),
        # Per epoch with two batch sizes: ε against epochs, a line per B.
        ("plan-sgd --dataset-size 6000 --batch-size 60,120 --epochs 3 --sigma 1 --delta 1e-5 --accountant rdp "
         "--per-epoch", "epochs", "epsilon", 2),
        ("plan-sgd --rate 0.01 --delta 1e-5 --target-epsilon 1,2 --steps 100 --accountant rdp",
         "target_epsilon", "noise_multiplier", 1),
    ],
)  # fmt: skip
def test_axes_come_from_the_declarations(args, x, y, lines):
    fig = _figure(args)
    assert (fig.x_key, fig.y_key, len(fig.series)) == (x, y, lines)
    for s in fig.series:
        assert s.x == sorted(s.x) and len(s.x) == len(s.y) == len(s.lower)


def test_every_command_has_a_declaration():
    import click

    from dpcalc.cli import COMMANDS
    from dpcalc.plot import CURVES

    root = click.Context(cli, info_name="dpcalc")
    for name in COMMANDS:
        cmd = cli.get_command(root, name)
        subs = [s for s in cmd.list_commands(root) if s != "input"] if isinstance(cmd, click.Group) else [None]
        for s in subs:
            assert (name if s is None else f"{name} {s}") in CURVES


def test_piped_objects_plot_as_one_chart():
    stdin = run("calibrate gaussian --epsilon 0.5,1 --delta 1e-6 --json").stdout
    r = run("convert --delta 1e-8,1e-6,1e-4 --plot -", input=stdin)
    assert r.exit_code == 0, r.stderr
    assert "σ=" in r.stdout.split("\n\nε\n", 1)[1]  # a line per piped σ


# --------------------------------------------------------------------------
# Refusals: one line, exit 2, no file
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, says",
    [
        ("convert gdp --mu 1 --delta 1e-5", "give a grid (a,b,c or START:STOP:N) to one of --delta, --mu"),
        ("plan-sgd --dataset-size 60000 --batch-size 256 --epochs 1 --sigma 1 --accountant rdp", "--epochs"),
        ("compose dp --release 1,1e-6,3", "no input of these rows takes two or more values."),
        ("compose --ledger examples/privacy.toml --accountant rdp", "the rows of 'compose' are not a curve"),
        ("convert gdp --mu 0.1:1:13", "these rows make 13 lines (one per μ, method); at most 12"),
    ],
)
def test_no_curve_is_refused_in_one_line(args, says, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    for target in ("-", str(tmp_path / "p.svg")):
        if target != "-":
            pytest.importorskip("matplotlib")
        r = run([*shlex.split(args), "--plot", target])
        assert r.exit_code == 2, r.stderr
        assert r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
        assert r.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "value, says",
    [
        ("plot.jpg", "give a file ending in .png, .svg or .pdf, or - for a text chart"),
        ("plot", "give a file ending in .png, .svg or .pdf"),
        ("no/such/dir/plot.png", "does not exist"),
        (".", "is a directory"),
    ],
)
def test_bad_plot_targets_are_refused_before_computing(value, says):
    r = run(["group", "pure", "--epsilon", "1", "--size", "1,2", "--plot", value])
    assert r.exit_code == 2
    assert r.stderr.startswith("Error: Invalid value for '--plot'") and says in r.stderr
    assert r.stderr.count("\n") == 1


def test_without_matplotlib_plot_file_names_the_extra(monkeypatch, tmp_path):
    import dpcalc.plot

    monkeypatch.setattr(dpcalc.plot, "matplotlib_missing", lambda: True)
    r = run(["group", "pure", "--epsilon", "1", "--size", "1,2", "--plot", str(tmp_path / "p.png")])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1
    assert "needs matplotlib" in r.stderr and "pip install 'dpcalc[plot]'" in r.stderr
    assert run("group pure --epsilon 1 --size 1,2 --plot -").exit_code == 0  # the text chart needs nothing
    assert list(tmp_path.iterdir()) == []


def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)


def test_without_matplotlib_installed_for_real(tmp_path):
    """matplotlib made unimportable in a fresh interpreter: one Error line naming the extra, exit 2."""
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from dpcalc.cli import cli\n"
        f"args = ['group', 'pure', '--epsilon', '1', '--size', '1,2', '--plot', {str(tmp_path / 'a.png')!r}]\n"
        "sys.exit(cli.main(args, prog_name='dpcalc'))"
    )
    p = _python(code)
    assert p.returncode == 2, p.stderr
    assert p.stderr == (
        "Error: --plot FILE needs matplotlib, which is not installed: pip install 'dpcalc[plot]' (or --plot - for a "
        "text chart).\n"
    )


def test_matplotlib_is_not_imported_unless_a_file_is_drawn(tmp_path):
    code = (
        "import sys\n"
        "from dpcalc.cli import cli\n"
        "for args in (['--help'], ['convert', 'gdp', '--mu', '1,2'], ['convert', 'gdp', '--mu', '1,2', '--plot', '-'],"
        " ['convert', 'gdp', '--mu', '1,2', '--format', 'markdown']):\n"
        "    cli.main(args, prog_name='dpcalc', standalone_mode=False)\n"
        "print('matplotlib' in sys.modules, 'dpcalc.plot' in sys.modules)\n"
    )
    p = _python(code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "False True"
    p = _python("import sys; from dpcalc.cli import cli; cli.main(['-h'], standalone_mode=False); "
                "print('dpcalc.plot' in sys.modules, 'dpcalc.render' in sys.modules)")  # fmt: skip
    assert p.stdout.splitlines()[-1] == "False False"


def test_a_write_failure_is_exit_74_and_leaves_no_file(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    import dpcalc.plot

    def full(data, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(dpcalc.plot, "write_file", full)
    target = tmp_path / "p.png"
    r = run(["group", "pure", "--epsilon", "1", "--size", "1,2", "--plot", str(target)])
    assert r.exit_code == 74
    assert r.stderr == f"Error: cannot write to the plot file {str(target)!r} (No space left on device).\n"
    assert r.stdout == "" and not target.exists()


def test_write_file_replaces_whole_or_not_at_all(tmp_path):
    from dpcalc.plot import write_file

    target = tmp_path / "p.svg"
    target.write_bytes(b"old")
    write_file(b"new", str(target))
    assert target.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["p.svg"]


# --------------------------------------------------------------------------
# Image files (matplotlib)
# --------------------------------------------------------------------------

#: One command per curve kind for the image tests (fast ones).
KINDS = {k: CHARTS[k] for k in ("epsilon-delta", "tradeoff", "attack", "sigma-epsilon", "epsilon-steps", "delta-size")}


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_image_files_are_valid_and_leave_stdout_alone(kind, ext, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / f"{kind}.{ext}"
    args = KINDS[kind]
    r = run([*shlex.split(args), "--json", "--plot", str(target)])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == run(f"{args} --json").stdout
    data = target.read_bytes()
    if ext == "png":
        assert _png_size(data) in ((640, 440), (560, 500))
        from PIL import Image

        with Image.open(target) as im:
            im.verify()
    elif ext == "pdf":
        assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    else:
        root = ET.fromstring(data)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"


def _svg_data(path: Path) -> tuple[dict, str]:
    root = ET.parse(path).getroot()
    ns = {"dc": "http://purl.org/dc/elements/1.1/"}
    desc = root.find(".//dc:description", ns)
    texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    return json.loads(desc.text), texts


@pytest.mark.parametrize("kind", list(KINDS))
def test_svg_carries_the_plotted_values(kind, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "p.svg"
    args = KINDS[kind]
    doc = json.loads(run(f"{args} --json --plot {target}").stdout)
    data, texts = _svg_data(target)
    assert data["command"] == doc["command"]
    plotted = {(x, y) for s in data["series"] for x, y in zip(s["x"], s["y"])}
    rows = {(r[data["x"]], r[data["y"]]) for r in doc["rows"] if r.get(data["y"]) is not None}
    assert plotted == rows  # every row, full precision, nothing else
    labels = {c["key"]: c["label"] for c in doc["columns"]}
    assert labels[data["x"]] in texts and labels[data["y"]] in texts  # the axes, as text
    for s in data["series"]:
        assert s["label"] in texts or s["label"] + " — may be below the true value" in texts
        assert s["bounds"] and all(f"{b}" in s["label"] for b in s["bounds"])


def test_svg_band_dashes_and_legend(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "p.svg"
    assert run(f"{CHARTS['epsilon-steps']} --plot {target}").exit_code == 0
    data, texts = _svg_data(target)
    pld = [s for s in data["series"] if "pld" in s["methods"]][0]
    assert all(lo is not None and lo <= up for lo, up in zip(pld["lower"], pld["y"]))
    assert "certified interval" in texts and "may be below the true value" in texts
    svg = target.read_text()
    assert "stroke-dasharray" in svg  # the approximate line is dashed
    assert "dpcalc amplify gaussian" in texts  # the inputs are in the title
    assert "σ = 1.1, q = 0.01, δ = 1e-05" in texts


def test_trade_off_has_the_diagonal_and_the_gdp_curve(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "p.svg"
    assert run(f"{CHARTS['tradeoff']} --plot {target}").exit_code == 0
    _, texts = _svg_data(target)
    assert "no privacy loss (β = 1 − α)" in texts
    assert re.search(r"GDP curve μ = 0\.26\d*, exactly \(ε, δ\)-DP \(gdp, exact\)", texts)


def test_the_same_plot_twice_is_the_same_bytes(tmp_path):
    pytest.importorskip("matplotlib")
    for ext in ("png", "svg", "pdf"):
        a, b = tmp_path / f"a.{ext}", tmp_path / f"b.{ext}"
        for t in (a, b):
            assert run(f"{CHARTS['delta-size']} --plot {t}").exit_code == 0
        assert a.read_bytes() == b.read_bytes(), ext


# --------------------------------------------------------------------------
# Documentation: the README's figures and its table of axes
# --------------------------------------------------------------------------


def _figures_script():
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_figures", ROOT / "docs" / "make_figures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_readme_figures_exist_and_match_the_script():
    """Robust to matplotlib versions: the files the script lists exist, are PNGs, are all there is, and the README
    shows each with the command that draws it (their pixels are not compared)."""
    mod = _figures_script()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    names = {f"{name}.png" for name, _ in mod.FIGURES}
    assert {p.name for p in (ROOT / "docs" / "figures").iterdir()} == names
    for name, args in mod.FIGURES:
        path = ROOT / "docs" / "figures" / f"{name}.png"
        assert _png_size(path.read_bytes())[0] > 0
        assert f"(docs/figures/{name}.png)" in readme, name
        assert f"dpcalc {args} --plot docs/figures/{name}.png" in readme, name


def test_readme_plot_table_is_generated_from_the_declarations():
    from dpcalc.manpage import plot_table

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = text.split("<!-- plots:begin -->\n", 1)[1].split("<!-- plots:end -->", 1)[0]
    assert shown == plot_table()


def update() -> None:
    """Rewrite the golden charts from the current code (``python tests/test_plot.py``)."""
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name, args in CHARTS.items():
        (GOLDEN / f"{name}.txt").write_text(f"$ dpcalc {args} --plot -\n{_chart(args)}", encoding="utf-8")


if __name__ == "__main__":
    update()
