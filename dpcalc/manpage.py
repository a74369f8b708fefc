"""Generate the man pages in man/ from the Click definitions.

Regenerate with ``python -m dpcalc.manpage`` (writes man/*.1); ``--options`` and ``--plots`` print the
README's tables of options and of plot axes. The EXAMPLES
and EXIT STATUS sections are written here by hand; everything else comes
from the commands' own help, so the pages cannot drift from the CLI (a test
regenerates them and compares).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dpcalc import __version__
from dpcalc.cli import COMMANDS, cli

DATE = "2026-11-30"

EXAMPLES = {
    "dpcalc": [
        ("Noise for three target ε at δ = 1e-6:", "dpcalc calibrate gaussian --epsilon 0.5,1,2 --delta 1e-6"),
        (
            "ε of a DP-SGD run:",
            "dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --noise-multiplier 1.1 --delta 1e-5",
        ),
        (
            "A pipe:",
            "dpcalc calibrate gaussian --epsilon 1 --delta 1e-6 --json | dpcalc amplify --rate 0.01 "
            "--json | dpcalc compose --times 5000 --delta 1e-5",
        ),
        ("A CI budget gate:", "dpcalc compose --ledger examples/privacy.toml --max-epsilon 8"),
    ],
    "calibrate": [
        ("σ for a curve of ε:", "dpcalc calibrate gaussian --epsilon 0.5,1,2 --delta 1e-6"),
        (
            "The classical formula next to the analytic one:",
            "dpcalc calibrate gaussian --epsilon 0.5 --delta 1e-5 --method classical",
        ),
        ("σ for 1.2-GDP:", "dpcalc calibrate gaussian --mu 1.2"),
        ("Laplace scale:", "dpcalc calibrate laplace --epsilon 0.1,1 --sensitivity 2"),
    ],
    "convert": [
        ("μ-GDP as (ε, δ):", "dpcalc convert gdp --mu 1.2 --delta 1e-5"),
        ("ρ-zCDP as (ε, δ):", "dpcalc convert zcdp --rho 0.5 --delta 1e-5"),
        ("Attack success against (1, 1e-5)-DP:", "dpcalc convert dp --epsilon 1 --delta 1e-5 --to attack"),
        ("From a pipe:", "dpcalc calibrate gaussian --mu 0.5 --json | dpcalc convert --delta 1e-5"),
        ("ε against δ for three μ, with a text chart:", "dpcalc convert gdp --mu 0.5,1,2 --plot -"),
    ],
    "compose": [
        ("1000 Gaussian releases:", "dpcalc compose gaussian --sigma 2 --times 1000 --delta 1e-5"),
        ("Basic, advanced and optimal composition:", "dpcalc compose dp --epsilon 0.1 --delta 1e-7 --times 100"),
        ("A ledger with a budget:", "dpcalc compose --ledger examples/privacy.toml --max-epsilon 8"),
        ("Total ε as a bare number:", "dpcalc compose gaussian --sigma 2 --times 100 --delta 1e-5 --value epsilon"),
        (
            "A ledger's budget check as a Markdown report (for $GITHUB_STEP_SUMMARY):",
            "dpcalc compose --ledger examples/privacy.toml --max-epsilon 8 --format markdown",
        ),
    ],
    "amplify": [
        ("Subsampling an (ε, δ) mechanism:", "dpcalc amplify dp --epsilon 1 --delta 1e-6 --rate 0.01"),
        (
            "A subsampled Gaussian over many steps:",
            "dpcalc amplify gaussian --sigma 1.1 --rate 0.01 --steps 1,100,10000 --delta 1e-5",
        ),
    ],
    "group": [
        ("Groups of 1 to 10 records:", "dpcalc group dp --epsilon 0.5 --delta 1e-7 --size 1:10:10"),
        (
            "The same, with δ against k drawn under the table:",
            "dpcalc group dp --epsilon 0.5 --delta 1e-7 --size 1:10:10 --plot -",
        ),
        ("A Gaussian mechanism and a group of 4:", "dpcalc group gaussian --sigma 4 --size 4 --delta 1e-5"),
    ],
    "plan-sgd": [
        (
            "ε of a run:",
            "dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --noise-multiplier 1.1 --delta 1e-5",
        ),
        (
            "The ε curve per epoch, as CSV:",
            "dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 "
            "--noise-multiplier 1.1 --per-epoch --format csv",
        ),
        (
            "The noise multiplier for ε = 3:",
            "dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --target-epsilon 3",
        ),
        (
            "Epochs that fit in ε = 3:",
            "dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --noise-multiplier 1.1 --target-epsilon 3",
        ),
    ],
}

EXIT_STATUS = [
    ("0", "Success."),
    (
        "1",
        "A budget check (--max-epsilon) failed, or convert audit proved ε above --claimed-epsilon. The result is "
        "still printed; the reason is on stderr.",
    ),
    (
        "2",
        "Bad usage or bad input: one line on stderr starting with Error: names the option and the allowed "
        "range, or says why the result cannot be computed (also a computation too large for the machine's "
        "memory: Error: out of memory for these inputs).",
    ),
    ("3", "An internal error in dpcalc (a bug). No input is expected to cause it."),
    (
        "74",
        "Output could not be written (stdout or stderr closed, a full disk, machine output the encoding "
        "cannot carry, or the --plot file): one Error: line.",
    ),
    ("130", "Interrupted (Ctrl-C): Error: interrupted. on stderr."),
    ("141", "stdout's reader went away (dpcalc ... | head -1): dpcalc stops quietly."),
]


def _esc(text: str) -> str:
    text = text.replace("\\", "\\e")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def _opt(text: str) -> str:
    return _esc(text).replace("-", "\\-")


def _help_paragraphs(text: str) -> list[str]:
    """Click help → roff: paragraphs, with \\b blocks kept as they are."""
    out = []
    for block in (text or "").strip().split("\n\n"):
        if block.lstrip(" ").startswith("\b"):
            body = "\n".join(block.split("\n")[1:])
            out.append(".PP\n.nf\n" + _esc(_dedent(body)) + "\n.fi")
        else:
            out.append(".PP\n" + _esc(" ".join(line.strip() for line in block.split("\n"))))
    return out


def _dedent(text: str) -> str:
    lines = text.split("\n")
    pad = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[pad:] for x in lines)


def _options(cmd: click.Command, ctx: click.Context) -> list[str]:
    out = []
    for p in cmd.get_params(ctx):
        if not isinstance(p, click.Option) or p.hidden:
            continue
        record = p.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        out.append(".TP\n.B " + _opt(names) + "\n" + _esc(help_text))
    return out


def _ctx(cmd: click.Command, name: str, parent: click.Context | None = None) -> click.Context:
    """A context with the command's own settings (e.g. -h as a help option)."""
    return click.Context(cmd, info_name=name, parent=parent, **cmd.context_settings)


