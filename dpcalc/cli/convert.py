"""dpcalc convert — between the languages of privacy."""

from __future__ import annotations

import click

from dpcalc.cli import _common as c
from dpcalc.cli.options import (
    CONTEXT,
    NONNEGATIVE,
    POSITIVE,
    PROB_OR_ZERO,
    PROBABILITY,
    UNIT_CLOSED,
    Range,
    budget_option,
    exclusive,
    given,
    grid_option,
    output_options,
    refuse_unused,
    require,
    rr_k_option,
    sensitivity_option,
)
from dpcalc.cli.pipe import PipeGroup, input_option, read_objects

DEFAULT_DELTAS = "1e-10:1e-2:9:log"
DEFAULT_ALPHAS = "0:1:21"
DEFAULT_FPRS = "0.001,0.01,0.1"


def _to_option(choices, default):
    return click.option(
        "--to",
        "target",
        type=click.Choice(choices),
        default=default,
        help="What to convert to: " + "; ".join(_TARGETS[c] for c in choices) + ".",
    )


_TARGETS = {
    "dp": "dp = (ε, δ)",
    "tradeoff": "tradeoff = β(α) of the optimal test",
    "attack": "attack = best membership-inference advantage and TPR at given FPRs",
    "gdp": "gdp = μ (and σ for --sensitivity)",
    "zcdp": "zcdp = ρ",
}


_alpha = grid_option(
    "--alpha", allowed=UNIT_CLOSED, help=f"Type I errors for --to tradeoff [default: {DEFAULT_ALPHAS}]."
)
_fpr = grid_option(
    "--fpr", allowed=UNIT_CLOSED, help=f"False-positive rates for --to attack [default: {DEFAULT_FPRS}]."
)


@click.group(cls=PipeGroup, context_settings=CONTEXT)
def convert():
    """Translate a guarantee: σ, μ-GDP, ρ-zCDP, RDP, (ε, δ), f-DP, attack success."""


def _refuse_for_target(target: str | None, *, sensitivity: bool = False, query: bool = True) -> None:
    """Refuse the options the chosen --to ignores (--alpha only reads a trade-off curve, --fpr an attack)."""
    to = target or "dp"
    if to in ("dp", "gdp", "zcdp"):
        refuse_unused(f"with --to {to} (--alpha is for --to tradeoff, --fpr for --to attack)", "alpha", "fpr")
    # For a mechanism or μ, --epsilon/--delta are points to read the (ε, δ) curve at; for convert dp they
    # are the guarantee itself.
    points = ("epsilon", "delta") if query else ()
    if to == "tradeoff":
        refuse_unused("with --to tradeoff (it reads the curve at --alpha)", *points, "fpr")
    if to == "attack":
        refuse_unused("with --to attack (it reads the curve at --fpr)", *points, "alpha")
    if sensitivity and to != "gdp":
        refuse_unused(f"with --to {to} (--sensitivity sets the σ of --to gdp)", "sensitivity")


def _gdp_rows(mus, delta, epsilon, target, alpha, fpr, extra, method):
    """Rows for a μ-GDP guarantee (also used by Gaussian mechanisms)."""
    import numpy as np

    from dpcalc.core import gdp

    rows = []
    if target == "dp":
        exclusive(delta=delta, epsilon=epsilon)
        if epsilon is not None:
            m = c.mesh(i=tuple(range(len(mus))), epsilon=epsilon)
            mu = mus.take(m["i"].astype(int))
            d = gdp.delta(mu, m["epsilon"])
            e = m["epsilon"]
        else:
            from dpcalc.cli.options import parse_grid

            m = c.mesh(i=tuple(range(len(mus))), delta=delta or parse_grid(DEFAULT_DELTAS))
            mu = mus.take(m["i"].astype(int))
            e = gdp.epsilon(mu, m["delta"])
            d = m["delta"]
        for k in range(mu.size):
            row = dict(extra[int(m["i"][k])])
            dk, bound = c.delta_out(d[k], "exact") if epsilon is not None else (c.f(d[k]), "exact")
            row.update(mu=c.f(mu[k]), epsilon=c.f(e[k]), delta=dk, method=method, bound=bound)
            rows.append(row)
        cols = [("mu", "μ", "float", "up"), ("epsilon", "ε", "float", "up"), ("delta", "δ", "float", "up")]
    elif target == "tradeoff":
        from dpcalc.cli.options import parse_grid

        m = c.mesh(i=tuple(range(len(mus))), alpha=alpha or parse_grid(DEFAULT_ALPHAS))
        mu = mus.take(m["i"].astype(int))
        beta = gdp.tradeoff(mu, m["alpha"])
        # β = Φ(Φ⁻¹(1−α) − μ) is positive for every α < 1, but past Φ(−38) it is below every double: 0 there
        # is that value rounded down, a lower bound on β (the safe side), not its exact value.
        under = (beta == 0) & (m["alpha"] < 1) & np.isfinite(mu)
        for k in range(mu.size):
            row = dict(extra[int(m["i"][k])])
            how = "lower" if under[k] else "exact"
            row.update(mu=c.f(mu[k]), alpha=c.f(m["alpha"][k]), beta=c.f(beta[k]), method="gdp-tradeoff", bound=how)
            rows.append(row)
        # A larger β means a weaker attack, so round β down.
        cols = [("mu", "μ", "float", "up"), ("alpha", "α (type I)"), ("beta", "β (type II)", "float", "down")]
    else:  # attack
        from dpcalc.cli.options import parse_grid

        m = c.mesh(i=tuple(range(len(mus))), fpr=fpr or parse_grid(DEFAULT_FPRS))
        mu = mus.take(m["i"].astype(int))
        adv = gdp.advantage(mu)
        tpr = gdp.attack_tpr(mu, m["fpr"])
        for k in range(mu.size):
            row = dict(extra[int(m["i"][k])])
            row.update(
                mu=c.f(mu[k]),
                advantage=c.f(adv[k]),
                fpr=c.f(m["fpr"][k]),
                tpr=c.f(tpr[k]),
                method="gdp-attack",
                bound="exact",
            )
            rows.append(row)
        cols = [
            ("mu", "μ", "float", "up"),
            ("advantage", "max TPR−FPR", "float", "up"),
            ("fpr", "FPR"),
            ("tpr", "max TPR", "float", "up"),
        ]
    return rows, cols


