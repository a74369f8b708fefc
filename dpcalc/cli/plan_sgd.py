"""dpcalc plan-sgd — the privacy of a DP-SGD run, forward and inverse."""

from __future__ import annotations

import click

from dpcalc.cli.options import (
    CONTEXT,
    COUNT,
    MAX_COUNT,
    POSITIVE,
    PROBABILITY,
    RATE,
    UNIT_CLOSED,
    Command,
    budget_option,
    exclusive,
    grid_option,
    output_options,
    pld_width_option,
    refuse_unused,
    refuse_width_without_pld,
    require,
)

MAX_CURVE_POINTS = 10_000

#: Accountant names the CLI accepts; "all" shows every engine side by side.
ACCOUNTANT_CHOICES = ["rdp", "pld", "gdp-clt", "all"]


@click.command("plan-sgd", cls=Command, context_settings=CONTEXT)
@grid_option("--dataset-size", allowed=COUNT, help="Number of training records N.")
@grid_option(
    "--batch-size",
    allowed=COUNT,
    help="Batch size B, q = B/N (expected under Poisson sampling, exact without replacement).",
)
@grid_option("--rate", allowed=RATE, help="Sampling rate q, instead of --batch-size.")
@grid_option("--epochs", allowed=POSITIVE, help="Training epochs E; steps T = ⌈E·N/B⌉.")
@grid_option("--steps", allowed=COUNT, help="Training steps T, instead of --epochs.")
@grid_option(
    "--noise-multiplier", "--sigma", "sigma", allowed=POSITIVE, help="Noise multiplier σ (noise std / clipping norm)."
)
@grid_option(
    "--delta", allowed=PROBABILITY, help="δ. Default: the largest power of ten below 1/N (60,000 records → 1e-5)."
)
@grid_option(
    "--target-epsilon",
    allowed=POSITIVE,
    help="Solve for what is missing (σ, epochs/steps, or batch size) to reach this ε.",
)
@click.option(
    "--solve",
    type=click.Choice(["auto", "noise-multiplier", "epochs", "batch-size"]),
    default="auto",
    help="What to solve for with --target-epsilon or an attack-risk target; auto picks the one option not given.",
)
@click.option(
    "--accountant",
    type=click.Choice(ACCOUNTANT_CHOICES),
    default=None,
    help="pld (default): tight ε by privacy loss distributions, a certified interval (RDP where PLD cannot "
    "answer, said on stderr). rdp: Rényi DP upper bound (fast; looser: about 5-15% above over many steps, far "
    "more over a few, e.g. 2.4x at one MNIST epoch). gdp-clt: central-limit approximation (may under-report). "
    "all: every engine side by side.",
)
@click.option(
    "--sampling",
    type=click.Choice(["poisson", "without-replacement", "shuffle", "balls-in-bins"]),
    default="poisson",
    help="poisson (default): each record joins a batch with probability q, add/remove neighbours. "
    "without-replacement: fixed-size batches of B of N records, substitution neighbours, σ relative to the "
    "substitution sensitivity (2C for gradients clipped to C); accounted by pld (and the approximate gdp-clt). "
    "shuffle: each epoch a random permutation cut into ⌈N/B⌉ batches; balls-in-bins: each record in one "
    "uniformly chosen batch of the epoch. Both: substitution or zero-out neighbours, upper end √E/σ-GDP "
    "(no amplification assumed), certified lower end beside it.",
)
@grid_option(
    "--max-batch-size",
    allowed=COUNT,
    help="Truncated Poisson sampling: batches of more than B_max records are cut to B_max (with "
    "--sampling poisson; needs --dataset-size and --batch-size).",
)
@grid_option(
    "--examples-per-user",
    allowed=COUNT,
    help="User-level ε with example-level Poisson sampling: every user holds K examples, each sampled with "
    "probability q (add/remove of a user).",
)
@grid_option(
    "--users",
    allowed=COUNT,
    help="User-level sampling: U users, batches of --batch-size users, each user's summed contribution "
    "clipped; standard accounting over users with q = B/U (instead of --dataset-size).",
)
@click.option("--per-epoch", is_flag=True, help="One row per epoch (or per step count): the ε curve of training.")
@click.option(
    "--to",
    "to",
    type=click.Choice(["epsilon", "tradeoff", "attack"]),
    default="epsilon",
    help="epsilon (default): ε at δ. attack: certified bounds on the best membership-inference attack's TPR at "
    "--fpr and its advantage. tradeoff: the f-DP curve β(α) at --alpha (from the run's privacy loss distribution).",
)
@grid_option("--alpha", allowed=UNIT_CLOSED, help="Type I errors for --to tradeoff [default: 0:1:21].")
@grid_option("--fpr", allowed=UNIT_CLOSED, help="False-positive rates for --to attack [default: 0.001,0.01,0.1].")
@grid_option(
    "--target-advantage",
    allowed=PROBABILITY,
    help="Solve for an attack-risk target (σ, epochs/steps or batch size: the one left out, or --solve): the best "
    "attack's advantage TPR − FPR, in (0, 1).",
)
@grid_option(
    "--target-tpr", allowed=PROBABILITY, help="Solve for the best attack's TPR at --at-fpr (as --target-advantage)."
)
@grid_option("--at-fpr", allowed=PROBABILITY, help="The false-positive rate at which --target-tpr holds.")
@pld_width_option
@output_options
@budget_option
def plan_sgd(
    dataset_size,
    batch_size,
    rate,
    epochs,
    steps,
    sigma,
    delta,
    target_epsilon,
    solve,
    accountant,
    sampling,
    max_batch_size,
    examples_per_user,
    users,
    per_epoch,
    to,
    alpha,
    fpr,
    target_advantage,
    target_tpr,
    at_fpr,
    fmt,
    as_json,
):
    """ε of a DP-SGD run, or the σ / epochs / batch size for a target ε.

    Forward: ε after training as a certified interval from privacy loss
    distributions (pld, the default; RDP where PLD cannot answer, said on
    stderr). --accountant all adds RDP (Mironov, Talwar & Zhang 2019, a sound
    upper bound) and the GDP central-limit ε (Bu et al. 2020), labelled
    approximate. Inverse (--target-epsilon): the smallest noise multiplier,
    the largest number of epochs, or the largest batch size that meets the
    target; every answer is re-checked before it is printed.

    Poisson sampling (add/remove neighbours) is the default; --sampling
    without-replacement accounts fixed-size batches under substitution
    neighbours, by PLD of the subsampled trade-off C_q(G_{1/σ}). --sampling
    shuffle and balls-in-bins (each record in one batch per epoch),
    --max-batch-size (capped Poisson batches) and --examples-per-user
    (user-level ε) give each scheme's certified interval, each end with its
    method; --users accounts user-level sampling over users.

    \b
    Examples:
      dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 \\
                      --noise-multiplier 1.1 --delta 1e-5
      dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --target-epsilon 3
      dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --noise-multiplier 1.1 --target-epsilon 3
      dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 \\
                      --noise-multiplier 0.55 --sampling without-replacement
      dpcalc plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 \\
                      --noise-multiplier 1.1 --sampling shuffle
    """
    import numpy as np

    from dpcalc.cli import _common as c
    from dpcalc.cli import _schemes as sch
    from dpcalc.core import sgd
    from dpcalc.model import Column, Composed, Gaussian, Result, Subsampled

    exclusive(batch_size=batch_size, rate=rate)
    exclusive(epochs=epochs, steps=steps)
    exclusive(dataset_size=dataset_size, users=users)
    if users is not None and examples_per_user is not None:
        raise click.UsageError(
            "--users (sampling users) and --examples-per-user (sampling examples) cannot be combined: with user "
            "sampling the unit is the user and --examples-per-user does not apply."
        )
    scheme = sch.scheme_of(sampling, max_batch_size, examples_per_user)
    warnings: list[str] = []
    poisson = sampling == "poisson"
    notes: list[str] = [sch.first_note(scheme)]
    if scheme == "poisson":
        notes.append(sch.POISSON_ASSUMED)
    if users is not None:
        dataset_size = users
        notes.append(sch.USERS_NOTE)

    if dataset_size is None:
        if batch_size is not None:
            raise click.UsageError("--batch-size needs --dataset-size (or give --rate).")
        if epochs is not None:
            raise click.UsageError("--epochs needs --dataset-size (or give --steps).")
        if delta is None and to == "epsilon" and target_advantage is None and target_tpr is None:
            raise click.UsageError("Missing option '--delta': without --dataset-size there is no default δ.")
    if batch_size is not None and dataset_size is not None and max(batch_size) > min(dataset_size):
        raise click.UsageError(
            f"Invalid value for '--batch-size': {max(batch_size)} is larger than the dataset size {min(dataset_size)}."
        )
    if examples_per_user is not None and dataset_size is not None and max(examples_per_user) > min(dataset_size):
        # (A user's examples are records of the dataset that holds them: more than N is a typo, not a setting.)
        raise click.UsageError(
            f"Invalid value for '--examples-per-user': {max(examples_per_user):g} is larger than the dataset size "
            f"{min(dataset_size)} (a user's examples are records of the dataset)."
        )
    if delta is None and dataset_size is None:  # --to tradeoff|attack: no δ is read
        delta, delta_defaulted = (1e-5,), True
    elif delta is None:
        dd = sorted({float(sgd.default_delta(n)) for n in dataset_size})
        delta = tuple(dd) if len(dd) > 1 else (dd[0],)
        notes.append(
            "δ was not given: using the largest power of ten below 1/N (" + ", ".join(f"{d:g}" for d in dd) + ")."
        )
        delta_defaulted = True
    else:
        delta_defaulted = False
        if dataset_size is not None and max(delta) >= 1.0 / min(dataset_size):
            warnings.append(
                "δ is at least 1/N: a mechanism that publishes one random record outright meets such "
                "a δ; choose δ well below 1/N."
            )

    if scheme == "without-replacement":
        c.check_pld_delta(delta, "--sampling without-replacement", c.WOR_DELTA)
    if accountant == "rdp" and scheme == "without-replacement":
        raise click.UsageError(
            "Invalid value for '--accountant': rdp has no bound for --sampling without-replacement "
            "(use pld, gdp-clt or all)."
        )
    if accountant is None:
        engines = ["pld"]
    elif accountant == "all":
        engines = ["rdp", "pld", "gdp-clt"] if poisson else ["pld", "gdp-clt"]
    else:
        engines = [accountant]
    inputs = c.echo_inputs(
        dataset_size=dataset_size if users is None else None,
        batch_size=batch_size,
        rate=rate,
        epochs=epochs,
        steps=steps,
        noise_multiplier=sigma,
        delta=delta,
        target_epsilon=target_epsilon,
        solve=solve,
        accountant=accountant or "pld",
        sampling=sampling,
        users=users,
    )
    if scheme in sch.NEW_SCHEMES:
        return _scheme_run(locals())

    refuse_width_without_pld(accountant)
    if target_advantage is not None or target_tpr is not None or at_fpr is not None:
        exclusive(target_advantage=target_advantage, target_tpr=target_tpr, target_epsilon=target_epsilon)
        if at_fpr is not None and target_tpr is None:
            raise click.UsageError("--at-fpr goes with --target-tpr.")
        if target_tpr is not None:
            require("at-fpr", at_fpr, "--target-tpr holds at a false-positive rate")
            from dpcalc.core import attack

            # A target at or below its FPR is met by no noise: refused by the check calibrate gaussian uses (its
            # message), not left to a search that finds no σ — the lowest target against the highest FPR.
            attack.mu_for_tpr(min(target_tpr), max(at_fpr))
        if to != "epsilon":
            raise click.UsageError("--to reads a run; an attack-risk target solves for what is left out of it.")
        to = "risk-target"
    if to == "epsilon":
        refuse_unused("without --to tradeoff or --to attack", "alpha", "fpr")
    elif to == "risk-target":
        refuse_unused(
            "with an attack-risk target (it solves from the run's privacy loss distribution)",
            "alpha", "fpr", "per_epoch", "pld_width", "accountant",
        )  # fmt: skip
        if not delta_defaulted:
            raise click.UsageError("--delta is not used with an attack-risk target: it needs no δ; leave it out.")
        return _risk_inverse(locals())
    else:
        if to == "tradeoff":
            refuse_unused("with --to tradeoff (it reads the curve at --alpha)", "fpr")
        else:
            refuse_unused("with --to attack (it reads the attack at --fpr)", "alpha")
        refuse_unused(
            f"with --to {to} (attack readings come from the run's whole privacy loss distribution, not from ε at δ)",
            "target_epsilon",
            "per_epoch",
            "pld_width",
            "accountant",
        )
        if not delta_defaulted:
            raise click.UsageError(f"--delta is not used with --to {to}: attack readings need no δ; leave it out.")
    if target_epsilon is not None:
        refuse_unused(
            "with --target-epsilon (an inverse search answers one row per setting, to its own tolerance)",
            "per_epoch",
            "pld_width",
        )
        return _inverse(locals())
    refuse_unused("without --target-epsilon (it names what an inverse search solves for)", "solve")

    _require_forward(sigma, batch_size or rate, epochs or steps)
    m = c.mesh(
        dataset_size=dataset_size,
        batch_size=batch_size,
        rate=rate,
        epochs=epochs,
        steps=steps,
        sigma=sigma,
        delta=None if delta_defaulted else delta,
    )
    n_pts = next(iter(m.values())).size
    if delta_defaulted and dataset_size is not None:
        m["delta"] = np.asarray(sgd.default_delta(m["dataset_size"]), float).reshape(-1)
    q = m["rate"] if rate is not None else m["batch_size"] / m["dataset_size"]

    total_steps = _total_steps(m, steps)
    ep_total = m["epochs"] if epochs is not None else total_steps * q
    if to != "epsilon":
        return _risk(locals())
    if per_epoch:
        # The epochs the curve has rows for: ⌈E⌉, or the (exact) epochs begun in T steps.
        if epochs is not None:
            n_epochs = np.ceil(m["epochs"])
        else:
            kw = (
                dict(rate=m["rate"])
                if rate is not None
                else dict(dataset_size=m["dataset_size"], batch_size=m["batch_size"])
            )
            whole, frac = (np.asarray(x, float).reshape(-1) for x in sgd.whole_epochs(total_steps, **kw))
            n_epochs = whole + (frac > whole)

    # Which step counts to report: the end of training, or every epoch.
    points = []  # (index into mesh, epochs, steps)
    for i in range(n_pts):
        if not per_epoch:
            points.append((i, float(ep_total[i]), float(total_steps[i])))
            continue
        n_ep = int(n_epochs[i])
        if n_ep > MAX_CURVE_POINTS:
            raise click.UsageError(f"--per-epoch would print {n_ep} rows; at most {MAX_CURVE_POINTS} are allowed.")
        ts = _steps_for(m, np.arange(1.0, n_ep), np.full(max(n_ep - 1, 0), i)) if n_ep > 1 else np.zeros(0)
        for e in range(1, n_ep + 1):
            ep = min(float(e), float(ep_total[i]))
            t = total_steps[i] if e == n_ep else min(ts[e - 1], total_steps[i])
            points.append((i, ep, float(t)))
    if len(points) * len(engines) > 100_000:
        raise click.UsageError("the request would print more than 100000 rows; use fewer grid points.")
    idx = np.array([p[0] for p in points])
    t_arr = np.array([p[2] for p in points])
    qs, ss, ds = q[idx], m["sigma"][idx], m["delta"][idx]
    labels = [f"q={qs[k]:g}, σ={ss[k]:g}, T={int(t_arr[k])}, δ={ds[k]:g}" for k in range(idx.size)]
    rows = []
    by_engine: dict = {}  # engine -> (upper, lower or None, method array, bound array)
    best = None
    for e in engines:
        if e == "pld":
            # The tight engine (PLD, or its exact routes), and for the default answer the smaller of its
            # upper end and RDP's (sgd.best).
            # A curve or grid shares compositions (sgd.tight_curve): per (q, σ) at most sgd.CURVE_POINTS step
            # counts, and past sgd.DIRECT_POINTS compositions a lattice of sgd.GRID_POINTS settings; the rows
            # between are bracketed (ε is monotone in q, σ and T).
            best = sgd.best(qs, ss, t_arr, ds, sampling, curve=True, **c.pld_kw())
            best = c.refined_for_budget(sgd.refine_for_budget, best, (qs, ss, t_arr, ds), sampling, notes)
            t = best.tight
            bracketed = t.method == sgd.BRACKET
            why = c.WOR_WIDE if sampling == "without-replacement" else None
            # (The interval the row shows: its upper end the no-subsampling one where that is smaller.)
            t_up, t_meth = sgd.with_no_subsampling(t, ss, t_arr, ds, sampling)
            shown_met = t.met | bracketed | sgd.within_width(t.lower, t_up, c.pld_kw())
            warnings += c.width_warnings(labels, t.lower, t_up, shown_met, why)
            warnings += c.bracket_warnings(t)
            if engines == ["pld"]:
                by_engine[e] = (best.upper, best.lower, best.method, best.bound)
            else:
                # (The tight engine's row, with the same steps' no-subsampling bound where that is smaller.)
                t_bound = np.where(t_meth == "no-subsampling", "upper", t.bound).astype(object)
                by_engine[e] = (t_up, t.lower, t_meth, t_bound)
        else:
            eps = sgd.epsilon(qs, ss, t_arr, ds, e, sampling=sampling)
            by_engine[e] = (np.asarray(eps, float), None, np.full(idx.size, e, dtype=object), None)
    if not poisson and "pld" in engines:
        c.refuse_pld_gaps(best.tight.upper, qs, ss, t_arr, ds, "--sampling without-replacement")
    # No empty success: every point needs an answer from an engine asked for (a sound one where there is
    # one among them), else the command stops with the reason rather than print a partial table.
    sound_asked = [e for e in engines if e != "gdp-clt"] or engines
    answered = np.zeros(idx.size, dtype=bool)
    for e in sound_asked:
        answered |= np.isfinite(np.asarray(by_engine[e][0], float))
    if not answered.all():
        bad = np.flatnonzero(~answered)
        k = int(bad[0])
        more = f" (and {bad.size - 1} more rows)" if bad.size > 1 else ""
        raise click.UsageError(
            f"no engine can answer σ = {ss[k]:g} (q = {qs[k]:g}, T = {int(t_arr[k])}, δ = {ds[k]:g}){more}: the "
            "privacy loss is beyond what can be represented (every bound overflows); use a larger --noise-multiplier."
        )
    if best is not None:
        failed = [k for k in range(idx.size) if not np.isfinite(best.tight.upper[k])]
        if failed:
            shown = ", ".join(labels[k] for k in failed[:3])
            if len(failed) > 3:
                shown += f" and {len(failed) - 3} more"
            then = (
                "those rows are by the smaller of rdp and no-subsampling, without a certified lower end."
                if engines == ["pld"]
                else "see the rdp row, and the no-subsampling one."
            )
            warnings.append(f"{c.pld_declined(shown)}; {then}")
        if engines == ["pld"]:
            smaller = [k for k in range(idx.size) if best.method[k] == "rdp" and np.isfinite(best.tight.upper[k])]
            if smaller:
                warnings.append(
                    f"RDP's bound is below the PLD interval's upper end for {labels[smaller[0]]}"
                    + (f" and {len(smaller) - 1} more rows" if len(smaller) > 1 else "")
                    + " (the interval is wider than asked there): the answer is the smaller sound bound."
                )
    from dpcalc.core import gdp as g

    mu = g.clt_mu(qs, ss, t_arr)
    sound = [e for e in engines if e != "gdp-clt"]
    for k, (i, ep, tt) in enumerate(points):
        base = {
            "dataset_size": int(m["dataset_size"][i]) if dataset_size is not None else None,
            "batch_size": int(m["batch_size"][i]) if batch_size is not None else None,
            "rate": c.f(q[i]),
            "noise_multiplier": c.f(m["sigma"][i]),
            "epochs": ep,
            "steps": int(tt),
            "delta": c.f(m["delta"][i]),
        }
        finite = {e: float(by_engine[e][0][k]) for e in sound if np.isfinite(by_engine[e][0][k])}
        # On a tie the tight engine's row is the answer: it carries the certified lower end too.
        tightest = min(finite, key=lambda e: (finite[e], e != "pld")) if finite else None
        for e in engines:
            up, lo, meth, bnd = by_engine[e]
            if not np.isfinite(up[k]):
                continue
            row = dict(base, epsilon=c.f(up[k]), mu=c.f(mu[k]) if e == "gdp-clt" else None)
            if lo is not None and np.isfinite(lo[k]):
                row["epsilon_lower"] = c.f(lo[k])
                row["epsilon_width"] = c.f(up[k] - lo[k])
            else:
                row["epsilon_lower"] = None
            if len(sound) > 1:
                row["tightest"] = e == tightest
            row["method"] = str(meth[k])
            row["bound"] = str(bnd[k]) if bnd is not None else sgd.ACCOUNTANTS[e].bound
            rows.append(row)
    if "pld" in engines:
        notes.append(
            "ε ≥ is a certified lower bound and ε a certified upper bound on the true ε (pld: privacy loss "
            "distributions, pessimistic and optimistic discretisation; gdp: q = 1, exactly μ-GDP; "
            "privacy-profile: one step, its exact δ(ε); total-variation: δ is at least the steps' total variation "
            "distance, so ε = 0)."
        )
        notes += sgd.route_notes(rows)
    if "gdp-clt" in engines:
        shown = [e for e in engines if e != "gdp-clt" and np.isfinite(np.asarray(by_engine[e][0], float)).any()]
        warnings.append(
            "gdp-clt is the central-limit approximation: it can be below the true ε (Gopi et al. 2021)"
            + (f"; the {' and '.join(shown)} rows are the guarantees." if shown else ".")
        )
    cols = [
        Column("dataset_size", "N", "int"),
        Column("batch_size", "B", "int"),
        Column("rate", "q"),
        Column("noise_multiplier", "σ"),
        Column("epochs", "epochs"),
        Column("steps", "steps", "int"),
        Column("delta", "δ"),
        Column("mu", "μ (CLT)", safe="up"),
        Column("epsilon_lower", "ε ≥ (certified)", safe="down"),
        Column("epsilon", "ε", safe="up"),
        Column("tightest", "tightest", "bool"),
        Column("method", "method", "text"),
        Column("bound", "bound", "text"),
    ]
    cols = [col for col in cols if any(r.get(col.key) is not None for r in rows)]
    objects = [
        Composed(
            (
                (
                    Subsampled(
                        Gaussian(c.f(m["sigma"][i]), 1.0),
                        c.f(q[i]),
                        sampling,
                        "add-remove" if poisson else "substitution",
                    ),
                    int(total_steps[i]),
                ),
            )
        )
        for i in range(n_pts)
    ]
    result = Result(
        "plan-sgd", inputs, tuple(cols), tuple(rows), tuple(warnings), c.releases_once(objects), tuple(notes)
    )
    return c.emit(result, fmt, as_json)


