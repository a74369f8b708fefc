"""dpcalc group — what groups of k records get."""

from __future__ import annotations

import click

from dpcalc.cli import _common as c
from dpcalc.cli.options import (
    CONTEXT,
    COUNT,
    NONNEGATIVE,
    POSITIVE,
    PROB_OR_ZERO,
    PROBABILITY,
    budget_option,
    grid_option,
    output_options,
    sensitivity_option,
)
from dpcalc.cli.pipe import PipeGroup, input_option, read_objects

_size = grid_option("--size", allowed=COUNT, required=True, help="Group size k (records of one person).")

#: Above this, a group δ is flagged as no longer small.
DELTA_WARN = 1e-3


@click.group(cls=PipeGroup, context_settings=CONTEXT)
def group():
    """Guarantees for groups of k records (one person contributing k rows)."""


@group.command(context_settings=CONTEXT)
@grid_option("--epsilon", allowed=NONNEGATIVE, required=True, help="ε for one record.")
@grid_option("--delta", allowed=PROB_OR_ZERO, default="0", help="δ for one record, in [0, 1).")
@_size
@output_options
@budget_option
def dp(epsilon, delta, size, fmt, as_json):
    """(ε, δ) for groups of k: (kε, δ(e^{kε}−1)/(e^ε−1)), and the textbook k·e^{(k−1)ε}·δ.

    Both are sound; the geometric sum is the tighter. A grid over --size
    shows how fast δ grows.

    \b
    Examples:
      dpcalc group dp --epsilon 0.5 --delta 1e-7 --size 4
      dpcalc group dp --epsilon 0.5 --delta 1e-7 --size 1:10:10
    """
    from dpcalc.core import group as g
    from dpcalc.model import DP

    m = c.mesh(epsilon=epsilon, delta=delta, size=size)
    et, dt = g.dp_tight(m["epsilon"], m["delta"], m["size"])
    _, db = g.dp_textbook(m["epsilon"], m["delta"], m["size"])
    rows, warnings, objects = [], [], []
    for i in range(et.size):
        base = {
            "epsilon_in": c.f(m["epsilon"][i]),
            "delta_in": c.f(m["delta"][i]),
            "size": int(m["size"][i]),
            "epsilon": c.f(et[i]),
        }
        rows.append(dict(base, delta=c.f(dt[i]), method="group-geometric", bound="upper"))
        rows.append(dict(base, delta=c.f(db[i]), method="group-textbook", bound="upper"))
        objects.append(DP(c.f(et[i]), c.f(dt[i])))
        if dt[i] >= 1:
            warnings.append("for some group sizes δ reaches 1: the guarantee says nothing for those groups.")
        elif dt[i] > DELTA_WARN:
            warnings.append(
                f"for some group sizes δ exceeds {DELTA_WARN:g}: the guarantee is weak; group privacy "
                "blows δ up by up to e^((k−1)ε)·k."
            )
    cols = [
        ("epsilon_in", "ε"),
        ("delta_in", "δ"),
        ("size", "k", "int"),
        ("epsilon", "ε group", "float", "up"),
        ("delta", "δ group", "float", "up"),
    ]
    return c.emit_rows(
        "group dp",
        dict(epsilon=epsilon, delta=delta, size=size),
        cols,
        rows,
        fmt,
        as_json,
        objects=objects,
        warnings=warnings,
    )


def _simple(command, key, label, values, size, fn, method, obj, fmt, as_json, extra_inputs=None):

    m = c.mesh(**{key: values}, size=size)
    out = fn(m[key], m["size"])
    rows = [
        {key + "_in": c.f(m[key][i]), "size": int(m["size"][i]), key: c.f(out[i]), "method": method, "bound": "exact"}
        for i in range(out.size)
    ]
    cols = [(key + "_in", label), ("size", "k", "int"), (key, label + " group", "float", "up")]
    return c.emit_rows(
        command,
        {key: values, "size": size, **(extra_inputs or {})},
        cols,
        rows,
        fmt,
        as_json,
        objects=[obj(r[key]) for r in rows],
    )


@group.command(context_settings=CONTEXT)
@grid_option("--epsilon", allowed=NONNEGATIVE, required=True, help="Pure ε for one record.")
@_size
@output_options
@budget_option
def pure(epsilon, size, fmt, as_json):
    """Pure ε-DP for groups of k: kε (Dwork & Roth Thm 2.2)."""
    from dpcalc.core import group as g
    from dpcalc.model import DP

    return _simple(
        "group pure", "epsilon", "ε", epsilon, size, g.pure, "group-pure", lambda v: DP(v, 0.0), fmt, as_json
    )


@group.command(context_settings=CONTEXT)
@grid_option("--mu", allowed=NONNEGATIVE, required=True, help="μ for one record.")
@_size
@output_options
def gdp(mu, size, fmt, as_json):
    """μ-GDP for groups of k: kμ (Dong, Roth & Su 2022, Thm 2.14)."""
    from dpcalc.core import group as g
    from dpcalc.model import GDP

    return _simple("group gdp", "mu", "μ", mu, size, g.gdp, "group-gdp", GDP, fmt, as_json)


