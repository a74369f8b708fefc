"""dpcalc compose — the total privacy of many releases."""

from __future__ import annotations

import click

from dpcalc.cli import _common as c
from dpcalc.cli.options import (
    CONTEXT,
    COUNT,
    MAX_ROWS,
    NONNEGATIVE,
    POSITIVE,
    PROB_OR_ZERO,
    PROBABILITY,
    RATE,
    Range,
    RecordType,
    accountant_option,
    budget_option,
    exclusive,
    grid_option,
    number_option,
    output_options,
    pld_width_option,
    refuse_unused,
    refuse_width_without_pld,
    require,
    rr_k_option,
    sensitivity_option,
)
from dpcalc.cli.pipe import PipeGroup, input_option, read_counted, stdin_has_data

_times = grid_option("--times", allowed=COUNT, default="1", help="How many times the mechanism runs (k).")
_target_delta = grid_option("--delta", allowed=PROBABILITY, help="δ at which to report the total ε.")


def _release(fields, help):
    return click.option("--release", "releases", multiple=True, type=RecordType(fields), help=help)


@click.group(cls=PipeGroup, context_settings=CONTEXT)
def compose():
    """Total privacy of many releases on the same data, by every applicable method."""


def _mark_tightest(rows, key_fields):
    """Flag, per input point, the smallest ε among sound (exact or upper) rows."""
    best: dict[tuple, float] = {}
    for r in rows:
        if r["bound"] in ("exact", "upper"):
            k = tuple(r.get(f) for f in key_fields)
            best[k] = min(best.get(k, float("inf")), r["epsilon"])
    seen: set = set()
    for r in rows:
        k = tuple(r.get(f) for f in key_fields)
        r["tightest"] = bool(r["bound"] in ("exact", "upper") and r["epsilon"] == best.get(k) and k not in seen)
        if r["tightest"]:
            seen.add(k)
    return rows


@compose.command(context_settings=CONTEXT)
@grid_option("--epsilon", allowed=NONNEGATIVE, help="ε of each mechanism.")
@grid_option("--delta", allowed=PROB_OR_ZERO, default="0", help="δ of each mechanism, in [0, 1).")
@_times
@grid_option(
    "--delta-prime",
    allowed=PROBABILITY,
    default="1e-6",
    help="Extra δ′ spent by advanced composition; the optimal one is reported at the same total δ = kδ + δ′.",
)
@_release(
    [("epsilon", NONNEGATIVE, None), ("delta", PROB_OR_ZERO, 0.0), ("times", COUNT, 1.0)],
    "A heterogeneous release EPSILON[,DELTA[,TIMES]]; repeat for each kind (basic composition).",
)
@number_option(
    "--target-delta",
    allowed=PROBABILITY,
    default=None,
    help="With --release: also report the tight total ε at this δ by privacy loss distributions (pld).",
)
@pld_width_option
@output_options
@budget_option
def dp(epsilon, delta, times, delta_prime, releases, target_delta, fmt, as_json):
    """k-fold composition of (ε, δ)-DP mechanisms: basic, advanced, optimal.

    \b
    basic     (kε, kδ)                                       Dwork & Roth Thm 3.16
    advanced  (√(2k ln(1/δ′))ε + kε(e^ε−1), kδ + δ′)           Dwork, Rothblum & Vadhan 2010
    optimal   smallest ε at the same kδ + δ′                   Kairouz, Oh & Viswanath 2015, Thm 3.3
    Heterogeneous lists (--release, repeated) use basic composition, and with
    --target-delta the tight composition by privacy loss distributions.

    \b
    Examples:
      dpcalc compose dp --epsilon 0.1 --delta 1e-7 --times 100
      dpcalc compose dp --release 0.5,1e-6,10 --release 1,0,2
    """
    import numpy as np

    from dpcalc.core import composition as comp
    from dpcalc.model import DP, Composed

    cols = [
        ("epsilon_each", "ε each"),
        ("delta_each", "δ each"),
        ("times", "k", "int"),
        ("epsilon", "ε total", "float", "up"),
        ("delta", "δ total", "float", "up"),
    ]
    if releases:
        if epsilon is not None:
            raise click.UsageError("Options --release and --epsilon cannot be used together.")
        refuse_unused("with --release (each release gives its own δ and count)", "delta", "times", "delta_prime")
        if target_delta is None:
            refuse_unused("without --target-delta (only the pld total uses it)", "pld_width")
        e, d = comp.basic_list(
            [r["epsilon"] for r in releases], [r["delta"] for r in releases], [r["times"] for r in releases]
        )
        rows = [{"releases": len(releases), "epsilon": e, "delta": d, "method": "basic", "bound": "upper"}]
        dp_warnings: list[str] = []
        if target_delta is not None:
            from dpcalc.accounting import Part, pld_total

            parts = [Part("dp", int(r["times"]), epsilon=r["epsilon"], delta=r["delta"]) for r in releases]
            if not d < target_delta:
                raise click.UsageError(
                    f"Invalid value for '--target-delta': {target_delta:g} — it must exceed the δ the releases spend "
                    f"on their own ({d:g})."
                )
            t = pld_total(parts, float(target_delta), c.pld_width())
            if t is not None:
                rows.append(
                    {
                        "releases": len(releases),
                        "epsilon_lower": t.epsilon_lower,
                        "epsilon_width": t.epsilon_width,
                        "epsilon": t.epsilon,
                        "delta": t.delta,
                        "method": t.method,
                        "bound": t.bound,
                    }
                )
                dp_warnings = c.width_warnings(["the pld total"], [t.epsilon_lower], [t.epsilon], [t.met])
        cols = [
            ("releases", "releases", "int"),
            ("epsilon_lower", "ε ≥ (certified)", "float", "down"),
            ("epsilon", "ε total", "float", "up"),
            ("delta", "δ total", "float", "up"),
        ]
        cols = [col for col in cols if any(r.get(col[0]) is not None for r in rows)]
        obj = Composed(tuple((DP(r["epsilon"], r["delta"]), int(r["times"])) for r in releases))
        warnings = (["the total δ is 1 or more: the guarantee says nothing."] if d >= 1 else []) + dp_warnings
        return c.emit_rows(
            "compose dp",
            {"releases": [dict(r) for r in releases]},
            cols,
            _mark_tightest(rows, ["delta"]),
            fmt,
            as_json,
            tail=("tightest", "method", "bound"),
            objects=[obj],  # (one object per result: a summary beside it would be composed twice downstream)
            warnings=warnings,
        )

    require("epsilon", epsilon, "or give --release EPSILON[,DELTA[,TIMES]]")
    refuse_unused("without --release (homogeneous composition has closed forms)", "target_delta", "pld_width")
    m = c.mesh(epsilon=epsilon, delta=delta, times=times, delta_prime=delta_prime)
    be, bd = comp.basic(m["epsilon"], m["delta"], m["times"])
    ae, ad = comp.advanced(m["epsilon"], m["delta"], m["times"], m["delta_prime"])
    rows, warnings, notes = [], [], []
    kov_ok = (m["times"] <= comp.KOV_MAX_TIMES) & (ad < 1) & (m["epsilon"] > 0)
    kov = None
    if kov_ok.any():
        kov = np.full(m["epsilon"].shape, np.nan)
        kov[kov_ok] = comp.optimal_homogeneous(m["epsilon"][kov_ok], m["delta"][kov_ok], m["times"][kov_ok], ad[kov_ok])
    if (m["times"] > comp.KOV_MAX_TIMES).any():
        notes.append(
            f"optimal composition is evaluated for k up to {comp.KOV_MAX_TIMES:,}; larger k shows basic "
            "and advanced only."
        )
    for i in range(be.size):
        base = {
            "epsilon_each": c.f(m["epsilon"][i]),
            "delta_each": c.f(m["delta"][i]),
            "times": int(m["times"][i]),
            "delta_prime": c.f(m["delta_prime"][i]),
        }
        rows.append(dict(base, epsilon=c.f(be[i]), delta=c.f(bd[i]), method="basic", bound="upper"))
        if np.isfinite(ae[i]):
            rows.append(dict(base, epsilon=c.f(ae[i]), delta=c.f(ad[i]), method="advanced", bound="upper"))
        else:
            notes.append(
                "advanced composition overflows for some inputs (kε(e^ε−1) is astronomically large); "
                "basic composition is shown."
            )
        if kov is not None and kov_ok[i]:
            rows.append(dict(base, epsilon=c.f(kov[i]), delta=c.f(ad[i]), method="optimal-kov", bound="upper"))
        if bd[i] >= 1 or ad[i] >= 1:
            warnings.append("a total δ is 1 or more: that guarantee says nothing; lower δ or k.")
    cols.insert(3, ("delta_prime", "δ′"))
    _mark_tightest(rows, ["epsilon_each", "delta_each", "times", "delta_prime", "delta"])
    return c.emit_rows(
        "compose dp",
        dict(epsilon=epsilon, delta=delta, times=times, delta_prime=delta_prime),
        cols,
        rows,
        fmt,
        as_json,
        tail=("tightest", "method", "bound"),
        warnings=warnings,
        notes=notes,
        # The composition itself, once per setting: its rows (basic, advanced, optimal; each δ′) are alternative
        # guarantees of the same releases, which a pipe into compose would otherwise add up.
        objects=[Composed(((DP(r["epsilon_each"], r["delta_each"]), int(r["times"])),)) for r in rows],
    )


