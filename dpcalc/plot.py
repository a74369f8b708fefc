"""Curves from results: which columns are the axes, a text chart, and image files (matplotlib, optional).

Which columns a plot draws is declared here, per command, as :class:`Chart` lists
(:data:`CURVES`), not worked out by each command. A chart names the answer column
(``y``) and the input columns that can be the x axis, in order of preference. For a
result, :func:`figure_for` takes the first chart whose ``y`` is among the result's
columns, has values and is not one of the inputs the user gave (so ``convert gaussian
--epsilon …`` plots δ, not ε), and whose x candidates give at least one line of two or
more points:

- the x axis is the first candidate that the user gave (or that has a default grid:
  ``generated``) and that takes two or more values in the rows;
- every other such candidate that varies, the engine (``method``, with per-command
  families such as ``pld-bracket`` → ``pld``) and the sampling ``scheme`` split the rows
  into lines. Derived columns (μ and ρ next to σ, the steps an epoch count gives) are
  never candidates unless the user typed them, so they never split lines.

Rows with a lower end (``epsilon_lower``, the certified PLD interval) are drawn as a
band between it and the upper end; approximate rows are dashed and say so in the
legend; every line's legend names its methods and bounds. Trade-off curves (β against
α) come with the diagonal β = 1 − α and the GDP curve of the same μ, drawn densely from
the closed form; attack curves (TPR against FPR) with the diagonal TPR = FPR.

Nothing here imports matplotlib until an image is asked for (:func:`image_bytes`), and
nothing imports this module unless ``--plot`` is given.
"""

from __future__ import annotations

import io
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable

from dpcalc.model import Column, Result
from dpcalc.render import format_number

#: The image formats --plot writes, by file extension.
IMAGE_FORMATS = ("png", "svg", "pdf")
#: At most this many lines in one chart (more cannot be told apart).
MAX_LINES = 12
#: A positive axis spanning this ratio or more is drawn in log scale (δ always is).
LOG_RATIO = 100.0
#: The extra that brings matplotlib.
EXTRA = "pip install 'dpcalc[plot]'"


class PlotError(ValueError):
    """The rows cannot be plotted (no curve, too many lines); the message says why."""

    def __init__(self, message: str, grids: tuple[str, ...] = ()):
        super().__init__(message)
        #: Input keys (as in ``Result.inputs``) whose grid would make a curve: for a hint naming options.
        self.grids = grids


# --------------------------------------------------------------------------
# Declarations
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Chart:
    """One way a command's rows form curves: ``y`` against the first varying of ``x``."""

    #: Column key of the y axis (the answer).
    y: str
    #: Input column keys that can be the x axis, in order of preference; the others that vary split lines.
    x: tuple[str, ...]
    #: Columns that must be present for this chart to apply (a mode, e.g. an inverse search).
    needs: tuple[str, ...] = ()
    #: ``"tradeoff"`` (β against α) or ``"attack"`` (TPR against FPR): reference lines and unit axes.
    kind: str | None = None


@dataclass(frozen=True)
class Curves:
    """The charts of one command, and how its ``Result.inputs`` keys name its columns."""

    charts: tuple[Chart, ...]
    #: ``Result.inputs`` key → column key, where they differ (``amplify dp``: epsilon → epsilon_in).
    columns_of: dict[str, str] = field(default_factory=dict)
    #: Columns that are inputs even when the user left them out (a default grid: convert's δ, α, FPR).
    generated: tuple[str, ...] = ()
    #: Method → engine family, for lines (a PLD curve may answer some rows by its exact routes).
    families: dict[str, str] = field(default_factory=dict)


