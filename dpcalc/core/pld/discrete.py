"""Privacy loss distributions of the discrete mechanisms, as :class:`.mechanisms.Direction`\\ s.

All four are symmetric (one direction serves both orders of a neighbouring
pair). The closed forms and calibrations are in :mod:`dpcalc.core.discrete`.

* :func:`discrete_gaussian` — atoms at the integer losses Δ(Δ − 2x)/(2σ²),
  x = −N..N (e^{−N²/(2σ²)} <= 1e-40), the mass beyond N on both sides sent
  to +∞ (``p_inf``, at most 2e-40·(1 + σ²/N)): a sound upper bound.
* :func:`discrete_laplace` — Δ + 1 atoms, exact (the geometric tails fold
  onto ±Δ/t).
* :func:`randomized_response` — atoms ε₀, 0 (k > 2), −ε₀, exact.
* :func:`bounded_range` — the single pair that dominates every ε₀-BR
  mechanism: its trade-off is the lower envelope of the generalized
  randomized responses ([DDR] §4), min_t f_t(α) = (e^{ε₀}/(1 + α(e^{ε₀} − 1))
  − 1)/(e^{ε₀} − 1) (convex, so itself a trade-off function). Its loss is
  continuous on [−ε₀, ε₀]:

      P[L <= ℓ] = (e^{(ε₀+ℓ)/2} − 1)/(e^{ε₀} − 1),
      Q[L >  ℓ] = (e^{(ε₀−ℓ)/2} − 1)/(e^{ε₀} − 1).

  One step of it is exactly the BR class's δ(ε); composed (adaptively, or
  with anything else) it is a sound upper bound, but not the optimum of
  [DDR] for k > 1 BR steps (their optimum picks the worst t per step, and
  adaptivity makes it larger than the non-adaptive one; the pair here lets
  every step be its own worst case at once). :func:`generalized_rr` is the
  binary pair of one t, for lower bounds: k steps of it at a common t are a
  non-adaptive composition of BR mechanisms, so their ε is a lower bound on
  the worst case of k ε₀-BR steps.

Soundness of the atoms. The discretisations take an atom's mass to within
4u of itself (they scale it by 1 ± 4u); the masses here are computed in
extended precision (x86 long double) and rounded to the nearest double, so
they are within about 1.5u. The discrete Gaussian's cut tails (at most
~1e-40 per step, in ``p_inf``) make its upper bound sound; the lower
discretisation also takes p_inf as given, which overstates its δ by at most
T·1e-40 — far below the 4u·δ it gives up on every mass (δ >= 1e-12 in the
engine), so its lower ends stay sound too.

References
----------
.. [DDR] J. Dong, D. Durfee, R. Rogers. Optimal Differential Privacy
   Composition for Exponential Mechanisms. ICML 2020, arXiv:1909.13830.
.. [CKS] C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for
   Differential Privacy. NeurIPS 2020, arXiv:2004.00010.
"""

from __future__ import annotations

import numpy as np

from .. import discrete as _d
from .._arrays import checked
from ..errors import ValidationError
from .mechanisms import Direction, Tails

__all__ = ["discrete_gaussian", "discrete_laplace", "randomized_response", "bounded_range", "generalized_rr"]

_U = float(np.finfo(float).eps)

#: Masses below this are moved to +∞ (subnormal doubles lose their relative precision).
_TINY = 1e-300


def _atoms(ell, p_ld, q_ld, p_inf: float = 0.0) -> list[Direction]:
    """A symmetric atoms Direction from float losses and long double masses (rounded to nearest)."""
    p = np.asarray(p_ld, dtype=np.float64)
    q = np.asarray(q_ld, dtype=np.float64)
    tiny = p < _TINY
    p_inf = float(p_inf) + float(np.sum(p[tiny]) + tiny.sum() * 1e-300)
    keep = ~tiny
    ell, p, q = np.asarray(ell, np.float64)[keep], p[keep], q[keep]
    if p_inf > 0:
        p_inf = float(np.nextafter(p_inf * (1 + 8 * _U), np.inf))
    lo, hi = float(ell.min()), float(ell.max())
    order = np.argsort(ell)
    cum = np.cumsum(p[order])
    med = float(ell[order][min(int(np.searchsorted(cum, 0.5)), ell.size - 1)]) if ell.size else 0.0
    return [Direction(lo=lo, hi=hi, atoms=(ell, p, q), p_inf=p_inf, median=med)]


def discrete_gaussian(sigma: float, sensitivity: int = 1) -> list[Direction]:
    """N_Z(0, σ²) vs N_Z(Δ, σ²): atoms at Δ(Δ − 2x)/(2σ²), the cut tails (<= ~1e-40 each) at +∞."""
    s = float(checked("sigma", sigma, low=0))
    if s < 0.05:
        raise ValidationError("sigma", s, "at least 0.05 for the discrete Gaussian")
    d = int(checked("sensitivity", sensitivity, low=1, low_open=False, high=2.0**31, integer=True))
    tab = _d.dgauss_table(s)
    rel = tab.rel64
    if rel > 2.5 * _U:
        # (σ just above 0.05, or no extended precision: the table's masses carry more than the 2.5 ulps the
        # engine's accounting allows.) Not an input error — σ is in range and the closed forms answer — so a
        # plain ValueError: the engine declines, and the callers' next sound method reads it.
        raise ValueError(f"the discrete Gaussian's masses at σ = {s:g} are not accurate enough for the PLD engine")
    x = tab.x.astype(np.float64)
    ell = d * (d - 2.0 * x) / (2.0 * (s * s))
    # Q(x) = P(x − Δ): the table's mass Δ places down (beyond its end: from the loss, in long double).
    p = tab.p
    q = np.empty_like(p)
    q[d:] = p[:-d]
    q[:d] = p[:d] * np.exp(-ell[:d].astype(p.dtype))
    return _atoms(ell, p, q, 2.0 * tab.tail)


