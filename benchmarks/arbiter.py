"""An independent arbiter for T Poisson-subsampled Gaussian steps: δ(ε) bracketed from both sides.

    python benchmarks/arbiter.py --rate 0.0037407 --sigma 0.3324 --steps 10 --delta 4.0918e-12
    python benchmarks/arbiter.py --rate 1e-4 --sigma 0.5 --steps 10000 --delta 1e-8 --h 3e-5 1.5e-5
    python benchmarks/arbiter.py ... --epsilon 22.0206 22.0207     # these ε instead of dpcalc's ends

For random_box.py's leads at T > 2, where no quadrature reaches: it shares no code with dpcalc's
engine. Each direction's one-step loss distribution is put on a grid of spacing h *aligned on the
support's finite end* — log(1 − q) for the remove direction, −log(1 − q) for add — with bin masses
from differences of log-ndtr survival functions, twice: connect the dots (a dominating pair: its
δ(ε) is at or above the true one at every ε) and each bin's mass at its lower edge (dominated: at
or below). Each is composed T times by an exponentially tilted FFT in long double and δ is read at
each ε, for both directions (the answer is the larger). Without dpcalc's ε given, it checks
dpcalc's own certified interval: a dominated δ above δ at the upper end, or a dominating δ below
it at the lower end, would say that end is false.

Not certified: the FFT's round-off and the window's wrap-around are not bounded (the tilt keeps
both far below the digits printed wherever it was tried), and the bin masses are double-precision
differences. Both brackets tighten as h falls (the dominated one in proportion to h, the other
faster), so run two or three grids. The dominated side moves every step's loss by up to h, so over
many steps it is loose (0.63·δ at q = 0.01, σ = 1, 1,000 steps, δ = 1e-5, h = 1.2e-4): it decides
at few steps, where random_box.py's quadrature does not reach past two. The alignment matters:
at q = 0.00374, σ = 0.332, 10 steps, δ = 4.1e-12 a grid of multiples of h moves the pile of loss
just above log(1 − q) up to the next node in every step, and connect the dots converged to
δ/δ = 1.0000013 at dpcalc's upper end; aligned on log(1 − q) it gives 0.99999998 (dpcalc's end is
true).
"""

from __future__ import annotations

import argparse

import numpy as np
from machine import describe
from scipy import fft as sfft
from scipy.optimize import brentq
from scipy.special import log_ndtr

#: Largest transform (points); beyond it the window is this long and the tilt keeps the wrap small.
MAX_N = 1 << 25


def _step(q: float, s: float, h: float, direction: str):
    """(losses, dominating masses, dominated masses, mass at +∞) of one step on the aligned grid."""
    lq, l1q = np.log(q), np.log1p(-q)
    top_x = 1.0 + 14.0 * s  # P[x > 1 + 14σ] < 1e-44: the rest goes to +∞ (dominating) or is dropped

    def x_of(ell):  # L(x) = ell, L(x) = log(1 − q + q e^{(2x − 1)/(2σ²)}) increasing in x
        with np.errstate(all="ignore"):
            return s * s * (np.log(np.expm1(ell) + q) - lq) + 0.5

    def log_sf_p(x):  # log P[X > x], X ~ (1 − q)N(0, σ²) + qN(1, σ²)
        return np.logaddexp(l1q + log_ndtr(-x / s), lq + log_ndtr(-(x - 1) / s))

    def log_sf_q(x):  # log Q[X > x], X ~ N(0, σ²)
        return log_ndtr(-x / s)

    ell_top = float(np.log(1 - q + q * np.exp((2 * top_x - 1) / (2 * s * s))))
    m = int(np.ceil((ell_top - l1q) / h))
    if direction == "remove":  # L under P, support (log(1 − q), ∞): nodes log(1 − q) + jh
        g = l1q + np.arange(m + 1) * h
        x = x_of(g)
        x[0] = -np.inf
        sp, sq = np.exp(log_sf_p(x)), np.exp(log_sf_q(x))
        P, Q = sp[:-1] - sp[1:], sq[:-1] - sq[1:]
        beyond = float(sp[-1])  # P-mass above the last node
    else:  # L' = −L under Q, support (−∞, −log(1 − q)): nodes −log(1 − q) − jh, taken ascending
        g = -(l1q + np.arange(m + 1)[::-1] * h)
        x = x_of(-g)  # L' in (g_j, g_j+1]  <=>  x in [x(−g_j+1), x(−g_j))
        x[-1] = -np.inf
        with np.errstate(divide="ignore"):  # Q[X <= x] and P[X <= x], from the lower tails
            cq = np.exp(log_ndtr(x / s))
            cp = np.exp(np.logaddexp(l1q + log_ndtr(x / s), lq + log_ndtr((x - 1) / s)))
        P, Q = cq[:-1] - cq[1:], cp[:-1] - cp[1:]  # the pair is (Q, P): P' = Q, Q' = P
        P, Q = np.maximum(P, 0.0), np.maximum(Q, 0.0)
        beyond = 0.0
        below = float(np.exp(log_sf_q(x[0])))  # P'-mass below the first node (L' < g_0): at g_0 when dominating
    a, b = g[:-1], g[1:]
    with np.errstate(all="ignore"):
        v = np.clip(np.nan_to_num((P - np.exp(a) * Q) / -np.expm1(a - b)), 0.0, P)  # connect the dots
    up = np.zeros(g.size)
    up[1:] += v
    up[:-1] += P - v
    low = np.zeros(g.size)
    low[:-1] += P  # each bin's mass at its lower edge (losses only move down: dominated)
    if direction == "add":
        up[0] += below
    else:
        low[-1] += beyond  # (dominated: the mass above the last node is at least there)
    return g, up, low, beyond