@convert.command(context_settings=CONTEXT)
@grid_option("--sigma", allowed=POSITIVE, required=True, help="Noise standard deviation σ.")
@sensitivity_option
@grid_option("--delta", allowed=PROBABILITY, help=f"δ at which to report ε [default: {DEFAULT_DELTAS}].")
@grid_option("--epsilon", allowed=NONNEGATIVE, help="ε at which to report δ (instead of --delta).")
@_to_option(["dp", "tradeoff", "attack"], "dp")
@_alpha
@_fpr
@output_options
@budget_option
def gaussian(sigma, sensitivity, delta, epsilon, target, alpha, fpr, fmt, as_json):
    """The exact privacy of a Gaussian mechanism: its (ε, δ) curve, μ, ρ, f-DP.

    A Gaussian mechanism is exactly μ-GDP with μ = Δ/σ, so every number here
    is exact (Balle & Wang 2018; Dong, Roth & Su 2022).

    \b
    Examples:
      dpcalc convert gaussian --sigma 3.73 --delta 1e-5
      dpcalc convert gaussian --sigma 2 --epsilon 0.5,1,2
      dpcalc convert gaussian --sigma 2 --to attack
    """
    import numpy as np

    from dpcalc.core import gaussian as g

    _refuse_for_target(target)

    m = c.mesh(sigma=sigma, sensitivity=sensitivity)
    mus = np.asarray(g.mu_of(m["sigma"], m["sensitivity"]))  # rounded up: every reading below is safe
    rhos = np.asarray(g.rho_of(m["sigma"], m["sensitivity"]))
    extra = [
        {"sigma": c.f(m["sigma"][i]), "sensitivity": c.f(m["sensitivity"][i]), "rho": c.f(rhos[i])}
        for i in range(mus.size)
    ]
    rows, cols = _gdp_rows(mus, delta, epsilon, target, alpha, fpr, extra, "analytic-gaussian")
    cols = [("sigma", "σ"), ("sensitivity", "Δ"), ("rho", "ρ", "float", "up")] + cols
    return c.emit_rows(
        "convert gaussian",
        dict(sigma=sigma, sensitivity=sensitivity, delta=delta, epsilon=epsilon, to=target, alpha=alpha, fpr=fpr),
        cols,
        rows,
        fmt,
        as_json,
    )


@convert.command(context_settings=CONTEXT)
@grid_option("--mu", allowed=NONNEGATIVE, required=True, help="GDP parameter μ.")
@grid_option("--delta", allowed=PROBABILITY, help=f"δ at which to report ε [default: {DEFAULT_DELTAS}].")
@grid_option("--epsilon", allowed=NONNEGATIVE, help="ε at which to report δ (instead of --delta).")
@_to_option(["dp", "tradeoff", "attack"], "dp")
@_alpha
@_fpr
@output_options
@budget_option
def gdp(mu, delta, epsilon, target, alpha, fpr, fmt, as_json):
    """μ-GDP as (ε, δ), as a trade-off curve, or as attack success (all exact).

    μ-GDP holds iff (ε, δ(ε))-DP holds for all ε >= 0 with
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Cor. 2.13).

    \b
    Examples:
      dpcalc convert gdp --mu 1.2 --to dp --delta 1e-5
      dpcalc convert gdp --mu 1 --epsilon 0:3:7
      dpcalc convert gdp --mu 0.5,1,2 --to attack --fpr 0.01
    """
    import numpy as np

    mus = np.asarray(mu, dtype=float)
    _refuse_for_target(target)
    extra = [{} for _ in mu]
    rows, cols = _gdp_rows(mus, delta, epsilon, target, alpha, fpr, extra, "gdp")
    return c.emit_rows(
        "convert gdp",
        dict(mu=mu, delta=delta, epsilon=epsilon, to=target, alpha=alpha, fpr=fpr),
        cols,
        rows,
        fmt,
        as_json,
    )


