"""dpcalc calibrate — how much noise a target guarantee needs."""

from __future__ import annotations

import click

from dpcalc.cli.options import (
    CONTEXT,
    COUNT,
    POSITIVE,
    PROB_OR_ZERO,
    PROBABILITY,
    Group,
    exclusive,
    grid_option,
    output_options,
    require,
    rr_k_option,
    sensitivity_option,
)


@click.group(cls=Group, context_settings=CONTEXT)
def calibrate():
    """Noise for a target guarantee: σ for Gaussian, b for Laplace."""


@calibrate.command(context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, help="Target ε.")
@grid_option("--delta", allowed=PROBABILITY, help="Target δ, in (0, 1).")
@grid_option("--mu", allowed=POSITIVE, help="Target μ-GDP instead of (ε, δ).")
@grid_option("--rho", allowed=POSITIVE, help="Target ρ-zCDP instead of (ε, δ).")
@grid_option(
    "--target-advantage",
    allowed=PROBABILITY,
    help="Target attack risk instead of (ε, δ): the best membership-inference attack's advantage TPR − FPR, in (0, 1).",
)
@grid_option("--target-tpr", allowed=PROBABILITY, help="Target attack risk: the best attack's TPR at --at-fpr.")
@grid_option("--at-fpr", allowed=PROBABILITY, help="The false-positive rate at which --target-tpr holds.")
@sensitivity_option
@click.option(
    "--method",
    type=click.Choice(["analytic", "classical"]),
    default="analytic",
    help="analytic: the exact, smallest σ (Balle & Wang 2018), any ε > 0. classical: "
    "Δ√(2 ln(1.25/δ))/ε, proven only for ε < 1; shown next to the analytic σ.",
)
@output_options
def gaussian(epsilon, delta, mu, rho, target_advantage, target_tpr, at_fpr, sensitivity, method, fmt, as_json):
    """σ of the Gaussian mechanism for (ε, δ), for μ-GDP, for ρ-zCDP, or for an attack-risk target.

    Every σ is re-checked before it is printed: the column delta_check is the
    exact δ(ε) at the returned σ, and it is at most the target δ. Attack-risk
    targets (--target-advantage, or --target-tpr with --at-fpr) are met
    exactly through μ-GDP (Kulynych et al. 2024), re-checked the same way.

    \b
    Examples:
      dpcalc calibrate gaussian --epsilon 0.5,1,2 --delta 1e-6
      dpcalc calibrate gaussian --epsilon 0.5 --delta 1e-5 --method classical
      dpcalc calibrate gaussian --mu 1.2
      dpcalc calibrate gaussian --target-tpr 0.05 --at-fpr 0.01
    """
    from dpcalc.cli import _common as c
    from dpcalc.core import gaussian as g
    from dpcalc.model import Column, Gaussian, Result

    risk_target = target_advantage if target_advantage is not None else target_tpr
    exclusive(epsilon=epsilon, mu=mu, rho=rho, target_advantage=target_advantage, target_tpr=target_tpr)
    if at_fpr is not None and target_tpr is None:
        raise click.UsageError("--at-fpr goes with --target-tpr.")
    if risk_target is not None:
        return _risk_target(target_advantage, target_tpr, at_fpr, delta, sensitivity, method, fmt, as_json)
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
        objects=c.releases_once(objects),
        notes=("σ is the noise standard deviation; δ at σ is the exact δ(ε) of the returned σ.",),
    )
    return c.emit(result, fmt, as_json)


