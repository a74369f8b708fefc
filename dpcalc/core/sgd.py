"""DP-SGD accounting: subsampled Gaussian steps.

Two samplings: ``poisson`` (each record kept with probability q, add/remove
neighbours; the usual DP-SGD analysis) and ``without-replacement`` (a
fixed-size batch of m of N records, q = m/N, substitution neighbours; σ is
then relative to the substitution sensitivity). RDP (Mironov, Talwar &
Zhang) covers Poisson sampling only; PLD and the GDP CLT cover both.

The forward question (ε after T steps) and the inverse ones (the smallest
noise multiplier, the largest number of steps, the largest batch for a
target ε) share one seam: an *accountant* maps arrays (q, σ, T, δ) to ε.
:data:`ACCOUNTANTS` names them; a later engine (PLD) plugs in beside RDP.

References
----------
.. [ACG+] M. Abadi et al. Deep Learning with Differential Privacy. CCS 2016,
   arXiv:1607.00133.
.. [MTZ] Mironov, Talwar, Zhang, arXiv:1908.10530 (RDP of the sampled Gaussian).
.. [BDLS] Bu, Dong, Long, Su, arXiv:1911.11607 (GDP CLT), labelled approximate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from . import gdp
from . import rdp as _rdp
from ._arrays import all_scalar, by_rows, checked, finish
from .errors import ValidationError
from .solve import secant, walk_and_bisect

__all__ = [
    "Accountant",
    "ACCOUNTANTS",
    "default_delta",
    "steps_for_epochs",
    "steps_for_epochs_at_rate",
    "whole_epochs",
    "epsilon",
    "epsilon_curve",
    "tight_curve",
    "CURVE_POINTS",
    "solve_sigma",
    "solve_steps",
    "solve_batch_size",
    "SAMPLINGS",
]

#: Sampling schemes: Poisson (add/remove neighbours) and fixed-size without replacement (substitution).
SAMPLINGS = ("poisson", "without-replacement")


@dataclass(frozen=True)
class Accountant:
    """A named way to turn (q, σ, T, δ) arrays into ε arrays.

    ``bound`` is ``"upper"`` when every ε it returns is a sound guarantee
    and ``"approximate"`` when it may under-report.
    """

    name: str
    bound: str
    epsilon: Callable[..., np.ndarray]


def _flat(*arrays) -> tuple[np.ndarray, ...]:
    """The cases as 1-D float arrays of one length (broadcast, then flattened)."""
    return tuple(np.asarray(a, float).ravel() for a in np.broadcast_arrays(*arrays))


def _blank(n: int, met: bool):
    """Per-case results before any engine answers: no interval (NaN), method pld, ``met`` as given."""
    return np.full(n, np.nan), np.full(n, np.nan), np.full(n, "pld", dtype=object), np.full(n, met, dtype=bool)


def _check_sampling(sampling: str) -> None:
    if sampling not in SAMPLINGS:
        raise ValidationError("sampling", sampling, "poisson or without-replacement")


def _mechanism(q: float, sigma: float, sampling: str):
    """The PLD directions of one step."""
    from . import pld

    if sampling == "poisson":
        return pld.subsampled_gaussian(q, sigma)
    return pld.sampled_wor_gaussian(q, sigma)


def _rdp_epsilon(q, sigma, steps, delta, refine_steps: int = 30, sampling: str = "poisson"):
    if sampling != "poisson":
        raise ValidationError(
            "accountant", "rdp", "pld or gdp-clt for sampling without replacement (dpcalc has no RDP bound for it)"
        )
    q, sigma, steps, delta = (a.ravel() for a in np.broadcast_arrays(q, sigma, steps, delta))

    def rows(q, sigma, steps, delta):
        eps, _ = _rdp.optimal_epsilon(
            lambda al: steps[:, None] * _rdp._subsampled_gaussian(al, q[:, None], sigma[:, None]),
            delta,
            refine_steps=refine_steps,
        )
        return eps

    return by_rows(rows, q, sigma, steps, delta)  # (each row's search is its own: the same values, less memory)


#: The note a command adds where a row's method is ``rare-steps``.
RARE_NOTE = (
    "rare-steps: a few steps whose single rare large losses carry δ (tiny q and σ, tiny δ), bounded through one "
    "step's exact δ(ε): δ_T(ε) lies between T·(1 − ι)^(T−1)·δ₁(ε + (T − 1)·log(1/(1 − q))) and "
    "T·δ₁(ε − (T − 1)·a) plus a bound on the paths with two or more such steps."
)

#: Methods of the tight engine's rows: PLD, and the exact routes it takes where a closed form exists;
#: ``pld-bracket`` is a row of an ε curve between two composed step counts (:func:`tight_curve`);
#: ``no-subsampling`` an upper end the answer takes from the same steps without sampling (:func:`no_subsampling_upper`).
TIGHT_METHODS = {
    "pld": "upper",
    "gdp": "exact",
    "privacy-profile": "exact",
    "total-variation": "exact",
    "pld-bracket": "upper",
    "rare-steps": "upper",
    "near-full-batch": "upper",
    "no-subsampling": "upper",
}

#: The tight engine's closed-form routes (their intervals round-off wide, or ε = 0 exactly): the
#: no-subsampling bound does not replace them (:func:`with_no_subsampling`).
EXACT_ROUTES = ("gdp", "privacy-profile", "near-full-batch", "total-variation")

#: Rates from which :func:`tight_interval` tries the near-full-batch route (below, q^T is near 1 only for
#: T = 1, which has its own exact route).
NEAR_FULL_FROM = 0.5

#: The note a command adds where a row's method is ``near-full-batch``.
NEAR_FULL_NOTE = (
    "near-full-batch: the batches holding the record at every step (probability q^T) carry the answer: ε is at "
    "most the same steps' without subsampling (exactly μ-GDP, μ = √T/σ) and at least log(1 + q^T(e^ε' − 1)), ε' "
    "the full batch's ε at δ/q^T (its optimal test, a threshold on the outputs' sum, on those batches); taken "
    "where the two are within the relative width asked for, with no composition."
)

#: The note a command adds where a row's upper end is ``no-subsampling``.
NO_SUBSAMPLING_NOTE = (
    "no-subsampling: the same T steps with every record in every batch (q = 1) are exactly μ-GDP with μ = √T/σ, "
    "and sampling never raises ε (a step on a sample is C_q(G_{1/σ})-DP, and C_q(f) >= f: Dong, Roth & Su 2022), so "
    "their ε is an upper end for every q; the answer takes it where it is below the tight engine's upper end (or "
    "where that engine cannot answer), beside the tight engine's certified lower end where it has one."
)


def route_notes(rows) -> list[str]:
    """The notes explaining the tight engine's routes that need one (rare-steps, near-full-batch,
    no-subsampling), for those among the rows' ``method`` values."""
    used = {r.get("method") for r in rows}
    pairs = (("rare-steps", RARE_NOTE), ("near-full-batch", NEAR_FULL_NOTE), ("no-subsampling", NO_SUBSAMPLING_NOTE))
    return [note for method, note in pairs if method in used]


def no_subsampling_upper(sigma, steps, delta) -> np.ndarray:
    """A certified upper end on ε(δ) of T Gaussian steps on a sample (Poisson, or without replacement
    under substitution with σ over that sensitivity), whatever the rate: the ε of the same steps on every
    record, exactly μ-GDP with μ = √T/σ (rounded up; :func:`.pld.exact.gaussian_interval`). Sampling is a
    step's post-processing into a mixture whose trade-off is C_q(G_{1/σ}) >= G_{1/σ} ([DRS] Thm 4.2 and
    Lemma A.2; for Poisson sampling's add and remove pairs, joint convexity of the hockey-stick
    divergence), and composition keeps that order ([DRS] Lemma C.1)."""
    from .pld import exact

    s, t, d = (np.asarray(v, float).ravel() for v in np.broadcast_arrays(sigma, steps, delta))
    out = np.full(s.shape, np.nan)
    ok = np.isfinite(s) & (s > 0) & (t >= 1) & (d > 0) & (d < 1)
    if ok.any():
        with np.errstate(all="ignore"):  # (the upper end of the q = 1 route's own interval: the same digits)
            out[ok] = exact.full_batch_interval(t[ok], s[ok], d[ok])[1]
    return np.where(np.isfinite(out) & (out >= 0), out, np.nan)


def _bounds(method: np.ndarray, met: np.ndarray) -> np.ndarray:
    """Each row's bound kind from its method; a closed form's interval wider than asked (see
    :func:`tight_interval`) is an interval, ``upper``, not ``exact``."""
    bound = np.array([TIGHT_METHODS[m] for m in method], dtype=object)
    bound[(bound == "exact") & ~met] = "upper"
    return bound


@dataclass(frozen=True)
class Tight:
    """Certified intervals on ε by the tight engine, one per case (NaN where it cannot answer).

    ``method`` is ``gdp`` where every record is in every batch (q = 1: T Gaussian steps are exactly
    μ-GDP with μ = √T/σ), ``near-full-batch`` where q^T is so near 1 that the full batch's exact curve
    bounds ε from both sides within the relative width (:func:`.pld.exact.near_full_batch_interval`),
    ``privacy-profile`` for a single step (T = 1: the exact δ(ε) of the
    subsampled Gaussian), ``total-variation`` where δ is at least a bound on the total variation
    distance of the T steps (ε = 0 exactly, no composition needed; Poisson sampling, and without
    replacement by the coupling bound), ``rare-steps`` for a few Poisson steps whose rare large
    losses carry δ (bounded through one step's exact curve, :mod:`.pld.rare`), ``pld``
    otherwise; ``bound`` is ``exact`` for gdp, privacy-profile and total-variation (the interval is
    round-off wide, or [0, 0]) and ``upper`` for the others (an interval). ``met`` says whether the
    width asked for was reached.
    """

    lower: np.ndarray
    upper: np.ndarray
    method: np.ndarray
    bound: np.ndarray
    met: np.ndarray


