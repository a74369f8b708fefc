"""Gaussian differential privacy (μ-GDP) and its exact (ε, δ) profile.

A Gaussian mechanism with sensitivity Δ and noise σ is exactly μ-GDP with
μ = Δ/σ, so the analytic Gaussian calibration (Balle & Wang 2018) and the
GDP ↔ (ε, δ) conversion (Dong, Roth & Su 2022) are one formula.

References
----------
.. [DRS] J. Dong, A. Roth, W. Su. Gaussian Differential Privacy. JRSS-B 2022,
   arXiv:1905.02383, Corollary 2.13 (μ-GDP ⇔ (ε, δ(ε))-DP for all ε).
.. [BW] B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential
   Privacy. ICML 2018, arXiv:1805.06530, Theorem 8.
.. [BDLS] Z. Bu, J. Dong, Q. Long, W. Su. Deep Learning with Gaussian
   Differential Privacy. HDSR 2020, arXiv:1911.11607, Theorem 2 (CLT).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ._arrays import all_scalar, checked, finish, log_expm1
from .solve import bisect_predicate, expand_until

__all__ = [
    "log_delta",
    "delta",
    "epsilon",
    "mu_for_dp",
    "tradeoff",
    "advantage",
    "attack_tpr",
    "clt_mu",
    "compose_mu",
]

_LOG_HALF = np.log(0.5)
_SQRT2 = np.sqrt(2.0)


def _log_delta(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """log δ_μ(ε) for μ ≥ 0, ε ≥ 0 (no validation).

    δ = Φ(a) − e^ε Φ(b) with a = μ/2 − ε/μ, b = −μ/2 − ε/μ. Because
    b² − a² = 2ε, for a < 0 this is δ = ½ e^{−a²/2} [erfcx(−a/√2) − erfcx(−b/√2)]:
    no exponentially small terms are subtracted, so δ is accurate down to
    1e-300 and below. For a ≥ 0, δ ≥ Φ(0)−... is not small and the direct
    form is used.
    """
    mu, eps = np.broadcast_arrays(np.asarray(mu, float), np.asarray(eps, float))
    out = np.full(mu.shape, -np.inf)
    pos = mu > 0
    with np.errstate(all="ignore"):
        m = np.where(pos, mu, 1.0)
        a = m / 2 - eps / m
        b = -m / 2 - eps / m
        # a < 0: scaled complementary error functions.
        u = -a / _SQRT2
        v = -b / _SQRT2
        diff = special.erfcx(u) - special.erfcx(v)
        tail = -0.5 * a * a + _LOG_HALF + np.log(diff)
        # a >= 0: direct form (δ >= 2Φ(0)-1 region is not tiny).
        direct = np.log(special.ndtr(a) - np.exp(eps + special.log_ndtr(b)))
        res = np.where(a < 0, tail, direct)
    out = np.where(pos, res, out)
    # Guard: a non-finite value here would only come from float breakdown;
    # fall back to the sound bound δ ≤ Φ(a).
    bad = pos & ~np.isfinite(out)
    if bad.any():
        with np.errstate(all="ignore"):
            out = np.where(bad, special.log_ndtr(a), out)
    return out


_U = float(np.finfo(float).eps)

#: Relative accuracy assumed of scipy's erfcx (measured against 50-digit mpmath: <= 3.2 u on [0, 1e6]).
ERFCX_REL = 8.0 * _U


def _phi_rel(z: np.ndarray) -> np.ndarray:
    """A bound on the relative error of ndtr(z) for z <= 0 (and of log_ndtr's exponent), including
    a relative rounding of z itself: exp(−z²/2) carries the argument's rounding (measured <= 816 u at
    z = −34.6; the bound there is 4,800 u)."""
    return _U * (64.0 + 4.0 * z * z)


def _log_delta_bounds(mu: np.ndarray, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Certified (lower, upper) bounds on log δ_μ(ε) for μ > 0, ε >= 0, from the floating-point values.

    Tail form (a < 0): δ = ½ e^{−a²/2} D with D = erfcx(U) − erfcx(V), U = −a/√2 < V = −b/√2. The
    bound adds the errors of a (3u·(μ/2 + ε/μ)), of erfcx (ERFCX_REL relative, and |erfcx'| <= 2/√π
    on [0, ∞) for its argument's error), of the subtraction and of the logarithms. Direct form (a >= 0):
    δ = Φ(a) − e^{ε + log Φ(b)}; Φ(a) >= 1/2 is good to 4u absolute, log Φ(b) to :func:`_phi_rel`
    plus (|b| + 1)·(error of b) (the Mills ratio bounds d log Φ/db). Where the error swamps δ the
    lower bound is −inf (no claim).
    """
    mu, eps = np.broadcast_arrays(np.asarray(mu, float), np.asarray(eps, float))
    with np.errstate(all="ignore"):
        m = np.where(mu > 0, mu, 1.0)
        a = m / 2 - eps / m
        b = -m / 2 - eps / m
        da = 3.0 * _U * (m / 2 + eps / m)  # error of a and of b
        # Tail form.
        U, V = -a / _SQRT2, -b / _SQRT2
        eU, eV = special.erfcx(U), special.erfcx(V)
        D = eU - eV
        errD = ERFCX_REL * (eU + eV) + 1.13 * (da / _SQRT2 + _U * (np.abs(U) + V)) * 2.0 + _U * np.abs(D)
        relD = errD / D
        tail = -0.5 * a * a + _LOG_HALF + np.log(D)
        e_tail = np.abs(a) * da + _U * (a * a + np.abs(np.log(D)) + 2.0) * 2.0
        tail_hi = tail + e_tail + np.log1p(relD)
        tail_lo = np.where(relD < 1.0, tail - e_tail + np.log1p(-np.minimum(relD, 1.0)), -np.inf)
        # Direct form.
        lb = special.log_ndtr(b)
        arg = eps + lb
        e_arg = _phi_rel(b) + (np.abs(b) + 1.0) * da + _U * (eps + np.abs(lb)) * 2.0
        t2 = np.exp(arg)
        t1 = special.ndtr(a)
        err = 4.0 * _U + 0.4 * da + t2 * np.expm1(np.minimum(e_arg + 2 * _U, 700.0))  # Φ(a), φ <= 0.4, e^{arg}
        d = t1 - t2
        dir_hi = np.log(d + err + _U * np.abs(d))
        dir_lo = np.where(d - err > 0, np.log(np.maximum(d - err - _U * np.abs(d), 0.0)), -np.inf)
        tail_ok = (a < 0) & np.isfinite(tail_hi)
        hi = np.where(tail_ok, tail_hi, dir_hi)
        lo = np.where(tail_ok, tail_lo, dir_lo)
    zero = ~(mu > 0)
    hi = np.where(zero, -np.inf, np.where(np.isfinite(hi), hi, 0.0))  # no bound: δ <= 1
    lo = np.where(zero, -np.inf, np.where(np.isnan(lo), -np.inf, lo))
    return np.minimum(lo, hi), np.minimum(hi, 0.0)


