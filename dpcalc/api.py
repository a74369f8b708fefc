"""dpcalc from Python: the command line's answers for notebooks and scripts.

One function per command and mechanism family — ``calibrate_gaussian``, ``compose_gdp``,
``amplify_gaussian``, ``plan_sgd``, … and ``compose``, ``amplify``, ``group`` and ``convert`` for
privacy objects — each taking the command's options as keyword arguments (``--noise-multiplier``
is ``noise_multiplier=``; a number, a list or a numpy array where the option takes a grid) and
returning a :class:`dpcalc.model.Result`: the same rows, columns, methods, bounds, warnings, notes
and privacy objects as the command's ``--json`` document, which ``to_dict()`` gives exactly.
``to_records()`` gives the rows as a list of dicts (``pandas.DataFrame(r.to_records())``).

There is no second path to the numbers: each function runs the command itself, in-process,
with the options it was given; it only skips printing. Input the command would refuse raises
:class:`InputError` with the command's one-line message; a failed budget check
(``max_epsilon=``) is not an error but ``result.status == 1`` with ``result.failure`` saying why.

>>> import dpcalc.api as dp
>>> r = dp.plan_sgd(rate=0.01, noise_multiplier=1.1, steps=[1000, 10000], delta=1e-5)
>>> [round(row["epsilon"], 3) for row in r.answer_rows()]   # doctest: +SKIP

Stability: the function names, their keyword arguments and the result's fields follow the
command line's options and JSON schema (``schema_version``), and change only with them.
One call at a time per process: a call swaps ``sys.stdin`` while the command reads it (use
processes, not threads, to run calls in parallel).
"""

from __future__ import annotations

import inspect
import io
import json
import shlex
import sys
from collections.abc import Iterable
from typing import Any

import click

from dpcalc.model import Result

__all__ = ["InputError", "Result", "run"]  # extended below with one function per command


class InputError(ValueError):
    """Input the command line would refuse (exit code 2); the message is the command's ``Error:`` line."""


# --------------------------------------------------------------------------------------------- running


def run(args: str | Iterable[str], *, stdin: str | bytes | None = None) -> Result:
    """Run one dpcalc command line in-process and return its Result instead of printing it.

    ``args`` is the command line without ``dpcalc`` (a string is split like a shell would);
    ``stdin`` is what the command reads where it reads stdin (privacy objects as JSON).
    Output options (``--json``, ``--format``, ``--value``) are accepted and have no effect.
    """
    from dpcalc.cli import DpcalcGroup, _common, _error_message, cli

    argv = shlex.split(args) if isinstance(args, str) else [str(a) for a in args]
    data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    try:
        with _common.capturing() as results:
            try:
                import warnings

                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    # click's own main: exceptions reach us (DpcalcGroup.main turns them into stderr lines).
                    super(DpcalcGroup, cli).main(argv, prog_name="dpcalc", standalone_mode=False)
            except click.exceptions.NoArgsIsHelpError:
                raise InputError(f"'dpcalc {' '.join(argv)}' needs options; see help(dpcalc.api)") from None
            except Exception as exc:
                message = _error_message(exc, argv)
                if message is None:
                    raise
                raise InputError(message) from None
    finally:
        sys.stdin = saved
    if not results:  # pragma: no cover - every command emits one result or raises
        raise InputError(f"'dpcalc {' '.join(argv)}' gave no result")
    return results[-1]


# --------------------------------------------------------------------------------------------- arguments

#: Options about printing, which a Result does not need.
_OUTPUT = {"fmt", "as_json", "value", "help", "version", "plot"}


def _number_text(value: Any) -> str:
    """A number as the command line reads it, exactly: repr of the float (round-trips) or the integer."""
    if isinstance(value, bool):
        raise TypeError("a number was expected, not a bool")
    if isinstance(value, str):
        return value
    try:
        import numpy as np

        if isinstance(value, np.generic):
            value = value.item()
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    raise TypeError(f"a number, a list of numbers or a grid text was expected, not {type(value).__name__}")


def _value_text(value: Any) -> str:
    """One option value: a number, a grid (list, tuple or array → '1,2,3'), a release tuple, or text."""
    if isinstance(value, str):
        return value
    if hasattr(value, "tolist") and not isinstance(value, (int, float)):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return ",".join(_number_text(v) for v in value)
    return _number_text(value)


