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
        # (A sound guarantee for every mechanism with the one-record guarantee, and the best one for that class —
        # the Laplace or Gaussian mechanism reaches it — but not the exact value for any given mechanism: upper.)
        {key + "_in": c.f(m[key][i]), "size": int(m["size"][i]), key: c.f(out[i]), "method": method, "bound": "upper"}
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
    """Pure ε-DP for groups of k: kε (Dwork & Roth Thm 2.2).

    A sound guarantee for every ε-DP mechanism, and the best one for that class (the Laplace mechanism reaches it):
    bound upper, since a given mechanism's group ε can be smaller."""
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
    """μ-GDP for groups of k: kμ (Dong, Roth & Su 2022, Thm 2.14).

    A sound guarantee for every μ-GDP mechanism, and the best one for that class (the Gaussian mechanism reaches
    it): bound upper, since a given mechanism's group μ can be smaller."""
    from dpcalc.core import group as g
    from dpcalc.model import GDP

    return _simple("group gdp", "mu", "μ", mu, size, g.gdp, "group-gdp", GDP, fmt, as_json)


@group.command(context_settings=CONTEXT)
@grid_option("--rho", allowed=NONNEGATIVE, required=True, help="ρ for one record.")
@_size
@output_options
def zcdp(rho, size, fmt, as_json):
    """ρ-zCDP for groups of k: k²ρ (Bun & Steinke 2016, Proposition 5.5).

    A sound guarantee for every ρ-zCDP mechanism, and the best one for that class (the Gaussian mechanism reaches
    it): bound upper, since a given mechanism's group ρ can be smaller."""
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
@grid_option(
    "--delta",
    allowed=PROBABILITY,
    default="1e-5",
    help="δ at which to report ε for Gaussian mechanisms and compositions.",
)
@output_options
@budget_option
def from_input(source, size, delta, fmt, as_json):
    """Group privacy of the mechanisms, guarantees or compositions read from stdin (or --input)."""
    from dpcalc.model import DP, GDP, ZCDP, Gaussian, Laplace

    ctx = click.get_current_context()

    def prefetch(chunk):
        from dpcalc.core import gdp as gdp_core

        gdp_core.prefetch_epsilon(*c.gaussian_pairs(chunk, delta, sizes=size))

    with c.collecting() as results:
        for obj, where in c.prefetched(read_objects(source), prefetch):
            with c.attributed(where, obj):
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
                else:  # a composition, or another kind with a group rule (group_of says which have none)
                    _composition(obj, where, size, delta, fmt, as_json)
    return c.emit(c.merge(results, "group"), fmt, as_json)


def group_of(obj, k: int, where: str = "object"):
    """The privacy object a group of k records sees, for each kind with a group rule (raises ObjectError
    for the others). Each rule is exact for the mechanism or a sound bound for the guarantee:

    - a Gaussian, Laplace, discrete Gaussian or discrete Laplace mechanism: sensitivity kΔ (the
      mechanism itself; kΔ rounded up);
    - μ-GDP: kμ ([DRS] Thm 2.14); ρ-zCDP: k²ρ ([BS] Prop. 5.5); pure ε: kε; (ε, δ): (kε,
      δ(e^{kε} − 1)/(e^ε − 1)); randomised response and bounded range with ε₀: pure kε₀;
    - an RDP curve: the group curve of :func:`dpcalc.core.group.rdp`;
    - a Poisson-subsampled Gaussian (add/remove): the user-level pair with k examples per user (each
      of the k records sampled independently, as every record is), or kK where it already has K;
    - shuffled epochs without amplification (E Gaussian mechanisms on the record): the k records may
      share a batch, so each epoch's Gaussian has sensitivity kΔ;
    - a composition: the composition of its parts' group objects (k records differ in every part).
    """
    import dataclasses

    from dpcalc.core import _fp
    from dpcalc.core import group as g
    from dpcalc.model import (
        DP,
        GDP,
        ZCDP,
        BoundedRange,
        Composed,
        DiscreteGaussian,
        DiscreteLaplace,
        Gaussian,
        Laplace,
        ObjectError,
        RandomizedResponse,
        RDPCurve,
        Shuffled,
        Subsampled,
        type_name,
    )

    if isinstance(obj, Composed):
        return Composed(tuple((group_of(p, k, f"{where} part {i}"), t) for i, (p, t) in enumerate(obj.parts, 1)))
    if isinstance(obj, (Gaussian, Laplace)):
        return dataclasses.replace(obj, sensitivity=float(_fp.mul_up(obj.sensitivity, float(k))))
    if isinstance(obj, (DiscreteGaussian, DiscreteLaplace)):
        return dataclasses.replace(obj, sensitivity=int(obj.sensitivity) * int(k))
    if isinstance(obj, GDP):
        return GDP(float(g.gdp(obj.mu, k)))
    if isinstance(obj, ZCDP):
        return ZCDP(float(g.zcdp(obj.rho, k)))
    if isinstance(obj, (RandomizedResponse, BoundedRange)):
        return DP(float(g.pure(obj.epsilon, k)), 0.0)
    if isinstance(obj, DP):
        if obj.delta == 0:
            return DP(float(g.pure(obj.epsilon, k)), 0.0)
        e, d = g.dp_tight(obj.epsilon, obj.delta, k)
        return DP(float(e), float(d))
    if isinstance(obj, RDPCurve):
        orders, values = g.rdp(obj.orders, obj.values, k)
        if not len(orders):
            raise ObjectError(
                f"{where}: the RDP curve has no order α >= {2 * g.rdp_span(k):g}, which a group of {k} needs "
                "(its orders are halved for each doubling of the group)"
            )
        return RDPCurve(tuple(float(a) for a in orders), tuple(float(v) for v in values))
    if isinstance(obj, Shuffled) and obj.batches is None:
        # E Gaussian mechanisms on the record, unamplified: k records may share a batch, so kΔ each epoch.
        return dataclasses.replace(obj, inner=group_of(obj.inner, k, where))
    if (
        isinstance(obj, Subsampled)
        and isinstance(obj.inner, Gaussian)
        and obj.scheme in ("poisson", "user-level")
        and obj.neighbours == "add-remove"
    ):
        per_user = int(obj.examples_per_user or 1) * int(k)
        return dataclasses.replace(obj, scheme="user-level", examples_per_user=per_user)
    raise ObjectError(
        f"{where}: group privacy of a {type_name(obj)} object"
        + (f" ({obj.scheme} sampling)" if isinstance(obj, Subsampled) else "")
        + " is not supported; give its (ε, δ) instead: 'dpcalc group dp --epsilon E --delta D --size K'"
    )


