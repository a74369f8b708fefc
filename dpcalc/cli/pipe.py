"""Reading privacy objects from stdin or a file, and routing groups to them.

A command group such as ``amplify`` runs its hidden ``input`` subcommand when
its first argument is an option rather than a mechanism name, so
``dpcalc calibrate gaussian … --json | dpcalc amplify --rate 0.01`` works.
Accepted input: dpcalc JSON documents (their ``objects``), bare privacy
objects, or lists of them — one or several, concatenated or one per line.
"""

from __future__ import annotations

import json
import re
import sys

import click

from dpcalc.cli.options import Group
from dpcalc.model import SCHEMA_VERSION


class PipeGroup(Group):
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


def stdin_has_data() -> bool:
    """Whether stdin holds something other than whitespace already (a command that does not read it refuses that,
    rather than drop it). A TTY, a closed or empty stdin, and a pipe nothing has been written to yet are not data:
    this never waits for a writer. stdin is read only in the cases where it would otherwise be ignored."""
    import io
    import os

    stream = sys.stdin
    if stream is None or _stdin_is_tty():
        return False
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        fd = None
    try:
        if fd is None:  # in memory (dpcalc.api, tests): reading cannot block
            raw = getattr(stream, "buffer", stream).read(65536)
        else:
            import select

            if not select.select([fd], [], [], 0)[0]:
                return False
            raw = os.read(fd, 65536)
    except (OSError, ValueError):
        return False
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return bool(raw and raw.strip())


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
    """Parse privacy objects from ``source``; returns (object, where) pairs, in order.

    Strict: duplicate keys, unknown fields, NaN, over-long integers, deep
    nesting, bytes that are not UTF-8 and input over the size limit are
    refused with the document and object they are in (see
    :mod:`dpcalc.strictjson`). Read as a stream (see :class:`_Reader`).
    """
    reader = _Reader(source, ordered=True)
    reader.run()
    return [
        (obj, f"{reader.name} document {n_doc} object {first + j}")
        for unit, n_doc, first in reader.order
        for j, obj in enumerate(reader.units[unit])
    ]


def read_counted(source: str, several: list | None = None) -> tuple[list[tuple[object, str, int]], int]:
    """The distinct privacy objects of ``source`` with how many times each occurs, and the total.

    Returns ``([(object, where, count), …], total)``: each distinct object once, in
    the order of its first occurrence, named (``where``) after it. Memory grows with
    the number of distinct objects (and distinct document texts), not with the
    input: a million identical objects are one entry with count 10⁶. Errors are
    those of :func:`read_objects`, naming the document and object where they are.

    ``several`` (a list): filled with (where, number) for each document that carries more than one
    distinct object — a dpcalc document of a grid's settings, or of each scheme of one command, whose
    objects are alternatives rather than releases (the caller says so).
    """
    reader = _Reader(source)
    reader.run()
    distinct: dict = {}
    total = 0
    for objs, c, (n_doc, at) in zip(reader.units, reader.counts, reader.first):
        k = len(set(objs)) if several is not None else 1
        if k > 1:
            several.append((f"{reader.name} document {n_doc}", k))
        for j, obj in enumerate(objs):
            total += c
            if obj in distinct:
                distinct[obj][2] += c
            else:
                distinct[obj] = [obj, f"{reader.name} document {n_doc} object {at + j}", c]
    return [tuple(v) for v in distinct.values()], total


#: Whitespace between documents (str.isspace, as documents have always been separated) and inside
#: them (JSON's own four characters).
_SPACE = re.compile(r"\s*")
_JSON_SPACE = re.compile(r"[ \t\n\r]*")
#: How many lengths of already-read texts are tried at each value (the most recently matched first).
_TRIED_LENGTHS = 8


