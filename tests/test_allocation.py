"""Balls-in-bins (random allocation): the dominating pair of :mod:`dpcalc.core.pld.allocation`.

One epoch of t steps is dominated by P = (1/t)Σ_i N(e_i/σ, I_t) against Q = N(0, I_t); its likelihood
ratio is L = (1/t)Σ_i W_i, W_i = exp(Z_i/σ − 1/(2σ²)) iid under Q, and its exact δ's are

    remove: δ(ε) = E_Q[(L − e^ε)₊],    add: δ(ε) = E_Q[(1 − e^ε·L)₊].

Checked here: (a) the pair's one-epoch δ against those exact values — t = 1 (the Gaussian mechanism,
closed form), t = 2 (conditioning on Z₁, the inner expectation is a lognormal call or put in closed
form; one scipy quadrature over Z₁, checked against mpmath), t = 3 (two nested composite
Gauss–Legendre rules over Z₁ and Z₂, the Z₃ expectation in closed form; the rule is checked against
the t = 2 quadrature); (b) the pair's normalisation and structure; (c) E-epoch ε against a realisable
lower bound, the peer's recorded interval, the no-amplification GDP bound and Poisson subsampling;
(d) a property over the parameter box; (e) the peer live, where it is installed.

Known defects are pinned by ``xfail(strict=True)`` tests (each reason says what is wrong): they fail
loudly (XPASS) once fixed, so the marker can be dropped.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os
import time

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpref import delta_gauss
from scipy import integrate, optimize, special

from dpcalc.core import pld
from dpcalc.core.pld import exact
from dpcalc.core.pld.allocation import RESOLUTION, AllocationTooLarge, random_allocation_gaussian
from dpcalc.core.pld.sampling import max_statistic


def _openblas_threads():
    """(get, set) of the thread count of numpy's bundled OpenBLAS, or None where it is not found."""
    folder = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in glob.glob(os.path.join(folder, "*openblas*")):
        try:
            lib = ctypes.CDLL(path)
            return lib.scipy_openblas_get_num_threads64_, lib.scipy_openblas_set_num_threads64_
        except (OSError, AttributeError):
            continue
    return None


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    """np.convolve of long windows (the construction's direct convolutions) goes through OpenBLAS's
    ddot, which starts threads per call beyond 10^4 terms: with more threads than free cores (pytest
    -n 2 on 2 cores) a 0.03 s convolution took up to 40 s. One BLAS thread while this module runs."""
    fns = _openblas_threads()
    if fns is None:
        yield
        return
    get, set_ = fns
    before = int(get())
    set_(1)
    try:
        yield
    finally:
        set_(before)


# --------------------------------------------------------------------------- exact one-epoch references

#: Relative error allowed for a reference's own error when checking upper >= exact.
REF_REL = 1e-9


def _phi(z):
    return np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _w(z, s):
    """W at Z = z."""
    return np.exp(z / s - 0.5 / (s * s))


def _z_at(w, s):
    """The z with W(z) = w."""
    return s * np.log(w) + 0.5 / s


def _call(a, c, s):
    """E[(a·W − c)₊] for c > 0 (lognormal partial expectations: E[W·1{W > k}] = Φ̄(d − 1/σ), P[W > k]
    = Φ̄(d), d = σ log k + 1/(2σ), k = c/a)."""
    c = np.maximum(c, 1e-300)
    d = s * np.log(c / a) + 0.5 / s
    return a * special.ndtr(-(d - 1 / s)) - c * special.ndtr(-d)


def _put(a, b, s):
    """E[(b − a·W)₊] for b > 0."""
    b = np.maximum(b, 1e-300)
    d = s * np.log(b / a) + 0.5 / s
    return b * special.ndtr(d) - a * special.ndtr(d - 1 / s)


def _upper_tail(a, c, s, zs):
    """∫_{zs}^∞ φ(z)·(a·W(z) + c) dz."""
    return a * special.ndtr(-(zs - 1 / s)) + c * special.ndtr(-zs)