def _require_forward(sigma, batch, epochs) -> None:
    """A forward answer needs σ, the batch size (or rate) and the epochs (or steps): name the first missing."""
    for name, x in (("--noise-multiplier", sigma), ("--batch-size or --rate", batch), ("--epochs or --steps", epochs)):
        if x is None:
            raise click.UsageError(f"Missing option {name} (or give --target-epsilon to solve for it).")


def _total_steps(m: dict, steps):
    """T per row: --steps as given, or ⌈E·N/B⌉ from --epochs — refused (exit 2, naming --epochs) past 2^53,
    the most steps dpcalc accounts for (--steps itself is capped there by its option)."""
    import numpy as np

    if steps is not None:
        return m["steps"]
    total = _steps_for(m, m["epochs"])
    over = total > MAX_COUNT
    if np.any(over):
        i = int(np.argmax(over))
        raise click.BadParameter(
            f"{float(m['epochs'][i]):g} epochs are {float(total[i]):.4g} steps, more than 2^53 (the most steps "
            "dpcalc accounts for); give fewer epochs.",
            param_hint="'--epochs'",
        )
    return total


def _steps_for(m: dict, ep, rows=slice(None)):
    """T = ⌈E/q⌉ = ⌈E·N/B⌉ steps for ``ep`` epochs of the mesh's ``rows`` (⌈E/q⌉ where --rate was given),
    exactly: a step count is never rounded down, and ⌈E/q⌉ is never ⌈E·N/round(qN)⌉, which can be fewer."""
    import numpy as np

    from dpcalc.core import sgd

    if "rate" in m:
        return np.asarray(sgd.steps_for_epochs_at_rate(ep, m["rate"][rows]), float).reshape(-1)
    return np.asarray(sgd.steps_for_epochs(ep, m["dataset_size"][rows], m["batch_size"][rows]), float).reshape(-1)