def _sections(path: list[str], cmd: click.Command, parent: click.Context) -> list[str]:
    ctx = _ctx(cmd, path[-1], parent)
    out = [f'.SS "{_esc(" ".join(path))}"', f".B {_opt(' '.join(path))}", "[\\fIOPTIONS\\fR]"]
    out += _help_paragraphs(cmd.help or "")
    out += _options(cmd, ctx)
    return out


def render_page(name: str) -> str:
    root = _ctx(cli, "dpcalc")
    title = "dpcalc" if name == "dpcalc" else f"dpcalc-{name}"
    head = [
        f'.TH "{title.upper()}" "1" "{DATE}" "dpcalc {__version__}" "dpcalc manual"',
        ".SH NAME",
    ]
    body: list[str] = []
    if name == "dpcalc":
        head.append("dpcalc \\- privacy budget calculator for differential privacy")
        body += [".SH SYNOPSIS", ".B dpcalc", "\\fICOMMAND\\fR [\\fIARGS\\fR]... [\\fIOPTIONS\\fR]"]
        body += [".SH DESCRIPTION"] + _help_paragraphs(cli.help or "")
        body += [".SH COMMANDS"]
        for cname in COMMANDS:
            cmd = cli.get_command(root, cname)
            body.append(f".TP\n.B {_opt(cname)}\n{_esc(cmd.get_short_help_str(100))}")
        body += [
            ".SH GRIDS",
            ".PP",
            _esc(
                "Numeric options that make sense as a sweep accept a grid: a list a,b,c, a range START:STOP:N "
                "(N evenly spaced points) or START:STOP:N:log (evenly spaced in log scale). Several grids give every "
                "combination, one row each (at most 10,000 points per option and 100,000 combinations; convert "
                "prints a row per method for each)."
            ),
        ]
        body += [
            ".SH OUTPUT",
            ".PP",
            _esc(
                "Tables for people (numbers rounded toward the safe side; warnings on stderr); --format markdown for "
                "reports (the same table and rounding as GitHub-flavoured Markdown, with the notes, warnings and "
                "budget verdict); --json for one versioned JSON document (schema in "
                "dpcalc/schema/result-v1.schema.json); --format csv or ndjson for rows; --value KEY for bare numbers. "
                "Every row has a method and a bound: exact, upper (a sound guarantee) or approximate (may "
                "under-report; never the default answer)."
            ),
        ]
        body += [
            ".SH PLOTS",
            ".PP",
            _esc(
                "--plot FILE draws the rows' curve into a .png, .svg or .pdf file (needs matplotlib: pip install "
                "'dpcalc[plot]'); --plot - draws a text chart under the table (on stderr when stdout carries json, "
                "csv, ndjson or --value, which it never changes; in the report with --format markdown). The answer "
                "is the y axis and the first input given two or more values the x axis; other inputs with several "
                "values and each engine are lines of their own. Certified PLD intervals are bands, approximate "
                "lines are dashed, and the legend names each line's method and bound. Rows that are not a curve "
                "refuse --plot (exit 2)."
            ),
        ]
        body += [
            ".SH ENVIRONMENT",
            ".TP",
            ".B NO_COLOR",
            "Disables colour in tables.",
            ".TP",
            ".B _DPCALC_COMPLETE",
            'Shell completion: eval "$(_DPCALC_COMPLETE=bash_source dpcalc)" (also zsh_source, fish_source).',
        ]
    else:
        cmd = cli.get_command(root, name)
        head.append(f"dpcalc\\-{_opt(name)} \\- {_esc(cmd.get_short_help_str(100))}")
        if isinstance(cmd, click.Group):
            subs = [s for s in cmd.list_commands(root) if not cmd.get_command(root, s).hidden]
            body += [".SH SYNOPSIS", f".B dpcalc {_opt(name)}", "\\fI" + "|".join(subs) + "\\fR [\\fIOPTIONS\\fR]"]
            gctx = _ctx(cmd, name, root)
            if cmd.get_command(gctx, "input") is not None:
                body.append(f".br\n.B dpcalc {_opt(name)}\n[\\fIOPTIONS\\fR] < \\fIJSON\\fR")
            body += [".SH DESCRIPTION"] + _help_paragraphs(cmd.help or "")
            body += [".SH COMMANDS"]
            for s in subs:
                body += _sections(["dpcalc", name, s], cmd.get_command(gctx, s), gctx)
            hidden = cmd.get_command(gctx, "input")
            if hidden is not None:
                body += [
                    ".SH READING FROM A PIPE",
                    ".PP",
                    _esc(
                        f"When the first argument is an option, dpcalc {name} reads privacy objects (dpcalc --json "
                        "output, bare objects or lists of them) from stdin or --input FILE."
                    ),
                ]
                body += _options(hidden, _ctx(hidden, "input", gctx))
        else:
            body += [".SH SYNOPSIS", f".B dpcalc {_opt(name)}", "[\\fIOPTIONS\\fR]"]
            body += [".SH DESCRIPTION"] + _help_paragraphs(cmd.help or "")
            body += [".SH OPTIONS"] + _options(cmd, _ctx(cmd, name, root))
    body += [".SH EXAMPLES"]
    for text, example in EXAMPLES.get(name, []):
        body += [".PP", _esc(text), ".PP", ".RS 4", ".nf", _opt(example), ".fi", ".RE"]
    body += [".SH EXIT STATUS"]
    for code, text in EXIT_STATUS:
        body += [".TP", f".B {code}", _esc(text)]
    others = ["dpcalc"] + [f"dpcalc-{c}" for c in COMMANDS]
    body += [".SH SEE ALSO", ", ".join(f"\\fB{_opt(o)}\\fR(1)" for o in others if o != title)]
    return "\n".join(head + body) + "\n"


