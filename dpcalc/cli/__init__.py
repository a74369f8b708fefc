"""The ``dpcalc`` command line.

Commands only parse options, call :mod:`dpcalc.core` and hand a
:class:`~dpcalc.model.Result` to :mod:`dpcalc.render`. Errors a user can
cause become one ``Error:`` line on stderr and exit code 2.
"""

from __future__ import annotations

import sys
import warnings

import click

from dpcalc import __version__
from dpcalc.cli.options import CONTEXT
from dpcalc.exitcodes import ExitCode

#: name → (module, attribute); imported on first use.
COMMANDS = {
    "calibrate": ("dpcalc.cli.calibrate", "calibrate"),
    "convert": ("dpcalc.cli.convert", "convert"),
    "compose": ("dpcalc.cli.compose", "compose"),
    "amplify": ("dpcalc.cli.amplify", "amplify"),
    "group": ("dpcalc.cli.group", "group"),
    "plan-sgd": ("dpcalc.cli.plan_sgd", "plan_sgd"),
}


def _one_line(text: str) -> str:
    return " ".join(text.split())


class DpcalcGroup(click.Group):
    """A group that loads subcommands lazily and reports errors in one line."""

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        import importlib

        module, attr = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        from dpcalc.core.errors import ValidationError
        from dpcalc.model import UnrepresentableResult

        try:
            with warnings.catch_warnings():
                # Overflow inside numpy is handled where it matters (a result
                # that is not finite is refused at render time); the warning
                # itself is noise for a user.
                warnings.simplefilter("ignore", RuntimeWarning)
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx else str(exc), err=True)
            code = int(ExitCode.USAGE)
        except click.ClickException as exc:
            click.echo(f"Error: {_one_line(exc.format_message())}", err=True)
            code = int(ExitCode.USAGE)
        except UnrepresentableResult as exc:
            click.echo(f"Error: {_one_line(str(exc))}", err=True)
            code = int(ExitCode.USAGE)
        except (OverflowError, ZeroDivisionError):
            click.echo(
                "Error: an intermediate value is too large to represent (over 1e308) for these inputs; use smaller "
                "values (for example a smaller μ, ρ, k or a larger σ).",
                err=True,
            )
            code = int(ExitCode.USAGE)
        except ValidationError as exc:
            # Raised by the core for a value outside a formula's domain.
            click.echo(f"Error: {_one_line(_option_message(exc))}", err=True)
            code = int(ExitCode.USAGE)
        except click.Abort:
            click.echo("Aborted.", err=True)
            code = int(ExitCode.USAGE)
        except BrokenPipeError:
            code = 0
        except Exception as exc:  # pragma: no cover - a bug, reported without a traceback
            click.echo(
                f"Error: internal error ({type(exc).__name__}: {_one_line(str(exc))}); please report this with the "
                "command line that caused it.",
                err=True,
            )
            code = int(ExitCode.INTERNAL)
        else:
            code = rv if isinstance(rv, int) else 0
        if standalone_mode:
            sys.exit(code)
        return code


def _option_message(exc) -> str:
    return f"Invalid value for '--{exc.name.replace('_', '-')}': {exc.value!r} is out of range; expected {exc.allowed}."


@click.group(cls=DpcalcGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="dpcalc")
def cli():
    """Privacy budget calculator for differential privacy.

    Answers how much noise to add, what many releases cost in total, what μ
    or ρ mean as (ε, δ), how much subsampling helps, what groups of records
    get, and how far a DP-SGD run can go. Every number says which method
    produced it and whether it is exact, a sound upper bound, or approximate.

    Exit codes: 0 success, 1 a budget check failed, 2 bad usage or input.
    """


def main() -> None:
    from dpcalc._alloc import keep_freed_memory

    keep_freed_memory()
    cli.main(prog_name="dpcalc")
