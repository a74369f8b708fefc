"""dpcalc amplify — how much subsampling helps."""

from __future__ import annotations

import dataclasses

import click

from dpcalc.cli import _common as c
from dpcalc.cli.options import (
    CONTEXT,
    COUNT,
    NONNEGATIVE,
    POSITIVE,
    PROB_OR_ZERO,
    PROBABILITY,
    RATE,
    Range,
    accountant_option,
    budget_option,
    given,
    grid_option,
    output_options,
    pld_width_option,
    refuse_unused,
    refuse_width_without_pld,
)
from dpcalc.cli.pipe import PipeGroup, input_option, read_objects

_rate = grid_option(
    "--rate",
    allowed=RATE,
    required=True,
    help="Sampling rate q in (0, 1]: the batch size over the dataset size (0.01 for 600 of 60000).",
)


@click.group(cls=PipeGroup, context_settings=CONTEXT)
def amplify():
    """Privacy amplification by subsampling."""


@amplify.command(context_settings=CONTEXT)
@grid_option("--epsilon", allowed=NONNEGATIVE, required=True, help="ε of the mechanism on the sample.")
@grid_option("--delta", allowed=PROB_OR_ZERO, default="0", help="δ of the mechanism on the sample, in [0, 1).")
@_rate
@click.option(
    "--scheme",
    type=click.Choice(["poisson", "without-replacement", "both"]),
    default="both",
    help="poisson: each record kept with probability q (add/remove neighbours). without-replacement: a "
    "fixed-size sample of m of n records, q = m/n (substitution neighbours).",
)
@output_options
def dp(epsilon, delta, rate, scheme, fmt, as_json):
    """(ε, δ) → (ln(1 + q(e^ε − 1)), qδ) (Balle, Barthe & Gaboardi 2018, Thms 8 and 9).

    The formula is the same for both schemes; what differs is the
    neighbouring relation the result holds under, which each row states.

    \b
    Example:
      dpcalc amplify dp --epsilon 1 --delta 1e-6 --rate 0.01
    """
    from dpcalc.core import amplification as amp
    from dpcalc.model import DP, Subsampled

    m = c.mesh(epsilon=epsilon, delta=delta, rate=rate)
    e, d = amp.subsample(m["epsilon"], m["delta"], m["rate"])
    schemes = {
        "poisson": [("poisson", "add-remove")],
        "without-replacement": [("without-replacement", "substitution")],
        "both": [("poisson", "add-remove"), ("without-replacement", "substitution")],
    }[scheme]
    rows, objects = [], []
    for i in range(e.size):
        # qδ below 1e-300 (subnormal, or nearly) is shown as that floor: never below the true qδ.
        dq = c.delta_out(d[i], "upper")[0] if d[i] > 0 else 0.0
        for s, nb in schemes:
            rows.append(
                {
                    "epsilon_in": c.f(m["epsilon"][i]),
                    "delta_in": c.f(m["delta"][i]),
                    "rate": c.f(m["rate"][i]),
                    "scheme": s,
                    "neighbours": nb,
                    "epsilon": c.f(e[i]),
                    "delta": dq,
                    "method": "subsampling-bbg",
                    "bound": "upper",
                }
            )
            objects.append(Subsampled(DP(c.f(m["epsilon"][i]), c.f(m["delta"][i])), c.f(m["rate"][i]), s, nb))
    cols = [
        ("epsilon_in", "ε"),
        ("delta_in", "δ"),
        ("rate", "q"),
        ("scheme", "scheme", "text"),
        ("neighbours", "neighbours", "text"),
        ("epsilon", "ε amplified", "float", "up"),
        ("delta", "δ amplified", "float", "up"),
    ]
    return c.emit_rows(
        "amplify dp",
        dict(epsilon=epsilon, delta=delta, rate=rate, scheme=scheme),
        cols,
        rows,
        fmt,
        as_json,
        objects=objects,
    )