def _gaussian_family_rows(mu_total, rho_total, delta, base_rows, exact_method):
    """ε at δ for a composed Gaussian: exact via μ, and the zCDP bounds beside it."""
    from dpcalc.core import gdp, zcdp

    e_exact = gdp.epsilon(mu_total, delta)
    e_simple = zcdp.epsilon_simple(rho_total, delta)
    e_tight = zcdp.epsilon_tight(rho_total, delta)
    rows = []
    for i in range(e_exact.size):
        base = dict(base_rows[i], mu=c.f(mu_total[i]), rho=c.f(rho_total[i]), delta=c.f(delta[i]))
        rows.append(dict(base, epsilon=c.f(e_exact[i]), method=exact_method, bound="exact"))
        rows.append(dict(base, epsilon=c.f(e_tight[i]), method="zcdp-rdp", bound="upper"))
        rows.append(dict(base, epsilon=c.f(e_simple[i]), method="zcdp-simple", bound="upper"))
    return rows


@compose.command(context_settings=CONTEXT)
@grid_option("--sigma", allowed=POSITIVE, help="Noise σ of each Gaussian mechanism.")
@sensitivity_option
@_times
@_target_delta
@_release(
    [("sigma", POSITIVE, None), ("sensitivity", POSITIVE, 1.0), ("times", COUNT, 1.0)],
    "A heterogeneous release SIGMA[,SENSITIVITY[,TIMES]]; repeat for each kind.",
)
@output_options
@budget_option
def gaussian(sigma, sensitivity, times, delta, releases, fmt, as_json):
    """Composition of Gaussian mechanisms — exact, through μ = √(Σ kᵢ Δᵢ²/σᵢ²).

    Gaussian mechanisms compose exactly as μ-GDP (Dong, Roth & Su 2022,
    Cor. 3.3), so the ε reported by method gdp is exact, not a bound. The
    zCDP conversions are shown beside it for comparison.

    \b
    Examples:
      dpcalc compose gaussian --sigma 2 --times 1000 --delta 1e-5
      dpcalc compose gaussian --release 2,1,100 --release 5,2,30 --delta 1e-6
    """
    import numpy as np

    from dpcalc.core import _fp
    from dpcalc.core.zcdp import sum_up
    from dpcalc.model import GDP, Composed, Gaussian

    require("delta", delta)
    if releases:
        exclusive(sigma=sigma, release=True)
        refuse_unused("with --release (each release gives its own Δ and count)", "sensitivity", "times")
        # μ² = Σ kᵢ(Δᵢ/σᵢ)², every step rounded up.
        ratios = [_fp.div_up(rel["sensitivity"], rel["sigma"]) for rel in releases]
        mu2 = sum_up([_fp.mul_up(rel["times"], _fp.mul_up(q, q)) for rel, q in zip(releases, ratios)])
        d = np.asarray(delta, float)
        mu_t = np.full(d.shape, float(_fp.sqrt_up(mu2)))
        rows = _gaussian_family_rows(mu_t, np.full(d.shape, float(_fp.mul_up(mu2, 0.5))), d, [{} for _ in d], "gdp")
        cols = [
            ("delta", "δ"),
            ("mu", "μ total", "float", "up"),
            ("rho", "ρ total", "float", "up"),
            ("epsilon", "ε total", "float", "up"),
        ]
        obj = Composed(tuple((Gaussian(r["sigma"], r["sensitivity"]), int(r["times"])) for r in releases))
        inputs = {"releases": [dict(r) for r in releases], "delta": delta}
    else:
        require("sigma", sigma, "or give --release SIGMA[,SENSITIVITY[,TIMES]]")
        m = c.mesh(sigma=sigma, sensitivity=sensitivity, times=times, delta=delta)
        mu_1 = _fp.div_up(m["sensitivity"], m["sigma"])
        mu_t = _fp.mul_up(_fp.sqrt_up(m["times"]), mu_1)  # √k·Δ/σ, rounded up
        rho_t = _fp.mul_up(_fp.mul_up(m["times"], _fp.mul_up(mu_1, mu_1)), 0.5)  # kΔ²/(2σ²), rounded up
        base = [
            {"sigma": c.f(m["sigma"][i]), "sensitivity": c.f(m["sensitivity"][i]), "times": int(m["times"][i])}
            for i in range(mu_t.size)
        ]
        rows = _gaussian_family_rows(mu_t, rho_t, m["delta"], base, "gdp")
        cols = [
            ("sigma", "σ"),
            ("sensitivity", "Δ"),
            ("times", "k", "int"),
            ("delta", "δ"),
            ("mu", "μ total", "float", "up"),
            ("rho", "ρ total", "float", "up"),
            ("epsilon", "ε total", "float", "up"),
        ]
        obj = None
        inputs = dict(sigma=sigma, sensitivity=sensitivity, times=times, delta=delta)
    _mark_tightest(rows, ["sigma", "sensitivity", "times", "delta"])
    objects = [obj] if obj else [GDP(r["mu"]) for r in rows if r["method"] == "gdp"]
    return c.emit_rows(
        "compose gaussian", inputs, cols, rows, fmt, as_json, tail=("tightest", "method", "bound"), objects=objects
    )


@compose.command(context_settings=CONTEXT)
@grid_option("--mu", allowed=NONNEGATIVE, help="μ of each μ-GDP mechanism.")
@_times
@_target_delta
@_release([("mu", NONNEGATIVE, None), ("times", COUNT, 1.0)], "A heterogeneous release MU[,TIMES]; repeatable.")
@output_options
@budget_option
def gdp(mu, times, delta, releases, fmt, as_json):
    """Composition of μ-GDP guarantees: μ = √(Σ kᵢ μᵢ²) (exact), and its ε at δ.

    \b
    Example:
      dpcalc compose gdp --mu 0.1 --times 100 --delta 1e-5
    """
    import numpy as np

    from dpcalc.core import _fp
    from dpcalc.core import gdp as g
    from dpcalc.core.zcdp import sum_up
    from dpcalc.model import GDP

    if releases:
        exclusive(mu=mu, release=True)
        refuse_unused("with --release (each release gives its own count)", "times")
        total = float(_fp.sqrt_up(sum_up([_fp.mul_up(r["times"], _fp.mul_up(r["mu"], r["mu"])) for r in releases])))
        m = c.mesh(delta=delta) if delta is not None else None
        base_mu = np.full(1 if m is None else m["delta"].size, total)
        base = [{} for _ in base_mu]
        inputs = {"releases": [dict(r) for r in releases], "delta": delta}
    else:
        require("mu", mu, "or give --release MU[,TIMES]")
        m = c.mesh(mu=mu, times=times, delta=delta)
        base_mu = np.asarray(g.homogeneous_mu(m["mu"], m["times"]), float).reshape(-1)
        base = [{"mu_each": c.f(m["mu"][i]), "times": int(m["times"][i])} for i in range(base_mu.size)]
        inputs = dict(mu=mu, times=times, delta=delta)
    rows = []
    eps = g.epsilon(base_mu, m["delta"]) if delta is not None else None
    for i in range(base_mu.size):
        row = dict(base[i], mu=c.f(base_mu[i]), method="gdp", bound="exact")
        if eps is not None:
            row.update(delta=c.f(m["delta"][i]), epsilon=c.f(eps[i]))
        else:
            row.update(delta=None, epsilon=None)
        rows.append(row)
    cols = ([] if releases else [("mu_each", "μ each"), ("times", "k", "int")]) + [
        ("mu", "μ total", "float", "up"),
        ("delta", "δ"),
        ("epsilon", "ε total", "float", "up"),
    ]
    for r in rows:
        r["tightest"] = True
    return c.emit_rows(
        "compose gdp",
        inputs,
        cols,
        rows,
        fmt,
        as_json,
        tail=("tightest", "method", "bound"),
        objects=[GDP(r["mu"]) for r in rows],
    )