_CONVERT = Curves(
    (
        Chart("beta", ("alpha", "sigma", "sensitivity", "mu", "epsilon", "delta"), kind="tradeoff"),
        Chart("tpr", ("fpr", "sigma", "sensitivity", "mu", "epsilon", "delta"), kind="attack"),
        Chart("epsilon", ("delta", "sigma", "sensitivity", "mu", "rho")),
        Chart("delta", ("epsilon", "sigma", "sensitivity", "mu")),
        Chart("mu", ("epsilon", "delta", "sensitivity")),
        Chart("rho", ("epsilon",)),
    ),
    generated=("alpha", "fpr", "delta"),
)
_PLD = {"pld-bracket": "pld", "privacy-profile": "pld", "gdp": "pld", "total-variation": "pld", "rare-steps": "pld"}
_SGD_INPUTS = ("target_epsilon", "delta", "noise_multiplier", "epochs", "steps", "batch_size", "rate", "dataset_size")


def _group(key: str) -> Curves:
    return Curves((Chart(key, ("size", f"{key}_in")),), columns_of={key: f"{key}_in"})


#: Command (``Result.command``) → its charts. Commands not listed (a ledger, composed pipes) give no curve.
CURVES: dict[str, Curves] = {
    "calibrate gaussian": Curves(
        (Chart("sigma", ("epsilon", "delta", "mu", "rho", "target_advantage", "target_tpr", "at_fpr", "sensitivity")),)
    ),
    "convert audit": Curves((Chart("epsilon", ("confidence", "delta")),)),
    "calibrate discrete-gaussian": Curves((Chart("sigma", ("epsilon", "delta", "rho", "sensitivity")),)),
    "calibrate discrete-laplace": Curves((Chart("scale", ("epsilon", "sensitivity")),)),
    "calibrate randomized-response": Curves((Chart("keep", ("epsilon", "k")),)),
    "calibrate bounded-range": Curves((Chart("epsilon0", ("epsilon", "delta", "rho")),)),
    "calibrate laplace": Curves((Chart("scale", ("epsilon", "sensitivity")),)),
    "convert": _CONVERT,
    "convert gaussian": _CONVERT,
    "convert gdp": _CONVERT,
    "convert dp": _CONVERT,
    "convert zcdp": _CONVERT,
    "convert rdp": _CONVERT,
    "convert discrete-gaussian": Curves(
        (
            Chart("beta", ("alpha", "sigma", "sensitivity"), kind="tradeoff"),
            Chart("tpr", ("fpr", "sigma", "sensitivity"), kind="attack"),
            Chart("epsilon", ("delta", "sigma", "sensitivity")),
            Chart("delta", ("epsilon", "sigma", "sensitivity")),
            Chart("rho", ("sigma", "sensitivity")),
        ),
        generated=("alpha", "fpr", "delta"),
    ),
    "convert discrete-laplace": Curves(
        (
            Chart("beta", ("alpha", "scale", "sensitivity"), kind="tradeoff"),
            Chart("tpr", ("fpr", "scale", "sensitivity"), kind="attack"),
            Chart("epsilon", ("delta", "scale", "sensitivity")),
            Chart("delta", ("epsilon", "scale", "sensitivity")),
        ),
        generated=("alpha", "fpr", "delta"),
    ),
    "convert randomized-response": Curves(
        (
            Chart("beta", ("alpha", "epsilon0", "k"), kind="tradeoff"),
            Chart("tpr", ("fpr", "epsilon0", "k"), kind="attack"),
            Chart("epsilon", ("delta", "epsilon0", "k")),
            Chart("delta", ("epsilon", "epsilon0", "k")),
        ),
        generated=("alpha", "fpr", "delta"),
    ),
    "convert bounded-range": Curves(
        (
            Chart("beta", ("alpha", "epsilon0"), kind="tradeoff"),
            Chart("tpr", ("fpr", "epsilon0"), kind="attack"),
            Chart("epsilon", ("delta", "epsilon0")),
            Chart("delta", ("epsilon", "epsilon0")),
            Chart("rho", ("epsilon0",)),
        ),
        generated=("alpha", "fpr", "delta"),
    ),
    "compose dp": Curves(
        (Chart("epsilon", ("times", "epsilon_each", "delta_each", "delta_prime")),),
        columns_of={"epsilon": "epsilon_each", "delta": "delta_each"},
    ),
    "compose gaussian": Curves((Chart("epsilon", ("times", "sigma", "delta", "sensitivity")),)),
    "compose gdp": Curves(
        (Chart("epsilon", ("times", "mu_each", "delta")), Chart("mu", ("times", "mu_each"))),
        columns_of={"mu": "mu_each"},
    ),
    "compose zcdp": Curves((Chart("epsilon", ("times", "rho_each", "delta")),), columns_of={"rho": "rho_each"}),
    "compose mixed": Curves((Chart("epsilon", ("delta",)),)),
    "compose discrete-gaussian": Curves((Chart("epsilon", ("times", "sigma", "delta", "sensitivity")),)),
    "compose discrete-laplace": Curves((Chart("epsilon", ("times", "scale", "delta", "sensitivity")),)),
    "compose randomized-response": Curves(
        (Chart("epsilon", ("times", "epsilon_each", "delta", "k")),), columns_of={"epsilon": "epsilon_each"}
    ),
    "compose bounded-range": Curves(
        (Chart("epsilon", ("times", "epsilon_each", "delta")),), columns_of={"epsilon": "epsilon_each"}
    ),
    "amplify dp": Curves(
        (Chart("epsilon", ("rate", "epsilon_in", "delta_in")),),
        columns_of={"epsilon": "epsilon_in", "delta": "delta_in"},
    ),
    "amplify gaussian": Curves(
        (
            Chart("rdp", ("order", "sigma", "rate")),
            Chart("epsilon", ("steps", "rate", "sigma", "delta", "max_batch_size", "examples_per_user")),
        ),
        columns_of={"orders": "order"},
        families=_PLD,
    ),
    "group dp": Curves(
        (Chart("delta", ("size", "epsilon_in", "delta_in")),),
        columns_of={"epsilon": "epsilon_in", "delta": "delta_in"},
    ),
    "group pure": _group("epsilon"),
    "group gdp": _group("mu"),
    "group zcdp": _group("rho"),
    "group gaussian": Curves((Chart("epsilon", ("size", "sigma", "delta", "sensitivity")),)),
    "plan-sgd": Curves(
        (
            # Inverse searches (one row per target): the value solved for against the target ε.
            Chart("noise_multiplier", _SGD_INPUTS, needs=("target_epsilon",)),
            Chart("epochs", _SGD_INPUTS, needs=("target_epsilon",)),
            Chart("steps", _SGD_INPUTS, needs=("target_epsilon",)),
            Chart("batch_size", _SGD_INPUTS, needs=("target_epsilon",)),
            # Forward: ε against training (--per-epoch) or against a grid of settings.
            Chart(
                "epsilon",
                (
                    "epochs",
                    "steps",
                    "noise_multiplier",
                    "batch_size",
                    "rate",
                    "dataset_size",
                    "delta",
                    "max_batch_size",
                    "examples_per_user",
                ),
            ),  # fmt: skip
        ),
        families=_PLD,
    ),
}