def t2_remove(s, eps):
    """E[((W₁ + W₂)/2 − e^ε)₊]: the Z₂ expectation in closed form, one quadrature over Z₁ up to the
    kink z* (W₁/2 = e^ε) and the part beyond it (where the positive part is the identity) in closed form."""
    ee = math.exp(eps)
    zs = _z_at(2 * ee, s)
    body, _ = integrate.quad(
        lambda z: _phi(z) * _call(0.5, ee - 0.5 * _w(z, s), s), -np.inf, zs, epsabs=0, epsrel=1e-13, limit=500
    )
    return body + _upper_tail(0.5, 0.5 - ee, s, zs)


def t2_add(s, eps):
    """E[(1 − e^ε(W₁ + W₂)/2)₊]: zero beyond W₁ = 2e^{−ε}."""
    ee = math.exp(eps)
    zd = _z_at(2 / ee, s)
    v, _ = integrate.quad(
        lambda z: _phi(z) * _put(0.5 * ee, 1 - 0.5 * ee * _w(z, s), s), -np.inf, zd, epsabs=0, epsrel=1e-13, limit=500
    )
    return v


def _mp_t2(s, eps, remove: bool):
    """The t = 2 references in mpmath (30 digits, tanh-sinh): an independent check of the quadrature."""
    with mp.workdps(30):
        s, eps = mp.mpf(s), mp.mpf(eps)
        ee = mp.exp(eps)

        def w(z):
            return mp.exp(z / s - 1 / (2 * s * s))

        if remove:
            zs = s * mp.log(2 * ee) + 1 / (2 * s)

            def f(z):
                c = ee - w(z) / 2
                if c <= 0:
                    return mp.npdf(z) * (mp.mpf(1) / 2 - c)
                d = s * mp.log(2 * c) + 1 / (2 * s)
                return mp.npdf(z) * (mp.ncdf(-(d - 1 / s)) / 2 - c * mp.ncdf(-d))

            tail = mp.ncdf(-(zs - 1 / s)) / 2 + (mp.mpf(1) / 2 - ee) * mp.ncdf(-zs)
            return mp.quad(f, [-mp.inf, zs - 10, zs - 3, zs]) + tail
        a = ee / 2
        zd = s * mp.log(2 / ee) + 1 / (2 * s)

        def g(z):
            b = 1 - a * w(z)
            if b <= 0:
                return mp.mpf(0)
            d = s * mp.log(b / a) + 1 / (2 * s)
            return mp.npdf(z) * (b * mp.ncdf(d) - a * mp.ncdf(d - 1 / s))

        return mp.quad(g, [-mp.inf, zd - 10, zd - 3, zd])


# Composite Gauss–Legendre on [Z_LO, hi] (φ(−14) ≈ 5e-44: the part below is far under REF_REL of every
# δ checked), uniform panels of width <= 1/2 up to hi − 1 and geometrically graded ones towards hi,
# where the integrands have their kink; one layout per row of ``hi``, vectorised.
_GX, _GW = np.polynomial.legendre.leggauss(16)
_Z_LO = -14.0
_GRADED = np.concatenate(([1.0], 10.0 ** -np.arange(1, 13), [0.0]))


def _gl(hi):
    hi = np.atleast_1d(np.asarray(hi, float))
    n_body = max(2, int(np.ceil((float(hi.max()) - 1 - _Z_LO) / 0.5)))
    frac = np.linspace(0.0, 1.0, n_body + 1)
    body = _Z_LO + frac[None, :] * ((hi - 1) - _Z_LO)[:, None]
    edges = np.concatenate((body, hi[:, None] - _GRADED[None, 1:]), axis=1)
    a, b = edges[:, :-1], edges[:, 1:]
    half = 0.5 * (b - a)
    x = (half[..., None] * _GX + (0.5 * (a + b))[..., None]).reshape(hi.size, -1)
    w = (half[..., None] * _GW).reshape(hi.size, -1)
    return x, w


