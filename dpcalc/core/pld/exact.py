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


def _bracket(bounds, log_target: np.ndarray, top: np.ndarray, iters: int = 100):
    """For curves decreasing in x >= 0 with certified ``bounds(x) -> (lo, hi)`` of log δ(x):
    (x_lo, x_up) where hi(x_up) <= target and lo(x_lo) > target were evaluated (x_lo = 0 when even
    lo(0) is not above the target: no claim beyond x >= 0). x_up is inf where no checked point was found.

    The root of the midpoint curve is found by regula falsi with the Illinois modification (a
    ends kept twice are halved) on √(−log δ), to a few ulps; the two ends are then the
    nearest points of a ladder x·(1 ± 2^k·u) around it at which the bounds are checked — so the
    interval is as wide as the round-off of the bounds, and every end returned was evaluated.
    """
    t = log_target
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


def _round(x: np.ndarray, rel: float, up: bool) -> np.ndarray:
    """x moved by a relative margin (plus one ulp) toward the safe side."""
    with np.errstate(invalid="ignore"):
        y = x * (1.0 + rel) if up else x * (1.0 - rel)
        # 0 stays 0: it is where the curve was checked (a search end), not a rounded value.
        return np.where(x == 0, 0.0, np.nextafter(y, np.inf if up else 0.0))


def gaussian_interval(mu, delta) -> tuple[np.ndarray, np.ndarray]:
    """Certified [lower, upper] of ε(δ) for μ-GDP (T Gaussian steps: μ = √T/σ), elementwise."""
    mu, delta = (np.atleast_1d(np.asarray(v, float)) for v in np.broadcast_arrays(mu, delta))
    log_d = np.log(delta)
    with np.errstate(all="ignore"):
        top = mu * mu / 2 + mu * np.sqrt(-2.0 * log_d)  # δ_μ(top) <= Φ̄(√(−2 log δ)) <= δ/2

    lo, up = _bracket(lambda e: _log_delta_bounds(mu, e), log_d, top)
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

        # add: δ_a = q·e^{ε − ε*}·δ_μ(ε*), in ε* >= 0.
        top_a = mu * mu / 2 + mu * np.sqrt(-2.0 * log_d)

        # Both directions in one search (one evaluation of the Gaussian curve per step for both).
        n = mu.size
        mu2, q2 = np.concatenate([mu, mu]), np.concatenate([q, q])
        log_q2, e_q2 = np.concatenate([log_q, log_q]), np.concatenate([e_q, np.zeros(n)])
        is_add = np.arange(2 * n) >= n

        def both(x):
            lo, hi = _log_delta_bounds(mu2, x)
            e = _add_eps(q2, x)
            pre = np.where(is_add, log_q2 - x + e, log_q2)
            err = np.where(is_add, 4 * _U * (np.abs(log_q2) + x + e + 1.0), e_q2)
            return lo + pre - err, hi + pre + err

        lo_x, up_x = _bracket(
            both, np.concatenate([log_d, log_d]), np.concatenate([np.where(t_r < 0, top_r, 0.0), top_a])
        )
        lo_r, up_r, lo_a, up_a = lo_x[:n], up_x[:n], lo_x[n:], up_x[n:]
        lo_r = np.where(t_r < 0, lo_r, 0.0)
        up_r = np.where(t_r < 0, up_r, 0.0)

    eps_up = np.maximum(_round(_remove_eps(q, up_r), 8 * _U, True), _round(_add_eps(q, up_a), 8 * _U, True))
    eps_lo = np.maximum(_round(_remove_eps(q, lo_r), 8 * _U, False), _round(_add_eps(q, lo_a), 8 * _U, False))
    return np.minimum(eps_lo, eps_up), eps_up
