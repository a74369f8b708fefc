"""Helpers that commands share once they run (numpy is imported here, lazily)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import click

from dpcalc.cli.options import MAX_ROWS
from dpcalc.model import input_default_warnings


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
        # "i" indexes the rows of an earlier grid (e.g. the μ values a trade-off curve is read for).
        label = {k: "input points" if k == "i" else "--" + k.replace("_", "-") for k in names}
        sizes = " × ".join(f"{len(grids[k])} ({label[k]})" for k in names)  # type: ignore[arg-type]
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


def releases_once(objects) -> tuple:
    """A command's objects, each once (in order): rows that differ only in what is read off one mechanism (δ,
    say) describe the same releases, which a pipe into compose would otherwise count once per row. (Not for
    :func:`merge`: there repeated objects are repeated inputs, each a release.)"""
    return tuple(dict.fromkeys(objects))


def emit_rows(
    command, inputs, cols, rows, fmt, as_json, *, objects=(), warnings=(), notes=(), tail=("method", "bound")
):
    """Build a Result from column specs and rows, then render it.

    ``cols`` are :class:`~dpcalc.model.Column` argument tuples; the columns
    named in ``tail`` (``tightest``, ``method``, ``bound``) are appended.
    Repeated warnings and notes are shown once, and so are repeated objects (:func:`releases_once`).
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
        objects=releases_once(objects),
        warnings=tuple(dict.fromkeys(warnings)),
        notes=tuple(dict.fromkeys(notes)),
    )
    return emit(result, fmt, as_json)


#: When not None, results are collected here instead of printed (used by the
#: pipe commands, which run several commands and print one merged result).
_collector: list | None = None


class _Collected(list):
    """The results collected so far, with the number of rows emitted into them."""

    rows = 0


class collecting:
    """Context manager: run commands and collect their Results."""

    def __enter__(self) -> list:
        global _collector
        self._saved, _collector = _collector, _Collected()
        return _collector

    def __exit__(self, *exc) -> None:
        global _collector
        _collector = self._saved


#: When not None, the final Result is stored here instead of printed (dpcalc.api).
_captured: list | None = None


class capturing:
    """Context manager: run a command for :mod:`dpcalc.api` and keep its final Result (budget check applied)."""

    def __enter__(self) -> list:
        global _captured
        self._saved, _captured = _captured, []
        return _captured

    def __exit__(self, *exc) -> None:
        global _captured
        _captured = self._saved


def emit(result, fmt: str, as_json: bool, max_epsilon: float | None = None, value: str | None = None) -> int:
    if _collector is not None:
        _collector.append(result)
        _collector.rows += len(result.rows)  # (a running count: summing every result again was quadratic)
        total = _collector.rows
        if total > MAX_ROWS:
            raise click.UsageError(
                f"the {len(_collector)} objects read so far give {total} rows; at most {MAX_ROWS} are allowed "
                "(pipe fewer objects or use smaller grids)."
            )
        return 0
    if not result.rows:
        # Every command answers at least one row or says why not; an empty table must not pass as success.
        why = f": {result.warnings[0]}" if result.warnings else ""
        raise click.UsageError(f"no row can be answered for these inputs{why}")
    meta = getattr(click.get_current_context(silent=True), "meta", {})
    taken = input_default_warnings(meta)
    if taken:  # (defaults the input took that could hide a forgotten field: said, never silent)
        result = dataclasses.replace(result, warnings=tuple(dict.fromkeys(result.warnings + tuple(taken))))
    from dpcalc.render import render

    max_epsilon = meta.get("dpcalc.max_epsilon") if max_epsilon is None else max_epsilon
    value = meta.get("dpcalc.value") if value is None else value
    if meta.get("dpcalc.format") == "ndjson" and not as_json:
        fmt = "ndjson"

    if max_epsilon is not None:
        result = check_budget(result, max_epsilon)
    if value is not None and (as_json or fmt != "table"):
        # Bare values replace the output: with --json or --format it would silently drop what was asked for.
        asked = "--json" if as_json else f"--format {fmt}"
        raise click.UsageError(
            f"--value prints bare values one per line and cannot be combined with {asked}; drop one of them."
        )
    if value is not None and value not in {c.key for c in result.columns}:
        keys = ", ".join(c.key for c in result.columns if c.kind != "text")
        raise click.UsageError(f"Invalid value for '--value': {value!r} is not a column here; choose one of {keys}.")
    if _captured is not None:
        from dpcalc.render import _check_finite

        _check_finite(result)  # what the command would refuse to print, the API refuses to return
        _captured.append(result)
        return int(result.status)
    plot = meta.get("dpcalc.plot")
    render(result, "json" if as_json else fmt, value=value, plot=None if plot is None else (plot, figure(result)))
    return int(result.status)