def _pair_remove(a, c, s):
    """E[(a·W + a·W' − c)₊] for each c > 0 (W, W' iid)."""
    c = np.maximum(np.atleast_1d(np.asarray(c, float)), 1e-300)  # > 0 but for rounding at the kink
    zs = _z_at(c / a, s)
    x, w = _gl(zs)
    body = np.sum(w * _phi(x) * _call(a, c[:, None] - a * _w(x, s), s), axis=1)
    return body + _upper_tail(a, a - c, s, zs)


def _pair_add(a, b, s):
    """E[(b − a·W − a·W')₊] for each b > 0."""
    b = np.maximum(np.atleast_1d(np.asarray(b, float)), 1e-300)
    x, w = _gl(_z_at(b / a, s))
    return np.sum(w * _phi(x) * _put(a, b[:, None] - a * _w(x, s), s), axis=1)


def t3_remove(s, eps):
    ee = math.exp(eps)
    zs = _z_at(3 * ee, s)
    x, w = _gl(zs)
    x, w = x[0], w[0]
    return float(np.sum(w * _phi(x) * _pair_remove(1 / 3, ee - _w(x, s) / 3, s))) + _upper_tail(
        1 / 3, 2 / 3 - ee, s, zs
    )


def t3_add(s, eps):
    a = math.exp(eps) / 3
    x, w = _gl(_z_at(1 / a, s))
    x, w = x[0], w[0]
    return float(np.sum(w * _phi(x) * _pair_add(a, 1 - a * _w(x, s), s)))


# --------------------------------------------------------------------------- the pair under test


@functools.lru_cache(maxsize=None)
def _pair(sigma: float, t: int, budget: float, rho: float = RESOLUTION):
    return random_allocation_gaussian(sigma, t, budget, rho=rho)


def _delta_upper(d, eps) -> np.ndarray:
    """The atoms' one-epoch upper bound on δ(ε): Σ p·(1 − e^{ε−ℓ})₊ + p_∞."""
    ell, p, _ = d.atoms
    # nonnegative terms: numpy's pairwise sum is within ~1e-15 relative
    return np.array([float(np.sum(p * np.maximum(0.0, -np.expm1(e - ell)))) + d.p_inf for e in np.atleast_1d(eps)])


def _pair_or_skip_small_sigma(sigma, t, budget, rho=RESOLUTION):
    """The pair; AllocationTooLarge is accepted only where it is documented (small σ, tiny budget)."""
    try:
        return _pair(sigma, t, budget, rho)
    except AllocationTooLarge:
        if sigma < 0.8:
            pytest.skip(f"AllocationTooLarge at σ = {sigma}, budget {budget:g} (documented limit)")
        raise


def _check_sound(kind, sigma, t, budget, eps, got, ref):
    keep = ref >= 1e-13
    bad = keep & (got < ref * (1 - REF_REL))
    assert not bad.any(), (
        f"{kind} t={t} σ={sigma} budget={budget:g}: upper below exact at ε={eps[bad]}: "
        f"upper {got[bad]}, exact {ref[bad]}, ratio {got[bad] / ref[bad]}"
    )


def _check_tight(kind, sigma, t, budget, eps, got, ref, rel, where):
    sel = where & (ref >= 1e-13)
    loose = sel & (got > ref * (1 + rel) + budget)
    assert not loose.any(), (
        f"{kind} t={t} σ={sigma} budget={budget:g}: looser than exact·(1 + {rel:g}) + budget at ε={eps[loose]}: "
        f"ratio {got[loose] / ref[loose]}"
    )


SIGMAS = (0.5, 0.8, 1.0, 2.0, 5.0)
EPS = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0])
BUDGETS = (1e-6, 1e-10)