def _names(param: click.Option) -> list[str]:
    """The keyword names of an option: its long flags with '_' for '-' (the first is the documented one),
    then click's own name for it."""
    names = [o[2:].replace("-", "_") for o in param.opts if o.startswith("--")]
    return list(dict.fromkeys(names + [param.name]))


def _option_args(param: click.Option, value: Any) -> list[str]:
    flag = max(param.opts, key=len)
    if param.is_flag:
        if not isinstance(value, bool):
            raise TypeError(f"{param.name}= takes True or False")
        if param.secondary_opts:  # --x/--no-x
            return [flag if value else max(param.secondary_opts, key=len)]
        return [flag] if value else []
    if param.multiple:
        many = isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple, str, dict))
        out: list[str] = []
        for item in value if many else [value]:
            if isinstance(item, dict):
                item = _record(param, item)
            out += [flag, _value_text(item)]
        return out
    return [flag, _value_text(value)]


def _record(param: click.Option, item: dict) -> list:
    """A record option's dict (as the command line parses it) as its comma fields, in order, defaults filled."""
    fields = getattr(param.type, "fields", [])
    names = [f[0] for f in fields]
    unknown = set(item) - set(names)
    if unknown:
        raise TypeError(f"{param.name}= records have the fields {', '.join(names)}; not {', '.join(sorted(unknown))}")
    last = max((i for i, n in enumerate(names) if n in item), default=-1)
    out = []
    for name, _, default in fields[: last + 1]:
        if name not in item and default is None:
            raise TypeError(f"{param.name}= records need the field {name!r}")
        out.append(item.get(name, default))
    return out


def _objects_text(objects: Any) -> str:
    """Privacy objects for a pipe: model objects, dicts, Results (their objects) or JSON text."""
    if isinstance(objects, (str, bytes)):
        return objects.decode() if isinstance(objects, bytes) else objects
    if isinstance(objects, Result) or hasattr(objects, "to_dict") and not isinstance(objects, dict):
        objects = [objects]
    out = []
    for o in objects:
        if isinstance(o, Result):
            out += [x.to_dict() for x in o.objects]
        elif isinstance(o, dict):
            out.append(o)
        elif hasattr(o, "to_dict"):
            out.append(o.to_dict())
        else:
            raise TypeError(f"objects= takes privacy objects, dicts, Results or JSON text, not {type(o).__name__}")
    return json.dumps(out)


# --------------------------------------------------------------------------------------------- functions


def _commands() -> list[tuple[str, tuple[str, ...], click.Command]]:
    """(function name, command path, command) for every command, in the order of ``dpcalc --help``."""
    from dpcalc.cli import COMMANDS, cli

    root = click.Context(cli, info_name="dpcalc")
    out = []
    for name in COMMANDS:
        cmd = cli.get_command(root, name)
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd, info_name=name, parent=root)
            for sub in cmd.list_commands(ctx):
                leaf = cmd.get_command(ctx, sub)
                if sub == "input":  # the pipe mode: the group's own function
                    out.append((name.replace("-", "_"), (name, "input"), leaf))
                else:
                    out.append((f"{name}_{sub}".replace("-", "_"), (name, sub), leaf))
        else:
            out.append((name.replace("-", "_"), (name,), cmd))
    return out


def _doc(path: tuple[str, ...], cmd: click.Command, params: list[click.Option], pipe: bool) -> str:
    head = inspect.cleandoc(cmd.help or "").split("\n\n")[0].replace("\b\n", "")
    if pipe:
        head = (
            f"`dpcalc {path[0]}` on privacy objects: pass them as objects= (model objects, dicts, Results or "
            "JSON text), or name a file with input= or a ledger with ledger= where the command reads one."
        )
    lines = [f"{head}", "", f"Runs `dpcalc {' '.join(p for p in path if p != 'input')}`; returns a Result.", ""]
    lines += ["Keyword arguments (None or omitted: the command's default):"]
    if pipe:
        lines.append("    objects: the privacy objects to read (what the command reads on stdin).")
    for p in params:
        help_text = " ".join((p.help or "").split())
        default = ""
        if p.required:
            default = " [required]"
        elif not (p.default in (None, False, ()) or callable(p.default) or type(p.default).__name__ == "Sentinel"):
            default = f" [default: {p.default}]"
        names = _names(p)
        alias = f" (also {', '.join(names[1:])}=)" if len(names) > 1 else ""
        lines.append(f"    {names[0]}{alias}: {help_text}{default}")
    return "\n".join(lines)