def _risk_target(target_advantage, target_tpr, at_fpr, delta, sensitivity, method, fmt, as_json):
    """σ for an attack-risk target, through μ-GDP (dpcalc.core.attack), each re-checked."""
    import numpy as np

    from dpcalc.cli import _common as c
    from dpcalc.core import attack, gdp
    from dpcalc.model import Column, Gaussian, Result

    if delta is not None:
        raise click.UsageError("--delta goes with --epsilon, not with an attack-risk target.")
    if method != "analytic":
        raise click.UsageError("--method classical needs --epsilon and --delta.")
    if target_advantage is not None:
        m = c.mesh(target_advantage=target_advantage, sensitivity=sensitivity)
        mu = attack.mu_for_advantage(m["target_advantage"])
        target, label = m["target_advantage"], "advantage"
    else:
        require("at-fpr", at_fpr, "--target-tpr holds at a false-positive rate")
        m = c.mesh(target_tpr=target_tpr, at_fpr=at_fpr, sensitivity=sensitivity)
        mu = attack.mu_for_tpr(m["target_tpr"], m["at_fpr"])
        target, label = m["target_tpr"], "tpr"
    with np.errstate(divide="ignore", over="ignore"):
        sig = np.nextafter(m["sensitivity"] / mu, np.inf)

    def check(sig):
        mu_at = m["sensitivity"] / sig
        return gdp.advantage(mu_at) if label == "advantage" else gdp.attack_tpr(mu_at, m["at_fpr"])

    # The check rounds up (a few ulps); where the target is nearly 1 that needs a little more noise than the
    # closed form's μ: step σ up until the rounded-up check meets the target.
    achieved = check(sig)
    for k in range(60):
        bad = ~(achieved <= target) & np.isfinite(sig)
        if not bad.any():
            break
        sig = np.where(bad, sig * (1 + 1e-12 * 2.0**k), sig)
        achieved = check(sig)
    rows, objects = [], []
    for i in range(sig.size):
        if not (np.isfinite(sig[i]) and sig[i] > 0 and achieved[i] <= target[i]):
            raise click.UsageError(
                f"{'an advantage' if label == 'advantage' else 'a TPR'} target of {target[i]:g} needs "
                f"σ ≈ {sig[i]:.3g} (Δ = {m['sensitivity'][i]:g}), which double precision cannot check; use a less "
                "extreme target."
            )
        row = {k: c.f(m[k][i]) for k in m}
        row.update(
            mu=c.f(m["sensitivity"][i] / sig[i]),
            sigma=c.f(sig[i]),
            achieved=c.f(achieved[i]),
            method=f"gdp-{label}",
            bound="exact",
        )
        rows.append(row)
        objects.append(Gaussian(c.f(sig[i]), c.f(m["sensitivity"][i])))
    head = (
        [Column("target_advantage", "target TPR−FPR")]
        if label == "advantage"
        else [Column("target_tpr", "target TPR"), Column("at_fpr", "at FPR")]
    )
    cols = head + [
        Column("sensitivity", "Δ"),
        Column("mu", "μ", safe="up"),
        Column("sigma", "σ", safe="up"),
        Column("achieved", "TPR−FPR at σ" if label == "advantage" else "TPR at σ", safe="up"),
        Column("method", "method", "text"),
        Column("bound", "bound", "text"),
    ]
    result = Result(
        command="calibrate gaussian",
        inputs=c.echo_inputs(
            target_advantage=target_advantage, target_tpr=target_tpr, at_fpr=at_fpr, sensitivity=sensitivity
        ),
        columns=tuple(cols),
        rows=tuple(rows),
        objects=c.releases_once(objects),
        notes=(
            "σ is the smallest noise whose best membership-inference attack stays within the target: a Gaussian "
            "mechanism is μ-GDP with μ = Δ/σ, its best attack has TPR − FPR = 2Φ(μ/2) − 1 and TPR = Φ(μ + Φ⁻¹(FPR)) "
            "(Kulynych et al. 2024); the last column re-checks it at the returned σ.",
        ),
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


# ---------------------------------------------------------------------------------------------------- discrete

_int_sensitivity = grid_option(
    "--sensitivity", allowed=COUNT, default="1", help="Integer sensitivity Δ of the query (a count changes by Δ)."
)


def _discrete_result(command, inputs, cols, rows, notes, objects=(), warnings=()):
    from dpcalc.cli import _common as c
    from dpcalc.model import Column, Result

    cols = [Column(*spec) for spec in cols] + [Column("method", "method", "text"), Column("bound", "bound", "text")]
    return Result(
        command=command,
        inputs=c.echo_inputs(**inputs),
        columns=tuple(cols),
        rows=tuple(rows),
        notes=tuple(notes),
        objects=c.releases_once(objects),
        warnings=tuple(warnings),
    )


def _dg_objects(rows):
    """The discrete Gaussian privacy objects of calibrated rows (pipe into compose, convert, amplify)."""
    from dpcalc.model import DiscreteGaussian

    return [DiscreteGaussian(r["sigma"], r["sensitivity"]) for r in rows]


@calibrate.command("discrete-gaussian", context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, help="Target ε.")
@grid_option("--delta", allowed=PROBABILITY, help="Target δ, in [1e-30, 1).")
@grid_option("--rho", allowed=POSITIVE, help="Target ρ-zCDP instead of (ε, δ).")
@_int_sensitivity
@output_options
def discrete_gaussian(epsilon, delta, rho, sensitivity, fmt, as_json):
    """σ of the discrete Gaussian N_Z(0, σ²) for (ε, δ) or ρ-zCDP (Canonne, Kamath & Steinke 2020).

    Integer-valued noise for counts (OpenDP, Tumult, Google's libraries).
    σ is the smallest (to 1e-9, rounded up) whose exact δ(ε) meets the
    target, re-checked with a certified upper δ; ρ = Δ²/(2σ²).

    \b
    Examples:
      dpcalc calibrate discrete-gaussian --epsilon 1 --delta 1e-5
      dpcalc calibrate discrete-gaussian --rho 0.5 --sensitivity 2
    """
    from dpcalc.cli import _common as c
    from dpcalc.core import discrete as d

    exclusive(epsilon=epsilon, rho=rho)
    note = "σ is the discrete Gaussian's parameter (its standard deviation, shown, is at most σ); noise on integers."
    rows = []
    if rho is not None:
        if delta is not None:
            raise click.UsageError("--delta goes with --epsilon, not with --rho.")
        m = c.mesh(rho=rho, sensitivity=sensitivity)
        sig = d.dgauss_sigma_for_rho(m["rho"], m["sensitivity"])
        check = d.dgauss_rho_of(sig, m["sensitivity"])
        for i in range(sig.size):
            rows.append(
                {
                    "rho": c.f(m["rho"][i]),
                    "sensitivity": int(m["sensitivity"][i]),
                    "sigma": c.f(sig[i]),
                    "std": c.f(d.dgauss_variance(sig[i]) ** 0.5),
                    "rho_check": c.f(check[i]),
                    "method": "zcdp-cks",
                    "bound": "exact",
                }  # fmt: skip
            )
        cols = [("rho", "ρ"), ("sensitivity", "Δ", "int"), ("sigma", "σ", "float", "up"),
                ("std", "std dev"), ("rho_check", "ρ at σ", "float", "up")]  # fmt: skip
        result = _discrete_result(
            "calibrate discrete-gaussian", dict(rho=rho, sensitivity=sensitivity), cols, rows, [note], _dg_objects(rows)
        )
        return c.emit(result, fmt, as_json)
    require("epsilon", epsilon, "give --epsilon and --delta, or --rho")
    require("delta", delta, "the discrete Gaussian needs δ > 0 for an ε target")
    m = c.mesh(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    sig = d.dgauss_sigma(m["epsilon"], m["delta"], m["sensitivity"])
    check = d.dgauss_delta_at(sig, m["epsilon"], m["sensitivity"])
    for i in range(sig.size):
        if not check[i] <= m["delta"][i]:
            raise click.UsageError(
                f"the σ found for ε = {m['epsilon'][i]:g}, δ = {m['delta'][i]:g} fails its check; use less extreme "
                "values of '--epsilon' or '--delta'."
            )
        rows.append(
            {
                "epsilon": c.f(m["epsilon"][i]),
                "delta": c.f(m["delta"][i]),
                "sensitivity": int(m["sensitivity"][i]),
                "sigma": c.f(sig[i]),
                "std": c.f(d.dgauss_variance(sig[i]) ** 0.5),
                "rho": c.f(d.dgauss_rho_of(sig[i], m["sensitivity"][i])),
                "delta_check": c.f(check[i]),
                "method": "discrete-gaussian-cks",
                # At dpcalc's floor σ = 0.05 the target is met, but a smaller σ may meet it too: a sound σ, not
                # the smallest (ε = 1000, δ = 0.9 needs about 0.0224).
                "bound": "upper" if sig[i] <= d.DGAUSS_SIGMA_MIN else "exact",
            }  # fmt: skip
        )
    floor = [i for i in range(sig.size) if sig[i] <= d.DGAUSS_SIGMA_MIN]
    warnings = []
    if floor:
        warnings.append(
            f"{len(floor)} row(s) meet the target at σ = {d.DGAUSS_SIGMA_MIN:g}, the smallest σ dpcalc accounts for "
            "the discrete Gaussian: a smaller σ may meet it too (bound 'upper': sound, not the smallest)."
        )
    cols = [("epsilon", "ε"), ("delta", "δ"), ("sensitivity", "Δ", "int"), ("sigma", "σ", "float", "up"),
            ("std", "std dev"), ("rho", "ρ", "float", "up"), ("delta_check", "δ at σ", "float", "up")]  # fmt: skip
    result = _discrete_result(
        "calibrate discrete-gaussian",
        dict(epsilon=epsilon, delta=delta, sensitivity=sensitivity),
        cols,
        rows,
        [note],
        _dg_objects(rows),
        warnings,
    )
    return c.emit(result, fmt, as_json)


@calibrate.command("discrete-laplace", context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, required=True, help="Target pure ε.")
@_int_sensitivity
@output_options
def discrete_laplace(epsilon, sensitivity, fmt, as_json):
    """Scale t of the discrete Laplace (geometric) mechanism, P(x) ∝ e^{−|x|/t}, for pure ε = Δ/t.

    \b
    Example:
      dpcalc calibrate discrete-laplace --epsilon 0.5,1 --sensitivity 2
    """
    from dpcalc.cli import _common as c
    from dpcalc.core import discrete as d
    from dpcalc.model import DiscreteLaplace

    m = c.mesh(epsilon=epsilon, sensitivity=sensitivity)
    t = d.dlaplace_scale_for_epsilon(m["epsilon"], m["sensitivity"])
    eps_at = d.dlaplace_epsilon_of(t, m["sensitivity"])
    rows = [
        {
            "epsilon": c.f(m["epsilon"][i]),
            "sensitivity": int(m["sensitivity"][i]),
            "scale": c.f(t[i]),
            "std": c.f(d.dlaplace_variance(t[i]) ** 0.5),
            "epsilon_check": c.f(eps_at[i]),
            "method": "discrete-laplace",
            "bound": "exact",
        }  # fmt: skip
        for i in range(t.size)
    ]
    cols = [("epsilon", "ε"), ("sensitivity", "Δ", "int"), ("scale", "t", "float", "up"), ("std", "std dev"),
            ("epsilon_check", "ε at t", "float", "up")]  # fmt: skip
    notes = ["Discrete Laplace (two-sided geometric) noise on integers: P(x) ∝ e^{−|x|/t}; ε = Δ/t exactly."]
    return c.emit(
        _discrete_result(
            "calibrate discrete-laplace",
            dict(epsilon=epsilon, sensitivity=sensitivity),
            cols,
            rows,
            notes,
            [DiscreteLaplace(r["scale"], r["sensitivity"]) for r in rows],
        ),
        fmt,
        as_json,
    )


@calibrate.command("randomized-response", context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, required=True, help="Target pure ε.")
@rr_k_option
@output_options
def randomized_response(epsilon, k, fmt, as_json):
    """Keep-probability of k-ary randomized response for pure ε: e^ε/(e^ε + k − 1).

    Report the true category with that probability, else one of the other
    k − 1 uniformly at random (Warner 1965; Kairouz, Oh & Viswanath 2014).

    \b
    Example:
      dpcalc calibrate randomized-response --epsilon 1 --k 2,4,10
    """
    from dpcalc.cli import _common as c
    from dpcalc.core import discrete as d
    from dpcalc.model import RandomizedResponse

    m = c.mesh(epsilon=epsilon, k=k)
    keep = d.rr_keep_of(m["epsilon"], m["k"])
    eps_at = d.rr_epsilon_of_keep(keep, m["k"])
    rows = [
        {
            "epsilon": c.f(m["epsilon"][i]),
            "k": int(m["k"][i]),
            "keep": c.f(keep[i]),
            "epsilon_check": c.f(eps_at[i]),
            "method": "randomized-response",
            "bound": "exact",
        }  # fmt: skip
        for i in range(keep.size)
    ]
    cols = [("epsilon", "ε"), ("k", "k", "int"), ("keep", "keep prob.", "float", "down"),
            ("epsilon_check", "ε at keep", "float", "up")]  # fmt: skip
    notes = ["keep is the probability of reporting the true category (rounded down: a smaller keep is more private)."]
    # The object stores ε₀ at the (rounded-down) keep, rounded up: it can only overstate ε.
    objects = [RandomizedResponse(r["epsilon_check"], r["k"]) for r in rows]
    return c.emit(_discrete_result("calibrate randomized-response", dict(epsilon=epsilon, k=k), cols, rows, notes,
                                   objects), fmt, as_json)  # fmt: skip


@calibrate.command("bounded-range", context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, help="Target ε (with --delta).")
@grid_option("--delta", allowed=PROB_OR_ZERO, help="Target δ, in [0, 1).")
@grid_option("--rho", allowed=POSITIVE, help="Target ρ-zCDP instead.")
@output_options
def bounded_range(epsilon, delta, rho, fmt, as_json):
    """ε₀ of an ε₀-bounded-range mechanism (the exponential mechanism, report-noisy-max with Gumbel noise).

    The largest ε₀ whose exact δ(ε) for the bounded-range class (Dong,
    Durfee & Rogers 2020) meets (ε, δ), or whose ε₀²/8-zCDP bound meets ρ.

    \b
    Examples:
      dpcalc calibrate bounded-range --epsilon 1 --delta 1e-6
      dpcalc calibrate bounded-range --rho 0.1
    """
    from dpcalc.cli import _common as c
    from dpcalc.core import discrete as d
    from dpcalc.model import BoundedRange

    exclusive(epsilon=epsilon, rho=rho)
    note = (
        "The exponential mechanism calibrated to ε₀-DP (scores·ε₀/(2Δu), or ·ε₀/Δu for monotone scores) and "
        "report-noisy-max with Gumbel noise are ε₀-bounded-range; ε₀ is rounded down."
    )
    if rho is not None:
        if delta is not None:
            raise click.UsageError("--delta goes with --epsilon, not with --rho.")
        m = c.mesh(rho=rho)
        e0 = d.br_epsilon0_for_rho(m["rho"])
        rows = [{"rho": c.f(m["rho"][i]), "epsilon0": c.f(e0[i]), "rho_check": c.f(d.br_rho_of(e0[i])),
                 "method": "zcdp-br", "bound": "upper"} for i in range(e0.size)]  # fmt: skip
        cols = [("rho", "ρ"), ("epsilon0", "ε₀", "float", "down"), ("rho_check", "ρ at ε₀", "float", "up")]
        objects = [BoundedRange(r["epsilon0"]) for r in rows]
        return c.emit(
            _discrete_result("calibrate bounded-range", dict(rho=rho), cols, rows, [note], objects), fmt, as_json
        )
    require("epsilon", epsilon, "give --epsilon (and --delta), or --rho")
    import numpy as np

    m = c.mesh(epsilon=epsilon, delta=delta or (0.0,))
    pure = m["delta"] == 0  # an ε₀-bounded-range mechanism is ε₀-DP, and no better in pure DP: ε₀ = ε
    with np.errstate(all="ignore"):
        e0 = np.where(pure, m["epsilon"], d.br_epsilon0_for(m["epsilon"], np.where(pure, 0.5, m["delta"])))
        check = np.where(pure, 0.0, d.br_delta_at(e0, m["epsilon"]))
    rows = [{"epsilon": c.f(m["epsilon"][i]), "delta": c.f(m["delta"][i]), "epsilon0": c.f(e0[i]),
             "delta_check": c.f(check[i]), "method": "bounded-range-ddr", "bound": "exact"}
            for i in range(e0.size)]  # fmt: skip
    cols = [("epsilon", "ε"), ("delta", "δ"), ("epsilon0", "ε₀", "float", "down"),
            ("delta_check", "δ at ε₀", "float", "up")]  # fmt: skip
    return c.emit(
        _discrete_result(
            "calibrate bounded-range",
            dict(epsilon=epsilon, delta=delta),
            cols,
            rows,
            [note],
            [BoundedRange(r["epsilon0"]) for r in rows if r["epsilon0"] > 0],
        ),
        fmt,
        as_json,
    )
