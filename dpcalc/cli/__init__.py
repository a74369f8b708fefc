"""The ``dpcalc`` command line.

Commands only parse options, call :mod:`dpcalc.core` and hand a
:class:`~dpcalc.model.Result` to :mod:`dpcalc.render`. Errors a user can
cause become one ``Error:`` line on stderr and exit code 2; an output fault
(full disk, closed stdout) exit code 74, a broken pipe a quiet 141 and an
interrupt (Ctrl-C) ``Error: interrupted.`` and 130 (see :mod:`dpcalc.exitcodes`).
"""

from __future__ import annotations

import re
import sys
import warnings

import click

from dpcalc import __version__
from dpcalc.cli.options import CONTEXT, Group
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


#: A byte of the command line that is not UTF-8 (Python keeps it as a lone surrogate U+DC80–U+DCFF), as
#: such or as click's repr of it.
_RAW_BYTE = re.compile("[\udc80-\udcff]")
_RAW_BYTE_REPR = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")  # (not a typed backslash's repr)


def _one_line(text: str) -> str:
    """One line of text for stderr: whitespace runs collapsed, control characters replaced (see textio.clean);
    a byte typed that is not UTF-8 shown as \\xNN (it was \\udcNN, or U+FFFD)."""
    from dpcalc.textio import clean

    text = _RAW_BYTE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    text = _RAW_BYTE_REPR.sub(lambda m: f"{m.group(1)}\\x{m.group(2)}", text)
    return clean(" ".join(text.split()))


class Interrupted(BaseException):
    """Raised by dpcalc's SIGINT handler; not a KeyboardInterrupt, which click would meet with an empty line."""


def _on_sigint(signum, frame):
    raise Interrupted


def _catch_sigint():
    """Route SIGINT to :class:`Interrupted` while a command runs; returns the handler to restore (or None)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        return signal.signal(signal.SIGINT, _on_sigint)
    except (ValueError, OSError):
        return None


def _restore_sigint(previous) -> None:
    import signal

    if previous is not None:
        signal.signal(signal.SIGINT, previous)


def _say(text: str) -> None:
    """One line on stderr; if stderr itself cannot be written, the exit status is all that is left."""
    from dpcalc.textio import OutputError

    try:
        click.echo(text, err=True)
        sys.stderr.flush()
    except OutputError:
        pass


def _silence(stream) -> None:
    """Point a failed stream's file descriptor at /dev/null, so that flushing what is still buffered when the
    interpreter exits cannot fail again (no "Exception ignored ... BrokenPipeError" on stderr)."""
    import os

    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


def _output_failed(exc, streams) -> int:
    """Exit status for an output fault: a broken pipe quietly 141; anything else one Error line and 74."""
    if exc.stream in streams:  # else a file (--plot FILE): nothing of it is buffered
        _silence(streams[exc.stream])
    if exc.broken_pipe:
        return int(ExitCode.BROKEN_PIPE)
    _say(f"Error: {_one_line(str(exc))}.")
    return int(ExitCode.IO_ERROR)


class DpcalcGroup(Group):
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
        """Run a command and return (or exit with) its status; see :class:`dpcalc.exitcodes.ExitCode`.

        stdout and stderr are wrapped in :class:`dpcalc.textio.GuardedStream` while the command runs, so a write
        fault anywhere (buffered output included: stdout is flushed here) ends as one ``Error:`` line and a status.
        """
        from dpcalc.textio import GuardedStream, OutputError

        originals = {"stdout": sys.stdout, "stderr": sys.stderr}
        sys.stdout = GuardedStream("stdout", originals["stdout"])
        sys.stderr = GuardedStream("stderr", originals["stderr"])
        previous = _catch_sigint()
        try:
            try:
                code = self._run(args, prog_name, complete_var, **extra)
                sys.stdout.flush()
                sys.stderr.flush()
            except OutputError as exc:
                code = _output_failed(exc, originals)
            except BrokenPipeError:  # pragma: no cover - writes go through GuardedStream
                _silence(originals["stdout"])
                code = int(ExitCode.BROKEN_PIPE)
            except Interrupted:
                _say("Error: interrupted.")
                code = int(ExitCode.INTERRUPTED)
        finally:
            _restore_sigint(previous)
            sys.stdout, sys.stderr = originals["stdout"], originals["stderr"]
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, args, prog_name, complete_var, **extra) -> int:
        from dpcalc.textio import OutputError

        try:
            with warnings.catch_warnings():
                # Overflow inside numpy is handled where it matters (a result
                # that is not finite is refused at render time); the warning
                # itself is noise for a user.
                warnings.simplefilter("ignore", RuntimeWarning)
                rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx else str(exc), err=True)
            return int(ExitCode.USAGE)
        except click.Abort:
            # click turns KeyboardInterrupt (SIGINT outside the main thread) and EOFError into Abort.
            _say("Error: interrupted.")
            return int(ExitCode.INTERRUPTED)
        except OutputError:
            raise
        except Exception as exc:
            message = _error_message(exc, sys.argv[1:] if args is None else list(args))
            if message is not None:
                _say(f"Error: {message}")
                return int(ExitCode.USAGE)
            # pragma: no cover - a bug, reported without a traceback
            _say(
                f"Error: internal error ({type(exc).__name__}: {_one_line(str(exc))}); please report this with the "
                "command line that caused it."
            )
            return int(ExitCode.INTERNAL)
        return rv if isinstance(rv, int) else 0


def _error_message(exc: BaseException, args: list[str]) -> str | None:
    """The one-line message (without "Error: ") for an exception a user's input can cause, or None for a bug.

    Shared by the command line (exit code 2) and :mod:`dpcalc.api` (:class:`dpcalc.api.InputError`).
    """
    from dpcalc.core.errors import ValidationError
    from dpcalc.model import UnrepresentableResult

    if isinstance(exc, click.ClickException):
        return _one_line(exc.format_message())
    typed = _typed_values(args)
    given = f" ({typed})" if typed else ""
    if isinstance(exc, UnrepresentableResult):
        text = _one_line(str(exc))
        return text.replace(" for these inputs;", f" for these inputs{given};", 1) if given else text
    if isinstance(exc, (OverflowError, ZeroDivisionError)):
        return (
            f"an intermediate value is too large to represent (over 1e308) for these inputs{given}; use less "
            "extreme values."
        )
    if isinstance(exc, ValidationError):
        # Raised by the core for a value outside a formula's domain.
        return _one_line(_option_message(exc, args))
    if _machine_out_of_memory(exc):
        # The machine's memory, not a bug (large grids are already taken in blocks): a grid or stream too
        # large for this machine.
        return (
            f"out of memory for these inputs{given} ({_one_line(str(exc)) or 'MemoryError'}): the machine cannot "
            "hold this computation; use fewer grid points or objects per run, or run it where more memory is free."
        )
    return None


def _machine_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation the machine refused — numpy's "Unable to allocate …" or Python's bare
    MemoryError — rather than one of the engine's own size limits, which raise MemoryError with their own
    message as a signal and are caught where they arise (one that escaped would be a bug: exit 3)."""
    if not isinstance(exc, MemoryError):
        return False
    text = str(exc)
    return not text or text.startswith("Unable to allocate") or type(exc).__name__ == "_ArrayMemoryError"


