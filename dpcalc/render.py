"""Result → text table | Markdown | JSON | CSV | ndjson, and plots. The only module that prints.

Tables round every number in the direction that keeps it safe (see
:class:`dpcalc.model.Column`), so a displayed ε is never below the computed
one. JSON and CSV carry full precision (shortest round-trip repr).

Tables are laid out here, in plain text (the look of a rich ``SIMPLE_HEAD``
table, with no trailing spaces on any line), so nothing in them is ever read
as markup, and 100,000 rows take about a second. On a terminal the header is
bold, the title italic and approximate rows yellow (no colour with
``NO_COLOR``; no styles at all with ``TERM=dumb``).

Markdown (``--format markdown``) is the table as GitHub-flavoured Markdown with
the same safe-side rounding, its notes, warnings and budget verdict: a report for
``$GITHUB_STEP_SUMMARY``, a pull-request comment or a model card. ``--plot`` draws
the rows' curve (:mod:`dpcalc.plot`): to an image file, or as a text chart under the
table (in the report for Markdown; on stderr for machine output, which it never
touches).

Text for people is made terminal-safe and spelled for its stream's encoding by
:mod:`dpcalc.textio` (which see). Machine output is built whole before one write: an error never
leaves a partial document.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import sys
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Any, TextIO

from dpcalc.model import Column, Result, UnrepresentableResult
from dpcalc.textio import (  # noqa: F401 - re-exported: the names render's callers and tests use
    ASCII_SPELLING,
    GuardedStream,
    OutputError,
    clean,
    for_people,
    spell,
    stream_encoding,
    unicode_capable,
)

FORMATS = ("table", "json", "csv", "ndjson", "markdown")
SIGNIFICANT = 6


def format_number(value: float, safe: str = "nearest", digits: int = SIGNIFICANT) -> str:
    """Format to ``digits`` significant digits, rounding toward the safe side."""
    if value == 0:
        return "0"
    if not math.isfinite(value):  # (never a printed bound; a guard for messages)
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if safe not in ("up", "down"):
        # Echoed inputs: float round-off (relative 1e-12 and below) is not shown (0.1 * 9 is 0.9).
        value = float(f"{value:.12g}")
    # Bounds are rounded toward their safe side from the very value computed, to the last digit shown:
    # an upper bound of 0.9000000000000001 is shown as 0.900001, never as 0.9.
    short = repr(value)
    if len(short.lstrip("-").replace(".", "").split("e")[0].strip("0")) <= digits:
        # The shortest text that reads back as this very float fits: show it
        # (no rounding happens, so no direction is needed).
        return _tidy(short)
    mode = {"up": ROUND_CEILING, "down": ROUND_FLOOR}.get(safe, ROUND_HALF_EVEN)
    d = Decimal(value)  # exact binary value
    q = Decimal(1).scaleb(d.adjusted() - digits + 1)
    r = d.quantize(q, rounding=mode)
    if mode == ROUND_HALF_EVEN and abs(r) == 1:
        # An echoed 0.9999999 is not shown as 1: δ = 1 (or a rate, a probability of 1) means something else.
        return format_number(value, safe, digits + 1)
    exp = r.adjusted()
    if -4 <= exp < 7:
        text = format(r, "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    mant = r.scaleb(-exp)
    m = format(mant, "f").rstrip("0").rstrip(".") if "." in format(mant, "f") else format(mant, "f")
    return f"{m}e{exp:+03d}"


def format_compared(
    a: float, b: float, above: bool, safe_a: str = "nearest", safe_b: str = "nearest", digits: int = SIGNIFICANT
) -> tuple[str, str]:
    """``a`` and ``b`` as a message compares them (``a > b`` where ``above``, else ``a <= b``): each at
    ``digits`` significant digits rounded toward its own safe side, with more digits (up to 17) until the texts
    read the way the comparison went — a budget check never says "ε = 9611.66 > 9611.66". Where no
    rounding does, the shortest texts that read back as the two floats (``repr``)."""

    def holds(x: str, y: str) -> bool:
        return float(x) > float(y) if above else float(x) <= float(y)

    for n in range(digits, 18):
        x, y = format_number(a, safe_a, n), format_number(b, safe_b, n)
        if holds(x, y):
            return x, y
    return _tidy(repr(float(a))), _tidy(repr(float(b)))


def _tidy(text: str) -> str:
    if "e" in text:
        m, e = text.split("e")
        m = m.rstrip("0").rstrip(".") if "." in m else m
        return f"{m}e{int(e):+03d}"
    if text.endswith(".0"):
        text = text[:-2]
    f = float(text)
    if f != 0 and not (1e-4 <= abs(f) < 1e7):
        return _tidy(f"{f:e}")
    return text


def _write(out: TextIO, text: str) -> None:
    if text:
        out.write(text)


def _write_machine(out: TextIO, text: str, what: str) -> None:
    """Write machine output in one piece, refusing (never changing) text its stream cannot encode."""
    codec = stream_encoding(out)
    if not text.isascii():
        try:
            text.encode(codec)
        except UnicodeEncodeError as exc:
            raise OutputError(
                "stdout",
                f"the {what} holds U+{ord(text[exc.start]):04X}, which its encoding, {codec}, cannot represent; "
                "set PYTHONIOENCODING=utf-8 or use --json",
            ) from None
    _write(out, text)


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------


def _cell(col: Column, value: Any) -> str:
    if value is None:
        return "–"
    if col.kind == "bool":
        return "yes" if value else "no"
    if col.kind == "int":
        return f"{int(value):d}"
    if col.kind == "float":
        return format_number(float(value), col.safe)
    return str(value)


def _check_finite(result: Result) -> None:
    for row in result.rows:
        for key, value in row.items():
            if isinstance(value, float) and not math.isfinite(value):
                label = next((c.label for c in result.columns if c.key == key), key)
                raise UnrepresentableResult(
                    f"the result {label} is too large to represent (over 1e308) for these inputs; "
                    "use less extreme values."
                )


def warn(message: str, stream: TextIO | None = None) -> None:
    """Print one warning line to stderr (control characters replaced, spelled for its encoding)."""
    stream = stream or sys.stderr
    _write(stream, _warning_text(message, stream))


def _warning_text(message: str, stream: Any) -> str:
    return for_people(f"warning: {message}", stream) + "\n"


def render(
    result: Result,
    fmt: str = "table",
    out: TextIO | None = None,
    err: TextIO | None = None,
    value: str | None = None,
    plot: tuple[str, Any] | None = None,
) -> None:
    """Print ``result`` to ``out`` (warnings and a failed budget check to ``err``).

    ``plot`` is (target, :class:`dpcalc.plot.Figure`): target ``-`` puts a text chart under a table or
    into a Markdown report, and on ``err`` for machine output; a file name writes an image there.
    Everything is built first and written once (the image file first), so an error leaves no partial output.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    _check_finite(result)
    ascii_only = not unicode_capable(stream_encoding(out))
    machine = True
    what = f"{fmt} output"
    if value is not None:
        what = "--value output"
        # Bare values for shell scripts: the answer rows' column, one per line.
        text = "".join(
            ("" if v is None else repr(v) if isinstance(v, float) else str(v)) + "\n"
            for v in (row.get(value) for row in result.answer_rows())
        )
    elif fmt in ("json", "ndjson"):
        text = _json_text(result, fmt, ascii_only)
        if not ascii_only and not _encodable(text, stream_encoding(out)):
            text = _json_text(result, fmt, True)  # a lone surrogate (read from a JSON escape): escape it
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow([c.key for c in result.columns])
        for row in result.rows:
            writer.writerow(["" if row.get(c.key) is None else _csv_value(row.get(c.key)) for c in result.columns])
        text = buf.getvalue()
    elif fmt == "markdown":
        text = markdown_text(result, stream_encoding(out))
        machine = False
    else:
        text = table_text(result, stream_encoding(out), _styles(out))
        machine = False
    chart = ""
    if plot is not None:
        target, figure = plot
        if target == "-":
            from dpcalc.plot import text_chart

            if value is None and fmt == "table":
                text += "\n" + for_people_lines(text_chart(figure), out)
            elif value is None and fmt == "markdown":
                text += "\n```text\n" + for_people_lines(text_chart(figure), out) + "```\n"
            else:
                chart = for_people_lines(text_chart(figure), err)
        else:
            _write_plot(figure, target)
    notes = ""
    if result.failure:
        notes += for_people(result.failure, err) + "\n"
    if fmt not in ("json", "markdown") or value is not None:
        notes += "".join(_warning_text(w, err) for w in result.warnings)
    _write(err, notes + chart)
    if machine:
        _write_machine(out, text, what)
    else:
        _write(out, text)


