"""Rényi differential privacy: mechanism curves, composition and conversion.

Composition adds RDP order by order. Every order α gives a valid (ε, δ)
bound, so searching over α more finely can only tighten the answer; we
evaluate a dense grid, then refine the best bracket by golden-section
search, and report the smallest ε found — each candidate is itself a sound
bound.

References
----------
.. [M] I. Mironov. Rényi Differential Privacy. CSF 2017, arXiv:1702.07476,
   Prop. 3 (composition), Prop. 6 (Laplace), Prop. 7 (Gaussian).
.. [MTZ] I. Mironov, K. Talwar, L. Zhang. Rényi Differential Privacy of the
   Sampled Gaussian Mechanism. arXiv:1908.10530, §3.2 (integer α), §3.3
   (fractional α).
.. [CKS] C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for
   Differential Privacy. NeurIPS 2020, arXiv:2004.00010, Prop. 12
   (improved RDP → (ε, δ) conversion); also Balle et al. 2020,
   arXiv:1905.09982, Thm 21.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import special

from . import _fp
from ._arrays import all_scalar, checked, finish

__all__ = [
    "DEFAULT_ORDERS",
    "MAX_ORDER",
    "MAX_ORDER_TERMS",
    "gaussian",
    "laplace",
    "subsampled_gaussian",
    "epsilon_from_curve",
    "delta_from_curve",
    "optimal_epsilon",
]

_U = float(np.finfo(float).eps)

#: Orders searched by default: fine fractional orders where DP-SGD optima of
#: large-ε runs lie, every integer to 64, then a coarse tail. The best
#: bracket is refined further by :func:`optimal_epsilon`.
DEFAULT_ORDERS = np.unique(
    np.round(
        np.concatenate(
            [
                np.arange(1.02, 2.0, 0.02),
                np.arange(2.0, 11.0, 0.1),
                np.arange(11, 65),
                [80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 768, 1024],
            ]
        ),
        10,
    )
)

_LOG_HALF = np.log(0.5)
_FRAC_MAX_STEPS = 4000
_FRAC_TOL = 12.0  # stop when the last term is e^-12 below log A (it is added, so this only sets tightness)


def gaussian(orders, sigma, sensitivity=1.0):
    """RDP of the Gaussian mechanism: r(α) = α Δ² / (2σ²) ([M] Prop. 7), rounded up (an RDP curve
    is an upper bound: α·Δ·Δ up, 2σ² down, the quotient up)."""
    scalar = all_scalar(orders, sigma, sensitivity)
    a = checked("order", orders, low=1)
    s = checked("sigma", sigma, low=0)
    d = checked("sensitivity", sensitivity, low=0)
    num = _fp.mul_up(_fp.mul_up(a, d), d)
    den = 2.0 * _fp.mul_down(s, s)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        r = np.where(den > 0, _fp.div_up(num, np.where(den > 0, den, 1.0)), np.inf)  # σ² underflows: +∞
    return finish(r, scalar=scalar)


def laplace(orders, scale, sensitivity=1.0):
    """RDP of the Laplace mechanism ([M] Prop. 6), for α > 1.

    r(α) = 1/(α−1) · log( α/(2α−1) e^{(α−1)/λ} + (α−1)/(2α−1) e^{−α/λ} ),
    λ = b/Δ; never more than the pure ε₀ = Δ/b. Rounded up: the logarithm t is a sum of terms of size
    about |log(α − 1)| that cancel to about (α − 1)·r, so its absolute rounding error (a few ulps of those
    terms, and of 1/λ) is added before dividing by α − 1 — near α = 1 that error is most of the value,
    and such orders are then not the best (the engine searches orders down to 1 + 2^-20).
    """
    scalar = all_scalar(orders, scale, sensitivity)
    a = checked("order", orders, low=1)
    inv = checked("sensitivity", sensitivity, low=0) / checked("scale", scale, low=0)
    with np.errstate(all="ignore"):
        l1, l2 = np.log(a / (2 * a - 1)), np.log((a - 1) / (2 * a - 1))
        x1, x2 = l1 + (a - 1) * inv, l2 - a * inv
        t = np.logaddexp(x1, x2)
        # Each log within 2u(1 + |log|) (its argument's rounding, then its own), each product and sum within u of
        # itself, and logaddexp within 2u(|t| + 1) plus the larger of its arguments' errors: 8u of all of them.
        err = 8 * _U * (np.abs(l1) + np.abs(l2) + (2 * a - 1) * inv + np.abs(x1) + np.abs(x2) + np.abs(t) + 2.0)
        r = (t + err) / (a - 1) * (1 + 4 * _U)
    return finish(np.minimum(r, inv * (1 + 2 * _U) * np.ones_like(r)), scalar=scalar)


def _log_comb(n, k):
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


#: Terms of the integer-order sum held in memory at once (cases × terms), 32 MB per float64 temporary.
_TERMS_CHUNK = 4_000_000

#: Largest order α the per-step RDP is listed at (``amplify gaussian --orders``): an integer order sums
#: α terms (in chunks of _TERMS_CHUNK), a fractional one its two integer neighbours at most.
MAX_ORDER = 1e6
#: Most terms one listing may sum (Σ over the orders asked of ⌈α⌉, times the settings): about 20 s.
MAX_ORDER_TERMS = 2e8


def _log_a_minus_1_int(q, sigma, alpha: int, _chunk: int = _TERMS_CHUNK):
    """log(A_α − 1) for integer α >= 2 ([MTZ] §3.2), exact and free of cancellation.

    By the binomial theorem Σ_k C(α,k)(1−q)^{α−k} q^k = 1, so
    A_α − 1 = Σ_{k>=2} C(α,k)(1−q)^{α−k} q^k (e^{(k²−k)/(2σ²)} − 1): positive
    terms only, accurate even when A_α − 1 is far below machine precision.
    q and sigma are 1-D of equal length. Memory is bounded: at most ``_chunk``
    terms at a time (cases, then runs of k, each run's log-sum-exp combined).
    """
    step = max(1, _chunk // alpha)
    if q.size > step:  # bound memory: cases × α terms at a time
        return np.concatenate(
            [_log_a_minus_1_int(q[i : i + step], sigma[i : i + step], alpha, _chunk) for i in range(0, q.size, step)]
        )
    qc = q[:, None]
    s2 = (sigma * sigma)[:, None]
    with np.errstate(divide="ignore"):
        log_q, log_1mq = np.log(qc), np.log1p(-qc)
    width = max(1, _chunk // max(q.size, 1))
    out = np.full(q.size, -np.inf)
    for k0 in range(2, alpha + 1, width):
        k = np.arange(k0, min(k0 + width, alpha + 1), dtype=np.float64)[None, :]
        x = (k * k - k) / (2.0 * s2)
        with np.errstate(divide="ignore", invalid="ignore"):
            # log(e^x − 1) = x + log(1 − e^{−x}): no overflow, accurate for small x too (−inf at 0).
            terms = _log_comb(float(alpha), k) + k * log_q + (alpha - k) * log_1mq + (x + np.log(-np.expm1(-x)))
        part = _logsumexp_rows(terms)
        out = part if k0 == 2 else np.logaddexp(out, part)
    return out


def _logsumexp_rows(terms: np.ndarray) -> np.ndarray:
    """log Σ_j e^{terms[i, j]} per row (−inf for a row of −inf; +inf or NaN as they come)."""
    m = terms.max(axis=1)
    shift = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.log(np.exp(terms - shift[:, None]).sum(axis=1)) + shift


def _log_a_int(q, sigma, alpha: int):
    """log A_α for integer α >= 1 (exact); 0 for α = 1."""
    if alpha <= 1:
        return np.zeros_like(q)
    return np.logaddexp(0.0, _log_a_minus_1_int(q, sigma, alpha))


def _log_erfc(x):
    return np.log(2.0) + special.log_ndtr(-x * np.sqrt(2.0))


def _log_a_frac(q, sigma, alpha):
    """Upper bound on log A_α for real α > 1, 0 < q < 1 ([MTZ] §3.3).

    A_α = Σ_i C(α,i) [u_i + v_i] where u_i, v_i >= 0 are the terms of the two
    integrals split at z0. The generalised binomial coefficients are signed:
    C(α,i) has sign (−1)^{max(0, i − ⌈α⌉)}, so past i > α+1 both series
    alternate with shrinking terms and the remainder after the last term
    summed is smaller than that term. We sum with the true signs and *add*
    the size of the last terms, which gives a rigorous upper bound that is
    much tighter than summing |C(α,i)| (the over-count of that approach is
    large next to A_α − 1 when q is small). Inputs are 1-D of equal length;
    elements that have not converged after ``_FRAC_MAX_STEPS`` terms get
    +inf (the order is unusable), never an under-estimate.
    """
    n = q.shape[0]
    out = np.full(n, np.inf)
    idx = np.arange(n)
    s2 = sigma * sigma
    z0 = s2 * np.log(1.0 / q - 1.0) + 0.5
    log_q, log_1mq = np.log(q), np.log1p(-q)
    pos = np.full(n, -np.inf)  # log of the sum of positive terms
    neg = np.full(n, -np.inf)  # log of the sum of |negative terms|
    last = np.full(n, np.inf)
    lg_a1 = special.gammaln(alpha + 1)
    ceil_a = np.ceil(alpha)
    rs = np.sqrt(2.0) * sigma
    for i in range(_FRAC_MAX_STEPS):
        j = alpha - i
        with np.errstate(all="ignore"):
            log_coef = lg_a1 - special.gammaln(i + 1.0) - special.gammaln(j + 1)
            s0 = log_coef + i * log_q + j * log_1mq + (i * i - i) / (2 * s2) + _LOG_HALF + _log_erfc((i - z0) / rs)
            s1 = log_coef + j * log_q + i * log_1mq + (j * j - j) / (2 * s2) + _LOG_HALF + _log_erfc((z0 - j) / rs)
            t = np.logaddexp(s0, s1)  # (NaN where a term is: handled just below)
        # A term that overflowed (or is NaN: σ² underflowing to 0) leaves the order unusable: +inf
        # at once, rather than after every step of the loop (σ = 5e-324 took 17 s to refuse).
        dead = np.isnan(t) | (t == np.inf)
        if dead.any():
            keep = ~dead
            if not keep.any():
                break
            idx, q, sigma, s2, z0 = idx[keep], q[keep], sigma[keep], s2[keep], z0[keep]
            log_q, log_1mq, alpha, lg_a1, rs = log_q[keep], log_1mq[keep], alpha[keep], lg_a1[keep], rs[keep]
            ceil_a, pos, neg, t, last = ceil_a[keep], pos[keep], neg[keep], t[keep], last[keep]
        negative = (np.maximum(0.0, i - ceil_a) % 2) == 1
        pos = np.where(negative, pos, np.logaddexp(pos, t))
        neg = np.where(negative, np.logaddexp(neg, t), neg)
        with np.errstate(all="ignore"):
            log_a = pos + np.log1p(-np.exp(neg - pos))
            # Stop once the last term is negligible next to log A_α (which is
            # ≈ A_α − 1 when that is small): relative e^-12.
            scale = np.log(np.minimum(np.maximum(log_a, 1e-300), 1.0))
        done = (t < last) & (i > alpha + 2) & (t < log_a + scale - _FRAC_TOL)
        if done.any():
            # Remainder of an alternating series < its last term; plus a
            # margin for float round-off in summing i+1 terms of size <= A_α.
            margin = 1e-15 * (i + 1) * np.maximum(pos, 1.0)
            with np.errstate(all="ignore"):
                bounded = np.logaddexp(log_a, t) + margin
            # Where A_α − 1 is not resolved above the round-off, give up
            # (the caller falls back to the convexity bound).
            bounded = np.where(log_a > 1e3 * margin, bounded, np.inf)
            out[idx[done]] = bounded[done]
            keep = ~done
            if not keep.any():
                break
            idx, q, sigma, s2, z0 = idx[keep], q[keep], sigma[keep], s2[keep], z0[keep]
            log_q, log_1mq, alpha, lg_a1, rs = log_q[keep], log_1mq[keep], alpha[keep], lg_a1[keep], rs[keep]
            ceil_a, pos, neg, t = ceil_a[keep], pos[keep], neg[keep], t[keep]
        last = t
    return out


def _subsampled_gaussian(orders, q, sigma):
    """RDP of the Poisson-subsampled Gaussian, broadcast over all inputs (no validation).

    Integer orders: exact ([MTZ] §3.2, summed as A_α − 1). Fractional orders:
    the smaller of two upper bounds — the §3.3 series (where it resolves
    A_α − 1) and the chord between the neighbouring integer orders, which is
    an upper bound because log A_α, a cumulant generating function of the
    privacy loss, is convex in α.
    """
    a, q, s = np.broadcast_arrays(np.asarray(orders, float), np.asarray(q, float), np.asarray(sigma, float))
    shape = a.shape
    a, q, s = a.ravel(), q.ravel(), s.ravel()
    if a.size > 1:
        # Each distinct (α, q, σ) once: cases that share a step (a curve over T, a grid of δ) share its RDP.
        order = np.lexsort((s, q, a))
        sa, sq, ss = a[order], q[order], s[order]
        new = np.ones(a.size, dtype=bool)
        new[1:] = (sa[1:] != sa[:-1]) | (sq[1:] != sq[:-1]) | (ss[1:] != ss[:-1])
        if not new.all():
            first = np.flatnonzero(new)
            r_u = _subsampled_gaussian(sa[first], sq[first], ss[first])
            r = np.empty(a.size)
            r[order] = r_u[np.cumsum(new) - 1]
            return r.reshape(shape)
    log_a = np.empty(a.shape)
    full = q >= 1.0
    log_a[full] = a[full] * (a[full] - 1) / (2 * s[full] ** 2)
    is_int = (a == np.round(a)) & ~full
    for alpha in np.unique(a[is_int]):
        sel = is_int & (a == alpha)
        log_a[sel] = _log_a_int(q[sel], s[sel], int(alpha))
    frac = ~is_int & ~full
    if frac.any():
        af, qf, sf = a[frac], q[frac], s[frac]
        lo, hi = np.floor(af), np.ceil(af)
        g_lo, g_hi = np.empty(af.shape), np.empty(af.shape)
        for n in np.unique(np.concatenate([lo, hi])):
            for g, ends in ((g_lo, lo), (g_hi, hi)):
                sel = ends == n
                if sel.any():
                    g[sel] = _log_a_int(qf[sel], sf[sel], int(n))
        chord = (hi - af) * g_lo + (af - lo) * g_hi
        log_a[frac] = np.minimum(_log_a_frac(qf, sf, af), chord)
    with np.errstate(invalid="ignore"):
        r = np.maximum(log_a, 0.0) / (a - 1)
    return r.reshape(shape)


def subsampled_gaussian(orders, rate, sigma):
    """RDP of one step of the Poisson-subsampled Gaussian mechanism.

    Sensitivity 1 (σ is the noise multiplier), add/remove neighbours.
    Integer orders are exact ([MTZ] §3.2); fractional orders use the
    §3.3 series summed with absolute values — an upper bound. ``rate = 1``
    gives the plain Gaussian α/(2σ²).

    Examples
    --------
    >>> round(float(subsampled_gaussian(2, 1.0, 1.0)), 6)
    1.0
    """
    scalar = all_scalar(orders, rate, sigma)
    a = checked("order", orders, low=1)
    q = checked("rate", rate, low=0, high=1, high_open=False)
    s = checked("sigma", sigma, low=0)
    return finish(_subsampled_gaussian(a, q, s), scalar=scalar)


def _eps_terms(orders, rdp, log_delta):
    """Improved conversion ε(α) = r + log((α−1)/α) − (log δ + log α)/(α−1) ([CKS] Prop. 12)."""
    with np.errstate(all="ignore"):
        a = np.log1p(-1.0 / orders)
        b = (log_delta + np.log(orders)) / (orders - 1.0)
        e = rdp + a - b
        # Rounded up past the error of these few operations (and of the RDP values' last digits): the
        # conversion is a sound upper bound and must stay one after rounding.
        e = e + 32 * np.finfo(float).eps * (np.abs(rdp) + np.abs(a) + np.abs(b)) + 1e-300
    return np.where(np.isnan(e), np.inf, e)


def epsilon_from_curve(orders, rdp, delta):
    """ε at δ from an RDP curve; minimised over the orders (last axis).

    ``orders`` and ``rdp`` have the orders on their last axis; ``delta``
    broadcasts against the remaining axes. Returns ``(epsilon, best_order)``;
    ε is clipped at 0 and is a sound upper bound.

    Examples
    --------
    >>> e, a = epsilon_from_curve([2, 4, 8], [0.1, 0.2, 0.4], 1e-5)
    >>> round(e, 4), a
    (1.6141, 8.0)
    """
    a = checked("order", orders, low=1)
    r = checked("rdp", rdp, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1)
    a, r = np.broadcast_arrays(np.atleast_1d(a), np.atleast_1d(r))
    log_d = np.log(d)[..., None]
    e = _eps_terms(a, r, log_d)
    i = np.argmin(e, axis=-1)
    best = np.take_along_axis(e, i[..., None], axis=-1)[..., 0]
    order = np.broadcast_to(a, e.shape)
    order = np.take_along_axis(order, i[..., None], axis=-1)[..., 0]
    return finish(np.maximum(best, 0.0), order, scalar=np.ndim(best) == 0)


def delta_from_curve(orders, rdp, epsilon):
    """δ at ε from an RDP curve: min over α of e^{(α−1)(r−ε)} (1−1/α)^{α−1} / α ([CKS] Prop. 12)."""
    a = checked("order", orders, low=1)
    r = checked("rdp", rdp, low=0, low_open=False)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    a, r = np.broadcast_arrays(np.atleast_1d(a), np.atleast_1d(r))
    with np.errstate(all="ignore"):
        t1 = (a - 1) * (r - e[..., None])
        t2 = (a - 1) * np.log1p(-1.0 / a)
        t3 = np.log(a)
        log_d = t1 + t2 - t3
        # Rounded up past the error of these few operations (each a few ulps of the terms it combines, and
        # exp's of its argument), as _eps_terms does for ε: the δ printed is an upper bound after rounding.
        u = np.finfo(float).eps
        log_d = log_d + 32 * u * (np.abs(t1) + (a - 1) * (np.abs(r) + np.abs(e[..., None])) + np.abs(t2) + np.abs(t3))
        log_d = log_d + 4 * u * (np.abs(log_d) + 1.0)
    log_d = np.where(np.isnan(log_d), np.inf, log_d)
    d = np.minimum(np.exp(np.min(log_d, axis=-1)) * (1 + 4 * np.finfo(float).eps), 1.0)
    return finish(d, scalar=np.ndim(d) == 0)


_GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0
#: Largest order tried when the optimum sits at the top of the grid.
_MAX_ORDER = 2.0**16

#: Smallest order :func:`optimal_epsilon` tries below its grid (the optimum of ε in the millions).
MIN_ORDER = 1.0 + 2.0**-20


def optimal_epsilon(
    rdp_fn: Callable[[np.ndarray], np.ndarray],
    delta: np.ndarray,
    orders: np.ndarray = DEFAULT_ORDERS,
    *,
    refine_steps: int = 30,
    extend: bool = True,
):
    """Minimise the improved conversion over a grid of α and refine the best bracket: golden-section
    search over fractional orders where it ends at most at 128, the integer orders
    (:func:`_int_refine`) where it reaches above.

    Parameters
    ----------
    rdp_fn
        Maps an array of orders of shape ``(n, k)`` to the (composed) RDP of
        each of the ``n`` cases at those orders.
    delta
        Shape ``(n,)``.

    Returns
    -------
    (epsilon, order) : arrays of shape ``(n,)``
        The smallest ε among all orders evaluated (each a sound bound).
    """
    delta = np.asarray(delta, float)
    n = delta.shape[0]
    log_d = np.log(delta)[:, None]
    grid = np.broadcast_to(orders[None, :], (n, orders.size))
    eps = _eps_terms(grid, rdp_fn(grid), log_d)
    i = np.argmin(eps, axis=1)
    best_e = eps[np.arange(n), i]
    best_a = orders[i].astype(float)
    # Tiny δ or tiny RDP push the optimum past the grid: keep doubling the
    # order while it still helps (each order is a valid bound).
    at_top = (i == orders.size - 1) & extend
    alpha = float(orders[-1])
    while at_top.any() and alpha < _MAX_ORDER:
        alpha *= 2
        sel = np.flatnonzero(at_top)
        a_col = np.full((sel.size, 1), alpha)
        full = np.broadcast_to(orders[:1], (n, 1)).astype(float).copy()
        full[sel] = alpha
        e_new = _eps_terms(a_col, rdp_fn(full)[sel], log_d[sel])[:, 0]
        better = e_new < best_e[sel]
        best_e[sel[better]] = e_new[better]
        best_a[sel[better]] = alpha
        at_top[sel[~better]] = False
    # Huge ε (very many steps) puts the optimum below the grid's first order, towards α = 1 (where the
    # RDP tends to the KL divergence): halve α − 1 while it still helps, down to MIN_ORDER − 1 (each order
    # is a valid bound). (q = 0.154, σ = 1.054, 2.7·10⁸ steps, δ = 0.0048: 3.908e6 at α = 1.02, 3.828e6 at
    # α = 1.001.)
    below = np.zeros(n, dtype=bool)
    at_bottom = (i == 0) & extend & (float(orders[0]) > MIN_ORDER)
    alpha = float(orders[0])
    while at_bottom.any() and alpha > MIN_ORDER:
        alpha = max(1.0 + (alpha - 1.0) / 2.0, MIN_ORDER)
        sel = np.flatnonzero(at_bottom)
        full = np.broadcast_to(orders[:1], (n, 1)).astype(float).copy()
        full[sel] = alpha
        e_new = _eps_terms(np.full((sel.size, 1), alpha), rdp_fn(full)[sel], log_d[sel])[:, 0]
        better = e_new < best_e[sel]
        best_e[sel[better]] = e_new[better]
        best_a[sel[better]] = alpha
        below[sel[better]] = True
        at_bottom[sel[~better]] = False
    if refine_steps <= 0:
        return np.maximum(best_e, 0.0), best_a
    lo = orders[np.maximum(i - 1, 0)].astype(float)
    hi = orders[np.minimum(i + 1, orders.size - 1)].astype(float)
    # (Below the grid: around the best order found by halving, from half its distance to 1 to twice it.)
    lo = np.where(below, 1.0 + (best_a - 1.0) / 2.0, lo)
    hi = np.where(below, 1.0 + (best_a - 1.0) * 2.0, hi)
    # The bracket for the integer search above the fractional range (see _int_refine): around an order
    # found by doubling, or past the grid's last order where doubling from it did not help.
    top = float(orders[-1])
    int_lo = np.where(best_a > top, best_a / 2, lo)
    int_hi = np.where(
        best_a > top, np.minimum(best_a * 2, _MAX_ORDER), np.where(i == orders.size - 1, top * 2 if extend else top, hi)
    )
    lo = np.maximum(lo, MIN_ORDER)
    # Refine only where the bracket is fractional territory (the series is
    # cheap there); large orders are already dense enough.
    refine = (hi - lo > 0) & (hi <= 128)
    if refine.any():
        lo, hi = lo[refine], hi[refine]
        ld = log_d[refine]

        def f(alpha):
            full = np.broadcast_to(orders[:1], (n,)).astype(float).copy()
            full[refine] = alpha
            return _eps_terms(alpha[:, None], rdp_fn(full[:, None])[refine], ld)[:, 0]

        x1 = hi - _GOLDEN * (hi - lo)
        x2 = lo + _GOLDEN * (hi - lo)
        f1, f2 = f(x1), f(x2)
        sub_e, sub_a = best_e[refine], best_a[refine]
        for _ in range(refine_steps):
            for x, fx in ((x1, f1), (x2, f2)):
                better = fx < sub_e
                sub_e = np.where(better, fx, sub_e)
                sub_a = np.where(better, x, sub_a)
            left = f1 < f2
            hi = np.where(left, x2, hi)
            lo = np.where(left, lo, x1)
            nx1 = hi - _GOLDEN * (hi - lo)
            nx2 = lo + _GOLDEN * (hi - lo)
            # Reuse one evaluation per step (classic golden section).
            new_x = np.where(left, nx1, nx2)
            fn = f(new_x)
            x1, f1, x2, f2 = (
                np.where(left, nx1, x2),
                np.where(left, fn, f2),
                np.where(left, x1, nx2),
                np.where(left, f1, fn),
            )
        for x, fx in ((x1, f1), (x2, f2)):
            better = fx < sub_e
            sub_e = np.where(better, fx, sub_e)
            sub_a = np.where(better, x, sub_a)
        best_e = best_e.copy()
        best_a = best_a.copy()
        best_e[refine] = sub_e
        best_a[refine] = sub_a
    best_e, best_a = _int_refine(rdp_fn, log_d[:, 0], int_lo, int_hi, best_e, best_a)
    return np.maximum(best_e, 0.0), best_a


#: Largest bracket end searched over the integer orders by :func:`_int_refine` (an order α costs α
#: terms per case; a search 9 orders a round, about log₄(width) rounds).
INT_REFINE_MAX = 4096.0


def _int_refine(rdp_fn, log_d, lo, hi, best_e, best_a):
    """Search the integer orders in [lo, hi] where the bracket of the best order reaches above 128
    (and at most INT_REFINE_MAX): the grid is coarse there (steps of 16 to 256, then doublings), and
    ε(α) can turn up steeply just past its optimum, where the sum's top terms wake up — at
    q = 0.002913, σ = 3.3115, 91 steps, δ = 4.4e-4: 0.01985 at α = 127, 0.02203 at 128 (the grid's
    best), 0.538 at 129. Each round evaluates 9 evenly spaced integers of the bracket and keeps the
    two cells around the best, until the spacing is 1 — the same candidates for every case with the
    same bracket, so that a grid of settings shares each order's sum. Integer orders are exact and
    every order evaluated is a sound bound: the smallest ε seen is kept (a round that misses the
    optimum, ε(α) not being unimodal, only leaves the answer looser)."""
    n = best_e.size
    lo, hi = np.ceil(lo), np.floor(hi)
    act = (hi > 128) & (hi <= INT_REFINE_MAX) & (hi - lo >= 2)
    if not act.any():
        return best_e, best_a
    sel = np.flatnonzero(act)
    lo, hi = lo[sel], hi[sel]
    while sel.size:
        sp = np.maximum(np.ceil((hi - lo) / 8.0), 1.0)
        cand = np.minimum(lo[:, None] + sp[:, None] * np.arange(9.0)[None, :], hi[:, None])  # (cases, 9)
        full = np.full((n, 9), 2.0)  # (the other cases at order 2: one term each)
        full[sel] = cand
        e = _eps_terms(cand, rdp_fn(full)[sel], log_d[sel, None])
        j = np.argmin(e, axis=1)
        e_j = e[np.arange(sel.size), j]
        better = e_j < best_e[sel]
        best_e[sel[better]] = e_j[better]
        best_a[sel[better]] = cand[np.arange(sel.size), j][better]
        more = sp > 1
        lo = np.maximum(cand[np.arange(sel.size), np.maximum(j - 1, 0)], lo)[more]
        hi = np.minimum(cand[np.arange(sel.size), np.minimum(j + 1, 8)], hi)[more]
        sel = sel[more]
    return best_e, best_a