def _pick_solve(v: dict, target: str) -> str:
    """What an inverse search solves for (--solve, or the one option left out), with the options it needs
    checked: a one-line usage error otherwise. ``target`` names the target option in messages."""
    dataset_size, batch_size, rate, epochs, steps, sigma = (
        v[k] for k in ("dataset_size", "batch_size", "rate", "epochs", "steps", "sigma")
    )
    solve = v["solve"]
    if solve == "auto":
        missing = [
            name
            for name, val in (
                ("noise-multiplier", sigma),
                ("epochs", epochs or steps),
                ("batch-size", batch_size or rate),
            )
            if val is None
        ]
        if len(missing) != 1:
            raise click.UsageError(
                f"With {target} leave out exactly one of --noise-multiplier, --epochs/--steps, "
                "--batch-size/--rate (or say which with --solve)."
                if missing
                else f"With {target}, leave out the option to solve for (or use --solve)."
            )
        solve = missing[0]
    if solve == "noise-multiplier":
        require("epochs", epochs or steps, "or --steps")
        require("batch-size", batch_size or rate, "or --rate")
        if sigma is not None:
            raise click.UsageError("--noise-multiplier is what --solve noise-multiplier finds; leave it out.")
    elif solve == "epochs":
        require("noise-multiplier", sigma)
        require("batch-size", batch_size or rate, "or --rate")
        if epochs is not None or steps is not None:
            raise click.UsageError("--epochs/--steps is what --solve epochs finds; leave it out.")
    else:
        require("dataset-size", dataset_size, "solving for a batch size needs N")
        require("noise-multiplier", sigma)
        require("epochs", epochs, "solving for a batch size needs --epochs")
        if batch_size is not None or rate is not None:
            raise click.UsageError("--batch-size/--rate is what --solve batch-size finds; leave it out.")
        # The search may try any B from 1: its steps E·N/B stay within the 2^53 dpcalc accounts for.
        most = max(float(e) for e in epochs) * max(float(x) for x in dataset_size)
        if most > MAX_COUNT:
            raise click.BadParameter(
                f"solving for a batch size tries B = 1, where {max(epochs):g} epochs of {max(dataset_size):g} records "
                f"are {most:.4g} steps, more than 2^53 (the most steps dpcalc accounts for); give fewer epochs.",
                param_hint="'--epochs'",
            )
    return solve


