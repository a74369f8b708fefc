"""Helpers that commands share once they run (numpy is imported here, lazily)."""

from __future__ import annotations

from typing import Any

import click

from dpcalc.cli.options import MAX_ROWS


def mesh(**grids: tuple[float, ...] | None) -> dict[str, Any]:
    """Cartesian product of the given grids, flattened (None entries skipped).

    Returns a dict of 1-D float arrays of equal length.
    """
    import numpy as np

    names = [k for k, v in grids.items() if v is not None]
    total = 1
    for k in names:
        total *= len(grids[k])  # type: ignore[arg-type]
    if total > MAX_ROWS:
        sizes = " × ".join(f"{len(grids[k])} ({'--' + k.replace('_', '-')})" for k in names)  # type: ignore[arg-type]
        raise click.UsageError(f"the grids give {total} rows ({sizes}); at most {MAX_ROWS} are allowed.")
    arrays = np.meshgrid(*[np.asarray(grids[k], dtype=float) for k in names], indexing="ij")
    return {k: a.ravel() for k, a in zip(names, arrays)}


def echo_inputs(**values: Any) -> dict[str, Any]:
    """Inputs as understood, for JSON: single-point grids become plain numbers."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        if v is None:
            continue
        if isinstance(v, tuple):
            out[k] = v[0] if len(v) == 1 else list(v)
        else:
            out[k] = v
    return out


def emit_rows(
    command, inputs, cols, rows, fmt, as_json, *, objects=(), warnings=(), notes=(), tail=("method", "bound")
):
    """Build a Result from column specs and rows, then render it.

    ``cols`` are :class:`~dpcalc.model.Column` argument tuples; the columns
    named in ``tail`` (``tightest``, ``method``, ``bound``) are appended.
    Repeated warnings and notes are shown once.
    """
    from dpcalc.model import Column, Result

    labels = {
        "tightest": ("tightest", "tightest", "bool"),
        "method": ("method", "method", "text"),
        "bound": ("bound", "bound", "text"),
    }
    columns = tuple(Column(*s) for s in cols) + tuple(Column(*labels[t]) for t in tail)
    result = Result(
        command=command,
        inputs=echo_inputs(**inputs),
        columns=columns,
        rows=tuple(rows),
        objects=tuple(objects),
        warnings=tuple(dict.fromkeys(warnings)),
        notes=tuple(dict.fromkeys(notes)),
    )
    return emit(result, fmt, as_json)


def emit(result, fmt: str, as_json: bool) -> int:
    from dpcalc.render import render

    render(result, "json" if as_json else fmt)
    return int(result.status)


def f(x: Any) -> float:
    """A plain Python float (JSON-ready) from a numpy scalar."""
    return float(x)


#: Smallest δ we print. Anything below underflows in double precision; such a
#: δ is shown as this floor and its row marked as an upper bound.
DELTA_FLOOR = 1e-300


def delta_out(value: Any, bound: str) -> tuple[float, str]:
    """A computed δ ready to print, never rounded down to 0 by underflow."""
    v = float(value)
    if v < DELTA_FLOOR:
        return DELTA_FLOOR, "upper"
    return v, bound
