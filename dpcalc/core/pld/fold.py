"""Exact self-composition of two-atom steps: k releases of an (ε, δ) pair as one binomial step.

A step whose finite losses take two values ℓ₁, ℓ₂ (P-masses p₁, p₂, and P[L = +∞] = p∞) — the
worst-case pair of an (ε, δ) guarantee, randomized response, or a binary post-processing of a
mechanism — composed k times has losses jℓ₁ + (k − j)ℓ₂ with P-mass C(k, j)·p₁^j·p₂^{k−j}
(j = 0..k) and P[L = +∞] = 1 − (1 − p∞)^k. Composing that one step instead of discretising the
two atoms and raising them to the k-th power in the Fourier domain changes the accuracy, not the
cost: the grid rounds each loss once instead of k times. For thousands of tiny pure-ε releases
(legacy ledger entries, Laplace histograms) those k roundings are what forced fine grids — the
lower end's moves, two atoms a fraction of a cell apart, vary by that fraction every step.

Only the atoms whose binomial mass is not negligible are kept: a window around the mode, whose
tails are bounded by Chernoff's inequality P[J ≤ a] ≤ exp(−k·KL(a/k ‖ p)). The masses inside the
window come from the mode outward by the ratio (k − j)/(j + 1)·p₁/p₂, normalised by their sum (so
no Γ-function round-off enters; scipy's binomial log-pmf is off by up to 2.5e-8 relative at
k = 10⁷). Each end rounds toward its safe side (:func:`fold`):

* upper — the masses are rounded up (the window's normalisation by its own sum can only overstate
  them), the lower tail's bound is moved up onto the first atom kept, the upper tail's to +∞;
* lower — the masses are rounded down (normalised by the window's sum plus both tails' bounds),
  the tails are dropped; the losses are moved down by their round-off.
"""

from __future__ import annotations

import numpy as np

from .mechanisms import Direction

__all__ = ["foldable", "fold", "FOLD_FROM", "MAX_FOLD_ATOMS"]

_U = float(np.finfo(float).eps)

#: Fewer releases than this are composed as they are (k roundings of a few steps cost little).
FOLD_FROM = 2

#: Largest window of binomial atoms kept (more: the step is composed as it is).
MAX_FOLD_ATOMS = 1 << 18


def foldable(d: Direction) -> bool:
    """Whether ``d`` is a two-atom step (two finite losses with positive mass)."""
    if d.atoms is None:
        return False
    ell, p, _ = d.atoms
    return int(np.count_nonzero(np.asarray(p) > 0)) == 2 and np.all(np.isfinite(ell))