def for_people_lines(text: str, stream: Any) -> str:
    """Several lines of text for people (a chart), each made safe and spelled for ``stream``."""
    return "".join(for_people(line, stream) + "\n" for line in text.splitlines())


def _write_plot(figure: Any, path: str) -> None:
    """Draw ``figure`` into the image file ``path`` (format by extension), whole or not at all."""
    import os

    from dpcalc.plot import image_bytes, write_file

    data = image_bytes(figure, os.path.splitext(path)[1].lower().lstrip("."))
    try:
        write_file(data, path)
    except OSError as exc:
        raise OutputError(f"the plot file {path!r}", exc.strerror or str(exc)) from None


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------

#: Characters that could start Markdown (or GitHub's math) inside a line; each is backslash-escaped.
_MD_INLINE = str.maketrans({ch: "\\" + ch for ch in "\\`*_[]<>|~&$"})
#: A line that would otherwise open a block (heading, list, quote, rule, numbered list).
_MD_BLOCK = re.compile(r"^(\s*)([#>+=-]|\d+[.)])")


def md_escape(text: str, block: bool = False) -> str:
    """``text`` as literal Markdown: control characters replaced (see :func:`clean`), markup characters escaped
    (and, for a ``block`` of its own such as a paragraph, a leading ``#``, ``-``, ``>`` or ``1.``).

    >>> md_escape("a|b *c* [d](e)")
    'a\\\\|b \\\\*c\\\\* \\\\[d\\\\](e)'
    """
    text = clean(text).translate(_MD_INLINE)
    return _MD_BLOCK.sub(lambda m: m.group(1) + "\\" + m.group(2), text) if block else text