def _inverse(v: dict) -> int:
    import numpy as np

    from dpcalc.cli import _common as c
    from dpcalc.core import sgd
    from dpcalc.model import Column, Result

    dataset_size, batch_size, rate, epochs, steps, sigma = (
        v[k] for k in ("dataset_size", "batch_size", "rate", "epochs", "steps", "sigma")
    )
    engines, warnings, notes = v["engines"], v["warnings"], v["notes"]
    sampling = v["sampling"]
    solve = _pick_solve(v, "--target-epsilon")

    m = c.mesh(
        dataset_size=dataset_size,
        batch_size=batch_size,
        rate=rate,
        epochs=epochs,
        steps=steps,
        sigma=sigma,
        target=v["target_epsilon"],
        delta=v["delta"] if len(v["delta"]) > 1 or dataset_size is None or not v["delta_defaulted"] else None,
    )
    n = m["target"].size
    if "delta" not in m:
        m["delta"] = np.asarray(sgd.default_delta(m["dataset_size"]), float).reshape(-1)
    if batch_size is not None:
        q = m["batch_size"] / m["dataset_size"]
    elif rate is not None:
        q = m["rate"]
    else:
        q = None
    if steps is not None:
        t = m["steps"]
    elif epochs is not None and (batch_size is not None or rate is not None):
        t = _total_steps(m, None)  # as forward answers count them
    else:
        t = None

    poisson = sampling == "poisson"

    def accountant(engine):
        # The default answer is the smallest sound one: PLD's, or RDP's where that is smaller (as forward).
        return "best" if engine == "pld" and engines == ["pld"] and poisson else engine

    def solve_by(engine):
        acc = accountant(engine)
        if solve == "noise-multiplier":
            return sgd.solve_sigma(q, t, m["delta"], m["target"], acc, sampling=sampling)
        if solve == "epochs":
            return sgd.solve_steps(q, m["sigma"], m["delta"], m["target"], acc, sampling=sampling)
        return sgd.solve_batch_size(
            m["dataset_size"], m["epochs"], m["sigma"], m["delta"], m["target"], acc, sampling=sampling
        )

    def show(x):
        return f"{x:.6g}"

    rows = []
    for e in engines:
        sol = solve_by(e)
        who = "none of pld, no-subsampling and rdp" if accountant(e) == "best" else e
        n_br = int(np.sum(sol.status == sgd.BRACKETED))
        if n_br:
            warnings.append(
                f"[{e}] {n_br} rows (search: bracketed) lie between the points that are searched (at most "
                f"{sgd.TARGET_POINTS} targets per setting; a grid that would need more than {sgd.SETTINGS_DIRECT} "
                f"searches, a lattice of at most {sgd.SETTINGS_POINTS} of its settings and targets): the answer is "
                "the one found for the nearest point searched with as much privacy loss or more and a target no "
                "larger, so it meets theirs (ε at answer is that point's bound, an upper bound on theirs); "
                "checked_next is the value checked beyond the answer of the nearest point with as little loss or "
                "less and a target no smaller, where it misses (epsilon_next is that point's bound). found is no: "
                f"the two are further apart than a search's tolerance. Give at most {sgd.TARGET_POINTS} targets per "
                "setting and at most "
                f"{sgd.SETTINGS_DIRECT} searches in all to have each row searched."
            )
        for i in range(n):
            found = bool(sol.found[i])
            status = str(sol.status[i])
            has = status != sgd.NONE  # a checked point that meets the target
            meth = str(sol.method[i]) if has and sol.method[i] is not None else e
            row = {
                "target_epsilon": c.f(m["target"][i]),
                "delta": c.f(m["delta"][i]),
                "dataset_size": int(m["dataset_size"][i]) if dataset_size is not None else None,
                "rate": c.f(q[i]) if q is not None else None,
                "batch_size": int(m["batch_size"][i]) if batch_size is not None else None,
                "noise_multiplier": c.f(m["sigma"][i]) if sigma is not None else None,
                "steps": int(t[i]) if t is not None else None,
                "epochs": c.f(m["epochs"][i]) if epochs is not None else None,
                "found": found,
                "search": status,
                "method": meth,
                "bound": sgd.TIGHT_METHODS.get(meth, sgd.ACCOUNTANTS[e].bound)
                if e != "gdp-clt"
                else sgd.ACCOUNTANTS[e].bound,
            }
            val = float(sol.value[i])
            nxt = float(sol.next_value[i])
            e_next = float(sol.next_epsilon[i])
            if solve == "noise-multiplier":
                row["noise_multiplier"] = val if has else None
                row["checked_next"] = nxt if np.isfinite(nxt) else None
            elif solve == "epochs":
                row["steps"] = int(val) if has else None
                row["checked_next"] = int(nxt) if np.isfinite(nxt) else None
                if dataset_size is not None and has:
                    # Whole epochs in T steps, exactly (never rounded up), and the fraction rounded down.
                    kw = (
                        dict(rate=q[i])
                        if batch_size is None
                        else dict(dataset_size=m["dataset_size"][i], batch_size=m["batch_size"][i])
                    )
                    whole, frac = sgd.whole_epochs(val, **kw)
                    row["epochs"] = float(whole)
                    row["epochs_fractional"] = float(frac)
            else:
                row["batch_size"] = int(val) if has else None
                row["checked_next"] = int(nxt) if np.isfinite(nxt) else None
                if has:
                    row["rate"] = c.f(val / m["dataset_size"][i])
                    row["steps"] = int(sgd.steps_for_epochs(m["epochs"][i], m["dataset_size"][i], val))
            row["epsilon"] = float(sol.epsilon[i]) if has and np.isfinite(sol.epsilon[i]) else None
            row["epsilon_next"] = e_next if np.isfinite(e_next) else None
            w = float(sol.width[i])
            row["pld_width"] = w if np.isfinite(w) else None
            at = f"ε = {m['target'][i]:g} at δ = {m['delta'][i]:g}"
            name = {"noise-multiplier": "σ", "epochs": "T", "batch-size": "B"}[solve]
            if status == sgd.NONE:
                if solve == "noise-multiplier":
                    floor = f"; ε there is {show(e_next)} at best" if np.isfinite(e_next) else ""
                    why = f"no noise multiplier up to {sgd.SIGMA_MAX:g} meets {at}{floor}"
                else:
                    why = {"epochs": "even a single step exceeds", "batch-size": "even a batch size of 1 exceeds"}[
                        solve
                    ] + f" {at}"
                warnings.append(f"[{e}] {why}.")
            elif status == sgd.EDGE:
                warnings.append(
                    f"[{e}] the target {at} is met by {name} = {show(val)}, but dpcalc cannot account "
                    + (
                        f"σ = {show(nxt)} or any smaller σ ({who} stops answering there: the privacy loss is beyond "
                        "what it can represent)"
                        if solve == "noise-multiplier"
                        else f"{name} = {show(nxt)} ({who} stops answering there)"
                    )
                    + "; the optimum may lie beyond, so found is no."
                )
            elif status == sgd.RANGE_END:
                if solve == "noise-multiplier":
                    warnings.append(
                        f"[{e}] the target {at} is met by every σ down to {sgd.SIGMA_FLOOR:g}, the smallest σ dpcalc "
                        "searches; found is no."
                    )
                elif solve == "epochs":
                    warnings.append(
                        f"[{e}] the target {at} is met by every step count up to {sgd.MAX_STEPS:g}, the most dpcalc "
                        "searches; found is no."
                    )
                else:
                    warnings.append(
                        f"[{e}] every batch size up to the dataset size N = {int(val)} meets {at} (a batch cannot be "
                        "larger): B = N is the answer."
                    )
            if solve == "epochs" and has and row.get("epochs") == 0.0:
                warnings.append(f"[{e}] less than one epoch fits in ε = {m['target'][i]:g}.")
            rows.append(row)
    tol = {
        "noise-multiplier": "σ is the smallest noise multiplier to a relative "
        + ", ".join(f"{sgd.SIGMA_RTOL[accountant(x)]:g} ({x})" for x in engines)
        + ": σ/(1 + that) or a σ between was evaluated and misses the target (checked_next, epsilon_next in JSON)",
        "epochs": "T is the largest number of steps to within "
        + ", ".join(
            ("one step" if sgd.STEPS_RTOL[accountant(x)] == 0 else f"max(1, {sgd.STEPS_RTOL[accountant(x)]:g}·T) steps")
            + f" ({x})"
            for x in engines
        )
        + ": that many more steps were evaluated and miss the target (checked_next, epsilon_next in JSON); "
        "epochs are the whole epochs in T",
        "batch-size": "B is the largest batch size: B + 1 was evaluated and misses the target (checked_next, "
        "epsilon_next in JSON)",
    }[solve]
    notes.append(
        f"Solved for {solve.replace('-', ' ')} over its whole range ("
        + {
            "noise-multiplier": f"σ up to {sgd.SIGMA_MAX:g}, and down to where dpcalc stops answering",
            "epochs": f"1 to {sgd.MAX_STEPS:g} steps",
            "batch-size": "batch sizes 1 to N",
        }[solve]
        + f"). {tol}. The answer is re-checked with the bound that reports its ε (found: both sides checked); "
        "otherwise the search column says why not (none: not met in the range; edge: the next value cannot be "
        "accounted, or only by RDP's looser fallback; range-end: met at the end of the range)."
    )
    fine = sorted(
        {r["pld_width"] for r in rows if r["pld_width"] is not None and r["pld_width"] < sgd.INVERSE_WIDTHS[0]}
    )
    if fine:
        notes.append(
            "Targets below 0.01 whose answer the forward command's default width held back were searched again with "
            "PLD at a finer width (--pld-width "
            + ", ".join(f"{w:g}" for w in fine)
            + ": the largest whose absolute width, a tenth of it, is at most 1 % of the target, and at least "
            + f"{sgd.INVERSE_WIDTHS[-1]:g}, so below a target of 1e-4 the interval can be wider than 1 % of it) — "
            "where that width's quick bound met the target at the value the first search found missing it. The forward "
            "command at the answer gives the same ε with that --pld-width (column pld_width); at its default width "
            "its upper end can be above the target."
        )
    if any(r["search"] == sgd.BRACKETED for r in rows):
        notes.append(
            "search bracketed: a row between the points searched (targets, or a lattice of settings and targets); "
            "the answer meets its target and checked_next misses it, as a search's, but they are further apart than "
            "its tolerance."
        )
    if engines == ["pld"] and poisson:
        notes.append(
            "The default bound is the smallest of PLD's certified upper end, RDP's and the same steps' without "
            "subsampling (no-subsampling), as for forward answers."
        )
    notes += sgd.route_notes(rows)
    if "gdp-clt" in engines:
        warnings.append("gdp-clt answers are approximate and may break the target; plan with the pld or rdp row.")
    safe = {"noise_multiplier": "up", "steps": "down", "epochs": "down", "batch_size": "down"}
    cols = [
        Column("dataset_size", "N", "int"),
        Column("target_epsilon", "target ε"),
        Column("delta", "δ"),
        Column("batch_size", "B", "int", safe["batch_size"] if solve == "batch-size" else "nearest"),
        Column("rate", "q", safe="down" if solve == "batch-size" else "nearest"),
        Column("noise_multiplier", "σ", safe="up" if solve == "noise-multiplier" else "nearest"),
        Column("epochs", "epochs", safe="down" if solve == "epochs" else "nearest"),
        Column("steps", "steps", "int"),
        Column("epsilon", "ε at answer", safe="up"),
        Column("found", "found", "bool"),
        Column("search", "search", "text"),
        Column("method", "method", "text"),
        Column("bound", "bound", "text"),
    ]
    if fine:  # (a column where some answer was searched at a finer width: the --pld-width that reproduces it)
        cols.append(Column("pld_width", "PLD width"))
    cols = [col for col in cols if any(r.get(col.key) is not None for r in rows)]
    result = Result("plan-sgd", v["inputs"], tuple(cols), tuple(rows), tuple(dict.fromkeys(warnings)), (), tuple(notes))
    return c.emit(result, v["fmt"] if not v["as_json"] else "json", False)