# --------------------------------------------------------------------------
# From a result to a figure
# --------------------------------------------------------------------------


@dataclass
class Series:
    """One line: its points sorted by x, and what it is."""

    label: str
    methods: tuple[str, ...]
    bounds: tuple[str, ...]
    x: list[float]
    y: list[float]
    #: Certified lower ends (None where a row has none).
    lower: list[float | None]
    #: The values of the line-splitting columns (for reference curves: μ, ε, δ).
    params: dict[str, Any]
    #: The grid values that make this line ("B=128, σ=1.1"), empty for a line per engine only.
    where: str = ""

    @property
    def approximate(self) -> bool:
        return "approximate" in self.bounds

    @property
    def family(self) -> str:
        return self.methods[0] if len(self.methods) == 1 else "/".join(self.methods)


@dataclass
class Figure:
    """What a plot shows, independent of how it is drawn."""

    command: str
    title: str
    x_key: str
    y_key: str
    x_label: str
    y_label: str
    x_log: bool
    y_log: bool
    kind: str | None
    series: list[Series]
    lower_label: str = "ε ≥ (certified)"

    def data(self) -> dict[str, Any]:
        """The plotted values, full precision (embedded in SVG files)."""
        return {
            "command": self.command,
            "x": self.x_key,
            "y": self.y_key,
            "series": [
                {
                    "label": s.label,
                    "methods": list(s.methods),
                    "bounds": list(s.bounds),
                    "x": s.x,
                    "y": s.y,
                    **({"lower": s.lower} if any(v is not None for v in s.lower) else {}),
                }
                for s in self.series
            ],
        }