@amplify.command(context_settings=CONTEXT)
@grid_option("--sigma", allowed=POSITIVE, required=True, help="Noise multiplier σ (noise std / sensitivity).")
@_rate
@grid_option("--steps", allowed=COUNT, default="1", help="Number of subsampled steps T.")
@grid_option("--delta", allowed=PROBABILITY, default="1e-5", help="δ at which to report ε.")
@grid_option(
    "--orders",
    allowed=Range(1, 1e6, high_open=False),
    help="List the per-step RDP at these orders α > 1 instead of ε.",
)
@click.option(
    "--scheme",
    type=click.Choice(["poisson", "without-replacement", "both"]),
    default="poisson",
    help="poisson (default): each record kept with probability q, add/remove neighbours. without-replacement: "
    "a fixed-size batch of m of n records, q = m/n, substitution neighbours (σ relative to the substitution "
    "sensitivity); accounted by PLD only.",
)
@grid_option(
    "--max-batch-size",
    allowed=COUNT,
    help="Truncated Poisson sampling (with --scheme poisson and --dataset-size): batches of more than B_max "
    "records are cut to B_max.",
)
@grid_option("--dataset-size", allowed=COUNT, help="Records N, for --max-batch-size (the expected batch is qN).")
@grid_option(
    "--examples-per-user",
    allowed=COUNT,
    help="User-level ε (with --scheme poisson): each user holds K examples, each sampled with probability q.",
)
@accountant_option
@pld_width_option
@output_options
@budget_option
def gaussian(
    sigma, rate, steps, delta, orders, scheme, max_batch_size, dataset_size, examples_per_user, accountant, fmt, as_json
):
    """A subsampled Gaussian: tight ε by PLD, RDP (sound) and the GDP CLT (approximate).

    PLD gives a certified interval on the tight ε. RDP of one Poisson step
    follows Mironov, Talwar & Zhang 2019 (exact at integer orders, an upper
    bound at fractional ones), composed over T steps and converted with the
    improved conversion. The GDP central-limit μ = q√(T(e^{1/σ²} − 1))
    (Bu et al. 2020; Dong, Roth & Su 2022 for sampling without replacement)
    is asymptotic and can under-state ε (Gopi et al. 2021); it is labelled
    approximate and never marked as the answer.

    Sampling m of n without replacement with substitution neighbours makes a
    G_{1/σ} step C_q(G_{1/σ})-DP (Dong, Roth & Su 2022, Thm 4.2); PLD
    composes that trade-off exactly. dpcalc has no RDP bound for it.

    \b
    Examples:
      dpcalc amplify gaussian --sigma 1.1 --rate 0.01 --steps 1,100,10000 --delta 1e-5
      dpcalc amplify gaussian --sigma 1.1 --rate 0.01 --steps 10000 --scheme both
      dpcalc amplify gaussian --sigma 1 --rate 0.01 --orders 2,4,8,16,32
    """
    import numpy as np

    from dpcalc.cli import _schemes as schemes_
    from dpcalc.core import gdp, sgd
    from dpcalc.core import rdp as r
    from dpcalc.model import Composed, Gaussian, RDPCurve, Subsampled

    if max_batch_size is None and dataset_size is not None:
        raise click.UsageError("--dataset-size goes with --max-batch-size (the batch cap needs N).")
    kind = schemes_.scheme_of(scheme, max_batch_size, examples_per_user, via="--scheme")
    if kind in schemes_.NEW_SCHEMES:
        return _scheme_gaussian(locals())
    refuse_width_without_pld(accountant)
    schemes = ["poisson", "without-replacement"] if scheme == "both" else [scheme]
    if "without-replacement" in schemes and orders is None:
        c.check_pld_delta(delta, f"--scheme {scheme}", c.WOR_DELTA)
    if orders is not None:
        if scheme != "poisson":
            raise click.UsageError("Invalid value for '--orders': per-step RDP is available for --scheme poisson only.")
        refuse_unused(
            "with --orders (it lists the per-step RDP curve: no steps, δ or engine)",
            "steps",
            "delta",
            "accountant",
            "pld_width",
        )
        a = np.asarray(orders)
        m = c.mesh(sigma=sigma, rate=rate)
        terms = float(np.sum(np.ceil(np.unique(a)))) * m["sigma"].size
        if terms > r.MAX_ORDER_TERMS:
            raise click.UsageError(
                f"Invalid value for '--orders': these orders sum {terms:.3g} terms over the settings given; at most "
                f"{r.MAX_ORDER_TERMS:g} are allowed (use fewer or smaller orders, each in (1, {r.MAX_ORDER:g}])."
            )
        rows, objects = [], []
        for i in range(m["sigma"].size):
            vals = r.subsampled_gaussian(a, m["rate"][i], m["sigma"][i])
            if not np.all(np.isfinite(vals)):
                k = int(np.flatnonzero(~np.isfinite(vals))[0])
                raise click.UsageError(
                    f"the per-step RDP at α = {a[k]:g} for σ = {m['sigma'][i]:g}, q = {m['rate'][i]:g} is beyond what "
                    "can be represented (over 1e308); use a larger --sigma or smaller --orders."
                )
            rows += [
                {
                    "sigma": c.f(m["sigma"][i]),
                    "rate": c.f(m["rate"][i]),
                    "order": c.f(a[k]),
                    "rdp": c.f(vals[k]),
                    "method": "rdp-mtz",
                    "bound": "exact" if a[k] == round(a[k]) else "upper",
                }
                for k in range(a.size)
            ]
            # (Each setting's curve from its own values: matching every row against every setting was quadratic
            # — 10,000 σ took 100 s.)
            objects.append(RDPCurve(tuple(map(float, a)), tuple(float(v) for v in vals)))
        cols = [("sigma", "σ"), ("rate", "q"), ("order", "α"), ("rdp", "RDP per step", "float", "up")]
        return c.emit_rows(
            "amplify gaussian",
            dict(sigma=sigma, rate=rate, orders=list(a)),
            cols,
            rows,
            fmt,
            as_json,
            objects=objects,
            notes=["Per-step RDP, add/remove neighbours, sensitivity 1."],
        )
    m = c.mesh(sigma=sigma, rate=rate, steps=steps, delta=delta)
    q, s_, t, d = m["rate"], m["sigma"], m["steps"], m["delta"]
    mu = gdp.clt_mu(q, s_, t)
    e_clt = sgd.epsilon(q, s_, t, d, "gdp-clt")
    rows, objects, warnings = [], [], []
    labels = [f"q={q[i]:g}, σ={s_[i]:g}, T={int(t[i])}, δ={d[i]:g}" for i in range(q.size)]
    budget_notes: list = []  # (rows computed again at a small budget's scale)
    for sch in schemes:
        poisson = sch == "poisson"
        nb = "add-remove" if poisson else "substitution"
        e_rdp = sgd.epsilon(q, s_, t, d, "rdp") if poisson else np.full(q.shape, np.nan)
        if accountant != "rdp" or not poisson:
            # A curve or grid shares compositions (sgd.tight_curve): per (q, σ) at most sgd.CURVE_POINTS step
            # counts, and past sgd.DIRECT_POINTS compositions a lattice of sgd.GRID_POINTS settings; the rows
            # between are bracketed (ε is monotone in q, σ and T).
            tight = sgd.tight_curve(q, s_, t, d, sch, **c.pld_kw())
            # (A budget below 0.01 inside a row's interval: decided at its scale, as plan-sgd's.)
            tight = c.refined_for_budget(sgd.refine_tight_for_budget, tight, (q, s_, t, d), sch, budget_notes)
            lab = [f"{x}, {sch}" for x in labels] if scheme == "both" else labels
            bracketed = tight.method == sgd.BRACKET
            # (The interval the row shows: its upper end the no-subsampling one where that is smaller.)
            t_up, t_meth = sgd.with_no_subsampling(tight, s_, t, d, sch)
            shown_met = tight.met | bracketed | sgd.within_width(tight.lower, t_up, c.pld_kw())
            warnings += c.width_warnings(lab, tight.lower, t_up, shown_met, None if poisson else c.WOR_WIDE)
            warnings += c.bracket_warnings(tight)
        else:
            tight = None
        no_clt = []  # rows whose approximate GDP-CLT value overflows (left out, said once)
        sound_any = np.isfinite(e_rdp) if poisson else np.zeros(q.size, dtype=bool)
        if tight is not None:
            sound_any = sound_any | np.isfinite(t_up)
        if not sound_any.all():
            k = int(np.flatnonzero(~sound_any)[0])
            raise click.UsageError(
                f"no engine can answer σ = {s_[k]:g} (q = {q[k]:g}, T = {int(t[k])}, δ = {d[k]:g}, {sch}): the privacy "
                "loss is beyond what can be represented (every bound overflows); use a larger --sigma."
            )
        for i in range(q.size):
            # The run itself: T steps (one step is the object as it is), so that what is piped on is what
            # the rows account for.
            step = Subsampled(Gaussian(c.f(s_[i]), 1.0), c.f(q[i]), sch, nb)
            objects.append(step if int(t[i]) == 1 else Composed(((step, int(t[i])),)))
            base = {
                "sigma": c.f(s_[i]),
                "rate": c.f(q[i]),
                "steps": int(t[i]),
                "delta": c.f(d[i]),
                "scheme": sch if scheme == "both" else None,
            }
            sound = {}
            if tight is not None and np.isfinite(t_up[i]):
                sound["tight"] = float(t_up[i])
            if poisson and np.isfinite(e_rdp[i]):
                sound["rdp"] = float(e_rdp[i])
            best = min(sound, key=sound.get) if sound else None
            if tight is not None and np.isfinite(t_up[i]):
                lo_i = float(tight.lower[i])
                rows.append(
                    dict(
                        base,
                        epsilon=c.f(t_up[i]),
                        epsilon_lower=c.f(lo_i) if np.isfinite(lo_i) else None,
                        epsilon_width=c.f(t_up[i] - lo_i) if np.isfinite(lo_i) else None,
                        mu=None,
                        tightest=best == "tight",
                        method=str(t_meth[i]),
                        bound="upper" if t_meth[i] == "no-subsampling" else str(tight.bound[i]),
                    )
                )
            if poisson and np.isfinite(e_rdp[i]):  # (past ε ≈ 1e308 RDP has no bound to show; PLD answers)
                rows.append(
                    dict(
                        base,
                        epsilon=c.f(e_rdp[i]),
                        epsilon_lower=None,
                        mu=None,
                        tightest=best == "rdp",
                        method="rdp",
                        bound="upper",
                    )
                )
            if not (np.isfinite(mu[i]) and np.isfinite(e_clt[i])):
                # (μ = q√(T(e^{1/σ²} − 1)) overflows below σ ≈ 0.037: the approximation has nothing to say there,
                # and the sound rows stand without it.)
                no_clt.append(labels[i])
                continue
            rows.append(
                dict(
                    base,
                    epsilon=c.f(e_clt[i]),
                    epsilon_lower=None,
                    mu=c.f(mu[i]),
                    tightest=False,
                    method="gdp-clt",
                    bound="approximate",
                )
            )
        if no_clt:
            more = f" and {len(no_clt) - 1} more" if len(no_clt) > 1 else ""
            warnings.append(
                f"the GDP-CLT approximation is beyond what can be represented for {no_clt[0]}{more} (its μ overflows); "
                "its row is left out."
            )
        if not poisson:
            c.refuse_pld_gaps(tight.upper, q, s_, t, d, "--scheme without-replacement")
        elif tight is not None and not np.isfinite(tight.upper).all():
            bad = [labels[i] for i in range(q.size) if not np.isfinite(tight.upper[i])]
            shown = bad[0] + (f" and {len(bad) - 1} more" if len(bad) > 1 else "")
            warnings.append(c.pld_declined(shown) + "; rdp and no-subsampling are shown there.")
        if poisson and (e_clt < e_rdp).any():
            warnings.append(
                "the GDP-CLT ε is an asymptotic approximation and can be below the true ε; the pld and rdp rows "
                "are guarantees."
            )
        if not poisson and accountant == "rdp":
            warnings.append("dpcalc has no RDP bound for sampling without replacement; its guarantee is by pld.")
    if "without-replacement" in schemes:
        warnings.append(
            "the GDP-CLT ε is an asymptotic approximation and can be below the true ε; only the pld rows are "
            "guarantees for sampling without replacement."
        )
    cols = [
        ("sigma", "σ"),
        ("rate", "q"),
        ("steps", "T", "int"),
        ("delta", "δ"),
        ("scheme", "scheme", "text"),
        ("mu", "μ (CLT)", "float", "up"),
        ("epsilon_lower", "ε ≥ (certified)", "float", "down"),
        ("epsilon", "ε", "float", "up"),
    ]
    cols = [col for col in cols if any(r_.get(col[0]) is not None for r_ in rows)]
    tail = ("tightest", "method", "bound")
    notes = {
        "poisson": "poisson: Poisson sampling, add/remove neighbours, sensitivity 1 (σ is the noise multiplier).",
        "without-replacement": "without-replacement: m of n records, q = m/n, substitution neighbours; σ is the "
        "noise std over the substitution sensitivity (for a sum of gradients clipped to C that is 2C). Over 2 or "
        "more steps its ε ≥ is Poisson sampling's, which two datasets realise (every record alike, one changed); "
        "the upper end composes C_q(G_{1/σ}), which none is known to reach.",
    }
    return c.emit_rows(
        "amplify gaussian",
        dict(sigma=sigma, rate=rate, steps=steps, delta=delta, scheme=scheme),
        cols,
        rows,
        fmt,
        as_json,
        objects=objects,
        warnings=warnings,
        notes=[notes[sch] for sch in schemes]
        + [
            "tightest marks the smallest sound ε of each setting: the answer. ε ≥ is the certified lower bound "
            "(pld, or the exact routes: gdp for q = 1, privacy-profile for T = 1, total-variation where ε = 0)."
        ]
        + sgd.route_notes(rows)
        + budget_notes,
        tail=tail,
    )


