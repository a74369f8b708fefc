"""Exact routes: ε of T Gaussian steps (q = 1) and of one subsampled Gaussian step (T = 1).

Both have closed-form privacy curves, so no discretisation is needed: ε(δ)
is found by a bracketing search (regula falsi) on a curve whose floating-point value comes with an
error bound, which makes the answer a certified interval whose width is
round-off only (about 1e-13 relative).

* **q = 1** (every record in every batch): T Gaussian steps of noise
  multiplier σ are exactly μ-GDP with μ = √T/σ ([DRS] Cor. 3.3), and
  δ_μ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) ([BW] Thm 8).
* **T = 1** (one step): the two directions of the Poisson-subsampled
  Gaussian are exact functions of the Gaussian's own curve ([ZDW] §6):

      remove: δ_r(ε) = q·δ_μ(ε'),  ε = log(1 + q(e^{ε'} − 1)),
      add:    δ_a(ε) = q·e^{ε − ε*}·δ_μ(ε*),  ε = −log(1 + q(e^{−ε*} − 1)),

  for ε', ε* >= 0 (the add direction has δ = 0 from ε = −log(1 − q) on).
  Searching in the Gaussian's variable (ε' or ε*) keeps every step free of
  cancellation; ε = max of the two directions. One step sampled without
  replacement under substitution has the same curve: the hull C_q(G_μ) has
  δ = max(δ_r, δ_a) ([DRS] Thm 4.2).
* **q^T near 1** (every step's batch all but surely holds the record): the same steps without
  subsampling bound ε from above (sampling never raises ε), and the batches that hold the record at
  every step, probability q^T, with the full batch's optimal test (a threshold on the outputs' sum,
  which fires under the other batches at least as often as under Q: their sums are Q's shifted up)
  bound it from below — the remove formula above with q^T for q:

      δ(ε) >= q^T·δ_μ(ε'),  ε = log(1 + q^T(e^{ε'} − 1)),  μ = √T/σ.

  Where the two ends are within the relative width asked for, no composition is needed.
* **ε = 0** (any q, T; Poisson sampling, and without replacement by the
  coupling bound below): δ(0) of a pair is its total
  variation distance, which for T steps is at most √(KL/2) (Pinsker) and
  √(1 − e^{−KL}) (Bretagnolle–Huber), with KL = T·KL₁ and KL₁ <= log(1 + χ²)
  (Jensen), χ² = q²(e^{1/σ²} − 1) the χ² divergence of one step's pair
  (1 − q)N(0, σ²) + qN(1, σ²) against N(0, σ²). Total variation is symmetric,
  so the bound covers both directions: where it is at most δ, ε(δ) = 0
  exactly. Where σ is small that bound is vacuous, and a coupling one
  answers instead: one step's distance is q·(1 − 2Φ̄(1/(2σ))) (the pair
  differs only when the record is sampled; exactly that for Poisson's pair,
  at most that for any substitution pair), and T steps' is at most
  1 − (1 − that)^T (couple each step maximally). The smaller of the two is
  used (the coupling bound alone for sampling without replacement, where the
  changed record is in a batch with probability q = m/n). A handful of
  floating-point operations, so the cases of large δ or tiny steps take no
  composition at all.

References
----------
.. [DRS] Dong, Roth & Su, Gaussian Differential Privacy, JRSS-B 2022, arXiv:1905.02383.
.. [BW] Balle & Wang, Improving the Gaussian Mechanism, ICML 2018, arXiv:1805.06530.
.. [ZDW] Zhu, Dong & Wang, Optimal Accounting of Differential Privacy via
   Characteristic Function, AISTATS 2022, arXiv:2106.08567.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _fp, _normal
from .._arrays import ROWS_AT_ONCE, by_rows
from ..gdp import GUESS_UP_TO, _gaussian_guess, _log_delta_bounds, _log_delta_cheap, _root_cheap

__all__ = [
    "full_batch_interval",
    "gaussian_interval",
    "gaussian_mu",
    "near_full_batch_interval",
    "remove_step_interval",
    "subsampled_step_interval",
    "total_variation_upper",
]

_U = float(np.finfo(float).eps)


#: The rungs (powers of two of ulps) tried first around a guess: two per side for one subsampled step
#: (a single row's two directions evaluate 8 points, the bounds' scalar path), three for the Gaussian
#: curve (one direction; small μ has the larger round-off). Where a side has no checked point within
#: 2^LADDER_NEAR ulps, every rung up to it is tried.
FIRST_RUNGS = (3, 8)
FIRST_RUNGS_GAUSSIAN = (3, 8, 13)
LADDER_NEAR = 13


def _ends(xs: np.ndarray, lo: np.ndarray, hi: np.ndarray, t: np.ndarray):
    """From evaluated points (rows) per element: the smallest x with hi(x) <= t (inf if none) and the
    largest x with lo(x) > t (−1 if none)."""
    with np.errstate(invalid="ignore"):
        return np.min(np.where(hi <= t, xs, np.inf), axis=0), np.max(np.where(lo > t, xs, -1.0), axis=0)


def _ladder(bounds, log_target: np.ndarray, guess: np.ndarray, first=FIRST_RUNGS):
    """(x_lo, x_up, ok) for guessed roots x̂: ``bounds`` at 0 and on the rungs x̂·(1 ± 2^k·u), k in
    ``first`` (one call); where a side has no checked point within 2^LADDER_NEAR ulps of x̂, also on
    every rung up to that (a second call, whose points count for those elements only). x_up is the
    smallest point evaluated with the upper bound of log δ at most the target, x_lo the largest with the
    lower bound above it (0 where that holds at 0: no claim), as :func:`_bracket`'s last step. ``ok`` is
    false where a side has no checked point within 2^LADDER_NEAR ulps (or the guess is not finite): the
    caller searches there instead."""
    t = np.asarray(log_target, float)
    g = np.where(np.isfinite(guess), np.maximum(guess, 0.0), 0.0)
    tiny = np.finfo(float).tiny

    def rungs(ks):
        k = 2.0 ** np.asarray(ks, dtype=float)[:, None] * _U
        return np.concatenate([g[None, :] * (1 + k) + tiny, g[None, :] * (1 - np.minimum(k, 1.0))], axis=0)

    # The rungs at 2^LADDER_NEAR ulps, formed as the rungs are: a checked point at or inside them is near.
    near_up, near_lo = rungs([LADDER_NEAR])

    xs = np.concatenate([np.zeros((1, g.size)), rungs(first)], axis=0)
    lo, hi = bounds(xs)
    zero_up, zero_lo = hi[0] <= t, lo[0] <= t
    up, low = _ends(xs, lo, hi, t)
    again = ~((zero_up | (up <= near_up)) & (zero_lo | (low >= near_lo)))
    if again.any():
        x2 = rungs(range(LADDER_NEAR + 1))
        l2, h2 = bounds(x2)
        up2, low2 = _ends(x2, l2, h2, t)
        up = np.where(again, np.minimum(up, up2), up)
        low = np.where(again, np.maximum(low, low2), low)
    ok = np.isfinite(guess) & (zero_up | (up <= near_up)) & (zero_lo | (low >= near_lo))
    return np.where(zero_lo, 0.0, np.maximum(low, 0.0)), np.where(zero_up, 0.0, up), ok


def _bracket(bounds, log_target: np.ndarray, top: np.ndarray, iters: int = 100, guess=None, first=FIRST_RUNGS):
    """For curves decreasing in x >= 0 with certified ``bounds(x) -> (lo, hi)`` of log δ(x):
    (x_lo, x_up) where hi(x_up) <= target and lo(x_lo) > target were evaluated (x_lo = 0 when even
    lo(0) is not above the target: no claim beyond x >= 0). x_up is inf where no checked point was found.

    The root of the midpoint curve is found by regula falsi with the Illinois modification (a
    ends kept twice are halved) on √(−log δ), to a few ulps; the two ends are then the
    nearest points of a ladder x·(1 ± 2^k·u) around it at which the bounds are checked — so the
    interval is as wide as the round-off of the bounds, and every end returned was evaluated.

    ``guess`` (optional): roots found on a cheap curve, certified on ladders around them by
    :func:`_ladder` (usually one call of the bounds); the search runs only for the elements where that
    found no checked point.
    """
    t = log_target
    if guess is not None:
        x_lo, x_up, ok = _ladder(bounds, t, np.asarray(guess, float), first)
        if ok.all():
            return x_lo, x_up
        f_lo, f_up = _bracket(bounds, log_target, top, iters)  # the search, for the rows the guess missed
        return np.where(ok, x_lo, f_lo), np.where(ok, x_up, f_up)
    zero = np.zeros_like(top)
    lo0, hi0 = bounds(zero)
    # A point b with hi(b) <= t, checked.
    b = top.copy()
    ok_b = bounds(b)[1] <= t
    for _ in range(60):  # widen where the starting point was not enough (huge round-off)
        if ok_b.all():
            break
        b = np.where(ok_b, b, b * 2.0 + 1.0)
        ok_b = ok_b | (bounds(b)[1] <= t)
    b = np.where(ok_b, b, np.inf)
    fin = np.isfinite(b)

    def g(x):
        # In √(−log δ), which Gaussian tails make nearly linear in x (so regula falsi is fast).
        lo_, hi_ = bounds(x)
        m = np.where(np.isfinite(lo_), 0.5 * (lo_ + hi_), hi_)
        return np.sqrt(-t) - np.sqrt(np.maximum(-m, 0.0))

    # Regula falsi on the midpoint curve over [a, c]: g(a) > 0 >= g(c).
    a, c = zero.copy(), np.where(fin, b, 0.0)
    ga, gc = g(a), g(c)
    active = fin & (ga > 0) & (gc <= 0)
    root = np.where(fin, b, top)
    tol = 4 * _U * (np.sqrt(np.abs(t)) + 1.0)
    side = np.zeros(top.shape, dtype=np.int8)
    for _ in range(iters):
        act = active & (c - a > 4 * _U * c)
        if not act.any():
            break
        with np.errstate(all="ignore"):
            x = c - gc * (c - a) / (gc - ga)
        bad = ~np.isfinite(x) | (x <= a) | (x >= c)
        x = np.where(act, np.where(bad, a + 0.5 * (c - a), x), a)
        gx = g(x)
        root = np.where(act, x, root)
        active &= ~(np.abs(gx) <= tol)  # converged: the ladder below finds the checked ends
        down = act & (gx <= 0)  # x replaces c
        up = act & ~(gx <= 0)  # x replaces a
        ga = np.where(down & (side == 1), 0.5 * ga, ga)  # Illinois: the end kept twice is halved
        gc = np.where(up & (side == -1), 0.5 * gc, gc)
        c, gc = np.where(down, x, c), np.where(down, gx, gc)
        a, ga = np.where(up, x, a), np.where(up, gx, ga)
        side = np.where(down, 1, np.where(up, -1, side)).astype(np.int8)
    # Ladders around the root: the nearest checked point on each side.
    k = 2.0 ** np.arange(0, 60, dtype=float)[:, None] * _U
    tiny = np.finfo(float).tiny
    ups = np.concatenate([root[None, :] * (1 + k) + tiny, b[None, :]], axis=0)
    downs = root[None, :] * (1 - np.minimum(k, 1.0))
    lo_u, hi_u = bounds(ups)
    lo_d, _ = bounds(downs)
    good_u = hi_u <= t
    x_up = np.where(good_u.any(axis=0), np.take_along_axis(ups, np.argmax(good_u, axis=0)[None, :], 0)[0], np.inf)
    x_up = np.where(hi0 <= t, 0.0, np.where(fin, np.minimum(x_up, b), np.inf))
    good_d = lo_d > t
    x_lo = np.where(good_d.any(axis=0), np.take_along_axis(downs, np.argmax(good_d, axis=0)[None, :], 0)[0], 0.0)
    x_lo = np.where(lo0 <= t, 0.0, x_lo)
    return x_lo, x_up


def total_variation_upper(q, sigma, steps, sampling: str = "poisson") -> np.ndarray:
    """An upper bound on the total variation distance between the outputs of T subsampled Gaussian
    steps on two neighbouring datasets: δ(0) in either direction. ``sampling="poisson"`` (rate q,
    noise multiplier σ, add/remove neighbours) or ``"without-replacement"`` (below); any other
    scheme (a shuffle puts each record in exactly one batch an epoch) raises ValueError.

    ``sampling="without-replacement"`` (batches of m of n records, q = m/n, substitution neighbours, σ
    relative to the substitution sensitivity): the coupling bound alone. Two neighbouring datasets
    draw the same batch indices; the batches differ only where the changed record is drawn
    (probability q), and then their sums by at most the sensitivity, so one step's distance is at
    most q·(1 − 2Φ̄(1/(2σ))) — given any history, so the product argument holds for adaptive steps.

    The smaller of two bounds (see the module notes), each raised past its own round-off:

    * min(√(KL/2), √(1 − e^{−KL})) with KL = T·log1p(q²·expm1(1/σ²)), every operation within a few
      ulps, then raised by (64 + 2/σ²) ulps (expm1 turns the 2 ulps of 1/σ² into 2/σ² ulps of its
      value); no claim where it overflows or an intermediate leaves the normal range, where those
      ulp counts would not hold;
    * the coupling bound 1 − (1 − t₁)^T with t₁ = q·(1 − 2Φ̄(1/(2σ))) one step's exact distance:
      Φ̄ taken low by its error bound at an argument raised by 4 ulps, 1 − 2Φ̄ raised by 4 ulps of 1
      (absolute), and each later operation's few ulps covered by a final 32 ulps (the map t₁ ↦
      1 − (1 − t₁)^T does not amplify relative error); no claim where t₁ is not a normal number.

    +inf (no claim) where neither holds; 0 where q = 0."""
    if sampling not in ("poisson", "without-replacement"):
        raise ValueError(f"no total variation bound for sampling {sampling!r}")
    q, sigma, steps = (np.asarray(v, float) for v in np.broadcast_arrays(q, sigma, steps))
    tiny = np.finfo(float).tiny
    with np.errstate(all="ignore"):
        x = 1.0 / (sigma * sigma)
        qq = q * q
        chi2 = qq * np.expm1(x)
        kl = steps * np.log1p(chi2)
        tv = np.minimum(np.sqrt(0.5 * kl), np.sqrt(-np.expm1(-kl)))
        tv = tv * (1.0 + (64.0 + 2.0 * x) * _U)
        # The ulp counts hold for normal numbers only: an intermediate that underflowed (q below 1e-154,
        # σ² overflowing) makes no claim. (q = 0 releases nothing: distance 0.)
        normal = (x >= tiny) & (qq >= tiny) & (chi2 >= tiny) & (0.5 * kl >= tiny)
        tv = np.where(normal & np.isfinite(tv), tv, np.inf)
        h = (0.5 / sigma) * (1.0 + 4.0 * _U)
        tail = _normal.sf(h) * (1.0 - (_normal.SF_ULPS + 4.0) * _U)
        one = np.minimum(1.0, (1.0 - 2.0 * tail) + 4.0 * _U)
        t1 = q * one * (1.0 + 2.0 * _U)
        coupled = -np.expm1(steps * np.log1p(-np.minimum(t1, 1.0))) * (1.0 + 32.0 * _U)
        coupled = np.where(t1 >= 1.0, 1.0, coupled)
        ok = (t1 >= tiny) & np.isfinite(coupled) & (h > 0)
        coupled = np.where(ok, np.minimum(coupled, 1.0), np.inf)
        tv = coupled if sampling == "without-replacement" else np.minimum(tv, coupled)
    return np.where(q == 0, 0.0, tv)


def _round(x: np.ndarray, rel: float, up: bool) -> np.ndarray:
    """x moved by a relative margin (plus one ulp) toward the safe side."""
    with np.errstate(invalid="ignore", over="ignore"):  # an upper end past the largest double is +inf
        y = x * (1.0 + rel) if up else x * (1.0 - rel)
        # 0 stays 0: it is where the curve was checked (a search end), not a rounded value.
        return np.where(x == 0, 0.0, np.nextafter(y, np.inf if up else 0.0))


def gaussian_mu(steps, sigma) -> tuple[np.ndarray, np.ndarray]:
    """μ = √T/σ of T Gaussian steps, rounded down and up: (μ_lo, μ_hi) with μ_lo <= √T/σ <= μ_hi.

    ε(δ) grows with μ, so a certified upper end is computed with μ_hi and a lower end with μ_lo —
    the round-to-nearest μ can be an ulp on the wrong side, which moves ε by about 2 ulps: as much as
    the exact routes' intervals are wide."""
    t, s = (np.asarray(v, float) for v in np.broadcast_arrays(steps, sigma))
    return _fp.div_down(_fp.sqrt_down(t), s), _fp.div_up(_fp.sqrt_up(t), s)