def _input_columns(result: Result, curves: Curves) -> set[str]:
    """The columns the user gave (as ``Result.inputs`` records them; a merged pipe result: any object's)."""
    inputs = result.inputs
    keys = set(inputs)
    if isinstance(inputs.get("objects"), list):
        keys = {k for o in inputs["objects"] if isinstance(o, dict) for k in o}
    return {curves.columns_of.get(k, k) for k in keys}


def _distinct(rows, key: str, with_none: bool = False) -> list:
    seen: dict = {}
    for r in rows:
        v = r.get(key)
        if v is None and not with_none:
            continue
        seen.setdefault(v, None)
    return list(seen)


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _shown(col: Column, value: Any) -> str:
    if col.kind == "int":
        return f"{int(value):d}"
    if col.kind == "float":
        return format_number(float(value), col.safe)
    return str(value)


def _log_axis(key: str, values: list[float]) -> bool:
    if not values or min(values) <= 0:
        return False
    if key.startswith("delta"):
        return True
    return max(values) / min(values) >= LOG_RATIO


def figure_for(result: Result) -> Figure:
    """The figure for ``result`` by its command's declaration; :class:`PlotError` when its rows are not a curve."""
    curves = CURVES.get(result.command)
    if curves is None:
        raise PlotError(
            f"--plot: the rows of '{result.command}' are not a curve (none of its inputs takes a grid); there is "
            "nothing to plot."
        )
    cols = {c.key: c for c in result.columns}
    given = _input_columns(result, curves)
    eligible = given | set(curves.generated)
    hints: list[str] = []
    for chart in curves.charts:
        if any(k not in cols for k in chart.needs) or chart.y not in cols or chart.y in given:
            continue
        rows = [r for r in result.rows if _number(r.get(chart.y))]
        if not rows:
            continue
        xs = [k for k in chart.x if k in cols and k in eligible and k != chart.y]
        hints += [k for k in chart.x if k in cols and k not in hints and k != chart.y]
        for x in xs:
            if len(_distinct(rows, x)) < 2:
                continue
            fig = _build(result, curves, chart, cols, [r for r in rows if _number(r.get(x))], x, xs)
            if fig is not None:
                return fig
    names = {v: k for k, v in curves.columns_of.items()}
    raise PlotError(
        "--plot needs a curve, and no input of these rows takes two or more values",
        tuple(dict.fromkeys(names.get(k, k) for k in hints)),
    )


