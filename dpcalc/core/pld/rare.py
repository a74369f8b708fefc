"""A few Poisson-subsampled Gaussian steps whose rare large losses carry δ: bounds through one step.

Where q and σ are small and δ tiny, δ comes from single steps' rare large
losses, while the rest of every step's loss is a bulk within about q of 0:
the composition is then one step's exact curve δ₁ (:mod:`.exact`) taken T
times over, to within the bulk's width. No grid is built. With L the remove
direction's loss (X ~ P = (1 − q)N(0, σ²) + qN(1, σ²) against Q = N(0, σ²)),
c = log(1/(1 − q)) (every loss is at least −c), split each step at a loss
a > 0 into its bulk B (L <= a) and tail J (L > a, mass ι_a). Then, with the
measures composed (B + J)^{*T} = Σ_k C(T, k)·B^{*(T−k)} * J^{*k} and δ linear
in the measure:

* **upper** — for ε >= T·a the term k = 0 is 0; the terms k = 1 are at most
  T·δ₁(ε − (T − 1)a) (the other steps' losses are at most a each, their mass
  at most 1, and J is part of the step's law); a term k >= 2 is at most the
  mass where its k tail losses sum past y_k = ε − (T − k)a, so one of them is
  past y_k/k: C(T, k)·k·ι_a^{k−1}·P[L > max(y_k/k, a)]. So

      δ_T(ε) <= T·δ₁(ε − (T − 1)a) + R(ε),  R = Σ_{k>=2} C(T, k)·k·ι_a^{k−1}·P[L > max(y_k/k, a)].

  The upper end is ε₁⁺(δ(1 − θ)/T) + (T − 1)a where R is at most θ·δ there
  (ε₁⁺ the one-step route's certified upper end), and at least T·a and T·c:
  the add direction's loss is at most c, so its δ is 0 from T·c on.
* **lower** — the terms with exactly one step in the tail J'' = {L > ε''},
  ε'' = ε + (T − 1)c, and the others' losses at least −c each: δ_T(ε) >=
  T·(1 − ι'')^{T−1}·δ₁(ε''), ι'' = P[L > ε''] (the terms are disjoint in
  which step is the tail's, and every other term is non-negative). The lower
  end is ε₁⁻(δ*) − (T − 1)c with δ* = δ/(T(1 − (T − 1)ι₀)), ι₀ = P[L > x₀]
  for an x₀ at most ε₁⁻(δ*) (checked; Bernoulli: (1 − ι)^{T−1} >= 1 − (T − 1)ι).

Both ends are certified for every input; the interval is as wide as the bulk
moves ε ((T − 1)(a + c)) plus what θ and ι₀ move it, which is narrow only
where single steps' rare losses carry δ. The route answers where its interval
meets the width asked for (and R is within θ·δ); elsewhere the PLD engine
does. Tail probabilities are taken in log space from the normal's log tail
with margins far above their round-off (they enter R and ι only, where a
relative error of 1e-9 moves nothing that is printed).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from . import exact

__all__ = ["interval", "MAX_STEPS", "MAX_THETA", "EDGES"]

_U = float(np.finfo(float).eps)

#: Releases the route is tried for (its union bound R grows like C(T, k)).
MAX_STEPS = 1000
#: The paths with two or more tail steps may take at most this share θ of δ (the upper end reads δ₁
#: at δ(1 − θ)/T, θ their bound R over δ).
MAX_THETA = 0.5
#: The route is tried where T·ι_a, the steps' expected number in the tail beyond the largest edge a, is
#: at most this (see :func:`_worth_trying`): the bulk below a is then narrow by construction, and the
#: paths with several tail steps a small share of δ.
GATE_TAIL = 0.05
#: The bulk's edge a, tried in turn: the upper end moves by (T − 1)a, these shares of the width asked for.
EDGES = (1.0 / 1024, 1.0 / 64, 1.0 / 8)
#: Relative margin on logs of tail probabilities (far above their round-off).
_MARGIN = 1e-9
#: Terms with up to this many tail steps are summed from the tail put on a geometric grid of ratio
#: GRID_RATIO (:func:`_rest_up`); the rest are bounded by their mass.
JUMP_TERMS = 6
GRID_RATIO = 1.02
#: Smallest δ the route answers (its sums are in doubles, products below 1e-308 dropped and counted).
MIN_DELTA = 1e-250


def _log_sf(z: np.ndarray, up: bool) -> np.ndarray:
    """A bound (upper if ``up``, else lower) on log Φ̄(z); no underflow: ½·erfcx(z/√2)·e^{−z²/2} in logs
    for z >= 1."""
    z = np.asarray(z, float)
    with np.errstate(all="ignore"):
        tail = np.log(0.5 * special.erfcx(z / math.sqrt(2.0))) - 0.5 * z * z
        near = np.log(special.ndtr(-z))
        v = np.where(z >= 1.0, tail, near)
    m = _MARGIN * (1.0 + np.abs(v))
    return v + m if up else v - m


def _log_loss_sf(q: float, sigma: float, ell: np.ndarray, up: bool = True) -> np.ndarray:
    """A bound (upper if ``up``, else lower) on log P[L > ℓ] (ℓ > 0) for the remove direction: L > ℓ iff
    X > x_ℓ = 1/2 + σ²·log(1 + (e^ℓ − 1)/q), and P[X > x] = (1 − q)Φ̄(x/σ) + qΦ̄((x − 1)/σ)."""
    ell = np.asarray(ell, float)
    with np.errstate(all="ignore"):
        u = ell + np.log(-np.expm1(-ell)) - math.log(q)  # log((e^ℓ − 1)/q)
        x = 0.5 + sigma * sigma * np.logaddexp(0.0, u)
        x = x - 1e-12 * (1.0 + np.abs(x)) if up else x + 1e-12 * (1.0 + np.abs(x))  # the tail's safe side
        out = np.logaddexp(math.log1p(-q) + _log_sf(x / sigma, up), math.log(q) + _log_sf((x - 1.0) / sigma, up))
    m = _MARGIN * (1.0 + np.abs(out))
    # (Called with ℓ > 0 only; at ℓ <= 0 the trivial bounds log 1 and log 0.)
    return np.where(ell > 0, out + m if up else out - m, 0.0 if up else -np.inf)


def _rest_up(q: float, sigma: float, t: int, a: float, eps: float) -> float:
    """An upper bound on R(ε), the terms with k >= 2 tail steps (see the module docstring).

    The tail J (losses above a) is put on the geometric grid g_i = a·r^i (i <= N, g_N >= ε), each bin
    (g_{i−1}, g_i]'s mass at its right end and the mass above g_N at +∞; k-fold sums of those points
    are rounded up to the grid again (so each computed sum is at least the true one, and the mass of
    "sum > y" only grows). Terms k <= JUMP_TERMS are summed from these; the rest are at most
    C(T, k)·ι_a^k, in all at most (Tι_a)^{K+1}/(K+1)!/(1 − Tι_a/(K + 2))."""
    n = int(math.ceil(math.log(eps / a) / math.log(GRID_RATIO))) + 1
    g = a * GRID_RATIO ** np.arange(n + 1, dtype=float)
    g[-1] = max(g[-1], eps * (1.0 + 8 * _U))
    s_up = np.exp(_log_loss_sf(q, sigma, g, up=True))
    s_lo = np.exp(_log_loss_sf(q, sigma, g, up=False))
    iota = float(s_up[0])
    # Bin masses (upper bounds): (g_{i−1}, g_i] at g_i for i = 1..N; above g_N at +∞ (index N + 1).
    m = np.zeros(n + 2)
    m[1 : n + 1] = np.maximum(s_up[:-1] - s_lo[1:], 0.0)
    m[n + 1] = s_up[-1]
    pts = np.concatenate([g, [np.inf]])
    off = _offsets(n)
    kmax = min(t, JUMP_TERMS)
    rest = 0.0
    dist = m
    for k in range(2, kmax + 1):
        dist = _convolve_up(dist, m, off)
        y = (eps - (t - k) * a) * (1.0 - 8 * _U)
        over = float(np.sum(dist[np.flatnonzero(pts > y)]))
        # (Products below the smallest double are lost: at most (n + 2)^2 of them per stage.)
        over += (n + 2) ** 2 * k * 2.3e-308
        rest += float(math.comb(t, k)) * over * (1.0 + 1e-12)
    if t > kmax:
        x = t * iota
        if not x < kmax + 2:
            return math.inf
        rest += x ** (kmax + 1) / math.factorial(kmax + 1) / (1.0 - x / (kmax + 2)) * (1.0 + 1e-12)
    return rest * (1.0 + 1e-9)


def _offsets(n: int) -> np.ndarray:
    """off[d] for d = 0..n: the grid points a·r^i and a·r^{i−d} sum to at most the point i + off[d]
    (r = GRID_RATIO; r^off >= (1 + r^{−d})·(1 + 1e-12), which covers the grid's own rounding, a few
    ulps of a·r^i). 1 from about d = log(1/(r − 1))/log r on."""
    r = GRID_RATIO
    d = np.arange(n + 1, dtype=float)
    need = np.log1p(r**-d) + 1e-12
    off = np.ceil(need / math.log(r)).astype(np.int64)
    short = r ** off.astype(float) < (1.0 + r**-d) * (1.0 + 1e-12)  # (the ceiling's own rounding)
    return np.maximum(off + short, 1)


def _convolve_up(dist: np.ndarray, m: np.ndarray, off: np.ndarray) -> np.ndarray:
    """The law of the sum of two independent losses on the grid (points 0..N, then +∞ at N + 1), each sum
    put on the first grid point at or above it (:func:`_offsets`; +∞ past g_N): the pair (i, i − d) lands
    on i + off[d]. Pairs further apart than where off reaches 1 land on i + 1, summed by prefix sums."""
    n = dist.size - 2
    out = np.zeros(n + 2)
    f, w = dist[: n + 1], m[: n + 1]
    far = int(np.argmax(off == 1)) if np.any(off == 1) else n + 1
    with np.errstate(under="ignore"):
        for d in range(min(far, n + 1)):
            v = f[d:] * w[: n + 1 - d]  # pairs (i, i − d), i = d..N
            if d:
                v += f[: n + 1 - d] * w[d:]
            start = d + int(off[d])  # where i = d lands; those with i + off[d] > N go to +∞
            cnt = max(n + 1 - start, 0)
            out[start : start + cnt] += v[:cnt]
            out[n + 1] += v[cnt:].sum()
        if far <= n:
            # d >= far: off = 1, so pair (i, j), j <= i − far, lands on i + 1.
            cw, cf = np.cumsum(w), np.cumsum(f)
            v = f[far:] * cw[: n + 1 - far] + w[far:] * cf[: n + 1 - far]
            out[far + 1 : n + 1] += v[:-1]
            out[n + 1] += float(v[-1])
        out[n + 1] += float(dist[n + 1] * np.sum(m)) + float(m[n + 1] * np.sum(dist[: n + 1]))
    return out


def _worth_trying(q: float, s: float, t: int, d: float, rel: float, abs_: float) -> bool:
    """A cheap look (microseconds, no certified evaluation) at whether the route can answer: from one
    step's ε at δ/T on a cheap curve, the width asked for w, and the tail beyond the largest edge
    a = w/(8(T − 1)) rare: T·ι_a at most GATE_TAIL. (A gate on the χ² divergence as the bulk's spread
    turned away small σ, where χ is the far tail's: q = 1.6e-11, σ = 0.125, 2 steps, δ = 3.7e-21 took
    the grids 40 s, and the route answers in 0.06 s.)"""
    mu = 1.0 / s
    log_d = math.log(d / t)
    x = exact._step_guess(mu, q, log_d, False)
    if not (math.isfinite(x) and x > 0):
        return False
    e_g = math.log1p(q * math.expm1(min(x, 700.0))) if x < 700 else x + math.log(q)
    if not e_g > 0:
        return False
    width = max(rel * e_g, abs_)
    a = EDGES[-1] * width / (t - 1)
    return t * math.exp(float(_log_loss_sf(q, s, np.array([a]))[0])) <= GATE_TAIL


def interval(q, sigma, steps, delta, rel: float, abs_: float):
    """Per row (Poisson sampling, 2 <= T <= MAX_STEPS, q < 1): certified (lower, upper) on ε(δ) of T
    subsampled Gaussian steps through one step's exact curve, and whether the route answers there
    (both ends found, the interval within the width asked for). Rows it does not try, or where no
    edge a and share θ bound the paths with two or more tail steps, have NaN ends."""
    q, sigma, steps, delta = (np.atleast_1d(np.asarray(v, float)) for v in np.broadcast_arrays(q, sigma, steps, delta))
    n = q.size
    lo, up = np.full(n, np.nan), np.full(n, np.nan)
    ok = np.zeros(n, dtype=bool)
    for i in range(n):
        qq, ss, dd = float(q[i]), float(sigma[i]), float(delta[i])
        t = int(steps[i])
        if not (0 < qq < 1 and 2 <= t <= MAX_STEPS and MIN_DELTA <= dd < 1 and ss > 0):
            continue
        ends = _one(qq, ss, t, dd, rel, abs_)
        if ends is not None:
            lo[i], up[i] = ends
            ok[i] = ends[1] - ends[0] <= max(rel * ends[1], abs_) * (1 + 1e-9)
    return lo, up, ok


def _one(q: float, s: float, t: int, d: float, rel: float, abs_: float):
    """(lower, upper) for one row, or None (see :func:`interval`)."""

    def step_up(theta):  # the remove direction's certified upper end at δ(1 − θ)/T
        return float(exact.remove_step_interval(q, s, d * (1.0 - theta) / t * (1.0 - 8 * _U))[1][0])

    if not _worth_trying(q, s, t, d, rel, abs_):
        return None
    # One step's ε at δ/T: where ε lands, so how wide an answer may be.
    e_r = step_up(0.0)
    if not (math.isfinite(e_r) and e_r > 0):
        return None
    width = max(rel * e_r, abs_)
    c_up = -math.log1p(-q) * (1.0 + 8 * _U) + 5e-324  # at least log(1/(1 − q))
    # Lower end: ι₀ at x₀ = e_r/2 (checked to be below the one-step lower end found).
    x0 = 0.5 * e_r
    share = (t - 1) * math.exp(float(_log_loss_sf(q, s, np.array([x0]))[0])) * (1.0 + 1e-9)
    if not share < 0.5:
        return None
    d_star = d / t / (1.0 - share) * (1.0 + 16 * _U)
    e1 = float(exact.remove_step_interval(q, s, d_star)[0][0]) if d_star < 1 else 0.0
    # ε'' = (the lower end) + (T − 1)c lies in [x₀, e1] wherever the lower end is at least x₀ (so ι'' <= ι₀).
    eps_lo = 0.0
    if e1 > (t - 1) * c_up:
        eps_lo = (e1 - (t - 1) * c_up) * (1.0 - 8 * _U)
        if not eps_lo >= x0:
            eps_lo = 0.0
    # Upper end, per edge a: θ = R(ε₀)/δ at the first ε₀ = ε₁⁺(δ/T) + (T − 1)a (R falls as ε rises, and
    # is checked again where the upper end lands); the smallest upper end over the edges.
    best = math.inf
    for edge in EDGES:
        a = edge * width / (t - 1)
        if not t * math.exp(float(_log_loss_sf(q, s, np.array([a]))[0])) < JUMP_TERMS + 2:
            continue
        e0 = _shifted(e_r, t, a, c_up)
        if not math.isfinite(e0):
            continue
        theta = _rest_up(q, s, t, a, e0) / d * (1.0 + 1e-9)
        if not theta < MAX_THETA:
            continue
        eps_up = _shifted(step_up(theta), t, a, c_up)
        if eps_up < best and _rest_up(q, s, t, a, eps_up) <= theta * d:
            best = eps_up
    if not math.isfinite(best):
        return None
    return min(eps_lo, best), best


def _shifted(e1: float, t: int, a: float, c_up: float) -> float:
    """The T-step upper end from the one-step one e1: e1 + (T − 1)a, and at least T·a and T·c, rounded up."""
    if not (math.isfinite(e1) and e1 > 0):
        return math.inf
    return max(e1 + (t - 1) * a, t * a, t * c_up) * (1.0 + 8 * _U)