def _risk(v: dict) -> int:
    """plan-sgd --to tradeoff|attack: the run's attack-risk readings (dpcalc.risk), one row per setting and point."""
    from dpcalc import risk
    from dpcalc.cli import _common as c
    from dpcalc.cli.options import parse_grid
    from dpcalc.model import Column, Composed, Gaussian, Result, Subsampled

    m, q, total_steps, ep_total, to = v["m"], v["q"], v["total_steps"], v["ep_total"], v["to"]
    poisson = v["sampling"] == "poisson"
    points = v["alpha"] or parse_grid("0:1:21") if to == "tradeoff" else v["fpr"] or parse_grid("0.001,0.01,0.1")
    n = q.size
    if n * len(points) > 100_000:
        raise click.UsageError("the request would print more than 100000 rows; use fewer grid points.")
    objects, bases = [], []
    for i in range(n):
        bases.append(
            {
                "dataset_size": int(m["dataset_size"][i]) if v["dataset_size"] is not None else None,
                "batch_size": int(m["batch_size"][i]) if v["batch_size"] is not None else None,
                "rate": c.f(q[i]),
                "noise_multiplier": c.f(m["sigma"][i]),
                "epochs": float(ep_total[i]),
                "steps": int(total_steps[i]),
            }
        )
        inner = Gaussian(c.f(m["sigma"][i]), 1.0)
        step = inner if q[i] >= 1 else Subsampled(
            inner, c.f(q[i]), "poisson" if poisson else "without-replacement",
            "add-remove" if poisson else "substitution",
        )  # fmt: skip
        objects.append(Composed(((step, int(total_steps[i])),)))
    # A grid of more than risk.GRID_RUNS sampled runs is read on a lattice of them, the rows between bracketed.
    try:
        cols, rows, notes_r, warns = risk.sgd_rows(q, m["sigma"], total_steps, v["sampling"], to, points, bases)
    except risk.RunTooLarge as exc:
        rq, rs, rt = exc.run
        raise click.UsageError(
            f"the privacy loss distribution of q = {rq:g}, σ = {rs:g}, T = {rt} "
            "does not fit in memory; use fewer steps or a larger noise multiplier."
        ) from None
    notes = list(v["notes"])
    notes += [x for x in notes_r if x not in notes]
    keys = {k for r in rows for k in r}
    head = [
        Column("dataset_size", "N", "int"),
        Column("batch_size", "B", "int"),
        Column("rate", "q"),
        Column("noise_multiplier", "σ"),
        Column("epochs", "epochs", safe="up"),
        Column("steps", "steps", "int"),
    ]
    head = [col for col in head if any(r.get(col.key) is not None for r in rows)]
    cols = head + [col for col in cols if col.key in keys]
    cols += [Column("method", "method", "text"), Column("bound", "bound", "text")]
    result = Result(
        command="plan-sgd",
        inputs=c.echo_inputs(
            dataset_size=v["dataset_size"],
            batch_size=v["batch_size"],
            rate=v["rate"],
            epochs=v["epochs"],
            steps=v["steps"],
            noise_multiplier=v["sigma"],
            sampling=v["sampling"],
            to=to,
            alpha=v["alpha"],
            fpr=v["fpr"],
        ),  # fmt: skip
        columns=tuple(cols),
        rows=tuple(rows),
        warnings=tuple(v["warnings"]) + tuple(warns),
        notes=tuple(x for x in notes if not x.startswith("δ was not given")),
        objects=c.releases_once(objects),
    )
    return c.emit(result, v["fmt"], v["as_json"])


#: An attack-risk target grid (``--target-advantage``/``--target-tpr``) of more distinct searches than this is
#: searched on a lattice of at most this many (:func:`_risk_lattice`).
RISK_SEARCHES = 32


def _risk_lattice(solve: str, points: list, search, is_any) -> list:
    """``search(point)`` for each row's point (q, σ, T, N, epochs, FPR, target; None where not used), each distinct
    point once. More than :data:`RISK_SEARCHES` distinct points (other than those every σ meets, ``is_any``,
    answered on their own at no cost): searched on a lattice of at most RISK_SEARCHES of them — spread evenly in
    log scale, both ends of every parameter kept, each dataset size of a batch-size search kept — and the others
    bracketed. The attack's advantage and its TPR at an FPR grow with q, T, the epochs and the FPR and fall with
    σ, at any fixed answer (a run with less privacy loss is a post-processing of one with more, step by step),
    and a larger target is easier to meet. So the answer found for the nearest lattice point H with as much loss
    or more and a target no larger meets the row's target too (H's certified bound at it, the row's achieved
    value, is an upper bound on the row's); and the value checked beyond the answer of the nearest point E with as
    little loss or less and a target no smaller misses E's target, by E's bound. Status ``bracketed``. Where H's
    answer is at the end of the range (range-end), so is the row's; where nothing meets E's target (none),
    nothing meets the row's: either is copied. A row whose points could not be searched (a lattice point no row
    asked for may not fit) or are neither of those is searched on its own."""
    import numpy as np

    from dpcalc.core import sgd

    done: dict = {}
    todo = [p for p in dict.fromkeys(points) if not is_any(p)]
    if len(todo) <= RISK_SEARCHES:
        return [_memo(done, search, p) for p in points]
    # (index in the point, direction: +1 more loss as it grows, −1 less, 0 kept exact)
    axes = {
        "noise-multiplier": [(0, 1), (2, 1), (5, 1), (6, -1)],
        "epochs": [(0, 1), (1, -1), (5, 1), (6, -1)],
        "batch-size": [(3, 0), (4, 1), (1, -1), (5, 1), (6, -1)],
    }[solve]
    axes = [(k, d) for k, d in axes if todo[0][k] is not None]
    dirs = [d for _, d in axes]
    picks = sgd.lattice_picks([np.unique([p[k] for p in todo]) for k, _ in axes], dirs, RISK_SEARCHES)
    if picks is None:
        return [_memo(done, search, p) for p in points]  # (too many dataset sizes to keep apart: row by row)
    # (A lattice mostly of settings no row asked for — parameters that move together, as q and T of a dataset-size
    # grid — would bracket rows by far harder corners: such a grid is searched row by row, see sgd._mostly_asked.)
    setting = [a for a, (idx, _) in enumerate(axes) if idx != 6]
    lattice_settings = [g.ravel() for g in np.meshgrid(*(picks[a] for a in setting), indexing="ij")]
    if not sgd._mostly_asked([[p[axes[a][0]] for p in todo] for a in setting], lattice_settings):
        return [_memo(done, search, p) for p in points]
    shape = tuple(p.size for p in picks)
    lattice = {}
    for combo in np.ndindex(*shape):
        lp = [None] * 7
        for (idx, _), p, j in zip(axes, picks, combo):
            lp[idx] = float(p[j])
        try:
            lattice[combo] = _memo(done, search, tuple(lp))
        except click.UsageError:
            lattice[combo] = None  # (no answer from this point: rows that would take one are searched alone)
    out = []
    for pt in points:
        if is_any(pt):
            out.append(_memo(done, search, pt))
            continue
        hard, easy, on = sgd.nearest_picks([pt[idx] for idx, _ in axes], picks, dirs)
        h, e = lattice[tuple(int(j) for j in hard)], lattice[tuple(int(j) for j in easy)]
        if on and h is not None:
            out.append(h)
        elif h is not None and h[2] == "range-end":
            out.append(h)
        elif e is not None and e[2] == "none":
            out.append(e)
        elif h is not None and e is not None and h[2] == "found" and e[2] == "found" and not on:
            out.append((h[0], e[1], sgd.BRACKETED, h[3], e[4]))
        else:
            out.append(_memo(done, search, pt))
    return out


def _memo(done: dict, search, p):
    if p not in done:
        done[p] = search(p)
    return done[p]