def _target_slack(log_d: np.ndarray) -> np.ndarray:
    """Room for the rounding of log δ itself (np.log is within an ulp; the true log δ may lie on either
    side of the computed target): 4u·|log δ|, at least two ulps of it."""
    return 4 * _U * np.abs(log_d)


def _split_bounds(bounds_of, lo_args, hi_args, slack):
    """Certified (lower, upper) bounds of log δ at x from ``bounds_of(args, x)``: the lower end's from
    ``lo_args``, the upper end's from ``hi_args`` (one call when they are the same), each widened by
    ``slack`` (so that comparing them with the computed target is safe whichever way it rounded)."""
    same = all(np.array_equal(a, b) for a, b in zip(lo_args, hi_args))
    n = np.size(lo_args[0])

    def bounds(x):
        if same:
            lo, hi = bounds_of(lo_args, x)
        else:
            x = np.asarray(x, float)
            both = [np.concatenate([a, b]) for a, b in zip(lo_args, hi_args)]
            lo2, hi2 = bounds_of(both, np.concatenate(np.broadcast_arrays(x, x), axis=-1))
            lo, hi = lo2[..., :n], hi2[..., n:]
        with np.errstate(invalid="ignore"):
            return _fp.add_down(lo, -slack), _fp.add_up(hi, slack)

    return bounds