def _delta(g, pmf, p_inf, steps: int, eps: np.ndarray, h: float) -> np.ndarray:
    """δ at each ε of ``steps`` compositions of the PMF on the grid g (spacing h), by a tilted FFT."""
    live = pmf > 0
    lp = np.full(pmf.shape, -np.inf)
    lp[live] = np.log(pmf[live])
    target = float(np.mean(eps)) / steps

    def tilted_mean(lam):
        w = lp + lam * g
        e = np.exp(w - w.max())
        return float(np.sum(e * g) / e.sum())

    inf_part = float(-np.expm1(steps * np.log1p(-p_inf)))
    if steps * float(g[live].max()) <= float(np.min(eps)):  # no finite composed loss above any ε asked
        return np.full(np.shape(eps), inf_part)
    lo_l, hi_l = -50.0, 50.0
    while tilted_mean(hi_l) < target and hi_l < 1e6:
        hi_l *= 2
    if tilted_mean(hi_l) < target:
        lam = hi_l
    elif tilted_mean(lo_l) >= target:
        lam = lo_l
    else:
        lam = brentq(lambda t: tilted_mean(t) - target, lo_l, hi_l)
    w = lp + lam * g
    c = w.max()
    e = np.exp(w - c)
    g1 = c + np.log(e.sum())
    n = min(MAX_N, 1 << int(np.ceil(np.log2(max(steps * g.size, 2)))))
    # (A step longer than the window wraps around onto it: its tilted far ends are negligible.)
    arr = np.bincount(np.arange(g.size) % n, weights=e / e.sum(), minlength=n).astype(np.longdouble)
    comp = sfft.irfft(sfft.rfft(arr) ** steps, n)
    # Composed node i·h above steps·g_0 sits at position i mod n: read the n nodes nearest the ε asked.
    centre = int(round((float(np.mean(eps)) - steps * g[0]) / h))
    i = np.arange(n) - n // 2 + centre
    loss = (steps * np.longdouble(g[0]) + i * np.longdouble(h)).astype(np.longdouble)
    vals = comp[i % n]
    out = []
    for x in eps:
        sel = loss > x
        t = vals[sel] * np.exp(np.longdouble(steps * g1) - np.longdouble(lam) * loss[sel])
        t = t * -np.expm1(np.longdouble(x) - loss[sel])
        out.append(float(np.sum(np.maximum(t, 0))) + inf_part)
    return np.array(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--sigma", type=float, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--delta", type=float, required=True)
    ap.add_argument("--epsilon", type=float, nargs="+", default=None, help="ε to read δ at (default: dpcalc's ends)")
    ap.add_argument("--h", type=float, nargs="+", default=[2.0**-14, 2.0**-15], help="grid spacings")
    args = ap.parse_args()
    q, s, t, d = args.rate, args.sigma, args.steps, args.delta
    print(describe())
    if args.epsilon is None:
        from dpcalc.core import sgd

        r = sgd.tight_interval(q, s, t, d)
        eps = np.array([float(r.lower[0]), float(r.upper[0])])
        print(f"dpcalc: [{float(eps[0])!r}, {float(eps[1])!r}] ({r.method[0]})")
    else:
        eps = np.array(args.epsilon, float)
    for h in args.h:
        hi = np.zeros(eps.size)
        lo = np.zeros(eps.size)
        for direction in ("remove", "add"):
            g, up, low, p_inf = _step(q, s, h, direction)
            hi = np.maximum(hi, _delta(g, up, p_inf, t, eps, h))
            lo = np.maximum(lo, _delta(g, low, 0.0, t, eps, h))
        cells = "; ".join(f"ε = {float(x)!r}: δ/δ in [{a / d:.9f}, {b / d:.9f}]" for x, a, b in zip(eps, lo, hi))
        print(f"h = {h:.4g}: {cells}", flush=True)
    print("(a bracket's low side above 1 at an upper end, or its high side below 1 at a lower end: that end is false)")


if __name__ == "__main__":
    main()