def _scheme_gaussian(v: dict) -> int:
    """amplify gaussian --max-batch-size / --examples-per-user: the scheme's certified interval per setting."""
    import numpy as np

    from dpcalc.cli import _schemes as sch

    kind = v["kind"]
    opt = sch.option_of(kind)
    if v["orders"] is not None:
        raise click.UsageError(f"--orders lists per-step RDP of Poisson sampling; it cannot be used with {opt}.")
    if v["accountant"] != "pld":
        raise click.UsageError(
            f"Invalid value for '--accountant': {v['accountant']} has no bound for {opt}; it is accounted by pld "
            "(the default)."
        )
    if kind == "truncated-poisson" and v["dataset_size"] is None:
        raise click.UsageError("--max-batch-size needs --dataset-size (the batch cap needs N; the batch is qN).")
    c.check_pld_delta(v["delta"], opt)
    m = c.mesh(
        sigma=v["sigma"],
        rate=v["rate"],
        steps=v["steps"],
        dataset_size=v["dataset_size"],
        max_batch_size=v["max_batch_size"],
        examples_per_user=v["examples_per_user"],
        delta=v["delta"],
    )
    q, total = m["rate"], m["steps"]
    if "dataset_size" in m:
        m["batch_size"] = q * m["dataset_size"]
    results = sch.intervals(kind, m, q, total, c.pld_kw())
    rows, objects, notes, warnings = [], [], [sch.first_note(kind)], []
    wide: list = []  # rows wider than asked where each construction met its width: one warning after the loop
    for i in range(q.size):
        r, j = results[i]
        lab = sch.label(kind, m, q, total, i)
        if not np.isfinite(r.upper[j]):
            raise click.UsageError(
                f"no certified bound for {lab}: the privacy loss is beyond what can be represented; use a larger "
                "--sigma."
            )
        row = {
            "sigma": c.f(m["sigma"][i]),
            "rate": c.f(q[i]),
            "steps": int(total[i]),
            "dataset_size": int(m["dataset_size"][i]) if "dataset_size" in m else None,
            "max_batch_size": int(m["max_batch_size"][i]) if "max_batch_size" in m else None,
            "examples_per_user": int(m["examples_per_user"][i]) if "examples_per_user" in m else None,
            "delta": c.f(m["delta"][i]),
        }
        row.update(sch.interval_fields(r, j, kind))
        rows.append(row)
        notes += [x for x in r.notes if x not in notes]
        warnings += [f"{lab}: {w}" for w in r.warnings]
        if not sch.bracketed(r):
            if not bool(r.met[j]):
                warnings.append(
                    f"the PLD engine did not reach the width asked for on {lab}; both ends are still certified"
                )
            wide.append(c.scheme_wide(lab, r, j))
        objects.append(sch.run_object(kind, r, j, m, q, total, i))
    warnings += c.scheme_width_warnings(wide)
    warnings += sch.bracket_warnings(results, kind)
    notes += sch.closing_notes(kind)
    cols = [
        ("sigma", "σ"),
        ("rate", "q"),
        ("steps", "T", "int"),
        ("dataset_size", "N", "int"),
        ("max_batch_size", "B_max", "int"),
        ("examples_per_user", "K", "int"),
        ("delta", "δ"),
        ("epsilon_lower", "ε ≥ (certified)", "float", "down"),
        ("epsilon", "ε", "float", "up"),
        ("lower_method", "lower method", "text"),
        ("scheme", "scheme", "text"),
    ]
    cols = [col for col in cols if any(r_.get(col[0]) is not None for r_ in rows)]
    return c.emit_rows(
        "amplify gaussian",
        c.echo_inputs(
            sigma=v["sigma"],
            rate=v["rate"],
            steps=v["steps"],
            delta=v["delta"],
            scheme=v["scheme"],
            dataset_size=v["dataset_size"],
            max_batch_size=v["max_batch_size"],
            examples_per_user=v["examples_per_user"],
        ),
        cols,
        rows,
        v["fmt"],
        v["as_json"],
        objects=objects,
        warnings=warnings,
        notes=notes,
    )


