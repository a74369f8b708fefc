"""Text for people and the streams it goes to: control characters, encodings and write faults.

Kept apart from :mod:`dpcalc.render` so that wrapping stdout and stderr at
start-up (``dpcalc --help`` included) costs only this small module.

**Terminal safety.** Text for people (table cells, the title, notes, warnings,
the budget-failure line and ``Error:`` lines) may quote inputs such as ledger
release names. In it every control character — C0 (U+0000–U+001F, tab and
newline included), DEL (U+007F) and C1 (U+0080–U+009F), which takes the
introducer away from every ESC/CSI sequence — and every bidirectional
override, embedding, isolate or mark (U+061C, U+200E, U+200F, U+202A–U+202E,
U+2066–U+2069) and line/paragraph separator (U+2028, U+2029) is replaced by
U+FFFD (�), one for each character; the rest of the text is shown as is.
JSON, ndjson, CSV and ``--value`` output carry text verbatim (JSON escapes
control characters itself).

**Encodings.** When a stream cannot encode a character (for example
``PYTHONIOENCODING=ascii`` or ``latin-1``), text for people spells it in
ASCII (:data:`ASCII_SPELLING`: ε → eps, δ → delta, σ² → sigma^2, ≥ → >=, … ;
superscript and subscript runs become ``^…`` and ``_…``, accented letters
lose their accents, anything else becomes ``?``), before the table is laid
out so columns stay aligned. JSON and ndjson are then written with ``\\u``
escapes (the same values, still valid JSON); CSV or ``--value`` text the
encoding cannot carry is refused with :class:`OutputError` rather than
changed. Machine output is built whole before one write: an error never
leaves a partial document.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import re
import unicodedata
from functools import lru_cache
from typing import Any, TextIO

# --------------------------------------------------------------------------
# Text for people: control characters and encodings
# --------------------------------------------------------------------------

#: What replaces each control character in text for people.
REPLACEMENT = "\ufffd"

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def clean(text: str) -> str:
    """``text`` with each control, bidi, line-separator or lone surrogate character replaced by U+FFFD.

    >>> clean("a\\x1b[2Jb")
    'a\\ufffd[2Jb'
    """
    return _CONTROL.sub(REPLACEMENT, text)


def _greek() -> dict[str, str]:
    out = {}
    for code in range(0x391, 0x3CA):
        name = unicodedata.name(chr(code), "")
        if "LETTER" not in name:
            continue
        word = name.split("LETTER ")[1].replace("LAMDA", "LAMBDA").replace("FINAL ", "").lower()
        out[chr(code)] = word.capitalize() if "CAPITAL" in name else word
    out["ε"] = "eps"
    return out


#: ASCII spellings of the characters dpcalc prints, used where a stream cannot encode them.
ASCII_SPELLING: dict[str, str] = {
    **_greek(),
    "µ": "mu",
    "≥": ">=",
    "≤": "<=",
    "≠": "!=",
    "≈": "~",
    "±": "+/-",
    "×": "x",
    "·": "*",
    "√": "sqrt",
    "∞": "inf",
    "′": "'",
    "″": "''",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "–": "-",
    "—": "-",
    "−": "-",
    "─": "-",
    "…": "...",
    "→": "->",
    "←": "<-",
    "↔": "<->",
    "⇒": "=>",
    "⇔": "<=>",
    "∈": "in",
    "∉": "not in",
    "⌈": "ceil(",
    "⌉": ")",
    "⌊": "floor(",
    "⌋": ")",
    "§": "S",
    "½": "1/2",
    "\u00a0": " ",
    REPLACEMENT: "?",
}
_SUPER = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁱⁿ", "0123456789+-=()in"))
_SUB = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜᵢⱼ", "0123456789+-=()aeoxhklmnpstij"))
_NON_ASCII = re.compile("[^\x00-\x7f]+")


@lru_cache(maxsize=32)
def _codec(encoding: str | None) -> str:
    try:
        return codecs.lookup(encoding or "utf-8").name
    except LookupError:
        return "ascii"


def unicode_capable(encoding: str | None) -> bool:
    """Whether a stream in ``encoding`` can carry any text (UTF-8, -16, -32; None counts as UTF-8)."""
    return _codec(encoding).startswith("utf")


def stream_encoding(stream: Any) -> str:
    """The encoding text written to ``stream`` ends up in (UTF-8 for in-memory streams)."""
    return _codec(getattr(stream, "encoding", None))


def spell(text: str, encoding: str | None) -> str:
    """``text`` as ``encoding`` can carry it: unencodable characters spelled in ASCII, else ``?``.

    >>> spell("ε ≥ 1 at δ = 10⁻⁶, σ² = 2", "ascii")
    'eps >= 1 at delta = 10^-6, sigma^2 = 2'
    >>> spell("σ × 2", "latin-1")
    'sigma × 2'
    """
    codec = _codec(encoding)
    if text.isascii() or codec.startswith("utf"):
        return text
    try:
        text.encode(codec)
        return text
    except UnicodeEncodeError:
        pass

    def can(s: str) -> bool:
        try:
            s.encode(codec)
            return True
        except UnicodeEncodeError:
            return False

    def run(match: re.Match) -> str:
        out, mode = [], ""
        for ch in match.group():
            if can(ch):
                out.append(ch)
                mode = ""
            elif ch in _SUPER or ch in _SUB:
                table, mark = (_SUPER, "^") if ch in _SUPER else (_SUB, "_")
                if mode != mark:
                    out.append(mark)
                    mode = mark
                out.append(table[ch])
            else:
                mode = ""
                rep = ASCII_SPELLING.get(ch)
                if rep is None:
                    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
                    rep = base if can(base) else "?"
                out.append(rep)
        return "".join(out)

    return _NON_ASCII.sub(run, text)


def for_people(text: str, stream: Any) -> str:
    """Text for people, ready for ``stream``: control characters replaced, then spelled for its encoding."""
    return spell(clean(text), stream_encoding(stream))


# --------------------------------------------------------------------------
# Streams
# --------------------------------------------------------------------------


class OutputError(Exception):
    """Output could not be written: a closed or full stream, a broken pipe, or an encoding that cannot carry it.

    Not an :class:`OSError` on purpose: click turns an EPIPE ``OSError`` into exit status 1 by itself.
    """

    def __init__(self, stream: str, reason: str, broken_pipe: bool = False):
        super().__init__(f"cannot write to {stream} ({reason})")
        self.stream = stream
        self.reason = reason
        self.broken_pipe = broken_pipe


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


class GuardedStream:
    """A text stream for stdout or stderr that spells text its encoding cannot carry and reports write faults.

    Every ``OSError`` from writing or flushing (and any write to a stream that
    was closed when the process started, which Python gives as ``None``)
    becomes an :class:`OutputError` naming the stream. It has no ``buffer``,
    so click writes through it too (help text included).
    """

    def __init__(self, name: str, inner: TextIO | None):
        self.name = name
        self.inner = inner
        self.encoding = stream_encoding(inner) if inner is not None else "utf-8"
        self.errors = "strict"
        self._plain = unicode_capable(self.encoding)

    def write(self, text: str | bytes) -> int:
        if isinstance(text, (bytes, bytearray)) and text:
            # click (8.5 and later) echoes some text as bytes (the shell-completion script) and, finding no
            # binary buffer here, writes them to this stream: take them as text in this stream's encoding.
            # The empty write(b"") stays a TypeError: it is how click tells a text stream from a binary one.
            text = bytes(text).decode(self.encoding, "replace")
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str or bytes, not {type(text).__name__}")
        if self.inner is None:
            raise OutputError(self.name, "it is closed")
        if not self._plain:
            text = spell(text, self.encoding)
        try:
            try:
                self._write_all(text)
            except UnicodeEncodeError:  # the last resort for text for people (e.g. click's): '?'
                self._write_all(text.encode(self.encoding, "replace").decode(self.encoding))
        except OSError as exc:
            raise self._error(exc) from None
        except ValueError as exc:  # a stream closed under us
            raise OutputError(self.name, str(exc)) from None
        return len(text)

    def _write_all(self, text: str) -> None:
        inner = self.inner
        raw = getattr(inner, "buffer", None)
        if os.name == "posix" and isinstance(raw, io.RawIOBase) and len(text) > 512:
            # Unbuffered stdout (python -u, PYTHONUNBUFFERED): TextIOWrapper makes one write(2) and drops what
            # it did not take, so a pipe closed mid-way would cut the output short without an error. Loop.
            inner.flush()
            view = memoryview(text.encode(inner.encoding, inner.errors or "strict"))
            while view:
                n = raw.write(view)
                if not n:
                    raise BlockingIOError(errno.EAGAIN, "the stream took nothing")
                view = view[n:]
        else:
            inner.write(text)

    def flush(self) -> None:
        if self.inner is None:
            return
        try:
            self.inner.flush()
        except OSError as exc:
            raise self._error(exc) from None
        except ValueError:
            pass

    def _error(self, exc: OSError) -> OutputError:
        return OutputError(self.name, _reason(exc), broken_pipe=isinstance(exc, BrokenPipeError))

    def isatty(self) -> bool:
        try:
            return self.inner is not None and self.inner.isatty()
        except (ValueError, OSError):
            return False

    def fileno(self) -> int:
        if self.inner is None:
            raise io.UnsupportedOperation(f"{self.name} is closed")
        return self.inner.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return False
