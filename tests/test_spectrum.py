"""The low-band spectrum of a step (long double where the composition needs it): its error bounds
hold against the DFT in 40-digit arithmetic, at the band's frequencies before rounding to double and
at every checked frequency after."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from dpcalc.core.pld import spectrum as S

pytestmark = pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(float).eps, reason="no extended precision here")


def _step(m: int, seed: int, skew: float = 0.0) -> np.ndarray:
    """Tilted-step-like weights in long double summing to about 1: a bump with a long right tail."""
    rng = np.random.default_rng(seed)
    i = np.arange(m, dtype=float)
    x = np.exp(-0.5 * ((i - m / 3) / (m / 10)) ** 2) + skew * np.exp(-i / (m / 4)) * (i > m / 3)
    x = x * (1 + 0.05 * rng.random(m)) + 1e-30
    w = x.astype(np.longdouble)
    return w / np.sum(w)


def _exact_dft(w: np.ndarray, idx: np.ndarray, n: int, js) -> list:
    mp.mp.dps = 40
    wm = [mp.mpf(a) / b for a, b in (v.as_integer_ratio() for v in w)]
    return [mp.fsum(wm[i] * mp.expjpi(-2 * mp.mpf(int(j) * int(idx[i]) % n) / n) for i in range(len(wm))) for j in js]


def _mp(z) -> mp.mpc:
    parts = (np.longdouble(z.real).as_integer_ratio(), np.longdouble(z.imag).as_integer_ratio())
    re, im = (mp.mpf(a) / b for a, b in parts)
    return mp.mpc(re, im)


@pytest.mark.parametrize(
    "n, m, k0, seed",
    [
        (1 << 16, 1500, 100, 1),
        (1 << 16, 1500, (1 << 16) - 700, 2),  # the run wraps around n
        (3 * (1 << 14), 1200, -500, 3),  # negative start, n with a factor 3
        (5 * 9 * (1 << 12), 900, 12345, 4),
    ],
)
def test_band_bounds_hold_before_and_after_rounding(n, m, k0, seed):
    w = _step(m, seed, skew=0.3)
    pos = np.arange(m)
    idx = (k0 + pos) % n
    first = k0 % n
    k_band, bb = 40, 16
    total = float(np.sum(w, dtype=np.longdouble))
    low, bound = S._band(idx, w, n, k_band, bb, first, total)
    js = [0, 1, 2, 5, 17, 39]
    exact = _exact_dft(w, idx, n, js)
    for j, x in zip(js, exact):
        err = abs(_mp(low[j]) - x)
        # The long-double value is within its bound, and the bound is far below double precision's.
        assert err <= bound[j], (j, float(err), bound[j])
        assert bound[j] < 5e-17
    res = S.low_band_rfft(idx, w, n, 10**6, m, first)
    assert res is not None
    f, b, absf = res
    js = js + [f.size // 3, f.size - 1]
    for j, x in zip(js, _exact_dft(w, idx, n, js)):
        assert abs(mp.mpc(complex(f[j])) - x) <= b[j]
    assert np.allclose(absf, np.abs(f), rtol=0, atol=0)


def test_band_declines_where_the_power_keeps_many_frequencies():
    # Few steps: |F|^T is not negligible over much of the spectrum, so the full long-double FFT is due.
    n, m = 1 << 14, 64
    w = _step(m, 5)
    idx = np.arange(m) + 10
    assert S.low_band_rfft(idx, w, n, 2, m, 10) is None


def test_band_declines_positions_out_of_the_runs_order():
    # A run wrapping into its own first block, or positions out of order, would put one block in two
    # places (its mass lost from the sums): the band declines and the caller takes the full transform.
    n, bb = 1024, 64
    idx = (1000 + np.arange(1014)) % n
    w = np.full(idx.size, np.longdouble(1) / idx.size)
    assert S._band(idx, w, n, 3, bb, 1000, 1.0) is None
    rng = np.random.default_rng(7)
    idx = np.arange(10, 2010)
    perm = rng.permutation(idx.size)
    w = _step(idx.size, 8)
    assert S._band(idx[perm], w[perm], 4096, 3, bb, 10, 1.0) is None
    assert S._band(idx, w, 4096, 3, bb, 10, 1.0) is not None


def test_band_declines_few_steps():
    n, m = 1 << 16, 3000
    w = _step(m, 9)
    idx = np.arange(m) + 100
    assert S.low_band_rfft(idx, w, n, S.MIN_TIMES - 1, m, 100) is None


def test_band_summation_bound_stays_tight_for_a_bump_within_one_block():
    # 1,500 points inside one block of 8,192: summed pairwise (11 ulps), not one by one (1,499 ulps).
    n, bb, m = 1 << 20, 8192, 1500
    w = _step(m, 10)
    idx = np.arange(m) + 3 * bb + 100
    total = float(np.sum(w, dtype=np.longdouble))
    low, bound = S._band(idx, w, n, 5, bb, int(idx[0]), total)
    for j, x in zip(range(5), _exact_dft(w, idx, n, range(5))):
        assert abs(_mp(low[j]) - x) <= bound[j]
    assert np.max(bound) < 2e-17