def figure(result):
    """The figure --plot draws for ``result`` (see :mod:`dpcalc.plot`), or a usage error saying why there is none."""
    from dpcalc.plot import PlotError, figure_for

    try:
        return figure_for(result)
    except PlotError as exc:
        if str(exc).endswith("."):
            raise click.UsageError(str(exc)) from None
        ctx = click.get_current_context()
        while ctx.parent is not None and not isinstance(ctx.parent.command, click.Group):
            ctx = ctx.parent  # the command the user typed (a pipe runs others inside it)
        typed = {o for p in ctx.command.params for o in getattr(p, "opts", ())}
        names = [o for o in ("--" + k.replace("_", "-") for k in exc.grids) if o in typed]
        hint = f": give a grid (a,b,c or START:STOP:N) to one of {', '.join(names)}" if names else ""
        raise click.UsageError(f"{exc}{hint}.") from None


def check_budget(result, max_epsilon: float):
    """Mark a Result as over budget (exit 1) when a sound answer row has ε > max_epsilon."""
    import dataclasses

    given = result.command.startswith("convert") and result.inputs.get("epsilon") is not None
    if given and result.inputs.get("delta") is None:
        # δ at a given ε (convert --epsilon): the rows' ε is the user's own, and δ — what was computed — can be
        # anything up to 1 (no guarantee at all), so comparing ε with the budget would pass vacuously.
        raise click.UsageError(
            "--max-epsilon checks a computed ε, but here ε is given (--epsilon) and δ is what is computed; give "
            "--delta (the δ you can afford) instead of --epsilon to compute ε and check it."
        )
    over = [r for r in result.answer_rows() if isinstance(r.get("epsilon"), float) and r["epsilon"] > max_epsilon]
    checked = [r for r in result.answer_rows() if isinstance(r.get("epsilon"), float)]
    if not checked:
        raise click.UsageError("--max-epsilon: this result has no ε to check.")
    extra = dict(result.extra)
    extra["budget"] = {"max_epsilon": max_epsilon, "exceeded": bool(over)}
    if not over:
        return dataclasses.replace(result, extra=extra)
    from dpcalc.render import format_compared, format_number

    worst = max(over, key=lambda r: r["epsilon"])
    # Rounded toward the safe side, as the table shows it (ε up, δ up), with digits enough to show ε above the budget.
    eps, limit = format_compared(worst["epsilon"], max_epsilon, True, safe_a="up")
    delta = worst.get("delta")
    at = format_number(float(delta), "up") if isinstance(delta, (int, float)) else "–"
    msg = f"budget exceeded: ε = {eps} > {limit} at δ = {at} ({worst['method']}, {worst['bound']})" + (
        f"; {len(over)} of {len(checked)} rows over" if len(checked) > 1 else ""
    )
    extra["budget"]["reason"] = msg
    return dataclasses.replace(result, status=1, extra=extra, failure=msg)


def merge(results, command: str):
    """Concatenate several Results (e.g. one per piped object) into one."""
    from dpcalc.model import Result

    cols, seen = [], set()
    for r in results:
        for c in r.columns:
            if c.key not in seen:
                seen.add(c.key)
                cols.append(c)
    tail = [c for c in cols if c.key in ("tightest", "method", "bound")]
    cols = [c for c in cols if c.key not in ("tightest", "method", "bound")] + tail
    names = {r.command for r in results}
    return Result(
        command=names.pop() if len(names) == 1 else command,
        inputs={"objects": [r.inputs for r in results]} if len(results) > 1 else results[0].inputs,
        columns=tuple(cols),
        rows=tuple(row for r in results for row in r.rows),
        warnings=tuple(dict.fromkeys(w for r in results for w in r.warnings)),
        objects=tuple(o for r in results for o in r.objects),
        notes=tuple(dict.fromkeys(n for r in results for n in r.notes)),
    )


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


def pld_width() -> float | None:
    """The --pld-width given to the running command (None: the engine's default)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get("dpcalc.pld_width")


def pld_kw() -> dict[str, float]:
    """Keyword arguments for the PLD engine's width target (empty for the default): W·ε, or W/10."""
    w = pld_width()
    return {} if w is None else {"rel": w, "abs_": w / 10}