def _risk_inverse(v: dict) -> int:
    """plan-sgd --target-advantage | --target-tpr --at-fpr: what is missing — the smallest noise multiplier
    (searched in log σ to a relative 1e-3), or the most steps / the largest batch size (whole numbers, to a
    relative 1e-3 or one) — whose certified attack bound meets the target, re-checked at full accuracy on
    both sides."""
    import numpy as np

    from dpcalc import risk
    from dpcalc.cli import _common as c
    from dpcalc.core import sgd
    from dpcalc.model import Column, Result

    rate, batch_size, dataset_size, epochs, steps = (
        v[k] for k in ("rate", "batch_size", "dataset_size", "epochs", "steps")
    )
    solve = _pick_solve(v, "an attack-risk target")
    target = v["target_advantage"] if v["target_advantage"] is not None else v["target_tpr"]
    label = "advantage" if v["target_advantage"] is not None else "tpr"
    m = c.mesh(
        dataset_size=dataset_size, batch_size=batch_size, rate=rate, epochs=epochs, steps=steps, sigma=v["sigma"],
        target=target, at_fpr=v["at_fpr"],
    )  # fmt: skip
    fpr = m.get("at_fpr")
    rtol = 1e-3
    n_rows = m["target"].size

    # Each row's parameters as one point: (q, σ, T, N, epochs, FPR, target), None where the solve does not use
    # it (the solved quantity). Searches run on points, so that a lattice of them (below) can be searched too.
    nan = np.full(n_rows, np.nan)
    pq = (m["rate"] if rate is not None else m["batch_size"] / m["dataset_size"]) if solve != "batch-size" else nan
    pt = np.asarray(_total_steps(m, steps), float) if solve == "noise-multiplier" else nan
    ps = np.asarray(m["sigma"], float) if solve != "noise-multiplier" else nan
    pn = np.asarray(m["dataset_size"], float) if solve == "batch-size" else nan
    pe = np.asarray(m["epochs"], float) if solve == "batch-size" else nan
    pf = np.asarray(fpr, float) if fpr is not None else nan
    pg = np.asarray(m["target"], float)

    def point(i):
        return tuple(None if np.isnan(a[i]) else float(a[i]) for a in (pq, ps, pt, pn, pe, pf, pg))

    def run_of(p, x):
        """(q, σ, T) of point p with the solved quantity at x."""
        if solve == "noise-multiplier":
            return p[0], float(x), int(p[2])
        if solve == "epochs":
            return p[0], p[1], int(x)
        t = sgd.steps_for_epochs(p[4], p[3], float(x))
        return float(x) / p[3], p[1], int(np.asarray(t).reshape(-1)[0])

    def upper(p, x, quick):
        q, sig, t = run_of(p, x)
        f = None if fpr is None else p[5]
        lo, hi = risk.attack_bounds(q, sig, t, f, v["sampling"], quick=quick)
        return float(hi[0])

    def meets(p, x, quick=True):
        u = upper(p, x, quick)
        return np.isfinite(u) and u <= p[6]

    def smallest_sigma(p):
        hi_s = 1.0
        while not meets(p, hi_s):
            hi_s *= 4
            if hi_s > 1e6:
                raise click.UsageError(f"no noise multiplier up to 1e6 meets the {label} target {p[6]:g}.")
        lo_s = hi_s
        while meets(p, lo_s):
            lo_s /= 4
            if lo_s < 1e-3:
                break
        while hi_s / lo_s > 1 + rtol:
            mid = float(np.sqrt(hi_s * lo_s))
            if meets(p, mid):
                hi_s = mid
            else:
                lo_s = mid
        # Re-check with the full-accuracy bound; step up until it holds there too.
        for _ in range(64):
            if meets(p, hi_s, quick=False):
                return hi_s, hi_s / (1 + rtol), "found"
            hi_s *= 1 + rtol
        raise click.UsageError(
            f"the {label} target {p[6]:g} could not be re-checked at full accuracy near σ = {hi_s:.4g} "
            "(the privacy loss distribution does not fit); use fewer steps."
        )

    def largest_whole(p, top):
        """Largest whole x in [1, top] meeting the target (the bound grows with x), the next value checked
        above it, and the search status (found / none / range-end)."""
        if not meets(p, 1, quick=False):
            return 0, 1, "none"
        ok = 1
        bad = None
        while ok < top:
            x = min(2 * ok, top)
            if meets(p, x):
                ok = x
            else:
                bad = x
                break
        if bad is None:
            ok = top
        else:
            while bad - ok > max(1, int(rtol * ok)):
                mid = (ok + bad) // 2
                if meets(p, mid):
                    ok = mid
                else:
                    bad = mid
        for _ in range(64):  # re-check at full accuracy; step down until it holds
            if ok <= 1 or meets(p, ok, quick=False):
                break
            ok = max(1, ok - max(1, int(rtol * ok)))
        else:
            raise click.UsageError(
                f"the {label} target {p[6]:g} could not be re-checked at full accuracy near {ok}; use fewer steps."
            )
        if ok >= top:
            return int(top), None, "range-end"
        return int(ok), int(ok + max(1, int(rtol * ok))), "found"

    def noise_free_bound(p):
        """For Poisson sampling, or batches drawn without replacement at each step, a bound on the advantage (TPR
        at FPR: FPR plus it) that holds at every σ: the record joins some batch with probability p = 1 − (1 − q)^T
        (steps drawn independently), and otherwise the outputs are identically distributed, so the two runs are
        within total variation p ((0, p)-DP, both directions). Rounded up."""
        if solve != "noise-multiplier":
            return np.inf
        q, _, t = run_of(p, 1.0)
        if v["sampling"] not in ("poisson", "without-replacement") or q >= 1:
            return np.inf
        pr = float(-np.expm1(t * np.log1p(-q))) * (1 + 1e-12)
        return pr if fpr is None else p[5] + pr

    def search(p):
        """(answer, next value checked, status, the bound at the answer, the bound at the next value)."""
        if noise_free_bound(p) <= p[6]:
            return None, None, "any", noise_free_bound(p), None
        if solve == "noise-multiplier":
            x, nxt_x, status = smallest_sigma(p)
        elif solve == "epochs":
            x, nxt_x, status = largest_whole(p, int(min(sgd.MAX_STEPS, 1e7)))
        else:
            x, nxt_x, status = largest_whole(p, int(p[3]))
        got = upper(p, x, False) if status != "none" else None
        nxt = upper(p, nxt_x, False) if nxt_x is not None else None
        return x, nxt_x, status, got, nxt

    def is_any(p):
        return noise_free_bound(p) <= p[6]

    answers = _risk_lattice(solve, [point(i) for i in range(n_rows)], search, is_any)
    rows, warnings = [], []
    n_br = 0
    for i in range(n_rows):
        p = point(i)
        x, nxt_x, status, got, nxt = answers[i]
        n_br += status == sgd.BRACKETED
        if status == "any":
            # Every σ meets the target (the search would walk down to σ = 1e-3 through ever costlier PLDs and
            # report that as "the smallest"): no noise multiplier is needed for it.
            warnings.append(
                f"every noise multiplier meets the {label} target {p[6]:.16g}: a record joins a batch with "
                f"probability {got - (0 if fpr is None else p[5]):.6g} over the run, "
                f"which bounds the {label} whatever the noise."
            )
        q, sig, t = run_of(p, x if status not in ("none", "any") else 1)
        if status == "none":
            one = "one step" if solve == "epochs" else "a batch size of 1"
            warnings.append(f"even {one} exceeds the {label} target {p[6]:g}.")
            nxt_x = nxt = None
            if solve == "batch-size":
                q = t = None
        row = {
            "dataset_size": int(m["dataset_size"][i]) if dataset_size is not None else None,
            "batch_size": (int(m["batch_size"][i]) if batch_size is not None else None)
            if solve != "batch-size"
            else int(x),
            "rate": c.f(q) if q is not None else None,
            "steps": (int(t) if status != "none" else 0) if t is not None else None,
            "epochs": (float(t * q) if status != "none" else 0.0)
            if solve == "epochs"
            else (float(m["epochs"][i]) if epochs is not None else None),
            ("target_advantage" if label == "advantage" else "target_tpr"): c.f(m["target"][i]),
            "at_fpr": c.f(fpr[i]) if fpr is not None else None,
            "noise_multiplier": (None if x is None else float(x)) if solve == "noise-multiplier" else c.f(sig),
            "achieved": got,
            "checked_next": None if nxt_x is None else float(nxt_x) if solve == "noise-multiplier" else int(nxt_x),
            "achieved_next": nxt,
            "found": bool(status == "found" and nxt is not None and nxt > m["target"][i]),
            "search": status,
            "method": "inclusion-bound"
            if status == "any"
            else f"pld-{label}"
            if q is None or q < 1
            else f"gdp-{label}",
            "bound": "upper" if q is None or q < 1 else "exact",
        }
        rows.append(row)
    if n_br:
        warnings.append(
            f"{n_br} rows (search: bracketed) lie between the points searched on a lattice of the grid (a grid of "
            f"more than {RISK_SEARCHES} searches: at most {RISK_SEARCHES} of its settings and targets, both ends of "
            "every parameter kept): the answer is the one found for the nearest point with as much privacy loss or "
            "more and a target no larger, so it meets theirs (its bound there is the row's achieved value, an "
            "upper bound on theirs); checked_next is the value checked beyond the answer of the nearest point with "
            "as little loss or less and a target no smaller, where it misses (achieved_next is its bound there). "
            f"found is no. Ask for at most {RISK_SEARCHES} searches to have each row searched."
        )
    name = "TPR−FPR" if label == "advantage" else "TPR"
    by_sigma = solve == "noise-multiplier"
    what = {"noise-multiplier": ("σ", "σ/(1+1e-3)"), "epochs": ("steps", "next steps"), "batch-size": ("B", "next B")}
    cols = [
        Column("dataset_size", "N", "int"),
        Column("batch_size", "B", "int", "down" if solve == "batch-size" else "nearest"),
        Column("rate", "q", safe="down" if solve == "batch-size" else "nearest"),
        Column("steps", "steps", "int", "down" if solve == "epochs" else "nearest"),
        Column("epochs", "epochs", safe="down"),
        Column("target_advantage" if label == "advantage" else "target_tpr", f"target {name}"),
    ] + ([Column("at_fpr", "at FPR")] if fpr is not None else []) + [
        Column("noise_multiplier", "σ", safe="up" if by_sigma else "nearest"),
        Column("achieved", f"{name} at {what[solve][0]}", safe="up"),
        Column("checked_next", what[solve][1], "float" if by_sigma else "int"),
        Column("achieved_next", f"{name} there", safe="down"),
        Column("found", "found", "bool"), Column("search", "search", "text"),
        Column("method", "method", "text"), Column("bound", "bound", "text"),
    ]  # fmt: skip
    cols = [col for col in cols if any(r.get(col.key) is not None for r in rows)]
    rule = (
        "σ is the smallest noise multiplier (to a relative 1e-3)"
        if by_sigma
        else "T is the most steps (1 to 10⁷, to a relative 1e-3 or one step)"
        if solve == "epochs"
        else "B is the largest batch size (to a relative 1e-3, or one), with ⌈E·N/B⌉ steps,"
    )
    note = (
        f"{rule} whose certified upper bound on the best membership-inference attack's {name} meets the target "
        f"(Kulynych et al. 2024), re-checked at full accuracy; the next value ({what[solve][1]}) was checked and "
        "misses it where found is yes (search: none — not even the smallest value meets it; range-end — the "
        "largest value meets it; any — every noise multiplier does, by the inclusion bound 1 − (1 − q)^T on the "
        "advantage)."
    )
    result = Result(
        command="plan-sgd",
        inputs=c.echo_inputs(
            dataset_size=dataset_size,
            batch_size=batch_size,
            rate=rate,
            epochs=epochs,
            steps=steps,
            target_advantage=v["target_advantage"],
            target_tpr=v["target_tpr"],
            at_fpr=v["at_fpr"],
            noise_multiplier=v["sigma"],
            solve=v["solve"],
            sampling=v["sampling"],
        ),  # fmt: skip
        columns=tuple(cols),
        rows=tuple(rows),
        warnings=tuple(list(v["warnings"]) + warnings),
        notes=tuple([n for n in v["notes"] if not n.startswith("δ was not given")] + [note]),
    )
    return c.emit(result, v["fmt"], v["as_json"])


