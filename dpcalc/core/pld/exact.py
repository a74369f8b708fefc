"""Exact routes: ε of T Gaussian steps (q = 1) and of one subsampled Gaussian step (T = 1).

Both have closed-form privacy curves, so no discretisation is needed: ε(δ)
is found by bisection on a curve whose floating-point value comes with an
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

References
----------
.. [DRS] Dong, Roth & Su, Gaussian Differential Privacy, JRSS-B 2022, arXiv:1905.02383.
.. [BW] Balle & Wang, Improving the Gaussian Mechanism, ICML 2018, arXiv:1805.06530.
.. [ZDW] Zhu, Dong & Wang, Optimal Accounting of Differential Privacy via
   Characteristic Function, AISTATS 2022, arXiv:2106.08567.
"""

from __future__ import annotations

import numpy as np

from ..gdp import _log_delta_bounds

__all__ = ["gaussian_interval", "subsampled_step_interval"]

_U = float(np.finfo(float).eps)


def _bisect(bounds, log_target: np.ndarray, top: np.ndarray, iters: int = 200):
    """For curves decreasing in x >= 0 with certified ``bounds(x) -> (lo, hi)`` of log δ(x):
    (x_lo, x_up) where hi(x_up) <= target and lo(x_lo) > target were evaluated (x_lo = 0 when even
    lo(0) is not above the target: no claim beyond x >= 0). x_up is inf where no checked point was found.
    """
    t = log_target
    zero = np.zeros_like(top)
    lo0, hi0 = bounds(zero)
    # Upper end: bracket [a, b] with hi(b) <= t checked, hi(a) > t (or a = 0).
    b = top.copy()
    ok_b = bounds(b)[1] <= t
    for _ in range(60):  # widen where the starting point was not enough (huge round-off)
        if ok_b.all():
            break
        b = np.where(ok_b, b, b * 2.0 + 1.0)
        ok_b = ok_b | (bounds(b)[1] <= t)
    b = np.where(ok_b, b, np.inf)
    up_done = (hi0 <= t) | ~ok_b
    x_up = np.where(hi0 <= t, 0.0, b)
    a = zero.copy()
    # Lower end: bracket [c, d] with lo(c) > t checked (or c = 0, no claim) and lo(d) <= t.
    c = zero.copy()
    d = np.where(np.isfinite(b), b, top)
    lo_done = lo0 <= t
    for _ in range(iters):
        active_u = ~up_done & (x_up - a > 1e-15 * x_up)
        active_l = ~lo_done & (d - c > 1e-15 * d)
        if not (active_u.any() or active_l.any()):
            break
        mu_ = np.where(active_u, a + 0.5 * (x_up - a), 0.0)
        ml_ = np.where(active_l, c + 0.5 * (d - c), 0.0)
        mid = np.where(active_u, mu_, ml_)
        both = active_u & active_l
        lo_m, hi_m = bounds(mid)
        if both.any():
            lo_l, _ = bounds(ml_)
        else:
            lo_l = lo_m
        lo_for_l = np.where(both, lo_l, lo_m)
        gu = hi_m <= t
        x_up = np.where(active_u & gu, mu_, x_up)
        a = np.where(active_u & ~gu, mu_, a)
        gl = lo_for_l > t
        c = np.where(active_l & gl, ml_, c)
        d = np.where(active_l & ~gl, ml_, d)
        up_done |= ~active_u
        lo_done |= ~active_l
    return c, x_up


def _round(x: np.ndarray, rel: float, up: bool) -> np.ndarray:
    """x moved by a relative margin (plus one ulp) toward the safe side."""
    with np.errstate(invalid="ignore"):
        y = x * (1.0 + rel) if up else x * (1.0 - rel)
        # 0 stays 0: it is where the curve was checked (a bisection end), not a rounded value.
        return np.where(x == 0, 0.0, np.nextafter(y, np.inf if up else 0.0))


def gaussian_interval(mu, delta) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lower, upper] of ε(δ) for μ-GDP (T Gaussian steps: μ = √T/σ), elementwise."""
    mu, delta = (np.atleast_1d(np.asarray(v, float)) for v in np.broadcast_arrays(mu, delta))
    log_d = np.log(delta)
    with np.errstate(all="ignore"):
        top = mu * mu / 2 + mu * np.sqrt(-2.0 * log_d)  # δ_μ(top) <= Φ̄(√(−2 log δ)) <= δ/2

    lo, up = _bisect(lambda e: _log_delta_bounds(mu, e), log_d, top)
    return np.minimum(lo, up), up


def _remove_eps(q, ep):
    """ε = log(1 + q(e^{ε'} − 1)) (4u relative)."""
    with np.errstate(over="ignore", invalid="ignore"):
        small = np.log1p(q * np.expm1(np.minimum(ep, 30.0)))
        large = ep + np.log(q + (1.0 - q) * np.exp(-ep))
    return np.where(ep <= 30.0, small, large)


def _add_eps(q, es):
    """ε = −log(1 + q(e^{−ε*} − 1)) (4u relative)."""
    return -np.log1p(q * np.expm1(-es))


def subsampled_step_interval(q, sigma, delta) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lower, upper] of ε(δ) for one Poisson-subsampled Gaussian step (rate q, noise
    multiplier σ, add/remove neighbours) — also one step sampled without replacement (substitution)."""
    q, sigma, delta = (np.atleast_1d(np.asarray(v, float)) for v in np.broadcast_arrays(q, sigma, delta))
    mu = 1.0 / sigma
    log_d = np.log(delta)
    log_q = np.log(q)
    with np.errstate(all="ignore"):
        # remove: δ_r = q·δ_μ(ε'); nothing to find where q·δ_μ(0) <= q <= δ.
        t_r = log_d - log_q
        top_r = mu * mu / 2 + mu * np.sqrt(-2.0 * np.minimum(t_r, -1e-300))
        e_q = 2 * _U * np.abs(log_q)

        def rem(ep):
            lo, hi = _log_delta_bounds(mu, ep)
            return lo + log_q - e_q, hi + log_q + e_q

        lo_r, up_r = _bisect(rem, log_d, np.where(t_r < 0, top_r, 0.0))
        lo_r = np.where(t_r < 0, lo_r, 0.0)
        up_r = np.where(t_r < 0, up_r, 0.0)

        # add: δ_a = q·e^{ε − ε*}·δ_μ(ε*), in ε* >= 0.
        top_a = mu * mu / 2 + mu * np.sqrt(-2.0 * log_d)

        def add(es):
            lo, hi = _log_delta_bounds(mu, es)
            e = _add_eps(q, es)
            pre = log_q - es + e
            err = 4 * _U * (np.abs(log_q) + es + e + 1.0)
            return lo + pre - err, hi + pre + err

        lo_a, up_a = _bisect(add, log_d, top_a)

    eps_up = np.maximum(_round(_remove_eps(q, up_r), 8 * _U, True), _round(_add_eps(q, up_a), 8 * _U, True))
    eps_lo = np.maximum(_round(_remove_eps(q, lo_r), 8 * _U, False), _round(_add_eps(q, lo_a), 8 * _U, False))
    return np.minimum(eps_lo, eps_up), eps_up