def budget_width() -> float | None:
    """The PLD width (as ``--pld-width``) at which a budget check below 0.01 is decided where the default width
    leaves it undecided: the width an inverse search for the budget uses (:func:`dpcalc.core.sgd.inverse_width`);
    None where there is no budget, it is 0.01 or more, or ``--pld-width`` was given (kept as given)."""
    ctx = click.get_current_context(silent=True)
    budget = None if ctx is None else ctx.meta.get("dpcalc.max_epsilon")
    if budget is None or pld_width() is not None:
        return None
    from dpcalc.core import sgd

    w = float(sgd.inverse_width(budget))
    return None if w == sgd.INVERSE_WIDTHS[0] else w


def refined_for_budget(refine, answer, cases: tuple, sampling: str, notes: list):
    """``answer`` (rows of the tight engine for ``cases`` = (q, σ, T, δ)) with the rows whose certified interval
    contains a budget below 0.01 computed again at :func:`budget_width`'s width by ``refine``
    (:func:`dpcalc.core.sgd.refine_for_budget` or :func:`~dpcalc.core.sgd.refine_tight_for_budget`), and the
    note saying so appended to ``notes``; ``answer`` as it is where there is no such budget."""
    w = budget_width()
    if w is None:
        return answer
    budget = click.get_current_context().meta["dpcalc.max_epsilon"]
    answer, again = refine(answer, *cases, sampling, budget, w)
    if again.size:
        notes.append(budget_note(f"{again.size} row{'s' if again.size > 1 else ''}", w))
    return answer


def budget_note(what: str, w: float) -> str:
    """The note for rows computed again at :func:`budget_width`'s width ``w``."""
    ctx = click.get_current_context()
    return (
        f"{what} whose certified interval contained the budget (max ε {ctx.meta['dpcalc.max_epsilon']:g}) at the "
        f"default width: computed again at --pld-width {w:g} (an absolute width of at most 1 % of the budget, as an "
        "inverse search for it uses), so that the check is decided at the budget's scale; the same --pld-width "
        "reproduces them."
    )


def width_target(upper):
    """The PLD interval width asked for at each upper end: max(W·ε, W/10), W = --pld-width (0.001)."""
    import numpy as np

    from dpcalc.core.pld import ABS_WIDTH, REL_WIDTH

    w = pld_width()
    rel, abs_ = (REL_WIDTH, ABS_WIDTH) if w is None else (w, w / 10)
    return np.maximum(rel * np.asarray(upper, float), abs_)


#: Why a without-replacement interval over 2 or more steps is wide (see :func:`dpcalc.core.sgd.tight_interval`).
WOR_WIDE = (
    "the lower end is Poisson sampling's, which two datasets realise, and the upper end composes the C_q hull, "
    "which none is known to reach"
)


#: Why a sampling scheme's interval is wide where its engine met the width (see :func:`scheme_wide`).
SCHEME_WIDE = (
    "its ends come from different constructions — a dominating pair or closed form above, two actual datasets "
    "below — and their distance is what is known about the scheme"
)


def scheme_wide(label: str, r, j: int) -> tuple | None:
    """(label, lower, upper) of a sampling scheme's row (core interval ``r``, element ``j``) whose interval is
    wider than asked although each construction met its own width (the scheme's own warnings say why where it
    has some; otherwise :func:`scheme_width_warnings` does), else None."""
    import numpy as np

    from dpcalc.core.pld.engine import widths, within

    lo, up = float(r.lower[j]), float(r.upper[j])
    if r.warnings or not bool(r.met[j]) or not (np.isfinite(lo) and np.isfinite(up)):
        return None
    rel, abs_ = widths(pld_kw())
    if bool(within(lo, up, rel, abs_)):
        return None
    return label, lo, up


def scheme_width_warnings(wide: list) -> list[str]:
    """The width warning of a scheme's rows wider than asked (:func:`scheme_wide`, None entries skipped): every
    such row says so — the first five by name, then a count."""
    wide = [w for w in wide if w is not None]
    if not wide:
        return []
    labels, lo, up = zip(*wide)
    return width_warnings(list(labels), list(lo), list(up), [False] * len(wide), SCHEME_WIDE)