def _check_epoch(sigma, t, budget, eps, ex_rm, ex_add):
    rm, ad = _pair_or_skip_small_sigma(sigma, t, budget)
    ur, ua = _delta_upper(rm, eps), _delta_upper(ad, eps)
    _check_sound("remove", sigma, t, budget, eps, ur, ex_rm)
    _check_sound("add", sigma, t, budget, eps, ua, ex_add)
    # remove: within 0.2% (plus the budget the construction may add) wherever δ is not negligible
    _check_tight("remove", sigma, t, budget, eps, ur, ex_rm, 2e-3, np.full(eps.shape, True))
    # add: uniform grids in L resolve small L (large add-direction losses) coarsely — tight for small
    # ε, within 30% up to ε = 3, for σ >= 1 (measured: 1.19 at t = 2, 1.25 at t = 3, σ = 1, ε = 3)
    if sigma >= 1:
        _check_tight("add", sigma, t, budget, eps, ua, ex_add, 1e-2, eps <= 1.0)
        _check_tight("add", sigma, t, budget, eps, ua, ex_add, 0.3, eps <= 3.0)


# --------------------------------------------------------------------------- (a) exact one-epoch values


def test_t2_reference_against_mpmath():
    """The scipy t = 2 references agree with 30-digit mpmath quadratures (so REF_REL is generous)."""
    for s, e in ((0.8, 1.0), (2.0, 1.0), (5.0, 0.25)):
        for remove, fn in ((True, t2_remove), (False, t2_add)):
            ref = _mp_t2(s, e, remove)
            assert abs(fn(s, e) / float(ref) - 1) < 1e-12, (s, e, remove)


def test_gauss_legendre_rule_against_t2_quadrature():
    """The nested rule used for t = 3 reproduces the t = 2 quadrature when used for t = 2."""
    for s in (0.8, 1.0, 2.0, 5.0):
        for e in (0.0, 0.5, 1.0, 2.0):
            r, a = t2_remove(s, e), t2_add(s, e)
            if min(r, a) < 1e-13:
                continue
            ee = math.exp(e)
            assert abs(_pair_remove(0.5, ee, s)[0] / r - 1) < 1e-11, (s, e)
            assert abs(_pair_add(ee / 2, 1.0, s)[0] / a - 1) < 1e-11, (s, e)


# Regression: the last body draw's trimmed parts (its 0-atom and the mean it sends to infinity) were once
# dropped when S = rest + X was formed — add-direction δ fell below the exact value where the budget is
# large next to δ (found by these tests; test_one_epoch_sound_at_large_budget is its regression test).


@pytest.mark.parametrize("sigma, budget", [(s, b) for s in SIGMAS for b in BUDGETS])
def test_one_epoch_t1_is_the_gaussian(sigma, budget):
    """t = 1: L = W, the Gaussian mechanism (μ = 1/σ), δ in closed form; the same in both directions."""
    ex = np.array([float(delta_gauss(1 / sigma, e)) for e in EPS])
    _check_epoch(sigma, 1, budget, EPS, ex, ex)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("sigma", SIGMAS)
def test_one_epoch_t2_against_quadrature(sigma, budget):
    ex_rm = np.array([t2_remove(sigma, e) for e in EPS])
    ex_add = np.array([t2_add(sigma, e) for e in EPS])
    _check_epoch(sigma, 2, budget, EPS, ex_rm, ex_add)


@pytest.mark.parametrize("sigma", (0.8, 1.0, 2.0, 5.0))
def test_one_epoch_t3_against_nested_rule(sigma):
    eps = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    ex_rm = np.array([t3_remove(sigma, e) for e in eps])
    ex_add = np.array([t3_add(sigma, e) for e in eps])
    _check_epoch(sigma, 3, 1e-10, eps, ex_rm, ex_add)