def gaussian_interval(mu, delta, mu_hi=None) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lower, upper] of ε(δ) for μ-GDP (T Gaussian steps: μ = √T/σ), elementwise.

    ``mu`` is exact, or (with ``mu_hi``) a lower bound on the true μ and ``mu_hi`` an upper bound
    (:func:`gaussian_mu`): the lower end is computed with the first, the upper end with the second."""
    mu, delta = (np.atleast_1d(np.asarray(v, float)) for v in np.broadcast_arrays(mu, delta))
    mu_hi = mu if mu_hi is None else np.broadcast_to(np.asarray(mu_hi, float), mu.shape).copy()
    log_d = np.log(delta)
    with np.errstate(all="ignore"):
        top = mu_hi * mu_hi / 2 + mu_hi * np.sqrt(-2.0 * log_d)  # δ_μ(top) <= Φ̄(√(−2 log δ)) <= δ/2

    guess = None
    if mu.size <= GUESS_UP_TO:
        guess = np.array([_gaussian_guess(float(m), float(t)) for m, t in zip(mu, log_d)])
    bounds = _split_bounds(lambda a, e: _log_delta_bounds(a[0], e), (mu,), (mu_hi,), _target_slack(log_d))
    lo, up = _bracket(bounds, log_d, top, guess=guess, first=FIRST_RUNGS_GAUSSIAN)
    return np.minimum(lo, up), up


def _remove_eps(q, ep) -> tuple[np.ndarray, np.ndarray]:
    """ε = log(1 + q(e^{ε'} − 1)) and a bound on its relative error.

    Up to ε' = 700 as log1p(q·expm1(ε')): every step within an ulp or two and log1p's sensitivity at
    most 1, so 4u. Beyond (expm1 would overflow), as log(e^a + 1 − q) with a = log q + ε': a carries
    an absolute error of about u·(|log q| + ε' + |a|), which moves ε by at most that times
    min(1, e^a/(1 − q)) — at most twice that relative to ε. (The former ε' + log(q + (1 − q)e^{−ε'})
    for ε' > 30 cancelled to nothing where q·e^{ε'} is small: q = 3.4e-172, σ = 0.229,
    δ = 2.8e-186 lost the remove direction's ε ≈ 1e-153 entirely.)"""
    q, ep = np.broadcast_arrays(np.asarray(q, float), np.asarray(ep, float))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        small = np.log1p(q * np.expm1(np.minimum(ep, 700.0)))
        lq = np.log(q)
        a = lq + ep
        large = np.logaddexp(a, np.log1p(-q))
        rel_large = 2 * _U * (np.abs(lq) + np.abs(ep) + np.abs(a) + 4.0) + 4 * _U
    big = ep > 700.0
    return np.where(big, large, small), np.where(big, rel_large, 4 * _U)


