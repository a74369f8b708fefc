"""The sampling schemes of issue 12 on the command line: which scheme a set of options names, its
certified interval per setting (dpcalc.core.sampling), the notes and warnings the CLI prints, and the
inverse searches on the scheme's upper bound (docs/sampling.md, "What the CLI should call and print")."""

from __future__ import annotations

import math

import click
import numpy as np

#: The schemes of dpcalc.core.sampling, by the name rows carry in their ``scheme`` field.
NEW_SCHEMES = ("truncated-poisson", "user-level", "shuffle", "balls-in-bins")
#: The method of each scheme's upper end.
METHOD = {
    "truncated-poisson": "pld-truncated-poisson",
    "user-level": "pld-user-level",
    "shuffle": "gdp-no-amplification",
    "balls-in-bins": "pld-random-allocation",
}
#: Schemes whose records sit in exactly one batch per epoch (whole epochs; shuffle's upper end is √E/σ-GDP,
#: no amplification; balls-in-bins' the amplified random-allocation bound where it is smaller).
ONE_BATCH = ("shuffle", "balls-in-bins")

NOT_POISSON_NUMBER = (
    "{s}: the upper end assumes no amplification by {how} (each record is in exactly one batch per epoch, "
    "√E/σ-GDP); the true ε may be much lower, but nothing smaller is certified, and Poisson sampling's ε is "
    "not a bound for this scheme."
)
POISSON_ASSUMED = (
    "This ε assumes Poisson sampling (each record joins each batch independently with probability q); for a "
    "loader that shuffles and cuts the data into fixed batches, use --sampling shuffle."
)

USERS_NOTE = (
    "User-level sampling (--users): each batch samples users, and each user's summed contribution is clipped, "
    "so this is standard accounting over users with q = B/U (N in the table is the number of users U); the "
    "neighbours add or remove one user."
)


def first_note(scheme: str) -> str:
    """The note that names the scheme, its neighbouring relation and what σ is relative to."""
    return {
        "poisson": "Poisson sampling, add/remove neighbours; σ is the noise multiplier (sensitivity 1).",
        "without-replacement": "Sampling B of N without replacement, substitution neighbours (Dong, Roth & Su "
        "2022, Thm 4.2); σ is the noise std over the substitution sensitivity (for a sum of gradients clipped to C "
        "that is 2C). Over 2 or more steps the upper end composes C_q(G_{1/σ}), which no pair of datasets is known "
        "to reach; the lower end is Poisson sampling's at the same q, σ, T, which two datasets realise (every "
        "record alike, one changed), so the interval is as wide as the two are apart.",
        "truncated-poisson": "Truncated Poisson sampling: each record joins a batch with probability q = B/N, and a "
        "batch of more than B_max records is cut to B_max chosen at random; add/remove neighbours; σ is the noise "
        "multiplier (sensitivity 1).",
        "user-level": "User-level privacy: add/remove of one user holding K examples, each example Poisson-sampled "
        "with probability q; σ is the noise multiplier of the per-example clipping norm. Upper and lower ends from "
        "the mixture-of-Gaussians pair Σ_j Binom(K, q)_j N(j, σ²) vs N(0, σ²) (Ganesh 2024), exact for aligned "
        "gradients; K = 1 is example-level Poisson sampling.",
        "shuffle": "Shuffled epochs: each epoch a random permutation cut into k = ⌈N/B⌉ batches. Substitution or "
        "zero-out neighbours, σ relative to that sensitivity (substitution: 2C for gradients clipped to C; "
        "zero-out: C). dpcalc makes no claim under add/remove (removing a record shifts every later batch).",
        "balls-in-bins": "Balls-in-bins (random allocation): each epoch every record goes to one of k = ⌈N/B⌉ "
        "batches, uniformly at random and independently of the others. Add/remove neighbours (here the same as "
        "zero-out: no other record's batch changes), σ the noise multiplier of the clipping norm C. Under "
        "substitution only the unamplified √E/σ-GDP bound holds (σ relative to 2C): --sampling shuffle prints it.",
    }[scheme]


def scheme_of(sampling: str, max_batch_size, examples_per_user, via: str = "--sampling") -> str:
    """The scheme a plan-sgd / amplify invocation names; refuses combinations that make no sense."""
    if max_batch_size is not None and examples_per_user is not None:
        raise click.UsageError(
            "--max-batch-size and --examples-per-user cannot be combined (dpcalc has no bound for capped "
            "batches at user level)."
        )
    for opt, v in (("--max-batch-size", max_batch_size), ("--examples-per-user", examples_per_user)):
        if v is not None and sampling != "poisson":
            raise click.UsageError(f"{opt} goes with {via} poisson; it cannot be combined with {via} {sampling}.")
    if max_batch_size is not None:
        return "truncated-poisson"
    if examples_per_user is not None:
        return "user-level"
    return sampling


