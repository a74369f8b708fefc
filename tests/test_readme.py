"""The README's examples are real: each ```console block is re-run and compared."""

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpcalc.cli import cli

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```console\n\$ dpcalc (.*?)\n(.*?)```", README.read_text(), re.S)


def _norm(text):
    lines = [ln.rstrip() for ln in text.splitlines() if not ln.startswith("warning:")]
    return "\n".join(lines).strip()


def test_readme_has_examples():
    assert len(BLOCKS) >= 8


@pytest.mark.parametrize("args, shown", BLOCKS, ids=[b[0][:40] for b in BLOCKS])
def test_readme_example_output_is_current(args, shown, monkeypatch):
    monkeypatch.chdir(README.parent)
    r = CliRunner().invoke(cli, shlex.split(args), env={"NO_COLOR": "1"})
    assert r.exit_code == 0, r.stderr
    assert _norm(r.stdout) == _norm(shown)


def test_readme_commands_match_ci():
    ci = (README.parent / ".ci" / "run").read_text()
    assert "python -m pip install -e '.[test]' && python -m pytest -q -n auto" in README.read_text()
    assert "python -m pip install -e '.[test]' && python -m pytest -q -n auto" in ci


def update() -> None:
    """Re-run every ```console block and write its current output into README.md (``python tests/test_readme.py``)."""
    import os

    os.chdir(README.parent)
    text = README.read_text()

    def fresh(m):
        r = CliRunner().invoke(cli, shlex.split(m.group(1)), env={"NO_COLOR": "1"})
        out = "\n".join(ln.rstrip() for ln in r.stdout.splitlines()).strip("\n")
        return f"```console\n$ dpcalc {m.group(1)}\n{out}\n```"

    README.write_text(re.sub(r"```console\n\$ dpcalc (.*?)\n(.*?)```", fresh, text, flags=re.S))


if __name__ == "__main__":
    update()


def test_option_table_is_generated_from_the_cli():
    from dpcalc.manpage import option_table

    text = README.read_text()
    shown = text.split("<!-- options:begin -->\n", 1)[1].split("<!-- options:end -->", 1)[0]
    assert shown == option_table()


def test_every_option_of_every_command_is_in_its_help():
    """-h lists every option, including the pipe mode's (a group's hidden `input` subcommand)."""
    import click

    from dpcalc.cli import COMMANDS

    root = click.Context(cli, info_name="dpcalc")
    for name in COMMANDS:
        cmd = cli.get_command(root, name)
        subs = cmd.list_commands(root) if isinstance(cmd, click.Group) else [None]
        help_text = CliRunner().invoke(cli, [name, "-h"], terminal_width=200).stdout
        for s in subs:
            sub = cmd if s is None else cmd.get_command(root, s)
            shown = help_text if s is None or sub.hidden else CliRunner().invoke(cli, [name, s, "-h"]).stdout
            for p in sub.params:
                if isinstance(p, click.Option) and not p.hidden:
                    assert max(p.opts, key=len) in shown, (name, s, p.opts)


def _help_examples():
    import click

    from dpcalc.cli import COMMANDS
    from dpcalc.manpage import EXAMPLES

    out = []
    root = click.Context(cli, info_name="dpcalc")
    for name in COMMANDS:
        cmd = cli.get_command(root, name)
        cmds = [cmd.get_command(root, s) for s in cmd.list_commands(root)] if isinstance(cmd, click.Group) else [cmd]
        for sub in cmds:
            text = (sub.help or "").replace("\\\n", " ")
            out += [ln.strip() for ln in text.splitlines() if ln.strip().startswith("dpcalc ")]
    out += [ex for page in EXAMPLES.values() for _, ex in page]
    return sorted(set(" ".join(e.split()) for e in out))


@pytest.mark.parametrize("example", _help_examples())
def test_every_help_and_man_example_runs(example, monkeypatch):
    """Every example in a command's -h and in the man pages runs from the repository root (pipes included)."""
    monkeypatch.chdir(README.parent)
    stdin = None
    for stage in example.split(" | "):
        args = shlex.split(stage)
        assert args[0] == "dpcalc", example
        r = CliRunner().invoke(cli, args[1:], input=stdin)
        assert r.exit_code in (0, 1), (stage, r.stderr)
        stdin = r.stdout