def bracket_warnings(tight) -> list[str]:
    """The warning for rows bracketed between composed settings (sgd.tight_curve)."""
    import numpy as np

    from dpcalc.core import sgd

    bracketed = tight.method == sgd.BRACKET
    if not bracketed.any():
        return []
    wide = int(np.sum(bracketed & ~tight.met))
    return [
        f"{int(bracketed.sum())} rows (method pld-bracket) lie between the settings that PLD composes (per q and "
        f"σ at most {sgd.CURVE_POINTS} step counts; a grid needing more than {sgd.DIRECT_POINTS} compositions, a "
        f"lattice of {sgd.GRID_POINTS} settings): ε grows with q and T and falls with σ, so their ε ≥ is the "
        "certified lower end at the nearest composed setting with less privacy loss and ε the certified upper "
        "end at the nearest with more — both still certified bounds"
        + (
            f"; {wide} of these intervals are wider than asked (split the grid to have more rows composed)."
            if wide
            else "."
        )
    ]


def width_warnings(labels, lower, upper, met, why: str | None = None) -> list[str]:
    """One warning naming each row whose certified interval is wider than asked (at most five, then a count).

    ``labels`` names each row (e.g. "q=0.01, σ=1.1, T=10000, δ=1e-05"); ``met`` is the engine's own
    verdict (it compares before the table's rounding); ``why`` what limits the width (default: the grid).
    """
    why = why or (
        "the finest grid that fits, round-off next to a tiny δ, or — sampling without replacement — the distance "
        "between its realisable lower end and the hull it composes limits it"
    )
    import numpy as np

    from dpcalc.render import format_compared, format_number

    lo, up = np.asarray(lower, float), np.asarray(upper, float)
    wide = [i for i in range(lo.size) if np.isfinite(lo[i]) and np.isfinite(up[i]) and not bool(met[i])]
    target = width_target(up)

    def gap(i: int) -> str:
        width, asked = float(up[i] - lo[i]), float(target[i])
        if width > asked:  # (digits enough to show it: never "0.001 > 0.001")
            return " > ".join(format_compared(width, asked, True, digits=3))
        return f"{width:.3g} against {asked:.3g}"  # (the engine's own verdict, compared before this rounding)

    out = [
        f"the certified interval for {labels[i]} is [{format_number(float(lo[i]), 'down')}, "
        f"{format_number(float(up[i]), 'up')}], wider than asked "
        f"({gap(i)}: {why}); both ends are still certified bounds."
        for i in wide[:5]
    ]
    if len(wide) > 5:
        out.append(f"{len(wide) - 5} more rows have certified intervals wider than asked (see epsilon_width in JSON).")
    return out


def check_pld_delta(deltas, option: str, reason: str = "") -> None:
    """What only the PLD engine accounts (``option`` names it) is refused below the δ it answers from (MIN_DELTA),
    with ``reason`` in parentheses."""
    from dpcalc.core.pld import MIN_DELTA

    if deltas is not None and min(deltas) < MIN_DELTA:
        why = f" ({reason.format(min_delta=f'{MIN_DELTA:g}')})" if reason else ""
        raise click.UsageError(
            f"Invalid value for '--delta': {min(deltas):g} — with {option} δ must be in [{MIN_DELTA:g}, 1){why}."
        )


def pld_declined(shown: str) -> str:
    """The start of the warning for rows the PLD engine could not certify (``shown`` names them)."""
    from dpcalc.core.pld import MIN_DELTA

    return f"the PLD engine cannot certify {shown} (δ below {MIN_DELTA:g}, or no grid fits)"


#: Why sampling without replacement needs δ >= MIN_DELTA.
WOR_DELTA = "only the PLD engine covers sampling without replacement, and it answers from {min_delta}"


def refuse_pld_gaps(eps, q, sigma, steps, delta, option: str) -> None:
    """Where PLD answered nothing for sampling without replacement, stop (exit 2) rather than drop rows:
    no other sound method covers it, and a budget gate must not pass on a partial table."""
    import numpy as np

    bad = np.flatnonzero(~np.isfinite(eps))
    if bad.size:
        i = int(bad[0])
        raise click.UsageError(
            f"the PLD engine cannot answer q = {q[i]:g}, σ = {sigma[i]:g}, T = {int(steps[i])}, δ = {delta[i]:g} "
            f"(its loss distribution does not fit the grid), and no other sound method in dpcalc covers {option}."
        )


#: Objects read ahead per chunk by :func:`prefetched` (their answers computed in one vectorised call).
PREFETCH_CHUNK = 4096


