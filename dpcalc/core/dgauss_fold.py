"""k runs of one discrete Gaussian mechanism, exactly: the sum of the outputs carries the whole privacy loss.

The pair is N_Z(0, σ²)^k against N_Z(Δ, σ²)^k (integer Δ). One output's loss is ℓ(x) = (Δ² − 2Δx)/(2σ²),
linear in x, so the k outputs' loss is L = (kΔ² − 2ΔS)/(2σ²) with S their sum, whose law under the first
dataset is the k-fold convolution of N_Z(0, σ²). Hence

    δ(ε) = Σ_{s: L(s) > ε} P[S = s]·(1 − e^{ε − L(s)}),

every term in [0, P[S = s]] (the second dataset's masses are P[S = s]·e^{−L(s)} and never needed).

The law of S is formed from the discrete Gaussian's table (:class:`.discrete.DGaussTable`: masses within a
known relative error, the mass beyond ±N bounded) by binary powers of direct convolutions (``numpy.convolve``,
no FFT): each output is a sum of non-negative products, so it is within a relative (m + 1)u of its exact value
(m the terms summed), and relative errors add in the logarithm from one convolution to the next. The tails of
each result below a floor far under any δ read are trimmed, their mass (and any product flushed to zero)
kept as a bound. The upper curve adds that mass and the table's cut tails (sent to +∞); the lower curve drops
them (every term is non-negative, so dropping one only lowers δ). The losses are computed from the integers
(within 3u relative). ε at δ is bisected on each curve to 1e-13 relative: the upper end is a point where the
upper curve is at most δ, the lower end one where the lower curve is above δ.

This answers where the PLD engine's grids struggle: a discrete Gaussian with σ of about 0.1 (Δ = 1) has one
atom of mass ~1 and others 34 loss units apart with masses 1e-15, and the engine's interval at 10 runs is
[344.35, 378.59] (exact 344.3467); below σ ≈ 0.1 it declines. The cost is that of the convolutions (at most
:data:`FOLD_CELLS` products each); beyond it no answer is given here and the other methods answer.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FOLD_CELLS", "FOLD_SUPPORT", "dgauss_fold_epsilon"]

_U = float(np.finfo(float).eps)
_TINY = float(np.finfo(float).tiny)

#: Largest convolution (products formed) the fold runs, and the most integers the law of the sum may hold; a
#: larger one gives no answer (None: the other methods answer — the PLD engine's grids are fine there).
FOLD_CELLS = 1 << 25
FOLD_SUPPORT = 1 << 13
#: The smallest δ read (the discrete Gaussian's closed forms stop at 1e-30 too).
MIN_DELTA = 1e-30
#: The curves are read on at most this many (δ, integer) cells at once.
READ_CELLS = 1 << 22


def _product(x, y, floor):
    """The law of the sum of two independent parts, each (masses on the integers from ``first``, first, its
    relative error bound in the logarithm, a bound on the mass it has lost): the convolution, its error bound,
    and the mass lost (the parts', times the other's mass, at most e^err; the tails below ``floor`` trimmed; any
    product flushed to zero). None where it would exceed FOLD_CELLS or FOLD_SUPPORT."""
    (a, oa, ea, la), (b, ob, eb, lb) = x, y
    if a.size * b.size > FOLD_CELLS:
        return None
    c = np.convolve(a, b)
    ec = ea + eb + 1.01 * (min(a.size, b.size) + 1) * _U
    lost = a.size * b.size * _TINY  # products below the smallest normal double (a bound on what they lose)
    keep = np.flatnonzero(c >= floor)
    if keep.size == 0 or keep[-1] + 1 - keep[0] > FOLD_SUPPORT:
        return None
    lo, hi = int(keep[0]), int(keep[-1]) + 1
    lost += (float(np.sum(c[:lo])) + float(np.sum(c[hi:]))) * np.exp(ec) * (1 + c.size * _U)
    return c[lo:hi], oa + ob + lo, ec, (la + lb) * np.exp(ec) + lost


def _law_of_sum(p, rel, times: int, floor: float):
    """The law of the sum of ``times`` outputs (masses ``p`` on −N..N, each within ``rel``): (masses, first
    integer, log-error bound, mass bound lost), by binary powers of :func:`_product`; None where one would exceed
    FOLD_CELLS or FOLD_SUPPORT."""
    n = (p.size - 1) // 2
    # Masses too small to keep their relative precision in a double (subnormal) are dropped, and counted.
    small = p < 1e-300
    p = np.where(small, 0.0, p)
    base = (p, -n, float(-np.log1p(-rel)) if rel < 0.5 else np.inf, float(np.count_nonzero(small)) * 1.01e-300)
    out = None
    k = int(times)
    while True:
        if k & 1:
            out = base if out is None else _product(out, base, floor)
            if out is None:
                return None
        k >>= 1
        if not k:
            return out
        base = _product(base, base, floor)
        if base is None:
            return None


def _curves(mass, first, err, lost, tails, sigma, sens, times, eps):
    """Lower and upper δ at each ε (rows) from the law of the sum."""
    s = first + np.arange(mass.size, dtype=np.float64)
    # L(s) = Δ(kΔ − 2s)/(2σ²): kΔ − 2s and Δ·(…) exact (integers below 2^53, checked by the caller), σ², the
    # doubling and the division rounded: within 3u relative. The arguments ε − L ∓ η below are rounded too (two
    # subtractions: 2u of |ε| + |L| + η); η covers both, so that each term's factor 1 − e^{ε − L ∓ η} stays on
    # its side (its slope is at most 1 in the argument).
    ell = sens * (times * sens - 2.0 * s) / (2.0 * (sigma * sigma))
    e = np.asarray(eps, float)[:, None]
    eta = 5.1 * _U * (np.abs(ell) + np.abs(e)) + 1e-300
    up_f, lo_f = np.exp(err), -np.expm1(-err)  # the masses' factors: at most ×e^err, at least ×(1 − (1 − e^−err))
    m = mass.size
    with np.errstate(all="ignore"):
        t_up = np.where(ell + eta > e, -np.expm1(np.minimum(e - ell - eta, 0.0)), 0.0) * mass
        t_lo = np.where(ell - eta > e, -np.expm1(np.minimum(e - ell + eta, 0.0)), 0.0) * mass
    # Each term within 4u (expm1, the product), their sum within (m + 2)u: (m + 8)u on the sum.
    hi = np.sum(t_up, axis=1) * up_f * (1 + (m + 8) * _U) + (lost + tails) * (1 + 4 * _U)
    # (The lost mass also bounds what round-off near the smallest doubles can have added to the masses.)
    lo = np.sum(t_lo, axis=1) * (1 - lo_f) * (1 - (m + 8) * _U) - lost * (1 + 4 * _U)
    return lo, hi, float(np.max(ell + 3.1 * _U * np.abs(ell)))


def dgauss_fold_epsilon(sigma: float, sensitivity: int, times: int, delta):
    """Certified (lower, upper) on ε at each δ of ``times`` runs of the discrete Gaussian N_Z(0, σ²) with integer
    sensitivity Δ (module docstring), or None where the fold would exceed :data:`FOLD_CELLS` or FOLD_SUPPORT; NaN
    at a δ below MIN_DELTA or below twice the mass the fold leaves out (each δ answered on its own). Each end to
    within 1e-13 of max(ε, 1e-300) of its curve's crossing."""
    from .discrete import _dg_half_width, dgauss_table

    d = np.atleast_1d(np.asarray(delta, float))
    n_atoms = 2 * _dg_half_width(float(sigma)) + 1
    if int(times) >= 2 and n_atoms * n_atoms > FOLD_CELLS:
        return None  # (the first convolution would be too large: decided before the table is built)
    tab = dgauss_table(float(sigma))
    # (A floor fixed by the smallest δ the discrete Gaussian is read at, not by the δ asked: each δ's digits are
    # the same whatever else is asked with it.)
    floor = MIN_DELTA * 1e-30 / max(int(times), 1)
    law = _law_of_sum(np.asarray(tab.p64, float), float(tab.rel64), int(times), floor)
    if law is None:
        return None
    mass, first, err, lost = law
    # The losses are formed from integers, exactly where they stay below 2^53 (huge k·Δ: no answer here).
    reach = float(times) * sensitivity + 2.0 * max(abs(first), abs(first + mass.size))
    if reach * sensitivity > 2.0**52:
        return None
    tails = 2.0 * float(tab.tail) * int(times)  # the cut tails of every run, at +∞ for the upper curve
    top = _curves(mass, first, err, lost, tails, float(sigma), int(sensitivity), int(times), np.array([0.0]))[2]
    if not (np.isfinite(err) and err < 1e-6):
        return None
    hi_e = max(top, 0.0) * (1 + 1e-12) + 1.0
    args = (mass, first, err, lost, tails, float(sigma), int(sensitivity), int(times))
    # Each δ on its own: read where it is at least MIN_DELTA and twice the mass left out, NaN (no answer) elsewhere.
    ok = np.flatnonzero((d >= MIN_DELTA) & ((lost + tails) * (1 + 4 * _U) < 0.5 * d))
    lower, upper = np.full(d.size, np.nan), np.full(d.size, np.nan)
    step = max(1, READ_CELLS // mass.size)
    for c0 in range(0, ok.size, step):
        sel = ok[c0 : c0 + step]
        lower[sel], upper[sel] = _read(args, d[sel], hi_e)
    with np.errstate(invalid="ignore"):
        return np.minimum(lower, upper), upper


def _read(args, d, hi_e):
    """(lower, upper) ε at the δ ``d``, bisected on both curves at once (δ decreasing in ε): ε_up where the
    upper curve is at most δ, ε_lo where the lower one is above δ."""
    a_up, b_up = np.zeros(d.size), np.full(d.size, hi_e)  # invariant: up(b_up) <= δ
    a_lo, b_lo = np.zeros(d.size), np.full(d.size, hi_e)  # invariant: lo(a_lo) > δ (or a_lo = 0, no claim)
    lo0, up0, _ = _curves(*args, np.zeros(d.size))
    lo_ok = lo0 > d  # ε = 0 is certainly below ε(δ): a positive lower end can be claimed
    zero_up = up0 <= d  # ε = 0 already has δ(0) <= δ: the upper end is 0
    # (Past the top only the left-out mass is left, under δ/2 by the caller's choice: a δ where the upper curve is
    # still above δ there — which cannot happen — gets no answer.)
    held = _curves(*args, b_up)[1] <= d
    # Each δ stops on its own (so that its digits do not depend on the δ read beside it).
    for _ in range(200):
        go_up = b_up - a_up > 1e-13 * np.maximum(b_up, 1e-300)
        go_lo = b_lo - a_lo > 1e-13 * np.maximum(b_lo, 1e-300)
        if not (go_up.any() or go_lo.any()):
            break
        mid_up, mid_lo = 0.5 * (a_up + b_up), 0.5 * (a_lo + b_lo)
        meets = _curves(*args, mid_up)[1] <= d
        above = _curves(*args, mid_lo)[0] > d
        a_up, b_up = np.where(go_up & ~meets, mid_up, a_up), np.where(go_up & meets, mid_up, b_up)
        a_lo, b_lo = np.where(go_lo & above, mid_lo, a_lo), np.where(go_lo & ~above, mid_lo, b_lo)
    return np.where(held, np.where(lo_ok, a_lo, 0.0), np.nan), np.where(held, np.where(zero_up, 0.0, b_up), np.nan)