@convert.command(context_settings=CONTEXT)
@grid_option("--epsilon", allowed=NONNEGATIVE, required=True, help="ε of the guarantee.")
@grid_option("--delta", allowed=PROB_OR_ZERO, help="δ of the guarantee, in [0, 1); 0 means pure ε-DP.", default="0")
@_to_option(["gdp", "zcdp", "tradeoff", "attack"], "gdp")
@sensitivity_option
@_alpha
@_fpr
@output_options
def dp(epsilon, delta, target, sensitivity, alpha, fpr, fmt, as_json):
    """An (ε, δ) guarantee as μ (Gaussian), ρ (pure ε), f-DP, or attack success.

    --to gdp gives the μ of the Gaussian mechanism that is exactly (ε, δ)-DP
    and its σ for the given sensitivity. --to zcdp needs δ = 0: ε-DP implies
    (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4).

    \b
    Examples:
      dpcalc convert dp --epsilon 1 --delta 1e-5 --to gdp
      dpcalc convert dp --epsilon 0.5 --to zcdp
      dpcalc convert dp --epsilon 1 --delta 1e-5 --to attack --fpr 0.01,0.1
    """
    from dpcalc.core import _fp, fdp, zcdp
    from dpcalc.core import gdp as gd
    from dpcalc.model import DP

    _refuse_for_target(target, sensitivity=True, query=False)
    rows, objects = [], []
    inputs = dict(epsilon=epsilon, delta=delta, to=target)
    if target == "gdp":
        if 0.0 in delta:
            raise click.UsageError(
                "Invalid value for '--delta': 0 — no Gaussian mechanism is pure ε-DP; give δ in (0, 1) for --to gdp."
            )
        m = c.mesh(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
        mu = gd.mu_for_dp(m["epsilon"], m["delta"])  # rounded down
        sigmas = _fp.div_up(m["sensitivity"], mu)  # rounded up
        for k in range(mu.size):
            sig = float(sigmas[k])
            rows.append(
                {
                    "epsilon": c.f(m["epsilon"][k]),
                    "delta": c.f(m["delta"][k]),
                    "mu": c.f(mu[k]),
                    "sensitivity": c.f(m["sensitivity"][k]),
                    "sigma": sig,
                    "method": "analytic-gaussian",
                    "bound": "exact",
                }
            )
            # The object carried on is the guarantee converted, not the Gaussian that meets it: a mechanism
            # that is (ε, δ)-DP need not be μ-GDP, and composing the Gaussian would bound it wrongly (100
            # of (1, 1e-6) gave 12.33 labelled exact). `calibrate gaussian` carries the Gaussian.
            objects.append(DP(c.f(m["epsilon"][k]), c.f(m["delta"][k])))
        # μ is rounded down so that δ_μ(ε) <= δ holds for the printed value.
        cols = [
            ("epsilon", "ε"),
            ("delta", "δ"),
            ("mu", "μ", "float", "down"),
            ("sensitivity", "Δ"),
            ("sigma", "σ", "float", "up"),
        ]
        inputs["sensitivity"] = sensitivity
        notes = [
            "μ of the Gaussian mechanism that is exactly (ε, δ)-DP; any smaller μ is also (ε, δ)-DP. A pipe carries "
            "the (ε, δ) guarantee on, not this Gaussian (an (ε, δ)-DP mechanism need not be μ-GDP); `dpcalc "
            "calibrate gaussian` carries the Gaussian."
        ]
    elif target == "zcdp":
        if any(d != 0 for d in delta):
            raise click.UsageError(
                "Invalid value for '--delta': only pure ε-DP (δ = 0) converts to zCDP; (ε, δ>0)-DP implies no ρ."
            )
        m = c.mesh(epsilon=epsilon)
        rho = zcdp.rho_from_pure(m["epsilon"])
        rows = [
            {"epsilon": c.f(e), "delta": 0.0, "rho": c.f(r), "method": "pure-to-zcdp", "bound": "upper"}
            for e, r in zip(m["epsilon"], rho)
        ]
        cols = [("epsilon", "ε"), ("delta", "δ"), ("rho", "ρ", "float", "up")]
        notes = ["ε-DP implies (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."]
    elif target == "tradeoff":
        from dpcalc.cli.options import parse_grid

        m = c.mesh(epsilon=epsilon, delta=delta, alpha=alpha or parse_grid(DEFAULT_ALPHAS))
        beta = fdp.dp_tradeoff(m["epsilon"], m["delta"], m["alpha"])
        rows = [
            {
                "epsilon": c.f(m["epsilon"][k]),
                "delta": c.f(m["delta"][k]),
                "alpha": c.f(m["alpha"][k]),
                "beta": c.f(beta[k]),
                "method": "dp-tradeoff",
                "bound": "exact",
            }
            for k in range(beta.size)
        ]
        cols = [("epsilon", "ε"), ("delta", "δ"), ("alpha", "α (type I)"), ("beta", "β (type II)", "float", "down")]
        inputs["alpha"] = alpha
        notes = ["β(α) = max{0, 1−δ−e^ε α, e^−ε (1−δ−α)} (Dong, Roth & Su 2022, Prop. 2.5)."]
    else:
        from dpcalc.cli.options import parse_grid

        m = c.mesh(epsilon=epsilon, delta=delta, fpr=fpr or parse_grid(DEFAULT_FPRS))
        adv = fdp.dp_advantage(m["epsilon"], m["delta"])
        tpr = fdp.dp_attack_tpr(m["epsilon"], m["delta"], m["fpr"])
        rows = [
            {
                "epsilon": c.f(m["epsilon"][k]),
                "delta": c.f(m["delta"][k]),
                "advantage": c.f(adv[k]),
                "fpr": c.f(m["fpr"][k]),
                "tpr": c.f(tpr[k]),
                "method": "dp-attack",
                "bound": "exact",
            }
            for k in range(adv.size)
        ]
        cols = [
            ("epsilon", "ε"),
            ("delta", "δ"),
            ("advantage", "max TPR−FPR", "float", "up"),
            ("fpr", "FPR"),
            ("tpr", "max TPR", "float", "up"),
        ]
        inputs["fpr"] = fpr
        notes = ["Bounds for any membership-inference attack against an (ε, δ)-DP mechanism."]
    return c.emit_rows("convert dp", inputs, cols, rows, fmt, as_json, objects=objects, notes=notes)


@convert.command(context_settings=CONTEXT)
@grid_option("--rho", allowed=NONNEGATIVE, required=True, help="zCDP parameter ρ.")
@grid_option("--delta", allowed=PROBABILITY, required=True, help="δ at which to report ε.")
@output_options
@budget_option
def zcdp(rho, delta, fmt, as_json):
    """ρ-zCDP as (ε, δ): the simple bound and the tighter RDP-based one.

    simple: ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3).
    rdp: min over α of αρ + ln(1−1/α) − (ln δ + ln α)/(α−1) (Canonne, Kamath &
    Steinke 2020, Prop. 12). Both are sound; the tighter one is marked.

    \b
    Example:
      dpcalc convert zcdp --rho 0.5 --delta 1e-5
    """
    from dpcalc.core import zcdp as z

    m = c.mesh(rho=rho, delta=delta)
    simple = z.epsilon_simple(m["rho"], m["delta"])
    tight = z.epsilon_tight(m["rho"], m["delta"])
    rows = []
    for k in range(simple.size):
        for name, val in (("zcdp-simple", simple[k]), ("zcdp-rdp", tight[k])):
            rows.append(
                {
                    "rho": c.f(m["rho"][k]),
                    "delta": c.f(m["delta"][k]),
                    "epsilon": c.f(val),
                    "method": name,
                    "bound": "upper",
                    "tightest": bool(name == "zcdp-rdp"),
                }
            )
    cols = [("rho", "ρ"), ("delta", "δ"), ("epsilon", "ε", "float", "up"), ("tightest", "tightest", "bool")]
    return c.emit_rows(
        "convert zcdp",
        dict(rho=rho, delta=delta),
        cols,
        rows,
        fmt,
        as_json,
        notes=[
            "A ρ that comes from a Gaussian mechanism is exactly μ-GDP with μ = √(2ρ); "
            "use 'convert gaussian' for its exact ε."
        ],
    )


@convert.command(context_settings=CONTEXT)
@grid_option("--orders", allowed=Range(1), required=True, help="RDP orders α > 1 (e.g. 2,4,8,16,32).")
@grid_option("--values", "values", allowed=NONNEGATIVE, required=True, help="RDP values r(α) >= 0 at those orders.")
@grid_option("--delta", allowed=PROBABILITY, help="δ at which to report ε.")
@grid_option("--epsilon", allowed=NONNEGATIVE, help="ε at which to report δ (instead of --delta).")
@output_options
@budget_option
def rdp(orders, values, delta, epsilon, fmt, as_json):
    """An RDP curve at given orders as (ε, δ), with the improved conversion.

    ε = min over α of r(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1)
    (Canonne, Kamath & Steinke 2020, Prop. 12; Balle et al. 2020, Thm 21).

    \b
    Example:
      dpcalc convert rdp --orders 2,4,8,16,32 --values 0.1,0.2,0.4,0.8,1.6 --delta 1e-5
    """
    import numpy as np

    from dpcalc.core import rdp as r
    from dpcalc.model import RDPCurve

    a, v = np.asarray(orders), np.asarray(values)
    if a.size != v.size:
        raise click.UsageError(f"--orders has {a.size} values but --values has {v.size}; give one value per order.")
    from dpcalc.model import repeated

    twice = repeated(orders)
    if twice is not None:
        i, j = twice
        raise click.UsageError(
            f"Invalid value for '--orders': order {orders[j]:g} is given twice (items {i + 1} and {j + 1}); "
            "give each order once."
        )
    exclusive(delta=delta, epsilon=epsilon)
    require("delta", delta if epsilon is None else epsilon, "give --delta (for ε) or --epsilon (for δ)")
    rows = []
    if delta is not None:
        d = np.asarray(delta)
        eps, best = r.epsilon_from_curve(a, v, d)
        for k in range(d.size):
            rows.append(
                {"delta": c.f(d[k]), "epsilon": c.f(eps[k]), "order": c.f(best[k]), "method": "rdp", "bound": "upper"}
            )
        cols = [("delta", "δ"), ("epsilon", "ε", "float", "up"), ("order", "best α")]
    else:
        e = np.asarray(epsilon)
        dd = r.delta_from_curve(a, v, e)
        for k in range(e.size):
            rows.append(
                {"epsilon": c.f(e[k]), "delta": c.delta_out(dd[k], "upper")[0], "method": "rdp", "bound": "upper"}
            )
        cols = [("epsilon", "ε"), ("delta", "δ", "float", "up")]
    return c.emit_rows(
        "convert rdp",
        dict(orders=list(a), values=list(v), delta=delta, epsilon=epsilon),
        cols,
        rows,
        fmt,
        as_json,
        objects=[RDPCurve(tuple(map(float, a)), tuple(map(float, v)))],
    )


# ---------------------------------------------------------------------------------------------------- discrete

_DG_SIGMA = Range(0.05, low_open=False)
_INT_SENSITIVITY = Range(1, 2**31 - 1, low_open=False, high_open=False, integer=True)
_DL_SENSITIVITY = Range(1, 2**20 - 1, low_open=False, high_open=False, integer=True)
_d_delta = grid_option("--delta", allowed=PROBABILITY, help=f"δ at which to report ε [default: {DEFAULT_DELTAS}].")
_d_epsilon = grid_option("--epsilon", allowed=NONNEGATIVE, help="ε at which to report δ (instead of --delta).")


def _discrete_convert(command, inputs, grids, spec, delta, epsilon, target, alpha, fpr, fmt, as_json, notes=()):
    """One discrete mechanism's readings (docs/discrete.md): δ at ε, ε at δ, ρ, or its trade-off/attack curve.

    ``spec`` says what the mechanism is: ``echo(m)`` its input columns (one dict per mesh row) with their specs
    ``cols``; ``delta_at(m, e)`` and ``epsilon_at(m, d)`` its exact closed forms (rounded up) under ``method``;
    ``rho(m)`` its ρ-zCDP (None: no ρ reading) under ``rho_method`` with ``rho_bound``; ``obj(m, i)`` the
    privacy object of row i (for the trade-off and attack readings, by privacy loss distributions).
    """
    import numpy as np

    from dpcalc.cli.options import parse_grid

    _refuse_for_target(target)
    to = target or "dp"
    if to == "gdp":
        raise click.UsageError(
            "--to gdp is not available for a discrete mechanism (it is not known to be μ-GDP); use dp, zcdp, "
            "tradeoff or attack."
        )
    base = c.mesh(**grids)
    echo = spec["echo"](base)
    rows = []
    if to in ("tradeoff", "attack"):
        from dpcalc import risk
        from dpcalc.accounting import flatten

        cases = [
            risk.case_of_parts(flatten(spec["obj"](base, i)), echo[i], "") for i in range(base[next(iter(grids))].size)
        ]
        points = (alpha or parse_grid(DEFAULT_ALPHAS)) if to == "tradeoff" else (fpr or parse_grid(DEFAULT_FPRS))
        try:
            rcols, rows, rnotes, rwarns = risk.rows(cases, to, points)
        except MemoryError:
            names = ", ".join(f"'--{k.replace('_', '-')}'" for k in grids)
            raise click.UsageError(
                f"--to {to}: the privacy loss distribution of this mechanism does not fit in memory; use less "
                f"extreme values of {names}."
            ) from None
        cols = spec["cols"] + [(k.key, k.label, k.kind, k.safe) for k in rcols]
        return c.emit_rows(command, inputs, cols, rows, fmt, as_json, notes=[*notes, *rnotes], warnings=rwarns)
    if to == "zcdp":
        refuse_unused("with --to zcdp (ρ does not depend on them)", "delta", "epsilon")
        if spec["rho"] is None:
            raise click.UsageError(
                "--to zcdp: this mechanism's ρ is that of its pure ε (ε²/2); use compose or --to dp instead."
            )
        rho = np.atleast_1d(spec["rho"](base))
        for i in range(rho.size):
            rows.append(dict(echo[i], rho=c.f(rho[i]), method=spec["rho_method"], bound=spec["rho_bound"]))
        cols = spec["cols"] + [("rho", "ρ", "float", "up")]
        return c.emit_rows(command, inputs, cols, rows, fmt, as_json, notes=notes)
    exclusive(delta=delta, epsilon=epsilon)
    n = base[next(iter(grids))].size
    if epsilon is not None:
        m = c.mesh(i=tuple(range(n)), epsilon=epsilon)
    else:
        m = c.mesh(i=tuple(range(n)), delta=delta or parse_grid(DEFAULT_DELTAS))
    idx = m["i"].astype(int)
    sub = {k: v.take(idx) for k, v in base.items()}
    with np.errstate(all="ignore"):
        if epsilon is not None:
            e = m["epsilon"]
            if "delta_interval" in spec:  # a certified [lower, upper]: exact only where it is round-off wide
                d_lo, d = (np.atleast_1d(x) for x in spec["delta_interval"](sub, e))
                exact = d - d_lo <= 1e-9 * d
            else:
                d = np.atleast_1d(spec["delta_at"](sub, e))
                exact = np.ones(d.shape, dtype=bool)
        else:
            d = m["delta"]
            e = np.atleast_1d(spec["epsilon_at"](sub, d))
    for k in range(idx.size):
        row = dict(echo[idx[k]])
        if epsilon is not None:
            dk, bound = c.delta_out(d[k], "exact" if exact[k] else "upper")
        else:
            dk, bound = c.f(d[k]), "exact"
        row.update(epsilon=c.f(e[k]), delta=dk, method=spec["method"], bound=bound)
        rows.append(row)
    if epsilon is not None:
        cols = spec["cols"] + [("epsilon", "ε"), ("delta", "δ", "float", "up")]
    else:
        cols = spec["cols"] + [("delta", "δ"), ("epsilon", "ε", "float", "up")]
    return c.emit_rows(command, inputs, cols, rows, fmt, as_json, notes=notes)


def _discrete_inputs(delta, epsilon, target, alpha, fpr, **mech):
    return dict(mech, delta=delta, epsilon=epsilon, to=target, alpha=alpha, fpr=fpr)


@convert.command("discrete-gaussian", context_settings=CONTEXT)
@grid_option("--sigma", allowed=_DG_SIGMA, required=True, help="σ of the discrete Gaussian N_Z(0, σ²) (its parameter).")
@grid_option("--sensitivity", allowed=_INT_SENSITIVITY, default="1", help="Integer sensitivity Δ of the query.")
@_d_delta
@_d_epsilon
@_to_option(["dp", "zcdp", "tradeoff", "attack"], "dp")
@_alpha
@_fpr
@output_options
@budget_option
def discrete_gaussian(sigma, sensitivity, delta, epsilon, target, alpha, fpr, fmt, as_json):
    """The privacy of a discrete Gaussian mechanism N_Z(0, σ²): exact δ(ε) and ε(δ), ρ = Δ²/(2σ²), f-DP.

    δ(ε) is the exact sum of Canonne, Kamath & Steinke 2020 (Thm 7; the upper
    end of a certified interval whose width is round-off — far out in ε, where
    the sums' cut tails of 1e-40 dominate, an upper bound, labelled so), ε(δ) its inverse
    rounded up; ρ-zCDP is exact (Thm 4). Trade-off and attack readings are
    certified intervals by privacy loss distributions. No μ: the discrete
    Gaussian is not known to be Δ/σ-GDP.

    \b
    Examples:
      dpcalc convert discrete-gaussian --sigma 3 --delta 1e-6
      dpcalc convert discrete-gaussian --sigma 3 --epsilon 1 --sensitivity 2
    """
    from dpcalc.core import discrete as d
    from dpcalc.model import DiscreteGaussian

    spec = {
        "cols": [("sigma", "σ"), ("sensitivity", "Δ", "int")],
        "echo": lambda m: [
            {"sigma": c.f(m["sigma"][i]), "sensitivity": int(m["sensitivity"][i])} for i in range(m["sigma"].size)
        ],
        "delta_at": lambda m, e: d.dgauss_delta_at(m["sigma"], e, m["sensitivity"]),
        # (Far out in ε the sums' cut tails, 1e-40 of mass, are most of the upper end: not exact there.)
        "delta_interval": lambda m, e: d.dgauss_delta_interval(m["sigma"], e, m["sensitivity"]),
        "epsilon_at": lambda m, dl: d.dgauss_epsilon_at(m["sigma"], dl, m["sensitivity"]),
        "method": "discrete-gaussian-cks",
        "rho": lambda m: d.dgauss_rho_of(m["sigma"], m["sensitivity"]),
        "rho_method": "zcdp-cks",
        "rho_bound": "exact",
        "obj": lambda m, i: DiscreteGaussian(float(m["sigma"][i]), int(m["sensitivity"][i])),
    }
    return _discrete_convert(
        "convert discrete-gaussian",
        _discrete_inputs(delta, epsilon, target, alpha, fpr, sigma=sigma, sensitivity=sensitivity),
        dict(sigma=sigma, sensitivity=sensitivity),
        spec,
        delta,
        epsilon,
        target,
        alpha,
        fpr,
        fmt,
        as_json,
        notes=["σ is the discrete Gaussian's parameter; its standard deviation is smaller."],
    )


@convert.command("discrete-laplace", context_settings=CONTEXT)
@grid_option("--scale", allowed=POSITIVE, required=True, help="Scale t of the discrete Laplace, P(x) ∝ e^{−|x|/t}.")
@grid_option("--sensitivity", allowed=_DL_SENSITIVITY, default="1", help="Integer sensitivity Δ of the query.")
@_d_delta
@_d_epsilon
@_to_option(["dp", "tradeoff", "attack"], "dp")
@_alpha
@_fpr
@output_options
@budget_option
def discrete_laplace(scale, sensitivity, delta, epsilon, target, alpha, fpr, fmt, as_json):
    """The privacy of a discrete Laplace (geometric) mechanism: pure ε = Δ/t, exact δ(ε) and ε(δ), f-DP.

    \b
    Example:
      dpcalc convert discrete-laplace --scale 4 --sensitivity 2 --epsilon 0,0.25
    """
    from dpcalc.core import discrete as d
    from dpcalc.model import DiscreteLaplace

    spec = {
        "cols": [("scale", "t"), ("sensitivity", "Δ", "int"), ("epsilon_pure", "ε (pure)", "float", "up")],
        "echo": lambda m: [
            {
                "scale": c.f(m["scale"][i]),
                "sensitivity": int(m["sensitivity"][i]),
                "epsilon_pure": c.f(d.dlaplace_epsilon_of(m["scale"][i], m["sensitivity"][i])),
            }
            for i in range(m["scale"].size)
        ],
        "delta_at": lambda m, e: d.dlaplace_delta_at(m["scale"], e, m["sensitivity"]),
        "epsilon_at": lambda m, dl: d.dlaplace_epsilon_at(m["scale"], dl, m["sensitivity"]),
        "method": "discrete-laplace",
        "rho": None,
        "obj": lambda m, i: DiscreteLaplace(float(m["scale"][i]), int(m["sensitivity"][i])),
    }
    return _discrete_convert(
        "convert discrete-laplace",
        _discrete_inputs(delta, epsilon, target, alpha, fpr, scale=scale, sensitivity=sensitivity),
        dict(scale=scale, sensitivity=sensitivity),
        spec,
        delta,
        epsilon,
        target,
        alpha,
        fpr,
        fmt,
        as_json,
    )


@convert.command("randomized-response", context_settings=CONTEXT)
@grid_option("--epsilon0", allowed=POSITIVE, required=True, help="ε₀ of the randomized response (its pure ε).")
@rr_k_option
@_d_delta
@_d_epsilon
@_to_option(["dp", "tradeoff", "attack"], "dp")
@_alpha
@_fpr
@output_options
@budget_option
def randomized_response(epsilon0, k, delta, epsilon, target, alpha, fpr, fmt, as_json):
    """The privacy of ε₀-DP k-ary randomized response: keep-probability, exact δ(ε) and ε(δ), f-DP.

    \b
    Example:
      dpcalc convert randomized-response --epsilon0 1 --k 4 --delta 1e-3,1e-6
    """
    from dpcalc.core import discrete as d
    from dpcalc.model import RandomizedResponse

    spec = {
        "cols": [("epsilon0", "ε₀"), ("k", "categories", "int"), ("keep", "keep prob.", "float", "down")],
        "echo": lambda m: [
            {
                "epsilon0": c.f(m["epsilon0"][i]),
                "k": int(m["k"][i]),
                "keep": c.f(d.rr_keep_of(m["epsilon0"][i], m["k"][i])),
            }
            for i in range(m["k"].size)
        ],
        "delta_at": lambda m, e: d.rr_delta_at(m["epsilon0"], e, m["k"]),
        "epsilon_at": lambda m, dl: d.rr_epsilon_at(m["epsilon0"], dl, m["k"]),
        "method": "randomized-response",
        "rho": None,
        "obj": lambda m, i: RandomizedResponse(float(m["epsilon0"][i]), int(m["k"][i])),
    }
    return _discrete_convert(
        "convert randomized-response",
        _discrete_inputs(delta, epsilon, target, alpha, fpr, epsilon0=epsilon0, k=k),
        dict(epsilon0=epsilon0, k=k),
        spec,
        delta,
        epsilon,
        target,
        alpha,
        fpr,
        fmt,
        as_json,
    )


@convert.command("bounded-range", context_settings=CONTEXT)
@grid_option("--epsilon0", allowed=POSITIVE, required=True, help="ε₀ of the bounded-range mechanism.")
@_d_delta
@_d_epsilon
@_to_option(["dp", "zcdp", "tradeoff", "attack"], "dp")
@_alpha
@_fpr
@output_options
@budget_option
def bounded_range(epsilon0, delta, epsilon, target, alpha, fpr, fmt, as_json):
    """The privacy of an ε₀-bounded-range mechanism (exponential mechanism, report-noisy-max with Gumbel noise).

    δ(ε) and ε(δ) are exact for the bounded-range class (Dong, Durfee & Rogers
    2020); ρ = ε₀²/8 (Cesar & Rogers 2021) is a sound, not tight, zCDP bound.

    \b
    Examples:
      dpcalc convert bounded-range --epsilon0 1 --delta 1e-6
      dpcalc convert bounded-range --epsilon0 1 --to zcdp
    """
    from dpcalc.core import discrete as d
    from dpcalc.model import BoundedRange

    spec = {
        "cols": [("epsilon0", "ε₀")],
        "echo": lambda m: [{"epsilon0": c.f(m["epsilon0"][i])} for i in range(m["epsilon0"].size)],
        "delta_at": lambda m, e: d.br_delta_at(m["epsilon0"], e),
        "epsilon_at": lambda m, dl: d.br_epsilon_at(m["epsilon0"], dl),
        "method": "bounded-range-ddr",
        "rho": lambda m: d.br_rho_of(m["epsilon0"]),
        "rho_method": "zcdp-br",
        "rho_bound": "upper",
        "obj": lambda m, i: BoundedRange(float(m["epsilon0"][i])),
    }
    return _discrete_convert(
        "convert bounded-range",
        _discrete_inputs(delta, epsilon, target, alpha, fpr, epsilon0=epsilon0),
        dict(epsilon0=epsilon0),
        spec,
        delta,
        epsilon,
        target,
        alpha,
        fpr,
        fmt,
        as_json,
        notes=[
            "The exponential mechanism calibrated to ε₀-DP (scores·ε₀/(2Δu), or ·ε₀/Δu for monotone scores) and "
            "report-noisy-max with Gumbel noise are ε₀-bounded-range."
        ],
    )


@convert.command("input", hidden=True, context_settings=CONTEXT)
@input_option
@grid_option("--delta", allowed=PROBABILITY, help="δ at which to report ε.")
@grid_option("--epsilon", allowed=NONNEGATIVE, help="ε at which to report δ.")
@click.option(
    "--to",
    "target",
    type=click.Choice(["dp", "tradeoff", "attack", "gdp", "zcdp"]),
    default=None,
    help="What to convert to (default: dp for mechanisms and GDP, gdp for (ε, δ)).",
)
@_alpha
@_fpr
@output_options
@budget_option
def from_input(source, delta, epsilon, target, alpha, fpr, fmt, as_json):
    """Convert the privacy objects read from stdin (or --input)."""
    from dpcalc.accounting import compose_parts, flatten
    from dpcalc.model import (
        DISCRETE,
        DP,
        GDP,
        ZCDP,
        Column,
        Composed,
        Gaussian,
        Laplace,
        ObjectError,
        RDPCurve,
        Result,
        type_name,
    )

    ctx = click.get_current_context()
    _refuse_for_target(target)

    def need_dp(kind):
        if target not in (None, "dp"):
            raise click.UsageError(f"--to {target} is not available for a {kind}; it converts to (ε, δ).")

    # What a Gaussian mechanism or a μ-GDP object is read at (the same options for both).
    curve = dict(delta=delta, epsilon=epsilon, target=target or "dp", alpha=alpha, fpr=fpr, fmt=fmt, as_json=as_json)

    def prefetch(chunk):
        if target in (None, "dp") and epsilon is None:
            from dpcalc.cli.options import parse_grid
            from dpcalc.core import gdp as gdp_core

            gdp_core.prefetch_epsilon(*c.gaussian_pairs(chunk, delta or parse_grid(DEFAULT_DELTAS)))

    with c.collecting() as results:
        for obj, where in c.prefetched(read_objects(source), prefetch):
            with c.attributed(where, obj):
                if isinstance(obj, (Gaussian, GDP)) and target in ("gdp", "zcdp"):
                    what = "its μ and ρ (as columns)" if isinstance(obj, Gaussian) else "its (ε, δ) curve"
                    raise click.UsageError(
                        f"{where}: --to {target} is not available for a {type_name(obj)} object; use --to dp (the "
                        f"default) for {what}, or --to tradeoff or attack."
                    )
                if isinstance(obj, Gaussian):
                    ctx.invoke(gaussian, sigma=(obj.sigma,), sensitivity=(obj.sensitivity,), **curve)
                elif isinstance(obj, GDP):
                    ctx.invoke(gdp, mu=(obj.mu,), **curve)
                elif isinstance(obj, DISCRETE):
                    _invoke_discrete(ctx, obj, delta, epsilon, target, alpha, fpr, fmt, as_json)
                elif isinstance(obj, (DP, Laplace)):
                    e, d = (obj.epsilon, obj.delta) if isinstance(obj, DP) else (obj.sensitivity / obj.scale, 0.0)
                    to = target or ("gdp" if d > 0 else "zcdp")
                    for name in ("epsilon", "delta"):
                        if given(name):
                            raise click.UsageError(
                                f"{where}: --{name} does not apply to {type_name(obj)} objects (the object is the "
                                f"guarantee, with its own ε and δ); drop it, or type 'dpcalc convert dp' to give "
                                "other values."
                            )
                    if to == "dp":
                        raise click.UsageError(
                            f"{where} is already an (ε, δ) guarantee; use --to gdp, zcdp, tradeoff or attack."
                        )
                    ctx.invoke(
                        dp,
                        epsilon=(e,),
                        delta=(d,),
                        target=to,
                        sensitivity=(1.0,),
                        alpha=alpha,
                        fpr=fpr,
                        fmt=fmt,
                        as_json=as_json,
                    )
                    if isinstance(obj, Laplace):
                        results[-1] = _as_guarantee_of(results[-1], where)
                elif isinstance(obj, ZCDP):
                    need_dp("zCDP guarantee")
                    require("delta", delta, "zCDP converts to ε at a given δ")
                    ctx.invoke(zcdp, rho=(obj.rho,), delta=delta, fmt=fmt, as_json=as_json)
                elif isinstance(obj, RDPCurve):
                    need_dp("RDP curve")
                    ctx.invoke(
                        rdp,
                        orders=obj.orders,
                        values=obj.values,
                        delta=delta,
                        epsilon=epsilon,
                        fmt=fmt,
                        as_json=as_json,
                    )
                elif target in ("tradeoff", "attack"):
                    results.append(_risk_result(obj, where, target, alpha, fpr))
                else:
                    need_dp(f"{type_name(obj)} object")
                    if epsilon is not None and delta is None:
                        raise click.UsageError(
                            f"{where}: --epsilon (δ at a given ε) is not available for a {type_name(obj)} object, "
                            "whose ε is computed at a δ; give --delta instead."
                        )
                    require("delta", delta, "give the δ at which to report ε")
                    try:
                        parts = flatten(obj, 1, where)
                        rows = []
                        for d in delta:
                            rows += [
                                {"delta": d, "epsilon": t.epsilon, "method": t.method, "bound": t.bound}
                                for t in compose_parts(parts, d)
                            ]
                    except ObjectError as exc:
                        raise click.UsageError(str(exc)) from None
                    results.append(
                        Result(
                            "convert",
                            {"delta": list(delta)},
                            (
                                Column("delta", "δ"),
                                Column("epsilon", "ε", safe="up"),
                                Column("method", "method", "text"),
                                Column("bound", "bound", "text"),
                            ),
                            tuple(rows),
                            objects=(obj if isinstance(obj, Composed) else Composed(((obj, 1),)),),
                        )
                    )
    return c.emit(c.merge(results, "convert"), fmt, as_json)


def _as_guarantee_of(result, where: str):
    """A Laplace object's rows, read from its pure ε = Δ/b guarantee: exact for that guarantee, but the mechanism's
    own curve is tighter (its β higher, its attacks weaker), so β is labelled ``lower`` and risks ``upper``."""
    import dataclasses

    rows = tuple(
        {**r, "bound": "lower" if "beta" in r else "upper"} if r.get("bound") == "exact" else r for r in result.rows
    )
    note = (
        f"{where} is a Laplace mechanism read as its pure ε = Δ/b guarantee: its own trade-off curve is tighter, so "
        "β is a lower bound and the attack figures upper bounds for it."
    )
    return dataclasses.replace(result, rows=rows, notes=result.notes + (note,))


def _invoke_discrete(ctx, obj, delta, epsilon, target, alpha, fpr, fmt, as_json):
    """A piped discrete mechanism read by its own convert command (the same rows as typing its parameters)."""
    from dpcalc.model import BoundedRange, DiscreteGaussian, DiscreteLaplace

    kw = dict(delta=delta, epsilon=epsilon, target=target, alpha=alpha, fpr=fpr, fmt=fmt, as_json=as_json)
    if target == "zcdp" and not isinstance(obj, (DiscreteGaussian, BoundedRange)):
        raise click.UsageError(
            "--to zcdp is not available for this mechanism on its own (its ρ is that of its pure ε, ε²/2); "
            "use --to dp, tradeoff or attack."
        )
    if isinstance(obj, DiscreteGaussian):
        ctx.invoke(discrete_gaussian, sigma=(obj.sigma,), sensitivity=(obj.sensitivity,), **kw)
    elif isinstance(obj, DiscreteLaplace):
        ctx.invoke(discrete_laplace, scale=(obj.scale,), sensitivity=(obj.sensitivity,), **kw)
    elif isinstance(obj, BoundedRange):
        ctx.invoke(bounded_range, epsilon0=(obj.epsilon,), **kw)
    else:
        ctx.invoke(randomized_response, epsilon0=(obj.epsilon,), k=(obj.k,), **kw)


def _risk_result(obj, where: str, target: str, alpha, fpr):
    """Trade-off or attack readings of a composed or subsampled object (dpcalc.risk): exact for Gaussian-only
    objects (μ-GDP), else certified intervals from privacy loss distributions."""
    from dpcalc import risk
    from dpcalc.accounting import flatten
    from dpcalc.cli.options import parse_grid
    from dpcalc.model import Column, Composed, ObjectError, Result

    try:
        parts = flatten(obj, 1, where)
    except ObjectError as exc:
        raise click.UsageError(str(exc)) from None
    case = risk.case_of_parts(parts, {}, where)
    if case is None:  # a zCDP or RDP part (every PLD kind has a case, read by the fallback where the engine cannot)
        why = "has a zCDP or RDP part, which has no trade-off curve here; convert the mechanisms it came from instead"
        raise click.UsageError(f"--to {target}: {where} {why}.")
    points = (alpha or parse_grid(DEFAULT_ALPHAS)) if target == "tradeoff" else (fpr or parse_grid(DEFAULT_FPRS))
    try:
        cols, rows, notes, warns = risk.rows([case], target, points)
    except MemoryError:
        raise click.UsageError(f"--to {target}: the privacy loss distribution of {where} does not fit in memory.")
    return Result(
        "convert",
        {"to": target, ("alpha" if target == "tradeoff" else "fpr"): list(points)},
        tuple(cols) + (Column("method", "method", "text"), Column("bound", "bound", "text")),
        tuple(rows),
        warnings=tuple(warns),
        notes=tuple(notes),
        objects=(obj if isinstance(obj, Composed) else Composed(((obj, 1),)),),
    )


def _add_audit() -> None:
    from dpcalc.cli.audit import audit

    convert.add_command(audit)


_add_audit()
