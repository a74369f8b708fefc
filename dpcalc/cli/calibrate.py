"""dpcalc calibrate — how much noise a target guarantee needs."""

from __future__ import annotations

import click

from dpcalc.cli.options import (
    CONTEXT,
    POSITIVE,
    PROBABILITY,
    exclusive,
    grid_option,
    output_options,
    require,
    sensitivity_option,
)


@click.group(context_settings=CONTEXT)
def calibrate():
    """Noise for a target guarantee: σ for Gaussian, b for Laplace."""


@calibrate.command(context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, help="Target ε.")
@grid_option("--delta", allowed=PROBABILITY, help="Target δ, in (0, 1).")
@grid_option("--mu", allowed=POSITIVE, help="Target μ-GDP instead of (ε, δ).")
@grid_option("--rho", allowed=POSITIVE, help="Target ρ-zCDP instead of (ε, δ).")
@sensitivity_option
@click.option(
    "--method",
    type=click.Choice(["analytic", "classical"]),
    default="analytic",
    help="analytic: the exact, smallest σ (Balle & Wang 2018), any ε > 0. classical: "
    "Δ√(2 ln(1.25/δ))/ε, proven only for ε < 1; shown next to the analytic σ.",
)
@output_options
def gaussian(epsilon, delta, mu, rho, sensitivity, method, fmt, as_json):
    """σ of the Gaussian mechanism for (ε, δ), for μ-GDP, or for ρ-zCDP.

    Every σ is re-checked before it is printed: the column delta_check is the
    exact δ(ε) at the returned σ, and it is at most the target δ.

    \b
    Examples:
      dpcalc calibrate gaussian --epsilon 0.5,1,2 --delta 1e-6
      dpcalc calibrate gaussian --epsilon 0.5 --delta 1e-5 --method classical
      dpcalc calibrate gaussian --mu 1.2
    """
    from dpcalc.cli import _common as c
    from dpcalc.core import gaussian as g
    from dpcalc.model import Column, Gaussian, Result

    exclusive(epsilon=epsilon, mu=mu, rho=rho)
    rows, objects, warnings = [], [], []
    cols = [
        Column("epsilon", "ε"),
        Column("delta", "δ"),
        Column("mu", "μ", safe="up"),
        Column("rho", "ρ", safe="up"),
        Column("sensitivity", "Δ"),
        Column("sigma", "σ", safe="up"),
        Column("delta_check", "δ at σ", safe="up"),
        Column("method", "method", "text"),
        Column("bound", "bound", "text"),
    ]
    if mu is not None or rho is not None:
        if delta is not None:
            raise click.UsageError("--delta goes with --epsilon, not with --mu or --rho.")
        if method != "analytic":
            raise click.UsageError("--method classical needs --epsilon and --delta.")
        if mu is not None:
            m = c.mesh(mu=mu, sensitivity=sensitivity)
            sig = g.sigma_for_mu(m["mu"], m["sensitivity"])
            label = "gdp"
        else:
            m = c.mesh(rho=rho, sensitivity=sensitivity)
            sig = g.sigma_for_rho(m["rho"], m["sensitivity"])
            label = "zcdp"
        mus = g.mu_of(sig, m["sensitivity"])
        rhos = g.rho_of(sig, m["sensitivity"])
        for i in range(sig.size):
            rows.append(
                {
                    "epsilon": None,
                    "delta": None,
                    "mu": c.f(mus[i]),
                    "rho": c.f(rhos[i]),
                    "sensitivity": c.f(m["sensitivity"][i]),
                    "sigma": c.f(sig[i]),
                    "delta_check": None,
                    "method": label,
                    "bound": "exact",
                }
            )
            objects.append(Gaussian(c.f(sig[i]), c.f(m["sensitivity"][i])))
        cols = [col for col in cols if col.key not in ("epsilon", "delta", "delta_check")]
        inputs = c.echo_inputs(mu=mu, rho=rho, sensitivity=sensitivity)
    else:
        require("epsilon", epsilon, "give --epsilon and --delta, or --mu, or --rho")
        require("delta", delta, "the Gaussian mechanism needs δ > 0")
        m = c.mesh(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
        if method == "classical":
            big = m["epsilon"][m["epsilon"] >= 1]
            if big.size:
                raise click.UsageError(
                    f"Invalid value for '--epsilon': {big[0]:g} — the classical Gaussian formula is proven only "
                    "for 0 < ε < 1 (Dwork & Roth, Thm A.1); use --method analytic, which is exact for every ε."
                )
        sig_a = g.sigma_analytic(m["epsilon"], m["delta"], m["sensitivity"])
        check_a = g.delta_at(sig_a, m["epsilon"], m["sensitivity"])
        # μ = Δ/σ and ρ = Δ²/(2σ²) of the σ printed, rounded up.
        mu_a, rho_a = g.mu_of(sig_a, m["sensitivity"]), g.rho_of(sig_a, m["sensitivity"])
        sig_c = check_c = mu_c = rho_c = None
        if method == "classical":
            sig_c = g.sigma_classical(m["epsilon"], m["delta"], m["sensitivity"])
            check_c = g.delta_at(sig_c, m["epsilon"], m["sensitivity"])
            mu_c, rho_c = g.mu_of(sig_c, m["sensitivity"]), g.rho_of(sig_c, m["sensitivity"])
            cols.insert(-2, Column("extra_noise_pct", "% noise over analytic"))
        for i in range(sig_a.size):
            base = {
                "epsilon": c.f(m["epsilon"][i]),
                "delta": c.f(m["delta"][i]),
                "sensitivity": c.f(m["sensitivity"][i]),
            }
            variants = []
            if sig_c is not None:
                variants.append(("classical", "upper", sig_c[i], check_c[i], mu_c[i], rho_c[i]))
            variants.append(("analytic-gaussian", "exact", sig_a[i], check_a[i], mu_a[i], rho_a[i]))
            for name, bound, s, chk, mu_s, rho_s in variants:
                if not (chk <= m["delta"][i]):
                    # Only at the ends of double precision (σ near 1e-308 or beyond 1e200): a σ whose δ cannot be
                    # checked is not printed.
                    raise click.UsageError(
                        f"these inputs (ε = {m['epsilon'][i]:g}, δ = {m['delta'][i]:g}, Δ = {m['sensitivity'][i]:g}) "
                        f"need σ ≈ {s:.3g}, where the check of its δ fails in double precision; use less extreme "
                        "values of '--epsilon', '--delta' or '--sensitivity'."
                    )
                row = dict(base)
                row.update(
                    mu=c.f(mu_s),
                    rho=c.f(rho_s),
                    sigma=c.f(s),
                    delta_check=c.f(chk),
                    method=name,
                    bound=bound,
                )
                if sig_c is not None:
                    row["extra_noise_pct"] = c.f(100 * (s / sig_a[i] - 1))
                rows.append(row)
            objects.append(Gaussian(c.f(sig_a[i]), c.f(m["sensitivity"][i])))
        if sig_c is not None:
            saved = 100 * (1 - sig_a / sig_c)
            warnings.append(
                "the classical formula adds more noise than needed: the analytic σ is "
                f"{saved.min():.1f}–{saved.max():.1f}% smaller for the same (ε, δ)."
                if saved.size > 1
                else f"the classical formula adds more noise than needed: the analytic σ is {saved[0]:.1f}% smaller "
                "for the same (ε, δ)."
            )
        inputs = c.echo_inputs(epsilon=epsilon, delta=delta, sensitivity=sensitivity, method=method)
    result = Result(
        command="calibrate gaussian",
        inputs=inputs,
        columns=tuple(cols),
        rows=tuple(rows),
        warnings=tuple(warnings),
        objects=tuple(objects),
        notes=("σ is the noise standard deviation; δ at σ is the exact δ(ε) of the returned σ.",),
    )
    return c.emit(result, fmt, as_json)


@calibrate.command(context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, required=True, help="Target pure ε.")
@sensitivity_option
@output_options
def laplace(epsilon, sensitivity, fmt, as_json):
    """Scale b = Δ₁/ε of the Laplace mechanism for pure ε-DP.

    \b
    Example:
      dpcalc calibrate laplace --epsilon 0.1,0.5,1 --sensitivity 2
    """
    from dpcalc.cli import _common as c
    from dpcalc.core import _fp
    from dpcalc.core import laplace as lap
    from dpcalc.model import Column, Laplace, Result

    m = c.mesh(epsilon=epsilon, sensitivity=sensitivity)
    b = lap.scale_for_epsilon(m["epsilon"], m["sensitivity"])
    rows = tuple(
        {
            "epsilon": c.f(m["epsilon"][i]),
            "delta": 0.0,
            "sensitivity": c.f(m["sensitivity"][i]),
            "scale": c.f(b[i]),
            "std": c.f(_fp.mul_up(b[i], 2**0.5)),  # the double √2 is above √2: b·√2 rounded up
            "method": "laplace",
            "bound": "exact",
        }
        for i in range(b.size)
    )
    result = Result(
        command="calibrate laplace",
        inputs=c.echo_inputs(epsilon=epsilon, sensitivity=sensitivity),
        columns=(
            Column("epsilon", "ε"),
            Column("delta", "δ"),
            Column("sensitivity", "Δ₁"),
            Column("scale", "b", safe="up"),
            Column("std", "std dev", safe="up"),
            Column("method", "method", "text"),
            Column("bound", "bound", "text"),
        ),
        rows=rows,
        objects=tuple(Laplace(r["scale"], r["sensitivity"]) for r in rows),
    )
    return c.emit(result, fmt, as_json)
