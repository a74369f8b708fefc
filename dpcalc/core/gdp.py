"""Gaussian differential privacy (μ-GDP) and its exact (ε, δ) profile.

A Gaussian mechanism with sensitivity Δ and noise σ is exactly μ-GDP with
μ = Δ/σ, so the analytic Gaussian calibration (Balle & Wang 2018) and the
GDP ↔ (ε, δ) conversion (Dong, Roth & Su 2022) are one formula.

Every value returned is finished on its safe side: δ, ε, advantages and attack TPRs are rounded
up, trade-off β and the largest admissible μ down, by an error bound that covers every rounding
on the way (``tests/test_exactness.py`` checks them against 50-digit mpmath). "Exact" results are
the true value to within a few ulps (times the problem's condition number where an input enters
through Φ⁻¹), never on the unsafe side.

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

import math

import numpy as np
from scipy import special

from . import _fp
from ._arrays import all_scalar, checked, finish, log_expm1
from ._fp import ULP, two_prod, two_sum
from ._normal import EXP_HALF_SQ_ULPS, SF_ULPS, exp_half_sq, isf, isf_error, mills, sf
from .errors import ValidationError
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
    "homogeneous_mu",
]

_RSQRT2 = 0.7071067811865476
_TWO_OVER_SQRT_PI = 1.1283791670955126
_INV_SQRT_2PI = 0.3989422804014327
_LOG_HALF = float(np.log(0.5))

#: Measured relative errors (ulps) of the scipy functions used, with a margin: erf 1.6, erfcx 4.0 (16,000 points).
_ERF_ULPS = 2.0
_ERFCX_ULPS = 5.0
#: Bound on the relative error (ulps) of the series S below (measured at most 2.4 against mpmath).
_S_ULPS = 3.5
#: Series terms are used where μ <= _SERIES_RATIO·max(x, 1): every ratio t_k is then below 0.7.
_SERIES_RATIO = 0.7


#: M_m(1) = ∫₀^∞ tᵐ e^{−t−t²/2} dt for m = 0…47 (50-digit mpmath quadrature, rounded; M_0(1) = R(1)).
_M_AT_1 = (
    0.6556795424187984,
    0.34432045758120156,
    0.31135908483759694,
    0.3772818303248061,
    0.5567954241879847,
    0.9523318971112398,
    1.8316452238286838,
    3.8823461588387547,
    8.939170407962033,
    22.119598862748006,
    58.33293480891029,
    162.86305381856977,
    478.79922907944336,
    1475.5574167433938,
    4748.8325612893705,
    15908.971273118143,
    55323.51714622241,
    199220.02322366787,
    741279.7682621131,
    2844680.6497639082,
    11239634.94721624,
    45653978.04806192,
    190378355.84347916,
    814009161.2138832,
    3564693023.186137,
    15971526845.94706,
    73145798733.70636,
    342113899260.9172,
    1632822666549.1548,
    7946366512756.527,
    39405490817168.96,
    198985504565526.84,
    1022584710766710.9,
    5344951435330148.0,
    2.840034401997131e16,
    1.5332800478125373e17,
    8.406840359177421e17,
    4.679124136207392e18,
    2.642618519274907e19,
    1.5138053198313184e20,
    8.792406905340818e20,
    5.175980588791192e21,
    3.087288772310616e22,
    1.8651829700612387e23,
    1.1410158750874411e24,
    7.06578919318201e24,
    4.427992518575284e25,
    2.807463777006196e26,
)


def _ratio_dd(num, den):
    """num/den (den > 0) as a double-double (qh, ql): num/den = qh + ql to about 2⁻¹⁰⁴ relative.

    The denominator is scaled into [1/2, 1) by a power of two (exact) so that the residual
    num − qh·den is formed exactly by Dekker's product; where the scaling under- or overflows
    (values beyond 1e±290), ql is 0 and only qh's half ulp is lost.
    """
    m, ex = np.frexp(den)
    with np.errstate(all="ignore"):
        ns = np.ldexp(num, -ex)
        qh = num / den
        p, e, ok = two_prod(qh, m)
        r = (ns - p) - e
        ql = r / m
    ok = ok & np.isfinite(ns) & (np.ldexp(ns, ex) == num) & np.isfinite(qh) & np.isfinite(ql)
    return qh, np.where(ok, ql, 0.0)


#: Bands of at most this many points run the backward recurrence of :func:`_series` on Python floats.
_SCALAR_RUN = 8


def _run_length(x: float, ratio: float) -> tuple[int, int]:
    """(n, top) of :func:`_series`' backward run for points at least x >= 1 with μ/x at most ``ratio``: n
    terms of the series (t_k <= τ = min(μ/x, 0.7), so τⁿ <= 2⁻⁶²) and a start (√n + 21/x)² + 2 terms up."""
    tau = min(ratio, _SERIES_RATIO)
    n = int(min(max(math.ceil(62.0 / -math.log2(max(tau, 1e-300))), 2), 130))
    return n, int(math.ceil((math.sqrt(n) + 21.0 / x) ** 2)) + 2


def _backward_run(x: float, mu: float, n: int, top: int) -> float:
    """One point of :func:`_series`' backward run (x >= 1), on Python floats: the same steps as the array run."""
    kk = float(top + 1)
    r = kk / (0.5 * x + math.hypot(0.5 * x, math.sqrt(kk)))  # fixed point of r = K/(x + r)
    s = 0.0
    for k in range(top, 0, -1):
        den = x + r
        if k <= n:
            s = mu / den * (1.0 - s)
        r = k / den
    return s