def _kl(x: np.ndarray, p: float) -> np.ndarray:
    """KL(x ‖ p) of Bernoulli laws (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(x > 0, x * np.log(x / p), 0.0)
        b = np.where(x < 1, (1 - x) * np.log((1 - x) / (1 - p)), 0.0)
    return np.maximum(a + b, 0.0)


def _tail_bounds(k: int, p: float, lo: int, hi: int) -> tuple[float, float]:
    """Upper bounds on P[J < lo] and P[J > hi] for J ~ Binomial(k, p) (Chernoff; 0 where empty).

    The exponent is rounded toward a larger bound (its relative error is far below 1e-12)."""

    def bound(a: int) -> float:
        x = np.array([a / k])
        e = float(k * _kl(x, p)[0])
        return float(min(1.0, np.exp(-e * (1 - 1e-12)) * (1 + 1e-12)))

    below = 0.0 if lo <= 0 else (bound(lo - 1) if lo - 1 <= k * p else 1.0)
    above = 0.0 if hi >= k else (bound(hi + 1) if hi + 1 >= k * p else 1.0)
    return below, above


def _q_masses(p: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """Q-masses p·e^{−ℓ} of the atoms, for the record (the discretisations read P-masses and losses only);
    formed in log space, capped at the largest double where a large negative loss would overflow."""
    with np.errstate(divide="ignore"):
        return np.exp(np.minimum(np.log(p) - losses, 709.0))


def fold(d: Direction, k: int, tail: float, kind: str) -> Direction | None:
    """The k-fold composition of the two-atom step ``d`` as one atom step, rounded for ``kind``
    ("upper": dominating; "lower": dominated). Binomial tails beyond ``tail`` (each) are moved or
    dropped as the module docstring says. None when the window would exceed
    :data:`MAX_FOLD_ATOMS` atoms (the caller composes ``d`` k times instead)."""
    ell, p, _ = (np.asarray(a, float) for a in d.atoms)
    keep = p > 0
    ell, p = ell[keep], p[keep]
    (l1, l2), (p1, p2) = ell, p
    r = p1 / (p1 + p2)  # success probability of the binomial (atom 1)
    mode = int(np.clip(np.floor((k + 1) * r), 0, k))
    # Window: mode ± w, widened until both Chernoff tails are at most ``tail`` (or the window is full).
    sd = float(np.sqrt(k * r * (1 - r)))
    w = int(np.ceil(1.3 * sd * np.sqrt(2 * np.log(1 / tail)) + 8))
    while True:
        lo, hi = max(mode - w, 0), min(mode + w, k)
        below, above = _tail_bounds(k, r, lo, hi)
        if (below <= tail and above <= tail) or (lo == 0 and hi == k):
            break
        w *= 2
    n = hi - lo + 1
    if n > MAX_FOLD_ATOMS:
        return None
    # Masses relative to the mode: ratios (k − j)/(j + 1)·ρ up, (j)/(k − j + 1)/ρ down.
    rho = p1 / p2
    j_up = np.arange(mode, hi)
    up = np.cumprod((k - j_up) / (j_up + 1.0) * rho)
    j_dn = np.arange(mode, lo, -1)
    dn = np.cumprod(j_dn / (k - j_dn + 1.0) / rho)
    rel = np.concatenate([dn[::-1], [1.0], up])  # j = lo..hi
    # Each ratio takes 4 roundings, each product one: at most 5·(steps from the mode) u relative.
    steps = np.abs(np.arange(lo, hi + 1) - mode)
    err = 5.0 * _U * (steps + 1.0)
    s = float(np.sum(rel))
    s_err = float(err.max()) + 2.0 * n * _U  # relative error of s as the window's true sum
    js = np.arange(lo, hi + 1, dtype=float)
    losses = js * l1 + (k - js) * l2
    # Each atom's loss is a few ulps off; k of them summed: at most 4u·k·(|ℓ₁| + |ℓ₂|) + the sum's rounding.
    l_err = 4.0 * _U * (k * (abs(l1) + abs(l2)) + np.abs(losses) + 1.0)
    # The finite masses sum to (p₁ + p₂)^k = e^{log_f}: p₁ + p₂ − 1 taken exactly (two-sum; s − 1 is
    # exact for s in [1/2, 2]), so that log_f is good to a few ulps of itself even for k in the
    # millions. Each step's masses (and p∞) are taken 4u apart, as the discretisations do for one
    # step (:mod:`.discretise`): the atoms were computed in floating point. P[L = +∞] = 1 − (1 − p∞)^k.
    sign = 1.0 if kind == "upper" else -1.0
    s2 = p1 + p2
    bb = s2 - p1
    tiny = (p1 - (s2 - bb)) + (p2 - bb)
    x = (s2 - 1.0) + tiny if s2 >= 0.5 else float(np.log(s2))
    log_f = k * (float(np.log1p(x) if s2 >= 0.5 else x) + sign * 4.0 * _U)
    f_err = _U * (6.0 * abs(log_f) + (0.0 if s2 >= 0.5 else 2.0 * k)) + 1e-300
    f = float(np.exp(log_f))
    lp = k * float(np.log1p(-min(d.p_inf * (1 + sign * 4.0 * _U), 1.0)))
    p_inf_k = float(-np.expm1(lp))
    p_err = _U * 6.0 * p_inf_k + 1e-300
    # pmf_j = rel_j·(1 − tails)/S_window (tails: the binomial mass outside the window), times f.
    if kind == "upper":
        scale = f * (1 + 2 * f_err + 4 * _U) / (s * (1 - s_err))
        # (an atom whose ratio underflowed gets a mass no one could tell from 0, still an overstatement)
        mass = np.maximum(rel, 1e-300) * (1 + err) * scale
        mass[0] += below  # the lower tail moved up onto the first atom kept
        return Direction(
            lo=float(losses[0] + l_err[0]),
            hi=float(losses[-1] + l_err[-1]),
            atoms=(losses + l_err, mass, _q_masses(mass, losses)),
            p_inf=float((p_inf_k + p_err + above) * (1 + 4 * _U)),
        )
    scale = f * (1 - 2 * f_err - 4 * _U) * max(1.0 - below - above, 0.0) / (s * (1 + s_err))
    mass = rel * np.maximum(1 - err, 0.0) * scale * (1 - 4 * _U)
    return Direction(
        lo=float(losses[0] - l_err[0]),
        hi=float(losses[-1] - l_err[-1]),
        atoms=(losses - l_err, mass, _q_masses(mass, losses)),
        p_inf=float(max((p_inf_k - p_err) * (1 - 4 * _U), 0.0)),
    )