@compose.command(context_settings=CONTEXT)
@grid_option("--rho", allowed=NONNEGATIVE, help="ρ of each ρ-zCDP mechanism.")
@_times
@_target_delta
@_release([("rho", NONNEGATIVE, None), ("times", COUNT, 1.0)], "A heterogeneous release RHO[,TIMES]; repeatable.")
@output_options
@budget_option
def zcdp(rho, times, delta, releases, fmt, as_json):
    """Composition of ρ-zCDP guarantees: ρ adds (Bun & Steinke 2016, Lemma 2.3).

    \b
    Example:
      dpcalc compose zcdp --rho 0.01 --times 50 --delta 1e-6
    """
    import numpy as np

    from dpcalc.core import _fp
    from dpcalc.core import zcdp as z
    from dpcalc.model import ZCDP

    require("delta", delta)
    if releases:
        exclusive(rho=rho, release=True)
        refuse_unused("with --release (each release gives its own count)", "times")
        total = z.compose([r["rho"] for r in releases], [r["times"] for r in releases])
        m = c.mesh(delta=delta)
        rho_t = np.full(m["delta"].size, total)
        base = [{} for _ in rho_t]
        inputs = {"releases": [dict(r) for r in releases], "delta": delta}
    else:
        require("rho", rho, "or give --release RHO[,TIMES]")
        m = c.mesh(rho=rho, times=times, delta=delta)
        rho_t = _fp.mul_up(m["rho"], m["times"])
        base = [{"rho_each": c.f(m["rho"][i]), "times": int(m["times"][i])} for i in range(rho_t.size)]
        inputs = dict(rho=rho, times=times, delta=delta)
    simple = z.epsilon_simple(rho_t, m["delta"])
    tight = z.epsilon_tight(rho_t, m["delta"])
    rows = []
    for i in range(rho_t.size):
        b = dict(base[i], rho=c.f(rho_t[i]), delta=c.f(m["delta"][i]))
        rows.append(dict(b, epsilon=c.f(tight[i]), method="zcdp-rdp", bound="upper"))
        rows.append(dict(b, epsilon=c.f(simple[i]), method="zcdp-simple", bound="upper"))
    _mark_tightest(rows, ["rho_each", "times", "delta"])
    cols = ([] if releases else [("rho_each", "ρ each"), ("times", "k", "int")]) + [
        ("rho", "ρ total", "float", "up"),
        ("delta", "δ"),
        ("epsilon", "ε total", "float", "up"),
    ]
    return c.emit_rows(
        "compose zcdp",
        inputs,
        cols,
        rows,
        fmt,
        as_json,
        tail=("tightest", "method", "bound"),
        objects=[ZCDP(float(rho_t[0]))] if rho_t.size == 1 else [],
    )