def _series(x: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """S = (R(x) − R(x+μ))/R(x) for x >= 0, 0 < μ <= 0.7·max(x, 1), R the Mills ratio, to a few ulps.

    With M_n(x) = ∫₀^∞ tⁿ e^{−xt−t²/2} dt (M_0 = R, M_1 = 1 − xR), R(x+μ) = Σ (−μ)ⁿ M_n/n! and
    M_{n+1} = n M_{n−1} − x M_n. Both evaluations below keep every step free of cancellation:

    * x >= 1: the ratios r_k = M_k/M_{k−1} obey r_k = k/(x + r_{k+1}) run backward (all positive;
      an error in the starting value shrinks by x/(x + r) per step, so the run starts (√n + 21/x)²
      terms up). With t_k = μ r_k/k = μ/(x + r_{k+1}): S = t_1(1 − t_2(1 − t_3(…))), t_k <= 0.7.
    * x < 1: forward, u_n = μⁿ M_n/n! with u_{n+1} = (μ² u_{n−1} − μx u_n)/(n+1) and
      S = (u_1 − u_2 + u_3 − …)/M_0 (xR(x) <= 0.66 there, so M_1 loses at most a bit).
    """
    out = np.empty_like(x)
    if x.size == 0:
        return out
    # Backward runs, in bands of x (the run's length is set by the band's smallest x and largest μ/x).
    for lo, hi in ((1.0, 2.5), (2.5, 6.0), (6.0, np.inf)):
        band = (x >= lo) & (x < hi)
        if not band.any():
            continue
        xb, mb = x[band], mu[band]
        if xb.size <= _SCALAR_RUN:
            # A few points (a search's steps): the same operations on Python floats, without numpy's
            # per-call cost over hundreds of steps (IEEE doubles either way), each run as long as its
            # own x and μ/x need.
            out[band] = [_backward_run(xi, mi, *_run_length(xi, mi / xi)) for xi, mi in zip(xb.tolist(), mb.tolist())]
            continue
        # The run's length from the band's smallest x and largest μ/x (x in [1, 2.5) needs up to ~600 steps).
        n, top = _run_length(float(np.min(xb)), float(np.max(mb / xb)))
        kk = float(top + 1)
        with np.errstate(over="ignore"):
            r = kk / (0.5 * xb + np.hypot(0.5 * xb, np.sqrt(kk)))  # fixed point of r = K/(x + r)
        s = np.zeros_like(xb)
        for k in range(top, 0, -1):
            den = xb + r  # x + r_{k+1}
            if k <= n:
                s = mb / den * (1.0 - s)
            r = k / den
        out[band] = s
    big = x >= 1.0
    small = ~big
    if small.any():
        xs, ms = x[small], mu[small]
        # M_0 and M_1 at x in [0, 1) from their Taylor series at 1 (all terms positive: M_n' = −M_{n+1}).
        h, hl = two_sum(1.0, -xs)
        m0 = np.full(xs.shape, _M_AT_1[-2])
        m1 = np.full(xs.shape, _M_AT_1[-1])
        for j in range(len(_M_AT_1) - 3, -1, -1):
            m0 = _M_AT_1[j] + h * m0 / (j + 1)
            m1 = _M_AT_1[j + 1] + h * m1 / (j + 1)
        m2 = m0 - xs * m1
        m0, m1 = m0 + m1 * hl, m1 + m2 * hl
        prev = m0  # u_0
        cur = ms * m1  # u_1
        total = cur.copy()
        sign = -1.0
        for n in range(1, 60):
            nxt = (ms * ms * prev - ms * xs * cur) / (n + 1)
            prev, cur = cur, nxt
            total = total + sign * cur
            sign = -sign
        out[small] = total / m0
    return out


def _parts(mu, eps):
    """δ_μ(ε) with error bounds: (d, rel, logd, log_err) for μ >= 0, ε >= 0 (any broadcastable shapes).

    d is δ (it underflows to 0 below 1e-308), rel a bound on its relative error; logd is log δ
    (finite far below the underflow) and log_err a bound on its absolute error.

    With a = μ/2 − ε/μ and b = a − μ (a is formed as a double-double, so e^{−a²/2} carries no
    rounding of a):

    * a >= 0: δ = ½[erf(a/√2) − erf(b/√2)] − ½ e^{−a²/2} erfcx(−b/√2)(1 − e^{−ε}), a sum minus a term
      at most ~0.4/max(μ, 1) of it (using e^ε Φ(b) = φ(a) R(−b));
    * a < 0, x = −a: δ = Φ̄(x) − e^ε Φ̄(x+μ) = φ(x)[R(x) − R(x+μ)]: for μ > 0.7·max(x, 1) the
      difference of erfcx values loses at most 2 bits; below, R(x) − R(x+μ) = R(x)·S (:func:`_series`).
    """
    mu, eps = np.broadcast_arrays(np.asarray(mu, dtype=np.float64), np.asarray(eps, dtype=np.float64))
    shape = mu.shape
    mu, eps = mu.ravel(), eps.ravel()
    n = mu.size
    d = np.zeros(n)
    rel = np.zeros(n)
    logd = np.full(n, -np.inf)
    log_err = np.zeros(n)
    pos = mu > 0
    m, e = mu[pos], eps[pos]
    qh, ql = _ratio_dd(e, m)
    with np.errstate(all="ignore"):
        s, se = two_sum(0.5 * m, -qh)
        ah, al = two_sum(s, se - ql)
        bneg = 0.5 * m + qh  # −b > 0, to half an ulp
        # Where a is NaN (μ = ∞) no formula applies: δ <= 1 is all that is claimed.
        dd = np.ones(m.size)
        rr = np.zeros(m.size)
        ld = np.zeros(m.size)
        le = np.zeros(m.size)

        # a >= 0.
        A = ah >= 0
        if A.any():
            a_, al_, b_, e_ = ah[A], al[A], bneg[A], e[A]
            t1 = 0.5 * (special.erf(a_ * _RSQRT2) + special.erf(b_ * _RSQRT2)) + al_ * _INV_SQRT_2PI * np.exp(
                -0.5 * a_ * a_
            )
            t2 = 0.5 * exp_half_sq(a_, al_) * special.erfcx(b_ * _RSQRT2) * -np.expm1(-e_)
            v = t1 - t2
            err = ((_ERF_ULPS + 2.0) * t1 + (_ERFCX_ULPS + EXP_HALF_SQ_ULPS + 4.0) * t2) * ULP / v + ULP
            dd[A], rr[A] = v, err
            ok = v > 1e-290
            ld[A] = np.where(ok, np.log(v), np.log(_INV_SQRT_2PI * m[A]))  # δ <= μ φ(0) where δ is tiny
            le[A] = np.where(ok, err + ULP * np.abs(np.log(v)), 0.0)

        # a < 0.
        B = ~A & ~np.isnan(ah)
        if B.any():
            xh, xl, y, mb = -ah[B], -al[B], bneg[B], m[B]
            p, pe, ok2 = two_prod(xh, xh)
            c = np.where(ok2, 0.5 * pe, 0.0) + xh * xl  # (x)²/2 = p/2 + c
            w = xh * _RSQRT2
            ex = special.erfcx(w)
            ex = ex + (2.0 * w * ex - _TWO_OVER_SQRT_PI) * (xl * _RSQRT2)
            ser = mb <= _SERIES_RATIO * np.maximum(xh, 1.0)
            S = np.ones(xh.size)
            S[ser] = _series(xh[ser], mb[ser])
            ey = special.erfcx(np.where(ser, 1.0, y) * _RSQRT2)
            diff = ex - ey
            # δ = ½ e^{−x²/2} k, with k = erfcx(x/√2)·S (series) or the erfcx difference.
            k = np.where(ser, ex * S, diff)
            kerr = np.where(
                ser, (_ERFCX_ULPS + _S_ULPS + 1.0) * ULP, ((_ERFCX_ULPS + 1.0) * (ex + ey) * ULP) / diff + ULP
            )
            # Near the centre (x < 1, series) ½ e^{−x²/2} erfcx(x/√2) is Φ̄(x), which sf has to SF_ULPS.
            near = ser & (xh < 1.0)
            v = np.where(near, sf(xh, xl) * S, 0.5 * exp_half_sq(xh, xl) * k)
            verr = np.where(near, (SF_ULPS + _S_ULPS + 1.0) * ULP, kerr + (EXP_HALF_SQ_ULPS + 1.0) * ULP)
            dd[B], rr[B] = v, verr
            lk = np.log(0.5 * k)
            ld[B] = -0.5 * p + (lk - c)
            le[B] = verr + 2.0 * ULP * (0.5 * p + np.abs(lk) + 1.0)
            big = ~np.isfinite(p)  # x beyond 1e154: δ = 0 to any precision
            ld[B] = np.where(big, -np.inf, ld[B])
            dd[B] = np.where(big, 0.0, dd[B])
            rr[B] = np.where(big, 0.0, rr[B])
            le[B] = np.where(big, 0.0, le[B])
    d[pos], rel[pos], logd[pos], log_err[pos] = np.maximum(dd, 0.0), rr, ld, le
    return d.reshape(shape), rel.reshape(shape), logd.reshape(shape), log_err.reshape(shape)


def _log_delta_bounds(mu: np.ndarray, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Certified (lower, upper) bounds on log δ_μ(ε) for μ >= 0, ε >= 0 (any broadcastable shapes).

    From :func:`_parts`: the computed log δ plus and minus its error bound, rounded outward. Where
    the bound swamps δ the lower bound is −inf (no claim); μ = 0 gives (−inf, −inf).
    """
    _, rel, logd, err = _parts(mu, eps)
    with np.errstate(invalid="ignore"):
        hi = _fp.add_up(logd, err)
        lo = np.where(rel < 0.5, _fp.add_down(logd, -err), -np.inf)
    hi = np.where(np.isnan(hi), 0.0, np.minimum(hi, 0.0))  # no bound: δ <= 1
    lo = np.where(np.isnan(lo), -np.inf, lo)
    return np.minimum(lo, hi), hi


def _log_delta_upper(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """A certified upper bound on log δ_μ(ε) (:func:`_log_delta_bounds`)."""
    return _log_delta_bounds(mu, eps)[1]


def _log_delta(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """log δ_μ(ε), the computed value (no direction; see :func:`_log_delta_bounds` for bounds)."""
    return _parts(mu, eps)[2]


def _delta_upper(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """δ_μ(ε) rounded up by its error bound: never below the true δ, within a few ulps of it (no validation)."""
    mu, eps = np.broadcast_arrays(np.asarray(mu, dtype=np.float64), np.asarray(eps, dtype=np.float64))
    d, rel, _, _ = _parts(mu, eps)
    return np.where(mu > 0, np.minimum(_fp.widen_up(d, rel), 1.0), 0.0)


def log_delta(mu, epsilon):
    """Natural log of δ(ε) for a μ-GDP mechanism: a certified upper bound, within a few ulps of the truth.

    Parameters
    ----------
    mu : array_like
        GDP parameter, μ >= 0.
    epsilon : array_like
        ε >= 0.

    Notes
    -----
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)  ([DRS] Cor. 2.13, [BW] Thm 8), finite far below the
    double-precision underflow of δ itself.
    """
    scalar = all_scalar(mu, epsilon)
    m = checked("mu", mu, low=0, low_open=False)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(_log_delta_upper(m, e), scalar=scalar)


def delta(mu, epsilon):
    """δ(ε) of a μ-GDP mechanism; exact: the true value rounded up, within a few ulps.

    Below about 1e-308 the value is subnormal (or 0 where the true δ is below 5e-324); the CLI shows
    such a δ as its floor, 1e-300, labelled upper.

    Examples
    --------
    >>> round(delta(1.0, 1.0), 6)
    0.126937
    """
    scalar = all_scalar(mu, epsilon)
    m = checked("mu", mu, low=0, low_open=False)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(_delta_upper(m, e), scalar=scalar)


#: Targets δ at or above this are compared in linear space (so a printed δ at the answer is at most the
#: target bit for bit); smaller ones in log space.
_LINEAR_FROM = 1e-290


def _delta_ok(mu, e, delta_t, log_t):
    """δ_μ(e) <= δ_t, certified: in linear space for δ_t >= 1e-290, in log space below."""
    mu, e, delta_t, log_t = np.broadcast_arrays(mu, e, delta_t, log_t)
    d, rel, logd, err = _parts(mu, e)
    with np.errstate(invalid="ignore"):
        lin = np.minimum(_fp.widen_up(d, rel), 1.0) <= delta_t
        lg = _fp.add_up(logd, err) <= log_t
    return (mu == 0) | np.where(delta_t >= _LINEAR_FROM, lin, lg)


def _eps_upper(mu: np.ndarray, log_d: np.ndarray) -> np.ndarray:
    """An ε with δ_μ(ε) <= δ, from the tail of the privacy loss N(μ²/2, μ²).

    δ(ε) <= P[L > ε] = Φ̄((ε − μ²/2)/μ) and Φ̄(x) <= e^{−x²/2}/2 for x >= 0,
    so ε = μ²/2 + μ√(−2 log δ) works.
    """
    with np.errstate(over="ignore"):
        return mu * mu / 2 + mu * np.sqrt(-2.0 * log_d)


def _targets(log_d, delta_t=None):
    """(δ target, log δ target rounded down): the caller's log δ may be half an ulp high."""
    log_t = np.nextafter(np.asarray(log_d, dtype=np.float64), -np.inf)
    if delta_t is None:
        delta_t = np.zeros_like(log_t)  # log space only
    return np.asarray(delta_t, dtype=np.float64), log_t


#: Few points (one answer, a search's step) start from a root guessed on a cheap double-precision curve
#: (:func:`_gaussian_guess`): here the bisection from a bracket checked around it — a dozen checks instead
#: of about seventy, to the same last bit; in :mod:`.pld.exact`, a ladder of checks instead of a search.
GUESS_UP_TO = 16


def _log_delta_cheap(mu: float, e: float) -> float:
    """log δ_μ(ε) = log(Φ(a) − e^ε Φ(a − μ)), a = μ/2 − ε/μ, in doubles without error bounds: to guess a root."""
    a = 0.5 * mu - e / mu
    la = float(special.log_ndtr(a))
    r = e + float(special.log_ndtr(a - mu)) - la
    return la + math.log(-math.expm1(r)) if r < 0 else -math.inf


def _root_cheap(f, top: float) -> float:
    """The root in [0, top] of a decreasing f (f(0) > 0 assumed checked by the caller, f(top) <= 0 or top
    extended), by the Illinois method on the cheap curve: a guess, certified by the caller."""
    a, c = 0.0, top
    fa, fc = f(a), f(c)
    for _ in range(60):
        if fc <= 0:
            break
        a, fa, c = c, fc, 2 * c + 1
        fc = f(c)
    if not (fa > 0 >= fc):
        return c if fa <= 0 else math.nan
    side = 0
    for _ in range(200):
        x = c - fc * (c - a) / (fc - fa)
        if not (a < x < c):
            x = a + 0.5 * (c - a)
        fx = f(x)
        if fx == 0 or c - a <= 2 * ULP * c:
            return x
        if fx < 0:
            c, fc = x, fx
            if side == 1:
                fa *= 0.5
            side = 1
        else:
            a, fa = x, fx
            if side == -1:
                fc *= 0.5
            side = -1
    return 0.5 * (a + c)


def _gaussian_guess(mu: float, log_d: float) -> float:
    """ε with log δ_μ(ε) = log δ on the cheap curve (0 where δ_μ(0) is already below δ)."""
    if not (mu > 0 and math.isfinite(mu) and log_d < 0):
        return math.nan
    f = lambda e: _log_delta_cheap(mu, e) - log_d  # noqa: E731
    if f(0.0) <= 0:
        return 0.0
    return _root_cheap(f, mu * mu / 2 + mu * math.sqrt(-2.0 * log_d))


#: Relative distances 2^-k from the guess at which the bracket is checked.
_GUESS_RUNGS = 2.0 ** -np.array([50.0, 46.0, 40.0, 30.0, 20.0, 10.0])


def _narrowed(ok, mu: np.ndarray, log_d: np.ndarray, hi: np.ndarray, bad: np.ndarray):
    """(hi, bad) narrowed by one check of the points x̂·(1 ± 2^-k) around guessed roots x̂: the smallest that
    passes replaces ``hi`` where below it, the largest failing one below the new ``hi`` replaces ``bad``
    where above it. Every point taken was checked, so the bisection from them is as sound as from the
    originals (and, where the check is monotone, ends on the same double)."""
    g = np.array([_gaussian_guess(float(m), float(t)) for m, t in zip(mu, log_d)])
    use = np.isfinite(g) & (g > 0)
    if not use.any():
        return hi, bad
    x = np.where(use, g, 1.0)[None, :] * np.concatenate([1 + _GUESS_RUNGS, 1 - _GUESS_RUNGS])[:, None]
    passed = ok(x)
    new_hi = np.min(np.where(passed, x, np.inf), axis=0)
    hi = np.where(use & (new_hi < hi), new_hi, hi)
    new_bad = np.max(np.where(~passed & (x < hi[None, :]), x, -np.inf), axis=0)
    bad = np.where(use & (new_bad > bad), new_bad, bad)
    return hi, bad


#: Answers of :func:`_epsilon` kept by :class:`remembered` (None: none kept), keyed by (μ, δ).
_memo: dict | None = None


class remembered:
    """Context manager: exact ε answers computed ahead by :func:`prefetch_epsilon` are kept and reused while it
    is open — for a stream of objects each converted on its own (``convert`` or ``group`` of 2,000 piped
    Gaussian mechanisms took 22 s one bisection at a time; one vectorised call does the chunk)."""

    def __enter__(self):
        global _memo
        self._saved, _memo = _memo, {}
        return self

    def __exit__(self, *exc) -> None:
        global _memo
        _memo = self._saved


def prefetch_epsilon(mu, delta) -> None:
    """Compute the exact ε at each (μ, δ) (flat, paired) in one vectorised call and keep it (inside
    :class:`remembered`; elsewhere nothing). Invalid pairs are skipped: their callers report them. The
    answers are a lone call's to the last bit: each point's bisection starts from the bracket its own guess
    gives (:func:`_narrowed`), whatever the size of the batch."""
    if _memo is None:
        return
    m = np.asarray(mu, dtype=np.float64).ravel()
    d = np.asarray(delta, dtype=np.float64).ravel()
    keep = np.isfinite(m) & (m >= 0) & (d > 0) & (d < 1)
    keys = [(a, b) for a, b in zip(m[keep].tolist(), d[keep].tolist()) if (a, b) not in _memo]
    if not keys:
        return
    km, kd = (np.array(x, dtype=np.float64) for x in zip(*keys))
    with np.errstate(all="ignore"):
        out = _epsilon(km, np.log(kd), 0.0, kd, guess=True)  # each from a lone call's bracket: the same digits
    _memo.update(zip(keys, out.tolist()))


def _epsilon(mu: np.ndarray, log_d: np.ndarray, rtol: float = 0.0, delta_t=None, guess: bool = False) -> np.ndarray:
    """Smallest ε (to ``rtol``; 0: to the last bit) with δ_μ(ε) <= δ, found by geometric bisection on
    checked points, for 1-D ``mu`` and ``log_d`` (``delta_t``: the target δ itself, for linear checks)."""
    mu, log_d = np.broadcast_arrays(np.asarray(mu, dtype=np.float64), np.asarray(log_d, dtype=np.float64))
    if _memo and rtol == 0.0 and delta_t is not None:
        keys = list(zip(mu.tolist(), np.broadcast_to(delta_t, mu.shape).tolist()))
        if all(k in _memo for k in keys):
            return np.array([_memo[k] for k in keys], dtype=np.float64)
    dt, log_t = _targets(log_d, None if delta_t is None else np.broadcast_to(delta_t, mu.shape))

    def ok(e):
        return _delta_ok(mu, e, dt, log_t)

    hi = _eps_upper(mu, log_d)
    hi = np.where(np.isfinite(hi), hi, np.finfo(float).max)
    hi, found = expand_until(ok, np.maximum(hi, np.finfo(float).tiny), want=True)
    zero_ok = ok(np.zeros_like(mu))
    least = np.full(mu.shape, 5e-324)
    least_ok = ok(least)
    bad = least
    if mu.size <= GUESS_UP_TO or guess:
        hi, bad = _narrowed(ok, mu, log_d, hi, bad)
    good, _ = bisect_predicate(ok, ok=hi, bad=bad, rtol=rtol, geometric=True)
    # No checked point (μ beyond what double precision holds): no answer.
    good = np.where(found & np.isfinite(mu), good, np.inf)
    return np.where(zero_ok | (mu == 0), 0.0, np.where(least_ok, least, good))


def epsilon(mu, delta, *, rtol: float = 0.0):
    """Smallest ε with δ_μ(ε) <= δ: exact (the true ε rounded up, within a few ulps; ``rtol`` > 0
    stops the search earlier, still on the safe side).

    Parameters
    ----------
    mu : array_like
        μ >= 0.
    delta : array_like
        Target δ in (0, 1).

    Returns
    -------
    float or ndarray
        ε >= 0, a sound upper bound: δ_μ was evaluated at the returned ε, with its error bound,
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
    shape = m.shape
    out = _epsilon(m.ravel(), np.log(d.ravel()), rtol, d.ravel())
    return finish(out.reshape(shape), scalar=scalar)


def _mu_for_dp(eps: np.ndarray, log_d: np.ndarray, rtol: float = 0.0, delta_t=None) -> np.ndarray:
    """Largest μ (to ``rtol``; 0: to the last bit) with δ_μ(ε) <= δ, checked (ε > 0)."""
    eps, log_d = np.broadcast_arrays(np.asarray(eps, dtype=np.float64), np.asarray(log_d, dtype=np.float64))
    dt, log_t = _targets(log_d, None if delta_t is None else np.broadcast_to(delta_t, eps.shape))

    def ok(m):
        return _delta_ok(m, eps, dt, log_t)

    # From the tail bound μ²/2 + μ√(2L) = ε: μ = 2ε/(s + √(s² + 2ε)), s = √(2L); checked, and halved if not.
    s = np.sqrt(-2.0 * log_d)
    with np.errstate(over="ignore"):
        lo = 2.0 * eps / (s + np.sqrt(s * s + 2.0 * eps))
    lo = np.where(np.isfinite(lo), lo, 1e154)
    # ... and never below μ₀ with δ_μ₀(0) = 2Φ(μ₀/2) − 1 = δ (δ_μ(ε) falls with ε, so μ₀ meets every ε; a
    # hair below it for its rounding — it is checked like any start): at tiny ε the tail bound's start
    # is ε/√(2L), hundreds of doublings below the answer (ε = 1e-300 stopped at μ = 7e-241, 1e235 too small).
    with np.errstate(under="ignore"):
        mu0 = 2.0 * np.sqrt(2.0) * special.erfinv(np.exp(log_d)) * (1.0 - 1e-9)
    lo = np.maximum(lo, np.where(np.isfinite(mu0), mu0, 0.0))
    lo = np.maximum(lo, np.finfo(float).tiny)
    lo, found = expand_until(ok, lo, factor=0.5, want=True, max_steps=1100)
    hi, _ = expand_until(ok, lo * 2.0, want=False)
    good, _ = bisect_predicate(ok, ok=lo, bad=hi, rtol=rtol, geometric=True)
    return np.where(found, good, 0.0)  # μ = 0 meets every (ε, δ)


def mu_for_dp(epsilon, delta, *, rtol: float = 0.0):
    """Largest μ (rounded down: within a few ulps below the true one) whose GDP curve satisfies (ε, δ)-DP.

    A Gaussian mechanism is (ε, δ)-DP iff its μ = Δ/σ is at most this value,
    so ``sensitivity / mu_for_dp(ε, δ)`` (rounded up) is the analytic Gaussian calibration
    of [BW]. The returned μ was checked: δ_μ(ε) <= δ, with its error bound.

    Examples
    --------
    >>> round(1 / mu_for_dp(1.0, 1e-5), 4)
    3.7306
    """
    scalar = all_scalar(epsilon, delta)
    e = checked("epsilon", epsilon, low=0, low_open=False)  # (ε = 0: δ_μ(0) = 2Φ(μ/2) − 1 <= δ)
    d = checked("delta", delta, low=0, high=1)
    e, d = np.broadcast_arrays(e, d)
    shape = e.shape
    out = _mu_for_dp(e.ravel(), np.log(d.ravel()), rtol, d.ravel())
    return finish(out.reshape(shape), scalar=scalar)


def _tail_sensitivity(w):
    """Bound on |d log Φ̄(w)/dw| = φ(w)/Φ̄(w): 1/R(w) for w >= 0, 0.8 for w < 0."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        inv = 1.0 / mills(np.maximum(w, 0.0))
    return np.where(w >= 0, inv * (1.0 + 4 * ULP), 0.8)


#: Type I errors (false-positive rates) between 0 and this are refused: Φ̄⁻¹ of a subnormal α cannot be
#: found to double precision (Φ̄ itself underflows there), so β and the TPR could not be certified.
ALPHA_FLOOR = 1e-300


def _alpha(name, value):
    a = checked(name, value, low=0, high=1, low_open=False, high_open=False)
    tiny = (a > 0) & (a < ALPHA_FLOOR)
    if tiny.any():
        raise ValidationError(
            name,
            float(a[tiny].flat[0]),
            f"0 or a number in [{ALPHA_FLOOR:g}, 1] (smaller ones cannot be computed exactly)",
        )
    return a


def _shifted(mu, alpha):
    """w = μ − Φ̄⁻¹(α) as a double-double and a bound on its absolute error."""
    zh, zl = isf(alpha)
    with np.errstate(invalid="ignore"):
        wh, wl = two_sum(mu, -zh)
        wh, wl = two_sum(wh, wl - zl)
    with np.errstate(over="ignore"):  # (μ near 1e308: inf, and β, TPR are then set by w alone)
        dz = isf_error(zh) + 2 * ULP * ULP * (np.abs(mu) + np.abs(wh))
    return wh, wl, dz


def tradeoff(mu, alpha):
    """Type II error β = G_μ(α) = Φ(Φ⁻¹(1−α) − μ) of the optimal test ([DRS] Def. 2.7), rounded down.

    Computed as Φ̄(μ − z) with z = Φ̄⁻¹(α) in double-double (1 − α is never formed). β is within a
    few ulps of the truth times its condition number in α (R(z)/R(μ − z), R the Mills ratio: large
    only where β is far in the tail while α is not), and never above it: a β too high would make
    the best attack look weaker than it is.
    """
    scalar = all_scalar(mu, alpha)
    m = checked("mu", mu, low=0, low_open=False)
    a = _alpha("alpha", alpha)
    m, a = np.broadcast_arrays(m, a)
    wh, wl, dz = _shifted(m, a)
    with np.errstate(all="ignore"):
        beta = sf(wh, wl)
        rel = (SF_ULPS + 1.0) * ULP + dz * _tail_sensitivity(wh)
        beta = _fp.widen_down(beta, rel)
    # Far past the tail (w >= 40: β < 1e-349, below every double) β is 0 rounded down — also where μ near
    # 1e308 overflows the error bound (inf·0 would be NaN).
    beta = np.where(wh >= 40.0, 0.0, beta)
    beta = np.where(a == 0, 1.0, np.where(a == 1, 0.0, beta))
    return finish(np.clip(beta, 0.0, 1.0), scalar=scalar)


def advantage(mu):
    """Best attack advantage TPR − FPR against μ-GDP: 2Φ(μ/2) − 1 = erf(μ/(2√2)), rounded up (exact)."""
    scalar = all_scalar(mu)
    m = checked("mu", mu, low=0, low_open=False)
    # erf: 1.3 ulps; the argument's two roundings move erf by at most as much relatively.
    v = _fp.widen_up(special.erf(m * (0.5 * _RSQRT2)), (_ERF_ULPS + 2.0) * ULP)
    return finish(np.where(m == 0, 0.0, np.minimum(v, 1.0)), scalar=scalar)


def attack_tpr(mu, fpr):
    """Most powerful attack's TPR at false-positive rate α: Φ(μ + Φ⁻¹(α)) = Φ(μ − Φ̄⁻¹(α)), rounded up
    (exact, in the sense of :func:`tradeoff`)."""
    scalar = all_scalar(mu, fpr)
    m = checked("mu", mu, low=0, low_open=False)
    a = _alpha("fpr", fpr)
    m, a = np.broadcast_arrays(m, a)
    wh, wl, dz = _shifted(m, a)
    with np.errstate(all="ignore"):
        tpr = sf(-wh, -wl)
        rel = (SF_ULPS + 1.0) * ULP + dz * _tail_sensitivity(-wh)
        tpr = _fp.widen_up(tpr, rel)
    tpr = np.where(wh >= 40.0, 1.0, tpr)  # 1 − (below 1e-349): 1 rounded up (see tradeoff)
    tpr = np.where(a == 0, 0.0, np.where(a == 1, 1.0, tpr))
    return finish(np.clip(tpr, 0.0, 1.0), scalar=scalar)


def compose_mu(mus, axis=-1):
    """μ of the composition of μᵢ-GDP mechanisms: √(Σ μᵢ²), rounded up (exact, [DRS] Cor. 3.3)."""
    m = checked("mu", mus, low=0, low_open=False)
    sq = _fp.mul_up(m, m)
    n = sq.shape[axis] if sq.ndim else 1
    total = np.sum(sq, axis=axis) if sq.ndim else sq
    # A sum of n non-negative terms is within (n − 1)·u of the exact sum.
    out = _fp.sqrt_up(_fp.widen_up(total, max(n - 1, 0) * 0.5 * ULP))
    out = np.where(total == 0, 0.0, out)
    return float(out) if np.ndim(out) == 0 else out


def homogeneous_mu(mu, times):
    """μ of k-fold composition of μ-GDP: √k·μ, rounded up (exact)."""
    scalar = all_scalar(mu, times)
    m = checked("mu", mu, low=0, low_open=False)
    k = checked("times", times, low=1, low_open=False, integer=True)
    return finish(_fp.mul_up(_fp.sqrt_up(k), m), scalar=scalar)


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