def _build(result, curves: Curves, chart: Chart, cols, rows, x: str, xs: list[str]) -> Figure | None:
    by = [k for k in xs if k != x and len(_distinct(rows, k, with_none=True)) > 1]
    text_by = [k for k in ("scheme",) if k in cols and len(_distinct(rows, k, with_none=True)) > 1]
    lower_key = f"{chart.y}_lower" if f"{chart.y}_lower" in cols else None
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        method = str(r.get("method", ""))
        key = tuple(r.get(k) for k in by) + tuple(r.get(k) for k in text_by) + (curves.families.get(method, method),)
        groups.setdefault(key, []).append(r)
    if not any(len(_distinct(g, x)) >= 2 for g in groups.values()):
        return None
    if len(groups) > MAX_LINES:
        split = ", ".join([cols[k].label for k in by + text_by] + ["method"])
        raise PlotError(
            f"--plot: these rows make {len(groups)} lines (one per {split}); at most {MAX_LINES} fit one chart: "
            "give fewer values to one of the grids."
        )
    series = []
    for key, members in groups.items():
        members = sorted(members, key=lambda r: r[x])
        methods = tuple(dict.fromkeys(str(r.get("method", "")) for r in members))
        bounds = tuple(dict.fromkeys(str(r.get("bound", "")) for r in members))
        parts = [f"{cols[k].label}={_shown(cols[k], v)}" for k, v in zip(by + text_by, key) if v is not None]
        what = ", ".join(methods) + f" ({'/'.join(bounds)})"
        label = (", ".join(parts) + ": " if parts else "") + what
        # What the reference curves of trade-off and attack charts are drawn from (constant along a line there).
        params = {k: members[0].get(k) for k in ("mu", "epsilon", "delta") if k in cols}
        series.append(
            Series(
                label=label,
                methods=methods,
                bounds=bounds,
                x=[float(r[x]) for r in members],
                y=[float(r[chart.y]) for r in members],
                lower=[float(r[lower_key]) if lower_key and _number(r.get(lower_key)) else None for r in members],
                params=params,
                where=", ".join(parts),
            )
        )
    fixed = [k for k in cols if k in xs and k not in by and k != x and len(_distinct(rows, k)) == 1]
    title = ", ".join(f"{cols[k].label} = {_shown(cols[k], _distinct(rows, k)[0])}" for k in fixed)
    unit = chart.kind is not None
    all_x = [v for s in series for v in s.x]
    all_y = [v for s in series for v in s.y] + [v for s in series for v in s.lower if v is not None]
    return Figure(
        command=result.command,
        title=title,
        x_key=x,
        y_key=chart.y,
        x_label=cols[x].label,
        y_label=cols[chart.y].label,
        x_log=False if unit else _log_axis(x, all_x),
        y_log=False if unit else _log_axis(chart.y, all_y),
        kind=chart.kind,
        series=series,
        lower_label=cols[lower_key].label if lower_key else "",
    )


# --------------------------------------------------------------------------
# Text chart
# --------------------------------------------------------------------------

#: Glyphs for the lines, in order; '.' joins the points of approximate lines, ':' fills certified bands.
GLYPHS = "*o+x#@%&=$?s"


def _scale(values: list[float], log: bool) -> tuple[float, float, Callable[[float], float]]:
    t = (lambda v: math.log10(v)) if log else (lambda v: v)
    lo, hi = min(t(v) for v in values), max(t(v) for v in values)
    if hi == lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    return lo, hi, t