@pytest.mark.parametrize(
    "t, sigma, budget, rho",
    [(1, 1.0, 1e-3, 64), (2, 1.0, 1e-3, 64), (1, 1.0, 0.1, 16), (1, 1.3, 1e-2, 64)],
)
def test_one_epoch_sound_at_large_budget(t, sigma, budget, rho):
    eps = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 2.5, 3.0])
    if t == 1:
        ex_rm = ex_add = np.array([float(delta_gauss(1 / sigma, e)) for e in eps])
    else:
        ex_rm = np.array([t2_remove(sigma, e) for e in eps])
        ex_add = np.array([t2_add(sigma, e) for e in eps])
    rm, ad = _pair(sigma, t, budget, rho)
    _check_sound("remove", sigma, t, budget, eps, _delta_upper(rm, eps), ex_rm)
    _check_sound("add", sigma, t, budget, eps, _delta_upper(ad, eps), ex_add)


@pytest.mark.xfail(
    strict=True,
    reason="LOOSE: the add direction's Q-mass at L = 0 (its p_inf) comes mostly from spreading the first "
    "grid cell [0, h] of the uniform grid onto 0, which no budget controls: at small σ and few batches it "
    "is far above the budget (and grows as the budget shrinks, the grid coarsening to fit FIRST_WINDOW), "
    "so ε is infinite for δ below it",
)
@pytest.mark.parametrize("sigma, t, budget", [(1.1, 1, 1e-8), (0.8, 2, 1e-12), (0.6, 4, 1e-10), (0.6, 10, 1e-12)])
def test_add_direction_floor_within_budget(sigma, t, budget):
    _, ad = _pair(sigma, t, budget)
    assert ad.p_inf <= 10 * budget, f"add p_inf {ad.p_inf:.3g} for budget {budget:g}"


# --------------------------------------------------------------------------- (b) normalisation and structure

NORM_CASES = [
    (1.0, 1, 1e-8),
    (1.0, 2, 1e-8),
    (0.8, 3, 1e-6),
    (0.7, 50, 1e-8),
    (1.1, 235, 1e-10),
    (2.0, 100, 1e-12),
    (20.0, 7, 1e-3),
]
#: Larger t: the mean/mass excess compounds over the t − 1 body draws (see test_mass_excess_small).
NORM_CASES_LARGE_T = [(5.0, 1000, 1e-9), (1.0, 100_000, 1e-8)]


@pytest.mark.parametrize("sigma, t, budget", NORM_CASES + NORM_CASES_LARGE_T)
def test_pair_structure_and_normalisation(sigma, t, budget):
    rm, ad = _pair(sigma, t, budget)
    ell, p, q = rm.atoms
    for arr in (ell, p, q):
        assert np.all(np.isfinite(arr))
    assert np.all(p >= 0) and np.all(q >= 0) and np.all(np.diff(ell) >= 0)
    assert 0 <= rm.p_inf <= 1 and 0 <= ad.p_inf <= 1
    # a genuine pair: the P-mass of each atom is e^ℓ times its Q-mass (rounded up by a few ulps)
    np.testing.assert_allclose(p, q * np.exp(ell), rtol=1e-13)
    # the add direction is the same measures swapped
    ae, ap, aq = ad.atoms
    order = np.argsort(-ae, kind="stable")
    np.testing.assert_array_equal(-ae[order], ell)
    np.testing.assert_array_equal(ap[order], q)
    np.testing.assert_array_equal(aq[order], p)
    assert rm.lo == ell[0] and rm.hi == ell[-1]
    # masses only rounded up: P (remove's first measure, its mean E[L]) and Q (add's first) at least 1
    assert math.fsum(p) + rm.p_inf >= 1 - 1e-12
    assert math.fsum(q * np.exp(ell)) + rm.p_inf >= 1 - 1e-12
    assert math.fsum(ap) + ad.p_inf >= 1 - 1e-12
    # ... and not by much: E[L] = 1 and Q's total 1 up to the budget (the mean of the dropped tails is
    # overstated within it) and the construction's rounding
    assert math.fsum(p) + rm.p_inf <= 1 + budget + 1e-4
    assert math.fsum(ap) + ad.p_inf <= 1 + budget + 1e-4
    # the remove direction's p_inf (the mean sent to infinity) stays within the budget
    assert rm.p_inf <= budget