def _composition(obj, where, size, delta, fmt, as_json):
    """Group privacy of a piped composition (or of one object of another kind): the composition of its parts'
    group objects (:func:`group_of`), accounted by compose's engines at --delta, rows per group size."""
    from dpcalc.accounting import compose_parts, flatten
    from dpcalc.cli.compose import _mark_tightest
    from dpcalc.model import ObjectError

    rows, objects, warnings = [], [], []
    for k in size:
        k = int(k)
        try:
            grouped = group_of(obj, k, where)
            parts = flatten(grouped, 1, f"{where}, groups of {k}")
        except ObjectError as exc:
            raise click.UsageError(str(exc)) from None
        objects.append(grouped)
        for d in delta:
            try:
                totals = compose_parts(parts, float(d), with_pld=True, width=c.pld_width())
            except ObjectError as exc:  # (e.g. a user-level part whose loss distribution does not fit a grid)
                raise click.UsageError(f"{where}, groups of {k}: {exc}") from None
            for t in totals:
                rows.append(
                    {
                        "size": k,
                        "delta": t.delta,
                        "mu": t.mu,
                        "rho": t.rho,
                        "epsilon_lower": t.epsilon_lower,
                        "epsilon": t.epsilon,
                        "epsilon_width": t.epsilon_width,
                        "order": t.order,
                        "method": t.method,
                        "bound": t.bound,
                    }
                )
                if t.epsilon_lower is not None:
                    warnings += c.width_warnings(
                        [f"the {t.method} total for groups of {k}"], [t.epsilon_lower], [t.epsilon], [t.met]
                    )
    _mark_tightest(rows, ["size", "delta"])
    cols = [
        ("size", "k", "int"),
        ("delta", "δ"),
        ("mu", "μ group", "float", "up"),
        ("rho", "ρ group", "float", "up"),
        ("epsilon_lower", "ε ≥ (certified)", "float", "down"),
        ("epsilon", "ε group", "float", "up"),
        ("order", "best α"),
    ]
    cols = [col for col in cols if any(r.get(col[0]) is not None for r in rows)]
    return c.emit_rows(
        "group",
        {"size": list(size), "delta": list(delta)},
        cols,
        rows,
        fmt,
        as_json,
        tail=("tightest", "method", "bound"),
        objects=objects,
        warnings=warnings,
        notes=[
            "Groups of k records of a composition: each part's group guarantee (Gaussian-type mechanisms with "
            "sensitivity kΔ, μ → kμ, ρ → k²ρ, ε → kε, (ε, δ) → (kε, δ(e^{kε} − 1)/(e^ε − 1)), a Poisson-subsampled "
            "Gaussian as k examples per user), composed."
        ],
    )