def text_chart(fig: Figure, width: int = 56, height: int = 12) -> str:
    """A compact plain-text chart of ``fig``: one glyph per line, the axes' ends rounded outward, a legend.

    Only ASCII is drawn; labels keep their Greek letters (the caller spells them for its stream).
    """
    xs = [v for s in fig.series for v in s.x]
    ys = [v for s in fig.series for v in s.y] + [v for s in fig.series for v in s.lower if v is not None]
    if fig.kind is not None:  # the unit square
        xs, ys = xs + [0.0, 1.0], ys + [0.0, 1.0]
    x0, x1, tx = _scale(xs, fig.x_log)
    y0, y1, ty = _scale(ys, fig.y_log)

    def cx(v: float) -> float:
        return (tx(v) - x0) / (x1 - x0) * (width - 1)

    def cy(v: float) -> float:
        return (height - 1) - (ty(v) - y0) / (y1 - y0) * (height - 1)

    grid = [[" "] * width for _ in range(height)]

    def put(c: float, r: float, ch: str, over: bool = True) -> None:
        i, j = int(round(r)), int(round(c))
        if 0 <= i < height and 0 <= j < width and (over or grid[i][j] == " "):
            grid[i][j] = ch

    order = sorted(range(len(fig.series)), key=lambda k: not fig.series[k].approximate)
    glyph = {k: GLYPHS[k % len(GLYPHS)] for k in range(len(fig.series))}
    bands = []
    for k in order:  # certified bands under everything
        s = fig.series[k]
        pts = [(cx(a), cy(lo), cy(hi)) for a, lo, hi in zip(s.x, s.lower, s.y) if lo is not None]
        if pts:
            bands.append(k)
        for (ca, la, ha), (cb, lb, hb) in zip(pts, pts[1:]) if len(pts) > 1 else []:
            for j in range(int(round(ca)), int(round(cb)) + 1):
                f = 0.0 if cb == ca else (j - ca) / (cb - ca)
                top, bottom = ha + f * (hb - ha), la + f * (lb - la)
                for i in range(int(round(top)), int(round(bottom)) + 1):
                    put(j, i, ":", over=False)
        for ca, la, ha in pts:
            for i in range(int(round(ha)), int(round(la)) + 1):
                put(ca, i, ":", over=False)
    for k in order:
        s = fig.series[k]
        join = "." if s.approximate else glyph[k]
        pts = [(cx(a), cy(b)) for a, b in zip(s.x, s.y)]
        for (ca, ra), (cb, rb) in zip(pts, pts[1:]) if fig.kind is None else []:
            n = int(max(abs(cb - ca), abs(rb - ra))) + 1
            for step in range(n + 1):
                f = step / n
                put(ca + f * (cb - ca), ra + f * (rb - ra), join)
        for c, r in pts:
            put(c, r, glyph[k])

    def end(v: float, safe: str) -> str:
        return format_number(v, safe, digits=3)

    real = (lambda v: 10.0**v) if fig.y_log else (lambda v: v)
    top, bottom = end(real(y1), "up"), end(real(y0), "down")
    pad = max(len(top), len(bottom))
    lines = [fig.y_label + (" (log scale)" if fig.y_log else "")]
    for i, row in enumerate(grid):
        label = top if i == 0 else bottom if i == height - 1 else ""
        lines.append((f"{label:>{pad}} |" + "".join(row)).rstrip())
    lines.append(" " * pad + " +" + "-" * width)
    realx = (lambda v: 10.0**v) if fig.x_log else (lambda v: v)
    left, right = end(realx(x0), "down"), end(realx(x1), "up")
    lines.append(" " * (pad + 2) + left + " " * max(1, width - len(left) - len(right)) + right)
    name = fig.x_label + (" (log scale)" if fig.x_log else "")
    lines.append((" " * (pad + 2) + name.center(width)).rstrip())
    for k in range(len(fig.series)):
        s = fig.series[k]
        note = " - may be below the true value" if s.approximate else ""
        lines.append(f"  {glyph[k]} {s.label}{note}")
    for k in bands:
        lines.append(f"  : certified interval of {glyph[k]} between {fig.lower_label} and {fig.y_label}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Image files (matplotlib)
# --------------------------------------------------------------------------

#: Line colours (matplotlib's tab10), fixed so a user's style cannot make two lines alike.
COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#637939",
)


