"""Loss distributions of sampling schemes beyond Poisson: mixtures, truncated Poisson, user level, shuffling.

Every function here returns :class:`.mechanisms.Direction` objects the engine
(:func:`.engine.epsilon`) composes like any other. Two kinds, and which one
matters for what the engine's interval means:

* **dominating** pairs (an *upper* bound on the mechanism's privacy curve):
  :func:`truncated_poisson_gaussian`, :func:`mixture_of_gaussians` (user level).
  The engine's upper end on them is a certified upper bound on the mechanism's ε.
* **dominated** pairs (the output distributions, or a post-processing of them,
  of two actual neighbouring datasets): :func:`max_statistic`. The engine's
  *lower* end on them is a certified lower bound on the mechanism's ε (any
  realisable pair's ε is at most the mechanism's).

Building blocks:

* :func:`mixture` — an indexed mixture Σ_i w_i·(P_i, Q_i) (the index revealed:
  its privacy loss is that of the component it came from, so its tails are
  the weighted tails). Its hockey-stick divergence is Σ_i w_i H_γ(P_i‖Q_i)
  for every γ, so a mixture of dominating pairs dominates the matching
  mixture of mechanisms (joint convexity).
* :func:`monotone_direction` — a pair on the real line whose privacy loss
  ℓ(x) is increasing in x (or decreasing: the swapped pair), from the loss
  with an error bound and the P/Q tails at x with error bounds. The point
  for a loss is found by Newton's method from a table and then moved to the
  safe side of the loss's own error bound, so the :class:`.mechanisms.Tails`
  contract (``gap``) holds.

References
----------
.. [ZDW] Zhu, Dong & Wang, Optimal Accounting of Differential Privacy via
   Characteristic Function, AISTATS 2022, arXiv:2106.08567 (dominating pairs,
   their adaptive composition; Poisson subsampling).
.. [G24] A. Ganesh, Tight Group-Level DP Guarantees for DP-SGD with Sampling
   via Mixture of Gaussians Mechanisms, arXiv:2401.10294 (group / user level:
   Σ_j Binom(K, q)_j N(j, σ²) against N(0, σ²)).
.. [CGK+24] L. Chua, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi, A. Sinha,
   C. Zhang, How Private are DP-SGD Implementations?, ICML 2024,
   arXiv:2403.17673 (shuffling: the mixture pair (1/k)Σ_t N(e_t, σ²I) against
   N(0, σ²I) as a lower bound; tests of the form max_t y_t > C).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import special

from .mechanisms import Direction, Tails, _ndtr_pair, subsampled_gaussian

__all__ = [
    "mixture",
    "monotone_direction",
    "truncated_poisson_gaussian",
    "truncated_poisson_lower_rate",
    "mixture_of_gaussians",
    "user_level_gaussian",
    "max_statistic",
    "BINOM_REL",
]

_U = float(np.finfo(float).eps)

#: Relative error allowed for scipy's binomial probabilities (its incomplete beta / log-gamma). Measured
#: against 50-digit mpmath at below 1e-13 on the tests' grid (tests/test_sampling.py re-measures it);
#: the allowance is a thousand times that.
BINOM_REL = 1e-10


# --------------------------------------------------------------------------- mixtures


def mixture(parts: list[tuple[float, float, Direction]]) -> Direction:
    """The indexed mixture Σ_i w_i·(P_i, Q_i) of continuous directions, ``parts`` = (w_i, err_i, d_i).

    The index is revealed, so a loss ℓ of the mixture is a loss ℓ of one component: P[L <= ℓ] =
    Σ w_i P_i[L_i <= ℓ], and likewise for Q and the upper tails. ``err_i`` bounds the absolute error
    of w_i; the tails' error bounds are Σ (w_i·e_i + err_i·t_i) plus the sums' rounding. The point
    of each component lies within its own gap of ℓ (on the side asked for), so the mixture's gap is
    the largest of them. Weights may sum to a little more than 1 (an upper bound on each): every
    δ(ε) is linear in the weights.
    """
    parts = [(float(w), float(e), d) for w, e, d in parts if w > 0 or e > 0]
    if not parts:
        raise ValueError("a mixture needs a component of positive weight")
    if any(d.cdf is None for _, _, d in parts):
        raise ValueError("mixture() takes continuous directions")
    if len(parts) == 1 and parts[0][1] == 0.0 and parts[0][0] == 1.0:
        return parts[0][2]
    n = len(parts)

    def cdf(ell, side=0):
        ell = np.asarray(ell, float)
        acc = None
        for w, e, d in parts:
            t = d.cdf(ell, side)
            vals = [np.asarray(v, float) for v in (t.fp, t.fq, t.sp, t.sq)]
            errs = [np.asarray(v, float) for v in (t.efp, t.efq, t.esp, t.esq)]
            gap = np.asarray(t.gap, float)
            if acc is None:
                acc = [w * v for v in vals] + [w * x + e * v for x, v in zip(errs, vals)] + [gap]
            else:
                for k in range(4):
                    acc[k] = acc[k] + w * vals[k]
                    acc[4 + k] = acc[4 + k] + w * errs[k] + e * vals[k]
                acc[8] = np.maximum(acc[8], gap)
        for k in range(4):
            acc[4 + k] = acc[4 + k] + (n + 2) * _U * acc[k]
        return Tails(*acc[:8], gap=np.broadcast_to(acc[8], ell.shape) if np.ndim(acc[8]) else acc[8])

    heaviest = max(parts, key=lambda p: p[0])[2]
    return Direction(
        lo=float(min(d.lo for _, _, d in parts)),
        hi=float(max(d.hi for _, _, d in parts)),
        cdf=cdf,
        p_inf=float(sum((w + e) * d.p_inf for w, e, d in parts)),
        median=float(heaviest.median),
    )


# --------------------------------------------------------------------------- monotone pairs on the line


def monotone_direction(
    loss: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    dloss: Callable[[np.ndarray], np.ndarray],
    tails: Callable[[np.ndarray], tuple],
    x_range: tuple[float, float],
    lo: float,
    hi: float,
    swap: bool = False,
    table: int = 1 << 14,
    loss_d: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
    open_lo: bool = False,
) -> Direction:
    """A pair (P, Q) on the line whose privacy loss ℓ(x) = log(dP/dQ)(x) is increasing in x.

    ``loss(x)`` returns ℓ(x) and a bound on its absolute error; ``dloss(x)`` its derivative (only
    to steer Newton's method: no claim rests on it); ``tails(x)`` returns (P[X<=x], Q[X<=x],
    P[X>x], Q[X>x]) and bounds on their absolute errors (x may be ±∞). ``x_range`` holds the points
    of interest (a table on it seeds the search; losses outside it are still found); ``lo``/``hi``
    are ℓ(−∞), ℓ(+∞). ``swap``: the swapped pair (Q, P), whose loss −ℓ(x) is decreasing.

    For a loss m the point x is found by Newton's method from the table, then moved so that the
    loss's error interval [ℓ̂ − e, ℓ̂ + e] lies at or below m (``side`` −1: gap = m − (ℓ̂ − e)) or at
    or above it (``side`` +1); with ``side`` 0 the gap is |ℓ̂ − m| + e. Where no such point is
    found the nearest table end is used and its (larger) gap reported: the contract holds either
    way. ``loss_d(x)``, if given, returns (ℓ, error, ℓ') in one evaluation (Newton's steps use it).
    ``open_lo``: the direction reports its support open at ℓ(−∞) (lo = −∞; hi = +∞ when swapped) — for a
    finite ℓ(−∞) that holds next to no mass, so that the engine's grid starts where the mass does (the
    search still uses ``lo``).
    """
    if loss_d is None:

        def loss_d(x):
            f, e = loss(x)
            return f, e, dloss(x)

    xs = np.linspace(x_range[0], x_range[1], table + 1)
    l_tab = np.maximum.accumulate(loss(xs)[0])

    def solve(m, side):
        """x with loss at m (``side``: the point's loss interval at or below m for −1, above for +1)."""
        m = np.asarray(m, float)
        shape = m.shape
        m = m.ravel()
        x = np.interp(m, l_tab, xs)
        i = np.clip(np.searchsorted(l_tab, m), 1, table)
        a, b = xs[i - 1].copy(), xs[i].copy()
        below = m < l_tab[0]
        above = m > l_tab[-1]
        # Outside the table: brackets widened geometrically (losses far out are still found).
        span = xs[-1] - xs[0]
        a = np.where(below, xs[0] - span * 1e3, a)
        b = np.where(below, xs[0], b)
        a = np.where(above, xs[-1], a)
        b = np.where(above, xs[-1] + span * 1e3, b)
        x = np.where(below, xs[0] - 1.0, np.where(above, xs[-1] + 1.0, x))
        with np.errstate(all="ignore"):
            tol = 8 * _U * (np.abs(m) + 1.0)
            # Newton's steps, safeguarded by the bracket [a, b], on the points not yet converged only.
            act = np.flatnonzero(np.abs(m) < np.inf)
            for _ in range(10):
                if act.size == 0:
                    break
                xa, ma = x[act], m[act]
                f, _e, g = loss_d(xa)
                r = f - ma
                done = np.abs(r) <= tol[act]
                a[act] = np.where(r < 0, np.maximum(a[act], xa), a[act])
                b[act] = np.where(r > 0, np.minimum(b[act], xa), b[act])
                xn = xa - r / g
                bad = ~np.isfinite(xn) | (xn <= a[act]) | (xn >= b[act])
                xn = np.where(bad, 0.5 * (a[act] + b[act]), xn)
                x[act] = np.where(done | (r == 0), xa, xn)
                act = act[~done]
            f, e, g = (np.array(v, float) for v in loss_d(x))
            gap = np.abs(f - m) + e
            g = np.abs(g)
            if side:
                # Move the points until their loss intervals are on the asked side of m (those that are
                # not yet, only).
                ok = (f + e <= m) if side < 0 else (f - e >= m)
                for k in range(12):
                    bad_i = np.flatnonzero(~ok)
                    if bad_i.size == 0:
                        break
                    fb, eb, gb, xb, mb = f[bad_i], e[bad_i], g[bad_i], x[bad_i], m[bad_i]
                    need = (fb + eb - mb) if side < 0 else (mb - fb + eb)
                    dx = np.where(gb > 0, (need / gb) * (1.0 + 2.0**k) + 4 * _U * np.abs(xb) * 2.0**k, 2.0**k)
                    dx = np.where(np.isfinite(dx), dx, 2.0**k)
                    x[bad_i] = xb + side * dx
                    f[bad_i], e[bad_i] = loss(x[bad_i])
                    ok[bad_i] = (f[bad_i] + e[bad_i] <= mb) if side < 0 else (f[bad_i] - e[bad_i] >= mb)
                gap = np.where(side < 0, m - (f - e), (f + e) - m)
                # Not found (flat or non-finite loss): the support's end on that side.
                x = np.where(ok & np.isfinite(gap), x, -np.inf if side < 0 else np.inf)
                gap = np.where(ok & np.isfinite(gap), gap, 0.0)
        # Losses at or beyond the support's ends.
        x = np.where(m <= lo, -np.inf, np.where(m >= hi, np.inf, x))
        gap = np.where((m <= lo) | (m >= hi), 0.0, gap)
        return x.reshape(shape), np.maximum(gap, 0.0).reshape(shape)

    def cdf(ell, side=0):
        ell = np.asarray(ell, float)
        if not swap:
            x, gap = solve(ell, side)
            fp, fq, sp, sq, efp, efq, esp, esq = tails(x)
            return Tails(fp, fq, sp, sq, efp, efq, esp, esq, gap)
        # Swapped: loss −ℓ(x) <= e ⇔ ℓ(x) >= −e ⇔ X >= x(−e); P' = Q, Q' = P.
        x, gap = solve(-ell, -side)
        fp, fq, sp, sq, efp, efq, esp, esq = tails(x)
        return Tails(sq, sp, fq, fp, esq, esp, efq, efp, gap)

    # Median of the loss under P (Q when swapped), from the table (for the engine's choice of tails).
    fp, fq = tails(xs)[:2]
    ref = fq if swap else fp
    j = int(np.clip(np.searchsorted(ref, 0.5), 0, table))
    med = float(l_tab[j])
    if swap:
        return Direction(lo=-hi, hi=np.inf if open_lo else -lo, cdf=cdf, median=-med)
    return Direction(lo=-np.inf if open_lo else lo, hi=hi, cdf=cdf, median=med)


def _log_ndtr_err(z):
    """log Φ(z) and a bound on its absolute error (z known to within 2u·|z|), without cancellation:
    log Φ(z) directly where z < 0, log1p(−Φ(−z)) above."""
    z = np.asarray(z, float)
    small, _, e_small, _ = _ndtr_pair(-np.abs(z), 2 * _U * np.abs(z))  # Φ(−|z|) and its error
    with np.errstate(all="ignore"):
        neg = z < 0
        val = np.where(neg, np.log(small), np.log1p(-small))
        rel_neg = e_small / small + 2 * _U * (1.0 + np.abs(val))
        abs_pos = e_small / (1.0 - np.minimum(small, 0.5)) * 1.01 + 2 * _U * np.abs(val)
        err = np.where(neg, -np.log1p(-np.minimum(rel_neg, 0.5)), abs_pos)
        val = np.where(np.isinf(z), np.where(z > 0, 0.0, -np.inf), val)
        err = np.where(np.isfinite(z), err, 0.0)
    return val, err


# --------------------------------------------------------------------------- binomial weights


def _binom_sf(k, n: int, q: float) -> np.ndarray:
    """P[Binom(n, q) >= k] (elementwise k; 0 above n, 1 at or below 0): the regularised incomplete beta
    I_q(k, n − k + 1) (scipy.special's, the function scipy.stats' binomial tail evaluates; scipy.stats
    itself is not imported: it costs half a second of start-up)."""
    k = np.asarray(k, float)
    kk = np.clip(k, 1.0, float(n))
    return np.where(k <= 0, 1.0, np.where(k > n, 0.0, special.betainc(kk, float(n) - kk + 1.0, float(q))))


# --------------------------------------------------------------------------- truncated Poisson


def _truncation_buckets(n: int, q: float, b_max: int, buckets: int):
    """Bucket edges k_0 = B < k_1 < … < k_J = n + 1 of the others' count K >= B ~ Binom(n, q)."""
    mean = n * q
    sd = np.sqrt(max(n * q * (1 - q), 1e-300))
    z = np.linspace(-4.0, 6.0, max(buckets, 1) + 1)[1:-1]
    inner = np.unique(np.clip(np.ceil(mean + z * sd), b_max + 1, n).astype(np.int64))
    inner = inner[(inner > b_max) & (inner <= n)]
    # An edge whose bucket's rate qB/(k + 1) is within 0.1 % of the bucket below's is dropped (that bucket
    # then takes the larger rate: still dominating, and one component fewer to evaluate) — e.g. the
    # single-count bucket [B, B + 1) that clipping makes where truncation is rare.
    keep = [b_max]
    for k in inner.tolist():
        if (k - keep[-1]) / (keep[-1] + 1.0) >= 1e-3:
            keep.append(k)
    return np.array(keep + [n + 1], dtype=np.int64)


def truncated_poisson_gaussian(rate: float, sigma: float, others, max_batch: int, buckets: int = 4) -> list[Direction]:
    """Dominating pair of one step of truncated Poisson sampling with a Gaussian sum, add/remove neighbours.

    Each record joins the batch with probability q; a batch of more than B records is cut to B
    chosen uniformly at random (the batch's order: a random permutation, its first B kept); the sum
    of the kept (clipped, norm <= 1) gradients gets N(0, σ²I). ``others`` = n is the number of
    records besides the one that differs (N − 1 when removing one of N records, N when adding one;
    a sequence: all of them).

    Condition on everything but the differing record x: the others' sample of size K ~ Binom(n, q)
    and its order. The kept sum without x has centre c. With x sampled (probability q) it is kept
    with probability r_K = min(1, B/(K + 1)); if K < B nothing else changes (centre c + g_x, a
    shift of norm <= 1), if K >= B it displaces the B-th other y (centre c + g_x − g_y, a shift of
    norm <= 2). So, given the others, the pair is a Poisson-subsampled Gaussian at rate p_K = q·r_K
    with sensitivity s_K ∈ {1, 2} — ((1 − p_K)N(0, σ²) + p_K N(s_K, σ²), N(0, σ²)) dominates it in
    both directions — and by joint convexity the mixture over K of those pairs, K revealed,
    dominates the step. Its δ is convex and non-decreasing in p_K, so each bucket [k_j, k_{j+1}) of
    K >= B takes its largest rate q·B/(k_j + 1). Components: K < B (weight P[K < B]): the Poisson
    pair at (q, σ); each bucket j (weight P[k_j <= K < k_{j+1}]): the pair at (qB/(k_j + 1), σ/2).
    Weights carry :data:`BINOM_REL` relative error allowances. Returns [remove, add] (the add pair
    is the swap of the remove pair, as domination for every γ requires); for a sequence of counts,
    [remove, add] for each in turn (the engine bounds by the largest δ of all of them). (One mixture
    taking each component's largest weight over the counts would dominate them all too — extra
    weight on an indexed mixture only adds divergence — but its excess mass, about 1e-4 per step
    at N = 60,000, compounds over thousands of steps: ε 11.5 instead of 10.5 at B_max = B.)

    Where truncation cannot happen (B > n) this is the Poisson-subsampled Gaussian.
    """
    q, b = float(rate), int(max_batch)
    if np.ndim(others):
        out = []
        for n in others:
            out += truncated_poisson_gaussian(q, sigma, int(n), b, buckets)
        return out
    n = int(others)
    plain = subsampled_gaussian(q, sigma)
    if b > n:
        return plain
    p_less = float(1.0 - _binom_sf(b, n, q)) if b > 0 else 0.0
    edges = _truncation_buckets(n, q, b, buckets)
    sf = _binom_sf(edges, n, q)
    w = np.maximum(sf[:-1] - sf[1:], 0.0)
    # Absolute error of a difference of two tails, each within BINOM_REL of itself.
    ew = BINOM_REL * (sf[:-1] + sf[1:]) + 4 * _U * w
    out_r: list = []
    out_a: list = []
    if p_less > 0:
        e_less = BINOM_REL * min(p_less, 1.0 - p_less) + 4 * _U
        out_r.append((p_less, e_less, plain[0]))
        out_a.append((p_less, e_less, plain[-1]))
    for kj, wj, ej in zip(edges[:-1], w, ew):
        if wj <= 0 and ej <= 0:
            continue
        pj = min(q * b / (float(kj) + 1.0) * (1 + 4 * _U), 1.0)
        d = subsampled_gaussian(pj, sigma / 2.0)
        out_r.append((float(wj), float(ej), d[0]))
        out_a.append((float(wj), float(ej), d[-1]))
    return [mixture(out_r), mixture(out_a)]


def truncated_poisson_lower_rate(rate: float, others: int, max_batch: int) -> float:
    """A rate q̄ at most the differing record's chance of being in the (cut) batch, q·E[min(1, B/(K+1))].

    Realisable lower-bound pair: every other record's gradient 0, the differing record's 1. Then a
    step's output is (1 − q̄)N(0, σ²) + q̄N(1, σ²) against N(0, σ²) exactly, T steps the product,
    so the Poisson engine's certified lower end at rate q̄ is a certified lower bound on the
    truncated mechanism's ε (any q' <= q̄ too: ε grows with the rate). With K ~ Binom(n, q):
    q·E[min(1, B/(K+1))] = q·P[K < B] + (B/(n+1))·P[Binom(n+1, q) >= B+1] (because
    q·C(n, k)/(k+1) = C(n+1, k+1)/(n+1)). Rounded down by the binomial allowance.
    """
    q, n, b = float(rate), int(others), int(max_batch)
    if b > n:
        return q
    less = float(1.0 - _binom_sf(b, n, q))
    over = float(_binom_sf(b + 1, n + 1, q))
    qbar = q * less + b / (n + 1.0) * over
    return float(qbar * (1.0 - 4 * BINOM_REL) - 1e-300)


# --------------------------------------------------------------------------- mixtures of Gaussians (user level)


def _binom_weights(k: int, q: float):
    """w_j = C(K, j) q^j (1 − q)^(K − j), j = 0..K, in logs, with an absolute error bound on each log."""
    lw, err = _binom_weights_rows(k, np.array([q], float))
    return lw[0], err[0]


def _binom_weights_rows(k: int, q: np.ndarray):
    """:func:`_binom_weights` for many q at once: a row of K + 1 log-weights, and their error bounds, per q
    (the same operations, so the same digits as one q's)."""
    q = np.asarray(q, float).reshape(-1, 1)
    j = np.arange(k + 1, dtype=float)
    lq, l1q = np.log(q), np.log1p(-q)
    lc = special.gammaln(k + 1.0) - special.gammaln(j + 1.0) - special.gammaln(k - j + 1.0)
    lw = lc + j * lq + (k - j) * l1q
    # gammaln's error (relative, a few ulps; allowance 64u of its value) and the sums' rounding.
    err = 64 * _U * (special.gammaln(k + 1.0) * 3 + j * np.abs(lq) + (k - j) * np.abs(l1q) + 1.0) + BINOM_REL
    return lw, err


def mixture_of_gaussians(log_w: np.ndarray, shifts: np.ndarray, sigma: float, err_log_w=None) -> list[Direction]:
    """Remove and add directions of P = Σ_j w_j N(s_j, σ²) against Q = N(0, σ²) (s_j >= 0, Σ w_j = 1).

    Loss ℓ(x) = log Σ_j w_j exp((2 s_j x − s_j²)/(2σ²)): a log-sum-exp of lines with slopes
    s_j/σ² >= 0, so increasing in x (convex); ℓ(−∞) = log w_0 when s_0 = 0 (else −∞), ℓ(+∞) = ∞.
    P[X <= x] = Σ_j w_j Φ((x − s_j)/σ), Q[X <= x] = Φ(x/σ). The add direction is the swapped pair.
    ``err_log_w``: absolute error bounds on log w_j (they carry into the loss and the tails).
    """
    lw = np.asarray(log_w, float)
    s = np.asarray(shifts, float)
    keep = np.isfinite(lw)
    lw, s = lw[keep], s[keep]
    elw = np.zeros_like(lw) if err_log_w is None else np.broadcast_to(np.asarray(err_log_w, float), keep.shape)[keep]
    s2 = sigma * sigma
    w = np.exp(lw)
    ew = w * np.expm1(elw + 2 * _U)
    n = lw.size
    # Components along the first axis, points along the second: reductions over the components are
    # then elementwise operations on whole rows (fast for a few components as for many).
    lw_c, s_c, w_c, ew_c = lw[:, None], s[:, None], w[:, None], ew[:, None]
    # Each term's error: elw_j + 4u(|lw_j| + s_j²/(2σ²) + 1) + 4u·s_j|x|/σ²; their largest is at most
    # the largest constant part plus the largest slope's part.
    e_const = float(np.max(elw + 4 * _U * (np.abs(lw) + s * s / (2.0 * s2) + 1.0)))
    e_slope = float(4 * _U * np.max(s) / s2)

    def loss_d(x):
        x = np.asarray(x, float)
        shape = x.shape
        xr = x.ravel()[None, :]
        with np.errstate(all="ignore"):
            a = lw_c + (2.0 * s_c * xr - s_c * s_c) / (2.0 * s2)
            mx = np.max(a, axis=0)
            mx_safe = np.where(np.isfinite(mx), mx, 0.0)
            p = np.exp(a - mx_safe)
            tot = np.sum(p, axis=0)
            val = mx_safe + np.log(tot)
            der = np.sum(p * s_c, axis=0) / tot / s2
            err = e_const + e_slope * np.abs(xr[0]) + (n + 4) * _U * (1.0 + np.abs(val))
            val = np.where(np.isfinite(mx), val, mx)
        return val.reshape(shape), err.reshape(shape), der.reshape(shape)

    def loss(x):
        return loss_d(x)[:2]

    def dloss(x):
        return loss_d(x)[2]

    def tails(x):
        x = np.asarray(x, float)
        shape = x.shape
        xr = x.ravel()[None, :]
        z = (xr - s_c) / sigma
        dz = 2 * _U * (np.abs(xr) + s_c) / sigma
        F, S, eF, eS = _ndtr_pair(z, dz)
        fp = np.sum(w_c * F, axis=0)
        sp = np.sum(w_c * S, axis=0)
        efp = np.sum(w_c * eF + ew_c * F, axis=0) + (n + 2) * _U * fp
        esp = np.sum(w_c * eS + ew_c * S, axis=0) + (n + 2) * _U * sp
        z0 = x / sigma
        fq, sq, efq, esq = _ndtr_pair(z0, 2 * _U * np.abs(z0))
        return (
            fp.reshape(shape),
            fq,
            sp.reshape(shape),
            sq,
            efp.reshape(shape),
            efq,
            esp.reshape(shape),
            esq,
        )

    top = float(s.max())
    lo = float(lw[s == 0][0]) if np.any(s == 0) else -np.inf
    x_range = (-8.0 * sigma - top, top + 8.0 * sigma)
    remove = monotone_direction(loss, dloss, tails, x_range, lo=lo, hi=np.inf, loss_d=loss_d)
    add = monotone_direction(loss, dloss, tails, x_range, lo=lo, hi=np.inf, swap=True, loss_d=loss_d)
    return [remove, add]


def user_level_gaussian(rate: float, sigma: float, examples: int) -> list[Direction]:
    """User-level DP-SGD step: each of a user's K examples Poisson-sampled at rate q, Gaussian sum.

    Removing (adding) a user moves the sum by the gradients of the j of its K examples that were
    sampled, j ~ Binom(K, q), norm <= j: the pair Σ_j Binom(K, q)_j N(j, σ²) against N(0, σ²) and
    its swap ([G24]: the mixture-of-Gaussians dominating pair). K = 1 is the Poisson-subsampled
    Gaussian (:func:`.mechanisms.subsampled_gaussian`), which is returned as such.
    """
    k = int(examples)
    if k <= 1:
        return subsampled_gaussian(rate, sigma)
    if rate >= 1.0:
        from .mechanisms import gaussian

        return gaussian(k / sigma)
    lw, err = _binom_weights(k, rate)
    return mixture_of_gaussians(lw, np.arange(k + 1, dtype=float), sigma, err)


# --------------------------------------------------------------------------- shuffling: the max statistic


def max_statistic(mu: float, batches: int, run: int | None = None) -> list[Direction]:
    """A dominated pair for one shuffled (or balls-in-bins) epoch: the largest of the k batch outputs.

    Realisable inputs ([CGK+24]): a one-dimensional model, noise relative to the neighbour relation's
    sensitivity, μ = 1/σ. Under substitution every other record's gradient is −1 and the differing
    record's +1 against −1; under zero-out (add/remove for balls-in-bins) every other record's gradient
    is 0 and the differing record's +1 against a zero record. Either way, after removing the known sum
    of the others, one epoch's k outputs are P = (1/k)Σ_t N(μe_t, I_k) against Q = N(0, I_k), whatever
    the permutation (shuffle) or the allocation (balls-in-bins). The maximum M = max_t y_t is a
    post-processing, so (law of M under P, law under Q) is dominated by the mechanism's pair, and so
    are its E-fold products.

    Q[M <= m] = Φ(m)^k, P[M <= m] = Φ(m)^(k−1)·Φ(m − μ); the loss ℓ(m) = log(((k−1)Φ(m−μ)/Φ(m) +
    e^{μm − μ²/2})/k) is increasing (Φ is log-concave). Returns [P vs Q, Q vs P]: both are realisable
    (swap the datasets), so both directions' lower ends are lower bounds.

    ``run`` = r < k: an epoch cut short after its first r batches (a run's last, partial epoch). The
    record is in one of them with probability p = r/k: Q[M <= m] = Φ(m)^r and P[M <= m] = (1 − p)Φ(m)^r
    + pΦ(m)^(r−1)Φ(m − μ), loss log(1 − p + p·g(m)) with g the r-batch epoch's likelihood ratio above
    (increasing); r = 1 is the Poisson-subsampled Gaussian at rate 1/k.
    """
    k = int(batches)
    if k < 1:
        raise ValueError("batches must be at least 1")
    r = k if run is None else int(run)
    if not 1 <= r <= k:
        raise ValueError("run must be between 1 and batches")
    if r < k:
        return _max_statistic_pair(mu, r, r / k)
    if k == 1:
        from .mechanisms import gaussian

        return gaussian(mu)
    return _max_statistic_pair(mu, k, 1.0)


def _max_statistic_pair(mu: float, k: int, p: float) -> list[Direction]:
    """The max statistic of k batch outputs when the record is in one of them with probability p (1: a
    whole epoch); see :func:`max_statistic`."""
    log_k = float(np.log(k))
    log_k1 = float(np.log(k - 1)) if k > 1 else -np.inf
    log_1mp = float(np.log1p(-p)) if p < 1 else -np.inf
    log_p = float(np.log(p))

    def _loss_terms(m):
        l1, e1 = _log_ndtr_err(m - mu)
        l0, e0 = _log_ndtr_err(m)
        with np.errstate(all="ignore"):
            a = log_k1 + l1 - l0
            bb = mu * m - mu * mu / 2
            full = np.logaddexp(a, bb) - log_k  # the k-batch epoch's log likelihood ratio
            err = e0 + e1 + 8 * _U * (np.abs(l1) + np.abs(l0) + np.abs(mu * m) + mu * mu / 2 + log_k + 1.0)
            if p < 1:
                val = np.logaddexp(log_1mp, log_p + full)
                err = err + 8 * _U * (np.abs(val) + np.abs(full) + abs(log_p) + abs(log_1mp) + 1.0)
            else:
                val = full
        return l0, l1, a, bb, full, val, err

    def loss(m):
        t = _loss_terms(np.asarray(m, float))
        return t[5], t[6]

    def loss_d(m):
        m = np.asarray(m, float)
        l0, l1, a, bb, full, val, err = _loss_terms(m)
        with np.errstate(all="ignore"):
            lphi = -0.5 * np.log(2 * np.pi)
            lam1 = np.exp(lphi - 0.5 * (m - mu) ** 2 - l1)  # φ/Φ at m − μ
            lam0 = np.exp(lphi - 0.5 * m * m - l0)
            wa = special.expit(a - bb)
            der = wa * (lam1 - lam0) + (1 - wa) * mu
            if p < 1:
                der = der * np.exp(log_p + full - val)
        return val, err, der

    def dloss(m):
        return loss_d(m)[2]

    def tails(m):
        m = np.asarray(m, float)
        l1, e1 = _log_ndtr_err(m - mu)
        l0, e0 = _log_ndtr_err(m)
        with np.errstate(all="ignore"):
            ep = ((k - 1) * l0 if k > 1 else 0.0) + l1  # (one batch: Φ(m)^0 = 1, also where Φ(m) = 0)
            eq = k * l0
            # The exponents are sums of k logs, each known to within its own (relative) error: their
            # errors add, plus the sum's rounding — relative, so tiny upper tails keep tiny errors.
            e_ep = (k - 1) * e0 + e1 + (k + 2) * _U * np.abs(ep)
            e_eq = k * e0 + (k + 2) * _U * np.abs(eq)
            fp, fq = np.exp(ep), np.exp(eq)
            sp, sq = -np.expm1(ep), -np.expm1(eq)
            efp = fp * np.expm1(np.minimum(e_ep, 700.0)) + 2 * _U * fp
            efq = fq * np.expm1(np.minimum(e_eq, 700.0)) + 2 * _U * fq
            esp = np.exp(np.minimum(ep + e_ep, 0.0)) * e_ep + 2 * _U * sp
            esq = np.exp(np.minimum(eq + e_eq, 0.0)) * e_eq + 2 * _U * sq
            fp = np.where(np.isnan(fp), 0.0, fp)
            fq = np.where(np.isnan(fq), 0.0, fq)
            if p < 1:
                # P is the mixture (1 − p)·Q + p·(the k-batch epoch's P): tails and their errors mix.
                fp, sp = (1 - p) * fq + p * fp, (1 - p) * sq + p * sp
                efp = (1 - p) * efq + p * efp + 4 * _U * fp
                esp = (1 - p) * esq + p * esp + 4 * _U * sp
        fin = np.isfinite(m)
        return (
            fp,
            fq,
            sp,
            sq,
            np.where(fin, np.minimum(efp, 1.0), 0.0),
            np.where(fin, np.minimum(efq, 1.0), 0.0),
            np.where(fin, np.minimum(esp, 1.0), 0.0),
            np.where(fin, np.minimum(esq, 1.0), 0.0),
        )

    z = float(special.ndtri(1 - 1 / (2 * k))) if k > 1 else 0.0
    x_range = (z - 8.0, z + mu + 12.0)
    # ℓ(−∞) is log(1 − p) for a partial epoch, but the mass near it is negligible (it takes every output
    # far below 0): the support is reported open, so that the grid starts where the mass does.
    lo = log_1mp
    d = monotone_direction(loss, dloss, tails, x_range, lo=lo, hi=np.inf, loss_d=loss_d, open_lo=True)
    s = monotone_direction(loss, dloss, tails, x_range, lo=lo, hi=np.inf, swap=True, loss_d=loss_d, open_lo=True)
    return [d, s]
