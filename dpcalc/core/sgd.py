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

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import gdp
from . import rdp as _rdp
from ._arrays import all_scalar, checked, finish
from .errors import ValidationError
from .solve import bisect_predicate, expand_until

__all__ = [
    "Accountant",
    "ACCOUNTANTS",
    "default_delta",
    "steps_for_epochs",
    "epsilon",
    "epsilon_curve",
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
    eps, _ = _rdp.optimal_epsilon(
        lambda al: steps[:, None] * _rdp._subsampled_gaussian(al, q[:, None], sigma[:, None]),
        delta,
        refine_steps=refine_steps,
    )
    return eps


#: Methods of the tight engine's rows: PLD, and the exact routes it takes where a closed form exists.
TIGHT_METHODS = {"pld": "upper", "gdp": "exact", "privacy-profile": "exact"}


@dataclass(frozen=True)
class Tight:
    """Certified intervals on ε by the tight engine, one per case (NaN where it cannot answer).

    ``method`` is ``gdp`` where every record is in every batch (q = 1: T Gaussian steps are exactly
    μ-GDP with μ = √T/σ), ``privacy-profile`` for a single step (T = 1: the exact δ(ε) of the
    subsampled Gaussian), ``pld`` otherwise; ``bound`` is ``exact`` for the first two (the interval
    is round-off wide) and ``upper`` for PLD. ``met`` says whether the width asked for was reached.
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
    q, sigma, steps, delta = (np.asarray(a, float).ravel() for a in np.broadcast_arrays(q, sigma, steps, delta))
    n = q.size
    lo, up = np.full(n, np.nan), np.full(n, np.nan)
    method = np.full(n, "pld", dtype=object)
    met = np.ones(n, dtype=bool)
    full = q >= 1.0
    one = (steps == 1) & ~full
    if full.any():
        lo[full], up[full] = exact.gaussian_interval(np.sqrt(steps[full]) / sigma[full], delta[full])
        method[full] = "gdp"
    if one.any():
        lo[one], up[one] = exact.subsampled_step_interval(q[one], sigma[one], delta[one])
        method[one] = "privacy-profile"
    groups: dict = {}
    for i in np.flatnonzero(~full & ~one):
        groups.setdefault((float(q[i]), float(sigma[i]), int(steps[i])), []).append(i)

    def answer(key, rows):
        with np.errstate(all="ignore"):
            ans = pld.epsilon(
                [(_mechanism(key[0], key[1], sampling), key[2])], delta[rows], upper_only=upper_only, **kw
            )
        lo[rows], up[rows], met[rows] = (np.zeros(len(rows)) if upper_only else ans.lower), ans.upper, ans.met

    failures = (MemoryError, ZeroDivisionError, OverflowError, FloatingPointError, ValueError)
    for key, idx in groups.items():
        idx = np.array(idx)
        ok = idx[delta[idx] >= pld.MIN_DELTA]
        try:
            if ok.size:
                answer(key, ok)
        except failures:
            # Beyond what the PLD grid can represent for the smallest δ, perhaps: try each δ alone.
            for i in ok if ok.size > 1 else ():
                try:
                    answer(key, np.array([i]))
                except failures:
                    pass
    bad = ~(np.isfinite(lo) & np.isfinite(up))
    lo[bad] = up[bad] = np.nan
    met[bad] = False
    bound = np.array([TIGHT_METHODS[m] for m in method], dtype=object)
    return Tight(lo, up, method, bound, met)


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


def best(q, sigma, steps, delta, sampling: str = "poisson", **kw) -> Best:
    """The tightest sound answer per case: min(tight engine's upper end, RDP) — RDP for Poisson
    sampling only — with the tight engine's certified lower end. Where the tight engine cannot
    answer, RDP alone (no lower end); without replacement there is no RDP, and such a case is NaN.
    """
    q, sigma, steps, delta = (np.asarray(a, float).ravel() for a in np.broadcast_arrays(q, sigma, steps, delta))
    t = tight_interval(q, sigma, steps, delta, sampling, **kw)
    if sampling == "poisson":
        r = np.asarray(_rdp_epsilon(q, sigma, steps, delta), float)
    else:
        r = np.full(q.shape, np.nan)
    use_rdp = np.isfinite(r) & ~(t.upper <= r)  # RDP where it is smaller, or the only one
    upper = np.where(use_rdp, r, t.upper)
    method = np.where(use_rdp, "rdp", t.method).astype(object)
    bound = np.where(use_rdp, "upper", t.bound).astype(object)
    with np.errstate(invalid="ignore"):
        width = upper - t.lower
    return Best(upper, t.lower, method, bound, width, t.met, t, r)


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


def steps_for_epochs(epochs, dataset_size, batch_size):
    """T = ⌈epochs · N / B⌉ (expected batch size B under Poisson sampling)."""
    scalar = all_scalar(epochs, dataset_size, batch_size)
    e = checked("epochs", epochs, low=0)
    n = checked("dataset_size", dataset_size, low=1, low_open=False, integer=True)
    b = checked("batch_size", batch_size, low=1, low_open=False, integer=True)
    return finish(np.ceil(e * n / b - 1e-9), scalar=scalar)


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


def _pld_upper_fast(q, sigma, steps, delta, sampling: str = "poisson"):
    """A sound upper bound for searches: the tight engine's upper end alone, on its starting grid.

    The re-check (:func:`_checked_eps`) keeps the smaller of this and the full
    answer's upper bound, so a value this search accepts always passes it.
    """
    up = tight_interval(q, sigma, steps, delta, sampling, upper_only=True).upper
    return np.where(np.isfinite(up), up, np.inf)  # no claim: the search treats it as over the target


def _checked_eps(accountant, q, s, t, d, sampling: str = "poisson"):
    """ε of a search's answer by the full accountant; for PLD the smaller of the full answer's upper
    bound and the search's own (both sound), so an accepted point always passes."""
    eps = ACCOUNTANTS[accountant].epsilon(q, s, t, d, sampling=sampling)
    if accountant == "pld":
        # Where the full answer failed it stays failed (NaN).
        eps = np.where(np.isfinite(eps), np.minimum(eps, _pld_upper_fast(q, s, t, d, sampling)), eps)
    return eps


def _search_eps(accountant, q, s, t, d, sampling: str = "poisson"):
    if accountant == "pld":
        return _pld_upper_fast(q, s, t, d, sampling)
    if accountant == "rdp":
        # Fewer refinement steps while searching: each value is still a
        # sound upper bound, so the search stays on the safe side.
        return _rdp_epsilon(q, s, t, d, refine_steps=8, sampling=sampling)
    return ACCOUNTANTS[accountant].epsilon(q, s, t, d, sampling=sampling)


@dataclass(frozen=True)
class Solution:
    """An inverse-planning answer: the value, its checked ε, and whether it was found."""

    value: np.ndarray
    epsilon: np.ndarray
    found: np.ndarray


def _clt_guess_mu(target, delta):
    """μ of the GDP central-limit curve that meets (target, δ): a starting guess only."""
    with np.errstate(all="ignore"):
        return gdp._mu_for_dp(np.maximum(target, 1e-12), np.log(delta), 1e-6)


def _bracket(ok_rows, guess, *, factor: float, lowest: float, highest: float, max_steps: int = 80):
    """Around ``guess``, a checked-ok point above or at it and a point below that (checked not ok, or
    ``lowest``), on a ladder of growing steps from the guess, evaluating only unsettled rows.

    ``ok_rows(idx, x)`` tells whether x is ok for rows idx; ok is assumed to hold for large x.
    Rows with no ok point up to ``highest`` are returned with found false.
    """
    n = guess.size
    idx = np.arange(n)
    g_ok = ok_rows(idx, guess)
    hi = np.where(g_ok, guess, np.nan)
    lo = np.where(g_ok, lowest, guess)
    x = guess.copy()
    todo = idx[~g_ok]  # not ok yet: go up
    # The steps grow (factor, factor², factor⁴, … up to factor^16): a guess far off costs a few
    # evaluations, not dozens; the bisection that follows narrows the bracket either way.
    for k in range(max_steps):
        if todo.size == 0:
            break
        x[todo] = np.minimum(x[todo] * factor ** min(2**k, 16), highest)
        r = ok_rows(todo, x[todo])
        hi[todo[r]] = x[todo[r]]
        lo[todo[~r]] = x[todo[~r]]
        todo = todo[~r & (x[todo] < highest)]
    found = np.isfinite(hi)
    hi = np.where(found, hi, highest)
    x = guess.copy()
    todo = idx[g_ok]  # ok: go down until not ok
    for k in range(max_steps):
        if todo.size == 0:
            break
        x[todo] = x[todo] / factor ** min(2**k, 16)
        low = x[todo] <= lowest
        lo[todo[low]] = lowest
        todo = todo[~low]
        if todo.size == 0:
            break
        r = ok_rows(todo, x[todo])
        hi[todo[r]] = x[todo[r]]
        lo[todo[~r]] = x[todo[~r]]
        todo = todo[r]
    return hi, lo, found


def solve_sigma(
    rate, steps, delta, target_epsilon, accountant: str = "rdp", *, rtol: float = 1e-4, sampling: str = "poisson"
):
    """Smallest noise multiplier σ (rounded up, to ``rtol``) with ε <= target.

    The answer is re-checked with the full-precision accountant.
    ``found`` is false where no σ up to about 2e6 meets the target. With the
    PLD accountant the search starts at the GDP central-limit σ (a guess
    only) and brackets the answer by factors of 1.25, each point checked by
    the PLD upper bound (rtol at least 1e-3).
    """
    _check_sampling(sampling)
    q, _, t, d = _check(rate, 1.0, steps, delta)
    target = checked("target_epsilon", target_epsilon, low=0)
    q, t, d, target = (a.ravel() for a in np.broadcast_arrays(q, t, d, target))

    def ok_rows(i, sig):
        return _search_eps(accountant, q[i], sig, t[i], d[i], sampling) <= target[i]

    def ok(sig):
        return ok_rows(slice(None), sig)

    if accountant == "pld":
        rtol = max(rtol, 1e-3)
        mu = _clt_guess_mu(target, d)
        with np.errstate(all="ignore"):
            guess = 1.0 / np.sqrt(np.log1p((mu / q) ** 2 / t))  # μ = q√(T(e^{1/σ²} − 1)) solved for σ
        guess = np.clip(np.nan_to_num(guess, nan=1.0, posinf=1e6), 1e-3, 1e6)
        hi, lo, found = _bracket(ok_rows, guess, factor=1.25, lowest=1e-3, highest=2e6)
    else:
        hi, found = expand_until(ok, np.full(q.shape, 0.5), factor=2.0, max_steps=22, want=True)
        lo = np.full(q.shape, 1e-3)
    lo_ok = ok(lo)
    # Rows already settled at the lowest σ need no bisection (each evaluation is a PLD run).
    good, _ = bisect_predicate(ok, ok=np.where(lo_ok, lo, hi), bad=lo, rtol=rtol, geometric=True, pred_rows=ok_rows)
    good = np.where(lo_ok, lo, good)
    eps = _checked_eps(accountant, q, good, t, d, sampling)
    return Solution(good, eps, found & (eps <= target))


def solve_steps(
    rate, sigma, delta, target_epsilon, accountant: str = "rdp", *, max_steps: float = 1e9, sampling: str = "poisson"
):
    """Largest whole number of steps T with ε <= target (0 if even one step is over).

    With the PLD accountant the search starts at the GDP central-limit T (a
    guess only) and brackets the answer by factors of 1.25, each point
    checked by the PLD upper bound.
    """
    _check_sampling(sampling)
    q, s, _, d = _check(rate, sigma, 1, delta)
    target = checked("target_epsilon", target_epsilon, low=0)
    q, s, d, target = (a.ravel() for a in np.broadcast_arrays(q, s, d, target))

    def eps_rows(i, tt):
        return _search_eps(accountant, q[i], s[i], np.maximum(np.floor(tt), 1.0), d[i], sampling)

    def ok(tt):
        return eps_rows(slice(None), tt) <= target

    one_ok = ok(np.ones_like(q))
    if accountant == "pld":
        mu = _clt_guess_mu(target, d)
        with np.errstate(all="ignore"):
            guess = np.floor((mu / q) ** 2 / np.expm1(1.0 / (s * s)))  # μ = q√(T(e^{1/σ²} − 1)) solved for T
        guess = np.clip(np.nan_to_num(guess, nan=1.0, posinf=max_steps), 1.0, max_steps)

        # Larger T is worse, so "ok" for the bracket means *over* the target (it holds for large T).
        def over_rows(i, tt):
            return eps_rows(i, tt) > target[i]

        top, base, found = _bracket(over_rows, guess, factor=1.25, lowest=1.0, highest=float(max_steps))
        base = np.maximum(np.floor(base), 1.0)
        top_ok = ~found  # nothing up to max_steps is over: max_steps itself was checked ok
    else:
        base = np.ones_like(q)
        top = np.full(q.shape, float(max_steps))
        top_ok = ok(top)

    def ok_rows(i, tt):
        return eps_rows(i, tt) <= target[i]

    # Rows settled already (at max_steps, or over at one step) need no bisection.
    settled = top_ok | ~one_ok
    # To a step, or (PLD) to 1e-4 of T: the last digits of a count in the millions are not worth a PLD run each.
    good, _ = bisect_predicate(
        ok,
        ok=np.where(settled, top, base),
        bad=top,
        atol=0.5,
        rtol=1e-4 if accountant == "pld" else 0.0,
        max_iter=80,
        pred_rows=ok_rows,
    )
    good = np.floor(good)
    good = np.where(top_ok, top, good)
    eps = _checked_eps(accountant, q, s, np.maximum(good, 1.0), d, sampling)
    good = np.where(one_ok, good, 0.0)
    return Solution(good, np.where(one_ok, eps, np.nan), one_ok & (eps <= target))


def solve_batch_size(
    dataset_size, epochs, sigma, delta, target_epsilon, accountant: str = "rdp", *, sampling: str = "poisson"
):
    """Largest batch size B (expected under Poisson sampling, exact without replacement) with ε <= target.

    ε is not guaranteed monotone in B; the search keeps only checked
    points, so the answer always meets the target even if a larger
    feasible B exists past a non-monotone stretch.
    """
    _check_sampling(sampling)
    n = checked("dataset_size", dataset_size, low=1, low_open=False, integer=True)
    e = checked("epochs", epochs, low=0)
    s = checked("noise_multiplier", sigma, low=0)
    d = checked("delta", delta, low=0, high=1)
    target = checked("target_epsilon", target_epsilon, low=0)
    n, e, s, d, target = (a.ravel() for a in np.broadcast_arrays(n, e, s, d, target))

    def eps_for(b, full=False):
        b = np.clip(np.floor(b), 1.0, n)
        t = np.ceil(e * n / b - 1e-9)
        if full:
            return _checked_eps(accountant, b / n, s, np.maximum(t, 1.0), d, sampling)
        return _search_eps(accountant, b / n, s, np.maximum(t, 1.0), d, sampling)

    def ok(b):
        return eps_for(b) <= target

    one_ok = ok(np.ones_like(n))
    all_ok = ok(n)
    good, _ = bisect_predicate(ok, ok=np.ones_like(n), bad=n, atol=0.5, rtol=0.0, max_iter=80)
    good = np.where(all_ok, n, np.floor(good))
    eps = eps_for(good, full=True)
    good = np.where(one_ok, good, 0.0)
    if not np.isfinite(eps).all():
        raise ValidationError("batch_size", float(good[~np.isfinite(eps)][0]), "a size with a finite ε")
    return Solution(good, eps, one_ok & (eps <= target))
