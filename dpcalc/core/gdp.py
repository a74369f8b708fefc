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


def _log_delta_upper(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """log δ_μ(ε) plus a bound on its floating-point error, for searches that must stay safe.

    In the erfcx form the two terms differ by ≈ μ/√2 out of ≈ |a|/√2, so the
    difference has relative error about u·(1 + |a|/μ) (u the machine epsilon);
    adding 8× that keeps "δ <= target" true when the value is evaluated again.
    """
    with np.errstate(all="ignore"):
        m = np.where(mu > 0, mu, 1.0)
        a = np.abs(m / 2 - eps / m)
        rel = 8.0 * np.finfo(float).eps * (1.0 + a / m)
    return _log_delta(mu, eps) + np.log1p(np.minimum(rel, 1.0))


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
