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
  this size; anything longer is refused before it is parsed.
* :data:`MAX_INT_DIGITS` — integer literals longer than this are refused (no
  count or parameter dpcalc accepts needs more).
* nesting deeper than Python's recursion limit is refused.
"""

from __future__ import annotations

import json
import sys

#: Largest stdin, --input file or ledger dpcalc reads (256 MiB: a million piped objects are ~50 MB).
MAX_INPUT_BYTES = 256 * 1024 * 1024
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


def _constant(name: str):
    raise InputError(f"{name} is not a JSON number (use a finite number)")


def decoder() -> json.JSONDecoder:
    """A JSON decoder that refuses duplicate keys, NaN/Infinity and over-long integers."""
    return json.JSONDecoder(object_pairs_hook=_pairs, parse_int=_int, parse_constant=_constant)


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
    if source == "-":
        stream = getattr(sys.stdin, "buffer", None) if sys.stdin is not None else None
        if stream is None:
            raise InputError(f"{what}: standard input is closed; pipe a document or give a file")
        try:
            raw = stream.read(MAX_INPUT_BYTES + 1)
        except (OSError, ValueError) as exc:
            raise InputError(f"{what}: cannot read standard input ({_reason(exc)})") from None
    else:
        try:
            with open(source, "rb") as fh:
                raw = fh.read(MAX_INPUT_BYTES + 1)
        except OSError as exc:
            raise InputError(f"{what}: cannot read it ({_reason(exc)})") from None
    if len(raw) > MAX_INPUT_BYTES:
        raise InputError(
            f"{what}: more than {MAX_INPUT_BYTES // 2**20} MiB; dpcalc reads at most that much (split the input)"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what}: not UTF-8 text (byte 0x{raw[exc.start]:02X} at offset {exc.start}); save it as UTF-8"
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def suggest(name: str, allowed) -> str:
    """' (did you mean 'x'?)' for a near-miss field name, else ''."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(a) for a in allowed], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
