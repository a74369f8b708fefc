"""Error accounting: what the engine adds to an upper δ and takes from a lower one.

* **Round-off** of the FFT composition (:func:`roundoff_l2`): a bound on the
  Euclidean norm of the error in the composed tilted masses.
* **Wrap-around and tails** of the composition window (:func:`best_chernoff`):
  Chernoff bounds on the tilted measure beyond the window.
* **The lower bound's moves** (:func:`lower_shift`): a concentration bound on
  the total distance the lower discretisation moved the losses down.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FFT_ERROR_PER_LEVEL", "LOWER_ETA", "roundoff_l2", "best_chernoff", "lower_shift"]

#: A lower bound trades η = LOWER_ETA·δ of δ for the concentration of its rounding (:func:`lower_shift`):
#: per answer in the engine, over all terms in :mod:`.jumps`.
LOWER_ETA = 1e-4

#: Error of a length-n FFT relative to its output, per log2(n) (Euclidean norms): radix-2 analysis
#: gives about 6.7·u (Higham, Accuracy and Stability of Numerical Algorithms, Thm 24.2); the
#: mixed radices of pocketfft get a margin. The tests measure errors against extended precision.
FFT_ERROR_PER_LEVEL = 10.0


def roundoff_l2(n: int, parts: list[tuple[int, np.ndarray, np.ndarray]], out_norm: float, u: float) -> float:
    """A bound on the Euclidean norm of the round-off error of the composed tilted masses.

    ``parts`` holds, per composed part j, (T_j, b_j, |F̃_j|): its times, a bound b_j on the error of
    each coefficient of its computed spectrum F̃_j (one for all, or one per frequency), and the
    moduli of those coefficients; ``u`` is the unit round-off of the powers, products and inverse
    transform. Each tilted step x_j has ||x_j||_1 = 1, and a length-n FFT errs in every coefficient
    by at most κ·||x||_1, κ = FFT_ERROR_PER_LEVEL·u_f·log2 n for the precision u_f it runs in (each
    of the log2 n stages rounds every partial sum, whose modulus is at most the L1 norm of the inputs
    it combines, and the partial sums of a stage partition the inputs); the tilt's own rounding
    adds the L1 norm of its error vector, and a spectrum computed in long double and rounded to
    double adds u·|F̃_j|: so b_j = κ + ||e_j||_1 (+ u·|F̃_j|). With c_j = |F̃_j| + b_j >= |F_j| at
    every frequency,

        |Π F̃_j^{T_j} − Π F_j^{T_j}| <= M·Σ_j T_j b_j / c_j,   M = Π_j c_j^{T_j}

    (telescoping, and |z^T − w^T| <= T|z − w|·max(|z|, |w|)^{T−1}). Most frequencies have |F| well
    below 1, so M is tiny there: the bound follows the composed spectrum instead of T·√n·κ||x||_2
    everywhere. The powers and products round by at most u·(π ΣT_j + 2·parts + 1)·M + u·parts/e
    (exp/log, or (T − 1)·√5·u relative by repeated squaring), and the inverse transform adds
    κ·||y||_2. Summed over the spectrum (rfft halves counted twice) and divided by √n (Parseval):

        ||Δy||_2 <= ||ΔY||_2/√n + κ·||y||_2.

    Clipping negative outputs to 0 only shrinks errors. δ reads the masses with weights
    w_i <= e^{G−λℓ_i}, so its error is at most ||w||_2 times this (Cauchy–Schwarz): see :mod:`.query`.
    """
    kappa = FFT_ERROR_PER_LEVEL * u * np.log2(max(n, 2))
    k = len(parts)
    size = np.asarray(parts[0][2]).size

    def c_of(absf, b, sel=slice(None)):  # c = |F̃|(1 + 2u) + b >= |F| (at the frequencies sel)
        return np.asarray(absf, float)[sel] * (1 + 2 * u) + (b if np.ndim(b) == 0 else b[sel])

    # Frequencies where some part's c^T is below e^{−750} next to a bound on the others' largest: there
    # M underflows to 0 and dy is u·k/e alone — summed in one term, so that the logarithms and
    # exponentials run over the frequencies that carry the composed spectrum only (a small share for
    # many steps).
    top = sum(t * float(np.log(max(float(np.max(absf)) * (1 + 2 * u) + float(np.max(b)), 1.0))) for t, b, absf in parts)
    live = np.ones(size, dtype=bool)
    for t, b, absf in parts:
        if t > 0:  # (a part taken 0 times is a factor 1)
            live &= c_of(absf, b) > np.exp((-750.0 - top) / t)
    sel = np.flatnonzero(live)
    log_m = 0.0
    ratio = 0.0
    t_all = 0
    for t, b, absf in parts:
        c = c_of(absf, b, sel)
        with np.errstate(divide="ignore"):
            log_m = log_m + t * np.log(c)
        ratio = ratio + t * (b if np.ndim(b) == 0 else b[sel]) / c
        t_all += t
    with np.errstate(under="ignore", over="ignore"):
        m = np.exp(np.minimum(log_m, 700.0))
    floor = u * k / np.e
    dy = m * ratio + u * (np.pi * t_all + 2 * k + 1) * m + floor
    # Weights: the rfft's interior frequencies count twice (their conjugates), 0 and n/2 once.
    w = np.full(dy.shape, 2.0)
    w[sel == 0] = 1.0
    if n % 2 == 0:
        w[sel == size - 1] = 1.0
    w_all = 2.0 * size - 1.0 - (1.0 if n % 2 == 0 else 0.0)
    w_dead = w_all - float(np.sum(w))
    norm_dy = float(np.sqrt(np.sum(w * dy * dy) + w_dead * floor * floor))
    return float(norm_dy / np.sqrt(n) * (1 + 1e-6) + kappa * out_norm * (1 + 1e-6) + 1e-300 * np.sqrt(n))


_CHERNOFF_TS = np.geomspace(1e-4, 100.0, 16)
_SEVEN = np.arange(7.0)


def best_chernoff(f, log_eta: float, k: int, scale: float) -> np.ndarray:
    """For each of k convex functions f_i with f_i(0) <= 0, min over t > 0 of (f_i(t) − log η)/t:
    Chernoff tail bounds. ``f(ts)`` takes and returns (k, len) arrays (row i: f_i). ``scale`` is the
    spread of the variable (the exponents tried are 1e-4–100 over it: heavy tails, whose spread is
    made by rare large losses, need small ones).

    Every t tried gives a valid bound; a geometric grid (ratio 2.5) and a
    finer one around each best point (two vectorised calls of f) find a good one.
    """
    ts = np.tile(_CHERNOFF_TS / scale, (k, 1))
    rows = np.arange(k)
    best = np.full(k, np.inf)
    for _ in range(2):
        with np.errstate(all="ignore"):
            vals = (f(ts) - log_eta) / ts
        vals = np.where(np.isfinite(vals), vals, np.inf)
        i = np.argmin(vals, axis=1)
        best = np.minimum(best, vals[rows, i])
        lo = ts[rows, np.maximum(i - 1, 0)]
        hi = ts[rows, np.minimum(i + 1, ts.shape[1] - 1)]
        # (np.linspace(log lo, log hi, 7, axis=1)[:, 1:-1], formed as it forms it: the same values)
        l_lo = np.log(lo)
        ts = np.exp(_SEVEN[None, 1:-1] * ((np.log(hi) - l_lo) / 6)[:, None] + l_lo[:, None])
    return best


def lower_shift(move_mean: float, move_var: float, move_b: float, eta: float) -> float:
    """A shift s >= 0 with P[total move < s] <= η (one-sided Bernstein inequality).

    The lower discretisation moved each step's loss L_i down by d_i >= 0, so
    the true composed loss is S' + D with D = Σ d_i, the d_i independent
    with known means m_i and variances v_i. With X_i = m_i − d_i <= m_i <= b,
    P[D < Σm_i − t] <= exp(−t² / (2(Σv_i + b·t/3))). On the event D >= s,
    (1 − e^{ε−S})₊ >= (1 − e^{ε−s−S'})₊, so for every ε

        δ_true(ε) >= δ_lower(ε − s) − η,

    i.e. the lower bound may be shifted right by s at the price of η in δ.
    """
    if move_mean <= 0 or not (0 < eta < 1):
        return 0.0
    L = float(np.log(1.0 / eta))
    a = move_b * L / 3.0
    t = a + np.sqrt(a * a + 2.0 * move_var * L)
    return float(max(move_mean - t, 0.0))