#: The options the option-support table in README.md shows, and what it calls them.
TABLE_OPTIONS = [
    ("--max-epsilon", "`--max-epsilon`"),
    ("--value", "`--value`"),
    ("--format", "`--format`/`--json`"),
    ("--accountant", "`--accountant`"),
    ("--pld-width", "`--pld-width`"),
]


def option_table() -> str:
    """The README's option-support table, generated from the Click definitions (a test keeps the README in step)."""
    root = _ctx(cli, "dpcalc")
    head = ["command", *(label for _, label in TABLE_OPTIONS), "reads a pipe"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]

    def row(path, cmd, ctx, pipe):
        opts = {o for p in cmd.get_params(ctx) if isinstance(p, click.Option) for o in p.opts}
        cells = ["yes" if name in opts else "–" for name, _ in TABLE_OPTIONS]
        lines.append("| " + " | ".join([f"`{path}`", *cells, pipe]) + " |")

    for name in COMMANDS:
        cmd = cli.get_command(root, name)
        if isinstance(cmd, click.Group):
            gctx = _ctx(cmd, name, root)
            hidden = cmd.get_command(gctx, "input")
            for s in cmd.list_commands(gctx):
                sub = cmd.get_command(gctx, s)
                if not sub.hidden:
                    row(f"{name} {s}", sub, _ctx(sub, s, gctx), "–")
            if hidden is not None:
                label = (
                    "--ledger, stdin, --input"
                    if any("--ledger" in getattr(p, "opts", ()) for p in hidden.get_params(gctx))
                    else "stdin, --input"
                )
                row(f"{name} [OPTIONS] < JSON", hidden, _ctx(hidden, "input", gctx), label)
        else:
            row(name, cmd, _ctx(cmd, name, root), "–")
    return "\n".join(lines) + "\n"


