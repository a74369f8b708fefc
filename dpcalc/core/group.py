"""Group privacy: guarantees for groups of k records.

References
----------
.. [DR] C. Dwork, A. Roth 2014, Theorem 2.2 (pure ε: kε); the (ε, δ) form
   (kε, δ Σ_{i<k} e^{iε}) follows by applying the definition k times, see
   also Vadhan, The Complexity of Differential Privacy, Lemma 2.2.
.. [DRS] Dong, Roth & Su, arXiv:1905.02383, Theorem 2.14 (μ-GDP: kμ).
.. [BS] Bun & Steinke, arXiv:1605.02065, Proposition 5.5 (zCDP: k²ρ).
"""

from __future__ import annotations

import numpy as np

from ._arrays import all_scalar, checked, finish, log_expm1

__all__ = ["dp_tight", "dp_textbook", "pure", "gdp", "zcdp", "gaussian_sensitivity"]


def _k(size):
    return checked("size", size, low=1, low_open=False, integer=True)


def dp_tight(epsilon, delta, size):
    """(kε, δ (e^{kε} − 1)/(e^ε − 1)); δ capped at 1. For ε = 0 the δ is kδ.

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
    with np.errstate(all="ignore"):
        # log((e^{kε} − 1)/(e^ε − 1)), stable for large kε.
        log_ratio = log_expm1(k * e) - log_expm1(e)
        log_ratio = np.where(e > 0, log_ratio, np.log(k))
        dk = np.exp(np.minimum(np.log(d) + log_ratio, 0.0))
    dk = np.where(d == 0, 0.0, dk)
    return finish(k * e, dk, scalar=scalar)


def dp_textbook(epsilon, delta, size):
    """(kε, k e^{(k−1)ε} δ) — the looser form in most texts; δ capped at 1."""
    scalar = all_scalar(epsilon, delta, size)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1, low_open=False)
    k = _k(size)
    with np.errstate(all="ignore"):
        dk = np.exp(np.minimum(np.log(k) + (k - 1) * e + np.log(d), 0.0))
    dk = np.where(d == 0, 0.0, dk)
    return finish(k * e, dk, scalar=scalar)


def pure(epsilon, size):
    """Pure ε-DP for groups of k: kε (exact composition of the definition)."""
    scalar = all_scalar(epsilon, size)
    return finish(checked("epsilon", epsilon, low=0, low_open=False) * _k(size), scalar=scalar)


def gdp(mu, size):
    """μ-GDP for groups of k: kμ ([DRS] Thm 2.14)."""
    scalar = all_scalar(mu, size)
    return finish(checked("mu", mu, low=0, low_open=False) * _k(size), scalar=scalar)


def zcdp(rho, size):
    """ρ-zCDP for groups of k: k²ρ ([BS] Prop. 5.5)."""
    scalar = all_scalar(rho, size)
    k = _k(size)
    return finish(checked("rho", rho, low=0, low_open=False) * k * k, scalar=scalar)


def gaussian_sensitivity(sensitivity, size):
    """A Gaussian mechanism seen by a group of k: sensitivity kΔ (exact)."""
    scalar = all_scalar(sensitivity, size)
    return finish(checked("sensitivity", sensitivity, low=0) * _k(size), scalar=scalar)
