"""Reading privacy objects from stdin or a file, and routing groups to them.

A command group such as ``amplify`` runs its hidden ``input`` subcommand when
its first argument is an option rather than a mechanism name, so
``dpcalc calibrate gaussian … --json | dpcalc amplify --rate 0.01`` works.
Accepted input: dpcalc JSON documents (their ``objects``), bare privacy
objects, or lists of them — one or several, concatenated or one per line.
"""

from __future__ import annotations

import json
import sys

import click

from dpcalc.model import SCHEMA_VERSION


class PipeGroup(click.Group):
    """A group that sends option-first invocations to its ``input`` subcommand."""

    def parse_args(self, ctx, args):
        first = args[0] if args else None
        help_names = ctx.help_option_names
        if (first is None and not _stdin_is_tty()) or (
            first is not None and first.startswith("-") and first not in help_names
        ):
            args = ["input", *args]
        return super().parse_args(ctx, args)


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


input_option = click.option(
    "--input",
    "source",
    default="-",
    show_default=True,
    help="Where to read privacy objects: a file, or - for stdin (dpcalc --json output, or bare objects).",
)


def read_objects(source: str) -> list[tuple[object, str]]:
    """Parse privacy objects from ``source``; returns (object, where) pairs."""
    from dpcalc.model import ObjectError, from_dict

    name = "stdin" if source == "-" else source
    try:
        text = sys.stdin.read() if source == "-" else open(source, encoding="utf-8").read()
    except OSError as exc:
        raise click.UsageError(f"Invalid value for '--input': cannot read {source!r}: {exc.strerror}.") from None
    if not text.strip():
        raise click.UsageError(
            f"no input on {name}: pipe a dpcalc --json document, or give a mechanism (e.g. 'gaussian') or --input FILE."
        )
    decoder = json.JSONDecoder()
    pos, n_doc, out = 0, 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        n_doc += 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            line = text.count("\n", 0, exc.pos) + 1
            raise click.UsageError(f"{name}: document {n_doc} is not valid JSON at line {line}: {exc.msg}.") from None
        where = f"{name} document {n_doc}"
        if isinstance(value, dict) and "schema_version" in value:
            if value.get("schema_version") != SCHEMA_VERSION:
                raise click.UsageError(
                    f"{where}: schema_version {value.get('schema_version')!r} is not supported; this dpcalc reads "
                    f"version {SCHEMA_VERSION}."
                )
            items = value.get("objects")
            if not isinstance(items, list):
                raise click.UsageError(f"{where}: 'objects' must be a list.")
            if not items:
                raise click.UsageError(f"{where} ({value.get('command', '?')}) carries no privacy object to read.")
        elif isinstance(value, dict):
            items = [value]
        elif isinstance(value, list):
            items = value
        else:
            raise click.UsageError(f"{where}: expected a dpcalc document, a privacy object or a list of them.")
        for i, item in enumerate(items, 1):
            w = f"{where} object {i}"
            try:
                out.append((from_dict(item, w), w))
            except ObjectError as exc:
                raise click.UsageError(str(exc)) from None
    if not out:
        raise click.UsageError(f"{name} holds no privacy object (an empty list?); nothing to do.")
    return out