def epochs_begun(steps: float, dataset_size: float, batch_size: float) -> int:
    """Epochs a run of T steps touches when each epoch is k = ⌈N/B⌉ batches: ⌈T/k⌉ (a partial epoch counts:
    the record may be in its batch)."""
    from dpcalc.core.sampling import batches_per_epoch

    k = batches_per_epoch(int(dataset_size), int(batch_size))
    return -(-int(steps) // k)


def interval(scheme: str, *, n, b, q, sigma, steps, bmax, k_user, delta, **kw):
    """The certified SchemeInterval of one setting (δ an array); ValueError for parameters out of range."""
    from dpcalc.core import sampling as S

    with np.errstate(all="ignore"):
        if scheme == "truncated-poisson":
            return S.truncated_poisson_interval(int(n), float(b), int(bmax), float(sigma), int(steps), delta, **kw)
        if scheme == "user-level":
            check_user_level(int(k_user), float(sigma))
            return S.user_level_interval(float(q), float(sigma), int(steps), int(k_user), delta, **kw)
        f = S.shuffle_interval if scheme == "shuffle" else S.balls_in_bins_interval
        e = epochs_begun(steps, n, b)
        # The batches of the last epoch the run reaches (fewer than k where it stops mid-epoch).
        last = int(steps) - (e - 1) * S.batches_per_epoch(int(n), int(b))
        return f(int(n), int(b), e, float(sigma), delta, last_batches=last, **kw)


def check_user_level(k: int, sigma: float) -> None:
    """ValueError where the user-level pair is beyond what dpcalc accounts in reasonable time and memory (the
    limits of :func:`dpcalc.accounting.user_level_limit`, which piped objects meet too)."""
    from dpcalc.accounting import user_level_limit

    why = user_level_limit(k, sigma)
    if why is not None:
        raise ValueError(f"{why}; for larger groups use group privacy (dpcalc group)")


def quick_upper(scheme: str, *, n, b, q, sigma, steps, bmax, k_user, delta) -> float:
    """A sound upper bound on ε at one δ, fast (the engine's upper end on its starting grid, or the closed
    form): what an inverse search runs on; inf where nothing can be said."""
    from dpcalc.core import pld
    from dpcalc.core.pld import sampling as PS

    d = np.array([float(delta)])
    try:
        with np.errstate(all="ignore"):
            if scheme in ONE_BATCH:
                from dpcalc.core import sampling as S

                e = epochs_begun(steps, n, b)
                gdp_up = float(S.no_amplification_upper(float(sigma), e, d)[0])
                if scheme == "shuffle":
                    return gdp_up
                ra = S.balls_in_bins_upper(S.batches_per_epoch(int(n), int(b)), e, float(sigma), d)
                return float(ra[0][0]) if ra is not None and ra[0][0] < gdp_up else gdp_up  # NaN: GDP
            if scheme == "truncated-poisson":
                n_, bm = int(n), int(bmax)
                qq = float(b) / n_
                pair = pld.subsampled_gaussian(qq, sigma) if bm > n_ else PS.truncated_poisson_gaussian(
                    qq, sigma, [n_ - 1, n_], bm
                )  # fmt: skip
            else:
                check_user_level(int(k_user), float(sigma))
                pair = PS.user_level_gaussian(float(q), float(sigma), int(k_user))
            a = pld.epsilon([(pair, int(steps))], d, upper_only=True)
    except (ValueError, MemoryError, OverflowError, FloatingPointError):
        return math.inf
    u = float(a.upper[0])
    return u if math.isfinite(u) else math.inf


def solve_sigma_gdp(epochs: int, delta: float, target: float) -> float:
    """The smallest σ whose exact GDP bound √E/σ meets ε ≤ target at δ (closed form in μ, rounded to the safe
    side and re-checked by the caller)."""
    from dpcalc.core import gdp

    mu = float(np.asarray(gdp.mu_for_dp(target, delta)).reshape(-1)[0])
    if not mu > 0:
        return math.inf
    return math.sqrt(epochs) / mu


def search_sigma(value, target: float, start: float = 1.0, rtol: float = 1e-3) -> tuple[float, float] | None:
    """The smallest σ (to a relative rtol) where ``value(σ)`` (a quick upper bound on ε, decreasing in σ; inf
    where nothing can be said) is at most ``target``: (σ, the σ/(1 + rtol) checked below it), or None when
    no σ up to 1e12 meets it.

    The bracket is found from ``start`` by steps that assume ε ∝ σ^−a locally (a = 3 at first, then as
    measured; a step at most 4×, aimed 5 % past the predicted root) — small σ, where bounds cost the most,
    is not visited unless the answer is there. Then regula falsi in (log σ, log ε), aimed a hair past the
    predicted root so that it lands on the side that meets, the point rtol below that probed next: two or
    three bounds after the bracket where bisection takes ten. Where ε is not finite, the geometric
    midpoint; a prediction is kept rtol/4 inside the bracket, and a side that stays put twice is weighted
    down (Illinois), so the bracket always shrinks."""
    x = max(float(start), 1e-6)
    v = value(x)
    a = 3.0
    lo = hi = None
    vl = vh = math.inf
    for _ in range(200):
        if v <= target:
            hi, vh = x, v
            if lo is not None:
                break
            step = (target / v) ** (1 / a) * 1.05 if 0 < v < math.inf else 4.0
            x_new = x / (min(max(step, 1 + rtol), 4.0) if math.isfinite(step) else 4.0)
            if x_new < 1e-6:
                return hi, x_new
        else:
            lo, vl = x, v
            if hi is not None:
                break
            step = (v / target) ** (1 / a) * 1.05 if v < math.inf else 4.0
            x_new = x * (min(max(step, 1 + rtol), 4.0) if math.isfinite(step) else 4.0)
            if x_new > 1e12:
                return None
        v_new = value(x_new)
        if 0 < v < math.inf and 0 < v_new < math.inf and v != v_new:
            a = min(max(math.log(v / v_new) / math.log(x_new / x), 0.25), 8.0)
        x, v = x_new, v_new
    if lo is None or hi is None:
        return None
    stay = 0  # >0: hi kept moving (lo stayed put) this many times; <0: lo did
    probe = False
    for _ in range(200):
        if hi / lo <= 1 + rtol:
            break
        if probe:
            x = max(hi / (1 + rtol), math.sqrt(lo * hi))  # rtol below the last meeting σ
        else:
            x = math.sqrt(lo * hi)
            if math.isfinite(vl) and vl > target and 0 < vh <= target:
                fl, fh = math.log(vl / target), math.log(vh / target)
                if stay >= 2:
                    fl /= 2 ** (stay - 1)
                elif stay <= -2:
                    fh /= 2 ** (-stay - 1)
                t = fl / (fl - fh)
                y = lo * (hi / lo) ** t * (1 + rtol / 2)
                x = min(max(y, lo * (1 + rtol / 4)), hi / (1 + rtol / 4))
        vx = value(x)
        was_probe, probe = probe, False
        if vx <= target:
            hi, vh = x, vx
            if not was_probe:  # (a probe's step is not regula falsi's: it does not count toward Illinois)
                stay = stay + 1 if stay > 0 else 1
                # Probe rtol below only when this point is predicted within about 2·rtol of the root (the
                # bracket's own slope in log-log): a point far above it is followed by regula falsi.
                slope = math.log(vl / vh) / math.log(hi / lo) if math.isfinite(vl) and vh > 0 else 0.0
                probe = not slope > 0 or math.log(target / vh) <= 2 * rtol * slope
        else:
            lo, vl = x, vx
            if not was_probe:
                stay = stay - 1 if stay < 0 else -1
    return hi, hi / (1 + rtol)


def bisect_steps(meets, start: int, cap: int = 10**9) -> tuple[int, int] | None:
    """The largest whole step count T ≤ cap with ``meets(T)`` (ε grows with T): (T, T + 1), or None when
    not even one step meets it."""
    if not meets(1):
        return None
    lo, hi = 1, max(2, int(start))
    while meets(hi):
        lo = hi
        if hi >= cap:
            return cap, cap
        hi = min(cap, hi * 2)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if meets(mid):
            lo = mid
        else:
            hi = mid
    return lo, lo + 1


def option_of(scheme: str) -> str:
    """The option that names a scheme, for messages."""
    return {"truncated-poisson": "--max-batch-size", "user-level": "--examples-per-user"}.get(
        scheme, f"--sampling {scheme}"
    )


def _param(m: dict, key: str, i: int):
    a = m.get(key)
    return None if a is None else a[i]


def label(scheme: str, m: dict, q, total, i: int) -> str:
    """A row's setting in words, for messages."""
    parts = []
    if "dataset_size" in m and scheme != "user-level":
        parts.append(f"N={int(m['dataset_size'][i])}, B={int(m['batch_size'][i])}")
    else:
        parts.append(f"q={q[i]:g}")
    parts.append(f"σ={m['sigma'][i]:g}, T={int(total[i])}")
    if scheme == "truncated-poisson":
        parts.append(f"B_max={int(m['max_batch_size'][i])}")
    if scheme == "user-level":
        parts.append(f"K={int(m['examples_per_user'][i])}")
    parts.append(f"δ={m['delta'][i]:g}")
    return ", ".join(parts)


def _args(m: dict, q, total, i: int, sigma=None, steps=None) -> dict:
    n = _param(m, "dataset_size", i)
    b = _param(m, "batch_size", i)
    return dict(
        n=n,
        b=b,
        q=float(q[i]),
        sigma=float(m["sigma"][i] if sigma is None else sigma),
        steps=int(total[i] if steps is None else steps),
        bmax=_param(m, "max_batch_size", i),
        k_user=_param(m, "examples_per_user", i),
    )


def checked(scheme: str, args: dict, delta, kw=None):
    """:func:`interval`, its errors as one-line usage errors naming the option."""
    try:
        return interval(scheme, **args, delta=delta, **(kw or {}))
    except MemoryError:
        raise click.UsageError(
            f"the privacy loss distribution of {option_of(scheme)} at these inputs does not fit in memory; use fewer "
            "steps or a larger --noise-multiplier."
        ) from None
    except (ValueError, OverflowError, FloatingPointError) as e:
        if scheme in ONE_BATCH and "delta" not in str(e):
            return _upper_only(scheme, args, delta)
        raise click.UsageError(f"{option_of(scheme)} cannot be accounted for these inputs: {e}.") from None


def _upper_only(scheme: str, args: dict, delta):
    """Shuffle / balls-in-bins where the max-statistic lower end cannot be computed (e.g. 10^15 batches per
    epoch): the closed-form upper end alone, the lower end NaN (shown as none), a note saying so."""
    from dpcalc.core.sampling import SchemeInterval, no_amplification_upper

    d = np.atleast_1d(np.asarray(delta, float))
    e = epochs_begun(args["steps"], args["n"], args["b"])
    up = no_amplification_upper(float(args["sigma"]), e, d)
    k = batches_per_epoch(args["n"], args["b"])
    note = f"no lower end: the largest batch output over k = {k} batches per epoch could not be computed"
    how = "shuffling" if scheme == "shuffle" else "random allocation"
    notes = (f"upper: no amplification by {how}", note)
    return SchemeInterval(np.full(d.shape, np.nan), up, METHOD[scheme], "upper", "none", np.ones(d.shape, bool), notes)


#: A scheme grid of more runs than this (distinct inputs other than δ) is read on lattices (:func:`intervals`).
GRID_RUNS = 128


def intervals(scheme: str, m: dict, q, total, kw) -> list:
    """Each mesh point's (SchemeInterval, index of its δ): settings that differ only in δ share one computation.

    A grid of more than :data:`GRID_RUNS` runs is read on lattices: per family of runs that differ only in σ
    and the number of steps (the same N, B and cap or K), one of at most GRID_RUNS / (number of families)
    runs, at least 4 (:func:`_lattice_family`); a family with no more runs than that, and a grid of at most
    GRID_RUNS runs, is read run by run as before."""
    n_pts = m["sigma"].size
    groups: dict = {}
    for i in range(n_pts):
        key = tuple(sorted(_args(m, q, total, i).items(), key=lambda x: x[0]))
        groups.setdefault(key, []).append(i)
    out: list = [None] * n_pts
    direct = list(groups.values())
    if len(groups) > GRID_RUNS:
        fams: dict = {}
        for key, idx in groups.items():
            fams.setdefault(tuple(x for x in key if x[0] not in ("sigma", "steps")), []).append(idx)
        per = max(4, GRID_RUNS // len(fams))
        direct = []
        for members in fams.values():
            if len(members) <= per:
                direct += members
            else:
                _lattice_family(scheme, m, q, total, kw, np.array(sorted(i for g in members for i in g)), per, out)
    for idx in direct:
        args = _args(m, q, total, idx[0])
        ds = np.array([m["delta"][i] for i in idx], float)
        r = checked(scheme, args, ds, kw)
        for j, i in enumerate(idx):
            out[i] = (r, j)
    return out


def _lattice_family(scheme: str, m: dict, q, total, kw, idx: np.ndarray, per: int, out: list) -> None:
    """Fill ``out`` for the mesh points ``idx`` — runs of one scheme that differ only in σ, steps and δ — from a
    lattice of at most ``per`` of their (σ, steps) (:func:`dpcalc.core.sgd.lattice_of`: spread evenly in log
    scale, both ends kept), read at every δ of the family. A point on the lattice gets its run's interval; any
    other the bracket (lower method ``pld-bracket``; the upper end's method ``pld-bracket`` too, or the run's own
    closed form where that is smaller): the scheme's ε grows with the steps (the first T steps' output
    is a post-processing of T' > T steps') and falls with σ (more noise is the output plus independent noise),
    so the certified upper end at the nearest lattice run with more privacy loss (σ' <= σ, T' >= T) is an upper
    end for the point, and the certified lower end (and shuffle's zero-out lower end) at the nearest with less
    a lower end. A point whose bracket has no upper end (its lattice runs could not be accounted) is read on
    its own."""
    from dpcalc.core import sgd
    from dpcalc.core.pld.engine import widths, within
    from dpcalc.core.sampling import SchemeInterval, batches_per_epoch, no_amplification_uppers

    sig = np.asarray(m["sigma"], float)[idx]
    steps = np.asarray(total)[idx].astype(np.int64)
    dl = np.asarray(m["delta"], float)[idx]
    lat = sgd.lattice_of(np.zeros(idx.size), sig, steps, dl, np.arange(idx.size), per, per)
    shape = lat.shape
    lo, up, zero = (np.full(shape, np.nan) for _ in range(3))
    runs: dict = {}
    base = _args(m, q, total, int(idx[0]))
    for a, s_ in enumerate(lat.ps):
        for b, t_ in enumerate(lat.pt):
            try:
                r = checked(scheme, dict(base, sigma=float(s_), steps=int(t_)), lat.ds, kw)
            except click.UsageError:
                continue  # (no claim from this run: the bracket takes the next, or the point is read alone)
            runs[(a, b)] = r
            lo[0, a, b], up[0, a, b] = r.lower, r.upper
            if r.zero_out_lower is not None:
                zero[0, a, b] = r.zero_out_lower
    u, l_, z = lat.upper(up.ravel()), lat.lower(lo.ravel()), lat.lower(zero.ravel())
    rel, abs_ = widths(kw)
    own = np.full(idx.size, np.inf)
    if scheme in ONE_BATCH:
        # Each run's own closed-form upper end (√E/σ-GDP, no amplification), where it is at most the bracket's:
        # the whole of shuffle's upper end, and balls-in-bins' where amplification does not win (one call for
        # all, with each run's own digits).
        k_ = batches_per_epoch(int(base["n"]), int(base["b"]))
        own = no_amplification_uppers(sig, -(-steps // k_), dl)
    for k, i in enumerate(idx):
        a, b, d = int(lat.up[1][k]), int(lat.up[2][k]), int(lat.up[3][k])
        if lat.on[k] and (a, b) in runs:
            out[i] = (runs[(a, b)], d)
        elif not lat.on[k] and np.isfinite(u[k]):
            top, how = float(u[k]), sgd.BRACKET
            if own[k] <= top:
                top, how = float(own[k]), METHOD["shuffle"]
            out[i] = (
                SchemeInterval(
                    np.array([l_[k]]),
                    np.array([top]),
                    how,
                    "upper",
                    sgd.BRACKET,  # (also where no lower end is known: it marks the row as bracketed)
                    np.array([bool(np.isfinite(l_[k]) and within(l_[k], top, rel, abs_))]),
                    zero_out_lower=np.array([z[k]]) if scheme == "shuffle" else None,
                ),
                0,
            )
        else:
            out[i] = (checked(scheme, _args(m, q, total, int(i)), np.array([float(m["delta"][i])]), kw), 0)


def bracketed(r) -> bool:
    """Whether a row's interval is a lattice bracket (:func:`_lattice_family`), not its run's own."""
    from dpcalc.core import sgd

    return r.lower_method == sgd.BRACKET


def bracket_warnings(results, scheme: str) -> list[str]:
    """The one warning for the rows of :func:`intervals` bracketed on lattices (none if there are none)."""
    br = [(r, j) for r, j in results if bracketed(r)]
    if not br:
        return []
    upper = (
        "the certified upper end at the nearest lattice run with more privacy loss, or their own √E/σ-GDP bound "
        "where that is smaller (method gdp-no-amplification: all of shuffle's)"
        if scheme in ONE_BATCH
        else "the certified upper end at the nearest lattice run with more privacy loss (method pld-bracket)"
    )
    text = (
        f"{len(br)} rows are bracketed (lower method pld-bracket) between runs accounted on lattices of the grid "
        f"(a grid of more than {GRID_RUNS} runs is accounted on a lattice of σ and the steps per family "
        f"of runs that share their other inputs, each of at most max(4, {GRID_RUNS} / families) runs, both ends "
        "of σ and of the steps kept): ε grows with the steps and falls with σ, so their ε is "
        f"{upper}, and their ε ≥ the certified lower end at the nearest with less — both still certified bounds"
    )
    wide = sum(not bool(r.met[j]) for r, j in br)
    if wide and scheme not in ONE_BATCH:  # (shuffle's and balls-in-bins' runs are as wide read alone)
        return [
            f"{text}; {wide} of these intervals are wider than asked (split the grid to have each run accounted on "
            "its own)."
        ]
    return [text + "."]


#: The inputs that make a family of runs (kept exact on lattices): the dataset, the batch or rate, the cap, K.
FAMILY_KEYS = ("dataset_size", "batch_size", "rate", "max_batch_size", "examples_per_user")


def lattice_rows(n: int, family: list, axes: list, solve_row, bracket, budget: int) -> list:
    """(row, warnings) of each of ``n`` rows of an inverse grid: every row searched (``solve_row(i)``) where there
    are at most ``budget``; else per family (rows with equal ``family[i]``) a lattice of at most max(4, budget /
    families) of its rows — values of each axis (``axes``: (array, direction), +1 where a larger value means
    more privacy loss at any fixed answer, −1 less; the target counts −1) picked evenly in log scale with both
    ends kept — searched, and every other row ``bracket(i, H, E)``: H the nearest searched row with as much loss
    or more on every axis, E the nearest with as little or less, both found optimal (search ``optimal``). A row
    whose H or E is not a row of the grid (a grid that is no product) or not optimal is searched on its own."""
    from dpcalc.core import sgd

    if n <= budget:
        return [solve_row(i) for i in range(n)]
    groups: dict = {}
    for i in range(n):
        groups.setdefault(family[i] if family else (), []).append(i)
    per = max(4, budget // len(groups))
    solved: dict = {}

    def get(i):
        if i not in solved:
            solved[i] = solve_row(i)
        return solved[i]

    out: list = [None] * n
    for idx in groups.values():
        idx = np.array(idx)
        cols = [np.asarray(a, float)[idx] for a, _ in axes]
        dirs = [d for _, d in axes]
        picks = None if len(idx) <= per else sgd.lattice_picks([np.unique(c) for c in cols], dirs, per)
        if picks is None:
            for i in idx:
                out[i] = get(int(i))
            continue
        where = {tuple(c[j] for c in cols): int(idx[j]) for j in range(len(idx))}
        hard, easy, on = sgd.nearest_picks(cols, picks, dirs)
        for j, i in enumerate(idx):
            h = where.get(tuple(p[a[j]] for p, a in zip(picks, hard)))
            e = where.get(tuple(p[a[j]] for p, a in zip(picks, easy)))
            if on[j] or h is None or e is None:
                out[i] = get(int(i))
                continue
            (rh, _), (re_, _) = get(h), get(e)
            if rh.get("search") == sgd.OPTIMAL and re_.get("search") == sgd.OPTIMAL:
                out[i] = (bracket(int(i), rh, re_), [])
            else:
                out[i] = get(int(i))
    return out


def base_row(v: dict, m: dict, q, total, i: int) -> dict:
    """The inputs of a row (the scheme's own options included)."""
    from dpcalc.cli import _common as c

    return {
        "dataset_size": int(m["dataset_size"][i]) if v["dataset_size"] is not None else None,
        "batch_size": int(m["batch_size"][i]) if v["batch_size"] is not None else None,
        "rate": c.f(q[i]),
        "noise_multiplier": c.f(m["sigma"][i]) if "sigma" in m else None,
        "steps": int(total[i]) if total is not None else None,
        "max_batch_size": int(m["max_batch_size"][i]) if "max_batch_size" in m else None,
        "examples_per_user": int(m["examples_per_user"][i]) if "examples_per_user" in m else None,
        "delta": c.f(m["delta"][i]),
    }


def interval_fields(r, j: int, scheme: str) -> dict:
    """A SchemeInterval's ends at δ index j, as row fields: ε ≥ (lower), ε (upper), each end's method."""
    up, lo = float(r.upper[j]), float(r.lower[j])
    return {
        "epsilon_lower": lo if np.isfinite(lo) else None,
        "epsilon": up,
        "epsilon_width": up - lo if np.isfinite(lo) else None,
        "method": r.method_at(j),
        "bound": r.bound,
        "lower_method": r.lower_method if np.isfinite(lo) else None,
        "scheme": scheme,
        **(
            {"epsilon_lower_zero_out": float(r.zero_out_lower[j]) if np.isfinite(r.zero_out_lower[j]) else None}
            if r.zero_out_lower is not None
            else {}
        ),
    }


def rdp_group_epsilons(m: dict, q, total) -> np.ndarray:
    """ε of the RDP row beside each user-level run (:func:`rdp_group_row`), all runs in one call."""
    from dpcalc.core import sampling as S

    return S.user_level_rdp_rows(q, m["sigma"], total, m["examples_per_user"], m["delta"])


def rdp_group_row(row: dict, epsilon: float) -> dict:
    """The RDP row beside a user-level interval: the example-level RDP curve of the T steps, the group property
    for 2^c >= K examples ([M17] Prop. 2) and the (ε, δ) conversion — an independent, looser upper bound
    (``epsilon``, from :func:`rdp_group_epsilons`)."""
    out = dict(row)
    out.update(
        epsilon_lower=None,
        epsilon=float(epsilon),
        epsilon_width=None,
        method="rdp-group",
        bound="upper",
        lower_method=None,
    )
    return out


def run_object(scheme: str, r, j: int, m: dict, q, total, i: int):
    """The privacy object a run pipes on (into compose, or as a ledger would hold it): a shuffled or
    balls-in-bins run is a ``shuffled`` object (E Gaussian mechanisms on the record: its √E/σ-GDP upper end;
    balls-in-bins carries its k batches per epoch, for the amplified bound by PLD);
    a truncated-Poisson or user-level run is T steps of a ``subsampled`` Gaussian with that scheme (accounted
    by the PLD engine on the same pair as the upper end here)."""
    from dpcalc.model import Composed, Gaussian, Shuffled, Subsampled

    g = Gaussian(float(m["sigma"][i]), 1.0)
    if scheme in ONE_BATCH:
        e = epochs_begun(total[i], m["dataset_size"][i], m["batch_size"][i])
        k = batches_per_epoch(int(m["dataset_size"][i]), int(m["batch_size"][i])) if scheme == "balls-in-bins" else None
        return Shuffled(g, e, scheme, k)
    if scheme == "truncated-poisson":
        step = Subsampled(
            g,
            float(q[i]),
            scheme,
            "add-remove",
            dataset_size=int(m["dataset_size"][i]),
            max_batch_size=int(m["max_batch_size"][i]),
        )
    else:
        step = Subsampled(g, float(q[i]), scheme, "add-remove", examples_per_user=int(m["examples_per_user"][i]))
    return Composed(((step, int(total[i])),))


def closing_notes(scheme: str) -> list[str]:
    """What every answer under a scheme says about its two ends and the objects it pipes on."""
    obj = (
        "the run's object (for compose) is a shuffled object: E Gaussian mechanisms of noise multiplier σ, the "
        "√E/σ-GDP upper end"
        if scheme == "shuffle"
        else "the run's object (for compose) is a shuffled object with its k batches per epoch: E balls-in-bins "
        "epochs, accounted by PLD on the same construction as the upper end (other accountants: √E/σ-GDP)"
        if scheme == "balls-in-bins"
        else f"the run's object (for compose) is T steps of a {scheme} subsampled Gaussian, accounted by PLD on "
        "the same pair as the upper end"
    )
    out = [
        "ε ≥ is a certified lower bound and ε a certified upper bound on the scheme's true ε; the two ends can come "
        "from different constructions (method: the upper end's, lower method: the lower end's), so their distance "
        f"is what is known about the scheme, not a numerical error; {obj}."
    ]
    if scheme == "user-level":
        out.append(
            "The rdp-group row is an independent upper bound beside the interval: the example-level RDP curve of "
            "the T steps, then RDP's group property for 2^c >= K examples (Mironov 2017, Prop. 2: order α/2^c, "
            "3^c times the RDP) — sound but loose; the pld-user-level row is the answer."
        )
    return out


def warnings_for(scheme: str) -> list[str]:
    """The stderr warnings of a scheme (docs/sampling.md)."""
    if scheme == "shuffle":
        return [NOT_POISSON_NUMBER.format(s=f"--sampling {scheme}", how="shuffling")]
    return []


def columns(rows: list[dict], inverse: bool) -> list:
    """The table's columns (those some row has a value for)."""
    from dpcalc.model import Column

    cols = (
        [
            Column("dataset_size", "N", "int"),
            Column("target_epsilon", "target ε"),
            Column("delta", "δ"),
            Column("batch_size", "B", "int"),
            Column("rate", "q"),
            Column("max_batch_size", "B_max", "int"),
            Column("examples_per_user", "K", "int"),
            Column("noise_multiplier", "σ", safe="up"),
            Column("epochs", "epochs", safe="down"),
            Column("steps", "steps", "int"),
            Column("epsilon", "ε at answer", safe="up"),
            Column("found", "found", "bool"),
            Column("search", "search", "text"),
        ]
        if inverse
        else [
            Column("dataset_size", "N", "int"),
            Column("batch_size", "B", "int"),
            Column("rate", "q"),
            Column("max_batch_size", "B_max", "int"),
            Column("examples_per_user", "K", "int"),
            Column("noise_multiplier", "σ"),
            Column("epochs", "epochs"),
            Column("steps", "steps", "int"),
            Column("delta", "δ"),
            Column("epsilon_lower", "ε ≥ (certified)", safe="down"),
            Column("epsilon_lower_zero_out", "ε ≥ (zero-out)", safe="down"),
            Column("epsilon", "ε", safe="up"),
        ]
    ) + [
        Column("method", "method", "text"),
        Column("bound", "bound", "text"),
        Column("lower_method", "lower method", "text"),
        Column("scheme", "scheme", "text"),
    ]
    return [col for col in cols if any(r.get(col.key) is not None for r in rows)]


def batches_per_epoch(dataset_size, batch_size) -> int:
    """k = ⌈N/B⌉ (dpcalc.core.sampling)."""
    from dpcalc.core.sampling import batches_per_epoch as k

    return k(int(dataset_size), int(batch_size))


def nudge_up(full, sigma: float, target: float, tries: int = 64):
    """(σ, its full interval) with σ moved up (by 1e-9 relative per try) until the full upper end meets the
    target; None if it never does."""
    s = float(sigma)
    for _ in range(tries):
        r = full(s)
        if float(r.upper[0]) <= target:
            return s, r
        s *= 1 + 1e-9
    return None


def refine_sigma(full, sigma: float, target: float, rtol: float, tries: int = 64):
    """The quick search's σ, re-checked in full: stepped up by (1 + rtol) until the full upper end meets the
    target, or down while the next σ/(1 + rtol) still meets it (the full bound is the tighter one). (σ, its
    full interval), or None."""
    s = float(sigma)
    r = full(s)
    for _ in range(tries):
        if float(r.upper[0]) <= target:
            break
        s *= 1 + rtol
        r = full(s)
    else:
        return None
    for _ in range(tries):
        try:
            rn = full(s / (1 + rtol))
        except click.UsageError:  # below what can be accounted: the answer stands, its next value unchecked
            break
        if not float(rn.upper[0]) <= target:
            break
        s, r = s / (1 + rtol), rn
    return s, r


def bisect_whole(meets, top: int, rtol: float = 1e-3) -> int | None:
    """The largest whole x in [1, top] meeting the target by ``meets`` (assumed to grow worse with x): doubling
    from 1, then bisection to max(1, rtol·x). None when even 1 does not meet it."""
    if not meets(1):
        return None
    ok, bad = 1, None
    while ok < top:
        x = min(2 * ok, top)
        if meets(x):
            ok = x
        else:
            bad = x
            break
    if bad is None:
        return int(top)
    while bad - ok > max(1, int(rtol * ok)):
        mid = (ok + bad) // 2
        if meets(mid):
            ok = mid
        else:
            bad = mid
    return int(ok)


def refine_whole(full, x: int, target: float, rtol: float, top: int, tries: int = 64):
    """The quick search's whole number, re-checked in full: stepped down until the full upper end meets the
    target, or up while x + max(1, rtol·x) still meets it. x, or None."""
    for _ in range(tries):
        if float(full(x).upper[0]) <= target:
            break
        x -= max(1, int(rtol * x))
        if x < 1:
            return None
    else:
        return None
    for _ in range(tries):
        nxt = x + max(1, int(rtol * x))
        if nxt > top or not float(full(nxt).upper[0]) <= target:
            break
        x = nxt
    return x


def solve_epochs_whole(upper_at, target: float, cap: int = 10**9):
    """The most whole epochs E (1 … cap) with ``upper_at(E)`` ≤ target, for an upper end increasing in E:
    doubling, then bisection; None if not even one epoch meets it."""
    if not upper_at(1) <= target:
        return None
    lo, hi = 1, 2
    while hi <= cap and upper_at(hi) <= target:
        lo, hi = hi, hi * 2
    hi = min(hi, cap + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if upper_at(mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo


def solve_epochs_gdp(upper_at, sigma: float, delta: float, target: float):
    """The most whole epochs E with the √E/σ-GDP upper end ≤ target (closed form in μ, then checked at E and
    E + 1 with ``upper_at(E)``); None if not even one epoch meets it."""
    from dpcalc.core import gdp

    mu = float(np.asarray(gdp.mu_for_dp(target, delta)).reshape(-1)[0])
    e = max(1, int(math.floor((mu * sigma) ** 2))) if mu > 0 and math.isfinite(mu) else 1
    e = min(e, 10**9)
    while e >= 1 and not upper_at(e) <= target:
        e -= 1
    if e < 1:
        return None
    while e < 10**9 and upper_at(e + 1) <= target:
        e += 1
    return e