def plot_table() -> str:
    """The README's table of plot axes, generated from :data:`dpcalc.plot.CURVES` (a test keeps it in step)."""
    from dpcalc.plot import CURVES

    groups: dict[int, list[str]] = {}
    for command, curves in CURVES.items():
        groups.setdefault(id(curves), []).append(command)
    lines = [
        "| command | y axis | x axis: the first of these given two or more values (others split lines) | drawn with |",
        "| --- | --- | --- | --- |",
    ]
    extras = {"tradeoff": "the diagonal β = 1 − α, each curve's exact form, the GDP curve of the same μ",
              "attack": "the diagonal TPR = FPR, each curve's exact form"}  # fmt: skip
    for commands in groups.values():
        curves = CURVES[commands[0]]
        # A declaration shared by a command's every mode and its pipe mode is shown once, by the command's name.
        names = f"`{commands[0]}` (every mode, and piped)" if len(commands) > 1 else f"`{commands[0]}`"
        rows: list[tuple[list[str], str, str]] = []
        for chart in curves.charts:
            xs = ", ".join(f"`{x}`" for x in chart.x)
            when = [f"with `--{n.replace('_', '-')}`" for n in chart.needs] + (
                [extras[chart.kind]] if chart.kind else []
            )
            if rows and rows[-1][1:] == (xs, "; ".join(when)):
                rows[-1][0].append(chart.y)  # the same axes for another answer (what an inverse search solved for)
            else:
                rows.append(([chart.y], xs, "; ".join(when)))
        for ys, xs, when in rows:
            y = ", ".join(f"`{k}`" for k in ys) + (" (the one solved for)" if len(ys) > 1 else "")
            lines.append(f"| {names} | {y} | {xs} | {when or '–'} |")
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """File name → page text for every page."""
    out = {"dpcalc.1": render_page("dpcalc")}
    for name in COMMANDS:
        out[f"dpcalc-{name}.1"] = render_page(name)
    return out


def main(argv: list[str] | None = None) -> None:
    if argv and argv[0] == "--options":
        sys.stdout.write(option_table())
        return
    if argv and argv[0] == "--plots":
        sys.stdout.write(plot_table())
        return
    target = Path(argv[0] if argv else "man")
    target.mkdir(exist_ok=True)
    for fname, text in pages().items():
        (target / fname).write_text(text, encoding="utf-8")
        print(f"wrote {target / fname}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