def _scheme_run(v: dict) -> int:
    """plan-sgd under the schemes of issue 12 (--sampling shuffle|balls-in-bins, --max-batch-size,
    --examples-per-user): each row the scheme's certified interval, each end with its method."""
    import numpy as np

    from dpcalc.cli import _common as c
    from dpcalc.cli import _schemes as sch
    from dpcalc.core import sgd
    from dpcalc.render import format_number

    scheme = v["scheme"]
    opt = sch.option_of(scheme)
    dataset_size, batch_size, rate = v["dataset_size"], v["batch_size"], v["rate"]
    if v["accountant"] not in (None, "pld"):
        raise click.UsageError(
            f"Invalid value for '--accountant': {v['accountant']} has no bound for {opt}; it is accounted by pld "
            "(the default)."
        )
    if v["to"] != "epsilon" or any(v[k] is not None for k in ("target_advantage", "target_tpr", "at_fpr")):
        raise click.UsageError(
            f"--to tradeoff/attack and attack-risk targets are available for Poisson and without-replacement "
            f"sampling; {opt} answers ε at δ (and --target-epsilon)."
        )
    refuse_unused(f"with {opt} (it answers ε at δ)", "alpha", "fpr")
    refuse_unused(f"with {opt} (one row per run: give the epochs of each row you want as a grid)", "per_epoch")
    solving_b = v["target_epsilon"] is not None and batch_size is None and rate is None
    if scheme != "user-level" and (dataset_size is None or (batch_size is None and not solving_b)):
        raise click.UsageError(
            f"{opt} needs --dataset-size and --batch-size (the batches are made from N records; --rate alone does "
            "not say how)."
        )
    c.check_pld_delta(v["delta"], opt, "the PLD engine answers from {min_delta}")
    if v["target_epsilon"] is not None:
        refuse_unused("with --target-epsilon (an inverse search answers one row per setting)", "pld_width")
        return _scheme_inverse(v)
    refuse_unused("without --target-epsilon (it names what an inverse search solves for)", "solve")
    sigma, epochs, steps = v["sigma"], v["epochs"], v["steps"]
    _require_forward(sigma, batch_size or rate, epochs or steps)
    m = c.mesh(
        dataset_size=dataset_size,
        batch_size=batch_size,
        rate=rate,
        epochs=epochs,
        steps=steps,
        sigma=sigma,
        max_batch_size=v["max_batch_size"],
        examples_per_user=v["examples_per_user"],
        delta=None if v["delta_defaulted"] else v["delta"],
    )
    n_pts = next(iter(m.values())).size
    if v["delta_defaulted"]:
        m["delta"] = np.asarray(sgd.default_delta(m["dataset_size"]), float).reshape(-1)
    q = m["rate"] if rate is not None else m["batch_size"] / m["dataset_size"]
    total = _total_steps(m, steps)
    ep_total = m["epochs"] if epochs is not None else total * q
    rows, objects, notes, warnings = [], [], list(v["notes"]), list(v["warnings"])
    wide: list = []  # rows wider than asked where each construction met its width: one warning after the loop
    results = sch.intervals(scheme, m, q, total, c.pld_kw())
    group_eps = sch.rdp_group_epsilons(m, q, total) if scheme == "user-level" else None
    compared: set = set()
    for i in range(n_pts):
        r, j = results[i]
        up = float(r.upper[j])
        label = sch.label(scheme, m, q, total, i)
        if not np.isfinite(up):
            raise click.UsageError(
                f"no certified bound for {label}: the privacy loss is beyond what can be represented; use a larger "
                "--noise-multiplier."
            )
        row = sch.base_row(v, m, q, total, i)
        row["epochs"] = float(ep_total[i])
        row.update(sch.interval_fields(r, j, scheme))
        rows.append(row)
        if scheme == "user-level":
            rows.append(sch.rdp_group_row(row, group_eps[i]))
        notes += [x for x in r.notes if x not in notes]
        warnings += [f"{label}: {w}" for w in r.warnings]
        if not bool(r.met[j]) and not sch.bracketed(r):
            warnings.append(
                f"the PLD engine did not reach the width asked for on the constructions of {label}; both ends are "
                "still certified bounds."
            )
        if not sch.bracketed(r):
            wide.append(c.scheme_wide(label, r, j))
        objects.append(sch.run_object(scheme, r, j, m, q, total, i))
        key = (float(q[i]), float(m["sigma"][i]), int(total[i]), float(m["delta"][i]))
        if scheme == "truncated-poisson" and len(compared) < 3 and key not in compared:
            compared.add(key)
            t = sgd.tight_interval(q[i], m["sigma"][i], total[i], m["delta"][i], "poisson")
            if np.isfinite(t.upper[0]):
                notes.append(
                    f"For comparison, Poisson sampling without the cap (q={q[i]:g}, σ={m['sigma'][i]:g}, "
                    f"T={int(total[i])}, δ={m['delta'][i]:g}): ε ∈ [{format_number(float(t.lower[0]), 'down')}, "
                    f"{format_number(float(t.upper[0]), 'up')}] (pld) — not a bound for capped batches."
                )
    warnings += c.scheme_width_warnings(wide)
    notes += sch.closing_notes(scheme)
    warnings += sch.warnings_for(scheme)
    warnings += sch.bracket_warnings(results, scheme)
    from dpcalc.model import Result

    result = Result(
        "plan-sgd",
        _scheme_inputs(v),
        tuple(sch.columns(rows, inverse=False)),
        tuple(rows),
        tuple(dict.fromkeys(warnings)),
        c.releases_once(objects),
        tuple(notes),
    )
    return c.emit(result, v["fmt"], v["as_json"])


def _scheme_inputs(v: dict) -> dict:
    """The inputs as understood, with the scheme's own options."""
    from dpcalc.cli import _common as c

    return dict(
        v["inputs"],
        **c.echo_inputs(max_batch_size=v["max_batch_size"], examples_per_user=v["examples_per_user"]),
    )


#: A scheme's ``--target-epsilon`` grid of more rows than this is searched on a lattice of its rows
#: (:func:`dpcalc.cli._schemes.lattice_rows`).
SCHEME_SEARCHES = 32