def prefetched(items, prefetch, size: int = PREFETCH_CHUNK):
    """The (object, where) pairs of ``items`` (read ahead, at most MAX_ROWS of them: more is refused), handed
    on in chunks of ``size``. Before a chunk is handed on, ``prefetch(chunk)`` computes what its objects will
    ask of the exact Gaussian ε in one vectorised call, kept for the chunk (:class:`dpcalc.core.gdp.remembered`).
    Only a speed-up: where it fails, each object computes its own answer (and reports its own error,
    attributed to it)."""
    import itertools

    from dpcalc.core import gdp

    # Each object gives a row at least, and at most MAX_ROWS are allowed: read that many (and one more) ahead,
    # so that a larger stream is refused before anything is computed (200,000 objects took a minute to refuse).
    ahead = list(itertools.islice(iter(items), MAX_ROWS + 1))
    if len(ahead) > MAX_ROWS:
        raise click.UsageError(
            f"more than {MAX_ROWS} objects were read, each giving a row at least; at most {MAX_ROWS} rows are "
            "allowed (pipe fewer objects, or compose them into one total with 'dpcalc compose')."
        )
    for start in range(0, len(ahead), size):
        chunk = ahead[start : start + size]
        with gdp.remembered():
            try:
                prefetch(chunk)
            except Exception:  # noqa: BLE001 - an optimisation only: the objects' own calls report errors
                pass
            yield from chunk


def gaussian_pairs(chunk, deltas, sizes=(1,)):
    """(μ, δ) of every Gaussian mechanism (at sensitivity k·Δ for each k in ``sizes``) and μ-GDP object of a
    chunk, against every δ: what ``convert`` and ``group`` will ask :func:`dpcalc.core.gdp.epsilon` for (μ as
    they compute it: :func:`dpcalc.core.gaussian.mu_of` of :func:`dpcalc.core.group.gaussian_sensitivity`)."""
    import numpy as np

    from dpcalc.core import gaussian, group
    from dpcalc.model import GDP, Gaussian

    gauss = [obj for obj, _ in chunk if isinstance(obj, Gaussian)]
    sig = np.array([o.sigma for o in gauss], dtype=np.float64)[:, None]
    sens = np.array([o.sensitivity for o in gauss], dtype=np.float64)[:, None]
    k = np.asarray(sizes, dtype=np.float64)[None, :]
    mus = list(np.asarray(gaussian.mu_of(sig, group.gaussian_sensitivity(sens, k)), dtype=np.float64).ravel())
    if tuple(sizes) == (1,):
        mus += [float(obj.mu) for obj, _ in chunk if isinstance(obj, GDP)]
    m = np.repeat(np.asarray(mus, dtype=np.float64), len(deltas))
    d = np.tile(np.asarray(deltas, dtype=np.float64), len(mus))
    return m, d


class attributed:
    """Context manager: errors raised while computing on a document's object name that object.

    Values from a piped object or a ledger release reach the commands without passing an option, so an
    error that would name an option ('--mu') is reported against the document, release and value instead.
    """

    def __init__(self, where: str, obj: Any = None):
        self.where = where
        self.obj = obj  # (the object computed on: its own numbers are named beside the value they gave)

    def __enter__(self):
        return self

    def _its(self) -> str:
        """'its epsilon = 1e+308, delta = 0': the object's numbers (nested ones by their path; the six farthest from
        1 in scale first, where the culprit usually is), else 'it'."""
        try:
            fields = self.obj.to_dict()
        except AttributeError:
            return "it"
        nums: list[str] = []

        def walk(v, path):
            if isinstance(v, dict):
                for k, x in v.items():
                    walk(x, f"{path}.{k}" if path else k)
            elif isinstance(v, list):
                for i, x in enumerate(v, 1):
                    walk(x, f"{path}[{i}]")
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                nums.append((abs(math.log10(abs(v))) if v else 0.0, f"{path} = {v!r}"))

        walk(fields, "")
        nums.sort(key=lambda x: -x[0])  # (stable: equal scales keep the object's order)
        shown = ", ".join(t for _, t in nums[:6]) + (", …" if len(nums) > 6 else "")
        return f"its {shown}" if nums else "it"

    def __exit__(self, kind, exc, tb):
        from dpcalc.core.errors import ValidationError

        if isinstance(exc, ValidationError):
            raise click.UsageError(
                f"{self.where}: {self._its()} gives {exc.name} = {exc.value!r}, outside what dpcalc can compute "
                f"({exc.allowed} is needed); use less extreme values."
            ) from None
        if isinstance(exc, (OverflowError, ZeroDivisionError)):
            raise click.UsageError(
                f"{self.where}: an intermediate value is too large to represent (over 1e308); use less extreme values."
            ) from None
        if isinstance(exc, click.UsageError) and not str(exc.message).startswith(self.where):
            raise click.UsageError(f"{self.where}: {exc.message}") from None
        return False