@group.command(context_settings=CONTEXT)
@grid_option("--rho", allowed=NONNEGATIVE, required=True, help="ρ for one record.")
@_size
@output_options
def zcdp(rho, size, fmt, as_json):
    """ρ-zCDP for groups of k: k²ρ (Bun & Steinke 2016, Proposition 5.5)."""
    from dpcalc.core import group as g
    from dpcalc.model import ZCDP

    return _simple("group zcdp", "rho", "ρ", rho, size, g.zcdp, "group-zcdp", ZCDP, fmt, as_json)


@group.command(context_settings=CONTEXT)
@grid_option("--sigma", allowed=POSITIVE, required=True, help="Noise σ of the Gaussian mechanism.")
@sensitivity_option
@_size
@grid_option("--delta", allowed=PROBABILITY, default="1e-5", help="δ at which to report the group's ε.")
@output_options
@budget_option
def gaussian(sigma, sensitivity, size, delta, fmt, as_json):
    """A Gaussian mechanism seen by a group of k: sensitivity kΔ, so μ = kΔ/σ (exact)."""
    from dpcalc.core import gaussian as ga
    from dpcalc.core import group as g
    from dpcalc.model import Gaussian

    m = c.mesh(sigma=sigma, sensitivity=sensitivity, size=size, delta=delta)
    sens = g.gaussian_sensitivity(m["sensitivity"], m["size"])  # kΔ, rounded up
    eps = ga.epsilon_at(m["sigma"], m["delta"], sens)
    mus = ga.mu_of(m["sigma"], sens)  # kΔ/σ, rounded up
    rows = [
        {
            "sigma": c.f(m["sigma"][i]),
            "sensitivity": c.f(m["sensitivity"][i]),
            "size": int(m["size"][i]),
            "group_sensitivity": c.f(sens[i]),
            "mu": c.f(mus[i]),
            "delta": c.f(m["delta"][i]),
            "epsilon": c.f(eps[i]),
            "method": "analytic-gaussian",
            "bound": "exact",
        }
        for i in range(eps.size)
    ]
    cols = [
        ("sigma", "σ"),
        ("sensitivity", "Δ"),
        ("size", "k", "int"),
        ("group_sensitivity", "kΔ"),
        ("mu", "μ group", "float", "up"),
        ("delta", "δ"),
        ("epsilon", "ε group", "float", "up"),
    ]
    return c.emit_rows(
        "group gaussian",
        dict(sigma=sigma, sensitivity=sensitivity, size=size, delta=delta),
        cols,
        rows,
        fmt,
        as_json,
        objects=[Gaussian(r["sigma"], r["group_sensitivity"]) for r in rows],
    )


@group.command("input", hidden=True, context_settings=CONTEXT)
@input_option
@_size
@grid_option("--delta", allowed=PROBABILITY, default="1e-5", help="δ at which to report ε for Gaussian mechanisms.")
@output_options
@budget_option
def from_input(source, size, delta, fmt, as_json):
    """Group privacy of the mechanisms or guarantees read from stdin (or --input)."""
    from dpcalc.model import DP, GDP, ZCDP, Gaussian, Laplace, type_name

    ctx = click.get_current_context()
    with c.collecting() as results:
        for obj, where in read_objects(source):
            with c.attributed(where):
                if isinstance(obj, Gaussian):
                    ctx.invoke(
                        gaussian,
                        sigma=(obj.sigma,),
                        sensitivity=(obj.sensitivity,),
                        size=size,
                        delta=delta,
                        fmt=fmt,
                        as_json=as_json,
                    )
                elif isinstance(obj, DP) and obj.delta > 0:
                    ctx.invoke(dp, epsilon=(obj.epsilon,), delta=(obj.delta,), size=size, fmt=fmt, as_json=as_json)
                elif isinstance(obj, (DP, Laplace)):
                    e = obj.epsilon if isinstance(obj, DP) else obj.sensitivity / obj.scale
                    ctx.invoke(pure, epsilon=(e,), size=size, fmt=fmt, as_json=as_json)
                elif isinstance(obj, GDP):
                    ctx.invoke(gdp, mu=(obj.mu,), size=size, fmt=fmt, as_json=as_json)
                elif isinstance(obj, ZCDP):
                    ctx.invoke(zcdp, rho=(obj.rho,), size=size, fmt=fmt, as_json=as_json)
                else:
                    raise click.UsageError(
                        f"{where}: group privacy of a {type_name(obj)} object is not supported; "
                        "give a mechanism or a dp, gdp or zcdp guarantee"
                        + (
                            " (for a composition, its total (ε, δ) from compose's rows: 'dpcalc group dp --epsilon E "
                            "--delta D --size K')."
                            if type_name(obj) == "composed"
                            else "."
                        )
                    )
    return c.emit(c.merge(results, "group"), fmt, as_json)
