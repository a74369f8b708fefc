"""The Python API (issue 14, item 3): the command line's answers, the same to the last digit.

Every example in the README, in -h and in the man pages is parsed the way the command line parses it, the parsed values
(floats, integers, grids as tuples, release tuples, choices) are passed to the API function of
that command as keyword arguments, and the Result must be the command's ``--json`` document.
Pipes are chained through ``objects=``.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import numpy as np
import pytest
from click.core import ParameterSource
from click.testing import CliRunner

import dpcalc
import dpcalc.api as api
from dpcalc.cli import cli

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
OUTPUT_OPTIONS = {"--json", "--format", "--value", "--plot"}


def _readme_examples() -> list[str]:
    """Every dpcalc command line in the README's console and sh blocks (continuation lines joined)."""
    out = re.findall(r"```console\n\$ (dpcalc .*?)\n", README)
    for block in re.findall(r"```(?:sh|bash)\n(.*?)```", README, re.S):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("dpcalc ") and "$(" not in line and ">" not in line and "<" not in line:
                out.append(line)
    return sorted(set(" ".join(e.split()) for e in out))


def _all_examples() -> list[str]:
    from tests.test_readme import _help_examples  # every example of -h and of the man pages

    return sorted(set(_readme_examples()) | set(_help_examples()))


EXAMPLES = _all_examples()


