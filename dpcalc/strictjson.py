"""Reading JSON and text that users pipe or share, strictly and within bounds.

Python's ``json`` module is lenient in ways that can change an answer without a
word: a repeated key keeps its last value (``{"mu": 50, "mu": 1}`` reads as
μ = 1), ``NaN`` and ``Infinity`` are accepted, and hostile documents end in
errors that are not about the document (``RecursionError`` for deep nesting,
``ValueError`` for integers of thousands of digits). Everything dpcalc reads
goes through :func:`decoder` and :func:`read_text`, which turn each of these
into a :class:`InputError` naming the problem.

Limits (documented in the README):

* :data:`MAX_INPUT_BYTES` — stdin, ``--input`` files and ledgers are read up to
  this size; anything longer is refused (ledgers before they are parsed; stdin and
  ``--input``, which :class:`TextStream` reads a chunk at a time, when the count of
  bytes read passes it).
* :data:`MAX_INT_DIGITS` — integer literals longer than this are refused (no
  count or parameter dpcalc accepts needs more).
* nesting deeper than Python's recursion limit is refused.
"""

from __future__ import annotations

import codecs
import json
import sys

#: Largest stdin, --input file or ledger dpcalc reads (256 MiB: a million piped objects are ~50 MB).
MAX_INPUT_BYTES = 256 * 1024 * 1024
#: Bytes :class:`TextStream` reads at a time.
CHUNK_BYTES = 1 << 20
#: Longest integer literal accepted in JSON (a 64-bit count has 20 digits).
MAX_INT_DIGITS = 100


class InputError(ValueError):
    """A document cannot be read as it stands; the message says why (no location prefix)."""


def _pairs(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise InputError(f"duplicate key {k!r} in one object (JSON keeps only the last; dpcalc refuses)")
        out[k] = v
    return out


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise InputError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS} are accepted)")
    return int(text)


def _float(text: str) -> float:
    v = float(text)
    if v == 0.0 and any(c in "123456789" for c in text.partition("e")[0].partition("E")[0]):
        # 1e-400 underflows to 0: the field would silently hold a different number.
        raise InputError(f"{text} is too small to represent (it would be read as 0; the smallest is about 5e-324)")
    return v + 0.0  # (−0.0 is 0)


def _constant(name: str):
    raise InputError(f"{name} is not a JSON number (use a finite number)")


def decoder() -> json.JSONDecoder:
    """A JSON decoder that refuses duplicate keys, NaN/Infinity, over-long integers and numbers that underflow."""
    return json.JSONDecoder(object_pairs_hook=_pairs, parse_int=_int, parse_float=_float, parse_constant=_constant)


def raw_decode(dec: json.JSONDecoder, text: str, pos: int):
    """``dec.raw_decode`` with deep nesting reported as an :class:`InputError`."""
    try:
        return dec.raw_decode(text, pos)
    except RecursionError:
        raise InputError("nested too deeply") from None


def loads(text: str):
    """Parse one whole JSON document strictly (see :func:`decoder`)."""
    dec = decoder()
    i = len(text) - len(text.lstrip())
    value, end = raw_decode(dec, text, i)
    if text[end:].strip():
        raise json.JSONDecodeError("Extra data", text, end + len(text[end:]) - len(text[end:].lstrip()))
    return value


def read_text(source: str, what: str) -> str:
    """Read a file (or ``-`` for stdin) as UTF-8 text, bounded by :data:`MAX_INPUT_BYTES`.

    A UTF-8 byte-order mark is dropped. Raises :class:`InputError` for a
    closed stdin, an unreadable file, oversize input or bytes that are not
    UTF-8; ``what`` names the input in messages (e.g. "stdin", "ledger x.toml").
    """
    with TextStream(source, what, chunk=MAX_INPUT_BYTES + 1) as stream:
        pieces = []
        while (piece := stream.read()) is not None:
            pieces.append(piece)
    return "".join(pieces)


class TextStream:
    """A file (or ``-`` for stdin) as UTF-8 text, a chunk of :data:`CHUNK_BYTES` at a time.

    The checks and messages of :func:`read_text`, as the bytes arrive: a closed
    stdin or an unreadable file, more than :data:`MAX_INPUT_BYTES` in all, bytes
    that are not UTF-8 (named with their offset in the whole input); a UTF-8
    byte-order mark at the start is dropped. Use as a context manager (a file
    is closed at the end; stdin is left open).
    """

    def __init__(self, source: str, what: str, chunk: int | None = None):
        self.what = what
        self.chunk = CHUNK_BYTES if chunk is None else chunk
        self.count = 0  # bytes read so far
        self.first = True
        self.done = False
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._own = source != "-"
        if source == "-":
            stream = getattr(sys.stdin, "buffer", None) if sys.stdin is not None else None
            if stream is None:
                raise InputError(f"{what}: standard input is closed; pipe a document or give a file")
            self._fh = stream
        else:
            try:
                self._fh = open(source, "rb")
            except OSError as exc:
                raise InputError(f"{what}: cannot read it ({_reason(exc)})") from None

    def __enter__(self) -> TextStream:
        return self

    def __exit__(self, *exc) -> None:
        if self._own:
            self._fh.close()

    def read(self) -> str | None:
        """The next piece of text ('' when a chunk ends inside a character), or None at the end."""
        if self.done:
            return None
        try:
            raw = self._fh.read(min(self.chunk, MAX_INPUT_BYTES + 1 - self.count))
        except (OSError, ValueError) as exc:
            where = "standard input" if not self._own else "it"
            raise InputError(f"{self.what}: cannot read {where} ({_reason(exc)})") from None
        before = self.count - len(self._decoder.getstate()[0])  # offset of the decoder's first byte
        self.count += len(raw)
        if self.count > MAX_INPUT_BYTES:
            limit = MAX_INPUT_BYTES // 2**20
            raise InputError(f"{self.what}: more than {limit} MiB; dpcalc reads at most that much (split the input)")
        try:
            text = self._decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise InputError(
                f"{self.what}: not UTF-8 text (byte 0x{exc.object[exc.start]:02X} at offset {before + exc.start}); "
                "save it as UTF-8"
            ) from None
        if self.first and text:
            self.first = False
            if text.startswith("\ufeff"):
                text = text[1:]
        if not raw:
            self.done = True
            return text or None
        return text


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def suggest(name: str, allowed) -> str:
    """' (did you mean 'x'?)' for a near-miss field name, else ''."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(a) for a in allowed], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
