"""DP-SGD under other sampling schemes: certified [lower, upper] on ε, each end with its method.

One function per scheme, for ``plan-sgd --sampling …``; each returns a :class:`SchemeInterval` per
case (arrays broadcast over δ; one scheme setting per call). The two ends of an interval may come
from different constructions — an upper bound from a dominating pair (or a closed form), a lower
bound from a pair of actual neighbouring datasets — so each end names its own method. Every end is
certified: the upper end is at least, the lower end at most, the scheme's true ε (NaN where no
claim is made). See docs/sampling.md for what the CLI prints.

=================  ===========================  ================  =====================
scheme             upper end (method)           bound             lower end (method)
=================  ===========================  ================  =====================
truncated Poisson  ``pld-truncated-poisson``    upper             ``pld-poisson-qbar``
shuffle            ``gdp-no-amplification``     upper             ``pld-max-statistic``
balls-in-bins      ``pld-random-allocation``    upper             ``pld-max-statistic``
user level         ``pld-user-level``           upper             ``pld-user-level``
=================  ===========================  ================  =====================

Neighbouring relations: truncated Poisson and user level are add/remove (of a record, of a user);
shuffle is stated for substitution or zero-out ("replace by a record with zero gradient")
neighbours, σ relative to that relation's sensitivity (substitution: the sensitivity of replacing
one record, twice the clipping norm). Under add/remove proper, with a dataset whose size changes, a
shuffled epoch's batches all shift after the removed record and no bound here applies (see
docs/sampling.md). Balls-in-bins allocates each record independently, so add/remove is zero-out
there: its amplified upper end is stated for it (σ relative to the clipping norm); under
substitution only its unamplified √E/σ-GDP end holds (σ relative to twice the clipping norm).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_U = float(np.finfo(float).eps)

__all__ = [
    "SchemeInterval",
    "batches_per_epoch",
    "truncated_poisson_interval",
    "truncated_poisson_rate_interval",
    "shuffle_interval",
    "shuffle_zero_out_lower",
    "balls_in_bins_interval",
    "balls_in_bins_upper",
    "balls_in_bins_pair",
    "user_level_interval",
    "SCHEME_NEIGHBOURS",
]

#: The neighbouring relation each scheme's numbers assume.
SCHEME_NEIGHBOURS = {
    "truncated-poisson": "add/remove",
    "shuffle": "substitution or zero-out",
    "balls-in-bins": "add/remove or zero-out",
    "user-level": "add/remove (of a user)",
}


@dataclass(frozen=True)
class SchemeInterval:
    """Certified [lower, upper] on ε per δ, and where each end comes from.

    ``method``/``bound`` describe the upper end (``bound``: ``upper`` — a sound guarantee that may
    be loose; ``exact`` would mean the scheme's ε itself; ``method`` one name, or one per δ where the
    upper end is the smaller of two constructions); ``lower_method`` the lower end.
    ``met``: whether the engine reached the width asked for on the construction(s) it ran (the
    interval itself can be wide where the upper and lower constructions differ: that is the width
    of what is known, not a numerical one). ``notes``: lines the CLI shows under the table.
    ``upper_pair``: the engine's interval on the dominating pair itself (where there is one) — how
    far its upper end is from that pair's own ε (its lower end may be the scheme's, where that was
    already within the width of the pair's upper end).
    """

    lower: np.ndarray
    upper: np.ndarray
    method: str | tuple[str, ...]
    bound: str
    lower_method: str
    met: np.ndarray
    notes: tuple[str, ...] = ()
    upper_pair: tuple[np.ndarray, np.ndarray] | None = field(default=None, compare=False)
    #: Shuffle: a certified lower end that holds under zero-out neighbours only (σ relative to C), from
    #: :func:`shuffle_zero_out_lower`; None elsewhere.
    zero_out_lower: np.ndarray | None = field(default=None, compare=False)
    #: Lines for stderr: an end answered by a looser construction than the scheme's own (a fallback).
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def method_at(self, j: int) -> str:
        """The upper end's method at δ index j."""
        return self.method if isinstance(self.method, str) else self.method[j]


