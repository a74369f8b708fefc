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
    assert "python -m pip install -e '.[test]' && python -m pytest -q" in README.read_text()
    assert "python -m pip install -e '.[test]' && python -m pytest -q" in ci


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