@pytest.mark.parametrize(
    "sigma, t, budget",
    NORM_CASES
    + [
        pytest.param(
            *c,
            marks=pytest.mark.xfail(
                strict=True,
                reason="the body spread's error bounds (each cell's (k+1)·em: Φ's absolute error times "
                "the cell index) raise the body mass by ~1e-9 per draw, compounded over t − 1 draws: "
                "8.8e-6 at t = 1000, 5.1e-5 at t = 1e5 (sound; δ moves by about that fraction)",
            ),
        )
        for c in NORM_CASES_LARGE_T
    ],
)
def test_mass_excess_small(sigma, t, budget):
    """E[L] (remove's P-mass) and Q's total exceed 1 by at most the budget and 1e-6."""
    rm, ad = _pair(sigma, t, budget)
    assert math.fsum(rm.atoms[1]) + rm.p_inf <= 1 + budget + 1e-6
    assert math.fsum(ad.atoms[1]) + ad.p_inf <= 1 + budget + 1e-6


# --------------------------------------------------------------------------- (c) several epochs

#: PLD_accounting 2.0 (pip ``pld-accounting==2.0``, Feldman & Shenfeld, arXiv:2602.17284):
#: gaussian_allocation_epsilon_range(delta=δ, sigma=σ, num_steps=t, num_epochs=E) -> (upper, lower),
#: default accuracy. (σ, t, E, δ): (upper, lower, seconds). The first three measured by the lead
#: session, the others in this branch's session (OPENBLAS_NUM_THREADS=1, 2 cores, under load).
PEER = {
    (1.1, 235, 60, 1e-5): (2.37746, 2.29564, 225.0),
    (1.1, 235, 1, 1e-5): (0.277916, 0.265185, 2.6),
    (2.0, 100, 10, 1e-6): (0.711612, 0.681471, 6.8),
    (2.0, 20, 2, 1e-5): (0.624388, 0.596261, 1.7),
    (1.0, 4, 5, 1e-6): (7.471943, 7.400191, 3.5),
    (0.8, 10, 3, 1e-5): (5.283644, 5.216990, 5.2),
    (1.0, 2, 1, 1e-3): (2.529140, 2.446548, 3.0),
    (2.0, 2, 1, 1e-4): (1.243510, 1.184246, 0.9),
}


def _budget(delta: float, epochs: int) -> float:
    """The per-epoch budget these tests use: δ/(1000·E) (all E epochs together add at most about δ/1000)."""
    return delta * 1e-3 / epochs


def _ours(sigma, t, epochs, delta, **kw):
    dirs = _pair(sigma, t, _budget(delta, epochs))
    return float(pld.epsilon([(dirs, epochs)], np.array([delta]), **kw).upper[0])


def _max_stat_lower(sigma, t, epochs, delta):
    return float(pld.epsilon([(max_statistic(1 / sigma, t), epochs)], np.array([delta])).lower[0])


@pytest.mark.parametrize("case", list(PEER))
def test_epochs_between_lower_bounds_and_upper_bounds(case):
    sigma, t, epochs, delta = case
    peer_up, peer_lo, _ = PEER[case]
    up = _ours(sigma, t, epochs, delta)
    assert math.isfinite(up)
    lo = _max_stat_lower(sigma, t, epochs, delta)
    assert lo <= up, (lo, up)
    assert peer_lo <= up, (peer_lo, up)
    # tightness against the peer's certified upper end (ours was within it in every case measured)
    assert up <= peer_up * 1.01, (up, peer_up)
    if t >= 4:
        gdp = float(exact.gaussian_interval(np.array([math.sqrt(epochs) / sigma]), np.array([delta]))[1][0])
        assert up <= gdp, (up, gdp)
    poisson = float(pld.epsilon([(pld.subsampled_gaussian(1 / t, sigma), t * epochs)], np.array([delta])).upper[0])
    assert up <= poisson * 1.02, (up, poisson)
    # the quick upper end is an upper bound too, and not much above the refined one
    quick = _ours(sigma, t, epochs, delta, upper_only=True)
    assert up <= quick <= up * 1.01 + 1e-3