def _make(fname: str, path: tuple[str, ...], cmd: click.Command):
    params = [p for p in cmd.params if isinstance(p, click.Option) and p.name not in _OUTPUT]
    pipe = path[-1] == "input"
    source = next((p for p in cmd.params if p.name == "source"), None)
    if pipe:
        params = [p for p in params if p.name != "source"]
    by_name = {n: p for p in params for n in _names(p)}

    def function(**kwargs: Any) -> Result:
        args = list(path)
        stdin = None
        if pipe:
            objects = kwargs.pop("objects", None)
            path_in = kwargs.pop("input", None)
            if objects is not None and path_in is not None:
                raise TypeError(f"{fname}() takes objects= or input=, not both")
            if objects is not None:
                stdin = _objects_text(objects)
            elif path_in is not None and source is not None:
                args += ["--input", str(path_in)]
            elif not kwargs.get("ledger"):
                raise InputError(
                    f"{fname}() needs objects= (or input= a file{', or ledger=' if 'ledger' in by_name else ''})"
                )
        seen: dict[str, str] = {}
        for key, value in kwargs.items():
            if key not in by_name:
                raise TypeError(f"{fname}() got an unexpected keyword argument {key!r}")
            param = by_name[key]
            if param.name in seen:
                raise TypeError(f"{fname}() got {seen[param.name]!r} and {key!r}, two names for one option")
            seen[param.name] = key
            if value is not None:
                args += _option_args(param, value)
        return run(args, stdin=stdin)

    kw = inspect.Parameter.KEYWORD_ONLY
    sig = [inspect.Parameter("objects", kw, default=None), inspect.Parameter("input", kw, default=None)] if pipe else []
    sig += [inspect.Parameter(_names(p)[0], kw, default=None) for p in params]
    function.__signature__ = inspect.Signature(sig, return_annotation=Result)  # type: ignore[attr-defined]
    function.__name__ = function.__qualname__ = fname
    function.__module__ = __name__
    function.__doc__ = _doc(path, cmd, params, pipe)
    return function


def _install() -> list[str]:
    names = []
    for fname, path, cmd in _commands():
        globals()[fname] = _make(fname, path, cmd)
        names.append(fname)
    return names


FUNCTIONS: list[str] = _install()
__all__ += FUNCTIONS


# --------------------------------------------------------------------------------------------- reference


def reference() -> str:
    """The API reference (Markdown), generated from the functions' docstrings; docs/api.md holds it."""
    out = [
        "# dpcalc Python API",
        "",
        "Generated by `python -m dpcalc.api --reference > docs/api.md` from the docstrings; do not edit by hand.",
        "",
        inspect.cleandoc(__doc__ or "").split("\n\n>>>")[0],
        "",
        "## Results",
        "",
        inspect.cleandoc(Result.__doc__ or ""),
        "",
        "- `rows`, `columns`, `warnings`, `notes`, `objects`, `inputs`, `command`: as in the JSON document.",
        "- `to_dict()`: the `--json` document, exactly. `to_records()`: the rows, one dict each.",
        "- `answer_rows()`: the rows that answer the question (the tightest sound ones where marked).",
        "- `column(key)`: one column as a list. `status`: 0, or 1 when a budget check failed (`failure` says why).",
        "- `str(result)`: the table the command prints.",
        "",
        "## Functions",
        "",
    ]
    for name in FUNCTIONS:
        fn = globals()[name]
        args = ", ".join(inspect.signature(fn).parameters)
        out += [f"### `{name}(*, {args})`", "", "```text", fn.__doc__, "```", ""]
    out += ["### `run(args, *, stdin=None)`", "", "```text", inspect.cleandoc(run.__doc__ or ""), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover - exercised by tests/test_api.py through reference()
    if sys.argv[1:] == ["--reference"]:
        sys.stdout.write(reference())
    else:
        sys.exit("usage: python -m dpcalc.api --reference > docs/api.md")