class _Reader:
    """Privacy objects from stdin or a file, read a chunk at a time.

    Documents follow one another (concatenated, or one per line as NDJSON); a
    document that is a JSON array is read element by element. Each document or
    element is parsed and validated once per distinct text: an object text
    seen before (JSON objects end where their braces close, so a text that
    starts with one read before *is* that object) is counted without being
    parsed again. Only the text not consumed yet is held, so memory grows
    with the distinct texts, not with the input.

    Messages are those of parsing the whole input at once: the document
    number, the line of a syntax error (counted over the whole input) and
    the JSON decoder's own words — an error in an array is re-read by the
    decoder from the bracket or comma before it, with the same text after;
    an array's elements are validated once it is read, as a whole array is
    decoded before any element is looked at.

    After :meth:`run`: ``units[u]`` are the objects of a distinct document or
    element text, ``counts[u]`` how many times it occurred and ``first[u]``
    where first (document, number of its first object); with ``ordered``,
    ``order`` lists every occurrence as (unit, document, number).
    """

    def __init__(self, source: str, ordered: bool = False):
        self.source = source
        self.name = "stdin" if source == "-" else source
        self.units: list = []
        self.counts: list[int] = []
        self.first: list[tuple[int, int]] = []
        self.order: list[tuple[int, int, int]] | None = [] if ordered else None
        # Per context (0: a document, 1: an array element, where the same text means something else):
        self._known: tuple[dict[str, int], ...] = ({}, {})  # object text -> unit
        self._lengths: tuple[list[int], ...] = ([], [])  # lengths of known texts, most recently matched first
        self._pending: list[tuple[int, object, int]] = []  # array elements to validate: (unit, value, number)
        self._hits = self._misses = 0  # of known texts looked up by length (not worth it when most miss)
        self.buf = ""
        self.pos = 0  # where reading resumes in buf
        self.keep: int | None = None  # while inside an array: nothing from here on is dropped
        self.lines = 0  # newlines in the text dropped before buf
        self.eof = False

    # ------------------------------------------------------------ the text

    def _more(self, grow: bool = False) -> bool:
        """Read on (until the text not consumed has doubled, with ``grow``); False at the end."""
        from dpcalc.strictjson import InputError

        cut = self.pos if self.keep is None else min(self.pos, self.keep)
        if cut:
            self.lines += self.buf.count("\n", 0, cut)
            self.buf = self.buf[cut:]
            self.pos -= cut
            if self.keep is not None:
                self.keep -= cut
        want = 2 * len(self.buf) if grow else 0
        got = False
        while not self.eof:
            try:
                piece = self.stream.read()
            except InputError as exc:
                raise self._input_error(exc) from None
            if piece is None:
                self.eof = True
                break
            self.buf += piece
            got = got or bool(piece)
            if got and len(self.buf) >= want:
                break
        return got

    def _skip(self, space) -> bool:
        """Move past whitespace; False when the input ends first."""
        while True:
            self.pos = space.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return True
            if not self._more():
                return False

    def _parse(self, dec):
        """The JSON value at pos and its end, reading on while the text so far may end inside it."""
        from dpcalc.strictjson import InputError, raw_decode

        while True:
            try:
                value, end = raw_decode(dec, self.buf, self.pos)
                if end < len(self.buf) or self.eof:  # (a number at the very end may go on)
                    return value, end
            except json.JSONDecodeError as exc:
                cut = exc.pos >= len(self.buf) - 6 or exc.msg.startswith("Unterminated string")
                if self.eof or not cut:
                    raise
            except InputError as exc:
                if self.eof or not str(exc).startswith("an integer of"):  # (its last digits may follow)
                    raise
            self._more(grow=True)

    def _known_unit(self, context: int) -> int | None:
        """The unit of an object text read before that starts at pos (moving past it), else None."""
        buf, pos = self.buf, self.pos
        if pos >= len(buf) or buf[pos] != "{":
            return None
        unit, n = _lookup(buf, pos, self._known[context], self._lengths[context])
        if unit is not None:
            self.pos += n
        return unit

    def _unit(self, objs, end: int, context: int) -> int:
        """The unit of the objects read from buf[pos:end] (the text remembered when it is an object's)."""
        text = self.buf[self.pos : end] if self.buf[self.pos] == "{" else None
        self.pos = end
        if text is not None:
            known, lengths = self._known[context], self._lengths[context]
            unit = known.get(text)
            if unit is not None:
                return unit
            known[text] = len(self.units)
            if len(text) not in lengths:
                lengths.insert(0, len(text))
                del lengths[_TRIED_LENGTHS:]
        self.units.append(objs)
        self.counts.append(0)
        self.first.append((0, 0))
        return len(self.units) - 1

    def _took(self, unit: int, n_doc: int, at: int) -> None:
        if not self.counts[unit]:
            self.first[unit] = (n_doc, at)
        self.counts[unit] += 1
        if self.order is not None:
            self.order.append((unit, n_doc, at))

    def _input_error(self, exc) -> click.UsageError:
        prefix = "Invalid value for '--input': " if self.source != "-" else ""
        return click.UsageError(f"{prefix}{exc}.")

    # ------------------------------------------------------------ documents

    def run(self) -> None:
        from dpcalc.strictjson import InputError, TextStream, decoder

        try:
            self.stream = TextStream(self.source, self.name)
        except InputError as exc:
            raise self._input_error(exc) from None
        with self.stream:
            self.n_doc = 0
            dec = decoder()
            while True:
                missed = self._run_known(0)  # (True: stopped at an object whose text is new)
                if not missed and not self._skip(_SPACE):
                    break
                self.n_doc += 1
                where = f"{self.name} document {self.n_doc}"
                if self.buf[self.pos] == "[":
                    self._array(dec, where)
                    continue
                unit = None if missed else self._known_unit(0)
                if unit is None:
                    value, end = self._value(dec, where)
                    objs = _validated(_checked(_document_objects, value, where), where, 1)
                    unit = self._unit(objs, end, 0)
                self._took(unit, self.n_doc, 1)
        if self.n_doc == 0:
            raise click.UsageError(
                f"no input on {self.name}: pipe a dpcalc --json document, or give a mechanism (e.g. 'gaussian') "
                "or --input FILE."
            )
        if not self.units:
            raise click.UsageError(f"{self.name} holds no privacy object (an empty list?); nothing to do.")

    def _run_known(self, context: int, space=_SPACE) -> bool:
        """The fast path: documents whose text was read before, one after another, counted in place.

        Stops (pos at the next document, or where the text read so far ends) at anything else:
        a new text (then True, pos at it), an array, the end of what is read. (For array elements,
        see :meth:`_array`.)
        """
        known, lengths = self._known[context], self._lengths[context]
        if not lengths:
            return False
        missed = False
        buf, pos, size, match = self.buf, self.pos, len(self.buf), space.match
        counts, order, n_doc = self.counts, self.order, self.n_doc
        n = lengths[0]
        while True:
            at = match(buf, pos).end()
            if at >= size or buf[at] != "{":
                break
            unit = known.get(buf[at : at + n])
            if unit is None:
                unit, n = _lookup(buf, at, known, lengths, self._hits >= self._misses // 4)
                if unit is None:
                    pos, missed = at, True
                    self._misses += 1
                    break
                self._hits += 1
            pos = at + n
            n_doc += 1
            counts[unit] += 1
            if order is not None:
                order.append((unit, n_doc, 1))
        self.pos, self.n_doc = pos, n_doc
        return missed

    def _value(self, dec, where: str):
        """A whole document's value and end, its errors worded as the decoder words them."""
        from dpcalc.strictjson import InputError

        try:
            return self._parse(dec)
        except json.JSONDecodeError as exc:
            raise self._syntax(exc.msg, exc.pos) from None
        except InputError as exc:
            raise click.UsageError(f"{where}: {exc}.") from None

    def _syntax(self, msg: str, pos: int) -> click.UsageError:
        line = self.lines + self.buf.count("\n", 0, pos) + 1
        return click.UsageError(f"{self.name}: document {self.n_doc} is not valid JSON at line {line}: {msg}.")

    def _array(self, dec, where: str) -> None:
        """A document that is a JSON array, element by element.

        ``keep`` holds the bracket, the comma or the end of the element before the
        current step, so that an error can be re-read by the decoder from there
        (after ``[0`` for a comma or an element's end) and come out as it would from
        the whole array.
        """
        from dpcalc.strictjson import InputError

        self.keep = self.pos  # the '['
        self.pos += 1
        lead = ""  # what the decoder is given before buf[keep:] when an error is re-read
        i = 0
        known, lengths = self._known[1], self._lengths[1]
        try:
            if self._skip(_JSON_SPACE) and self.buf[self.pos] == "]":
                self.pos += 1
                return
            while True:
                # An element.
                unit = self._known_unit(1)
                i += 1
                if unit is None:
                    try:
                        if self.pos >= len(self.buf):
                            raise json.JSONDecodeError("Expecting value", self.buf, self.pos)
                        value, end = self._parse(dec)
                    except json.JSONDecodeError:
                        raise self._reread(dec, lead) from None
                    except InputError as exc:
                        raise click.UsageError(f"{where}: {exc}.") from None
                    known_units = len(self.units)
                    unit = self._unit(None, end, 1)
                    if unit == known_units:  # a new text: validated once the array is read
                        self._pending.append((unit, value, i))
                self._took(unit, self.n_doc, i)
                # The fast path: ", " and an element read before, again and again.
                buf, pos, size, match = self.buf, self.pos, len(self.buf), _JSON_SPACE.match
                n = lengths[0] if lengths else 0
                while n:
                    at = match(buf, pos).end()
                    if at >= size or buf[at] != ",":
                        break
                    at = match(buf, at + 1).end()
                    if at >= size or buf[at] != "{":
                        break
                    unit = known.get(buf[at : at + n])
                    if unit is None:
                        unit, n = _lookup(buf, at, known, lengths)
                        if unit is None:
                            break
                    pos = at + n
                    i += 1
                    self._took(unit, self.n_doc, i)
                self.pos = pos
                # A comma, or the closing bracket.
                self.keep, lead = self.pos, "[0"
                if not self._skip(_JSON_SPACE) or self.buf[self.pos] not in ",]":
                    raise self._reread(dec, lead)
                if self.buf[self.pos] == "]":
                    self.pos += 1
                    for unit, value, j in self._pending:
                        self.units[unit] = _validated([value], where, j)
                    self._pending.clear()
                    return
                self.keep = self.pos
                self.pos += 1
                self._skip(_JSON_SPACE)
        finally:
            self.keep = None

    def _reread(self, dec, lead: str) -> click.UsageError:
        """The decoder's own error for the array from ``keep`` on (the text read reaches the error)."""
        from dpcalc.strictjson import InputError, raw_decode

        try:
            raw_decode(dec, lead + self.buf[self.keep :], 0)
        except json.JSONDecodeError as exc:
            return self._syntax(exc.msg, self.keep + exc.pos - len(lead))
        except InputError:  # pragma: no cover - the element was decoded before
            pass
        raise AssertionError("an array that failed to decode decoded")  # pragma: no cover


def _lookup(buf: str, at: int, known: dict, lengths: list, scan: bool = True) -> tuple[int | None, int]:
    """(unit, length) of a known object text that starts buf[at:] (at an opening brace), else (None, 0).

    Tried: the rest of the line (one object per line, NDJSON; a trailing comma dropped, for arrays
    one element a line), then (with ``scan``) the lengths of the texts known, most recently matched
    first (which moves to the front). A known text that starts the rest of the input is that very
    object: an object's text ends where its braces close, whatever follows.
    """
    nl = buf.find("\n", at)
    if nl >= 0:
        line = buf[at:nl].rstrip()
        unit = known.get(line[:-1] if line.endswith(",") else line)
        if unit is not None:
            n = len(line) - line.endswith(",")
            if n in lengths and lengths[0] != n:
                lengths.remove(n)
                lengths.insert(0, n)
            return unit, n
    for i, n in enumerate(lengths if scan else ()):
        unit = known.get(buf[at : at + n])
        if unit is not None:
            if i:
                lengths.insert(0, lengths.pop(i))
            return unit, n
    return None, 0


def _checked(fn, value, where):
    from dpcalc.model import ObjectError

    try:
        return fn(value, where)
    except ObjectError as exc:
        raise click.UsageError(f"{exc}.") from None


def _validated(items: list, where: str, first: int) -> tuple:
    """The privacy objects of ``items``, numbered from ``first`` in the document ``where``."""
    from dpcalc.model import ObjectError, from_dict

    out = []
    for i, item in enumerate(items, first):
        try:
            out.append(from_dict(item, f"{where} object {i}"))
        except ObjectError as exc:
            raise click.UsageError(f"{exc}.") from None
    return tuple(out)


def _document_objects(value, where: str) -> list:
    """The privacy objects a parsed JSON value carries: a dpcalc document's ``objects``, one object, or a list."""
    from dpcalc.model import ObjectError, check_fields

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