@pytest.mark.parametrize("sigma, delta", [(1.0, 1e-3), (2.0, 1e-4), (1.3, 1e-6)])
def test_one_epoch_t2_epsilon_against_exact(sigma, delta):
    """One epoch, t = 2: the certified ε is at least the exact ε (from the quadrature's δ-curve, both
    directions) and within 0.1% of it."""
    exact_eps = optimize.brentq(
        lambda e: max(t2_remove(sigma, e), t2_add(sigma, e)) - delta, 0.0, 30.0, xtol=1e-12, rtol=1e-13
    )
    up = _ours(sigma, 2, 1, delta)
    assert up >= exact_eps * (1 - 1e-9), (up, exact_eps)
    assert up <= exact_eps * 1.001, (up, exact_eps)


def test_infinite_epsilon_is_inf_not_nan():
    # A direction's P[L = +∞] above δ: δ(ε) > δ at every ε, so both ends are +∞ (was NaN, no claim).
    sigma, t, epochs, delta = 1.0, 1, 1, 1e-5
    dirs = _pair(sigma, t, _budget(delta, epochs))
    assert dirs[1].p_inf > delta  # the premise: ε is +inf for this pair
    ans = pld.epsilon([(dirs, epochs)], np.array([delta]))
    assert ans.upper[0] == np.inf and ans.lower[0] == np.inf and ans.met[0]
    # Mixed with a δ that has a finite answer: each δ gets its own.
    ans = pld.epsilon([(pld.dp(1.0, 0.1), 1)], np.array([0.01, 0.2]))
    assert list(ans.lower[:1]) == [np.inf] and list(ans.upper[:1]) == [np.inf]
    assert 0.835 < ans.lower[1] <= ans.upper[1] < 0.836


# --------------------------------------------------------------------------- (d) property over the box


@settings(max_examples=10, deadline=None, derandomize=True)
@given(
    log_sigma=st.floats(math.log(0.5), math.log(50.0)),
    t=st.integers(1, 100_000),
    epochs=st.integers(1, 200),
    log_delta=st.floats(math.log(1e-10), math.log(1e-2)),
)
def test_property_upper_above_realisable_lower(log_sigma, t, epochs, log_delta):
    """AllocationTooLarge, or a finite upper end at least the max statistic's (realisable) lower end.

    Where E epochs of the add direction's p_inf alone exceed δ the pair cannot give a finite ε (see
    test_add_direction_floor_within_budget): there only soundness (never below the lower end) is checked.
    """
    sigma, delta = min(max(math.exp(log_sigma), 0.5), 50.0), math.exp(log_delta)
    try:
        dirs = _pair(sigma, t, _budget(delta, epochs))
    except AllocationTooLarge:
        return
    up = float(pld.epsilon([(dirs, epochs)], np.array([delta]), upper_only=True).upper[0])
    lo = _max_stat_lower(sigma, t, epochs, delta)
    floor = -math.expm1(epochs * math.log1p(-min(dirs[1].p_inf, 1.0)))
    if floor >= delta:
        assert not (up < lo), (up, lo)
        return
    assert math.isfinite(up), (up, dirs[0].p_inf, dirs[1].p_inf)
    assert up >= lo, (up, lo)


# --------------------------------------------------------------------------- (e) the peer, live


def test_peer_live_small_case():
    P = pytest.importorskip("PLD_accounting")
    sigma, t, epochs, delta = 2.0, 20, 2, 1e-5
    t0 = time.perf_counter()
    peer_up, peer_lo = P.gaussian_allocation_epsilon_range(delta=delta, sigma=sigma, num_steps=t, num_epochs=epochs)
    dt = time.perf_counter() - t0
    up = _ours(sigma, t, epochs, delta)
    assert peer_lo <= up, (peer_lo, up)
    assert up <= peer_up * 1.01, (up, peer_up, f"peer {dt:.1f}s")