def _add_eps(q, es):
    """ε = −log(1 + q(e^{−ε*} − 1)) (4u relative)."""
    return -np.log1p(q * np.expm1(-es))


def _step_guess(mu: float, q: float, log_d: float, add: bool) -> float:
    """The Gaussian variable (ε' or ε*) at which one subsampled step's direction has δ on the cheap curve."""
    if not (mu > 0 and math.isfinite(mu) and 0 < q < 1 and log_d < 0):
        return math.nan
    lq = math.log(q)
    if add:

        def f(x):
            return lq - x - math.log1p(q * math.expm1(-x)) + _log_delta_cheap(mu, x) - log_d

    else:
        if log_d - lq >= 0:
            return 0.0

        def f(x):
            return lq + _log_delta_cheap(mu, x) - log_d

    if f(0.0) <= 0:
        return 0.0
    return _root_cheap(f, mu * mu / 2 + mu * math.sqrt(-2.0 * min(log_d - (0.0 if add else lq), -1e-300)))


def subsampled_step_interval(q, sigma, delta, directions: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lower, upper] of ε(δ) for one Poisson-subsampled Gaussian step (rate q, noise
    multiplier σ, add/remove neighbours) — also one step sampled without replacement (substitution).
    (``directions``: the remove direction's ends alone, for q < 1; see :func:`remove_step_interval`.)"""
    q, sigma, delta = (np.atleast_1d(np.asarray(v, float)) for v in np.broadcast_arrays(q, sigma, delta))
    if np.any(q >= 1) and not directions:
        # q = 1 is one Gaussian step, exactly: its own curve (the add direction's ε = −log1p(q·expm1(−x))
        # cancels there, 1 + (e^{−x} − 1) formed in doubles).
        full = q >= 1
        lo, up = np.empty(q.shape), np.empty(q.shape)
        m_lo, m_hi = gaussian_mu(1.0, sigma[full])
        lo[full], up[full] = gaussian_interval(m_lo, delta[full], m_hi)
        if not full.all():
            lo[~full], up[~full] = subsampled_step_interval(q[~full], sigma[~full], delta[~full])
        return lo, up
    if q.ndim == 1 and q.size > ROWS_AT_ONCE:
        # Its ladders hold about 90 KB a row: a large grid a block of rows at a time (each row's search
        # is its own, so the values are the same; q = 1 rows, above, are not split: their batched roots).
        return by_rows(lambda *a: subsampled_step_interval(*a, directions=directions), q, sigma, delta)
    # Both directions' δ grow with μ = 1/σ (a larger μ dominates a smaller: subsampling keeps that):
    # the lower ends with μ rounded down, the upper ends with μ rounded up.
    mu, mu_hi = gaussian_mu(1.0, sigma)
    log_d = np.log(delta)
    log_q = np.log(q)
    with np.errstate(all="ignore"):
        # remove: δ_r = q·δ_μ(ε'); nothing to find where q·δ_μ(0) <= q <= δ.
        t_r = log_d - log_q
        top_r = mu_hi * mu_hi / 2 + mu_hi * np.sqrt(-2.0 * np.minimum(t_r, -1e-300))
        e_q = 2 * _U * np.abs(log_q)

        # add: δ_a = q·e^{ε − ε*}·δ_μ(ε*), in ε* >= 0.
        top_a = mu_hi * mu_hi / 2 + mu_hi * np.sqrt(-2.0 * log_d)

        # Both directions in one search (one evaluation of the Gaussian curve per step for both).
        n = mu.size
        q2 = np.concatenate([q, q])
        log_q2, e_q2 = np.concatenate([log_q, log_q]), np.concatenate([e_q, np.zeros(n)])
        is_add = np.arange(2 * n) >= n

        def curve(args, x):
            m, qq, lq, eq, add = args
            lo, hi = _log_delta_bounds(m, x)
            e = _add_eps(qq, x)
            pre = np.where(add, lq - x + e, lq)
            err = np.where(add, 4 * _U * (np.abs(lq) + x + e + 1.0), eq)
            return lo + pre - err, hi + pre + err

        rest = (q2, log_q2, e_q2, is_add)
        both = _split_bounds(
            curve,
            (np.concatenate([mu, mu]),) + rest,
            (np.concatenate([mu_hi, mu_hi]),) + rest,
            _target_slack(np.concatenate([log_d, log_d])),
        )

        guess = None
        if n <= GUESS_UP_TO:
            guess = np.array(
                [_step_guess(float(m), float(qq), float(t), False) for m, qq, t in zip(mu, q, log_d)]
                + [_step_guess(float(m), float(qq), float(t), True) for m, qq, t in zip(mu, q, log_d)]
            )
        lo_x, up_x = _bracket(
            both,
            np.concatenate([log_d, log_d]),
            np.concatenate([np.where(t_r < 0, top_r, 0.0), top_a]),
            guess=guess,
        )
        lo_r, up_r, lo_a, up_a = lo_x[:n], up_x[:n], lo_x[n:], up_x[n:]
        lo_r = np.where(t_r < 0, lo_r, 0.0)
        up_r = np.where(t_r < 0, up_r, 0.0)

    (r_up, rel_up), (r_lo, rel_lo) = _remove_eps(q, up_r), _remove_eps(q, lo_r)
    # A positive Gaussian variable gives a positive ε, even where it underflows (q near 1e-320): at least
    # the smallest double, not the 0 that _round keeps for checked zeros.
    sub = np.nextafter(0.0, 1.0)
    up_rm = np.where(up_r > 0, np.maximum(_round(r_up, rel_up + 4 * _U, True), sub), 0.0)
    up_ad = np.where(up_a > 0, np.maximum(_round(_add_eps(q, up_a), 8 * _U, True), sub), 0.0)
    lo_rm = _round(r_lo, rel_lo + 4 * _U, False)
    if directions:
        return lo_rm, up_rm
    eps_up = np.maximum(up_rm, up_ad)
    eps_lo = np.maximum(lo_rm, _round(_add_eps(q, lo_a), 8 * _U, False))
    return np.minimum(eps_lo, eps_up), eps_up


def full_batch_interval(steps, sigma, delta) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lower, upper] of ε(δ) for T Gaussian steps of noise multiplier σ on every record: μ-GDP with
    μ = √T/σ, the lower end from μ rounded down and the upper end from μ rounded up (:func:`gaussian_mu`)."""
    m_lo, m_hi = gaussian_mu(steps, sigma)
    return gaussian_interval(m_lo, delta, m_hi)


def near_full_batch_interval(q, sigma, steps, delta) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lower, upper] of ε(δ) for T Poisson-subsampled Gaussian steps of rate q < 1, elementwise,
    from the full batch's exact curve (module docstring, *q^T near 1*): the upper end is the same steps'
    ε without subsampling (μ-GDP with μ = √T/σ); the lower end is ε = log(1 + q^T(e^{ε'} − 1)) with ε' the
    certified lower end of the full batch's ε at δ/q^T, where δ(ε) >= q^T·δ_μ(ε') >= δ. Every quantity is
    rounded toward its safe side: q^T down (T·log q rounded down, then exp), δ/q^T up, ε down. The lower end
    is NaN where δ/q^T >= 1 (the batches holding the record at every step are too rare to say anything).
    Valid for sampling without replacement under substitution too: its lower end is Poisson sampling's
    (two datasets realise that pair), and C_q(G_{1/σ}) >= G_{1/σ} bounds it from above."""
    q, sigma, steps, delta = (np.atleast_1d(np.asarray(v, float)) for v in np.broadcast_arrays(q, sigma, steps, delta))
    m_lo, m_hi = gaussian_mu(steps, sigma)
    _, upper = full_batch_interval(steps, sigma, delta)
    with np.errstate(all="ignore"):
        # log q within 2u (1 − q exact from 1/2 on, and within u of itself below), T·log q within u more: the
        # product made more negative by 8u is at most T·log q; exp within 2u more, taken off.
        log_qt = steps * np.log1p(-(1.0 - q)) * (1 + 8 * _U)
        qt = np.exp(log_qt) * (1 - 4 * _U)
        d2 = delta / qt * (1 + 4 * _U)
    lower = np.full(q.shape, np.nan)
    ok = (qt > 0) & (d2 < 1.0) & np.isfinite(d2)
    if ok.any():
        ep, _ = gaussian_interval(m_lo[ok], d2[ok], m_hi[ok])
        e, rel = _remove_eps(qt[ok], np.maximum(ep, 0.0))
        lower[ok] = np.where(ep > 0, np.maximum(e * (1 - rel - 4 * _U), 0.0), 0.0)
    return np.minimum(lower, upper), upper


def remove_step_interval(q, sigma, delta) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lower, upper] of ε(δ) for the *remove* direction alone of one Poisson-subsampled
    Gaussian step (q < 1): δ_r(upper) <= δ and δ_r(lower) > δ where lower > 0 (0: no claim)."""
    q, sigma, delta = (np.atleast_1d(np.asarray(v, float)) for v in np.broadcast_arrays(q, sigma, delta))
    if np.any(q >= 1):
        raise ValueError("remove_step_interval is for q < 1")
    lo, up = subsampled_step_interval(q, sigma, delta, directions=True)
    return np.minimum(lo, up), up