def tight_interval(q, sigma, steps, delta, sampling: str = "poisson", upper_only: bool = False, **kw) -> Tight:
    """Certified [lower, upper] on ε for each case: the exact routes where they apply, PLD elsewhere.

    Cases that differ only in δ share one composition per tilt (an ε(δ)
    curve comes from one composed PLD). NaN marks a case the PLD engine
    cannot certify (δ below its range, or a grid it cannot build); the
    callers answer those by another sound method and say so. ``kw`` passes
    the width target (``rel``, ``abs_``) to the PLD engine; ``upper_only``
    asks it for a quick sound upper end alone (for searches; the lower end
    is then 0, the trivial bound).
    """
    from . import pld
    from .pld import exact

    _check_sampling(sampling)
    q, sigma, steps, delta = _flat(q, sigma, steps, delta)
    n = q.size
    lo, up, method, met = _blank(n, met=True)
    # ε = 0 exactly where δ is at least a bound on the total variation distance (Poisson sampling, and
    # without replacement by the coupling bound).
    zero = np.zeros(n, dtype=bool)
    if sampling in ("poisson", "without-replacement"):
        zero = exact.total_variation_upper(q, sigma, steps, sampling) <= delta
        lo[zero] = up[zero] = 0.0
        method[zero] = "total-variation"
        if zero.all():  # (nothing else to answer: the same result as the whole pass below gives)
            return Tight(lo, up, method, _bounds(method, met), met)
    full = (q >= 1.0) & ~zero
    one = (steps == 1) & ~full & ~zero
    if full.any():
        # μ = √T/σ rounded each way: the lower end from μ rounded down, the upper end from μ rounded up.
        lo[full], up[full] = exact.full_batch_interval(steps[full], sigma[full], delta[full])
        method[full] = "gdp"
    if one.any():
        lo[one], up[one] = exact.subsampled_step_interval(q[one], sigma[one], delta[one])
        method[one] = "privacy-profile"
    # The closed forms' intervals are round-off wide, which is narrow except at absurd noise (σ below
    # about 1e-7, ε near 1e13, where the error bounds grow like ε): there the row says it is wider
    # than asked, and is labelled an interval ("upper"), not "exact".
    from .pld.engine import widths, within

    rel, abs_ = widths(kw)
    closed = full | one
    if closed.any():
        met[closed] = within(lo[closed], up[closed], rel, abs_)
    # Rates so near 1 that the batches holding the record at every step carry the answer (q^T near 1): the
    # full batch's exact curve bounds ε from both sides (:func:`.pld.exact.near_full_batch_interval`); taken
    # where that interval is within the relative width asked for (then no composition can be much tighter),
    # in microseconds — where the grids spent seconds to minutes (q = 0.99999959, σ = 2.418e7, 180 steps).
    if sampling in ("poisson", "without-replacement"):
        with np.errstate(all="ignore"):  # (q^T at least δ, and not tiny: else the lower end says nothing close)
            log_qt = steps * np.log1p(-(1.0 - q))
            cand = np.flatnonzero(
                ~full & ~one & ~zero & (q < 1.0) & (q >= NEAR_FULL_FROM) & (log_qt > np.maximum(np.log(delta), -30.0))
            )
        if cand.size:
            n_lo, n_up = exact.near_full_batch_interval(q[cand], sigma[cand], steps[cand], delta[cand])
            with np.errstate(invalid="ignore"):
                good = (n_lo > 0) & np.isfinite(n_up) & (n_up - n_lo <= rel * n_up)
            rows = cand[good]
            lo[rows], up[rows], met[rows] = (0.0 if upper_only else n_lo[good]), n_up[good], True
            method[rows] = "near-full-batch"
            closed[rows] = True
    # A few Poisson steps whose rare large losses carry δ (tiny q and σ, tiny δ): one step's exact curve
    # bounds them (:mod:`.pld.rare`), in milliseconds where the PLD grids take seconds or go wide.
    rare_lo = rare_up = None
    taken = np.zeros(n, dtype=bool)  # rows the route answered within the width
    if sampling == "poisson":
        from .pld import rare

        rows = np.flatnonzero(~closed & ~zero & (steps >= 2) & (steps <= rare.MAX_STEPS) & (q < 1.0))
        if rows.size:
            r_lo, r_up, taken[rows] = rare.interval(q[rows], sigma[rows], steps[rows], delta[rows], rel, abs_)
            rare_lo, rare_up = np.full(n, np.nan), np.full(n, np.nan)
            rare_lo[rows], rare_up[rows] = r_lo, r_up
            lo[taken], up[taken], met[taken] = (0.0 if upper_only else rare_lo[taken]), rare_up[taken], True
            method[taken] = "rare-steps"
    groups: dict = {}
    for i in np.flatnonzero(~closed & ~zero & ~taken):
        groups.setdefault((float(q[i]), float(sigma[i]), int(steps[i])), []).append(i)

    def reader(key):
        def read(rows):
            with np.errstate(all="ignore"):
                # (Without replacement the hull's lower end is replaced by Poisson sampling's: see
                # _realisable_lower.)
                used = sampling == "poisson" or key[2] < 2
                ans = pld.epsilon(
                    [(_mechanism(key[0], key[1], sampling), key[2])],
                    delta[rows],
                    upper_only=upper_only,
                    lower_used=used,
                    **kw,
                )
            return (np.zeros(len(rows)) if upper_only else ans.lower), ans.upper, ans.met

        return read

    for key, idx in groups.items():
        idx = np.array(idx)
        ok = idx[delta[idx] >= pld.MIN_DELTA]
        if ok.size:
            # (A search's quick upper ends ask for no width: no row of theirs is read again.)
            read_in_runs(reader(key), ok, delta, (lo, up, met), rel, abs_, again=not upper_only)
    if sampling != "poisson" and not upper_only:
        lo, met = _realisable_lower(q, sigma, steps, delta, lo, up, met, ~closed & ~zero, kw)
    if rare_up is not None:
        # Where PLD missed the width (or could not answer) and the route's interval, also wider than
        # asked, is narrower: the route's. (A search's quick upper end: wherever the route's is smaller.)
        with np.errstate(invalid="ignore"):
            better = np.isfinite(rare_up) & (method != "rare-steps")
            if upper_only:
                better &= ~(up <= rare_up)
            else:
                better &= ~met & ~(up - lo <= rare_up - rare_lo)
        lo[better], up[better] = (0.0 if upper_only else rare_lo[better]), rare_up[better]
        method[better] = "rare-steps"
    bad = ~(np.isfinite(lo) & np.isfinite(up))
    lo[bad] = up[bad] = np.nan
    met[bad] = False
    return Tight(lo, up, method, _bounds(method, met), met)


#: The errors with which the PLD engine declines a reading (beyond what its grids represent).
PLD_FAILURES = (MemoryError, ZeroDivisionError, OverflowError, FloatingPointError, ValueError)

#: :func:`read_in_runs` reads together the δ within this factor of the smallest of their run (a δ decades
#: below the others makes the grids they share coarser, and their windows longer, than their own).
DELTA_SPAN = 1e3


def read_in_runs(read, rows, deltas, into: tuple, rel: float, abs_: float, again: bool = True) -> None:
    """Certified ends of one mechanism at the δ of ``rows``, into the arrays ``into`` = (lower, upper, met):
    ``read(sel)`` gives (lower, upper, met) arrays for the rows ``sel`` (sorted by δ; an ε(δ) curve shares
    its compositions), read together in runs of δ within DELTA_SPAN of each other (:func:`_settle`). With
    ``again``, a row of a run that misses its width is read again alone — where the run's other δ held its
    grid back — and keeps the larger lower end and the smaller upper end of the two readings (both
    certified)."""
    lo_r, up_r, met_r = into

    def store(sel):
        lo, up, met = read(sel)
        lo_r[sel], up_r[sel], met_r[sel] = lo, up, met

    rows = np.asarray(rows)
    if rows.size == 1:  # (one δ: one reading, or none where the engine declines)
        try:
            store(rows)
        except PLD_FAILURES:
            pass
        return
    from .pld.engine import within

    rows = rows[np.argsort(deltas[rows], kind="stable")]
    start = 0
    for k in range(1, rows.size + 1):
        if k < rows.size and deltas[rows[k]] <= DELTA_SPAN * deltas[rows[start]]:
            continue
        run = rows[start:k]
        start = k
        _settle(store, run, deltas)
        if run.size < 2 or not again:
            continue
        for i in run[np.isfinite(up_r[run]) & ~met_r[run]]:
            try:
                lo2, up2, met2 = (float(np.asarray(v)[0]) for v in read(np.array([i])))
            except PLD_FAILURES:
                continue
            if not math.isfinite(up2):
                continue
            up = min(float(up_r[i]), up2)
            lo = float(np.nanmax([lo_r[i], lo2])) if np.isfinite([lo_r[i], lo2]).any() else math.nan
            met = bool(met_r[i]) or bool(met2)
            if math.isfinite(lo):
                met = bool(within(lo, up, rel, abs_))
            lo_r[i], up_r[i], met_r[i] = lo, up, met


