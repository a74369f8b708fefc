"""dpcalc convert audit — the ε lower bound that observed attack counts prove."""

from __future__ import annotations

import click

from dpcalc.cli.options import (
    CONTEXT,
    NONNEGATIVE,
    PROB_OR_ZERO,
    PROBABILITY,
    Command,
    Range,
    grid_option,
    number_option,
    output_options,
)

#: Counts of a classic audit: whole numbers from 0 (an attack may never be right), at most 10^12 trials.
TALLY = Range(0, 10**12, low_open=False, high_open=False, integer=True)
TRIALS = Range(1, 10**12, low_open=False, high_open=False, integer=True)
#: A one-run audit's counts: its bound sums over every count of correct guesses, so at most 10^7 canaries.
CANARY_TALLY = Range(0, 10**7, low_open=False, high_open=False, integer=True)
CANARIES = Range(1, 10**7, low_open=False, high_open=False, integer=True)


@click.command("audit", cls=Command, context_settings=CONTEXT)
@number_option(
    "--true-positives", allowed=TALLY, help="Classic audit: trials with the record in where the attack said in."
)
@number_option("--positives", allowed=TRIALS, help="Classic audit: trials with the record in.")
@number_option("--false-positives", allowed=TALLY, help="Classic audit: trials with the record out where it said in.")
@number_option("--negatives", allowed=TRIALS, help="Classic audit: trials with the record out.")
@number_option("--canaries", allowed=CANARIES, help="One-run audit: canaries m, each included with probability 1/2.")
@number_option(
    "--guesses", allowed=CANARY_TALLY, help="One-run audit: canaries the auditor guessed on (r, abstentions excluded)."
)
@number_option("--correct", allowed=CANARY_TALLY, help="One-run audit: correct guesses v.")
@grid_option("--delta", allowed=PROB_OR_ZERO, default="1e-5", help="δ of the claim the audit tests, in [0, 1).")
@grid_option("--confidence", allowed=PROBABILITY, default="0.95", help="Confidence of the lower bound, in (0, 1).")
@number_option(
    "--claimed-epsilon",
    allowed=NONNEGATIVE,
    help="The ε the mechanism is claimed to satisfy at --delta: exit code 1 (reason on stderr) when the audit "
    "contradicts it, i.e. proves ε above it at the stated confidence.",
)
@output_options
def audit(
    true_positives, positives, false_positives, negatives, canaries, guesses, correct, delta, confidence,
    claimed_epsilon, fmt, as_json,
):  # fmt: skip
    """ε lower bound from a membership-inference audit's counts, at a confidence.

    Classic audits (independent trials, e.g. one training run each, with the
    target record in or out): give --true-positives/--positives and
    --false-positives/--negatives; the bound uses one-sided Clopper–Pearson
    intervals on TPR and FPR (Jagielski et al. 2020). One-run audits (m
    canaries included at random in one run; Steinke, Nasr & Jagielski 2023):
    give --canaries, --guesses and --correct. The row's ε is a lower bound on
    the true ε of the mechanism that holds with the stated confidence (bound
    "lower"); --claimed-epsilon turns it into a check.

    \b
    Examples:
      dpcalc convert audit --true-positives 830 --positives 1000 --false-positives 40 --negatives 1000
      dpcalc convert audit --canaries 1000 --guesses 100 --correct 95 --delta 1e-5 --claimed-epsilon 1
    """
    import dataclasses

    from dpcalc.cli import _common as c
    from dpcalc.core import audit as core
    from dpcalc.model import Column, Result
    from dpcalc.render import format_compared

    classic = {"true_positives": true_positives, "positives": positives, "false_positives": false_positives,
               "negatives": negatives}  # fmt: skip
    one_run = {"canaries": canaries, "guesses": guesses, "correct": correct}
    given_c = [k for k, v in classic.items() if v is not None]
    given_o = [k for k, v in one_run.items() if v is not None]
    if given_c and given_o:
        raise click.UsageError(
            f"give the counts of one audit: --{given_c[0].replace('_', '-')} is a classic audit's and "
            f"--{given_o[0].replace('_', '-')} a one-run audit's."
        )
    if not given_c and not given_o:
        raise click.UsageError(
            "give a classic audit's counts (--true-positives, --positives, --false-positives, --negatives) or a "
            "one-run audit's (--canaries, --guesses, --correct)."
        )
    missing = [k for k, v in (classic if given_c else one_run).items() if v is None]
    if missing:
        raise click.UsageError(f"Missing option '--{missing[0].replace('_', '-')}' (the audit needs all its counts).")
    rows = []
    m = c.mesh(delta=delta, confidence=confidence)
    if given_c:
        tp, pos, fp, neg = (int(classic[k]) for k in classic)
        if tp > pos:
            raise click.UsageError(f"Invalid value for '--true-positives': {tp} is more than --positives {pos}.")
        if fp > neg:
            raise click.UsageError(f"Invalid value for '--false-positives': {fp} is more than --negatives {neg}.")
        eps, tpr, fpr = core.classic_epsilon(tp, pos, fp, neg, m["delta"], m["confidence"])
        for i in range(m["delta"].size):
            rows.append(
                {
                    "positives": pos,
                    "true_positives": tp,
                    "negatives": neg,
                    "false_positives": fp,
                    "delta": c.f(m["delta"][i]),
                    "confidence": c.f(m["confidence"][i]),
                    "tpr_lower": c.f(tpr[i]),
                    "fpr_upper": c.f(fpr[i]),
                    "epsilon": c.f(eps[i]),
                    "method": "audit-clopper-pearson",
                    "bound": "lower",
                }
            )
        cols = [
            Column("positives", "positives", "int"),
            Column("true_positives", "TP", "int"),
            Column("negatives", "negatives", "int"),
            Column("false_positives", "FP", "int"),
            Column("delta", "δ"),
            Column("confidence", "confidence"),
            Column("tpr_lower", "TPR ≥", safe="down"),
            Column("fpr_upper", "FPR ≤", safe="up"),
            Column("epsilon", "ε ≥", safe="down"),
        ]
        inputs = dict(classic)
        note = (
            "Classic audit: each trial independent (e.g. its own training run). TPR ≥ and FPR ≤ are one-sided "
            "Clopper–Pearson bounds, each at half the error (1 − confidence)/2; ε ≥ = max(log((TPR − δ)/FPR), "
            "log((1 − FPR − δ)/(1 − TPR))), a lower bound on the true ε with that confidence."
        )
    else:
        mm, r, v = int(canaries), int(guesses), int(correct)
        if r > mm:
            raise click.UsageError(f"Invalid value for '--guesses': {r} is more than --canaries {mm}.")
        if v > r:
            raise click.UsageError(f"Invalid value for '--correct': {v} is more than --guesses {r}.")
        for i in range(m["delta"].size):
            eps, status = core.one_run_epsilon(mm, r, v, float(m["delta"][i]), float(m["confidence"][i]))
            rows.append(
                {
                    "canaries": mm,
                    "guesses": r,
                    "correct": v,
                    "delta": c.f(m["delta"][i]),
                    "confidence": c.f(m["confidence"][i]),
                    "epsilon": float(eps),
                    "method": "audit-one-run",
                    "bound": "lower",
                }
            )
        cols = [
            Column("canaries", "canaries", "int"),
            Column("guesses", "guesses", "int"),
            Column("correct", "correct", "int"),
            Column("delta", "δ"),
            Column("confidence", "confidence"),
            Column("epsilon", "ε ≥", safe="down"),
        ]
        inputs = dict(one_run)
        note = (
            "One-run audit (Steinke, Nasr & Jagielski 2023, Thm 5.2): canaries included independently with "
            "probability 1/2 in one run; ε ≥ is the largest ε whose p-value for this many correct guesses is at most "
            "1 − confidence, a lower bound on the true ε with that confidence."
        )
    notes = [note]
    warnings = []
    if claimed_epsilon is not None:
        for row in rows:
            row["claimed_epsilon"] = float(claimed_epsilon)
            row["contradicted"] = bool(row["epsilon"] > claimed_epsilon)
        cols += [Column("claimed_epsilon", "claimed ε"), Column("contradicted", "contradicted", "bool")]
    cols += [Column("method", "method", "text"), Column("bound", "bound", "text")]
    if all(row["epsilon"] == 0 for row in rows):
        notes.append("These counts prove nothing about ε (ε ≥ 0): the attack does no better than chance can explain.")
    result = Result(
        command="convert audit",
        inputs=c.echo_inputs(**inputs, delta=delta, confidence=confidence, claimed_epsilon=claimed_epsilon),
        columns=tuple(cols),
        rows=tuple(rows),
        warnings=tuple(warnings),
        notes=tuple(notes),
    )
    bad = [row for row in rows if row.get("contradicted")]
    if bad:
        worst = max(bad, key=lambda row: row["epsilon"])
        proven, claimed = format_compared(worst["epsilon"], claimed_epsilon, True, safe_a="down")
        msg = (
            f"claim contradicted: the audit proves ε ≥ {proven} > {claimed} at "
            f"δ = {worst['delta']:g} with confidence {worst['confidence']:g}"
            + (f"; {len(bad)} of {len(rows)} rows" if len(rows) > 1 else "")
        )
        result = dataclasses.replace(
            result, status=1, failure=msg, extra={"audit": {"claimed_epsilon": claimed_epsilon, "contradicted": True}}
        )
    elif claimed_epsilon is not None:
        result = dataclasses.replace(
            result, extra={"audit": {"claimed_epsilon": claimed_epsilon, "contradicted": False}}
        )
    return c.emit(result, fmt, as_json)
