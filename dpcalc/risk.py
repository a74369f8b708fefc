"""Attack risk of any privacy object: trade-off curves, advantage and TPR at FPR, as certified rows.

What a composed, subsampled run means to an attacker (issue 13, item 1): for mechanisms the PLD engine
accounts for, :mod:`dpcalc.core.pld.risk` gives certified intervals on β(α) (the pessimistic PLD bounds
β from below — no attack is better — the optimistic one from above); Gaussian-only objects are exactly
μ-GDP and read off the closed form. Used by ``convert --to tradeoff|attack`` on piped objects and by
``plan-sgd --to tradeoff|attack``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from dpcalc.model import Column


@dataclass(frozen=True)
class Case:
    """One thing to read: echoed fields for its rows, and what it is (μ for exact GDP, else PLD mechanisms)."""

    base: dict
    mu: float | None = None
    mechs: list | None = None
    label: str = ""
    #: The PLD pair dominates the mechanism without being the output of two datasets (truncated Poisson, a
    #: balls-in-bins epoch): its sound-side readings hold for the mechanism, its other ends are not shown.
    dominating: bool = False
    #: Where the PLD engine cannot read the case's curve (a step whose losses no grid holds: σ = 1e-12 or
    #: 1e308, randomized response with ε₀ = 1e15): a function of the δ ladder giving sound (ε, δ) pairs
    #: (arrays, ε = inf where none) and the names of the engines that produced them (:func:`_fallback_reading`).
    fallback: Callable | None = None


#: The δ ladder of a fallback reading: 1e-1 … 1e-15 every half decade (each (ε, δ) pair gives one
#: trade-off function f_{ε,δ}; the reading is their maximum, so more pairs only tighten it).
FALLBACK_DELTAS = np.logspace(-1.0, -15.0, 29)

#: Exceptions by which the PLD engine says it cannot read a case (no grid holds or fits its losses).
_NO_PLD = (MemoryError, ValueError, FloatingPointError, OverflowError, ZeroDivisionError, ArithmeticError)


def mechanisms(parts, delta: float | None = None) -> list | None:
    """The PLD engine's mechanisms for accounting parts (:class:`dpcalc.accounting.Part`), or None when a part
    has no PLD here (zCDP, RDP curves). Discrete mechanisms map to their own directions
    (:mod:`dpcalc.core.pld.discrete`); a discrete Gaussian whose σ is past its sums' range raises ValidationError.
    ``delta``: the smallest δ the total is read at (a balls-in-bins epoch's construction depends on it)."""
    from dpcalc.accounting import PLD_KINDS, own_pair
    from dpcalc.core import pld

    if any(p.kind not in PLD_KINDS for p in parts):
        return None
    mechs = []
    for p in parts:
        if p.kind == "gauss":
            mechs.append((pld.gaussian(p.mu), p.times))
        elif p.kind == "laplace":
            mechs.append((pld.laplace(p.epsilon), p.times))
        elif p.kind == "sgauss":
            mechs.append((pld.subsampled_gaussian(p.rate, p.sigma), p.times))
        elif p.kind == "wgauss":
            mechs.append((pld.sampled_wor_gaussian(p.rate, p.sigma), p.times))
        elif p.kind == "dgauss":
            mechs.append((pld.discrete_gaussian(p.sigma, p.sensitivity), p.times))
        elif p.kind == "dlaplace":
            mechs.append((pld.discrete_laplace(p.scale, p.sensitivity), p.times))
        elif p.kind == "rr":
            mechs.append((pld.randomized_response(p.epsilon, p.k), p.times))
        elif p.kind == "br":
            mechs.append((pld.bounded_range(p.epsilon), p.times))
        elif p.kind in ("tgauss", "ugauss", "ragauss"):
            mechs.append((_scheme_directions(p, delta), p.times))
        elif own_pair(p):
            # A subsampled (ε, δ) object: its own dominating pair (exact), not the amplified guarantee's.
            mechs.append((pld.subsampled_dp(p.inner_epsilon, p.inner_delta, p.rate), p.times))
        elif p.kind == "pure" and p.scale > 0 and p.rate < 1:
            sub = pld.subsampled_laplace if p.scheme == "poisson" else pld.sampled_wor_laplace
            mechs.append((sub(1.0 / p.scale, p.rate), p.times))
        else:
            mechs.append((pld.dp(p.epsilon, p.delta), p.times))
    return mechs


#: The smallest δ a balls-in-bins epoch's construction is built for where no δ is given (trade-off and attack
#: readings): it adds at most about that to δ, far below any reading (the PLD engine's smallest δ until
#: 2026-12-03; kept, so that those readings did not change when the engine's range grew).
SCHEME_DELTA = 1e-12


def _scheme_directions(p, delta: float | None = None):
    """The PLD directions of a truncated-Poisson (tgauss) or user-level (ugauss) step, or of a balls-in-bins
    epoch (ragauss; its construction's budget from ``delta``, the smallest δ it is read at, as plan-sgd has
    it — None: SCHEME_DELTA) (docs/sampling.md): the same pairs as plan-sgd's upper end; B_max > N is
    Poisson sampling (no batch is ever cut)."""
    from dpcalc.core import pld
    from dpcalc.core.pld import sampling as S

    if p.kind == "ugauss":
        return S.user_level_gaussian(p.rate, p.sigma, p.size)
    if p.kind == "ragauss":  # one balls-in-bins epoch (amplified; unamplified where the grids do not fit)
        from dpcalc.core.sampling import balls_in_bins_pair

        pair = balls_in_bins_pair(p.size, p.times, p.sigma, SCHEME_DELTA if delta is None else delta)
        return pld.gaussian(p.mu) if pair is None else pair
    if p.cap > p.size:
        return pld.subsampled_gaussian(p.rate, p.sigma)
    return S.truncated_poisson_gaussian(p.rate, p.sigma, [p.size - 1, p.size], p.cap)


def case_of_parts(parts, base: dict, label: str) -> Case | None:
    """A Case for accounting parts: exact GDP when every part is Gaussian, else PLD (None: neither)."""
    if parts and all(p.kind == "gauss" for p in parts):
        from dpcalc.accounting import _gauss_mu

        # μ rounded up (the safe side of every reading: advantage and TPR grow with μ, β falls).
        return Case(base, mu=_gauss_mu(parts), label=label)
    from dpcalc.accounting import safe_side_only

    fallback = _parts_fallback(parts)
    try:
        mechs = mechanisms(parts)
    except (MemoryError, ValueError) as exc:
        # A pair too large to build (a piped user-level step of 10^15 examples) or beyond what the engine
        # represents (an (ε, δ) object with ε past ~745, a shuffled epoch at σ = 1e-5): the fallback reads it.
        from dpcalc.core.errors import ValidationError

        if isinstance(exc, ValidationError):  # an input out of a mechanism's range: the caller names it
            raise
        return Case(base, label=label, dominating=safe_side_only(parts), fallback=fallback)
    if mechs is None:
        return None
    return Case(base, mechs=mechs, label=label, dominating=safe_side_only(parts), fallback=fallback)


def _parts_fallback(parts) -> Callable:
    """The (ε, δ) pairs of accounting parts on the δ ladder: each δ's tightest sound total (RDP, zCDP,
    closed forms — :func:`dpcalc.accounting.compose_parts`), inf where no method bounds it."""

    def pairs(deltas):
        from dpcalc.accounting import compose_parts, tightest
        from dpcalc.model import ObjectError

        eps, dl, names = np.full(deltas.shape, np.inf), np.array(deltas, float), set()
        for i, d in enumerate(deltas):
            try:
                t = tightest(compose_parts(list(parts), float(d)))
            except (ObjectError, *_NO_PLD):
                continue
            if np.isfinite(t.epsilon):
                eps[i], dl[i] = t.epsilon, min(float(t.delta), float(d))
                names.add(t.method)
        return eps, dl, names

    return pairs


def rows(cases: list[Case], target: str, points) -> tuple[list[Column], list[dict], list[str], list[str]]:
    """Columns, rows, notes and warnings of the readings: ``target`` "tradeoff" (``points`` are α) or
    "attack" (FPRs). A case the PLD engine cannot read is bounded through its fallback's (ε, δ) pairs
    (:func:`_fallback_reading`), one-sided, with a warning."""
    from dpcalc.core import gdp as g
    from dpcalc.core.pld import risk

    pts = np.asarray(points, float)
    out: list[dict] = []
    methods = set()
    warnings: list[str] = []
    loose = False
    for case in cases:
        if case.mu is not None:
            mu = np.full(pts.shape, case.mu)
            if target == "tradeoff":
                beta = np.asarray(g.tradeoff(mu, pts), float).reshape(-1)
            else:
                tpr = np.asarray(g.attack_tpr(mu, pts), float).reshape(-1)
                adv = float(np.asarray(g.advantage(case.mu)))
            method, bound = f"gdp-{target}", "exact"
        else:
            bound = "lower" if target == "tradeoff" else "upper"
            prof = None if case.mechs is None else _profile(case.mechs)
            if prof is not None:
                b_lo, b_hi = risk.tradeoff(prof, pts)
                a_lo, a_hi = risk.advantage(prof)
                method = f"pld-{target}"
            else:
                b_lo, a_hi, names = _fallback_reading(case, pts)
                b_hi = np.full(pts.shape, np.nan)
                a_lo = None
                method = f"via-dp-{target}"
                what = case.label or "the mechanism"
                how = f" (from {', '.join(sorted(names))})" if names else " (none: the trivial bounds)"
                warnings.append(
                    f"the PLD engine cannot read the trade-off curve of {what} (its losses fit no grid); the "
                    f"{method} rows bound it through (ε, δ) guarantees{how}, one-sided and looser."
                )
                loose = True
        methods.add(method.split("-")[0])
        for k, x in enumerate(pts):
            row = dict(case.base)
            if target == "tradeoff":
                if case.mu is not None:
                    row.update(alpha=float(x), beta=float(beta[k]), beta_upper=None)
                else:
                    row.update(
                        alpha=float(x), beta=float(b_lo[k]), beta_upper=None if np.isnan(b_hi[k]) else float(b_hi[k])
                    )
            elif case.mu is not None:
                row.update(fpr=float(x), tpr=float(tpr[k]), tpr_lower=None, advantage=adv, advantage_lower=None)
            else:
                row.update(
                    fpr=float(x),
                    tpr=float(min(1.0, 1.0 - b_lo[k])),
                    tpr_lower=None if np.isnan(b_hi[k]) else float(max(0.0, 1.0 - b_hi[k])),
                    advantage=a_hi,
                    advantage_lower=a_lo,
                )
            if case.dominating:  # the pair's other ends are not bounds on the mechanism
                gone = ("beta_upper",) if target == "tradeoff" else ("tpr_lower", "advantage_lower")
                row.update(dict.fromkeys(gone))
            row.update(method=method, bound=bound)
            out.append(row)
    if target == "tradeoff":
        cols = [
            Column("alpha", "α (type I)"),
            Column("beta", "β (type II)", safe="down"),
            Column("beta_upper", "β ≤", safe="up"),
        ]
        notes = [
            "β is the smallest type II error any membership test can have at type I error α: an attack can be no "
            "better. pld rows: β is a certified lower bound (bound lower) and β ≤ a certified upper bound on the "
            "mechanism's trade-off curve; gdp rows are exact (μ-GDP)."
        ]
    else:
        cols = [
            Column("fpr", "FPR"),
            Column("tpr", "max TPR", safe="up"),
            Column("tpr_lower", "TPR ≥", safe="down"),
            Column("advantage", "max TPR−FPR", safe="up"),
            Column("advantage_lower", "adv. ≥", safe="down"),
        ]
        notes = [
            "max TPR bounds the true-positive rate of any membership-inference attack at that false-positive rate, "
            "and max TPR−FPR its advantage (δ at ε = 0). pld rows: certified upper bounds, with TPR ≥ and adv. ≥ "
            "the certified lower ends (what the worst case reaches); gdp rows are exact (μ-GDP)."
        ]
    if loose:
        notes.append(
            f"via-dp-{target} rows: the PLD engine could not read the mechanism's curve, so β is bounded from below by "
            "the maximum of the trade-off functions f_{ε,δ} of sound (ε, δ) guarantees at δ = 1e-1 … 1e-15 (and "
            "the advantage by (e^ε − 1 + 2δ)/(e^ε + 1)): an attack can be no better, but it may be far worse; the "
            "other ends are not certified and are left empty."
        )
    if any(c.dominating for c in cases):
        notes.append(
            "A truncated-Poisson or balls-in-bins release, or one sampled without replacement over 2 or more steps, "
            "is read on a construction that dominates it without being known to be the output of two datasets: "
            "its sound side is shown, its other end (β ≤, TPR ≥, adv. ≥) is not a bound on the release and is "
            "left empty."
        )
    if all(c.mu is not None for c in cases):  # exact rows only: no interval columns
        drop = {"beta_upper", "tpr_lower", "advantage_lower"}
        cols = [c for c in cols if c.key not in drop]
        for r in out:
            for k in drop:
                r.pop(k, None)
    return cols, out, notes, warnings


def _profile(mechs):
    """The PLD engine's certified δ(ε) profile, or None where it cannot read the mechanisms (no grid holds or
    fits their losses; an input out of a mechanism's range is still raised, for the caller to name)."""
    from dpcalc.core.errors import ValidationError
    from dpcalc.core.pld import risk

    try:
        return risk.profile(mechs)
    except ValidationError:
        raise
    except _NO_PLD:
        return None


def _fallback_reading(case: Case, alpha: np.ndarray):
    """(β_lo at each α, an upper bound on the advantage, engine names) from the case's (ε, δ) pairs.

    Each pair is a true guarantee, so f_{ε,δ}(α) <= f(α) ([DRS] Prop. 2.5) and the advantage is at most
    f_{ε,δ}'s (:func:`dpcalc.core.fdp.dp_tradeoff`, :func:`~dpcalc.core.fdp.dp_advantage`, each rounded
    toward its safe side); larger ε or δ only lower f_{ε,δ}, so ε and δ that are upper bounds keep it sound.
    Without a finite pair: β >= 0 and advantage <= 1, the trivial bounds."""
    from dpcalc.core import fdp

    if case.fallback is None:
        return np.zeros(alpha.shape), 1.0, set()
    eps, dl, names = case.fallback(FALLBACK_DELTAS)
    ok = np.isfinite(eps)
    if not ok.any():
        return np.zeros(alpha.shape), 1.0, set()
    e, d = eps[ok], dl[ok]
    beta = np.max(np.asarray(fdp.dp_tradeoff(e[:, None], d[:, None], alpha[None, :]), float), axis=0)
    adv = float(np.min(np.asarray(fdp.dp_advantage(e, d), float)))
    return beta, adv, names


# ---------------------------------------------------------------------------------------------- DP-SGD runs


def sgd_mechanisms(rate: float, sigma: float, steps: int, sampling: str = "poisson"):
    """A DP-SGD run as a Case: exact μ-GDP when every record is in every batch (q = 1), else its PLD."""
    from dpcalc.core import pld

    if rate >= 1.0:
        from dpcalc.core.pld.exact import gaussian_mu

        # μ = √T/σ rounded up: the readings are upper bounds (advantage, TPR) and grow with μ.
        return Case({}, mu=float(gaussian_mu(float(steps), float(sigma))[1]))
    step = pld.subsampled_gaussian(rate, sigma) if sampling == "poisson" else pld.sampled_wor_gaussian(rate, sigma)
    # Sampled without replacement over 2 or more steps: the C_q hull's composition is not known to be reached
    # by two datasets, so only its safe side is read (see dpcalc.core.sgd.tight_interval).
    dominating = sampling != "poisson" and int(steps) >= 2
    return Case(
        {}, mechs=[(step, int(steps))], dominating=dominating, fallback=_sgd_fallback(rate, sigma, steps, sampling)
    )


def _sgd_fallback(rate: float, sigma: float, steps: int, sampling: str) -> Callable:
    """A run's (ε, δ) pairs where the PLD engine cannot read it: (0, the steps' total variation bound) —
    the advantage is at most it — and, for Poisson sampling, RDP's ε on the δ ladder."""

    def pairs(deltas):
        from dpcalc.core import sgd
        from dpcalc.core.pld import exact

        eps, dl, names = [], [], set()
        try:
            tv = float(np.asarray(exact.total_variation_upper(rate, sigma, steps, sampling)).reshape(-1)[0])
        except _NO_PLD:
            tv = np.nan
        if tv < 1.0:
            eps.append(0.0)
            dl.append(tv)
            names.add("total-variation")
        if sampling == "poisson":
            n = len(deltas)
            r = np.asarray(sgd._rdp_epsilon(np.full(n, rate), np.full(n, sigma), np.full(n, steps), deltas), float)
            eps += list(r)
            dl += list(deltas)
            if np.isfinite(r).any():
                names.add("rdp")
        return np.asarray(eps, float), np.asarray(dl, float), names

    return pairs


def attack_bounds(rate, sigma, steps, fpr=None, sampling: str = "poisson", quick: bool = False):
    """Certified [lower, upper] on the best attack's advantage (``fpr`` None) or TPR at ``fpr``, per run.

    ``quick``: δ intervals 1e-3 wide instead of 1e-4 (still certified — any grid gives sound bounds — only
    wider), for the steps of a search; its answer is re-checked without it.
    """
    from dpcalc.core import gdp as g
    from dpcalc.core.pld import risk

    q, s, t = (np.atleast_1d(np.asarray(x, float)) for x in (rate, sigma, steps))
    q, s, t = np.broadcast_arrays(q, s, t)
    f = None if fpr is None else np.broadcast_to(np.atleast_1d(np.asarray(fpr, float)), q.shape)
    lo = np.full(q.shape, np.nan)
    hi = np.full(q.shape, np.nan)
    tol = 1e-3 if quick else risk.DELTA_TOL
    for i in range(q.size):
        case = sgd_mechanisms(float(q.flat[i]), float(s.flat[i]), int(t.flat[i]), sampling)
        if case.mu is not None:
            v = float(g.advantage(case.mu)) if f is None else float(g.attack_tpr(case.mu, float(f.flat[i])))
            lo.flat[i] = hi.flat[i] = v
            continue
        try:
            if f is None:
                prof = risk.profile(case.mechs, tol=tol, eps=[0.0])
                lo.flat[i], hi.flat[i] = risk.advantage(prof)
            else:
                prof = risk.profile(case.mechs, tol=tol)
                b_lo, b_hi = risk.tradeoff(prof, [float(f.flat[i])])
                lo.flat[i], hi.flat[i] = 1.0 - float(b_hi[0]), 1.0 - float(b_lo[0])
        except (MemoryError, ValueError, FloatingPointError, OverflowError):
            continue  # no claim: NaN
    if sampling != "poisson":
        # Over 2 or more steps no pair of datasets is known to reach the composed C_q hull; Poisson sampling's
        # pairs at the same q, σ, T are realised by two datasets (see dpcalc.core.sgd.tight_interval), so the
        # lower ends are Poisson's.
        many = (t >= 2) & (q < 1)
        if many.any():
            p_lo, _ = attack_bounds(q[many], s[many], t[many], None if f is None else f[many], "poisson", quick)
            lo[many] = np.minimum(p_lo, hi[many])
    return lo, hi


#: ``plan-sgd --to tradeoff|attack`` reads every sampled run of a grid with at most this many of them on its
#: own; a larger grid is read on a lattice of at most this many runs (:func:`sgd_rows`).
GRID_RUNS = 128


class RunTooLarge(MemoryError):
    """A run whose privacy loss distribution does not fit in memory: ``run`` is its (q, σ, T)."""

    def __init__(self, rate: float, sigma: float, steps: int):
        super().__init__(f"q = {rate:g}, σ = {sigma:g}, T = {steps}")
        self.run = (rate, sigma, steps)


def _run_rows(rate: float, sigma: float, steps: int, sampling: str, target: str, points):
    """:func:`rows` of one run (no echoed fields)."""
    case = sgd_mechanisms(rate, sigma, steps, sampling)
    try:
        return rows([case], target, points)
    except MemoryError:
        raise RunTooLarge(rate, sigma, steps) from None


def sgd_rows(rate, sigma, steps, sampling: str, target: str, points, bases: list[dict], budget: int | None = None):
    """Columns, rows, notes and warnings of the readings of a grid of DP-SGD runs (``plan-sgd --to
    tradeoff|attack``): one row per run (``bases[i]``: its echoed fields) and point, in that order.

    A grid of at most ``budget`` (default :data:`GRID_RUNS`) distinct sampled runs (q < 1) has each read on
    its own (:func:`rows`).
    A larger one is read on a lattice of them (:func:`dpcalc.core.sgd.lattice_of`: at most ``budget``
    runs, both ends of every parameter kept); a run on it gets its own readings, every other run a
    bracket, method ``pld-<target>-bracket``. The trade-off curve of a run with less privacy loss (q' <=
    q, σ' >= σ, T' <= T) lies on or above the run's — its output is a post-processing of the run's,
    step by step (see :func:`dpcalc.core.sgd.tight_curve`); the composed C_q hull of sampling without
    replacement is monotone the same way — so β's certified lower end at the nearest lattice run with
    more loss is a lower end for the row, and the certified upper end at the nearest with less loss an
    upper end (TPR and advantage, 1 − β and its supremum, the other way round). Every bracket end is one
    of those runs' values as printed for them: sound, and on its safe side. Rows of runs that read a
    dominating construction (without replacement over 2 or more steps) keep only their sound side, as
    :func:`rows` shows them. q = 1 runs (exact μ-GDP) are read on their own. Raises
    :class:`RunTooLarge` for a run whose distribution does not fit."""
    from dpcalc.core import sgd

    budget = GRID_RUNS if budget is None else int(budget)
    q = np.asarray(rate, float).reshape(-1)
    s = np.asarray(sigma, float).reshape(-1)
    t = np.asarray(steps, np.int64).reshape(-1)
    pts = np.asarray(points, float).reshape(-1)
    sampled = np.flatnonzero(q < 1.0)
    lat = None
    if sampled.size and np.unique(np.stack([q[sampled], s[sampled], t[sampled]]), axis=1).shape[1] > budget:
        lat = sgd.lattice_of(q, s, t, np.zeros(q.size), sampled, budget, budget)
    cols_all: list = []
    notes: list[str] = []
    warns: list[str] = []

    def keep(cols_i, notes_i, warns_i):
        nonlocal cols_all
        if len(cols_i) > len(cols_all):
            cols_all = cols_i
        notes.extend(x for x in notes_i if x not in notes)
        warns.extend(x for x in warns_i if x not in warns)

    by_run: list[list[dict]] = [[] for _ in range(q.size)]
    on_lattice = np.zeros(q.size, dtype=bool)
    if lat is not None:
        on_lattice[lat.rows] = True
    seen: dict = {}  # (a run asked for twice is read once)
    for i in np.flatnonzero(~on_lattice):
        run = (float(q[i]), float(s[i]), int(t[i]))
        if run not in seen:
            seen[run] = _run_rows(*run, sampling, target, pts)
        cols_i, rows_i, notes_i, warns_i = seen[run]
        keep(cols_i, notes_i, warns_i)
        by_run[i] = [{**bases[i], **r} for r in rows_i]
    if lat is not None:
        _lattice_rows(lat, q, s, t, sampling, target, pts, bases, by_run, keep, warns, budget)
    return cols_all, [r for rs in by_run for r in rs], notes, warns


def _lattice_rows(lat, q, s, t, sampling, target, pts, bases, by_run, keep, warns, budget) -> None:
    """Read ``lat``'s runs and fill ``by_run`` for its rows: a run's own rows where it is on the lattice, else
    the bracket (see :func:`sgd_rows`)."""
    lq, ls, lt, _ = lat.settings()
    attack = target == "attack"
    # Per lattice run and point: the sound side and the other end (NaN where not shown), and their names.
    side, other = ("tpr", "tpr_lower") if attack else ("beta", "beta_upper")
    val = np.full((lq.size, pts.size, 4), np.nan)  # side, other, advantage, advantage_lower
    own_rows = []
    for j in range(lq.size):
        try:
            cols_j, rows_j, notes_j, warns_j = _run_rows(float(lq[j]), float(ls[j]), int(lt[j]), sampling, target, pts)
        except RunTooLarge:
            # A lattice run that does not fit (a corner no row asked for, as where q and T grow together): no
            # values from it; a row that would take one is read on its own below.
            own_rows.append(None)
            continue
        keep(cols_j, notes_j, warns_j)
        own_rows.append(rows_j)
        for k, r in enumerate(rows_j):
            keys = (side, other, "advantage", "advantage_lower")
            val[j, k] = [np.nan if r.get(key) is None else float(r[key]) for key in keys]
    own = np.ravel_multi_index(lat.up, lat.shape)
    # TPR and advantage grow with the privacy loss: their upper ends from the runs with more, lower ends from
    # those with less. β falls with it: the same with signs flipped (negation is exact).
    sign = 1.0 if attack else -1.0
    hi = np.stack([lat.upper(sign * val[:, k, 0]) * sign for k in range(pts.size)], axis=1)
    lo = np.stack([lat.lower(sign * val[:, k, 1]) * sign for k in range(pts.size)], axis=1)
    adv_hi = np.stack([lat.upper(val[:, k, 2]) for k in range(pts.size)], axis=1)
    adv_lo = np.stack([lat.lower(val[:, k, 3]) for k in range(pts.size)], axis=1)
    method = f"pld-{target}-bracket"
    bound = "upper" if attack else "lower"
    widest, where = -np.inf, None
    n_br = 0
    runs_br: set = set()
    alone = []
    for r, i in enumerate(lat.rows):
        if lat.on[r] and own_rows[own[r]] is not None:
            by_run[i] = [{**bases[i], **row} for row in own_rows[own[r]]]
            continue
        if lat.on[r] or np.isnan(hi[r]).any() or (attack and np.isnan(adv_hi[r]).any()):
            alone.append(i)  # its lattice run, or every run on its sound side, did not fit: read on its own
            continue
        n_br += 1
        runs_br.add((float(q[i]), float(s[i]), int(t[i])))
        dominating = sampling != "poisson" and int(t[i]) >= 2
        out = []
        for k, x in enumerate(pts):
            a, b = float(hi[r, k]), float(lo[r, k])
            if attack:
                row = {"fpr": float(x), "tpr": a, "tpr_lower": None if np.isnan(b) else b}
                ah, al = float(adv_hi[r, k]), float(adv_lo[r, k])
                row.update(advantage=ah, advantage_lower=None if np.isnan(al) else al)
                if dominating:
                    row.update(tpr_lower=None, advantage_lower=None)
                width = row["tpr"] - row["tpr_lower"] if row["tpr_lower"] is not None else np.nan
            else:
                row = {"alpha": float(x), "beta": a, "beta_upper": None if np.isnan(b) or dominating else b}
                width = row["beta_upper"] - row["beta"] if row["beta_upper"] is not None else np.nan
            row.update(method=method, bound=bound)
            if width > widest:
                widest, where = width, (float(q[i]), float(s[i]), int(t[i]), float(x))
            out.append({**bases[i], **row})
        by_run[i] = out
    for i in alone:
        cols_i, rows_i, notes_i, warns_i = _run_rows(float(q[i]), float(s[i]), int(t[i]), sampling, target, pts)
        keep(cols_i, notes_i, warns_i)
        by_run[i] = [{**bases[i], **r} for r in rows_i]
    if n_br:
        name = "TPR" if attack else "β"
        how = (
            "TPR and the advantage grow with q and T and fall with σ"
            if attack
            else "β falls with q and T and grows with σ"
        )
        wide = ""
        if where is not None:
            at = "FPR" if attack else "α"
            wide = (
                f"; the widest {name} interval is {widest:.3g} wide (q = {where[0]:g}, σ = {where[1]:g}, "
                f"T = {where[2]}, {at} {where[3]:g})"
            )
        warns.append(
            f"{n_br} settings of the grid ({len(runs_br)} distinct runs; method {method}) lie between the "
            f"{lq.size} runs read on a lattice of the grid (at most "
            f"{budget}, both ends of every parameter kept): {how}, so each bracketed row takes its sound side "
            f"from the nearest lattice run with more privacy loss and its other end from the nearest with less — "
            f"certified, but wider than a run's own reading{wide}. Ask for at most {budget} runs to have each "
            "read on its own."
        )