def batches_per_epoch(dataset_size: int, batch_size: int) -> int:
    """k = ⌈N/B⌉ batches of an epoch that covers every record once (shuffle, balls-in-bins)."""
    n, b = int(dataset_size), int(batch_size)
    if n < 1 or b < 1:
        raise ValueError("dataset_size and batch_size must be at least 1")
    return -(-n // b)


def _delta(delta) -> np.ndarray:
    d = np.atleast_1d(np.asarray(delta, float)).ravel()
    from .pld import MIN_DELTA

    if np.any(~(d >= MIN_DELTA)) or np.any(~(d < 1)):
        raise ValueError(f"delta must be in [{MIN_DELTA:g}, 1)")
    return d


def _engine(mechs, delta, **kw):
    from . import pld

    with np.errstate(all="ignore"):
        return pld.epsilon(mechs, delta, **kw)


def truncated_poisson_interval(
    dataset_size: int, batch_size: float, max_batch_size: int, sigma: float, steps: int, delta, **kw
) -> SchemeInterval:
    """Truncated Poisson sampling: rate q = B/N, batches of more than B_max records cut to B_max.

    Upper end: the PLD engine's upper end on the dominating pair of
    :func:`.pld.sampling.truncated_poisson_gaussian` (both directions, for the differing record's
    N − 1 and N others: a dataset of N records and its neighbours either side), T-fold. Lower end:
    the engine's lower end on the Poisson-subsampled Gaussian at the rate q̄ <= q·E[min(1,
    B_max/(K+1))] of :func:`.pld.sampling.truncated_poisson_lower_rate` — the exact output of two
    actual neighbouring datasets (the others' gradients zero). Where B_max > N the batch is never
    cut: Poisson sampling's own interval (both ends from the engine on that pair).
    """
    return truncated_poisson_rate_interval(
        dataset_size, float(batch_size) / int(dataset_size), max_batch_size, sigma, steps, delta, **kw
    )


def truncated_poisson_rate_interval(
    dataset_size: int, rate: float, max_batch_size: int, sigma: float, steps: int, delta, **kw
) -> SchemeInterval:
    """:func:`truncated_poisson_interval` given the rate q itself (a piped run's), not the batch size."""
    from . import pld
    from .pld import sampling as S

    n, bmax = int(dataset_size), int(max_batch_size)
    q = float(rate)
    if not (0 < q <= 1) or bmax < 1 or int(steps) < 1 or not sigma > 0:
        raise ValueError("need 0 < batch_size <= dataset_size, max_batch_size >= 1, steps >= 1, sigma > 0")
    d = _delta(delta)
    t = int(steps)
    if bmax > n:
        a = _engine([(pld.subsampled_gaussian(q, sigma), t)], d, **kw)
        return SchemeInterval(
            a.lower, a.upper, "pld", "upper", "pld", a.met, ("B_max > N: no batch is ever cut (Poisson sampling)",)
        )
    # Neither run's upper end on the fine grid: the second is a dominating construction's (a bound on the
    # scheme, not its ε), the first's upper end is not used. The first run's lower end is certified for
    # the scheme, so for the pair that dominates it too: where the pair's upper end comes within the
    # width of it, the pair's own lower end is not needed.
    qbar = min(S.truncated_poisson_lower_rate(q, n - 1, bmax), S.truncated_poisson_lower_rate(q, n, bmax))
    lo = _engine([(pld.subsampled_gaussian(qbar, sigma), t)], d, fine_upper=False, **kw)
    pair = S.truncated_poisson_gaussian(q, sigma, [n - 1, n], bmax)
    up = _engine([(pair, t)], d, fine_upper=False, lower_hint=lo.lower, lower_used=False, **kw)
    lower = np.minimum(lo.lower, up.upper)
    notes = (
        "upper: dominating pair given the others' sample (a cut batch: the record may displace another,"
        " sensitivity 2); lower: two actual datasets (others' gradients 0), Poisson at the effective"
        f" rate q̄ = {qbar:.6g} (q = {q:.6g})",
    )
    return SchemeInterval(
        lower,
        up.upper,
        "pld-truncated-poisson",
        "upper",
        "pld-poisson-qbar",
        up.met & lo.met,
        notes,
        (up.lower, up.upper),
    )


def _max_statistic_lower(sigma: float, batches: int, epochs: int, d: np.ndarray, last_batches=None, **kw):
    """The engine on E epochs of the max-statistic pair, the last one cut after ``last_batches`` batches
    when that is fewer than k (a run that stops mid-epoch: that epoch's pair is the partial one of
    :func:`.pld.sampling.max_statistic`, not a whole epoch's)."""
    from .pld import sampling as S

    k, e = int(batches), int(epochs)
    r = k if last_batches is None else int(last_batches)
    if not 1 <= r <= k:
        raise ValueError("last_batches must be between 1 and the batches per epoch")
    mu = 1.0 / sigma
    mechs = [(S.max_statistic(mu, k), e - 1 if r < k else e)]
    if r < k:
        mechs.append((S.max_statistic(mu, k, run=r), 1))
    mechs = [(m, t) for m, t in mechs if t > 0]
    # Only the lower end is used: the upper end need not start on the fine grid.
    return _engine(mechs, d, fine_upper=False, **kw)


def no_amplification_upper(sigma: float, epochs: int, delta) -> np.ndarray:
    """ε of E Gaussian mechanisms of noise multiplier σ at each δ: √E/σ-GDP (μ rounded up, as a ledger
    composes E such releases, so that both give the same digits), the smallest ε checked to the last bit."""
    from . import _fp, gdp

    d = np.atleast_1d(np.asarray(delta, float))
    mu = float(_fp.mul_up(_fp.sqrt_up(float(epochs)), _fp.div_up(1.0, float(sigma))))
    return np.atleast_1d(np.asarray(gdp.epsilon(np.full(d.shape, mu), d), float))


def no_amplification_uppers(sigma, epochs, delta) -> np.ndarray:
    """:func:`no_amplification_upper` of many runs at once (arrays, one δ each), with the same digits as each run's
    own call: every root is narrowed from its guess, as a single run's is (``gdp._epsilon(guess=True)``)."""
    from . import _fp, gdp

    s, e, d = (np.asarray(x, float).reshape(-1) for x in np.broadcast_arrays(sigma, epochs, delta))
    mu = np.asarray(_fp.mul_up(_fp.sqrt_up(e), _fp.div_up(1.0, s)), float)
    return gdp._epsilon(mu, np.log(d), 0.0, d, guess=True)


def shuffle_interval(
    dataset_size: int, batch_size: int, epochs: int, sigma: float, delta, last_batches: int | None = None, **kw
) -> SchemeInterval:
    """Shuffled epochs: each epoch a random permutation cut into k = ⌈N/B⌉ batches.

    Upper end (``gdp-no-amplification``): every record is in exactly one batch per epoch, so given
    the permutations (independent of the data) E epochs are E adaptively composed Gaussian
    mechanisms on the differing record and nothing else: exactly √E/σ-GDP, and the mixture over
    permutations is no worse (joint convexity). ε from the exact GDP curve (certified to
    round-off). This is the scheme's ε if the batches are public; with secret batches it is an
    upper bound — how much shuffling amplifies has no certified bound here.

    Lower end (``pld-max-statistic``): the engine's lower end on E epochs of the max-statistic pair
    (:func:`.pld.sampling.max_statistic`: actual datasets, [CGK+24]). ``last_batches``: the batches the
    last epoch runs, when the run stops before its end (its pair is then the partial epoch's; the upper
    end still counts it whole).
    """
    return _one_batch_per_epoch(
        dataset_size, batch_size, epochs, sigma, delta, last_batches,
        "upper: no amplification by shuffling (exact if the batches were public)",
        "lower: largest batch output per epoch, two actual datasets (Chua et al. 2024)",
        **kw,
    )  # fmt: skip


#: Budgets tried for the random-allocation construction's own tails, as multiples of min(δ)/E (the δ it
#: may add per epoch): the smallest first; a larger one where its grids would not fit.
ALLOCATION_BUDGETS = (1e-4, 1e-3, 1e-2)


def balls_in_bins_pair(batches: int, epochs: int, sigma: float, delta_min: float):
    """The pair of :func:`.pld.allocation.random_allocation_gaussian` that dominates one balls-in-bins epoch,
    its construction allowed to add at most about b·δ_min/E per epoch for the first b of
    :data:`ALLOCATION_BUDGETS` whose grids fit; None if none does (small σ with very many batches and a
    tiny δ). Every caller (plan-sgd, pipes, ledgers) builds it this way, so the same run gives the same
    digits wherever it is accounted."""
    from .pld.allocation import AllocationTooLarge, random_allocation_gaussian

    for mult in ALLOCATION_BUDGETS:
        try:
            with np.errstate(all="ignore"):
                return random_allocation_gaussian(float(sigma), int(batches), mult * float(delta_min) / int(epochs))
        except (AllocationTooLarge, MemoryError):
            continue
    return None


def balls_in_bins_upper(batches: int, epochs: int, sigma: float, delta, upper_only: bool = True, **kw):
    """The amplified upper end of balls-in-bins at each δ: the PLD engine's upper end on E epochs of
    :func:`balls_in_bins_pair` (which dominates an epoch in the convex order). Returns (upper, met), or None
    where the construction does not fit, or with one batch per epoch (nothing to amplify)."""
    d = _delta(delta)
    pair = None if int(batches) == 1 else balls_in_bins_pair(batches, epochs, sigma, float(d.min()))
    if pair is None:
        return None
    a = _engine([(pair, int(epochs))], d, upper_only=upper_only, lower_used=False, **kw)
    return a.upper, a.met


def balls_in_bins_interval(
    dataset_size: int, batch_size: int, epochs: int, sigma: float, delta, last_batches: int | None = None, **kw
) -> SchemeInterval:
    """Balls-in-bins (random allocation): each record in one of the epoch's k = ⌈N/B⌉ batches, uniformly.

    Upper end: the smaller, at each δ, of the amplified bound of :func:`balls_in_bins_upper`
    (``pld-random-allocation``: E epochs of the pair ((1/k)Σ_t N(e_t/σ, I_k), N(0, I_k)) and its swap,
    which dominates an epoch for add/remove neighbours — the same as zero-out here, no other record
    moves — built in the convex order, :mod:`.pld.allocation`) and the unamplified √E/σ-GDP
    (``gdp-no-amplification``; it also holds under substitution). Where the construction does not fit
    (see :func:`balls_in_bins_upper`) the GDP bound alone, with a note. Lower end: the max statistic of
    that same pair (it is realisable), as for shuffling; ``last_batches`` as for :func:`shuffle_interval`.
    ``method`` is a tuple, one per δ.
    """
    k, d, gdp_up, lo = _epoch_ends(dataset_size, batch_size, epochs, sigma, delta, last_batches, **kw)
    ra = balls_in_bins_upper(k, epochs, sigma, d, upper_only=False, **kw)
    fallback = ()
    notes = [
        "add/remove neighbours (the same as zero-out here: no other record moves), σ the noise multiplier; "
        f"k = {k} batches per epoch"
    ]
    if k == 1:
        up, met = gdp_up, lo.met
        methods = ("gdp-no-amplification",) * d.size
        notes.append("upper: one batch per epoch, nothing to amplify: E Gaussian mechanisms, √E/σ-GDP (exact)")
    elif ra is None:
        up, met = gdp_up, lo.met
        methods = ("gdp-no-amplification",) * d.size
        fallback = (
            f"the random-allocation construction does not fit at σ = {sigma:g}, k = {k} batches, "
            f"δ = {float(d.min()):g} (its grids would be too large); the upper end is the unamplified √E/σ-GDP "
            "bound (method gdp-no-amplification), sound but loose",
        )
        notes.append(
            "upper: no amplification — the random-allocation construction's grids would be too large at these "
            "parameters, so only √E/σ-GDP is certified here"
        )
    else:
        ra_up, ra_met = ra
        use = ra_up <= gdp_up
        up = np.where(use, ra_up, gdp_up)
        met = np.where(use, ra_met, True) & lo.met
        methods = tuple("pld-random-allocation" if u else "gdp-no-amplification" for u in use)
        notes.append(
            "upper: random allocation's dominating pair (Feldman & Shenfeld 2025), built in the convex order and "
            "composed by PLD (certified); where √E/σ-GDP is smaller, that (method gdp-no-amplification)"
        )
        lost = ~np.isfinite(ra_up)
        if lost.any():
            # (The engine found no certified ε in its windows for that pair: not a bound, so not a silent "larger".)
            shown = ", ".join(f"{x:g}" for x in d[lost][:3]) + (" …" if int(lost.sum()) > 3 else "")
            fallback = (
                f"the PLD engine could not certify the random-allocation construction's upper end at σ = {sigma:g}, "
                f"k = {k} batches, δ = {shown}; the upper end there is the unamplified √E/σ-GDP bound (method "
                "gdp-no-amplification), sound but loose",
            )
    notes.append("lower: largest batch output per epoch, two actual datasets")
    return SchemeInterval(
        np.minimum(lo.lower, up), up, methods, "upper", "pld-max-statistic", met, tuple(notes), warnings=fallback
    )


def _epoch_ends(dataset_size, batch_size, epochs, sigma, delta, last_batches=None, **kw):
    """What every one-batch-per-epoch scheme starts from: k batches per epoch, the δ's, the no-amplification
    √E/σ-GDP upper end and the engine's max-statistic lower end (the last epoch cut after ``last_batches``)."""
    k = batches_per_epoch(dataset_size, batch_size)
    d = _delta(delta)
    if int(epochs) < 1 or not sigma > 0:
        raise ValueError("need epochs >= 1 and sigma > 0")
    lo = _max_statistic_lower(sigma, k, epochs, d, last_batches, **kw)
    return k, d, no_amplification_upper(sigma, epochs, d), lo


#: Epochs beyond which the zero-out threshold bound is not computed (its cost is linear in them, per threshold).
ZERO_OUT_MAX_EPOCHS = 100_000


def _threshold_pairs(mu: float, k: int, run: int, c: np.ndarray):
    """For each threshold c: (P[M > c] rounded down, Q[M > c] rounded up) and (Q[M > c] rounded down, P[M > c]
    rounded up) for the largest of ``run`` batch outputs of an epoch of k batches, under Chua et al.'s zero-out
    pair: the record (gradient +1 against 0, the others −1, their known sums removed) shifts its batch by 2μ
    under P and by μ under Q, and is among the outputs run with probability run/k. Returns the two pairs (each
    a pair of arrays) and where they hold (false where a tail rounds to 0 or 1: no pair there)."""
    from .pld.sampling import _log_ndtr_err

    c = np.asarray(c, float)

    def tail(total, errs, abs_logs, n_logs):
        # 1 − Π Φ(·) from the sum L of the logs (each within its error; the sum's rounding is relative):
        # −expm1 is decreasing, so L's interval maps to the tail's; expm1's own rounding is relative too.
        err = errs + (n_logs + 2) * _U * abs_logs
        with np.errstate(all="ignore"):
            return -np.expm1(total + err) * (1 - 4 * _U), -np.expm1(total - err) * (1 + 4 * _U)

    l0, e0 = _log_ndtr_err(c)
    rho = run / k
    if run < k:  # the record not among the outputs
        none = tail(run * l0, run * e0, np.abs(run * l0), 1)
    out = []
    for shift in (2.0 * mu, mu):
        l1, e1 = _log_ndtr_err(c - shift)
        rest = (run - 1) * l0
        lo, hi = tail(l1 + rest, e1 + (run - 1) * e0, np.abs(l1) + np.abs(rest), 2)
        if run < k:  # a mixture of the two tails, weights 1 − ρ and ρ (each product within 2u)
            lo = ((1 - rho) * none[0] + rho * lo) * (1 - 4 * _U)
            hi = ((1 - rho) * none[1] + rho * hi) * (1 + 4 * _U)
        out.append((lo, hi))
    (p_lo, p_hi), (q_lo, q_hi) = out
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(p_hi) & np.isfinite(q_hi) & (q_lo > 0) & (p_hi < 1) & (p_lo > q_hi)
    return (p_lo, q_hi), (q_lo, p_hi), ok


def _binary_lowers(lp_lo: np.ndarray, lq_hi: np.ndarray, delta: np.ndarray, closed_form: bool = True) -> np.ndarray:
    """Per row of log-masses (lp_lo rounded down, lq_hi rounded up: the m outcomes x of a composition of
    two-point pairs, P_x and Q_x), the largest ε at which δ(ε) = Σ [P_x − e^ε Q_x]_+ is certainly above the
    row's ``delta`` (to within 1e-12 of max(ε, 1)): a certified lower bound on the ε of any mechanism the pairs
    are post-processings of (0 where even ε = 0 is not above it).

    The check of an ε (``above``) is the certified one: the positive parts summed (m non-negative terms, each
    exponential within 2u: within (m + 8)u of the sum, in any order) and compared with δ. Terms whose P-mass is
    below δ·e^-40/m cannot matter, and dropping a term only lowers the sum: each row keeps the window from its
    first to its last term kept (a binomial's kept terms are a run), the others in it set to 0, and sums it in
    order (a running sum: the zeros that pad a window to its chunk's widest add nothing, so a row's digits do
    not depend on the rows beside it). The ε checked comes from the sum's closed form: with the likelihood
    ratios sorted, between two of them the sum is CP − e^ε·CQ (the outcomes above ε), solved for δ on each
    segment; the candidate is checked to hold and its neighbour 2e-12·max(ε, 1) above it not to. A row where
    either check fails (round-off about a crossing) is bisected as before the closed form (60 halvings at most,
    from the side that holds); ``closed_form`` false bisects every row from [0, top]."""
    rows, m = lp_lo.shape
    delta = np.asarray(delta, float)
    shrink = 1.0 - (m + 8) * _U
    with np.errstate(all="ignore"):
        ratio = lp_lo - lq_hi
        top = np.max(np.where(np.isfinite(ratio), ratio, 0.0), axis=1)
        keep = lp_lo > (np.log(delta) - np.log(m) - 40.0)[:, None]
    first = np.argmax(keep, axis=1)
    last = m - 1 - np.argmax(keep[:, ::-1], axis=1)
    width = int(np.max(np.where(keep.any(axis=1), last - first + 1, 1), initial=1))
    cols = first[:, None] + np.arange(width)[None, :]
    inside = cols <= last[:, None]
    cols = np.minimum(cols, m - 1)
    kept = np.take_along_axis(keep, cols, axis=1) & inside
    with np.errstate(all="ignore"):
        p = np.where(kept, np.exp(np.take_along_axis(lp_lo, cols, axis=1)), 0.0)
        lq = np.where(kept, np.take_along_axis(lq_hi, cols, axis=1), -np.inf)

    def above(eps, sel=slice(None)):
        with np.errstate(all="ignore"):
            terms = p[sel] - np.exp(np.minimum(eps[:, None] + lq[sel], 700.0))
            return np.cumsum(np.maximum(terms, 0.0), axis=1)[:, -1] * shrink > delta[sel]

    with np.errstate(all="ignore"):
        r = np.where(kept, np.log(p) - lq, -np.inf)
        # (Sorted, the outcomes kept come first: the columns past the most any row keeps are left out.)
        order = np.argsort(-r, axis=1, kind="stable")[:, : max(int(kept.sum(axis=1).max(initial=0)), 1)]
        r_sorted = np.take_along_axis(r, order, axis=1)
        cp = np.cumsum(np.take_along_axis(p, order, axis=1), axis=1)
        cq = np.cumsum(np.exp(np.take_along_axis(lq, order, axis=1)), axis=1)
        e_seg = np.log((cp - (delta / shrink)[:, None]) / cq)
        below = np.concatenate([r_sorted[:, 1:], np.full((rows, 1), -np.inf)], axis=1)  # (−inf: past the last kept)
        on_seg = np.isfinite(e_seg) & (e_seg <= r_sorted) & (e_seg >= below)
        star = np.max(np.where(on_seg, e_seg, -np.inf), axis=1)
    hi0 = np.maximum(top, 0.0) + 1.0
    tol = 1e-12 * np.maximum(star, 1.0)
    cand = np.where(np.isfinite(star), np.clip(star - tol, 0.0, hi0), 0.0)
    step_up = cand + 2 * tol
    if closed_form:
        holds, next_holds = above(cand), above(np.minimum(step_up, hi0))
    else:
        holds, next_holds = np.zeros(rows, dtype=bool), np.ones(rows, dtype=bool)
    good = holds & ~next_holds & (step_up <= hi0)
    out = np.where(good, cand, 0.0)
    rest = np.flatnonzero(~good)
    if rest.size:
        lo = np.where(holds[rest], cand[rest], 0.0)
        hi = np.where(~next_holds[rest] & (step_up[rest] <= hi0[rest]), step_up[rest], hi0[rest])
        # No claim where ε = 0 is not above δ, or where even the top is (cannot happen: no term is positive
        # past the largest ratio).
        live = above(np.zeros(rest.size), rest) & ~above(hi0[rest], rest)
        done = ~live
        for _ in range(60):
            if done.all():
                break
            i = np.flatnonzero(~done)
            mid = 0.5 * (lo[i] + hi[i])
            up = above(mid, rest[i])
            lo[i] = np.where(up, mid, lo[i])
            hi[i] = np.where(up, hi[i], mid)
            done[i] = hi[i] - lo[i] <= 1e-12 * np.maximum(hi[i], 1.0)
        out[rest] = np.where(live, lo, 0.0)
    return out


#: :func:`_zero_out_values` works on at most this many (threshold, outcome) cells at once.
ZERO_OUT_CELLS = 1 << 20


def _zero_out_values(mu: float, k: int, whole: int, run: int, c: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """The zero-out lower end read through the threshold test at each c (with its own δ; flat arrays): the
    better of the two orders of the datasets (swapping them is realisable too), each the exact composition of
    ``whole`` epochs' two-point pairs and, where ``run`` < k, the partial epoch's (products of binomials); 0
    where a pair does not hold."""
    from .pld.sampling import _binom_weights_rows

    c, delta = np.asarray(c, float).ravel(), np.asarray(delta, float).ravel()
    parts, ok = [], np.ones(c.shape, dtype=bool)
    for n, r in ((whole, k), (1 if run < k else 0, run)):
        if n > 0:
            side0, side1, holds = _threshold_pairs(mu, k, r, c)
            parts.append(((side0, side1), n))
            ok &= holds
    m = int(np.prod([n + 1 for _, n in parts]))
    out = np.zeros(c.shape)
    todo = np.flatnonzero(ok)
    chunk = max(ZERO_OUT_CELLS // m, 1)
    for s in range(0, todo.size, chunk):
        sel = todo[s : s + chunk]
        best = np.zeros(sel.size)
        for side in (0, 1):
            lp_all, lq_all, ep_all, eq_all = (np.zeros((sel.size, 1)) for _ in range(4))
            for pair, n in parts:
                a, b = pair[side]
                lp, ep = _binom_weights_rows(n, a[sel])
                lq, eq = _binom_weights_rows(n, b[sel])
                lp_all, lq_all, ep_all, eq_all = (
                    (x[:, :, None] + y[:, None, :]).reshape(sel.size, -1)
                    for x, y in ((lp_all, lp), (lq_all, lq), (ep_all, ep), (eq_all, eq))
                )
            # Each exp within 2u of itself (the sums' rounding is in _binary_lowers' shrink).
            lp_lo = lp_all - ep_all - 4 * _U * (np.abs(lp_all) + 1.0)
            lq_hi = lq_all + eq_all + 4 * _U * (np.abs(lq_all) + 1.0)
            best = np.maximum(best, _binary_lowers(lp_lo, lq_hi, delta[sel]))
        out[sel] = best
    return out


def shuffle_zero_out_lower(batches: int, epochs: int, sigma: float, delta, last_batches: int | None = None):
    """A certified lower bound on shuffling's ε under zero-out neighbours (σ relative to C), per δ: Chua et
    al.'s pair (the other records' gradients −1, the differing record's +1 against 0; with the known batch
    sums removed its batch is shifted by 2μ under one dataset and by μ under the other, μ = 1/σ) read
    through a threshold test on the largest batch output, {M > c}: a two-point post-processing of each
    epoch, composed exactly over the E epochs (binomials, with error bounds) — the best over thresholds c.
    The last epoch, where the run stops after ``last_batches`` < k batches, is the partial one. None past
    :data:`ZERO_OUT_MAX_EPOCHS` epochs. Every δ has its own thresholds (the same whatever other δ are asked
    with it) and all are read at once."""
    k, e = int(batches), int(epochs)
    r = k if last_batches is None else int(last_batches)
    d = _delta(delta)
    if e > ZERO_OUT_MAX_EPOCHS or k < 1 or not 1 <= r <= k:
        return None
    mu = 1.0 / float(sigma)
    whole = e - 1 if r < k else e

    from scipy import special as _special

    z = float(_special.ndtri(1.0 - 1.0 / (2.0 * k))) if k > 1 else 0.0
    rows = np.arange(d.size)
    # Thresholds from about the noise's largest batch output to where the shifted batch's tail is δ.
    grid = z + np.linspace(-1.0, 2.0 * mu + np.sqrt(2.0 * np.log(1.0 / d)) + 1.0, 33, axis=1)
    vals = _zero_out_values(mu, k, whole, r, grid, np.repeat(d, grid.shape[1])).reshape(grid.shape)
    j = np.argmax(vals, axis=1)
    best, c_best, step = vals[rows, j], grid[rows, j], grid[:, 1] - grid[:, 0]
    for _ in range(3):  # finer grids around the best threshold (every value is a certified bound)
        cs = c_best[:, None] + np.linspace(-step, step, 9, axis=1)
        v = _zero_out_values(mu, k, whole, r, cs, np.repeat(d, cs.shape[1])).reshape(cs.shape)
        jj = np.argmax(v, axis=1)  # the first best, as a scan keeping only strictly better ones would
        better = v[rows, jj] > best
        best = np.where(better, v[rows, jj], best)
        c_best = np.where(better, cs[rows, jj], c_best)
        step = step / 4.0
    return best


def _one_batch_per_epoch(dataset_size, batch_size, epochs, sigma, delta, last_batches, upper_note, lower_note, **kw):
    """The interval of shuffling (each record in exactly one batch per epoch): the no-amplification
    √E/σ-GDP upper end and the max-statistic lower end."""
    k, d, up, lo = _epoch_ends(dataset_size, batch_size, epochs, sigma, delta, last_batches, **kw)
    notes = (
        f"substitution (or zero-out) neighbours, σ relative to that sensitivity; k = {k} batches per epoch",
        upper_note,
        lower_note,
    )
    zo = shuffle_zero_out_lower(k, epochs, sigma, d, last_batches)
    if zo is not None:
        # Above the upper end one of the two would be false: neither claim is made for it (NaN: none).
        zo = np.where(zo <= up * (1 + 1e-12), zo, np.nan)
        notes += (
            "ε ≥ (zero-out): a certified lower end under zero-out neighbours only (σ relative to C) — Chua et "
            "al.'s pair (the other records' gradients −1, the differing record's +1 against 0), read through a "
            "threshold test on the largest batch output and composed exactly over the epochs; under substitution "
            "only ε ≥ (certified) holds",
        )
    return SchemeInterval(
        np.minimum(lo.lower, up), up, "gdp-no-amplification", "upper", "pld-max-statistic", lo.met, notes,
        zero_out_lower=zo,
    )  # fmt: skip


def user_level_interval(rate: float, sigma: float, steps: int, examples_per_user: int, delta, **kw) -> SchemeInterval:
    """User-level DP-SGD: every example Poisson-sampled at rate q, each user holding K examples.

    Both ends from the PLD engine on the pair Σ_j Binom(K, q)_j N(j, σ²) against N(0, σ²) and its
    swap (:func:`.pld.sampling.user_level_gaussian`), T-fold. The pair dominates a step ([G24]) and
    is the exact output of a user whose K gradients are aligned at the clipping norm, the others
    zero, so the engine's interval holds for the scheme itself. K = 1 is example-level Poisson
    sampling (the same pair, and the same numbers).
    """
    from .pld import sampling as S

    q, k, t = float(rate), int(examples_per_user), int(steps)
    if not (0 < q <= 1) or k < 1 or t < 1 or not sigma > 0:
        raise ValueError("need 0 < rate <= 1, examples_per_user >= 1, steps >= 1, sigma > 0")
    d = _delta(delta)
    a = _engine([(S.user_level_gaussian(q, sigma, k), t)], d, **kw)
    notes = (f"add/remove one user (K = {k} examples, each sampled with probability {q:.6g})",)
    return SchemeInterval(
        a.lower, a.upper, "pld-user-level", "upper", "pld-user-level", a.met, notes, (a.lower, a.upper)
    )


def user_level_rdp(rate: float, sigma: float, steps: int, examples_per_user: int, delta) -> np.ndarray:
    """An RDP upper bound on ε at each δ for user-level DP-SGD (K examples per user, each Poisson-sampled at
    rate q): T steps of the subsampled Gaussian's RDP at orders α = 2^{c+1}·m (m = 1 … 64, 128 … 2048; exact
    at integer orders), then the group property for 2^c >= K ([M17] Prop. 2: order α/2^c, 3^c times the RDP),
    then the (ε, δ) conversion. Looser than the PLD interval, and independent of it; K = 1 is example-level
    RDP (the default orders)."""
    from . import group, rdp

    k = int(examples_per_user)
    orders = _user_level_orders(k)
    curve = int(steps) * rdp.subsampled_gaussian(orders, float(rate), float(sigma))
    o, r = group.rdp(orders, np.nextafter(curve, np.inf), k)
    d = _delta(delta)
    e, _ = rdp.epsilon_from_curve(o, r, d)
    return np.atleast_1d(np.asarray(e, float))


def _user_level_orders(k: int) -> np.ndarray:
    """The example-level orders :func:`user_level_rdp` takes for K examples per user: α = 2^{c+1}·m (m = 1 … 64,
    128 … 2048; 2^c = :func:`.group.rdp_span` of K), all whole; K = 1 the default orders."""
    from . import group, rdp

    if k == 1:
        return rdp.DEFAULT_ORDERS
    return 2.0 * group.rdp_span(k) * np.concatenate([np.arange(1, 65, dtype=float), 2.0 ** np.arange(7, 12)])


def user_level_rdp_rows(rate, sigma, steps, examples_per_user, delta) -> np.ndarray:
    """:func:`user_level_rdp` for many runs at once (1-D arrays of one length; δ one per run or one for all),
    each value the same as that function's, bit for bit, at the cost of the orders that can still win. (Where
    an order's RDP is not finite — σ far below K/32, which the CLI refuses — that function raises; here the
    order is skipped: the smallest ε over the others, or inf, still an upper bound.)

    Runs sharing K share their orders, so each order's RDP is one vectorised call for the runs that still
    need it. The orders go up; a run skips an order whose ε cannot be below its best so far: the group
    curve never falls as the order rises (Rényi divergences grow with their order), so the last value
    computed, less a relative 1e-9 for its rounding, is a lower bound there, and the conversion grows with
    the RDP. The high orders, which cost the most (an integer order α sums α terms), are mostly skipped.
    K = 1 (the default orders, some fractional) goes run by run."""
    from . import group, rdp

    q = np.asarray(rate, float).ravel()
    s = np.asarray(sigma, float).ravel()
    t = np.asarray(steps, np.int64).ravel()
    k = np.asarray(examples_per_user, np.int64).ravel()
    d = np.broadcast_to(_delta(delta), q.shape)
    out = np.empty(q.size)
    for kk in np.unique(k):
        rows = np.flatnonzero(k == kk)
        if kk == 1:
            for i in rows:
                out[i] = user_level_rdp(q[i], s[i], t[i], 1, d[i])[0]
            continue
        span = group.rdp_span(int(kk))
        qs, ss, ts = q[rows], s[rows], t[rows].astype(float)
        log_d = np.log(d[rows])
        best = np.full(rows.size, np.inf)
        floor = np.zeros(rows.size)  # a lower bound on each run's group curve at the orders still to come
        for a in _user_level_orders(int(kk)):
            a_g = np.full(rows.size, a / span)
            with np.errstate(all="ignore"):
                act = np.flatnonzero(~(rdp._eps_terms(a_g, floor, log_d) >= best))
            if act.size == 0:
                continue
            curve = ts[act] * rdp._subsampled_gaussian(np.full(act.size, a), qs[act], ss[act])
            o, r = group.rdp(np.full(act.size, a), np.nextafter(curve, np.inf), int(kk))
            best[act] = np.minimum(best[act], rdp._eps_terms(o, r, log_d[act]))
            floor[act] = np.where(r >= 0, r * (1 - 1e-9), 0.0)
        out[rows] = np.maximum(best, 0.0)
    return out
