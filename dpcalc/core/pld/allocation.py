"""Balls-in-bins (random allocation): a dominating pair for one epoch, built in the convex order.

One epoch of balls-in-bins DP-SGD puts each record in one of the epoch's t batches, uniformly and
independently of the others. With the other records' contributions conditioned on (they are the same
on both sides; docs/sampling.md §3 shows the worst case is a gradient at the clipping norm in every
step, adaptivity included), an epoch is dominated, for add/remove (here the same as zero-out: no
other record moves) neighbours, by P = (1/t)Σ_i N(e_i/σ, I_t) against Q = N(0, I_t) and its swap
([FS25], [CGK+25]). Its likelihood ratio is the mean of t iid lognormals,

    L = (1/t) Σ_i W_i,    W_i = exp(Z_i/σ − 1/(2σ²)),  Z ~ N(0, I_t) under Q,   E_Q[L] = 1,

and both directions' δ are expectations of convex functions of L under Q:

    remove (P vs Q): δ(ε) = E_Q[(L − e^ε)₊],    add (Q vs P): δ(ε) = E_Q[(1 − e^ε·L)₊].

Composed over epochs (and with anything else) δ is E_Q of (c·L − e^ε)₊ or (1 − e^ε·c·L)₊, c >= 0 the
other factors — still convex in each epoch's L. So a law that dominates L in the *convex order*
dominates the epoch in both directions, composed with anything (the argument behind connect-the-dots,
[DKM+22]). This module builds such a law on a uniform grid, with every step a convex-order move:

1. **Spread** (mean-preserving): the mass m with mean μ that a law puts in [a, b] goes to a and b,
   (b·m − μ)/(b − a) and (μ − a·m)/(b − a). For convex g the chord is above g on [a, b].
2. **Tail to infinity**: the mass m with mean μ beyond c goes to c, and μ − c·m to an atom "at
   infinity" — for convex g with slope s at infinity, g(x) <= g(c) + s·(x − c). In the pair this is
   P-mass at loss +∞ (the remove direction's δ gains it; the add direction's g has slope 0 there).
3. **Floor**: the mass below f is spread onto 0 and f (a case of 1); Q-mass at L = 0 is add-direction
   loss +∞.
4. **Sums**: x ↦ E g(x + rest) is convex with the same slope at infinity as g, so independent terms
   can be replaced one at a time: sums of dominating laws dominate sums, their "infinity" amounts
   adding up (each weighted by the other terms' total mass, <= 1).
5. **At most one large draw**: each W is split at C_b into a body β (W <= C_b, mass 1 − p_b) and a
   tail τ. The epoch's sum is Σ_j C(t, j) β^{*(t−j)} * τ^{*j}; the terms j = 0, 1 are
   β^{*(t−1)} * (β + t·τ); the rest (j >= 2, Q-mass <= (t·p_b)²/2) goes to 0 (its Q-mass) and to
   infinity (its mean: E[W₁·1{j >= 2}] <= t·p_b·E[W·1{W > C_b}] + (t·p_b)²/2 per unit of L), by
   g(x) <= g(0) + s·x. So the t-fold convolution only ever convolves the light body; the heavy
   lognormal tail enters once, on the final grid.

β is spread onto a fine grid h; β^{*(t−1)} is taken by binary powering, each product convolved
directly (every entry a sum of nonnegative products: relative error at most (n + 1)u, carried as one
factor applied at the end), the grid coarsened 2:1 (a spread) as the sum's spread grows, and each
product trimmed to a window by 2 and 3 within a budget. Every mass is rounded up: the cells' masses
and partial means come from Φ with error bounds (:func:`.mechanisms._ndtr_pair`) at the exact cell
edges, and every operation is monotone in the masses, so overstated masses overstate every δ.

The result is a pair of atom :class:`.mechanisms.Direction`\\ s (remove, add) whose E-fold composition
the engine bounds like any other: its *upper* end is a certified upper bound on balls-in-bins' ε (its
lower end is only a lower bound on this dominating pair's).

References
----------
.. [FS25] V. Feldman, M. Shenfeld. Privacy amplification by random allocation. arXiv:2502.08202;
   Efficient privacy loss accounting for subsampling and random allocation, arXiv:2602.17284.
.. [CGK+25] L. Chua, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi, A. Sinha, C. Zhang. Balls-and-bins
   sampling for DP-SGD. AISTATS 2025, arXiv:2412.16802.
.. [DKM+22] V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar, P. Manurangsi. Connect the dots: tighter
   discrete approximations of privacy loss distributions. PETS 2022, arXiv:2207.04380.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from .mechanisms import Direction, _ndtr_pair

__all__ = ["random_allocation_gaussian", "AllocationTooLarge", "RESOLUTION"]

_U = float(np.finfo(float).eps)

#: Grid points per standard deviation of each partial sum (of W for the first grid): each coarsening
#: adds at most 1/(4·RESOLUTION²) of the sum's variance.
RESOLUTION = 64

#: Most grid points of the first grid (the body of one W): a coarser grid is taken where a heavy
#: lognormal (small σ) would need more at :data:`RESOLUTION` (the convolutions' cost is quadratic in it).
FIRST_WINDOW = 1 << 14

#: Most grid points of a partial sum's window, and of the final convolution's tail part.
MAX_WINDOW = 1 << 17
MAX_TAIL = 1 << 21

#: Most multiply-adds of one direct convolution (about a quarter of a second here): beyond it the
#: construction declines (:class:`AllocationTooLarge`) rather than run for minutes.
MAX_WORK = 3e8


class AllocationTooLarge(ValueError):
    """The grids this construction needs at these parameters are too large (the caller keeps the
    unamplified bound)."""


@dataclass
class _Sum:
    """A measure on the grid i·H (the window i0 … i0 + len(m) − 1), Q-mass at 0 (``zero``, outside
    the window) and the mean sent to infinity (``inf``, in units of the sum); the law of a sum of
    ``draws`` draws."""

    H: float
    i0: int
    m: np.ndarray
    zero: float = 0.0
    inf: float = 0.0
    draws: int = 1

    def mass(self) -> float:
        return float(np.sum(self.m)) * (1 + self.m.size * _U) + self.zero


def _log_edges(sigma: float, x: np.ndarray):
    """z = σ·log x + 1/(2σ) (W <= x ⟺ Z <= z) at grid points x >= 0, and a bound on its error."""
    with np.errstate(divide="ignore"):
        lx = np.log(x)
    z = sigma * lx + 0.5 / sigma
    dz = 8 * _U * (np.abs(sigma * lx) + 1.0 / sigma + 1.0)
    return np.where(x > 0, z, -np.inf), np.where(x > 0, dz, 0.0)


def _interval_mass(z, dz, shift: float):
    """Φ(z₂ − s) − Φ(z₁ − s) over consecutive edges (upper bounds on the exact cells' values, and
    nonnegative), from the smaller tail on each side."""
    zz = z - shift
    dd = dz + 2 * _U * (np.abs(z) + abs(shift))
    v, w, ev, ew = _ndtr_pair(zz, dd)
    lo_side = zz[1:] <= 0  # both edges at or below 0 (zz increasing): lower tails
    diff = np.where(lo_side, v[1:] - v[:-1], w[:-1] - w[1:])
    err = np.where(lo_side, ev[1:] + ev[:-1], ew[1:] + ew[:-1]) + 2 * _U * np.abs(diff)
    return np.maximum(diff, 0.0), err


def _cells(sigma: float, edges: np.ndarray):
    """Upper bounds on the Q-mass and on E[W·1{cell}] of each cell [edges_j, edges_{j+1}] of W."""
    z, dz = _log_edges(sigma, edges)
    m, em = _interval_mass(z, dz, 0.0)
    mu, emu = _interval_mass(z, dz, 1.0 / sigma)
    return m, em, mu, emu


def _spread(sigma: float, edges: np.ndarray, H: float):
    """The cells between consecutive ``edges`` (each inside one grid cell [kH, (k+1)H]) spread onto
    the grid: (first index, masses) — upper bounds on the exact spread's masses. Fewer than two edges
    (an empty range: at very large σ the tail above C_b can hold no grid point): no cells, a zero mass."""
    if edges.size < 2:
        return (int(np.floor(edges[0] / H)) if edges.size else 0), np.zeros(1)
    m, em, mu, emu = _cells(sigma, edges)
    k = np.floor(edges[:-1] / H).astype(np.int64)
    a = k * H
    with np.errstate(invalid="ignore"):
        wa = ((a + H) * m - mu + (a + H) * em + emu) / H * (1 + 8 * _U)
        wb = (mu - a * m + a * em + emu) / H * (1 + 8 * _U)
    cap = (m + em) * (1 + 2 * _U)
    wa = np.clip(np.nan_to_num(wa), 0.0, cap)
    wb = np.clip(np.nan_to_num(wb), 0.0, cap)
    k0 = int(k[0])
    n = int(k[-1]) - k0 + 2
    out = np.bincount(k - k0, weights=wa, minlength=n) + np.bincount(k - k0 + 1, weights=wb, minlength=n)
    return k0, out * (1 + 2 * _U)


#: Masses below this leave the window (to 0 and infinity, by g(x) <= g(0) + s·x): products of two stay
#: normal doubles (subnormal arithmetic is a hundred times slower, and loses relative precision).
TINY = 1e-150


def _flush(s: _Sum) -> _Sum:
    """Send the window's masses below :data:`TINY` to the 0-atom (their mass) and to infinity (their mean):
    a convex-order move. Products of what is left never underflow, except those of pairs below 1e-154 each
    — there are none — so the relative error bounds of the convolutions hold."""
    tiny = (s.m < TINY) & (s.m > 0)
    if np.any(tiny):
        x = (s.i0 + np.flatnonzero(tiny)) * s.H
        w = s.m[tiny]
        s.zero += float(np.sum(w)) * (1 + 4 * _U) + 1e-300
        s.inf += float(np.sum(w * x)) * (1 + 4 * _U) + 1e-300
        s.m = np.where(tiny, 0.0, s.m)
    return s


def _coarsen(s: _Sum) -> tuple[_Sum, float]:
    """The grid 2H: a mass at an odd point goes half to each neighbour (a spread). Relative error 3u."""
    m = s.m
    i0 = s.i0
    if i0 % 2:
        m = np.concatenate(([0.0], m))
        i0 -= 1
    if m.size % 2 == 0:
        m = np.concatenate((m, [0.0]))
    new = m[0::2].copy()
    half = 0.5 * m[1::2]
    new[:-1] += half
    new[1:] += half
    return _flush(_Sum(2 * s.H, i0 // 2, new, s.zero, s.inf, s.draws)), 3 * _U


def _trim(s: _Sum, budget_zero: float, budget_inf: float) -> tuple[_Sum, float]:
    """Drop the window's far ends within the budgets: the mass below the floor spread onto 0 and the
    floor (at most ``budget_zero`` of it, all of it at most, goes to 0), and above the cap the mass
    moved down onto it with the excess mean (at most ``budget_inf``) sent to infinity."""
    m, H, i0 = s.m, s.H, s.i0
    n = m.size
    g = (n + 2) * _U
    cm = np.cumsum(m)
    f = int(np.searchsorted(cm, budget_zero / (1 + g), side="right"))  # m[:f] sums to <= budget
    f = min(f, n - 1)
    zero, inf = s.zero, s.inf
    new = m.copy()
    if f > 0:
        x = (i0 + np.arange(f)).astype(float)
        xf = float(i0 + f)
        below = m[:f]
        to_f = float(np.sum(below * x)) / xf * (1 + g)
        to_0 = float(np.sum(below * ((xf - x) / xf))) * (1 + g)
        new[:f] = 0.0
        new[f] += to_f
        zero += to_0
    # excess(c) = Σ_{i>c} m_i (x_i − x_c) = H Σ_{j>c} Σ_{i>=j} m_i: nonnegative sums only
    ge = np.cumsum(new[::-1])[::-1]  # Σ_{i>=j}
    ex = np.concatenate((np.cumsum(ge[::-1])[::-1][1:], [0.0])) * H  # at c: Σ_{j>c} ge_j
    c = int(np.searchsorted(-ex, -budget_inf / (1 + g), side="left"))  # first c with ex <= budget
    c = max(c, f)
    if c < n - 1:
        inf += float(ex[c]) * (1 + g)
        new[c] += float(ge[c + 1]) * (1 + g)
        new = new[: c + 1]
    new = new[f:]
    return _flush(_Sum(H, i0 + f, new, zero, inf, s.draws)), g


def _same_grid(a: _Sum, b: _Sum, rel: list) -> tuple[_Sum, _Sum]:
    while a.H < b.H:
        a, r = _coarsen(a)
        rel.append(r)
    while b.H < a.H:
        b, r = _coarsen(b)
        rel.append(r)
    return a, b


def _mul(a: _Sum, b: _Sum, rel: list, bz: float, bi: float) -> _Sum:
    """The law of the sum of independent draws from a and b (a window, its 0-atom, its infinity),
    trimmed within budgets ``bz``, ``bi`` per draw it sums (a partial sum of n draws stands for n/t of
    the epoch's sum, so each level of the powering spends about one budget in all)."""
    a, b = _same_grid(a, b, rel)
    out, g = _trim(_combine(a, b, _split_conv(a.m, b.m, rel)), bz * (a.draws + b.draws), bi * (a.draws + b.draws))
    rel.append(g)
    return out


def _combine(a: _Sum, b: _Sum, conv: np.ndarray) -> _Sum:
    """The law of a + b (same grid) from ``conv``, the convolution of their windows (starting at
    a.i0 + b.i0): each one's 0-atom times the other's window sits at that window's positions, the
    0-atoms' product at 0, and the amounts sent to infinity add, each times the other's whole mass."""
    out = _Sum(a.H, a.i0 + b.i0, conv, a.zero * b.zero * (1 + 2 * _U), 0.0, a.draws + b.draws)
    for z, o in ((a.zero, b), (b.zero, a)):
        if z > 0:
            _place(out, o.i0, z * o.m)
    out.inf = a.inf * b.mass() + b.inf * a.mass()
    return out


#: A window's top part holding at most this much mass is convolved by FFT (its rounding is then
#: relative to that mass); the rest directly.
SPLIT_MASS = 1e-9


#: Longest operand of one np.convolve call: its inner products (OpenBLAS ddot) then stay below the length
#: at which OpenBLAS starts threads, which stall for seconds on a busy machine.
CHUNK = 8192


def _direct(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a * b directly, the shorter operand cut into pieces of at most :data:`CHUNK` (the same sums,
    nonnegative terms only; each entry adds at most len/CHUNK partial sums more)."""
    if a.size < b.size:
        a, b = b, a
    if b.size <= CHUNK:
        if a.size <= CHUNK:
            return np.convolve(a, b)
        out = np.zeros(a.size + b.size - 1)
        for i in range(0, a.size, CHUNK):
            piece = np.convolve(a[i : i + CHUNK], b)
            out[i : i + piece.size] += piece
        return out
    out = np.zeros(a.size + b.size - 1)
    for j in range(0, b.size, CHUNK):
        piece = _direct(a, b[j : j + CHUNK])
        out[j : j + piece.size] += piece
    return out


def _split_conv(a: np.ndarray, b: np.ndarray, rel: list) -> np.ndarray:
    """a * b for nonnegative a, b, every entry an upper bound. Each is split where at most
    :data:`SPLIT_MASS` lies above: the two heavy cores are convolved directly (relative error
    (n + 2)u, appended to ``rel``), the products with a light top part by FFT, each entry raised by
    the FFT's error bound (relative to the light part's ℓ₂ norm, so small beside every budget)."""
    n = a.size + b.size - 1
    if min(a.size, b.size) < 2048:
        if float(a.size) * float(b.size) > MAX_WORK:
            raise AllocationTooLarge("convolution")
        rel.append((min(a.size, b.size) + 2 + max(a.size, b.size) // CHUNK) * _U)
        return _direct(a, b)

    def cut(v):
        top = np.cumsum(v[::-1])
        k = int(np.searchsorted(top, SPLIT_MASS, side="right"))  # v[-k:] sums to <= SPLIT_MASS
        return v.size - k

    ka, kb = cut(a), cut(b)
    if float(ka) * float(kb) > MAX_WORK:
        raise AllocationTooLarge("convolution")
    out = np.zeros(n)
    core = _direct(a[:ka], b[:kb])
    rel.append((min(ka, kb) + 2 + (ka + kb) // CHUNK) * _U)
    out[: core.size] += core
    # a_core * b_top + a_top * b (b whole)
    if kb < b.size:
        bt = np.zeros(b.size)
        bt[kb:] = b[kb:]
        out += _fft_conv(np.concatenate((a[:ka], np.zeros(a.size - ka))), bt)
    if ka < a.size:
        at = np.zeros(a.size)
        at[ka:] = a[ka:]
        out += _fft_conv(at, b)
    rel.append(2 * _U)
    return out


def _sd_of(s: _Sum) -> float:
    x = (s.i0 + np.arange(s.m.size)) * s.H
    tot = float(np.sum(s.m))
    mean = float(np.sum(s.m * x)) / tot
    return float(np.sqrt(max(float(np.sum(s.m * (x - mean) ** 2)) / tot, 0.0)))


def _refine(s: _Sum, rel: list, rho: float) -> _Sum:
    """Coarsen while the grid stays within 1/ρ of the sum's standard deviation."""
    sd = _sd_of(s)
    while 2 * s.H <= sd / rho:
        s, r = _coarsen(s)
        rel.append(r)
    return s


def _power(base: _Sum, n: int, rel: list, bz: float, bi: float, rho: float) -> _Sum:
    """base^{*n} (n >= 1) by binary powering, trimmed and coarsened as it grows."""
    result = None
    while True:
        if n & 1:
            result = base if result is None else _refine(_mul(result, base, rel, bz, bi), rel, rho)
        n >>= 1
        if not n:
            return result
        base = _refine(_mul(base, base, rel, bz, bi), rel, rho)
        if base.m.size > MAX_WINDOW:
            raise AllocationTooLarge("partial sum window")


def _z_for(target: float) -> float:
    """The z with Φ(−z) = target (clipped to [0, 38])."""
    return float(np.clip(-special.ndtri(max(min(target, 0.5), 1e-300)), 0.0, 38.0))


def random_allocation_gaussian(sigma: float, batches: int, budget: float, rho: float = RESOLUTION) -> list[Direction]:
    """The pair (remove, add) dominating one balls-in-bins epoch of t = ``batches`` Gaussian steps of
    noise multiplier σ, as atoms. ``budget`` bounds (roughly) the δ the construction's tails add per
    epoch; a smaller one costs larger grids. Raises :class:`AllocationTooLarge` where the grids would
    not fit (small σ with many batches and a tiny budget)."""
    s = float(sigma)
    t = int(batches)
    if not s > 0 or t < 1:
        raise ValueError("need sigma > 0 and batches >= 1")
    b = float(budget)
    inv = 1.0 / s
    sd_w = float(np.sqrt(np.expm1(inv * inv)))

    # Body/tail split: the j >= 2 part costs <= (t p_b)²/2 + t p_b E[W 1{W > C_b}] per epoch.
    z_b = inv + 1.0  # the smallest split that fits: the body's window (and the convolutions) stay short
    while True:
        pb_hi = float(special.ndtr(-z_b)) * (1 + 1e-10) + 1e-300
        mt_hi = float(special.ndtr(inv - z_b)) * (1 + 1e-10) + 1e-300
        if (t * pb_hi) ** 2 / 2 + t * pb_hi * mt_hi <= b / 4 or z_b >= 38:
            break
        z_b += 0.25
    c_b = float(np.exp((z_b - 0.5 * inv) * inv))
    # Tail cap: beyond C_max the J = 1 part sends E[W·1{W > C_max}] <= budget/4 (per unit of L) to infinity.
    z_max = max(_z_for(b / 4.0) + inv, z_b)
    c_max = float(np.exp((z_max - 0.5 * inv) * inv))

    rel: list[float] = []
    h = 2.0 ** np.floor(np.log2(sd_w / rho))
    if c_b / h > FIRST_WINDOW:
        h = 2.0 ** np.ceil(np.log2(c_b / FIRST_WINDOW))
    # The final grid is about the sum's spread over ρ (at least h): a tail grid far beyond what fits is
    # declined now, before the powering.
    if (c_max - c_b) / max(h, sd_w * np.sqrt(max(t - 1, 1)) / (4 * rho)) > 4 * MAX_TAIL:
        raise AllocationTooLarge("tail grid")
    n_b = int(np.ceil(c_b / h))
    c_b = n_b * h  # exact grid point; p_b, E[W 1{W > C_b}] recomputed below with bounds
    k0, body = _spread(s, np.arange(n_b + 1) * h, h)
    beta = _Sum(h, k0, body)
    # the truncation budgets, per draw of a partial sum (about 2 log2 t + 1 levels of trims per epoch;
    # bi in units of the sum: L = S/t)
    levels = 2.0 * np.log2(max(t, 2)) + 2.0
    bz = b / 4.0 / levels / t
    bi = b / 4.0 / levels

    beta, r = _trim(beta, bz, bi)  # one draw
    rel.append(r)
    # the other t − 1 draws' body sum (t = 1: the unit mass at 0, on the window [0, 0])
    rest = _Sum(h, 0, np.ones(1)) if t == 1 else _power(beta, t - 1, rel, bz, bi, rho)
    H = rest.H
    beta_h = beta
    while beta_h.H < H:
        beta_h, r = _coarsen(beta_h)
        rel.append(r)

    # the tail τ on the grid H, over [C_b, C_max], then beyond C_max: mass at C_max and the excess mean
    n_hi = int(np.ceil(c_max / H))
    if n_hi - int(np.floor(c_b / H)) > MAX_TAIL:
        raise AllocationTooLarge("tail grid")
    grid = np.arange(int(np.floor(c_b / H)) + 1, n_hi + 1) * H
    edges = np.concatenate(([c_b], grid[grid > c_b]))
    c_max = float(edges[-1])
    t0, tau = _spread(s, edges, H)
    zt, dzt = _log_edges(s, np.array([c_max, np.inf]))
    m_top, em_top = _interval_mass(zt, dzt, 0.0)
    mu_top, emu_top = _interval_mass(zt, dzt, inv)
    top_idx = int(round(c_max / H)) - t0
    if top_idx >= tau.size:
        tau = np.concatenate((tau, np.zeros(top_idx + 1 - tau.size)))
    tau[top_idx] += float(m_top[0] + em_top[0]) * (1 + 2 * _U)
    inf_top = float(mu_top[0] + emu_top[0]) * (1 + 2 * _U)  # E[W 1{W > C_max}] bounds the excess
    # X = β + t·τ on the grid H (β's window ends at C_b, τ's starts at or below it): the last draw, with
    # β's own trims and the tail beyond C_max (t times: X's tail weight t·(1 − p_b)^{t−1} <= t)
    lo = min(beta_h.i0, t0)
    hi = max(beta_h.i0 + beta_h.m.size, t0 + tau.size)
    X = np.zeros(hi - lo)
    X[beta_h.i0 - lo : beta_h.i0 - lo + beta_h.m.size] += beta_h.m
    X[t0 - lo : t0 - lo + tau.size] += t * tau
    last = _Sum(H, lo, X, beta_h.zero, beta_h.inf + t * inf_top)
    # the j >= 2 remainder: Q-mass and mean (per unit of L), from bounds on p_b and E[W 1{W > C_b}]
    zb, dzb = _log_edges(s, np.array([c_b, np.inf]))
    pb, epb = _interval_mass(zb, dzb, 0.0)
    mt, emt = _interval_mass(zb, dzb, inv)
    tp = t * float(pb[0] + epb[0]) * (1 + 2 * _U)
    mt_hi = float(mt[0] + emt[0]) * (1 + 2 * _U)
    j2_zero = tp * tp / 2.0 * (1 + 4 * _U)
    j2_inf = (tp * mt_hi + tp * tp / 2.0) * (1 + 4 * _U)

    # S = rest + X: rest * β_H directly, rest * (t·τ) by FFT (its errors are relative to the tail's
    # tiny mass, and it has no underflow to fear); both 0-atoms and infinities as for any sum.
    parts = [(rest.i0 + beta_h.i0, _direct(rest.m, beta_h.m))]
    rel.append((min(rest.m.size, beta_h.m.size) + 2 + (rest.m.size + beta_h.m.size) // CHUNK) * _U)
    parts.append((rest.i0 + t0, _fft_conv(rest.m, t * tau)))
    j0 = rest.i0 + lo
    conv = np.zeros(max(o + a.size for o, a in parts) - j0)
    for o, a in parts:
        conv[o - j0 : o - j0 + a.size] += a
    rel.append(2 * _U)
    S = _combine(rest, last, conv)

    factor = float(np.prod(1.0 + np.asarray(rel, float))) * (1 + 8 * _U)
    q = np.maximum(S.m, 0.0) * factor
    keep = q > 0
    idx = (S.i0 + np.flatnonzero(keep)).astype(float)
    q = q[keep]
    x = idx * H / t  # L at the atoms
    zero_q = (S.zero * factor + j2_zero) * (1 + 2 * _U)
    p_inf = (S.inf / t * factor + j2_inf) * (1 + 4 * _U)
    pos = x > 0
    xl = x[pos]
    ell = np.log(xl)
    p_rm = xl * q[pos] * (1 + 4 * _U)
    zero_q += float(np.sum(q[~pos]))
    remove = _direction(ell, p_rm, q[pos], min(p_inf, 1.0))
    add = _direction(-ell, q[pos], p_rm, min(zero_q, 1.0))
    return [remove, add]


def _place(s: _Sum, start: int, w: np.ndarray) -> None:
    """Add masses w at positions start, start + 1, … to s, in place: those below the window's start
    are spread onto 0 and the start (a spread), the rest added in (the window grows at the top)."""
    pos = start + np.arange(w.size)
    g = (4 * w.size + 4) * _U
    lo = pos < s.i0
    if np.any(lo):
        j0 = float(s.i0)
        s.m[0] += float(np.sum(w[lo] * pos[lo])) / j0 * (1 + g)
        s.zero += float(np.sum(w[lo] * ((j0 - pos[lo]) / j0))) * (1 + g)
    hi = ~lo
    if np.any(hi):
        off = int(pos[hi][0]) - s.i0
        end = off + int(hi.sum())
        if end > s.m.size:
            s.m = np.concatenate((s.m, np.zeros(end - s.m.size)))
        s.m[off:end] += w[hi] * (1 + 2 * _U)


def _fft_conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Convolution by FFT with every entry raised by a bound on its absolute error (and negatives to
    0): ‖error‖_∞ <= ‖error‖₂ <= c·u·log₂(n)·‖a‖₂‖b‖₂ for the radix-2 FFT, with c = 10 (pocketfft's
    error is within a small multiple of u·log₂ n per pass; the constant is generous)."""
    n = a.size + b.size - 1
    size = 1 << int(np.ceil(np.log2(n)))
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]
    err = 10.0 * _U * np.log2(size) * float(np.linalg.norm(a)) * float(np.linalg.norm(b)) * (1 + 1e-6) + 1e-300
    return np.maximum(out, 0.0) + err


def _direction(ell: np.ndarray, p: np.ndarray, q: np.ndarray, p_inf: float) -> Direction:
    tiny = p < 1e-300  # subnormal masses lose their relative precision: to +∞
    p_inf = min(float(p_inf) + float(np.sum(p[tiny])) + tiny.sum() * 1e-300, 1.0)
    ell, p, q = ell[~tiny], p[~tiny], q[~tiny]
    order = np.argsort(ell, kind="stable")
    ell, p, q = ell[order], p[order], q[order]
    cum = np.cumsum(p)
    med = float(ell[min(int(np.searchsorted(cum, 0.5 * cum[-1])), ell.size - 1)]) if ell.size else 0.0
    return Direction(lo=float(ell[0]), hi=float(ell[-1]), atoms=(ell, p, q), p_inf=float(p_inf), median=med)