@amplify.command("input", hidden=True, context_settings=CONTEXT)
@input_option
@_rate
@click.option(
    "--scheme",
    type=click.Choice(["poisson", "without-replacement", "both"]),
    default=None,
    help="Sampling scheme (see 'amplify dp' and 'amplify gaussian'). Default: poisson for Gaussian mechanisms "
    "(one object per input, ready to compose), both for (ε, δ) ones.",
)
@grid_option("--steps", allowed=COUNT, default="1", help="Steps T for Gaussian mechanisms.")
@grid_option("--delta", allowed=PROBABILITY, default="1e-5", help="δ at which to report ε for Gaussian mechanisms.")
@output_options
@budget_option
def from_input(source, rate, scheme, steps, delta, fmt, as_json):
    """Amplify the mechanisms read from stdin (or --input): Gaussian, Laplace or (ε, δ)."""
    from dpcalc.model import DP, Gaussian, Laplace, type_name

    ctx = click.get_current_context()
    with c.collecting() as results:
        for obj, where in read_objects(source):
            if isinstance(obj, Gaussian):
                ctx.invoke(
                    gaussian,
                    sigma=(obj.sigma / obj.sensitivity,),
                    rate=rate,
                    steps=steps,
                    delta=delta,
                    orders=None,
                    scheme=scheme or "poisson",
                    fmt=fmt,
                    as_json=as_json,
                )
            elif isinstance(obj, (DP, Laplace)):
                for name in ("steps", "delta"):
                    if given(name):
                        raise click.UsageError(
                            f"{where}: --{name} does not apply to {type_name(obj)} objects (amplify bounds one step "
                            "of them, at their own δ); drop it, and to compose T amplified steps pipe the result of "
                            "one --scheme into 'dpcalc compose --times T --delta D'."
                        )
                e, d = (obj.epsilon, obj.delta) if isinstance(obj, DP) else (obj.sensitivity / obj.scale, 0.0)
                ctx.invoke(dp, epsilon=(e,), delta=(d,), rate=rate, scheme=scheme or "both", fmt=fmt, as_json=as_json)
                if isinstance(obj, Laplace) and results:
                    # The rows are the (ε, 0) guarantee amplified; the objects piped on keep the Laplace
                    # mechanism itself, which compose accounts by its own subsampled pair (tighter than
                    # any ε-DP mechanism's: ε = 0.8, q = 0.06, 10 releases, δ = 1e-6: 0.5934 against 0.6477).
                    last = results[-1]
                    kept = tuple(dataclasses.replace(o, inner=obj) for o in last.objects)
                    results[-1] = dataclasses.replace(last, objects=kept)
            else:
                raise click.UsageError(
                    f"{where}: amplify takes a Gaussian, Laplace or (ε, δ) mechanism, not a {type_name(obj)} object."
                )
    return c.emit(c.merge(results, "amplify"), fmt, as_json)