def _settle(read, rows: np.ndarray, deltas: np.ndarray) -> None:
    """``read(rows)`` for all rows at once; where the engine declines (:data:`PLD_FAILURES`) — beyond what
    the PLD grid can represent for the smallest δ, perhaps — the largest δ alone and, if that is read, each
    half in turn (a few failed readings per level, not one per δ). Rows never read are left unanswered."""
    rows = rows[np.argsort(deltas[rows], kind="stable")]
    try:
        read(rows)
        return
    except PLD_FAILURES:
        if rows.size == 1:
            return
    try:
        read(rows[-1:])
    except PLD_FAILURES:
        return  # the easiest δ fails: so would the others
    for part in (rows[rows.size // 2 : -1], rows[: rows.size // 2]):
        if part.size:
            _settle(read, part, deltas)


def _realisable_lower(q, sigma, steps, delta, lo, up, met, rows, kw):
    """Lower ends of sampling without replacement over T >= 2 steps, from datasets that realise them.

    The upper end composes the symmetrised hull C_q(G_{1/σ}) (Dong, Roth & Su): sound, but no pair of
    datasets need reach its composition — per step the hull is the larger of two pairs' δ at each ε, and
    which one changes with ε — so the hull's own lower end is no bound on the mechanism. Two datasets
    that do realise a bound: every record at one value a, and its neighbour with one record at b, |a − b|
    the substitution sensitivity. A fixed-size batch then sums to B·a, or, with the changed record in it
    (probability q), one record's worth more: per step N(0, σ²) against (1 − q)N(0, σ²) + qN(1, σ²) —
    Poisson sampling's add and remove pairs, each order realised. So the mechanism's ε is at least
    Poisson sampling's at the same (q, σ, T), and Poisson's certified lower end is a lower end here (an
    independent audit found composed hulls whose lower end no adaptive choice of those pairs reaches).
    The interval is then as wide as the two constructions are apart; ``met`` says whether that is within
    the width asked for."""
    from .pld.engine import widths, within

    lo = lo.copy()
    met = met.copy()
    idx = np.flatnonzero(rows & (steps >= 2) & np.isfinite(up))
    lo[rows & (steps >= 2)] = np.nan
    if idx.size:
        p = tight_interval(q[idx], sigma[idx], steps[idx], delta[idx], "poisson", **kw)
        # (Where Poisson's engine cannot answer, ε >= 0 is all that is claimed.)
        lo[idx] = np.minimum(np.where(np.isfinite(p.lower), p.lower, 0.0), up[idx])
        met[idx] = within(lo[idx], up[idx], *widths(kw))
    return lo, met


#: Most distinct values of one parameter (q, σ or T) that :func:`tight_curve` composes.
CURVE_POINTS = 128
#: Most compositions :func:`tight_curve` runs row by row (every setting, or per (q, σ) at most
#: CURVE_POINTS step counts); a larger grid is answered on a lattice of GRID_POINTS settings.
DIRECT_POINTS = 1024
#: Most settings (q, σ, T) of that lattice; the other rows are bracketed.
GRID_POINTS = 256

#: Method of a row bracketed between composed settings (see :func:`tight_curve`).
BRACKET = "pld-bracket"


def _geometric_pick(values: np.ndarray, k: int) -> np.ndarray:
    """About k of the sorted distinct ``values``, spread evenly in log scale, always the first and last."""
    if values.size <= k:
        return values
    want = np.geomspace(values[0], values[-1], k)
    i = np.clip(np.searchsorted(values, want), 0, values.size - 1)
    idx = np.unique(np.concatenate([[0, values.size - 1], i]))
    if idx.size < k:
        # An outlier (σ = 0.3 beside 3,000 values in 0.5 … 2) sends most wanted points onto the first value
        # past its gap, leaving the rest of the grid thinly picked (95 of 128). Fill up to k: each time the
        # widest gap in log scale between picks with values inside it is split at the value nearest its middle.
        lv = np.log(values)
        while idx.size < k:
            inner = np.diff(idx) > 1
            if not inner.any():
                break
            g = int(np.argmax(np.where(inner, lv[idx[1:]] - lv[idx[:-1]], -np.inf)))
            a, b = int(idx[g]), int(idx[g + 1])
            j = a + 1 + int(np.argmin(np.abs(lv[a + 1 : b] - (lv[a] + lv[b]) / 2)))
            idx = np.insert(idx, g + 1, j)
    return values[idx]


#: A parameter of at most this many values (and at most ``per_axis``) keeps them all on a lattice, where the product
#: allows it: with its ends alone, its middle values would be bracketed from an end (steps 10, 30, 1,000 beside
#: 3,000 noise multipliers read at 10 and 1,000 only: the rows at 30 steps 70 % wide).
SHORT_AXIS = 16


def _picks_per_axis(sizes: list[int], per_axis: int, total: int) -> list[int]:
    """How many values of each parameter to compose: at most ``per_axis`` each (and at most the
    parameter's own count), their product at most ``total``; both ends of every parameter always, and every
    value of a parameter of at most SHORT_AXIS where they fit. Greedy: the parameter with the most values per
    pick gains one while the product allows."""
    k = [min(n, 2) for n in sizes]
    cap = [min(n, per_axis) for n in sizes]
    whole = [n if n <= min(SHORT_AXIS, per_axis) else kk for n, kk in zip(sizes, k)]
    if math.prod(whole) <= total:
        k = whole
    while True:
        grow = [a for a in range(len(sizes)) if k[a] < cap[a] and math.prod(k) // k[a] * (k[a] + 1) <= total]
        if not grow:
            return k
        a = max(grow, key=lambda b: sizes[b] / k[b])
        k[a] += 1


@dataclass(frozen=True)
class _Lattice:
    """The settings :func:`tight_curve` composes for a grid too large to compose whole: a product of
    picked values of q, σ and T, at every δ of the grid (``ds``), and where each bracketed row's
    nearest lattice settings lie — ``up`` (as much loss or more: q' >= q, σ' <= σ, T' >= T) and
    ``lo`` (as little or less), each a tuple of index arrays into (q, σ, T, δ) — for the rows ``rows``."""

    pq: np.ndarray
    ps: np.ndarray
    pt: np.ndarray
    ds: np.ndarray
    rows: np.ndarray
    up: tuple
    lo: tuple
    on: np.ndarray

    def settings(self):
        """The lattice's settings and δ as flat arrays (q, σ, T, δ), in the order of :meth:`shape`."""
        return tuple(g.ravel() for g in np.meshgrid(self.pq, self.ps, self.pt, self.ds, indexing="ij"))

    @property
    def shape(self):
        return (self.pq.size, self.ps.size, self.pt.size, self.ds.size)

    def upper(self, values):
        """Per row, the smallest of ``values`` (flat, one per lattice setting; NaN: none) over lattice
        settings with at least the row's privacy loss."""
        v = np.asarray(values, float).reshape(self.shape)
        v = np.fmin.accumulate(v[::-1], axis=0)[::-1]
        v = np.fmin.accumulate(v, axis=1)
        v = np.fmin.accumulate(v[:, :, ::-1], axis=2)[:, :, ::-1]
        return v[self.up]

    def lower(self, values):
        """Per row, the largest of ``values`` over lattice settings with at most the row's loss."""
        v = np.asarray(values, float).reshape(self.shape)
        v = np.fmax.accumulate(v, axis=0)
        v = np.fmax.accumulate(v[:, ::-1], axis=1)[:, ::-1]
        v = np.fmax.accumulate(v, axis=2)
        return v[self.lo]

    def own(self, values):
        """Per row, ``values`` at the row's own setting (meaningful where ``on``)."""
        return np.asarray(values).reshape(self.shape)[self.up]


def _curve_cost(q, sigma, steps, rows, max_points: int) -> int:
    """Compositions of the row-by-row route: per (q, σ), its step counts (at most ``max_points``)."""
    qs = np.stack([q[rows], sigma[rows]])
    pairs, inv = np.unique(qs, axis=1, return_inverse=True)
    per = np.unique(np.stack([inv.ravel(), steps[rows]]), axis=1)[0]
    return int(np.minimum(np.bincount(per.astype(int), minlength=pairs.shape[1]), max_points).sum())


def _lattice(q, sigma, steps, delta, max_points: int, budget: int, direct: int) -> _Lattice | None:
    """The lattice for a grid whose row-by-row route (:func:`_curve_cost`) would run more than ``direct``
    compositions, over its rows other than the closed forms' (q = 1, T = 1); None for a smaller grid."""
    rows = np.flatnonzero((q < 1.0) & (steps > 1))
    if not rows.size or _curve_cost(q, sigma, steps, rows, max_points) <= direct:
        return None
    return lattice_of(q, sigma, steps, delta, rows, max_points, budget)


def lattice_of(q, sigma, steps, delta, rows, max_points: int, budget: int) -> _Lattice:
    """The lattice over the grid's ``rows``: at most ``max_points`` of the rows' values of each of q, σ and
    T (spread evenly in log scale, both ends kept) and ``budget`` settings in all, at every δ of the rows,
    with each row's nearest settings of more and of less privacy loss (:class:`_Lattice`). Also used by
    :func:`dpcalc.risk.sgd_rows` for attack readings, which are monotone the same way."""
    axes = [np.unique(a[rows]) for a in (q, sigma, steps)]
    k = _picks_per_axis([a.size for a in axes], max_points, budget)
    pq, ps, pt = (_geometric_pick(a, kk) for a, kk in zip(axes, k))
    ds = np.unique(delta[rows])
    qr, sr, tr = q[rows], sigma[rows], steps[rows]
    j = np.searchsorted(ds, delta[rows])
    # The nearest lattice values on each side (both ends of every parameter are on the lattice).
    up = (np.searchsorted(pq, qr), np.searchsorted(ps, sr, "right") - 1, np.searchsorted(pt, tr), j)
    lo = (np.searchsorted(pq, qr, "right") - 1, np.searchsorted(ps, sr), np.searchsorted(pt, tr, "right") - 1, j)
    on = (pq[up[0]] == qr) & (ps[up[1]] == sr) & (pt[up[2]] == tr)
    return _Lattice(pq, ps, pt, ds, rows, up, lo, on)


def tight_curve(
    q,
    sigma,
    steps,
    delta,
    sampling: str = "poisson",
    max_points: int = CURVE_POINTS,
    budget: int = GRID_POINTS,
    direct: int = DIRECT_POINTS,
    **kw,
) -> Tight:
    """Certified intervals on ε for a grid of settings: an ε curve (``--per-epoch``), or a grid of
    sampling rates, noise multipliers and step counts.

    ε is monotone in each parameter, for the mechanism as for the pairs the engine composes: it does
    not fall with T (the output of T steps is a post-processing of the output of T' > T steps), nor
    with q (a rate-q' step, q' < q, is a rate-q step followed by keeping its outcome with probability
    q'/q and else drawing afresh from the no-record distribution: a post-processing of the pair, step
    by step), and it does not grow with σ (more noise is the output plus independent noise). Without
    replacement the upper end is the composed hull C_q(G_{1/σ}), monotone the same way, and the lower
    end is Poisson sampling's (or, at one step, the hull's, which one step realises), so each end
    keeps its order too. Hence a certified lower end at a setting with less privacy loss (q' <= q,
    σ' >= σ, T' <= T) is a lower end for the row, and a certified upper end at one with more loss an
    upper end.

    Row by row where that runs at most ``direct`` compositions: each (q, σ) with at most
    ``max_points`` step counts has every row answered by :func:`tight_interval` (the same numbers as
    one row at a time); one with more has ``max_points`` of them composed (spread evenly in log T,
    both ends always) and the others bracketed along T. A larger grid (10,000 noise multipliers, say)
    is answered on a lattice of at most ``max_points`` values of each of q, σ and T, at most
    ``budget`` settings in all, composed at every δ asked (:func:`_lattice`): a row on it gets its
    own answer, every other row the largest certified lower end among lattice settings with less
    loss and the smallest certified upper end among those with more. Bracketed rows have method
    :data:`BRACKET` (``met``: whether the interval is as narrow as asked). Rows with q = 1 or T = 1
    (closed forms) are always answered directly.
    """
    from .pld.engine import widths

    _check_sampling(sampling)
    q, sigma, steps, delta = _flat(q, sigma, steps, delta)
    n = q.size
    lo, up, method, met = _blank(n, met=False)
    rel, abs_ = widths(kw)
    lat = _lattice(q, sigma, steps, delta, max_points, budget, direct)
    if lat is None:
        # Row by row, each (q, σ) with more than max_points step counts bracketed along T (a lattice of
        # one q and one σ).
        direct_rows = []
        groups: dict = {}
        for i in range(n):
            groups.setdefault((float(q[i]), float(sigma[i])), []).append(i)
        for (qq, ss), idx in groups.items():
            idx = np.array(idx)
            if qq >= 1.0 or np.unique(steps[idx]).size <= max_points:
                direct_rows.append(idx)
                continue
            one = _lattice(q[idx], sigma[idx], steps[idx], delta[idx], max_points, max_points, 0)
            direct_rows.append(idx[np.setdiff1d(np.arange(idx.size), one.rows)])
            _bracket(one, idx, lo, up, method, met, sampling, rel, abs_, kw)
        todo = np.concatenate(direct_rows) if direct_rows else np.zeros(0, int)
    else:
        todo = np.setdiff1d(np.arange(n), lat.rows)
        _bracket(lat, np.arange(n), lo, up, method, met, sampling, rel, abs_, kw)
    if todo.size:
        t = tight_interval(q[todo], sigma[todo], steps[todo], delta[todo], sampling, **kw)
        lo[todo], up[todo], method[todo], met[todo] = t.lower, t.upper, t.method, t.met
    bad = ~(np.isfinite(lo) & np.isfinite(up))  # (a bracketed row with no certified upper end: no claim)
    lo[bad] = up[bad] = np.nan
    met[bad] = False
    return Tight(lo, up, method, _bounds(method, met), met)


def _bracket(lat: _Lattice, idx, lo, up, method, met, sampling, rel, abs_, kw) -> None:
    """Compose ``lat``'s settings and fill its rows (``idx[lat.rows]`` of the output arrays): their own
    answer on the lattice, else the bracket between the nearest settings with less and more loss."""
    from .pld.engine import within

    t = tight_interval(*lat.settings(), sampling, **kw)
    on, rows = lat.on, idx[lat.rows]
    u, l_ = lat.upper(t.upper), lat.lower(t.lower)
    lo[rows] = np.where(on, lat.own(t.lower), np.where(np.isfinite(l_), l_, 0.0))  # ε >= 0 always
    up[rows] = np.where(on, lat.own(t.upper), u)
    method[rows] = np.where(on, lat.own(t.method), BRACKET)
    met[rows] = np.where(on, lat.own(t.met), within(lo[rows], up[rows], rel, abs_))


@dataclass(frozen=True)
class Best:
    """The answer to "what is ε" per case: the smallest sound upper bound any engine certifies, the
    largest certified lower bound, and where they come from.

    ``method``/``bound`` describe the upper end (``rdp`` where RDP's bound is the smaller); ``lower``
    is the tight engine's (NaN where it could not certify one); ``width`` is upper − lower (NaN
    without a lower end); ``met`` whether the tight engine reached the width asked for.
    """

    upper: np.ndarray
    lower: np.ndarray
    method: np.ndarray
    bound: np.ndarray
    width: np.ndarray
    met: np.ndarray
    tight: Tight
    rdp: np.ndarray


def best(
    q,
    sigma,
    steps,
    delta,
    sampling: str = "poisson",
    curve: bool = False,
    max_points: int = CURVE_POINTS,
    budget: int = GRID_POINTS,
    direct: int = DIRECT_POINTS,
    **kw,
) -> Best:
    """The tightest sound answer per case: min(tight engine's upper end, RDP) — RDP for Poisson
    sampling only — with the tight engine's certified lower end. Where the tight engine cannot
    answer, RDP alone (no lower end); without replacement there is no RDP, and such a case is NaN.
    ``curve``: the tight engine's intervals by :func:`tight_curve` (a curve or grid of settings, with its
    ``max_points``, ``budget`` and ``direct``).
    """
    q, sigma, steps, delta = _flat(q, sigma, steps, delta)
    if curve:
        t = tight_curve(q, sigma, steps, delta, sampling, max_points=max_points, budget=budget, direct=direct, **kw)
    else:
        t = tight_interval(q, sigma, steps, delta, sampling, **kw)
    if sampling == "poisson":
        # (Every row, bracketed or not: RDP's computed bound need not be monotone in σ — its order search is
        # coarse above α = 128, 11 % apart at σ = 3.311 and 3.3115 — so no row can skip it as "cannot be the
        # smaller"; 10,000 rows cost about 10 s.)
        r = np.asarray(_rdp_epsilon(q, sigma, steps, delta), float)
    else:
        r = np.full(q.shape, np.nan)
    # The same steps without sampling, where their exact ε is the smaller (and where the tight engine has none).
    t_up, t_method = with_no_subsampling(t, sigma, steps, delta, sampling)
    use_rdp = np.isfinite(r) & ~(t_up <= r)  # RDP where it is smaller, or the only one
    upper = np.where(use_rdp, r, t_up)
    method = np.where(use_rdp, "rdp", t_method).astype(object)
    bound = np.where(use_rdp | (method == "no-subsampling"), "upper", t.bound).astype(object)
    with np.errstate(invalid="ignore"):
        width = upper - t.lower
    return Best(upper, t.lower, method, bound, width, t.met, t, r)


def refine_for_budget(
    b: Best, q, sigma, steps, delta, sampling: str, budget: float, w: float
) -> tuple[Best, np.ndarray]:
    """A budget check decided at the budget's own scale: rows whose certified interval contains the budget ε
    (``--max-epsilon``; lower <= budget < upper, so the check is undecided) are computed again at the PLD width
    ``w`` (as ``--pld-width``: the one an inverse search for that ε uses, :func:`inverse_width`), and take the new
    row where its upper end is the smaller. At a budget of 1e-5 the default absolute width 1e-4 leaves
    [0, 1.9e-5] where the true ε is about 8e-6 (q = 1e-5, σ = 30, 100 steps, δ = 1e-8): the check failed a run
    that meets it, and a σ that ``--target-epsilon`` found for the budget failed it. (Budgets of 0.01 or more
    keep the default width: the caller does not call this.) Returns the answer and the rows that took a new
    value."""
    again, rows, spliced = _again(
        b.lower, b.upper, budget, (q, sigma, steps, delta), lambda *c: best(*c, sampling, **width_kw(w))
    )
    if not rows.size:
        return b, rows
    tight = Tight(*(spliced(getattr(b.tight, f), getattr(again.tight, f)) for f in Tight.__dataclass_fields__))
    fields = {f: spliced(getattr(b, f), getattr(again, f)) for f in Best.__dataclass_fields__ if f != "tight"}
    return Best(tight=tight, **fields), rows


def refine_tight_for_budget(
    t: Tight, q, sigma, steps, delta, sampling: str, budget: float, w: float
) -> tuple[Tight, np.ndarray]:
    """:func:`refine_for_budget` for the tight engine's answer alone (``amplify gaussian``, whose RDP rows are
    its own): rows whose certified interval contains the budget are computed again at the PLD width ``w`` and
    take the new interval where its upper end is the smaller. Returns the answer and the rows that took it."""
    again, rows, spliced = _again(
        t.lower, t.upper, budget, (q, sigma, steps, delta), lambda *c: tight_interval(*c, sampling, **width_kw(w))
    )
    if not rows.size:
        return t, rows
    return Tight(*(spliced(getattr(t, f), getattr(again, f)) for f in Tight.__dataclass_fields__)), rows


def _again(lower, upper, budget: float, cases, compute):
    """For :func:`refine_for_budget` and :func:`refine_tight_for_budget`: the rows whose certified interval
    [lower, upper] contains the budget, computed again (``compute(q, σ, T, δ)`` of those rows' ``cases``); returns
    that answer, the rows whose new upper end is the smaller, and a function putting the new values into an array
    of every row (``spliced(old, new)``)."""
    with np.errstate(invalid="ignore"):
        rows = np.flatnonzero(np.isfinite(lower) & (lower <= budget) & ~(upper <= budget))
    if not rows.size:
        return None, rows, None
    again = compute(*(a[rows] for a in _flat(*cases)))
    take = again.upper < np.asarray(upper)[rows]
    rows, src = rows[take], np.flatnonzero(take)

    def spliced(old, new):
        out = np.array(old, copy=True)
        out[rows] = np.asarray(new)[src]
        return out

    return again, rows, spliced


def with_no_subsampling(t: Tight, sigma, steps, delta, sampling: str) -> tuple[np.ndarray, np.ndarray]:
    """The tight engine's upper ends and methods, with the no-subsampling bound (:func:`no_subsampling_upper`)
    where it is smaller — Poisson sampling and sampling without replacement (the schemes whose steps are
    sampled Gaussian steps). Rows of the exact routes (``gdp``, ``privacy-profile``, ``near-full-batch``,
    ``total-variation``: round-off-wide intervals, or the same bound) are left alone — a round-off-sized
    difference must not turn an exact row into an upper one; rows the engine cannot answer (NaN) take the
    bound, without a lower end (the callers say so)."""
    return _no_subsampling_over(t.upper, t.method, sigma, steps, delta, sampling, t.met)


def within_width(lower, upper, kw: dict) -> np.ndarray:
    """Whether each [lower, upper] is within the width the engine's keyword arguments ``kw`` ask for."""
    from .pld.engine import widths, within

    lo, up = np.asarray(lower, float), np.asarray(upper, float)
    ok = np.isfinite(lo) & np.isfinite(up)
    out = np.zeros(lo.shape, dtype=bool)
    out[ok] = within(lo[ok], up[ok], *widths(kw))
    return out


def _no_subsampling_over(upper, method, sigma, steps, delta, sampling: str, met) -> tuple[np.ndarray, np.ndarray]:
    """:func:`with_no_subsampling` on upper ends, methods and ``met`` given as arrays."""
    up, meth = np.asarray(upper, float), np.asarray(method, dtype=object)
    if sampling not in ("poisson", "without-replacement"):
        return up, meth
    # (An exact route's interval wider than asked — round-off at absurd noise, σ = 1e-7 — is an interval like any
    # other: the bound may replace its upper end there.)
    keep = np.isin(meth, EXACT_ROUTES) & np.isfinite(up) & np.asarray(met, dtype=bool)
    full = no_subsampling_upper(*(np.broadcast_to(v, up.shape) for v in (sigma, steps, delta)))
    # (Strictly smaller: on a tie the tight engine's row stays, with its lower end; or where it has none.)
    use = ~keep & np.isfinite(full) & ~(up <= full)
    return np.where(use, full, up), np.where(use, "no-subsampling", meth).astype(object)


def pld_interval(q, sigma, steps, delta, sampling: str = "poisson", **kw):
    """Certified [lower, upper] on ε by the tight engine (:func:`tight_interval`), NaN where it cannot answer."""
    t = tight_interval(q, sigma, steps, delta, sampling, **kw)
    return t.lower, t.upper


def _pld_epsilon(q, sigma, steps, delta, sampling: str = "poisson"):
    return pld_interval(q, sigma, steps, delta, sampling)[1]


def _clt_epsilon(q, sigma, steps, delta, sampling: str = "poisson"):
    # The same μ for both samplings (Bu et al. 2020 for Poisson; Dong, Roth & Su 2022 for C_q).
    mu = gdp.clt_mu(q, sigma, steps)
    mu, delta = np.broadcast_arrays(np.atleast_1d(mu), delta)
    return gdp._epsilon(mu.ravel(), np.log(delta.ravel()), 1e-12)


ACCOUNTANTS: dict[str, Accountant] = {
    "rdp": Accountant("rdp", "upper", _rdp_epsilon),
    "pld": Accountant("pld", "upper", _pld_epsilon),
    "gdp-clt": Accountant("gdp-clt", "approximate", _clt_epsilon),
}


def default_delta(dataset_size):
    """δ used when none is given: the largest power of ten strictly below 1/N.

    N = 60,000 gives 1e-5; N = 100,000 gives 1e-6.
    """
    scalar = all_scalar(dataset_size)
    n = checked("dataset_size", dataset_size, low=1, low_open=False, integer=True)
    k = np.floor(np.log10(n)) + 1
    # 1/10^k with 10^k an exact integer: the double nearest to 1e-k (a vectorised pow can be an ulp off).
    out = np.array([1.0 / float(10 ** int(x)) for x in k.ravel()]).reshape(k.shape)
    return finish(out, scalar=scalar)


def _decimal(x: float) -> Fraction:
    """The decimal a number was typed as, read back exactly from the shortest text of its double
    (``1.0000000005``, ``0.1``: not the binary value 0.1000000000000000055…; grid points are rounded to
    15 significant digits when made, so they read back the same way)."""
    return Fraction(repr(float(x)))


#: A quotient of doubles (three roundings) is within this relative distance of the exact one.
_RATIO_SLACK = 8.0 * 2.0**-52


def _exact_round(v: np.ndarray, exact: Callable[[int], Fraction], up: bool) -> np.ndarray:
    """⌈x⌉ (or ⌊x⌋) of exact values x whose floating-point estimates are ``v`` (relative error below
    :data:`_RATIO_SLACK`): where no integer is that close to v the float answer is the exact one;
    the few that are near an integer (3 epochs of N/B = 1 is, exactly) are decided in exact rational
    arithmetic by ``exact(i)``."""
    v = np.asarray(v, dtype=np.float64)
    out = np.ceil(v) if up else np.floor(v)
    with np.errstate(invalid="ignore"):
        near = np.abs(v - np.round(v)) <= _RATIO_SLACK * np.abs(v) + 1e-300
    flat = out.reshape(-1)
    for i in np.flatnonzero(near.reshape(-1)):
        x = exact(int(i))
        c = math.ceil(x) if up else math.floor(x)
        f = float(c)
        if (f < c) if up else (f > c):  # beyond 2⁵³ not every whole number is a double: keep the safe side
            f = math.nextafter(f, math.inf if up else -math.inf)
        flat[i] = f
    return flat.reshape(v.shape)


def steps_for_epochs(epochs, dataset_size, batch_size):
    """T = ⌈epochs · N / B⌉ (expected batch size B under Poisson sampling), exactly.

    A budget tool must never round a step count down: the ceiling is taken of the exact product of the
    epochs as typed (their shortest decimal) and N/B, so 1.0000000005 epochs of N = B is 2 steps and
    3 epochs of N = B exactly 3.
    """
    scalar = all_scalar(epochs, dataset_size, batch_size)
    e = checked("epochs", epochs, low=0)
    n = checked("dataset_size", dataset_size, low=1, low_open=False, integer=True)
    b = checked("batch_size", batch_size, low=1, low_open=False, integer=True)
    e, n, b = np.broadcast_arrays(e, n, b)
    fe, fn, fb = e.reshape(-1), n.reshape(-1), b.reshape(-1)
    t = _exact_round(e * n / b, lambda i: _decimal(fe[i]) * int(fn[i]) / int(fb[i]), up=True)
    return finish(t, scalar=scalar)


def steps_for_epochs_at_rate(epochs, rate):
    """T = ⌈epochs / q⌉ for a sampling rate q given as a number, exactly (both read as typed)."""
    scalar = all_scalar(epochs, rate)
    e = checked("epochs", epochs, low=0)
    q = checked("rate", rate, low=0, high=1, high_open=False)
    e, q = np.broadcast_arrays(e, q)
    fe, fq = e.reshape(-1), q.reshape(-1)
    with np.errstate(over="ignore"):
        v = e / q
    t = _exact_round(v, lambda i: _decimal(fe[i]) / _decimal(fq[i]), up=True)
    return finish(t, scalar=scalar)


def whole_epochs(steps, *, dataset_size=None, batch_size=None, rate=None):
    """(⌊T·q⌋, T·q rounded down): the whole epochs in T steps and the exact fraction, never rounded up,
    with q = B/N (exactly) or the rate as typed."""
    scalar = all_scalar(steps, rate if rate is not None else batch_size)
    t = checked("steps", steps, low=0, low_open=False, integer=True)
    if rate is not None:
        q = checked("rate", rate, low=0, high=1, high_open=False)
        t, q = np.broadcast_arrays(t, q)
        ft, fq = t.reshape(-1), q.reshape(-1)

        def exact(i):
            return int(ft[i]) * _decimal(fq[i])

        v = t * q
    else:
        n = checked("dataset_size", dataset_size, low=1, low_open=False, integer=True)
        b = checked("batch_size", batch_size, low=1, low_open=False, integer=True)
        t, n, b = np.broadcast_arrays(t, n, b)
        ft, fn, fb = t.reshape(-1), n.reshape(-1), b.reshape(-1)

        def exact(i):
            return Fraction(int(ft[i]) * int(fb[i]), int(fn[i]))

        v = t * b / n
    whole = _exact_round(v, exact, up=False)
    # The fraction itself: two roundings, so two ulps down is below the exact value.
    frac = np.maximum(np.nextafter(np.nextafter(v, -np.inf), -np.inf), whole)
    return finish(whole, frac, scalar=scalar)


def _check(rate, sigma, steps, delta):
    q = checked("rate", rate, low=0, high=1, high_open=False)
    s = checked("noise_multiplier", sigma, low=0)
    t = checked("steps", steps, low=1, low_open=False, integer=True)
    d = checked("delta", delta, low=0, high=1)
    return np.broadcast_arrays(q, s, t, d)


def epsilon(rate, sigma, steps, delta, accountant: str = "rdp", sampling: str = "poisson"):
    """ε of T subsampled Gaussian steps at δ.

    Examples
    --------
    >>> round(epsilon(256 / 60000, 1.1, 14063, 1e-5), 2)
    2.6
    """
    scalar = all_scalar(rate, sigma, steps, delta)
    _check_sampling(sampling)
    q, s, t, d = _check(rate, sigma, steps, delta)
    shape = q.shape
    eps = ACCOUNTANTS[accountant].epsilon(q.ravel(), s.ravel(), t.ravel(), d.ravel(), sampling=sampling)
    return finish(np.asarray(eps).reshape(shape), scalar=scalar)


def epsilon_curve(rate, sigma, steps, delta, accountant: str = "rdp", sampling: str = "poisson"):
    """ε after each of the given step counts (1-D ``steps``) for one setting."""
    _check_sampling(sampling)
    steps = checked("steps", steps, low=1, low_open=False, integer=True).ravel()
    q, s, t, d = _check(rate, sigma, steps, delta)
    return ACCOUNTANTS[accountant].epsilon(q, s, t, d, sampling=sampling)


# --------------------------------------------------------------------------- inverse searches
#
# Every inverse search returns only points where its bound was evaluated and held, and re-checks the
# answer on both sides with the bound it reports: the answer meets the target, and the next value
# toward more privacy loss (σ/(1 + rtol), T + 1, B + 1) was evaluated and does not (or cannot be
# accounted at all, which is reported as the edge of what dpcalc can account, not as an optimum).

#: σ searches cover σ in [SIGMA_FLOOR, SIGMA_MAX]; in practice down to where the accountant stops
#: answering (its bound overflows, or PLD's grid no longer fits), which the search finds.
SIGMA_MAX = 1e12
SIGMA_FLOOR = 1e-300
#: Relative tolerance of σ answers: σ/(1 + rtol) was evaluated by the same bound and misses the target.
SIGMA_RTOL = {"pld": 1e-3, "best": 1e-3, "rdp": 1e-4, "gdp-clt": 1e-4}
#: Most steps the steps/epochs search covers.
MAX_STEPS = 1e9
#: Relative tolerance of step-count answers by accountant (at least one step): T + max(1, ⌊rtol·T⌋) was
#: evaluated by the same bound and misses the target (each PLD evaluation at 10⁷ steps costs seconds).
STEPS_RTOL = {"pld": 1e-3, "best": 1e-3, "rdp": 0.0, "gdp-clt": 0.0}

#: The PLD widths an inverse search evaluates its bound at (as ``--pld-width W``: relative W, absolute W/10): the
#: forward default, then finer ones for small targets (:func:`inverse_width`), down to the finest ``--pld-width``.
INVERSE_WIDTHS = (1e-3, 1e-4, 1e-5)


def inverse_width(target) -> np.ndarray:
    """The PLD width (as ``--pld-width``) an inverse search for each ``target`` ε evaluates with: the largest of
    :data:`INVERSE_WIDTHS` whose absolute width W/10 is at most 1 % of the target, else the finest (1e-5).

    Targets of 0.01 or more keep the forward command's default (1e-3: 0.1 % of ε, or 1e-4, at most 1 % of
    them). A smaller target gets a finer width, so that its answer is not held back by an interval as wide as
    the target: at ε = 1e-5 the default absolute width 1e-4 is ten times the target, and σ came out 3× the noise
    needed. (Not finer than 1 %, nor than 1e-5: a finer width costs seconds where the grids are hard, tiny q and
    σ near 1, for a σ a fraction of a percent smaller; and 1e-6 took a minute at q = 0.01, 10⁵ steps, ε = 1e-6,
    where 1e-5 takes 8 s for a σ 0.2 % larger.) The same ``--pld-width`` on the forward command reproduces the
    answer's ε (JSON ``pld_width``)."""
    t = np.asarray(target, float)
    w = np.full(t.shape, INVERSE_WIDTHS[-1])
    for c in sorted(INVERSE_WIDTHS[:-1]):  # coarser ones win where they qualify
        w = np.where(c / 10 <= 1e-2 * t * (1 + 1e-9), c, w)
    return w


def width_kw(w: float) -> dict:
    """The PLD engine's keyword arguments for ``--pld-width w`` (none for the default)."""
    return {} if w == INVERSE_WIDTHS[0] else {"rel": float(w), "abs_": float(w) / 10}


def _tight_at_widths(q, s, t, d, sampling: str, w=None, upper_only: bool = False) -> Tight:
    """:func:`tight_interval` with each row at its own PLD width ``w`` (as ``--pld-width``; None: the default),
    one call per distinct width."""
    if w is None:
        return tight_interval(q, s, t, d, sampling, upper_only)
    q, s, t, d, w = (np.asarray(a, float).ravel() for a in np.broadcast_arrays(q, s, t, d, w))
    ws = np.unique(w)
    if ws.size == 1:
        return tight_interval(q, s, t, d, sampling, upper_only, **width_kw(ws[0]))
    n = q.size
    out = Tight(np.empty(n), np.empty(n), np.empty(n, object), np.empty(n, object), np.empty(n, bool))
    for x in ws:
        r = np.flatnonzero(w == x)
        part = tight_interval(q[r], s[r], t[r], d[r], sampling, upper_only, **width_kw(x))
        for f in ("lower", "upper", "method", "bound", "met"):
            getattr(out, f)[r] = getattr(part, f)
    return out


#: Outcomes of an inverse search, per row (``Solution.status``).
OPTIMAL = "optimal"  # the next value toward more loss was evaluated and misses the target
RANGE_END = "range-end"  # the target is met at the end of the searched range (σ floor, MAX_STEPS, B = N)
EDGE = "edge"  # the next value toward more loss cannot be accounted (its bound overflows / does not fit), or only
# by RDP's fallback where the answer's own bound is another (its "miss" says nothing about the optimum)
NONE = "none"  # not met anywhere in the range (even at SIGMA_MAX, one step, a batch of one)
BRACKETED = "bracketed"  # between two searched targets of a large grid (see _bracket_targets)

#: Most distinct targets of one setting an inverse search runs; a larger grid's others are bracketed.
TARGET_POINTS = 64


@dataclass(frozen=True)
class Solution:
    """An inverse-planning answer per row.

    ``value`` is the answer (NaN, or 0 for counts, where nothing meets the target); ``epsilon`` the
    reported bound there; ``found`` whether it is the optimum within the tolerance (``status`` says
    why not otherwise); ``next_value`` / ``next_epsilon`` the value checked on the other side (σ/(1 +
    rtol) or closer, T + 1, B + 1) and its bound (NaN: cannot be accounted); ``method`` the bound's
    method (pld, rdp, gdp, privacy-profile, total-variation, gdp-clt).
    """

    value: np.ndarray
    epsilon: np.ndarray
    found: np.ndarray
    status: np.ndarray | None = None
    next_value: np.ndarray | None = None
    next_epsilon: np.ndarray | None = None
    method: np.ndarray | None = None
    #: The PLD width (as ``--pld-width``) the answer's ε was evaluated at (:func:`inverse_width`; NaN for
    #: accountants without one).
    width: np.ndarray | None = None


def _bracket_targets(keys, target, solve, max_points: int | None = None) -> Solution | None:
    """A grid of many targets for the same setting (``keys``: the other parameters, per row), searched
    at ``max_points`` of them and bracketed between them; None where no setting has more targets.

    Both sides of a search are facts about points checked with the reported bound. For a target ε
    between two searched targets ε_a < ε < ε_b (spread evenly in log scale, both ends always): the
    answer at ε_a meets ε_a, so it meets ε — a feasible answer, with its bound; and the value checked
    beyond the answer at ε_b misses ε_b, so it misses ε. The row reports the first as its answer and
    the second as ``next_value``, as a search does, with status :data:`BRACKETED` and ``found`` false
    (a wider gap than a search's tolerance; where ε is monotone in what is solved for, σ and T, the
    optimum lies between them). Where ε_a's answer is at
    the end of the range (``range-end``), so is ε's; where nothing meets ε_b (``none``), nothing meets
    ε; either is copied. Other rows (an ``edge`` on either side) and every row of a setting with at
    most ``max_points`` targets are searched directly by ``solve`` (rows → :class:`Solution`)."""
    max_points = TARGET_POINTS if max_points is None else max_points
    n = target.size
    groups: dict = {}
    for i in range(n):
        groups.setdefault(tuple(float(k[i]) for k in keys), []).append(i)
    big = {g: np.array(idx) for g, idx in groups.items() if np.unique(target[idx]).size > max_points}
    if not big:
        return None
    direct = [i for g, idx in groups.items() if g not in big for i in idx]
    anchors: dict = {}  # (setting, target) -> row searched
    for g, idx in big.items():
        # Spread evenly in log scale (both ends always), as relative gaps matter.
        for x in _pick_values(np.unique(target[idx]), max_points):
            anchors[(g, float(x))] = int(idx[np.flatnonzero(target[idx] == x)[0]])
    searched = np.array(sorted(set(direct) | set(anchors.values())), dtype=int)
    sol = solve(searched)
    at = {int(r): k for k, r in enumerate(searched)}
    fields = ("value", "epsilon", "found", "status", "next_value", "next_epsilon", "method", "width")
    out = {f: np.empty(n, dtype=np.asarray(getattr(sol, f)).dtype) for f in fields}

    def copy(i, k, src=sol):
        for f in fields:
            out[f][i] = np.asarray(getattr(src, f))[k]

    for i in direct:
        copy(i, at[i])
    retry = []
    for g, idx in big.items():
        picks = np.array(sorted(x for (gg, x) in anchors if gg == g))
        for i in idx:
            x = float(target[i])
            j = int(np.searchsorted(picks, x))
            if picks[j] == x:
                copy(i, at[anchors[(g, x)]])
                continue
            a, b = at[anchors[(g, float(picks[j - 1]))]], at[anchors[(g, float(picks[j]))]]
            if sol.status[a] == RANGE_END:
                copy(i, a)
            elif sol.status[b] == NONE:
                copy(i, b)
            elif sol.status[a] == OPTIMAL and sol.status[b] == OPTIMAL:
                for f in ("value", "epsilon", "method", "width"):
                    out[f][i] = np.asarray(getattr(sol, f))[a]
                out["next_value"][i], out["next_epsilon"][i] = sol.next_value[b], sol.next_epsilon[b]
                out["found"][i], out["status"][i] = False, BRACKETED
            else:
                retry.append(i)
    if retry:
        again = solve(np.array(retry))
        for k, i in enumerate(retry):
            copy(i, k, again)
    return Solution(**out)


#: An inverse grid needing more searches than this (per setting at most TARGET_POINTS targets) is searched on a
#: lattice of at most SETTINGS_POINTS of its settings and targets, the other rows bracketed (:func:`_bracket_settings`).
SETTINGS_DIRECT = 128
SETTINGS_POINTS = 128


def _pick_values(values: np.ndarray, k: int) -> np.ndarray:
    """About k of the sorted distinct ``values``, both ends always: evenly in log scale where all are positive."""
    if values.size <= k:
        return values
    if values[0] > 0:
        return _geometric_pick(values, k)
    return values[np.unique(np.round(np.linspace(0, values.size - 1, k)).astype(int))]


def _mostly_asked(cols, points) -> bool:
    """Whether at least three quarters of a lattice's settings (``points``, without the target) are settings
    some row asked for (all of them where the grid is a product of its values). Where parameters move together
    (a dataset-size grid: q falls as T grows), most of a product lattice is corners no row is near, and a row's
    harder point can be far harder than the row (a σ 1,000 times the row's own); such a grid is searched row
    by row instead."""
    asked = set(zip(*(np.asarray(c, float).tolist() for c in cols)))
    pts = set(zip(*(np.asarray(p, float).tolist() for p in points)))
    return 4 * len(pts & asked) >= 3 * len(pts)


def lattice_picks(values: list, dirs, budget: int) -> list | None:
    """The values a lattice of at most ``budget`` points takes on each axis (``values``: each axis's sorted
    distinct values; ``dirs``: 0 for an axis kept exact, every value kept): of the others about evenly in log
    scale, both ends always (:func:`_picks_per_axis`). None where the exact axes with two values of each other
    axis would not fit."""
    exact = math.prod(v.size for v, d in zip(values, dirs) if d == 0)
    free = [a for a, d in enumerate(dirs) if d != 0]
    room = budget // exact
    if room < 2 ** sum(values[a].size > 1 for a in free):
        return None
    picks = list(values)
    for a, kk in zip(free, _picks_per_axis([values[a].size for a in free], budget, room)):
        picks[a] = _pick_values(values[a], kk)
    return picks


def nearest_picks(cols, picks, dirs):
    """For rows (``cols``: one array of values per axis) and a lattice (``picks`` per axis, sorted, both ends of
    the rows' values among them): per axis the index of the nearest lattice value with as much privacy loss or
    more (``hard``) and with as little or less (``easy``) — ``dirs`` +1 where loss grows with the value, −1 where
    it falls, 0 an axis whose values are all on the lattice — and whether each row is on the lattice."""
    hard, easy, on = [], [], np.ones(np.shape(cols[0]), dtype=bool)
    for c, p, d in zip(cols, picks, dirs):
        c = np.asarray(c, float)
        ge = np.minimum(np.searchsorted(p, c, "left"), p.size - 1)  # the smallest pick >= the row's value
        le = np.maximum(np.searchsorted(p, c, "right") - 1, 0)  # the largest pick <= it
        on &= p[ge] == c
        hard.append(ge if d >= 0 else le)
        easy.append(le if d > 0 else ge)
    return hard, easy, on


def _bracket_settings(axes, dirs, target, solve_points, enabled: bool = True) -> Solution | None:
    """An inverse grid searched on a lattice of its settings and targets; None where searching it setting by setting
    (at most :data:`TARGET_POINTS` targets each, :func:`_bracket_targets`) takes at most :data:`SETTINGS_DIRECT`
    searches.

    ``axes`` are the rows' parameters other than the target, ``dirs`` per axis +1 where a larger value means more
    privacy loss at any fixed answer (q, T, epochs), −1 less (σ, δ), 0 a parameter kept exact (N: its distinct
    values all on the lattice; None is returned where they alone would exceed the lattice). The target counts as
    −1 (a larger target is easier to meet). The lattice is a product of at most :data:`SETTINGS_POINTS` points,
    spread evenly in log scale with both ends of every axis kept; ``solve_points(*axes, target)`` searches it
    (arrays of the points' values; a :class:`Solution`; ``lat=False``: no lattice of its own). A row on it
    gets its point's answer. Any other row takes
    two points: H, the nearest with as much loss or more on every axis and a target no larger; E, the nearest with
    as little loss or less and a target no smaller. H's answer meets H's target with its bound, so at the row —
    whose ε at that answer is at most H's (ε is monotone in each axis at a fixed answer: fewer steps or epochs, a
    smaller rate, more noise are post-processings, step by step; a larger δ reads the same curve further down)
    and whose target is at least H's — it meets the row's target: the row's answer, with H's bound as its ε (an
    upper bound on the row's). The value checked beyond E's answer misses E's target, so it misses the row's:
    the row's ``next_value``, with E's bound. Status :data:`BRACKETED`, ``found`` false. Where H's answer is at
    the end of the range (``range-end``) the row's is too: it is copied. Other rows (``none`` or an ``edge`` on
    either side: E's ``none`` would carry E's ε at the smallest value, below the row's) are searched on their own,
    and so is every row of a grid whose lattice is mostly settings no row asked for (:func:`_mostly_asked`)."""
    if not enabled:  # (a search of rows a lattice left over: never a lattice again)
        return None
    cols = [np.asarray(a, float) for a in axes] + [np.asarray(target, float)]
    dirs = list(dirs) + [-1]
    n = cols[-1].size
    _, inv = np.unique(np.stack(cols[:-1]), axis=1, return_inverse=True)
    per = np.unique(np.stack([inv.ravel().astype(float), cols[-1]]), axis=1)[0].astype(int)
    # (At most max(SETTINGS_DIRECT, SETTINGS_POINTS): the lattice's own search, a grid of at most SETTINGS_POINTS
    # points, is then never put on a lattice again.)
    if int(np.minimum(np.bincount(per), TARGET_POINTS).sum()) <= max(SETTINGS_DIRECT, SETTINGS_POINTS):
        return None
    picks = lattice_picks([np.unique(c) for c in cols], dirs, SETTINGS_POINTS)
    if picks is None:
        return None
    points = [g.ravel() for g in np.meshgrid(*picks, indexing="ij")]
    if not _mostly_asked(cols[:-1], points[:-1]):
        return None
    sol = solve_points(*points)
    shape = tuple(p.size for p in picks)
    hard, easy, on = nearest_picks(cols, picks, dirs)
    h_pt, e_pt = np.ravel_multi_index(hard, shape), np.ravel_multi_index(easy, shape)
    fields = ("value", "epsilon", "found", "status", "next_value", "next_epsilon", "method", "width")
    out = {f: np.empty(n, dtype=np.asarray(getattr(sol, f)).dtype) for f in fields}
    retry = []
    for i in range(n):
        a, b = int(h_pt[i]), int(e_pt[i])
        if on[i] or sol.status[a] == RANGE_END:
            src = a
        elif sol.status[a] == OPTIMAL and sol.status[b] == OPTIMAL:
            for f in ("value", "epsilon", "method", "width"):
                out[f][i] = np.asarray(getattr(sol, f))[a]
            out["next_value"][i], out["next_epsilon"][i] = sol.next_value[b], sol.next_epsilon[b]
            out["found"][i], out["status"][i] = False, BRACKETED
            continue
        else:
            retry.append(i)
            continue
        for f in fields:
            out[f][i] = np.asarray(getattr(sol, f))[src]
    if retry:
        # Searched on their own (not on a lattice again: its retries could be these same rows, without end).
        r = np.array(retry)
        again = solve_points(*(c[r] for c in cols), lat=False)
        for f in fields:
            out[f][r] = np.asarray(getattr(again, f))
    return Solution(**out)


def _finite_or_nan(e) -> np.ndarray:
    e = np.asarray(e, float)
    return np.where(np.isfinite(e), e, np.nan)


def _check_accountant(accountant: str) -> None:
    if accountant not in ACCOUNTANTS and accountant != "best":
        raise ValidationError("accountant", accountant, "rdp, pld, gdp-clt or best")


def _rdp_where_smaller(tt: Tight, e, meth, case, refine_steps: int = 30):
    """RDP's ε where it is below the tight engine's upper end ``e`` (or the only answer). Rows the tight
    engine answers ε = 0 by the total variation distance are left alone: nothing is below 0, and RDP's
    series is slowest there (tiny σ). (The other exact routes keep RDP beside them: at σ below about
    1e-7 their round-off-wide interval is no longer narrow, or has no answer, and RDP can be smaller.)"""
    rows = np.flatnonzero(tt.method != "total-variation")
    if rows.size:
        q, s, t, d = (np.broadcast_to(v, e.shape)[rows] for v in case)
        with np.errstate(all="ignore"):
            r = _finite_or_nan(_rdp_epsilon(q, s, t, d, refine_steps=refine_steps))
        use = np.isfinite(r) & ~(e[rows] <= r)
        e = e.copy()
        e[rows[use]] = r[use]
        meth[rows[use]] = "rdp"
    return e, meth


def _search_bound(accountant: str, sampling: str):
    """The bound a search walks with: (q, σ, T, δ) → (ε, method), NaN where it has no answer. PLD: the
    tight engine's quick upper end; ``best``: the smaller of that and RDP (Poisson sampling); RDP with
    fewer refinement steps (each still a sound bound)."""

    def f(q, s, t, d, w=None):
        # (``w``: each row's PLD width, as --pld-width: :func:`inverse_width`; None the default.)
        n = np.size(q)
        if accountant in ("pld", "best"):
            tt = _tight_at_widths(q, s, t, d, sampling, w, upper_only=True)
            e, meth = _no_subsampling_over(_finite_or_nan(tt.upper), tt.method, s, t, d, sampling, tt.met)
            if accountant == "best" and sampling == "poisson":
                e, meth = _rdp_where_smaller(tt, e, meth, (q, s, t, d), refine_steps=8)
            return e, meth
        with np.errstate(all="ignore"):
            if accountant == "rdp":
                e = _rdp_epsilon(q, s, t, d, refine_steps=8, sampling=sampling)
            else:
                e = ACCOUNTANTS[accountant].epsilon(q, s, t, d, sampling=sampling)
        return _finite_or_nan(e), np.full(n, accountant, dtype=object)

    return f


def _final_bound(accountant: str, sampling: str):
    """The bound an answer is reported and re-checked with: the full-precision accountant (the PLD
    interval's upper end, RDP fully refined) — what the forward command reports at that point, so that
    an answer is met there too (where the search's quick bound was the smaller at its answer, :func:`_solve`
    moves the answer to the safe side)."""

    def f(q, s, t, d, known=None, known_m=None, w=None):
        # (``known``: the search's own bound at these points — the reported one only where the accountant has no
        # finer bound, gdp-clt; else computed here where not given. ``w``: as for the search's bound.)
        n = np.size(q)
        if accountant in ("pld", "best"):
            tt = _tight_at_widths(q, s, t, d, sampling, w)
            e, meth = _no_subsampling_over(_finite_or_nan(tt.upper), tt.method, s, t, d, sampling, tt.met)
            if accountant == "best" and sampling == "poisson":
                e, meth = _rdp_where_smaller(tt, e, meth, (q, s, t, d))
        elif accountant == "rdp":
            with np.errstate(all="ignore"):
                e = _finite_or_nan(_rdp_epsilon(q, s, t, d, sampling=sampling))
            meth = np.full(n, "rdp", dtype=object)
        elif known is None:
            return _search_bound(accountant, sampling)(q, s, t, d)
        else:
            return known.copy(), known_m.copy()
        return e, np.asarray(meth, dtype=object)

    return f


def _widths_for(target, given=None) -> np.ndarray:
    """Each row's PLD width for a search: ``given`` (the second pass of :func:`_finer_where_it_helps`), else the
    default's (the first pass, and every accountant without PLD, where it is unused)."""
    if given is not None:
        return np.asarray(given, float)
    return np.full(np.shape(target), INVERSE_WIDTHS[0])


def _finer_where_it_helps(sol: Solution, accountant: str | None, target, quick, again, better) -> Solution:
    """Small targets searched again at the finer width :func:`inverse_width` gives them, where it helps.

    The first pass searches at the forward default width. Rows found there (the next value toward more loss
    evaluated and missing the target) whose target asks for a finer width are probed once: ``quick(rows, x, w)``,
    the search's quick bound at that next value ``x`` and the finer width. Where it meets the target — the
    default width held the answer back (at ε = 1e-5 its absolute width, 1e-4, is ten times the target) —
    ``again(rows, w)`` searches those rows at the finer width, and its answer replaces the first where it is
    ``better`` (a smaller σ; more steps; a larger batch) and found or at the range's end. Elsewhere the finer
    width would cost seconds to minutes for nothing (q = 0.5, σ = 3.6e6, 100 steps, δ = 1e-10: 25 s per
    evaluation whose interval still misses the width; the quick bound there is above the default's) and the
    first answer stands. Either way each row's answer is a point its bound, at the width it reports, was
    evaluated at and met."""
    if accountant not in ("pld", "best"):  # (None: this is the second search itself)
        return sol
    w = inverse_width(target)
    nxt = np.asarray(sol.next_value, float)
    rows = np.flatnonzero((w < INVERSE_WIDTHS[0]) & (sol.status == OPTIMAL) & np.isfinite(nxt))
    if not rows.size:
        return sol
    e_quick = np.asarray(quick(rows, nxt[rows], w[rows]), float)
    with np.errstate(invalid="ignore"):
        rows = rows[e_quick <= target[rows]]
    if not rows.size:
        return sol
    fine = again(rows, w[rows])
    take = np.isin(fine.status, (OPTIMAL, RANGE_END)) & better(np.asarray(fine.value), np.asarray(sol.value)[rows])
    if not take.any():
        return sol
    fields = ("value", "epsilon", "found", "status", "next_value", "next_epsilon", "method", "width")
    out = {f: np.array(getattr(sol, f), copy=True) for f in fields}
    for f in fields:
        out[f][rows[take]] = np.asarray(getattr(fine, f))[take]
    return Solution(**out)


def _reported_widths(accountant: str, width) -> np.ndarray:
    """:attr:`Solution.width`: the widths searched with where the accountant reads PLD, else NaN."""
    w = np.asarray(width, float)
    return w.copy() if accountant in ("pld", "best") else np.full(w.shape, np.nan)


def _solve(ev_search, ev_final, target, x0, lo, hi, step, probe, mid, narrow, interp=None):
    """Search with the quick bound, then re-check both ends with the reported (final) bound. Where
    that is tighter on the far side (it meets the target there), the search goes on with it: one
    probe (``probe(x, ε, target)``: where ε would reach the target if it grew like the step count,
    or like 1/σ²), then steps of that size, and bisection (with ``interp``'s secant points, see
    :func:`.solve.walk_and_bisect`). Returns (ok, e_ok, m_ok, bad, e_bad, status)."""
    ok, bad, e_ok, e_bad, m_ok, m_bad = walk_and_bisect(ev_search, target, x0, lo, hi, step, mid, narrow, interp=interp)
    has = np.flatnonzero(np.isfinite(ok))
    if has.size:
        e, m = ev_final(has, ok[has], e_ok[has], m_ok[has])
        e_ok[has], m_ok[has] = e, m
        # Where the reported bound misses the target at the search's answer (the quick bound the search walked
        # with was the smaller there: a tiny ε, whose interval is as wide as the absolute width), the answer
        # moves to the safe side until the reported bound meets the target: the forward command at the
        # answer then reports it met. Steps of the search's last bracket, doubling, then bisection.
        back = has[~(e <= target[has])]
        if back.size:
            gap = np.abs(bad[back] - ok[back])
            gap = np.where(np.isfinite(gap) & (gap > 0), gap, np.nan)

            def ev_back(rows, x):
                return ev_final(back[rows], x, None, None)

            def step_back(x, k, direction, rows):
                coarse = step(x, k, direction, back[rows])
                fine = x + direction * gap[rows] * 2.0**k
                return np.where(np.isfinite(fine), fine, coarse)

            o2, b2, eo2, eb2, mo2, mb2 = walk_and_bisect(
                ev_back,
                target[back],
                ok[back],
                lo[back],
                hi[back],
                step_back,
                mid,
                narrow,
                at_x0=(e_ok[back], m_ok[back]),
                interp=interp,
            )
            ok[back], e_ok[back], m_ok[back] = o2, eo2, mo2
            bad[back], e_bad[back], m_bad[back] = b2, eb2, mb2
    far = np.flatnonzero(np.isfinite(ok) & np.isfinite(bad))
    if far.size:
        e, m = ev_final(far, bad[far], e_bad[far], m_bad[far])
        e_bad[far], m_bad[far] = e, m
        more = far[e <= target[far]]
        if more.size:

            def ev_more(rows, x):
                return ev_final(more[rows], x, None, None)

            start = bad[more]
            px = np.minimum(probe(start, e_bad[more], target[more]), hi[more])
            pe, pm = ev_more(np.arange(more.size), px)
            hit = pe <= target[more]
            x0_ = np.where(hit, px, start)  # met at the probe: walk on from there; else bisect below it
            size = np.abs(px - start)

            def step_more(x, k, direction, rows):
                return x + direction * size[rows] * 2.0**k

            nan = np.full(more.size, np.nan)
            bad0 = (
                np.where(hit, nan, px),
                np.where(hit, nan, pe),
                pm,
                np.where(hit, nan, e_bad[more]),
                m_bad[more],
            )
            o2, b2, eo2, eb2, mo2, mb2 = walk_and_bisect(
                ev_more, target[more], x0_, lo[more], hi[more], step_more, mid, narrow, bad0, (pe, pm), interp
            )
            ok[more], e_ok[more], m_ok[more] = o2, eo2, mo2
            bad[more], e_bad[more], m_bad[more] = b2, eb2, mb2
    status = np.full(ok.size, OPTIMAL, dtype=object)
    status[~np.isfinite(ok)] = NONE
    status[np.isfinite(ok) & ~np.isfinite(bad)] = RANGE_END
    # The next value's miss is no fact about the answer where only the fallback (RDP, many times looser)
    # could account it and the answer's own bound is another: σ = 0.0056576 at q = 0.001, 1000 steps, a
    # target ε of 10⁶ met with 125,221 by PLD, and σ/(1 + 10⁻³) "missed" with RDP's 1.56·10⁷ — the engine
    # cannot say how far below the answer lies. Like a next value nothing accounts: the edge.
    fallback = (np.asarray(m_bad, dtype=object) == "rdp") & (np.asarray(m_ok, dtype=object) != "rdp")
    status[np.isfinite(ok) & np.isfinite(bad) & (~np.isfinite(e_bad) | fallback)] = EDGE
    return ok, e_ok, m_ok, bad, e_bad, status


def _clt_guess_mu(target, delta):
    """μ of the GDP central-limit curve that meets (target, δ): a starting guess only."""
    with np.errstate(all="ignore"):
        return gdp._mu_for_dp(np.maximum(target, 1e-12), np.log(delta), 1e-6)


def _int_step(factor: float):
    def step(x, k, direction, rows=None):
        f = factor ** (2.0**k)
        if direction > 0:
            return np.maximum(np.floor(x * f), x + 1)
        return np.minimum(np.ceil(x / f), x - 1)

    return step


def _int_mid(a, b):
    lo_, hi_ = np.minimum(a, b), np.maximum(a, b)
    return np.clip(np.floor(np.sqrt(lo_) * np.sqrt(hi_)), lo_ + 1, hi_ - 1)


def _int_probe(x, e, target):
    """Where ε would reach the target if it grew like the count: at least one more."""
    with np.errstate(all="ignore"):
        jump = np.floor(x * np.clip(target / e, 1.0, 4.0))
    return np.maximum(np.nan_to_num(jump, nan=x + 1), x + 1)


def _int_narrow(rtol: float = 0.0):
    """Narrow enough: the next count up is within one, or within rtol·count (rounded down)."""

    def narrow(a, b):
        return np.abs(b - a) <= np.maximum(1.0, np.floor(rtol * np.minimum(a, b)))

    return narrow


def solve_sigma(
    rate,
    steps,
    delta,
    target_epsilon,
    accountant: str = "rdp",
    *,
    rtol: float | None = None,
    sampling: str = "poisson",
    _lattice: bool = True,
    _widths=None,
):
    """Smallest noise multiplier σ (to a relative ``rtol``, rounded up) whose ε is at most the target.

    The search covers σ from :data:`SIGMA_MAX` (1e12) down to where the accountant stops answering
    (its bound overflows, or the PLD grid no longer fits). It starts at the GDP central-limit σ (a
    guess only), steps by growing factors (1.25, 1.25², 1.25⁴, …) until the target is bracketed,
    and bisects in log σ. The answer is re-checked with the reported bound on both sides: it meets
    the target, and σ/(1 + rtol) (or a σ closer to it) misses it — ``found``. ``rtol`` defaults to
    :data:`SIGMA_RTOL` (1e-3 for pld and best, 1e-4 for rdp and gdp-clt). ``status`` says otherwise:
    ``none`` (no σ up to 1e12 meets the target), ``edge`` (the answer is the smallest σ dpcalc can
    account: the next one below cannot be accounted), ``range-end`` (met at σ = 1e-300).
    More than :data:`TARGET_POINTS` targets for one setting: searched at that many, the others
    ``bracketed`` between them (:func:`_bracket_targets`). A grid needing more than
    :data:`SETTINGS_DIRECT` searches: on a lattice of its settings and targets (:func:`_bracket_settings`).

    ``accountant``: rdp, pld (the tight engine's upper end), gdp-clt (approximate), or best (the
    smaller of pld and rdp, as plan-sgd's default answer).
    """
    _check_sampling(sampling)
    _check_accountant(accountant)
    rtol = SIGMA_RTOL[accountant] if rtol is None else float(rtol)
    q, _, t, d = _check(rate, 1.0, steps, delta)
    target = checked("target_epsilon", target_epsilon, low=0)
    q, t, d, target = (np.array(a, float).ravel() for a in np.broadcast_arrays(q, t, d, target))
    grid = _bracket_settings(
        (q, t, d),
        (1, 1, -1),
        target,
        lambda q_, t_, d_, x_, lat=True: solve_sigma(
            q_, t_, d_, x_, accountant, rtol=rtol, sampling=sampling, _lattice=lat
        ),
        enabled=_lattice,
    )
    if grid is not None:
        return grid
    shared = _bracket_targets(
        (q, t, d), target, lambda r: solve_sigma(q[r], t[r], d[r], target[r], accountant, rtol=rtol, sampling=sampling)
    )
    if shared is not None:
        return shared
    search, final = _search_bound(accountant, sampling), _final_bound(accountant, sampling)

    # x = −log σ: privacy loss grows with x.
    width = _widths_for(target, _widths)

    def ev_search(rows, x):
        return search(q[rows], np.exp(-x), t[rows], d[rows], width[rows])

    def ev_final(rows, x, known, known_m):
        return final(q[rows], np.exp(-x), t[rows], d[rows], known, known_m, width[rows])

    mu = _clt_guess_mu(target, d)
    with np.errstate(all="ignore"):
        guess = 1.0 / np.sqrt(np.log1p((mu / q) ** 2 / t))  # μ = q√(T(e^{1/σ²} − 1)) solved for σ
    guess = np.clip(np.nan_to_num(guess, nan=1.0, posinf=1e6), 1e-6, 1e6)
    lo = np.full(q.shape, -np.log(SIGMA_MAX))
    hi = np.full(q.shape, -np.log(SIGMA_FLOOR))
    tol = float(np.log1p(rtol))

    def step(x, k, direction, rows=None):
        return x + direction * np.log(1.25) * 2.0**k

    def probe(x, e, tgt):  # where ε would reach the target if it went like 1/σ²: at least the tolerance
        with np.errstate(all="ignore"):
            jump = 0.5 * np.log(np.clip(tgt / e, 1.0, 4.0))
        return x + np.maximum(np.nan_to_num(jump, nan=tol), tol)

    def mid(a, b):
        return 0.5 * (a + b)

    def narrow(a, b):
        return np.abs(b - a) <= tol

    ok, e_ok, m_ok, bad, e_bad, status = _solve(
        ev_search,
        ev_final,
        target,
        -np.log(guess),
        lo,
        hi,
        step,
        probe,
        mid,
        narrow,
        secant(lambda a, b: tol, log=True),
    )
    with np.errstate(over="ignore"):
        value = np.exp(-ok)
        nxt = np.exp(-bad)
    sol = Solution(value, e_ok, status == OPTIMAL, status, nxt, e_bad, m_ok, _reported_widths(accountant, width))
    return _finer_where_it_helps(
        sol,
        accountant if _widths is None else None,  # (None: this is the second search)
        target,
        lambda r, x, w: search(q[r], x, t[r], d[r], w)[0],
        lambda r, w: solve_sigma(
            q[r], t[r], d[r], target[r], accountant, rtol=rtol, sampling=sampling, _lattice=False, _widths=w
        ),
        lambda new, old: new < old,
    )


def solve_steps(
    rate,
    sigma,
    delta,
    target_epsilon,
    accountant: str = "rdp",
    *,
    max_steps: float = MAX_STEPS,
    sampling: str = "poisson",
    _lattice: bool = True,
    _widths=None,
):
    """Largest whole number of steps T (at most ``max_steps``, 1e9) whose ε is at most the target.

    Starts at the GDP central-limit T (a guess only), steps by growing factors until the target is
    bracketed, and bisects to one step; re-checked with the reported bound on both sides: T meets
    the target and T + 1 misses it — ``found``. Otherwise ``status``: ``none`` (even one step is
    over; value 0), ``range-end`` (``max_steps`` meets it), ``edge`` (T + 1 cannot be accounted).
    More than :data:`TARGET_POINTS` targets for one setting: searched at that many, the others
    ``bracketed`` between them (:func:`_bracket_targets`). A grid needing more than
    :data:`SETTINGS_DIRECT` searches: on a lattice of its settings and targets (:func:`_bracket_settings`).
    """
    _check_sampling(sampling)
    _check_accountant(accountant)
    q, s, _, d = _check(rate, sigma, 1, delta)
    target = checked("target_epsilon", target_epsilon, low=0)
    q, s, d, target = (np.array(a, float).ravel() for a in np.broadcast_arrays(q, s, d, target))
    grid = _bracket_settings(
        (q, s, d),
        (1, -1, -1),
        target,
        lambda q_, s_, d_, x_, lat=True: solve_steps(
            q_, s_, d_, x_, accountant, max_steps=max_steps, sampling=sampling, _lattice=lat
        ),
        enabled=_lattice,
    )
    if grid is not None:
        return grid
    shared = _bracket_targets(
        (q, s, d),
        target,
        lambda r: solve_steps(q[r], s[r], d[r], target[r], accountant, max_steps=max_steps, sampling=sampling),
    )
    if shared is not None:
        return shared
    search, final = _search_bound(accountant, sampling), _final_bound(accountant, sampling)

    width = _widths_for(target, _widths)

    def ev_search(rows, x):
        return search(q[rows], s[rows], x, d[rows], width[rows])

    def ev_final(rows, x, known, known_m):
        return final(q[rows], s[rows], x, d[rows], known, known_m, width[rows])

    mu = _clt_guess_mu(target, d)
    with np.errstate(all="ignore"):
        guess = np.floor((mu / q) ** 2 / np.expm1(1.0 / (s * s)))  # μ = q√(T(e^{1/σ²} − 1)) solved for T
    guess = np.clip(np.nan_to_num(guess, nan=1.0, posinf=max_steps), 1.0, max_steps)
    lo, hi = np.ones(q.shape), np.full(q.shape, float(np.floor(max_steps)))
    step = _int_step(1.25)
    rtol = STEPS_RTOL[accountant]
    ok, e_ok, m_ok, bad, e_bad, status = _solve(
        ev_search,
        ev_final,
        target,
        guess,
        lo,
        hi,
        step,
        _int_probe,
        _int_mid,
        _int_narrow(rtol),
        secant(lambda a, b: np.maximum(1.0, np.floor(rtol * np.minimum(a, b))), whole=True),
    )
    value = np.where(np.isfinite(ok), ok, 0.0)
    sol = Solution(value, e_ok, status == OPTIMAL, status, bad, e_bad, m_ok, _reported_widths(accountant, width))
    return _finer_where_it_helps(
        sol,
        accountant if _widths is None else None,  # (None: this is the second search)
        target,
        lambda r, x, w: search(q[r], s[r], x, d[r], w)[0],
        lambda r, w: solve_steps(
            q[r], s[r], d[r], target[r], accountant, max_steps=max_steps, sampling=sampling, _lattice=False, _widths=w
        ),
        lambda new, old: new > old,
    )


def solve_batch_size(
    dataset_size,
    epochs,
    sigma,
    delta,
    target_epsilon,
    accountant: str = "rdp",
    *,
    sampling: str = "poisson",
    _lattice: bool = True,
    _widths=None,
):
    """Largest batch size B in [1, N] (expected under Poisson sampling, exact without replacement),
    with T = ⌈E·N/B⌉ steps, whose ε is at most the target.

    Bracketed from a central-limit guess by growing factors and bisected to one record; re-checked
    with the reported bound on both sides: B meets the target and B + 1 misses it — ``found``. B = N
    meeting it is the optimum too (``status`` range-end: a batch cannot exceed N). ε need not be
    monotone in B; the answer is a checked point either way, and B + 1 is checked. More than
    :data:`TARGET_POINTS` targets for one setting: searched at that many, the others ``bracketed``
    between them (:func:`_bracket_targets`). A grid needing more than :data:`SETTINGS_DIRECT` searches: on a
    lattice of its settings and targets (:func:`_bracket_settings`; each dataset size apart).
    """
    _check_sampling(sampling)
    _check_accountant(accountant)
    n = checked("dataset_size", dataset_size, low=1, low_open=False, integer=True)
    e = checked("epochs", epochs, low=0)
    s = checked("noise_multiplier", sigma, low=0)
    d = checked("delta", delta, low=0, high=1)
    target = checked("target_epsilon", target_epsilon, low=0)
    n, e, s, d, target = (np.array(a, float).ravel() for a in np.broadcast_arrays(n, e, s, d, target))
    grid = _bracket_settings(
        (n, e, s, d),
        (0, 1, -1, -1),
        target,
        lambda n_, e_, s_, d_, x_, lat=True: solve_batch_size(
            n_, e_, s_, d_, x_, accountant, sampling=sampling, _lattice=lat
        ),
        enabled=_lattice,
    )
    if grid is not None:
        return grid
    shared = _bracket_targets(
        (n, e, s, d),
        target,
        lambda r: solve_batch_size(n[r], e[r], s[r], d[r], target[r], accountant, sampling=sampling),
    )
    if shared is not None:
        return shared
    search, final = _search_bound(accountant, sampling), _final_bound(accountant, sampling)

    def steps_of(rows, b):
        return np.maximum(np.asarray(steps_for_epochs(e[rows], n[rows], b), dtype=np.float64), 1.0)

    width = _widths_for(target, _widths)

    def ev_search(rows, b):
        return search(b / n[rows], s[rows], steps_of(rows, b), d[rows], width[rows])

    def ev_final(rows, b, known, known_m):
        return final(b / n[rows], s[rows], steps_of(rows, b), d[rows], known, known_m, width[rows])

    mu = _clt_guess_mu(target, d)
    with np.errstate(all="ignore"):
        guess = np.floor(mu * mu * n / (np.maximum(e, 1e-300) * np.expm1(1.0 / (s * s))))  # μ² = B·E·(e^{1/σ²}−1)/N
    guess = np.clip(np.nan_to_num(guess, nan=1.0, posinf=1.0), 1.0, n)
    ok, e_ok, m_ok, bad, e_bad, status = _solve(
        ev_search,
        ev_final,
        target,
        guess,
        np.ones(n.shape),
        n.copy(),
        _int_step(1.25),
        _int_probe,
        _int_mid,
        _int_narrow(),
        secant(lambda a, b: 1.0, whole=True),
    )
    value = np.where(np.isfinite(ok), ok, 0.0)
    sol = Solution(
        value,
        e_ok,
        (status == OPTIMAL) | (status == RANGE_END),
        status,
        bad,
        e_bad,
        m_ok,
        _reported_widths(accountant, width),
    )
    return _finer_where_it_helps(
        sol,
        accountant if _widths is None else None,  # (None: this is the second search)
        target,
        lambda r, x, w: search(x / n[r], s[r], steps_of(r, x), d[r], w)[0],
        lambda r, w: solve_batch_size(
            n[r], e[r], s[r], d[r], target[r], accountant, sampling=sampling, _lattice=False, _widths=w
        ),
        lambda new, old: new > old,
    )
