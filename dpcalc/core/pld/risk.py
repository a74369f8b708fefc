"""Attack risk from privacy loss distributions: certified intervals on β(α), the advantage and TPR at FPR.

A mechanism whose privacy profile is δ(ε) (the largest δ over both orders of a neighbouring pair, so
symmetric) is f-DP with the tightest trade-off function ([DRS] Prop. 2.12)

    f(α) = sup_{ε >= 0} max{0, 1 − δ(ε) − e^ε α, e^{−ε}(1 − δ(ε) − α)},

the smallest type II error β any membership test can have at type I error α; the best attack's TPR at
FPR α is 1 − f(α) and its largest advantage TPR − FPR is δ(0) ([KGK] Sec. 2). The engine gives, on an
ε grid ε_0 = 0 < … < ε_K, certified δ_lo(ε_i) <= δ(ε_i) <= δ_up(ε_i) (:func:`.deltas.delta_interval`).

* **β from below** (an attack can be no better): every (ε_i, δ_up(ε_i)) is a true guarantee, so
  β_lo(α) = max_i f_{ε_i, δ_up(ε_i)}(α) <= f(α).
* **β from above** (no certified attack claim is weaker than the truth): δ is non-increasing, so on
  [ε_i, ε_{i+1}] the two terms are at most 1 − δ_lo(ε_{i+1}) − e^{ε_i} α and
  e^{−ε_i}(1 − δ_lo(ε_{i+1}) − α); beyond ε_K at most 1 − e^{ε_K} α and e^{−ε_K}(1 − α). Their
  maximum is β_up(α) >= f(α); its excess over the truth is the grid step (about Δε·TPR) plus the
  width of the δ interval.

References
----------
.. [DRS] J. Dong, A. Roth, W. Su. Gaussian Differential Privacy. JRSS-B 2022, arXiv:1905.02383.
.. [KGK] B. Kulynych, J. F. Gomez, G. Kaissis, F. du Pin Calmon, C. Troncoso. Attack-Aware Noise
   Calibration for Differential Privacy. NeurIPS 2024, arXiv:2407.02191.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .deltas import delta_interval
from .sizing import _first_guess, initial_h

__all__ = ["Profile", "profile", "tradeoff", "advantage", "DELTA_TOL", "EPS_STEP"]

#: Width asked of the δ(ε) intervals the readings are built on (absolute): about the width they give β.
DELTA_TOL = 1e-4
#: Spacing of the ε grid (the upper β's grid error is second order in it, see :func:`_envelope`).
EPS_STEP = 2e-2
#: The grid ends here at most: past it the tail terms cost β at most e^{-40} ≈ 4e-18 for α >= 4.3e-18.
EPS_CAP = 40.0
#: Tilts 2^1 apart for the profile's reads (the engine's ε answers use 2^0.5): half the compositions.
TILT_STEP = 1.0
#: δ below which the profile's grid stops (the readings past it are bounded by the tail terms).
TAIL_DELTA = 1e-12
#: Fewest ε grid points (reads are cheap next to the compositions they share).
MIN_POINTS = 2001
#: Most ε grid points and δ-grid refinements.
MAX_POINTS = 200_000
MAX_REFINE = 4

_EPS = np.finfo(float).eps


@dataclass(frozen=True)
class Profile:
    """Certified δ(ε) on an ε grid from 0: lower[i] <= δ(eps[i]) <= upper[i]."""

    eps: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    h: float

    @property
    def width(self) -> float:
        return float(np.max(self.upper - self.lower))


def profile(mechs, tol: float = DELTA_TOL, step: float = EPS_STEP, eps=None) -> Profile:
    """δ(ε) intervals on [0, ε_K] every ``step``, the δ grid refined until they are ``tol`` wide (or the
    grid no longer fits: the wider intervals are still certified). ε_K is a Chernoff estimate of where δ
    falls to TAIL_DELTA (it sizes the grid; past it the tail terms of :func:`tradeoff` bound β).
    ``eps``: read at these ε instead (from 0, increasing) — every bound stays sound on any grid."""
    if eps is None:
        end = min(max(1.25 * float(_first_guess(mechs, TAIL_DELTA)[0]), 0.5), EPS_CAP)
        n = int(min(MAX_POINTS, max(np.ceil(end / step) + 1, MIN_POINTS)))
        eps = np.linspace(0.0, end, n)
    else:  # the caller's grid (from 0, increasing): e.g. [0] alone for the advantage
        eps = np.asarray(eps, float)
    h = initial_h(mechs, 1e-3, 1e-12)
    best, refined = None, 0
    for _ in range(MAX_REFINE + 12):
        try:
            iv = delta_interval(mechs, eps, h, TILT_STEP)
        except MemoryError:
            if best is not None:
                break  # a finer grid does not fit: keep the best one that did
            h *= 2  # the first grid does not fit: coarser grids give sound (wider) intervals
            continue
        cur = Profile(eps, np.clip(iv.lower, 0.0, 1.0), np.clip(iv.upper, 0.0, 1.0), h)
        if best is None or cur.width < best.width:
            best = cur
        if cur.width <= tol or refined >= MAX_REFINE:
            break
        refined += 1
        h /= 2
    if best is None:
        raise MemoryError("no δ(ε) grid fits in memory")
    return best


def _envelope(prof: Profile):
    """Per cell [y_i, y_{i+1}] (y = e^ε), the two lines whose maximum is below δ there, from convexity.

    δ(y) = E_P[(1 − y e^{−L})₊] is convex and non-increasing in y with slope −Q(L > log y) in [−1, 0].
    A tangent at y_i has slope at least the previous cell's secant, which is at least
    (δ_lo(y_i) − δ_up(y_{i−1}))/(y_i − y_{i−1}); so δ(y) >= δ_lo(y_i) + s1·(y − y_i) for y >= y_i (line 1;
    slope −1 in the first cell). A tangent at y_{i+1} has slope at most the next cell's secant, at most
    (δ_up(y_{i+2}) − δ_lo(y_{i+1}))/(y_{i+2} − y_{i+1}) and 0; so δ(y) >= δ_lo(y_{i+1}) + s2·(y − y_{i+1})
    for y <= y_{i+1} (line 2; slope 0 in the last cell). Returns y_i, y_{i+1}, the lines' (value at
    their node, slope) and the candidate points where a bound of β on the cell can peak: both ends and
    the lines' crossing."""
    y = np.exp(prof.eps)
    lo, up = prof.lower, prof.upper
    dy = np.diff(y)
    sec_lo = np.maximum((lo[1:] - up[:-1]) / dy, -1.0)  # cell i's secant, from below
    sec_hi = np.minimum((up[1:] - lo[:-1]) / dy, 0.0)  # and from above
    y0, y1 = y[:-1], y[1:]
    s1 = np.concatenate(([-1.0], sec_lo[:-1]))
    s2 = np.concatenate((sec_hi[1:], [0.0]))
    a1, a2 = lo[:-1], lo[1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (a2 - a1 + s1 * y0 - s2 * y1) / (s1 - s2)
    cross = np.where(np.isfinite(cross), np.clip(cross, y0, y1), y0)
    points = np.stack([y0, cross, y1])  # (3, cells)
    env = np.maximum(a1 + s1 * (points - y0), a2 + s2 * (points - y1))
    return points, np.clip(env, 0.0, 1.0)


def tradeoff(prof: Profile, alpha, chunk: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Certified [β_lo, β_up] at each α (see the module docstring), rounded outward.

    β_lo: the largest f_{ε_i, δ_up(ε_i)}(α) over the grid's nodes. β_up: the two terms of f with δ
    replaced by the convex lower envelope of :func:`_envelope`, maximised over each cell (the maximum
    of a concave piecewise-linear function, or of one monotone on each piece, is at a piece's end),
    and past the grid's end the tail terms 1 − e^{ε_K}α and e^{−ε_K}(1 − α)."""
    alpha = np.atleast_1d(np.asarray(alpha, float))
    y = np.exp(prof.eps)
    du = prof.upper
    points, env = _envelope(prof)
    pts, env = points.ravel(), env.ravel()
    lo = np.empty(alpha.shape)
    hi = np.empty(alpha.shape)
    for s in range(0, alpha.size, chunk):
        a = alpha[s : s + chunk, None]
        with np.errstate(over="ignore"):
            lo[s : s + chunk] = np.max(np.maximum(1.0 - du - y * a, (1.0 - du - a) / y), axis=1)
            up = np.max(np.maximum(1.0 - env - pts * a, (1.0 - env - a) / pts), axis=1)
        a1 = alpha[s : s + chunk]
        tail = np.maximum(1.0 - y[-1] * a1, (1.0 - a1) / y[-1])
        hi[s : s + chunk] = np.maximum(up, tail)
    # Each term is a few roundings of numbers at most 1 (and of y·α, relative): step outward past them.
    lo = np.clip(lo - 8 * _EPS, 0.0, 1.0)
    hi = np.clip(hi + 8 * _EPS, 0.0, 1.0)
    hi = np.minimum(hi, 1.0 - alpha + 8 * _EPS)  # no test is worse than guessing: β <= 1 − α
    return np.minimum(lo, hi), np.clip(hi, 0.0, 1.0)


def advantage(prof: Profile) -> tuple[float, float]:
    """Certified [lower, upper] on the best attack's advantage sup_α (1 − α − f(α)) = δ(0)."""
    return float(prof.lower[0]), float(prof.upper[0])
