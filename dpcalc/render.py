"""Result → rich table | JSON | CSV. The only module that prints.

Tables round every number in the direction that keeps it safe (see
:class:`dpcalc.model.Column`), so a displayed ε is never below the computed
one. JSON and CSV carry full precision (shortest round-trip repr).
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from typing import Any, TextIO

from dpcalc.model import Column, Result, UnrepresentableResult

FORMATS = ("table", "json", "csv", "ndjson")
SIGNIFICANT = 6


def format_number(value: float, safe: str = "nearest", digits: int = SIGNIFICANT) -> str:
    """Format to ``digits`` significant digits, rounding toward the safe side."""
    if value == 0:
        return "0"
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
    exp = r.adjusted()
    if -4 <= exp < 7:
        text = format(r, "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    mant = r.scaleb(-exp)
    m = format(mant, "f").rstrip("0").rstrip(".") if "." in format(mant, "f") else format(mant, "f")
    return f"{m}e{exp:+03d}"


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
                    "use smaller values (for example a smaller μ, ρ, k or a larger σ)."
                )


def warn(message: str, stream: TextIO | None = None) -> None:
    """Print one warning line to stderr."""
    print(f"warning: {message}", file=stream or sys.stderr)


def render(
    result: Result, fmt: str = "table", out: TextIO | None = None, err: TextIO | None = None, value: str | None = None
) -> None:
    out = out or sys.stdout
    err = err or sys.stderr
    _check_finite(result)
    if result.failure:
        print(result.failure, file=err)
    if value is not None:
        # Bare values for shell scripts: the answer rows' column, one per line.
        for w in result.warnings:
            warn(w, err)
        for row in result.answer_rows():
            v = row.get(value)
            out.write(("" if v is None else repr(v) if isinstance(v, float) else str(v)) + "\n")
        return
    if fmt == "ndjson":
        for w in result.warnings:
            warn(w, err)
        for row in result.rows:
            json.dump(row, out, allow_nan=False, ensure_ascii=False)
            out.write("\n")
        return
    if fmt == "json":
        json.dump(result.to_dict(), out, indent=2, allow_nan=False, ensure_ascii=False)
        out.write("\n")
        return
    for w in result.warnings:
        warn(w, err)
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([c.key for c in result.columns])
        for row in result.rows:
            writer.writerow(["" if row.get(c.key) is None else _csv_value(row.get(c.key)) for c in result.columns])
        return
    _table(result, out)


def _csv_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _table(result: Result, out: TextIO) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    no_color = "NO_COLOR" in os.environ or not out.isatty()
    # The table takes its natural width: numbers are never cut to fit a terminal.
    console = Console(file=out, no_color=no_color, highlight=False, soft_wrap=True, width=10_000)
    table = Table(title=result.command, box=box.SIMPLE_HEAD, title_justify="left")
    for col in result.columns:
        table.add_column(
            col.label, justify="right" if col.kind in ("float", "int") else "left", no_wrap=True, overflow="fold"
        )
    for row in result.rows:
        cells = [_cell(c, row.get(c.key)) for c in result.columns]
        style = "yellow" if row.get("bound") == "approximate" else None
        table.add_row(*cells, style=style)
    console.print(table)
    for note in result.notes:
        console.print(f"  {note}", markup=False)