def _strip_output_options(args: list[str]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in OUTPUT_OPTIONS:
            skip = a != "--json"
            continue
        if a.split("=")[0] in OUTPUT_OPTIONS:
            continue
        out.append(a)
    return out


def _api_call(args: list[str], objects=None):
    """Parse a command line like click does, then call the API with the parsed values."""
    root = click.Context(cli, info_name="dpcalc")
    cmd = cli.get_command(root, args[0])
    path, rest = [args[0]], args[1:]
    if isinstance(cmd, click.Group):
        if rest and not rest[0].startswith("-"):
            path.append(rest[0])
            rest = rest[1:]
        else:
            path.append("input")
        cmd = cmd.get_command(click.Context(cmd, info_name=path[0], parent=root), path[1])
    ctx = cmd.make_context(path[-1], list(rest), parent=root)
    kwargs = {}
    for p in cmd.params:
        if ctx.get_parameter_source(p.name) == ParameterSource.COMMANDLINE:
            kwargs[p.name] = ctx.params.get(p.name)
    for p in cmd.params:  # options that go to ctx.meta (budget check) rather than to the function
        if isinstance(p, click.Option) and not p.expose_value and p.name not in ("value",):
            typed = next((o for o in p.opts if o in rest or any(r.startswith(o + "=") for r in rest)), None)
            if typed is not None:
                i = rest.index(typed)
                kwargs[p.name] = rest[i + 1]
    name = "_".join(x for x in path if x != "input").replace("-", "_")
    if path[-1] == "input":
        kwargs.pop("source", None)
        if "ledger" not in kwargs:
            kwargs["objects"] = objects
    return getattr(api, name)(**kwargs)


def _cli_json(example: str):
    stdin = None
    for stage in example.split(" | "):
        args = _strip_output_options(shlex.split(stage)[1:]) + ["--json"]
        r = CliRunner().invoke(cli, args, input=stdin)
        assert r.exit_code in (0, 1), (stage, r.stderr)
        stdin = r.stdout
    return json.loads(stdin)


def test_there_are_examples():
    assert len(_readme_examples()) >= 12 and len(EXAMPLES) >= 30


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_readme_example_gives_the_same_numbers_through_the_api(example, monkeypatch):
    monkeypatch.chdir(ROOT)
    result = None
    for stage in example.split(" | "):
        args = _strip_output_options(shlex.split(stage)[1:])
        result = _api_call(args, objects=result)
    assert result.to_dict() == _cli_json(example)


def test_grids_take_arrays_and_lists_alike():
    a = api.convert_gdp(mu=np.linspace(0.5, 2, 4), delta=[1e-5, 1e-6])
    b = api.run("convert gdp --mu 0.5:2:4 --delta 1e-5,1e-6")
    assert a.to_dict() == b.to_dict() and len(a.rows) == 8


def test_records_and_columns():
    r = api.plan_sgd(rate=0.01, noise_multiplier=1.1, steps=[1000, 10000], delta=1e-5)
    recs = r.to_records()
    assert [rec["steps"] for rec in recs] == [1000, 10000]
    assert set(recs[0]) == {c.key for c in r.columns}
    assert r.column("epsilon") == [rec["epsilon"] for rec in recs]
    assert recs[0]["epsilon_lower"] <= recs[0]["epsilon"] < recs[1]["epsilon"]
    with pytest.raises(KeyError, match="not a column"):
        r.column("epsilom")
    assert "plan-sgd" in str(r) and "pld" in str(r)


@pytest.mark.parametrize(
    "call, args",
    [
        (lambda: api.calibrate_gaussian(epsilon=-1, delta=1e-5), "calibrate gaussian --epsilon -1 --delta 1e-5"),
        (lambda: api.convert_gdp(mu=float("nan"), delta=1e-5), "convert gdp --mu nan --delta 1e-5"),
        (lambda: api.plan_sgd(rate=2, noise_multiplier=1, steps=10, delta=1e-5),
         "plan-sgd --rate 2 --noise-multiplier 1 --steps 10 --delta 1e-5"),
        (lambda: api.compose(objects='{"type": "gdp", "mu": 1, "sigma": 2}', delta=1e-5), "compose --delta 1e-5"),
    ],
)  # fmt: skip
def test_refusals_are_the_command_lines_error(call, args):
    stdin = '{"type": "gdp", "mu": 1, "sigma": 2}' if args.startswith("compose") else None
    r = CliRunner().invoke(cli, shlex.split(args), input=stdin)
    assert r.exit_code == 2
    with pytest.raises(api.InputError) as info:
        call()
    assert f"Error: {info.value}\n" == r.stderr


def test_records_take_tuples_dicts_and_text_alike():
    want = api.run("compose dp --release 0.5,1e-6,10 --release 1,0,2").to_dict()
    assert api.compose_dp(release=[(0.5, 1e-6, 10), (1, 0, 2)]).to_dict() == want
    assert api.compose_dp(release=["0.5,1e-6,10", {"epsilon": 1, "times": 2}]).to_dict() == want
    with pytest.raises(TypeError, match="need the field 'epsilon'"):
        api.compose_dp(release={"delta": 1e-6})


def test_python_mistakes_are_type_errors():
    with pytest.raises(TypeError, match="unexpected keyword argument 'noise_multiplyer'"):
        api.plan_sgd(rate=0.01, noise_multiplyer=1.0, steps=10, delta=1e-5)
    with pytest.raises(TypeError, match="two names for one option"):
        api.plan_sgd(rate=0.01, sigma=1.0, noise_multiplier=1.0, steps=10, delta=1e-5)
    with pytest.raises(TypeError):
        api.convert_gdp(mu=True, delta=1e-5)
    with pytest.raises(api.InputError, match="needs objects="):
        api.compose(delta=1e-5)


def test_a_failed_budget_is_a_status_not_an_error(monkeypatch):
    monkeypatch.chdir(ROOT)
    r = api.compose(ledger="examples/privacy.toml", max_epsilon=0.5)
    assert r.status == 1 and r.failure.startswith("budget exceeded")
    assert r.to_dict()["budget"]["exceeded"] is True and r.to_dict()["budget"]["max_epsilon"] == 0.5
    ok = api.compose(ledger="examples/privacy.toml", max_epsilon=100)
    assert ok.status == 0 and ok.failure is None


def test_results_chain_as_objects():
    sigma = api.calibrate_gaussian(epsilon=1, delta=1e-6)
    total = api.compose(objects=api.amplify(objects=sigma, rate=0.01), times=5000, delta=1e-5)
    assert total.to_dict() == _cli_json(
        "dpcalc calibrate gaussian --epsilon 1 --delta 1e-6 | dpcalc amplify --rate 0.01 | "
        "dpcalc compose --times 5000 --delta 1e-5"
    )
    from dpcalc.model import GDP

    mixed = api.compose(objects=[GDP(0.5), {"type": "gdp", "mu": 0.5}], delta=1e-5)
    piped = CliRunner().invoke(cli, ["compose", "--delta", "1e-5", "--json"], input='[{"type": "gdp", "mu": 0.5}] ' * 2)
    assert mixed.to_dict() == json.loads(piped.stdout)


def test_every_command_has_a_function_with_its_options():
    import inspect

    names = set(api.FUNCTIONS)
    assert {"calibrate_gaussian", "compose", "compose_dp", "amplify_gaussian", "plan_sgd", "convert"} <= names
    params = inspect.signature(api.plan_sgd).parameters
    assert {"rate", "noise_multiplier", "steps", "delta", "target_epsilon", "max_epsilon"} <= set(params)
    assert "json" not in params and "fmt" not in params
    assert dpcalc.plan_sgd is api.plan_sgd  # the package exposes the functions, imported on first use


def test_the_reference_is_current():
    committed = (ROOT / "docs" / "api.md").read_text()
    assert committed == api.reference(), "docs/api.md is stale: run python -m dpcalc.api --reference > docs/api.md"
    for name in api.FUNCTIONS:
        assert f"### `{name}(" in committed
