"""Group privacy: guarantees for groups of k records.

References
----------
.. [DR] C. Dwork, A. Roth 2014, Theorem 2.2 (pure ε: kε); the (ε, δ) form
   (kε, δ Σ_{i<k} e^{iε}) follows by applying the definition k times, see
   also Vadhan, The Complexity of Differential Privacy, Lemma 2.2.
.. [DRS] Dong, Roth & Su, arXiv:1905.02383, Theorem 2.14 (μ-GDP: kμ).
.. [BS] Bun & Steinke, arXiv:1605.02065, Proposition 5.5 (zCDP: k²ρ).
.. [M17] I. Mironov, Rényi Differential Privacy, CSF 2017, arXiv:1702.07476, Proposition 2
   (groups of 2^c: an (α, ε)-RDP mechanism with α >= 2^{c+1} is (α/2^c, 3^c·ε)-RDP for them).
"""

from __future__ import annotations

import numpy as np

from . import _fp
from ._arrays import all_scalar, checked, finish
from ._fp import ULP, two_prod

__all__ = ["dp_tight", "dp_textbook", "pure", "gdp", "zcdp", "gaussian_sensitivity", "rdp", "rdp_span"]


def _k(size):
    return checked("size", size, low=1, low_open=False, integer=True)


def _times_exp(d, p, pe):
    """d·e^{p + pe} for d >= 0, p >= 0 (pe a tiny correction), without overflow while the result is
    below 1: e^p is applied in two halves (p/2 is exact) when p > 700. Relative error 1.6 ulps."""
    with np.errstate(over="ignore", invalid="ignore"):
        corr = 1.0 + pe  # e^{pe}, |pe| <= ulp(p)/2: the next term is below 2⁻¹⁰⁰
        whole = d * np.exp(np.minimum(p, 700.0)) * corr
        half = np.exp(0.5 * p)
        split = (d * half) * half * corr
    return np.where(p <= 700.0, whole, split)


def dp_tight(epsilon, delta, size):
    """(kε, δ (e^{kε} − 1)/(e^ε − 1)), rounded up; δ capped at 1. For ε = 0 the δ is kδ.

    Evaluated as δ·e^{(k−1)ε}·(−expm1(−kε))/(−expm1(−ε)) with the products kε and (k−1)ε formed exactly
    (Dekker), so δ is within a few ulps for every k and ε (no e^{kε} overflow while δ < 1).

    Examples
    --------
    >>> e, d = dp_tight(0.5, 1e-7, 4)
    >>> e, round(d / 1e-7, 6)
    (2.0, 9.848692)
    """
    scalar = all_scalar(epsilon, delta, size)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    k = _k(size)
    e, d, k = np.broadcast_arrays(e, d, k)
    with np.errstate(all="ignore"):
        p, pe, ok = two_prod(k - 1.0, e)  # (k − 1)ε
        pe = np.where(ok, pe, 0.0)
        s, se, ok2 = two_prod(k, e)  # kε
        se = np.where(ok2, se, 0.0)
        num = -np.expm1(-s) + np.exp(-s) * se  # 1 − e^{−kε}
        den = -np.expm1(-e)  # 1 − e^{−ε}
        dk = _times_exp(d, p, pe) * (num / den)
        # exp 0.53 + expm1 ×2 + products/quotient 2.5, and p's rounding where Dekker could not be used.
        rel = 6.0 * ULP + np.where(ok & ok2, 0.0, ULP * (p + s))
        dk = _fp.widen_up(dk, rel)
    dk = np.where(e > 0, dk, _fp.mul_up(k, d))
    dk = np.where(d == 0, 0.0, np.minimum(np.where(np.isnan(dk), np.inf, dk), 1.0))
    dk = np.where(k == 1, d, dk)  # a group of one is the record itself
    return finish(_fp.mul_up(k, e), dk, scalar=scalar)


def dp_textbook(epsilon, delta, size):
    """(kε, k e^{(k−1)ε} δ) — the looser form in most texts; rounded up, δ capped at 1."""
    scalar = all_scalar(epsilon, delta, size)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    k = _k(size)
    e, d, k = np.broadcast_arrays(e, d, k)
    with np.errstate(all="ignore"):
        p, pe, ok = two_prod(k - 1.0, e)
        pe = np.where(ok, pe, 0.0)
        dk = _times_exp(_fp.mul_up(k, d), p, pe)
        dk = _fp.widen_up(dk, 2.5 * ULP + np.where(ok, 0.0, ULP * p))
    dk = np.where(d == 0, 0.0, np.minimum(np.where(np.isnan(dk), np.inf, dk), 1.0))
    dk = np.where(k == 1, d, dk)
    return finish(_fp.mul_up(k, e), dk, scalar=scalar)


def pure(epsilon, size):
    """Pure ε-DP for groups of k: kε (exact composition of the definition; correctly rounded up)."""
    scalar = all_scalar(epsilon, size)
    return finish(_fp.mul_up(checked("epsilon", epsilon, low=0, low_open=False), _k(size)), scalar=scalar)


def gdp(mu, size):
    """μ-GDP for groups of k: kμ ([DRS] Thm 2.14), correctly rounded up."""
    scalar = all_scalar(mu, size)
    return finish(_fp.mul_up(checked("mu", mu, low=0, low_open=False), _k(size)), scalar=scalar)


def zcdp(rho, size):
    """ρ-zCDP for groups of k: k²ρ ([BS] Prop. 5.5), rounded up (within 2 ulps)."""
    scalar = all_scalar(rho, size)
    k = _k(size)
    return finish(_fp.mul_up(checked("rho", rho, low=0, low_open=False), _fp.mul_up(k, k)), scalar=scalar)


def gaussian_sensitivity(sensitivity, size):
    """A Gaussian mechanism seen by a group of k: sensitivity kΔ (exact; correctly rounded up)."""
    scalar = all_scalar(sensitivity, size)
    return finish(_fp.mul_up(checked("sensitivity", sensitivity, low=0), _k(size)), scalar=scalar)


def rdp(orders, curve, size):
    """An RDP curve for groups of ``size`` records ([M17] Prop. 2, with 2^c >= size): the orders α >= 2^{c+1}
    of (``orders``, ``curve``) become α/2^c with 3^c times their RDP (rounded up); the others are dropped.
    Returns (orders, curve), possibly empty. Size 1 returns the curve unchanged.

    Examples
    --------
    >>> o, r = rdp([2.0, 4.0, 8.0], [0.1, 0.2, 0.4], 2)
    >>> o.tolist(), [round(x, 12) for x in r.tolist()]
    ([2.0, 4.0], [0.6, 1.2])
    """
    a = np.asarray(orders, float)
    r = np.asarray(curve, float)
    span = rdp_span(size)
    if span == 1:
        return a, r
    keep = a >= 2.0 * span
    return a[keep] / span, np.nextafter(r[keep] * 3.0 ** np.log2(span), np.inf)


def rdp_span(size) -> float:
    """2^c, the smallest power of two >= ``size``: the group [M17] Prop. 2 bounds ``size`` records with."""
    k = int(_k(size))
    return 1.0 if k == 1 else 2.0 ** int(np.ceil(np.log2(k) - 1e-12))