def _log_delta_upper(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """A certified upper bound on log δ_μ(ε) (:func:`_log_delta_bounds`), for searches that must stay safe."""
    return _log_delta_bounds(mu, eps)[1]


def log_delta(mu, epsilon):
    """Natural log of δ(ε) for a μ-GDP mechanism (exact).

    Parameters
    ----------
    mu : array_like
        GDP parameter, μ >= 0.
    epsilon : array_like
        ε >= 0.

    Notes
    -----
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)  ([DRS] Cor. 2.13, [BW] Thm 8).
    """
    scalar = all_scalar(mu, epsilon)
    m = checked("mu", mu, low=0, low_open=False)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(_log_delta(m, e), scalar=scalar)


def delta(mu, epsilon):
    """δ(ε) of a μ-GDP mechanism; exact.

    Examples
    --------
    >>> round(delta(1.0, 1.0), 6)
    0.126937
    """
    scalar = all_scalar(mu, epsilon)
    m = checked("mu", mu, low=0, low_open=False)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(np.exp(_log_delta(m, e)), scalar=scalar)


def _eps_upper(mu: np.ndarray, log_d: np.ndarray) -> np.ndarray:
    """An ε with δ_μ(ε) <= δ, from the tail of the privacy loss N(μ²/2, μ²).

    δ(ε) <= P[L > ε] = Φ̄((ε − μ²/2)/μ) and Φ̄(x) <= e^{−x²/2}/2 for x >= 0,
    so ε = μ²/2 + μ√(−2 log δ) works.
    """
    with np.errstate(over="ignore"):
        return mu * mu / 2 + mu * np.sqrt(-2.0 * log_d)


def _epsilon(mu: np.ndarray, log_d: np.ndarray, rtol: float) -> np.ndarray:
    hi = _eps_upper(mu, log_d)
    zero_ok = _log_delta_upper(mu, np.zeros_like(mu)) <= log_d
    ok, _ = bisect_predicate(
        lambda e: _log_delta_upper(mu, e) <= log_d,
        ok=hi,
        bad=np.zeros_like(hi),
        rtol=rtol,
        atol=1e-300,
    )
    return np.where(zero_ok | (mu == 0), 0.0, ok)


def epsilon(mu, delta, *, rtol: float = 1e-12):
    """Smallest ε (to ``rtol``, rounded up) with δ_μ(ε) <= δ.

    Parameters
    ----------
    mu : array_like
        μ >= 0.
    delta : array_like
        Target δ in (0, 1).

    Returns
    -------
    float or ndarray
        ε >= 0, a sound upper bound: δ_μ was evaluated at the returned ε
        and is at most ``delta``.

    Examples
    --------
    >>> round(epsilon(1.0, 1e-5), 4)
    4.3772
    """
    scalar = all_scalar(mu, delta)
    m = checked("mu", mu, low=0, low_open=False)
    d = checked("delta", delta, low=0, high=1)
    m, d = np.broadcast_arrays(m, d)
    return finish(_epsilon(m, np.log(d), rtol), scalar=scalar)


def _mu_for_dp(eps: np.ndarray, log_d: np.ndarray, rtol: float) -> np.ndarray:
    # Lower bracket from the tail bound: μ²/2 + μ√(2L) = ε.
    s = np.sqrt(-2.0 * log_d)
    lo = -s + np.sqrt(s * s + 2.0 * eps)
    lo = np.maximum(lo, np.finfo(float).tiny)

    def ok(m):
        return _log_delta_upper(m, eps) <= log_d

    hi, found = expand_until(ok, lo * 2.0, want=False)
    good, _ = bisect_predicate(ok, ok=lo, bad=hi, rtol=rtol, geometric=True)
    return good


def mu_for_dp(epsilon, delta, *, rtol: float = 1e-12):
    """Largest μ (rounded down) whose GDP curve satisfies (ε, δ)-DP.

    A Gaussian mechanism is (ε, δ)-DP iff its μ = Δ/σ is at most this value,
    so ``sensitivity / mu_for_dp(ε, δ)`` is the analytic Gaussian calibration
    of [BW]. The returned μ was checked: δ_μ(ε) <= δ.

    Examples
    --------
    >>> round(1 / mu_for_dp(1.0, 1e-5), 4)
    3.7306
    """
    scalar = all_scalar(epsilon, delta)
    e = checked("epsilon", epsilon, low=0)
    d = checked("delta", delta, low=0, high=1)
    e, d = np.broadcast_arrays(e, d)
    return finish(_mu_for_dp(e, np.log(d), rtol), scalar=scalar)


def tradeoff(mu, alpha):
    """Type II error β = G_μ(α) = Φ(Φ⁻¹(1−α) − μ) of the optimal test ([DRS] Def. 2.7)."""
    scalar = all_scalar(mu, alpha)
    m = checked("mu", mu, low=0, low_open=False)
    a = checked("alpha", alpha, low=0, high=1, low_open=False, high_open=False)
    with np.errstate(all="ignore"):
        beta = special.ndtr(special.ndtri(1 - a) - m)
    return finish(np.clip(beta, 0.0, 1.0), scalar=scalar)


def advantage(mu):
    """Best attack advantage TPR − FPR against μ-GDP: 2Φ(μ/2) − 1 (exact)."""
    scalar = all_scalar(mu)
    m = checked("mu", mu, low=0, low_open=False)
    return finish(special.erf(m / (2 * _SQRT2)), scalar=scalar)


def attack_tpr(mu, fpr):
    """Most powerful attack's TPR at false-positive rate α: Φ(μ + Φ⁻¹(α))."""
    scalar = all_scalar(mu, fpr)
    m = checked("mu", mu, low=0, low_open=False)
    a = checked("fpr", fpr, low=0, high=1, low_open=False, high_open=False)
    with np.errstate(all="ignore"):
        tpr = special.ndtr(m + special.ndtri(a))
    return finish(np.clip(tpr, 0.0, 1.0), scalar=scalar)


def compose_mu(mus, axis=-1):
    """μ of the composition of μᵢ-GDP mechanisms: √(Σ μᵢ²) (exact, [DRS] Cor. 3.3)."""
    m = checked("mu", mus, low=0, low_open=False)
    return float(np.sqrt(np.sum(m * m, axis=axis))) if m.ndim <= 1 else np.sqrt(np.sum(m * m, axis=axis))


def clt_mu(rate, sigma, steps):
    """GDP central-limit μ for T Poisson-subsampled Gaussian steps.

    μ ≈ q √(T (e^{1/σ²} − 1))  ([BDLS] Thm 2). Asymptotic: it can fall
    below the true privacy loss (Gopi, Lee & Wutschitz 2021,
    arXiv:2106.02848). Callers must label it approximate.
    """
    scalar = all_scalar(rate, sigma, steps)
    q = checked("rate", rate, low=0, high=1, high_open=False)
    s = checked("sigma", sigma, low=0)
    t = checked("steps", steps, low=0)
    x = 1.0 / (s * s)
    with np.errstate(all="ignore"):
        log_em1 = log_expm1(x)
        mu = np.exp(np.log(q) + 0.5 * (np.log(t) + log_em1))
    return finish(mu, scalar=scalar)