def markdown_text(result: Result, encoding: str = "utf-8") -> str:
    """``result`` as GitHub-flavoured Markdown: a heading, the budget verdict (if checked), the table, the notes
    and warnings. Cells are the table's (numbers rounded toward the safe side), escaped (pipes included)."""
    people = lambda text: spell(md_escape(text), encoding)  # noqa: E731
    paragraph = lambda text: spell(md_escape(text, block=True), encoding)  # noqa: E731
    out = [f"### dpcalc {people(result.command)}", ""]
    verdict = _budget_verdict(result)
    if verdict:
        out += [f"**{people(verdict[0])}** {people(verdict[1])}", ""]
    columns = result.columns
    numeric = [c.kind in ("float", "int") for c in columns]
    out.append("| " + " | ".join(people(c.label) for c in columns) + " |")
    out.append("| " + " | ".join("---:" if n else "---" for n in numeric) + " |")
    body = [_column_cells(c, result.rows, "utf-8") for c in columns]
    bound = next((j for j, c in enumerate(columns) if c.key == "bound"), None)
    for i, row in enumerate(result.rows):
        cells = [people(col[i]) for col in body]
        if bound is not None and row.get("bound") == "approximate":
            cells[bound] = f"**{cells[bound]}**"  # as tables show such rows in yellow
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for note in result.notes:
        out += [paragraph(note), ""]
    if result.warnings:
        out += ["**Warnings**", ""]
        out += [f"- {people(w)}" for w in result.warnings]
        out.append("")
    out.append(
        "_Numbers are rounded toward the safe side (upper bounds up, lower bounds down); `--json` has them in full._"
    )
    return "\n".join(out) + "\n"


def _budget_verdict(result: Result) -> tuple[str, str] | None:
    """(headline, detail) of the budget check (``--max-epsilon`` or a ledger's ``max_epsilon``), if one was made."""
    budget = result.extra.get("budget")
    if not budget:
        return None
    checked = [r for r in result.answer_rows() if isinstance(r.get("epsilon"), float)]
    worst = max(checked, key=lambda r: r["epsilon"])
    at = f" at δ = {format_number(worst['delta'], 'up')}" if isinstance(worst.get("delta"), float) else ""
    eps, limit = format_compared(
        worst["epsilon"], float(budget["max_epsilon"]), bool(budget.get("exceeded")), safe_a="up"
    )
    how = f"({worst.get('method')}, {worst.get('bound')})"
    if budget.get("exceeded"):
        over = [r for r in checked if r["epsilon"] > float(budget["max_epsilon"])]
        rows = f"; {len(over)} of {len(checked)} rows are over it" if len(checked) > 1 else ""
        return "Budget check: failed.", f"ε = {eps}{at} {how} is over the budget of {limit}{rows}."
    return "Budget check: passed.", f"ε = {eps}{at} {how} is within the budget of {limit}."