@compose.command(context_settings=CONTEXT)
@click.option(
    "--gaussian",
    "gaussians",
    multiple=True,
    type=RecordType([("sigma", POSITIVE, None), ("sensitivity", POSITIVE, 1.0), ("times", COUNT, 1.0)]),
    help="A Gaussian mechanism SIGMA[,SENSITIVITY[,TIMES]]; repeatable.",
)
@click.option(
    "--subsampled-gaussian",
    "subsampled",
    multiple=True,
    type=RecordType([("rate", RATE, None), ("sigma", POSITIVE, None), ("times", COUNT, 1.0)]),
    help="A Poisson-subsampled Gaussian RATE,NOISE_MULTIPLIER[,TIMES] (sensitivity 1); repeatable.",
)
@click.option(
    "--laplace",
    "laplaces",
    multiple=True,
    type=RecordType([("scale", POSITIVE, None), ("sensitivity", POSITIVE, 1.0), ("times", COUNT, 1.0)]),
    help="A Laplace mechanism SCALE[,SENSITIVITY[,TIMES]]; repeatable.",
)
@_target_delta
@accountant_option
@pld_width_option
@output_options
@budget_option
def mixed(gaussians, subsampled, laplaces, delta, accountant, fmt, as_json):
    """Composition of a mix of Gaussian, subsampled Gaussian and Laplace mechanisms: PLD, RDP, closed forms.

    By default (--accountant pld) the tight total comes from privacy loss
    distributions, a certified interval; RDP is shown beside it (orders added
    one by one, Mironov 2017, converted with the improved conversion and
    minimised over a dense grid of orders refined by a golden-section search),
    and the exact μ-GDP total when every part is a plain Gaussian. --accountant
    and --pld-width apply where the PLD engine runs (not to all-Gaussian
    mixes, whose total is exactly μ-GDP). Add/remove neighbours for
    subsampled parts.

    \b
    Example:
      dpcalc compose mixed --gaussian 5,1,10 --subsampled-gaussian 0.01,1.1,1000 \\
          --laplace 2,1,3 --delta 1e-5
    """
    import numpy as np

    from dpcalc.core import gdp as g
    from dpcalc.core import rdp as r
    from dpcalc.model import Composed, Gaussian, Laplace, Subsampled

    require("delta", delta)
    refuse_width_without_pld(accountant)
    if not (gaussians or subsampled or laplaces):
        raise click.UsageError("Give at least one of --gaussian, --subsampled-gaussian, --laplace.")
    d = np.asarray(delta, float)

    def rdp_fn(alpha):
        total = np.zeros(np.shape(alpha))
        for p in gaussians:
            total = total + p["times"] * alpha * (p["sensitivity"] / p["sigma"]) ** 2 / 2
        for p in laplaces:
            total = total + p["times"] * r.laplace(alpha, p["scale"], p["sensitivity"])
        for p in subsampled:
            total = total + p["times"] * r._subsampled_gaussian(alpha, p["rate"], p["sigma"])
        return total

    eps, order = r.optimal_epsilon(rdp_fn, d)
    rows = [
        {"delta": c.f(d[i]), "epsilon": c.f(eps[i]), "order": c.f(order[i]), "method": "rdp", "bound": "upper"}
        for i in range(d.size)
    ]
    from dpcalc.core import _fp
    from dpcalc.core.zcdp import sum_up

    if gaussians and not (subsampled or laplaces):
        ratios = [_fp.div_up(p["sensitivity"], p["sigma"]) for p in gaussians]
        mu2 = sum_up([_fp.mul_up(p["times"], _fp.mul_up(q, q)) for p, q in zip(gaussians, ratios)])
        mu = float(_fp.sqrt_up(mu2))
        ex = g.epsilon(np.full(d.shape, mu), d)
        rows += [
            {"delta": c.f(d[i]), "epsilon": c.f(ex[i]), "order": None, "method": "gdp", "bound": "exact"}
            for i in range(d.size)
        ]
    if laplaces and not (subsampled or gaussians):
        pure = sum_up([_fp.mul_up(p["times"], _fp.div_up(p["sensitivity"], p["scale"])) for p in laplaces])
        rows += [
            {"delta": c.f(d[i]), "epsilon": min(pure, 1e300), "order": None, "method": "basic-pure", "bound": "upper"}
            for i in range(d.size)
        ]
    from dpcalc.accounting import Part, pld_totals

    pld_parts = (
        [Part("gauss", int(p["times"]), mu=p["sensitivity"] / p["sigma"]) for p in gaussians]
        + [Part("sgauss", int(p["times"]), rate=p["rate"], sigma=p["sigma"]) for p in subsampled]
        + [Part("laplace", int(p["times"]), epsilon=p["sensitivity"] / p["scale"]) for p in laplaces]
    )
    width_warnings = []
    # (Every δ of the grid from one reading of the engine: an ε(δ) curve shares its compositions.)
    plds = pld_totals(pld_parts, d, c.pld_width()) if accountant != "rdp" else []
    notes = ["Subsampled parts assume Poisson sampling with add/remove neighbours."] if subsampled else []
    w = c.budget_width()
    if w is not None:
        budget = click.get_current_context().meta["dpcalc.max_epsilon"]
        if any(t is not None and t.epsilon_lower is not None and t.epsilon_lower <= budget < t.epsilon for t in plds):
            again = pld_totals(pld_parts, d, w)
            better = [b is not None and (a is None or b.epsilon < a.epsilon) for a, b in zip(plds, again)]
            plds = [b if k else a for a, b, k in zip(plds, again, better)]
            if any(better):
                notes.append(c.budget_note("The PLD totals", w))
    for i, t in enumerate(plds):
        if t is not None:
            rows.append(
                {
                    "delta": c.f(d[i]),
                    "epsilon": t.epsilon,
                    "epsilon_lower": t.epsilon_lower,
                    "epsilon_width": t.epsilon_width,
                    "order": None,
                    "method": t.method,
                    "bound": t.bound,
                }
            )
            width_warnings += c.width_warnings([f"the total at δ={d[i]:g}"], [t.epsilon_lower], [t.epsilon], [t.met])
    _mark_tightest(rows, ["delta"])
    parts = tuple(
        [(Gaussian(p["sigma"], p["sensitivity"]), int(p["times"])) for p in gaussians]
        + [
            (Subsampled(Gaussian(p["sigma"], 1.0), p["rate"], "poisson", "add-remove"), int(p["times"]))
            for p in subsampled
        ]
        + [(Laplace(p["scale"], p["sensitivity"]), int(p["times"])) for p in laplaces]
    )
    cols = [
        ("delta", "δ"),
        ("epsilon_lower", "ε ≥ (certified)", "float", "down"),
        ("epsilon", "ε total", "float", "up"),
        ("order", "best α"),
    ]
    cols = [col for col in cols if any(r.get(col[0]) is not None for r in rows)]
    inputs = {
        "gaussian": [dict(p) for p in gaussians],
        "subsampled_gaussian": [dict(p) for p in subsampled],
        "laplace": [dict(p) for p in laplaces],
        "delta": delta,
    }
    objects = [Composed(parts)]
    return c.emit_rows(
        "compose mixed",
        inputs,
        cols,
        rows,
        fmt,
        as_json,
        tail=("tightest", "method", "bound"),
        objects=objects,
        warnings=width_warnings,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------------------- discrete

_DG_SIGMA = Range(0.05, low_open=False)
_INT_SENSITIVITY = Range(1, 2**31 - 1, low_open=False, high_open=False, integer=True)
_DL_SENSITIVITY = Range(1, 2**20 - 1, low_open=False, high_open=False, integer=True)
_discrete_times = grid_option("--times", allowed=COUNT, default="1", help="How many times the mechanism runs (k).")
_discrete_delta = grid_option("--delta", allowed=PROBABILITY, required=True, help="δ at which to report the total ε.")


#: A discrete composition grid of more settings than this (distinct inputs other than δ) is accounted on a
#: lattice of at most DISCRETE_LATTICE of them, the other settings bracketed (:func:`_discrete_lattice`).
DISCRETE_DIRECT = 256
DISCRETE_LATTICE = 128
#: An axis of at most this many values is kept whole on the lattice.
DISCRETE_SHORT_AXIS = 16
#: Method of a discrete composition row bracketed between settings accounted on a lattice.
DISCRETE_BRACKET = "bracket"


#: Inputs along which each discrete composition's privacy loss is monotone (+1: grows with the input, −1: falls),
#: proved for the mechanism and for the pairs its engines account: k runs are a post-processing of k + 1 (the
#: last output dropped); k-ary randomized response at ε₀ is the one at ε₀' > ε₀ followed by a k-ary randomized
#: response channel (symmetric channels compose to one, keeping the value with a smaller probability); every
#: ε₀-bounded-range mechanism is ε₀'-bounded-range, so the worst case over the class (the pair composed, the
#: zCDP and KOV bounds) cannot fall as ε₀ grows; and the discrete Laplace of scale t' > t is that of scale t plus
#: independent noise (its characteristic function over t's is a mixture of 1 and the scale-t' one's, with
#: positive weights: tests/test_discrete_lattice.py checks the convolution). The discrete Gaussian's σ is kept exact:
#: no such decomposition is known to us (its factor ratios are not positive definite one by one), and neither
#: are the sensitivity and the number of categories.
_DISCRETE_DIRS = {
    "discrete-gaussian": {"times": 1},
    "discrete-laplace": {"scale": -1, "times": 1},
    "randomized-response": {"epsilon": 1, "times": 1},
    "bounded-range": {"epsilon": 1, "times": 1},
}


def _discrete_lattice(settings: list, dirs: list):
    """For a grid of more than DISCRETE_DIRECT ``settings`` (tuples of input values, one axis each): the lattice
    of at most DISCRETE_LATTICE of them to account (each axis's values spread evenly in log scale, both ends
    kept; ``dirs`` per axis: +1 where more of it means more privacy loss, −1 less, 0 an axis kept exact) and, per
    setting, the lattice point with as much loss or more on every axis (``hard``), the one with as little or
    less (``easy``) and whether it is on the lattice. An axis of at most DISCRETE_SHORT_AXIS values is kept
    whole. None where the grid is small, where its exact axes alone would exceed the lattice, or where the lattice
    would be mostly settings no row asked for."""
    import numpy as np

    from dpcalc.core import sgd

    if len(settings) <= DISCRETE_DIRECT:
        return None
    cols = [np.array([s[a] for s in settings], float) for a in range(len(dirs))]
    values = [np.unique(col) for col in cols]
    # A short axis keeps every value (its ends alone would bracket across it: --times 1,30,1000 read at 1 and
    # 1,000 only); the lattice's other points go to the long ones.
    dirs = [0 if v.size <= DISCRETE_SHORT_AXIS else dr for v, dr in zip(values, dirs)]
    if not any(dirs):
        return None
    picks = sgd.lattice_picks(values, dirs, DISCRETE_LATTICE)
    if picks is None:
        return None
    points = [g.ravel() for g in np.meshgrid(*picks, indexing="ij")]
    if not sgd._mostly_asked(cols, points):
        return None
    hard, easy, on = sgd.nearest_picks(cols, picks, dirs)
    shape = tuple(p.size for p in picks)
    return points, np.ravel_multi_index(hard, shape), np.ravel_multi_index(easy, shape), on


def _discrete_compose(
    command, inputs, grids, make, echo, cols, times, delta, accountant, fmt, as_json, notes=(), dirs=None
):
    """k-fold composition of one discrete mechanism per grid point, by every sound engine (docs/discrete.md).

    ``make(m, i)`` is the mechanism at mesh point i, ``echo(m, i)`` its input columns. Each point's totals are
    those of the same object piped into ``compose`` or listed in a ledger (accounting.compose_parts): PLD (a
    certified interval), zCDP (ρ = Δ²/(2σ²) for the discrete Gaussian, ε₀²/8 for bounded range, ε²/2 for ε-DP),
    RDP, basic kε for ε-DP mechanisms, the closed form of one run (exact) and the optimal composition of k ε-DP
    runs (KOV); the tightest sound one is marked.

    ``dirs`` (per grid option, and ``times``): +1 where a larger value means more privacy loss, −1 less, 0 (or
    absent) an input kept exact. A grid of more than DISCRETE_DIRECT settings (inputs other than δ) is accounted
    on a lattice of them (:func:`_discrete_lattice`): a setting on it gets its own rows; any other one row
    (method ``bracket``) whose ε is the smallest sound upper end of any method at the nearest lattice setting
    with as much loss or more, and whose ε ≥ is the largest certified lower end at the nearest with as little or
    less — sound wherever the true ε is monotone along the axes, which ``dirs`` states only where it is proved.
    """
    import numpy as np

    from dpcalc.accounting import Total, basic_epsilon, closed_form_lowers, compose_parts_many, flatten
    from dpcalc.model import Composed, ObjectError

    refuse_width_without_pld(accountant)
    m = c.mesh(**grids, times=times, delta=delta)
    keys = [key for key in m if key != "delta"]
    # Mesh points that differ only in δ are read together: one PLD reading gives all their δ.
    same: dict = {}
    for i in range(m["delta"].size):
        same.setdefault(tuple(float(m[key][i]) for key in keys), []).append(i)

    def account(setting, deltas, width=None):
        point = {key: np.array([v]) for key, v in zip(keys, setting)}
        try:
            return compose_parts_many(
                flatten(make(point, 0), int(setting[keys.index("times")])),
                deltas,
                with_pld=accountant != "rdp",
                width=c.pld_width() if width is None else width,
                every=accountant == "all",
            )
        except ObjectError as exc:
            raise click.UsageError(str(exc)) from None

    settings = list(same)
    lat = _discrete_lattice(settings, [(dirs or {}).get(key, 0) for key in keys])
    found: dict = {}  # mesh index -> its totals (a bracketed one: the bracket, and its own basic kε where pure ε-DP)
    if lat is None:
        for setting, idx in same.items():
            found.update(zip(idx, account(setting, [float(m["delta"][i]) for i in idx])))
    else:
        points, hard, easy, on = lat
        ds = np.unique(m["delta"])
        at = {}  # lattice point -> {δ: totals}

        def totals_at(j):
            if j not in at:
                at[j] = dict(zip(ds.tolist(), account(tuple(float(p[j]) for p in points), ds.tolist())))
            return at[j]

        lowers: dict = {}  # lattice point -> {δ: certified lower end of its exact closed form, or None}

        def lowers_at(j):
            if j not in lowers:
                setting = tuple(float(p[j]) for p in points)
                point = {key: np.array([v]) for key, v in zip(keys, setting)}
                parts = flatten(make(point, 0), int(setting[keys.index("times")]))
                lowers[j] = dict(zip(ds.tolist(), closed_form_lowers(parts, ds.tolist())))
            return lowers[j]

        from dpcalc.core.pld.engine import widths, within

        rel, abs_ = widths(c.pld_kw())
        for s, (setting, idx) in enumerate(same.items()):
            if on[s]:
                mine = totals_at(int(hard[s]))
                found.update((i, mine[float(m["delta"][i])]) for i in idx)
                continue
            up_t, lo_t = totals_at(int(hard[s])), totals_at(int(easy[s]))
            # The row's own basic kε (pure ε-DP mechanisms; it costs nothing) beside the bracket, as accounted
            # alone: a bracket across a coarse lattice can be far above it.
            pure = basic_epsilon(flatten(make(m, idx[0]), int(m["times"][idx[0]])))
            for i in idx:
                d = float(m["delta"][i])
                ups = [t.epsilon for t in up_t[d] if t.bound in ("exact", "upper") and np.isfinite(t.epsilon)]
                # (An exact closed form is rounded up by its search's tolerance or its formula's error bound — far
                # more than 2^-46 where ε₀ + log(…) cancels: ε₀ = 1, δ = 0.2449, ε ≈ 1e-9. As a lower end it takes
                # its own certified lower end.)
                los = [t.epsilon_lower for t in lo_t[d] if t.epsilon_lower is not None]
                if any(t.bound == "exact" for t in lo_t[d]):
                    los += [x for x in [lowers_at(int(easy[s]))[d]] if x is not None]
                up = min(ups) if ups else np.inf
                lo = min(max(los, default=0.0), up)
                met = bool(within(lo, up, rel, abs_))
                if not np.isfinite(up):  # (as below: no finite bound at the harder setting)
                    found[i] = []
                    continue
                found[i] = [Total(DISCRETE_BRACKET, "upper", up, d, epsilon_lower=lo, met=met)]
                found[i] += [Total("basic", "upper", pure, d)] if pure is not None else []
    # A budget below 0.01 inside a row's certified interval: that row's totals at the budget's scale (as plan-sgd's
    # and the other compose commands'). Bracket rows stay as they are (their ends come from other settings).
    budget_notes: list = []
    if accountant != "rdp" and c.budget_width() is not None:
        for i in range(m["delta"].size):
            if not any(t.method == DISCRETE_BRACKET for t in found[i]):
                setting, d_i = tuple(float(m[key][i]) for key in keys), float(m["delta"][i])
                found[i], _ = _at_budget_scale(
                    found[i], lambda w, s=setting, d=d_i: account(s, [d], w)[0], budget_notes
                )
    rows, warnings, objects = [], [], {}
    for i in range(m["delta"].size):
        obj, k, d = make(m, i), int(m["times"][i]), float(m["delta"][i])
        totals = [t for t in found[i] if np.isfinite(t.epsilon)]
        if not totals:
            raise click.UsageError(
                f"the total ε of {k} runs is too large to represent (over 1e308); use a smaller '--times' or a "
                "more private mechanism."
            )
        base = dict(echo(m, i), times=k, delta=c.f(d))
        for t in totals:
            rows.append(
                dict(
                    base,
                    rho=t.rho,
                    epsilon_lower=t.epsilon_lower,
                    epsilon_width=t.epsilon_width,
                    epsilon=t.epsilon,
                    order=t.order,
                    method=t.method,
                    bound=t.bound,
                )
            )
            if t.epsilon_lower is not None and t.method != DISCRETE_BRACKET:  # (bracket rows: counted below)
                warnings += c.width_warnings([f"the {t.method} total"], [t.epsilon_lower], [t.epsilon], [t.met])
        objects[Composed(((obj, k),))] = None
    brackets = [t for ts in found.values() for t in ts if t.method == DISCRETE_BRACKET]
    if brackets:
        wide = sum(not t.met for t in brackets)
        warnings.append(
            f"{len(brackets)} rows (method bracket) lie between the {int(lat[0][0].size)} settings accounted on a "
            f"lattice (a grid of more than {DISCRETE_DIRECT} settings): ε is the smallest sound upper end at the "
            "nearest accounted setting with as much privacy loss or more, ε ≥ the largest certified lower end at the "
            "nearest with as little or less (beside it, the row's own basic kε where the mechanism is pure ε-DP); "
            f"{wide} of them are wider than asked. Give at most {DISCRETE_DIRECT} "
            "settings (inputs other than δ) to have every row accounted on its own."
        )
    _mark_tightest(rows, [col[0] for col in cols] + ["times", "delta"])
    cols = [
        *cols,
        ("times", "k", "int"),
        ("delta", "δ"),
        ("rho", "ρ total", "float", "up"),
        ("epsilon_lower", "ε ≥ (certified)", "float", "down"),
        ("epsilon", "ε total", "float", "up"),
        ("order", "best α"),
    ]
    cols = [col for col in cols if any(r.get(col[0]) is not None for r in rows)]
    return c.emit_rows(
        command,
        inputs,
        cols,
        rows,
        fmt,
        as_json,
        tail=("tightest", "method", "bound"),
        objects=list(objects),
        warnings=warnings,
        notes=[*notes, *dict.fromkeys(budget_notes)],
    )


@compose.command("discrete-gaussian", context_settings=CONTEXT)
@grid_option("--sigma", allowed=_DG_SIGMA, required=True, help="σ of the discrete Gaussian N_Z(0, σ²) (its parameter).")
@grid_option("--sensitivity", allowed=_INT_SENSITIVITY, default="1", help="Integer sensitivity Δ of the query.")
@_discrete_times
@_discrete_delta
@accountant_option
@pld_width_option
@output_options
@budget_option
def discrete_gaussian(sigma, sensitivity, times, delta, accountant, fmt, as_json):
    """k-fold composition of a discrete Gaussian mechanism: PLD, the law of the sum, zCDP (ρ = kΔ²/(2σ²)), RDP.

    The discrete Gaussian is Δ²/(2σ²)-zCDP (Canonne, Kamath & Steinke 2020,
    Thm 4) but not known to be Δ/σ-GDP: no μ is reported. One run's ε at δ is
    exact (method discrete-gaussian-cks); k runs are accounted by privacy loss
    distributions (a certified interval), by the exact law of the outputs' sum
    where its convolutions are small (discrete-gaussian-sum: a certified
    interval as narrow as round-off; σ up to a few, or few runs), and by the
    zCDP and RDP bounds.

    \b
    Example:
      dpcalc compose discrete-gaussian --sigma 20 --times 100 --delta 1e-6
    """
    from dpcalc.model import DiscreteGaussian

    return _discrete_compose(
        "compose discrete-gaussian",
        dict(sigma=sigma, sensitivity=sensitivity, times=times, delta=delta, accountant=accountant),
        dict(sigma=sigma, sensitivity=sensitivity),
        lambda m, i: DiscreteGaussian(float(m["sigma"][i]), int(m["sensitivity"][i])),
        lambda m, i: {"sigma": c.f(m["sigma"][i]), "sensitivity": int(m["sensitivity"][i])},
        [("sigma", "σ"), ("sensitivity", "Δ", "int")],
        times,
        delta,
        accountant,
        fmt,
        as_json,
        notes=["σ is the discrete Gaussian's parameter; its standard deviation is smaller."],
        dirs=_DISCRETE_DIRS["discrete-gaussian"],
    )


@compose.command("discrete-laplace", context_settings=CONTEXT)
@grid_option("--scale", allowed=POSITIVE, required=True, help="Scale t of the discrete Laplace, P(x) ∝ e^{−|x|/t}.")
@grid_option("--sensitivity", allowed=_DL_SENSITIVITY, default="1", help="Integer sensitivity Δ of the query.")
@_discrete_times
@_discrete_delta
@accountant_option
@pld_width_option
@output_options
@budget_option
def discrete_laplace(scale, sensitivity, times, delta, accountant, fmt, as_json):
    """k-fold composition of a discrete Laplace (geometric) mechanism, ε = Δ/t each: PLD, KOV, zCDP, RDP, basic.

    \b
    Example:
      dpcalc compose discrete-laplace --scale 10 --sensitivity 2 --times 50 --delta 1e-6
    """
    from dpcalc.model import DiscreteLaplace

    return _discrete_compose(
        "compose discrete-laplace",
        dict(scale=scale, sensitivity=sensitivity, times=times, delta=delta, accountant=accountant),
        dict(scale=scale, sensitivity=sensitivity),
        lambda m, i: DiscreteLaplace(float(m["scale"][i]), int(m["sensitivity"][i])),
        lambda m, i: {"scale": c.f(m["scale"][i]), "sensitivity": int(m["sensitivity"][i])},
        [("scale", "t"), ("sensitivity", "Δ", "int")],
        times,
        delta,
        accountant,
        fmt,
        as_json,
        dirs=_DISCRETE_DIRS["discrete-laplace"],
    )


@compose.command("randomized-response", context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, required=True, help="ε₀ of each randomized response.")
@rr_k_option
@_discrete_times
@_discrete_delta
@accountant_option
@pld_width_option
@output_options
@budget_option
def randomized_response(epsilon, k, times, delta, accountant, fmt, as_json):
    """k-fold composition of ε₀-DP k-ary randomized response: PLD (exact atoms), KOV, zCDP, RDP, basic.

    \b
    Example:
      dpcalc compose randomized-response --epsilon 1 --k 4 --times 20 --delta 1e-6
    """
    from dpcalc.model import RandomizedResponse

    return _discrete_compose(
        "compose randomized-response",
        dict(epsilon=epsilon, k=k, times=times, delta=delta, accountant=accountant),
        dict(epsilon=epsilon, k=k),
        lambda m, i: RandomizedResponse(float(m["epsilon"][i]), int(m["k"][i])),
        lambda m, i: {"epsilon_each": c.f(m["epsilon"][i]), "k": int(m["k"][i])},
        [("epsilon_each", "ε₀"), ("k", "categories", "int")],
        times,
        delta,
        accountant,
        fmt,
        as_json,
        dirs=_DISCRETE_DIRS["randomized-response"],
    )


@compose.command("bounded-range", context_settings=CONTEXT)
@grid_option("--epsilon", allowed=POSITIVE, required=True, help="ε₀ of each bounded-range mechanism.")
@_discrete_times
@_discrete_delta
@accountant_option
@pld_width_option
@output_options
@budget_option
def bounded_range(epsilon, times, delta, accountant, fmt, as_json):
    """k-fold adaptive composition of ε₀-bounded-range mechanisms (exponential mechanism, Gumbel noisy max).

    The tightest of three sound engines is marked (docs/discrete.md): pld (the
    pair whose trade-off is the minimum over generalized randomized responses,
    Dong, Durfee & Rogers 2020 — sound for adaptive composition), zCDP with
    ρ = kε₀²/8 (Cesar & Rogers 2021) and optimal-kov (k ε₀-DP mechanisms).

    \b
    Example:
      dpcalc compose bounded-range --epsilon 0.1 --times 100 --delta 1e-6
    """
    from dpcalc.model import BoundedRange

    return _discrete_compose(
        "compose bounded-range",
        dict(epsilon=epsilon, times=times, delta=delta, accountant=accountant),
        dict(epsilon=epsilon),
        lambda m, i: BoundedRange(float(m["epsilon"][i])),
        lambda m, i: {"epsilon_each": c.f(m["epsilon"][i])},
        [("epsilon_each", "ε₀")],
        times,
        delta,
        accountant,
        fmt,
        as_json,
        notes=["Adaptive composition; the non-adaptive optimum of Dong–Durfee–Rogers can be smaller."],
        dirs=_DISCRETE_DIRS["bounded-range"],
    )


@compose.command("input", hidden=True, context_settings=CONTEXT)
@input_option
@click.option(
    "--ledger",
    type=click.Path(dir_okay=False),
    default=None,
    help="A privacy ledger (TOML or JSON) listing the releases to compose.",
)
@click.option(
    "--ledger-rows",
    type=click.Choice(["auto", "each", "grouped"]),
    default="auto",
    show_default=True,
    help="With --ledger: a row per release (each), a row per distinct release with a count of its releases "
    f"(grouped), or each while they fit in the {MAX_ROWS:,}-row limit and grouped beyond it (auto).",
)
@number_option("--times", allowed=COUNT, default="1", help="How many times each object read runs.")
@number_option("--delta", allowed=PROBABILITY, default=None, help="δ at which to report the total ε.")
@number_option(
    "--delta-prime",
    allowed=PROBABILITY,
    default="1e-6",
    help="With one piped (ε, δ) object and no --delta: the extra δ′ of advanced composition (total δ = kδ + δ′).",
)
@accountant_option
@pld_width_option
@output_options
@budget_option
def from_input(source, ledger, ledger_rows, times, delta, delta_prime, accountant, fmt, as_json):
    """Compose the privacy objects read from stdin (or --input), or the releases of a ledger."""
    from dpcalc.accounting import PLD_ONLY_KINDS, compose_parts, flatten
    from dpcalc.core.errors import ValidationError
    from dpcalc.model import DP, ObjectError

    refuse_width_without_pld(accountant)
    if ledger is not None:
        refuse_unused(
            "with --ledger (the releases and their counts come from the ledger)", "source", "times", "delta_prime"
        )
        if stdin_has_data():
            raise click.UsageError(
                "stdin has privacy objects but --ledger reads the releases from the ledger; list them in the "
                "ledger, or pipe them without --ledger."
            )
        return _compose_ledger(ledger, delta, accountant != "rdp", ledger_rows, fmt, as_json, accountant == "all")
    refuse_unused("without --ledger (it says how a ledger's releases are listed)", "ledger_rows")
    # Identical objects are read once and counted: k of them are one k-fold composition.
    several: list = []
    objs, n_read = read_counted(source, several)
    times = int(times)
    if n_read == 1 and isinstance(objs[0][0], DP) and objs[0][0].delta > 0 and delta is None:
        # One (ε, δ) object with no --delta: basic, advanced and optimal composition at kδ + δ′.
        o = objs[0][0]
        return click.get_current_context().invoke(
            dp,
            epsilon=(o.epsilon,),
            delta=(o.delta,),
            times=(times,),
            delta_prime=(delta_prime,),
            releases=(),
            fmt=fmt,
            as_json=as_json,
        )
    require("delta", delta, "the total ε is reported at this δ")
    refuse_unused(
        "here (it is the extra δ′ of advanced composition for one piped (ε, δ) object without --delta)", "delta_prime"
    )
    notes: list = []
    try:
        parts = [p for obj, where, k in objs for p in flatten(obj, times * k, where)]
        totals = compose_parts(
            parts, delta, with_pld=accountant != "rdp", width=c.pld_width(), every=accountant == "all"
        )
        totals, _ = _at_budget_scale(
            totals,
            lambda w: compose_parts(parts, delta, with_pld=accountant != "rdp", width=w, every=accountant == "all"),
            notes,
        )
    except ObjectError as exc:
        raise click.UsageError(str(exc)) from None
    except (ValidationError, OverflowError, ZeroDivisionError):
        # Name the object whose values are beyond what can be computed (each alone, by the cheap engines).
        for obj, where, k in objs:
            with c.attributed(where, obj):
                compose_parts(flatten(obj, times * k, where), delta)
        raise
    pld_only = any(p.kind in PLD_ONLY_KINDS for p in parts)
    warnings = [_PLD_ONLY_WARNING] if pld_only and accountant == "rdp" else []
    # One document with several objects: a grid's settings (or each scheme of one command) are alternatives,
    # but compose adds up whatever it reads — so say what it did (the total can only be too high by it).
    warnings += [
        f"{where} carries {k} different privacy objects (a grid's settings, or one per scheme), and each was "
        "composed as a release; if they are alternatives, pipe the document of one setting."
        for where, k in several
    ]
    rows = [
        {
            "objects": n_read,
            "times": times,
            "delta": t.delta,
            "mu": t.mu,
            "rho": t.rho,
            "epsilon": t.epsilon,
            "order": t.order,
            "epsilon_lower": t.epsilon_lower,
            "epsilon_width": t.epsilon_width,
            "method": t.method,
            "bound": t.bound,
        }
        for t in totals
    ]
    for t in totals:
        if t.epsilon_lower is not None:
            warnings += c.width_warnings([f"the {t.method} total"], [t.epsilon_lower], [t.epsilon], [t.met])
    _mark_tightest(rows, [])
    cols = [
        ("objects", "objects", "int"),
        ("times", "k each", "int"),
        ("delta", "δ"),
        ("mu", "μ total", "float", "up"),
        ("rho", "ρ total", "float", "up"),
        ("epsilon_lower", "ε ≥ (certified)", "float", "down"),
        ("epsilon", "ε total", "float", "up"),
        ("order", "best α"),
    ]
    cols = [col for col in cols if any(r.get(col[0]) is not None for r in rows)]
    return c.emit_rows(
        "compose",
        {"times": times, "delta": delta},
        cols,
        rows,
        fmt,
        as_json,
        tail=("tightest", "method", "bound"),
        objects=[_composed((obj, times * k) for obj, _, k in objs)],
        warnings=warnings,
        notes=notes,
    )


def _at_budget_scale(totals, redo, notes: list):
    """A budget check decided at the budget's own scale (as ``plan-sgd``'s, :func:`dpcalc.core.sgd.refine_for_budget`):
    where a budget below 0.01 lies inside the certified PLD interval of the total at the default width (no
    ``--pld-width`` given), the totals are computed again (``redo(w)``) at the width an inverse search for that ε
    uses (:func:`._common.budget_width`), and kept where the tightest is smaller. Returns the totals and the width
    they were computed again at (None where they were not)."""
    from dpcalc.accounting import tightest

    w = c.budget_width()
    if w is None or not totals:
        return totals, None
    budget = click.get_current_context().meta["dpcalc.max_epsilon"]
    best = tightest(totals)
    lows = [t.epsilon_lower for t in totals if t.epsilon_lower is not None]
    if best.epsilon <= budget or not lows or max(lows) > budget:
        return totals, None
    again = redo(w)
    if not again or not tightest(again).epsilon < best.epsilon:
        return totals, None
    notes.append(c.budget_note("The totals", w))
    return again, w


_PLD_ONLY_WARNING = (
    "a Gaussian sampled without replacement has no RDP bound in dpcalc; its total is by pld despite --accountant rdp."
)


def _composed(pairs):
    """The composition of (object, times) pairs as one object: identical objects are one part, their counts
    added (a part's count stays at most 2^53, the largest a count read back can be; past it, another part)."""
    from dpcalc.model import MAX_COUNT, Composed

    merged: dict = {}
    for obj, t in pairs:
        counts = merged.setdefault(obj, [0])
        if counts[-1] + t <= MAX_COUNT:
            counts[-1] += t
        else:
            counts.append(t)
    return Composed(tuple((obj, t) for obj, counts in merged.items() for t in counts))


def _compose_ledger(path, delta, with_pld, rows_mode, fmt, as_json, every=False):
    """A ledger's total, and each release's own cost and share: computed once per distinct release.

    Releases with the same mechanism and count are one kind: each kind is flattened, costed on its
    own and attributed once, and the total composes each kind's parts with their counts multiplied
    (one self-composition per distinct part, see accounting.group_parts). Rows: one per release, or
    one per kind with the number of its releases (``rows_mode``; ``auto`` groups past MAX_ROWS).
    """
    import dataclasses

    from dpcalc import ledger as lg
    from dpcalc.accounting import PLD_ONLY_KINDS, compose_parts, flatten, shares
    from dpcalc.model import ObjectError

    budget_notes: list = []
    try:
        book = lg.load(path)
        ctx = click.get_current_context()
        if book.max_epsilon is not None and "dpcalc.max_epsilon" not in ctx.meta:
            ctx.meta["dpcalc.max_epsilon"] = book.max_epsilon  # (the option, where given, takes precedence)
        d = delta if delta is not None else book.delta
        if d is None:
            raise click.UsageError(f"ledger {path} sets no delta; give --delta.")
        # Kinds: distinct (mechanism, count) pairs, in the order of their first release.
        index: dict = {}
        kind_of = []
        for e in book.entries:
            kind_of.append(index.setdefault((e.obj, e.times), len(index)))
        firsts = [0] * len(index)
        n_kind = [0] * len(index)
        for i, k in enumerate(kind_of):
            if not n_kind[k]:
                firsts[k] = i
            n_kind[k] += 1
        kinds = [book.entries[i] for i in firsts]
        parts = [flatten(e.obj, e.times, e.where) for e in kinds]
        flat = [dataclasses.replace(p, times=p.times * n) for ps, n in zip(parts, n_kind) for p in ps]
        costs = _kind_costs(kinds, parts, d, with_pld, every)
        totals = compose_parts(flat, d, with_pld=with_pld, width=c.pld_width(), every=every)
        if with_pld:
            totals, finer = _at_budget_scale(
                totals, lambda w: compose_parts(flat, d, with_pld=True, width=w, every=every), budget_notes
            )
            if finer is not None:  # (each release's own cost at the same width as the totals)
                costs = _kind_costs(kinds, parts, d, with_pld, every, width=finer)
        each = [p for ps in parts for p in ps]
        share_parts = shares(each, d, [n for ps, n in zip(parts, n_kind) for _ in ps])
    except ObjectError as exc:
        msg = str(exc)
        if delta is None:  # the δ came from the ledger, not from --delta
            msg = msg.replace("not below --delta", "not below the ledger's delta").replace(
                "raise --delta", f"raise delta in {path} or give --delta"
            )
        raise click.UsageError(msg) from None
    pld_only = any(p.kind in PLD_ONLY_KINDS for p in flat)
    warnings = [_PLD_ONLY_WARNING] if pld_only and not with_pld else []
    # An option replaces the ledger's own value (documented precedence), and says so: never silently.
    if delta is not None and book.delta is not None and delta != book.delta:
        warnings.append(
            f"--delta {delta:g} replaces delta = {book.delta:g} of ledger {path}: the totals are at δ = {delta:g}."
        )
    cli_max = ctx.meta.get("dpcalc.max_epsilon")
    if book.max_epsilon is not None and cli_max != book.max_epsilon:
        how = "looser" if cli_max > book.max_epsilon else "stricter"
        warnings.append(
            f"--max-epsilon {cli_max:g} replaces max_epsilon = {book.max_epsilon:g} of ledger {path} (a {how} "
            "budget): the check is against the option."
        )
    # Each kind's share of the total (all its releases): the shares of its parts.
    kind_share, at = [], 0
    for ps in parts:
        kind_share.append(float(sum(share_parts[at : at + len(ps)])))
        at += len(ps)
    grouped = rows_mode == "grouped" or (rows_mode == "auto" and len(book.entries) + len(totals) > MAX_ROWS)
    if len(kinds) + len(totals) > MAX_ROWS:
        raise click.UsageError(
            f"ledger {path} has {len(kinds):,} distinct releases: a row for each, and the totals, are more than the "
            f"{MAX_ROWS:,} rows a result may have; split the ledger."
        )
    if rows_mode == "each" and len(book.entries) + len(totals) > MAX_ROWS:
        raise click.UsageError(
            f"ledger {path} has {len(book.entries):,} releases: a row for each, and the totals, are more than the "
            f"{MAX_ROWS:,} rows a result may have; use --ledger-rows grouped or auto (a row per distinct release)."
        )

    described = [lg.describe(e.obj) for e in kinds]

    def row(e, k, share, count):
        cost = costs[k]
        r = {
            "epsilon_lower": None,
            "kind": "release",
            "row": "group" if grouped else "entry",
            "entry": e.name,
            "mechanism": described[k],
            "times": e.times,
            "epsilon": cost.epsilon,
            "delta": cost.delta,
            "share_pct": 100 * share,
            "tightest": None,
            "method": cost.method,
            "bound": cost.bound,
        }
        if grouped:
            r["releases"] = count
        return r

    if grouped:
        rows = [row(e, k, kind_share[k], n_kind[k]) for k, e in enumerate(kinds)]
    else:
        rows = [row(e, k, kind_share[k] / n_kind[k], 1) for e, k in zip(book.entries, kind_of)]
    total_rows = [
        {
            "kind": "total",
            "row": "total",
            "entry": "TOTAL",
            "mechanism": f"{len(book.entries)} releases",
            "times": None,
            "epsilon": t.epsilon,
            "epsilon_lower": t.epsilon_lower,
            "epsilon_width": t.epsilon_width,
            "delta": t.delta,
            "share_pct": None,
            "method": t.method,
            "bound": t.bound,
        }
        for t in totals
    ]
    if grouped:
        for r in total_rows:
            r["releases"] = len(book.entries)
    for t in totals:
        if t.epsilon_lower is not None:
            warnings += c.width_warnings([f"the {t.method} total"], [t.epsilon_lower], [t.epsilon], [t.met])
    _mark_tightest(total_rows, [])
    rows += total_rows
    # The largest share: of one release (the first of the largest), or of a kind when grouped.
    per = [kind_share[k] / (1 if grouped else n_kind[k]) for k in range(len(kinds))]
    top = max(range(len(kinds)), key=lambda k: (per[k], -firsts[k]))
    largest = f"the largest is {kinds[top].name!r}"
    if grouped and n_kind[top] > 1:
        more = n_kind[top] - 1
        largest += f" (with {more:,} identical release{'s' if more > 1 else ''})"
    notes = [
        f"{book.name}: neighbours {book.neighbours}; entry ε is each release on its own at δ = {d:g}.",
        "share is an attribution of the total ("
        + (
            "in proportion to each release's own ε"
            if pld_only
            else "RDP at the optimal order, basic ε for (ε, δ) entries"
        )
        + f"); {largest} at {100 * per[top]:.1f}%.",
        *budget_notes,
    ]
    if grouped:
        why = (
            f"its {len(book.entries):,} releases and totals are more than the {MAX_ROWS:,} rows a result may have"
            if rows_mode == "auto"
            else "--ledger-rows grouped"
        )
        notes.append(
            f"One row per distinct release ({len(kinds):,} rows for {len(book.entries):,} releases: {why}): "
            "'releases' counts the identical releases (same mechanism, parameters and k) a row stands for, named "
            "after the first; its ε is one of them on its own, its share all of them together."
        )
        if rows_mode == "auto":
            warnings.append(
                f"ledger {path}: {len(book.entries):,} releases are more rows than a result may have "
                f"({MAX_ROWS:,}); they are grouped, one row per distinct release with a count "
                "(--ledger-rows grouped says so explicitly)."
            )
    cols = [
        ("kind", "kind", "text"),
        ("entry", "release", "text"),
        ("mechanism", "mechanism", "text"),
        ("times", "k", "int"),
        ("releases", "releases", "int"),
        ("epsilon_lower", "ε ≥ (certified)", "float", "down"),
        ("epsilon", "ε", "float", "up"),
        ("delta", "δ", "float", "up"),
        ("share_pct", "share %"),
    ]
    cols = [col for col in cols if any(r.get(col[0]) is not None for r in rows)]
    return c.emit_rows(
        "compose",
        {"ledger": path, "delta": d, "ledger_rows": rows_mode},
        cols,
        rows,
        fmt,
        as_json,
        tail=("tightest", "method", "bound"),
        objects=[_composed((e.obj, e.times * n) for e, n in zip(kinds, n_kind))],
        notes=notes,
        warnings=warnings,
    )


def _kind_costs(kinds, parts, d, with_pld, every=False, width=None):
    """Each kind of release on its own at δ: its tightest total (basic for (ε, δ) entries), computed
    once per kind — the one-part kinds (every ledger release) together, vectorised (accounting.alone)."""
    from dpcalc.accounting import Total, alone, compose_parts, tightest
    from dpcalc.core.errors import ValidationError

    w = c.pld_width() if width is None else width
    out: list = [None] * len(kinds)
    single = [k for k, ps in enumerate(parts) if len(ps) == 1]
    try:
        for k, t in zip(single, alone([parts[k][0] for k in single], d, with_pld, w, every)):
            out[k] = t
    except (ValidationError, OverflowError, ZeroDivisionError):
        for k in single:  # name the release whose values are beyond what can be computed
            with c.attributed(kinds[k].where, kinds[k].obj):
                alone(parts[k], d, with_pld, w, every)
        raise
    for k, ps in enumerate(parts):
        if out[k] is not None:
            continue
        with c.attributed(kinds[k].where, kinds[k].obj):
            if any(p.kind == "dp" for p in ps):
                e = sum(t.epsilon for t in alone(ps, d))
                out[k] = Total("basic", "upper", e, sum(p.times * p.delta for p in ps))
            else:
                out[k] = tightest(compose_parts(ps, d, with_pld=with_pld, width=w, every=every))
    return out