def _option_message(exc, args) -> str:
    """A core ValidationError as a message: against the option when the user typed it, else against the inputs
    (the value was derived, e.g. μ = Δ/σ overflowing for σ = 1e-320)."""
    import math

    try:
        finite = math.isfinite(float(exc.value))
    except (TypeError, ValueError, OverflowError):
        finite = True
    option = "--" + exc.name.replace("_", "-")
    if option in args and finite:  # (not finite: derived from what was typed — ρ·T past 1e308 — not typed)
        return f"Invalid value for '{option}': {exc.value!r} is out of range; expected {exc.allowed}."
    got = f"{exc.name} = {exc.value!r}" if finite else f"no finite {exc.name} (beyond floating point)"
    typed = _typed_values(args)
    given = f" ({typed})" if typed else ""
    return (
        f"these inputs{given} give {got}, outside what dpcalc can compute ({exc.allowed} is needed); "
        "use less extreme values."
    )


def _typed_values(args, most: int = 4) -> str:
    """The options typed with their values, for a message about a value derived from them."""
    out = []
    for i, a in enumerate(args):
        if not a.startswith("--") or len(a) <= 2:
            continue
        if "=" in a:
            out.append(a)
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            out.append(f"{a} {args[i + 1]}")
    text = ", ".join(out[:most]) + (", …" if len(out) > most else "")
    return text if len(text) <= 160 else text[:157] + "..."


@click.group(cls=DpcalcGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="dpcalc")
def cli():
    """Privacy budget calculator for differential privacy.

    Answers how much noise to add, what many releases cost in total, what μ
    or ρ mean as (ε, δ), how much subsampling helps, what groups of records
    get, and how far a DP-SGD run can go. Every number says which method
    produced it and whether it is exact, a sound upper bound, or approximate.

    Exit codes: 0 success, 1 a budget check failed (or an audit contradicted
    a claimed ε), 2 bad usage or input, 3 internal error (a bug: please
    report it), 74 output could not be written, 130 interrupted, 141 broken
    pipe.
    """


def main() -> None:
    from dpcalc._alloc import keep_freed_memory

    keep_freed_memory()
    cli.main(prog_name="dpcalc")