def _scheme_inverse(v: dict) -> int:
    """plan-sgd --target-epsilon under a scheme of issue 12: the smallest σ or the most steps whose certified
    upper end meets the target. The search runs on the scheme's upper bound (shuffle: the closed-form
    √E/σ-GDP; balls-in-bins: its amplified upper end alone; truncated Poisson and user level: the engine's
    upper end on its starting grid);
    the answer and the next value toward more loss are then re-checked by the full certified computation."""
    import math

    import numpy as np

    from dpcalc.cli import _common as c
    from dpcalc.cli import _schemes as sch
    from dpcalc.core import sgd
    from dpcalc.model import Result

    scheme = v["scheme"]
    opt = sch.option_of(scheme)
    dataset_size, batch_size, rate, epochs, steps, sigma = (
        v[k] for k in ("dataset_size", "batch_size", "rate", "epochs", "steps", "sigma")
    )
    solve = _pick_solve(v, "--target-epsilon")
    m = c.mesh(
        dataset_size=dataset_size,
        batch_size=batch_size,
        rate=rate,
        epochs=epochs,
        steps=steps,
        sigma=sigma,
        max_batch_size=v["max_batch_size"],
        examples_per_user=v["examples_per_user"],
        target=v["target_epsilon"],
        delta=None if v["delta_defaulted"] else v["delta"],
    )
    n = m["target"].size
    if v["delta_defaulted"]:
        m["delta"] = np.asarray(sgd.default_delta(m["dataset_size"]), float).reshape(-1)
    # (solving B: no rate yet; each row sets its own)
    q = m["rate"] if rate is not None else m["batch_size"] / m["dataset_size"] if solve != "batch-size" else None
    total = None
    if solve == "noise-multiplier":
        total = _total_steps(m, steps)
    rtol = 1e-3
    rows, warnings, notes = [], list(v["warnings"]), list(v["notes"])

    def base_of(i):
        """Row i's inputs, before its answer."""
        row = sch.base_row(v, m, q if q is not None else np.ones(n), total, i)
        row["target_epsilon"] = c.f(float(m["target"][i]))
        if q is None:
            row["rate"] = None
        if solve == "noise-multiplier":
            row["epochs"] = c.f(m["epochs"][i]) if epochs is not None else None
        return row

    def solve_row(i):
        """Row i searched on its own: its row and its warnings."""
        warns: list[str] = []
        target, d = float(m["target"][i]), float(m["delta"][i])
        row = base_of(i)
        if solve == "noise-multiplier":
            seen: dict = {}  # σ → its full interval (the search's last check is the next value's row)

            def full(s, i=i, seen=seen):
                if s not in seen:
                    seen[s] = sch.checked(scheme, sch._args(m, q, total, i, sigma=s), np.array([d]))
                return seen[s]

            if scheme == "shuffle":
                e = sch.epochs_begun(total[i], m["dataset_size"][i], m["batch_size"][i])
                s0 = sch.solve_sigma_gdp(e, d, target)
                found_pair = None if not math.isfinite(s0) else sch.nudge_up(full, s0, target)
                step = 1e-6
            else:

                def value(s, i=i):
                    args = sch._args(m, q, total, i, sigma=s)
                    return sch.quick_upper(scheme, **args, delta=d)

                br = sch.search_sigma(value, target, 1.0, rtol)
                found_pair = None if br is None else sch.refine_sigma(full, br[0], target, rtol)
                step = rtol
            if found_pair is None:
                row.update(noise_multiplier=None, found=False, search=sgd.NONE)
                row.update(method=sch.METHOD[scheme], bound="upper")
                warns.append(f"no noise multiplier up to 1e12 meets ε = {target:g} at δ = {d:g}.")
                return row, warns
            s_ans, r_ans = found_pair
            s_next = s_ans / (1 + step)
            try:
                r_next = full(s_next)
            except click.UsageError:  # the next σ is beyond what dpcalc accounts for this scheme
                r_next = None
            row["noise_multiplier"] = float(s_ans)
            row["checked_next"] = float(s_next)
        elif solve == "batch-size":
            n_i, e_i = int(m["dataset_size"][i]), float(m["epochs"][i])

            def args_b(bb, i=i, n_i=n_i, e_i=e_i):
                t = int(np.asarray(sgd.steps_for_epochs(e_i, n_i, bb)).reshape(-1)[0])
                a = sch._args(m, np.full(i + 1, bb / n_i), None, i, steps=t)
                a.update(n=n_i, b=int(bb), q=bb / n_i)
                return a

            def full(bb, args_b=args_b):
                return sch.checked(scheme, args_b(bb), np.array([d]))

            def meets(bb, args_b=args_b):
                return sch.quick_upper(scheme, **args_b(bb), delta=d) <= target

            br = sch.bisect_whole(meets, n_i, rtol)
            b_ans = None if br is None else sch.refine_whole(full, br, target, rtol, n_i)
            if b_ans is None:
                row.update(batch_size=None, found=False, search=sgd.NONE, method=sch.METHOD[scheme], bound="upper")
                warns.append(f"even a batch size of 1 exceeds ε = {target:g} at δ = {d:g}.")
                return row, warns
            b_next = b_ans + max(1, int(rtol * b_ans))
            r_ans = full(b_ans)
            r_next = full(b_next) if b_next <= n_i else None
            row.update(batch_size=int(b_ans), rate=c.f(b_ans / n_i), steps=int(args_b(b_ans)["steps"]), epochs=c.f(e_i))
            row["checked_next"] = int(b_next)
        else:
            cap = int(sgd.MAX_STEPS)

            def full(t, i=i):
                return sch.checked(scheme, sch._args(m, q, None, i, steps=t), np.array([d]))

            if scheme in sch.ONE_BATCH:
                k = sch.batches_per_epoch(m["dataset_size"][i], m["batch_size"][i])
                if scheme == "shuffle":
                    ans = sch.solve_epochs_gdp(
                        lambda e, k=k: float(full(e * k).upper[0]), float(m["sigma"][i]), d, target
                    )
                else:  # the amplified bound: searched on its upper end alone, the answer re-checked below

                    def quick(e, k=k, i=i):
                        return sch.quick_upper(scheme, **sch._args(m, q, None, i, steps=e * k), delta=d)

                    ans = sch.solve_epochs_whole(quick, target, max(1, cap // k))
                if ans is None:
                    t_ans = None
                else:
                    t_ans, t_next = ans * k, (ans + 1) * k
            else:

                def meets(t, i=i):
                    args = sch._args(m, q, None, i, steps=t)
                    return sch.quick_upper(scheme, **args, delta=d) <= target

                guess = max(1, int(_steps_for(m, np.array([1.0]), np.array([i]))[0]))
                br = sch.bisect_steps(meets, guess, cap)
                t_ans = None if br is None else sch.refine_whole(full, br[0], target, rtol, cap)
                if t_ans is not None:
                    t_next = t_ans + max(1, int(rtol * t_ans))
            if t_ans is None:
                row.update(steps=None, found=False, search=sgd.NONE, method=sch.METHOD[scheme], bound="upper")
                warns.append(f"even a single {'epoch' if scheme in sch.ONE_BATCH else 'step'} exceeds ε = "
                                f"{target:g} at δ = {d:g}.")  # fmt: skip
                return row, warns
            r_ans = full(t_ans)
            r_next = full(t_next) if t_next <= cap else None
            row["steps"] = int(t_ans)
            row["checked_next"] = int(t_next)
            if v["dataset_size"] is not None:
                whole, frac = sgd.whole_epochs(
                    t_ans,
                    **(
                        dict(rate=q[i])
                        if batch_size is None
                        else dict(dataset_size=m["dataset_size"][i], batch_size=m["batch_size"][i])
                    ),
                )
                row["epochs"] = float(whole)
                row["epochs_fractional"] = float(frac)
                if scheme in sch.ONE_BATCH:  # whole epochs of k batches: the last batch may be short
                    row["epochs"], row["epochs_fractional"] = float(t_ans // k), None
        up_next = float(r_next.upper[0]) if r_next is not None else math.inf
        row.update(sch.interval_fields(r_ans, 0, scheme))
        row["epsilon_next"] = up_next if math.isfinite(up_next) else None
        row["found"] = bool(r_next is not None and up_next > target)
        if row["found"]:
            row["search"] = sgd.OPTIMAL
        elif r_next is None and solve == "noise-multiplier":
            row["search"] = sgd.EDGE
            warns.append(
                f"the target ε = {target:g} at δ = {d:g} is met, but dpcalc cannot account the next smaller σ under "
                f"{opt}; the optimum may lie beyond, so found is no."
            )
        else:
            row["search"] = sgd.RANGE_END
            warns.append(
                f"the target ε = {target:g} at δ = {d:g} is met at the end of the searched range (or the next value "
                "could not be shown to miss it); found is no."
            )
        return row, warns

    family = list(zip(*(np.asarray(m[k]).tolist() for k in sch.FAMILY_KEYS if k in m)))
    # (array, +1 where a larger value means more privacy loss at a fixed answer, −1 less)
    if solve == "noise-multiplier":
        axes = [(np.asarray(total, float), 1)]
    elif solve == "epochs":
        axes = [(np.asarray(m["sigma"], float), -1)]
    else:
        axes = [(np.asarray(m["epochs"], float), 1), (np.asarray(m["sigma"], float), -1)]
    axes += [(np.asarray(m["delta"], float), -1), (np.asarray(m["target"], float), -1)]

    def bracket(i, h, e):
        """Row i from H's answer (it meets row i's target) and E's checked value (it misses E's)."""
        row = base_of(i)
        keep = {"noise-multiplier": ("noise_multiplier",), "epochs": ("steps", "epochs", "epochs_fractional")}
        for key in keep.get(solve, ("batch_size", "rate")):
            row[key] = h.get(key)
        if solve == "batch-size":
            row["steps"] = int(np.asarray(sgd.steps_for_epochs(m["epochs"][i], m["dataset_size"][i], h["batch_size"])))
            row["epochs"] = c.f(m["epochs"][i])
        # ε at the answer: H's upper end bounds row i's (row i has no more privacy loss); H's lower end does not.
        row.update(epsilon=h["epsilon"], method=h["method"], bound=h["bound"], scheme=h["scheme"])
        row.update(epsilon_lower=None, epsilon_width=None, lower_method=None)
        if "epsilon_lower_zero_out" in h:
            row["epsilon_lower_zero_out"] = None
        row.update(checked_next=e.get("checked_next"), epsilon_next=e.get("epsilon_next"))
        row.update(found=False, search=sgd.BRACKETED)
        return row

    n_br = 0
    for row, warns in sch.lattice_rows(n, family, axes, solve_row, bracket, SCHEME_SEARCHES):
        rows.append(row)
        warnings += warns
        n_br += row.get("search") == sgd.BRACKETED
    if n_br:
        warnings.append(
            f"{n_br} rows (search: bracketed) lie between rows searched on a lattice of the grid (a grid of more than "
            f"{SCHEME_SEARCHES} rows: per family of runs sharing their other inputs, at most max(4, "
            f"{SCHEME_SEARCHES} / families) rows, both ends of every parameter kept): the answer is the one found "
            "for the nearest row with as much privacy loss or more and a target no larger, so it meets theirs (ε at "
            "answer is that row's certified upper end, an upper bound on theirs; no lower end is shown), and "
            "checked_next is the value checked beyond the answer of the nearest row with as little loss or less and "
            f"a target no smaller, where it misses (epsilon_next). found is no. Ask for at most {SCHEME_SEARCHES} "
            "rows to have each searched."
        )
    what = {"noise-multiplier": "σ", "epochs": "the number of steps", "batch-size": "the batch size B"}[solve]
    notes.append(
        f"Solved for {what} with {opt}'s certified upper end ("
        + (
            "the closed-form √E/σ-GDP bound, E the epochs begun"
            if scheme == "shuffle"
            else "searched on the upper end alone (the amplified random-allocation bound, or √E/σ-GDP where smaller)"
            if scheme == "balls-in-bins"
            else "searched on the engine's upper end on its starting grid"
        )
        + "); the answer and the next value toward more loss (checked_next) were re-computed in full: ε at answer "
        "meets the target and, where found is yes, epsilon_next misses it. "
        + (
            "σ/(1 + " + ("1e-06" if scheme == "shuffle" else "0.001") + ") is that next value."
            if solve == "noise-multiplier"
            else "The next value is max(1, 0.001·B) more records per batch, with its own ⌈E·N/B⌉ steps."
            if solve == "batch-size"
            else (
                "The next value is one more epoch (a partial epoch counts whole: the record may be in its batch)."
                if scheme in sch.ONE_BATCH
                else "The next value is max(1, 0.001·T) more steps."
            )
        )
    )
    warnings += sch.warnings_for(scheme)
    result = Result(
        "plan-sgd",
        _scheme_inputs(v),
        tuple(sch.columns(rows, inverse=True)),
        tuple(rows),
        tuple(dict.fromkeys(warnings)),
        (),
        tuple(notes),
    )
    return c.emit(result, v["fmt"], v["as_json"])