def discrete_laplace(scale: float, sensitivity: int = 1) -> list[Direction]:
    """Discrete Laplace (P(x) ∝ e^{−|x|/t}) vs its shift by Δ: Δ + 1 exact atoms in [−Δ/t, Δ/t]."""
    t = float(checked("scale", scale, low=0))
    d = int(checked("sensitivity", sensitivity, low=1, low_open=False, high=2.0**20, integer=True))
    ell, p, q, _ = _d.dlaplace_atoms(t, d)
    return _atoms(ell, p, q)


def randomized_response(epsilon0: float, k: int) -> list[Direction]:
    """k-ary randomized response with ε₀ = log(keep·(k − 1)/(1 − keep)): atoms ε₀, 0, −ε₀ (exact)."""
    e0 = float(checked("epsilon0", epsilon0, low=0))
    k = int(checked("k", k, low=2, low_open=False, high=2.0**31, integer=True))
    keep, r = _d.rr_masses(e0, k)
    if k == 2:
        return _atoms(np.array([e0, -e0]), np.array([keep, r]), np.array([r, keep]))
    mid = (k - 2) * r
    return _atoms(np.array([e0, 0.0, -e0]), np.array([keep, mid, r]), np.array([r, mid, keep]))


def generalized_rr(epsilon0: float, t: float) -> list[Direction]:
    """The binary pair of [DDR] with losses t and t − ε₀ (0 <= t <= ε₀): P-masses
    (e^{ε₀} − e^t)/(e^{ε₀} − 1) and (e^t − 1)/(e^{ε₀} − 1). Not symmetric: this is one direction
    (the other has losses ε₀ − t and −t), given as a lower-bound reference."""
    e0 = _d._LD(float(checked("epsilon0", epsilon0, low=0)))
    tt = _d._LD(float(checked("t", t, low=0, high=float(e0), low_open=False, high_open=False)))
    den = -np.expm1(-e0)
    p1 = -np.expm1(tt - e0) / den
    p0 = np.exp(tt - e0) * -np.expm1(-tt) / den
    ell = np.array([float(tt), float(tt) - float(e0)])
    p = np.array([p1, p0], dtype=_d._LD)
    q = p * np.exp(-ell.astype(_d._LD))
    keep = p > 0
    return _atoms(ell[keep], p[keep], q[keep])


def bounded_range(epsilon0: float) -> list[Direction]:
    """The dominating pair of the ε₀-bounded-range class (continuous loss on [−ε₀, ε₀], symmetric).

    Tails at ℓ (a = (ε₀ + ℓ)/2, b = (ε₀ − ℓ)/2, both in [0, ε₀]), written so nothing overflows:
    P[L <= ℓ] = e^{a−ε₀}(1 − e^{−a})/(1 − e^{−ε₀}), P[L > ℓ] = (1 − e^{−b})/(1 − e^{−ε₀}),
    and Q the same with a and b exchanged. Each is within 8u(2 + ε₀ + |ℓ|) of itself (the
    arguments carry one rounding, exp/expm1 one each, |x e^{−x}/(1 − e^{−x})| <= 1).
    """
    e0 = float(checked("epsilon0", epsilon0, low=0))
    den = float(-np.expm1(-e0))

    def cdf(ell, side=0):
        ell = np.asarray(ell, float)
        inside = (ell >= -e0) & (ell < e0)
        lc = np.clip(ell, -e0, e0)
        a = (e0 + lc) / 2.0
        b = (e0 - lc) / 2.0
        with np.errstate(under="ignore"):
            low_p = np.exp(a - e0) * -np.expm1(-a) / den  # P[L <= ℓ]
            up_p = -np.expm1(-b) / den  # P[L > ℓ]
            low_q = -np.expm1(-a) / den  # Q[L <= ℓ]
            up_q = np.exp(b - e0) * -np.expm1(-b) / den  # Q[L > ℓ]
        top = ell >= e0
        fp = np.where(inside, low_p, np.where(top, 1.0, 0.0))
        sp = np.where(inside, up_p, np.where(top, 0.0, 1.0))
        fq = np.where(inside, low_q, np.where(top, 1.0, 0.0))
        sq = np.where(inside, up_q, np.where(top, 0.0, 1.0))
        rel = 8 * _U * (2 + e0 + np.abs(lc))
        efp = np.where(inside, fp * rel, 0.0) + 1e-300
        esp = np.where(inside, sp * rel, 0.0) + 1e-300
        efq = np.where(inside, fq * rel, 0.0) + 1e-300
        esq = np.where(inside, sq * rel, 0.0) + 1e-300
        return Tails(fp, fq, sp, sq, efp, efq, esp, esq, 0.0)

    med = float(e0 + 2.0 * np.log1p(np.expm1(-e0) / 2.0))  # P[L <= m] = 1/2: e^{(ε₀+m)/2} = (e^{ε₀} + 1)/2
    return [Direction(lo=-e0, hi=e0, cdf=cdf, median=med)]