def _json_text(result: Result, fmt: str, ascii_only: bool) -> str:
    if fmt == "ndjson":
        return "".join(json.dumps(row, allow_nan=False, ensure_ascii=ascii_only) + "\n" for row in result.rows)
    buf = io.StringIO()  # json.dump writes its many small pieces here; dumps would hold them all in a list
    json.dump(result.to_dict(), buf, indent=2, allow_nan=False, ensure_ascii=ascii_only)
    buf.write("\n")
    return buf.getvalue()


def _encodable(text: str, codec: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode(codec)
        return True
    except UnicodeEncodeError:
        return False


def _csv_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


# ANSI styles used on a terminal (as rich styled its tables: bold header, italic title).
_BOLD, _ITALIC, _YELLOW, _RESET = "\x1b[1m", "\x1b[3m", "\x1b[33m", "\x1b[0m"


def _styles(out: Any) -> tuple[bool, bool]:
    """(styles, colour) for ``out``: styles on a terminal unless TERM=dumb, colour unless NO_COLOR too."""
    try:
        tty = bool(out.isatty())
    except (AttributeError, ValueError, OSError):
        tty = False
    styled = tty and os.environ.get("TERM", "") not in ("dumb", "unknown")
    return styled, styled and "NO_COLOR" not in os.environ


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _column_cells(col: Column, rows: tuple[dict[str, Any], ...], encoding: str) -> list[str]:
    """One column's cells as shown: numbers formatted (each distinct value once), text cleaned and spelled."""
    key, seen, cells = col.key, {}, []
    for row in rows:
        v = row.get(key)
        k = float(v) if col.kind == "float" and v is not None else (v.__class__, v)  # True is not 1 here
        try:
            s = seen.get(k)
        except TypeError:  # unhashable: not worth caching
            s = None
        if s is None:
            s = spell(clean(_cell(col, v)), encoding)
            try:
                seen[k] = s
            except TypeError:
                pass
        cells.append(s)
    return cells


def table_text(result: Result, encoding: str = "utf-8", styles: tuple[bool, bool] = (False, False)) -> str:
    """The table for ``result`` as text: title, header, rule, rows, then notes, one line each.

    The layout is rich's ``SIMPLE_HEAD`` box at natural width (numbers are never
    cut to fit a terminal) with trailing spaces removed: one space of edge, one of
    padding on each side of a cell, one between cells; numbers right-aligned.
    ``styles`` is (bold header and italic title, yellow approximate rows).
    """
    styled, colour = styles
    people = lambda text: spell(clean(text), encoding)  # noqa: E731
    columns = result.columns
    header = [people(c.label) for c in columns]
    body = [_column_cells(c, result.rows, encoding) for c in columns]
    padded, widths = [], []
    for col, label, cells in zip(columns, header, body):
        cells = [label, *cells]
        sizes = [_width(s) for s in cells]
        w = max(sizes)
        widths.append(w)
        just = str.rjust if col.kind in ("float", "int") else str.ljust
        padded.append([just(s, w + len(s) - n) for s, n in zip(cells, sizes)])
    lines = [people(result.command), ""]
    if styled:
        lines[0] = _ITALIC + lines[0] + _RESET if lines[0] else ""
    rule = " " + "─" * (sum(widths) + 3 * len(widths) - 1)
    rule = spell(rule, encoding)
    approximate = [r.get("bound") == "approximate" for r in result.rows] if colour else None
    for i, cells in enumerate(zip(*padded)):
        line = ("  " + "   ".join(cells)).rstrip(" ")
        if i == 0:
            if styled:
                line = _BOLD + line + _RESET
            lines.append(line)
            lines.append(rule)
            continue
        if approximate is not None and approximate[i - 1]:
            line = _YELLOW + line + _RESET
        lines.append(line)
    lines.append("")
    lines.extend(("  " + people(note)).rstrip(" ") for note in result.notes)
    return "\n".join(lines) + "\n"