def matplotlib_missing() -> bool:
    """Whether matplotlib cannot be imported (checked without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("matplotlib") is None
    except (ImportError, ValueError):
        return True


def _reference(ax, fig: Figure) -> None:
    """Trade-off and attack charts: the diagonal, and each line's exact curve drawn densely from its closed form
    (the rows sample a convex trade-off, or a concave TPR, which straight joins would show as more private than
    it is); for trade-offs also the GDP curve of the same μ."""
    import numpy as np

    from dpcalc.core import fdp, gdp

    attack = fig.kind == "attack"
    if attack:
        ax.plot([0, 1], [0, 1], color="0.55", linewidth=0.8, linestyle=":", label="random guessing (TPR = FPR)")
    else:
        ax.plot([0, 1], [1, 0], color="0.55", linewidth=0.8, linestyle=":", label="no privacy loss (β = 1 − α)")
    alpha = np.linspace(0.0, 1.0, 501)
    for k, s in enumerate(fig.series):
        colour = COLOURS[k % len(COLOURS)]
        p = s.params
        mu, eps, delta = p.get("mu"), p.get("epsilon"), p.get("delta")
        if mu is not None and math.isfinite(mu):
            beta = gdp.tradeoff(mu, alpha)
            ax.plot(alpha, 1 - beta if attack else beta, color=colour, linewidth=1.2)
        elif eps is not None and delta is not None:
            beta = fdp.dp_tradeoff(eps, delta, alpha)
            ax.plot(alpha, 1 - beta if attack else beta, color=colour, linewidth=1.2)
            if attack or not (0 < delta < 1 and eps > 0):
                continue
            # The Gaussian mechanism that is exactly (ε, δ)-DP: its G_μ lies above f_{ε,δ} and touches it.
            mu = float(gdp.mu_for_dp(eps, delta))
            ax.plot(
                alpha,
                gdp.tradeoff(mu, alpha),
                color=colour,
                linewidth=1.0,
                linestyle="-.",
                label=f"GDP curve μ = {format_number(mu, 'down', 4)}, exactly (ε, δ)-DP (gdp, exact)",
            )


def image_bytes(fig: Figure, fmt: str) -> bytes:
    """``fig`` drawn by matplotlib as ``fmt`` (png, svg or pdf); the same figure gives the same bytes.

    SVG files keep their text as text and carry the plotted values, full precision, as JSON in their
    description (``<dc:description>``).
    """
    try:
        import matplotlib
        from matplotlib.figure import Figure as MplFigure
    except ImportError:
        raise PlotError(f"--plot FILE needs matplotlib, which is not installed: {EXTRA}.") from None

    rc = {
        "svg.fonttype": "none",
        "svg.hashsalt": "dpcalc",
        "font.size": 9,
        "axes.titlesize": 9,
        "legend.fontsize": 7.5,
        "path.simplify": False,
    }
    with matplotlib.rc_context(rc):
        f = MplFigure(figsize=(6.4, 4.4) if fig.kind is None else (5.6, 5.0), dpi=100, layout="constrained")
        ax = f.add_subplot()
        for k, s in enumerate(fig.series):
            colour = COLOURS[k % len(COLOURS)]
            label = s.label + (" — may be below the true value" if s.approximate else "")
            ax.plot(
                s.x,
                s.y,
                color=colour,
                # Trade-off and attack rows: markers, joined by their exact curves (_reference).
                linestyle="none" if fig.kind is not None else (0, (4, 2)) if s.approximate else "-",
                linewidth=1.6,
                marker="o" if len(s.x) <= 40 or fig.kind is not None else None,
                markersize=3,
                label=label,
            )
            if any(v is not None for v in s.lower):
                has = [v is not None for v in s.lower]
                lo = [v if v is not None else y for v, y in zip(s.lower, s.y)]
                ax.fill_between(
                    s.x,
                    lo,
                    s.y,
                    where=has,
                    color=colour,
                    alpha=0.3,
                    linewidth=0,
                    label=(f"{s.where}: " if s.where else "")
                    + f"{s.family}: certified interval [{fig.lower_label}, {fig.y_label}]",
                )
        if fig.kind is not None:
            _reference(ax, fig)
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_aspect("equal", adjustable="box")
        if fig.x_log:
            ax.set_xscale("log")
        if fig.y_log:
            ax.set_yscale("log")
        ax.set_xlabel(fig.x_label)
        ax.set_ylabel(fig.y_label)
        ax.set_title(f"dpcalc {fig.command}" + (f"\n{fig.title}" if fig.title else ""), loc="left")
        ax.grid(True, alpha=0.3, linewidth=0.5)
        ax.legend(loc="best", frameon=True)
        title = f"dpcalc {fig.command}: {fig.y_label} against {fig.x_label}"
        metadata: dict[str, Any] = {
            "png": {"Title": title, "Software": None},
            "svg": {"Title": title, "Date": None, "Description": json.dumps(fig.data(), ensure_ascii=False)},
            "pdf": {"Title": title, "Creator": None, "Producer": None, "CreationDate": None},
        }[fmt]
        buf = io.BytesIO()
        f.savefig(buf, format=fmt, metadata=metadata)
    return buf.getvalue()


def write_file(data: bytes, path: str) -> None:
    """Write ``data`` to ``path`` whole: to a temporary file beside it, then renamed over it (OSError on failure)."""
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".dpcalc-plot-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
