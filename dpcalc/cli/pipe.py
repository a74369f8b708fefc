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

    def format_epilog(self, ctx, formatter):
        """``-h`` also lists the options of the pipe mode (the hidden ``input`` subcommand)."""
        hidden = self.get_command(ctx, "input")
        if hidden is not None:
            sub = click.Context(hidden, info_name="input", parent=ctx, **hidden.context_settings)
            records = [r for p in hidden.get_params(sub) if (r := p.get_help_record(sub)) is not None]
            with formatter.section(
                f"Reading privacy objects (when the first argument is an option: {ctx.info_name} [OPTIONS] < JSON)"
            ):
                formatter.write_dl(records)
        super().format_epilog(ctx, formatter)


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


#: Top-level fields of a dpcalc document (result-v1.schema.json); anything else is refused when one is read.
DOCUMENT_FIELDS = (
    "schema_version",
    "dpcalc_version",
    "command",
    "inputs",
    "columns",
    "rows",
    "warnings",
    "notes",
    "objects",
    "budget",
    "audit",
)


def read_objects(source: str) -> list[tuple[object, str]]:
    """Parse privacy objects from ``source``; returns (object, where) pairs.

    Strict: duplicate keys, unknown fields, NaN, over-long integers, deep
    nesting, bytes that are not UTF-8 and input over the size limit are
    refused with the document and object they are in (see
    :mod:`dpcalc.strictjson`).
    """
    from dpcalc.model import ObjectError, check_fields, from_dict
    from dpcalc.strictjson import InputError, decoder, raw_decode, read_text

    name = "stdin" if source == "-" else source
    try:
        text = read_text(source, name)
    except InputError as exc:
        prefix = "Invalid value for '--input': " if source != "-" else ""
        raise click.UsageError(f"{prefix}{exc}.") from None
    if not text.strip():
        raise click.UsageError(
            f"no input on {name}: pipe a dpcalc --json document, or give a mechanism (e.g. 'gaussian') or --input FILE."
        )
    dec = decoder()
    pos, n_doc, out = 0, 0, []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        n_doc += 1
        where = f"{name} document {n_doc}"
        try:
            value, pos = raw_decode(dec, text, pos)
        except json.JSONDecodeError as exc:
            line = text.count("\n", 0, exc.pos) + 1
            raise click.UsageError(f"{name}: document {n_doc} is not valid JSON at line {line}: {exc.msg}.") from None
        except InputError as exc:
            raise click.UsageError(f"{where}: {exc}.") from None
        try:
            items = _document_objects(value, where, check_fields)
        except ObjectError as exc:
            raise click.UsageError(f"{exc}.") from None
        for i, item in enumerate(items, 1):
            w = f"{where} object {i}"
            try:
                out.append((from_dict(item, w), w))
            except ObjectError as exc:
                raise click.UsageError(f"{exc}.") from None
    if not out:
        raise click.UsageError(f"{name} holds no privacy object (an empty list?); nothing to do.")
    return out


def _document_objects(value, where: str, check_fields) -> list:
    """The privacy objects a parsed JSON value carries: a dpcalc document's ``objects``, one object, or a list."""
    from dpcalc.model import ObjectError

    if isinstance(value, dict) and "schema_version" in value:
        version = value["schema_version"]
        if isinstance(version, bool) or not isinstance(version, int) or version != SCHEMA_VERSION:
            raise ObjectError(
                f"{where}: schema_version {version!r} is not supported; this dpcalc reads version {SCHEMA_VERSION} "
                "(a whole number)"
            )
        check_fields(value, DOCUMENT_FIELDS, where, "a dpcalc document")
        items = value.get("objects")
        if not isinstance(items, list):
            raise ObjectError(f"{where}: 'objects' must be a list")
        if not items:
            raise ObjectError(f"{where} ({value.get('command', '?')}) carries no privacy object to read")
        return items
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return value
    raise ObjectError(f"{where}: expected a dpcalc document, a privacy object or a list of them")
