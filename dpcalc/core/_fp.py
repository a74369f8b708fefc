"""Floating point toward the safe side: error-free transformations and directed rounding.

numpy rounds every operation to nearest, so a computed bound can land half an ulp (or, after
several operations, a few ulps) on the wrong side of the true value. The core uses these helpers
to finish every printed value on its safe side:

* single operations are rounded *correctly* in the direction asked (:func:`mul_up`,
  :func:`div_down`, :func:`sqrt_up`, …): the residual of the nearest result is computed exactly
  (Dekker's two-product, Knuth's two-sum) and the result moves one ulp only where it fell on the
  wrong side, so a result that is exact (``4.0 = 2/0.5``) stays exact;
* longer formulas carry an error bound in units of the last place, and :func:`up` / :func:`down`
  move the value by that many ulps (``np.nextafter``).

Units: ``U`` is the unit roundoff 2⁻⁵³ (half an ulp relative), ``ULP`` = 2⁻⁵² (one ulp relative).

References
----------
.. [D] T. J. Dekker. A floating-point technique for extending the available precision.
   Numer. Math. 18 (1971) (two-product by splitting).
.. [K] D. E. Knuth. The Art of Computer Programming, vol. 2, §4.2.2 (two-sum).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "U",
    "ULP",
    "TINY",
    "up",
    "down",
    "two_sum",
    "two_prod",
    "mul_up",
    "mul_down",
    "div_up",
    "div_down",
    "sqrt_up",
    "sqrt_down",
    "add_up",
    "add_down",
    "widen_up",
    "widen_down",
    "fma_up",
]

U = 2.0**-53
ULP = 2.0**-52
TINY = float(np.finfo(float).tiny)  # smallest normal double, 2.2e-308

_SPLIT = 134217729.0  # 2^27 + 1


def up(x, n=1):
    """``x`` moved ``n`` ulps toward +∞ (``n`` may be an array; NaN and ±∞ stay)."""
    x = np.asarray(x, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n), x.shape) if np.ndim(n) else n
    steps = int(np.max(n)) if np.size(n) else 0
    out = x.copy()
    for i in range(steps):
        moved = np.nextafter(out, np.inf)
        out = moved if np.ndim(n) == 0 else np.where(i < n, moved, out)
    return out


def down(x, n=1):
    """``x`` moved ``n`` ulps toward −∞ (``n`` may be an array; NaN and ±∞ stay)."""
    x = np.asarray(x, dtype=np.float64)
    n = np.broadcast_to(np.asarray(n), x.shape) if np.ndim(n) else n
    steps = int(np.max(n)) if np.size(n) else 0
    out = x.copy()
    for i in range(steps):
        moved = np.nextafter(out, -np.inf)
        out = moved if np.ndim(n) == 0 else np.where(i < n, moved, out)
    return out


def two_sum(a, b):
    """(s, e) with s = fl(a + b) and a + b = s + e exactly (Knuth; any magnitudes, no overflow)."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = a + b
        bb = s - a
        e = (a - (s - bb)) + (b - bb)
    return s, e


#: Dekker's split is exact for |x| below 2^995; error terms are normal for products above 2^-968.
_BIG = 2.0**995
_SMALL = 2.0**-968


def _split(a):
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a, b):
    """(p, e, ok) with p = fl(a·b) and, where ``ok``, a·b = p + e exactly (Dekker).

    Factors beyond 2^±995 are first split as m·2^k with m in [1/2, 1) (exact), so nothing overflows
    in the split; ``ok`` is false only where the product overflows or its error term falls below the
    subnormal range (|a·b| below about 2⁻⁹⁶⁸): there ``e`` is not to be trusted.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        p = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        ap = np.abs(p)
        ok = (np.abs(a) < _BIG) & (np.abs(b) < _BIG) & (ap < _BIG) & ((ap > _SMALL) | (a == 0) | (b == 0))
        if not ok.all():
            # The extremes: scale both factors to [1/2, 1), then back (exact wherever the result is).
            a2, b2 = np.broadcast_arrays(a, b)
            p = np.array(np.broadcast_to(p, a2.shape))
            e = np.array(np.broadcast_to(e, a2.shape))
            ok = np.array(np.broadcast_to(ok, a2.shape))
            bad = ~ok
            ma, ea = np.frexp(a2[bad])
            mb, eb = np.frexp(b2[bad])
            pm = ma * mb
            mah, mal = _split(ma)
            mbh, mbl = _split(mb)
            em = ((mah * mbh - pm) + mah * mbl + mal * mbh) + mal * mbl
            ex = ea + eb
            ps, es = np.ldexp(pm, ex), np.ldexp(em, ex)
            good = np.isfinite(ps) & (np.ldexp(ps, -ex) == pm) & (np.ldexp(es, -ex) == em) & (ps == p[bad])
            e[bad] = np.where(good, es, 0.0)
            ok[bad] = good
    return p, np.where(ok, e, 0.0), ok


def mul_up(a, b):
    """a·b rounded toward +∞ (correctly: exact products stay exact)."""
    p, e, ok = two_prod(a, b)
    return np.where(ok & (e <= 0), p, np.where(ok, np.nextafter(p, np.inf), _away(p, np.inf)))


def mul_down(a, b):
    """a·b rounded toward −∞."""
    p, e, ok = two_prod(a, b)
    return np.where(ok & (e >= 0), p, np.where(ok, np.nextafter(p, -np.inf), _away(p, -np.inf)))


def _away(p, direction):
    """Where the residual is unknown: one ulp toward ``direction`` (and an exact ±∞ stays)."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(p), p, np.nextafter(p, direction))


def _div_residual_sign(a, b, q):
    """Sign of q·b − a (b > 0), exactly, and where that could be decided.

    a and b are first scaled by the same power of two (q is unchanged) so that a is near 1: the
    residual then neither under- nor overflows."""
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        _, ea = np.frexp(a)
        a_s, b_s = np.ldexp(a, -ea), np.ldexp(b, -ea)
        scaled = (np.ldexp(a_s, ea) == a) & (np.ldexp(b_s, ea) == b) & np.isfinite(b_s) & (b_s > 0)
        a_s, b_s = np.where(scaled, a_s, a), np.where(scaled, b_s, b)
        p, e, ok = two_prod(q, b_s)
        r = (p - a_s) + e  # p − a is exact (Sterbenz: p is within a factor 2 of a)
    return np.sign(r), ok & np.isfinite(q)


def div_up(a, b):
    """a/b rounded toward +∞, for b > 0 (correctly: exact quotients stay exact)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        q = a / b
    s, ok = _div_residual_sign(a, b, q)
    exact_zero = a == 0
    return np.where(exact_zero, q, np.where(ok & (s >= 0), q, np.where(ok, np.nextafter(q, np.inf), _away(q, np.inf))))


def div_down(a, b):
    """a/b rounded toward −∞, for b > 0."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        q = a / b
    s, ok = _div_residual_sign(a, b, q)
    exact_zero = a == 0
    return np.where(
        exact_zero, q, np.where(ok & (s <= 0), q, np.where(ok, np.nextafter(q, -np.inf), _away(q, -np.inf)))
    )


def _sqrt_residual_sign(x, s):
    """Sign of s² − x, with x scaled by an even power of two (s by half of it) to keep the residual normal."""
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        _, ex = np.frexp(x)
        half = ex // 2
        x_s, s_s = np.ldexp(x, -2 * half), np.ldexp(s, -half)
        scaled = (np.ldexp(x_s, 2 * half) == x) & (np.ldexp(s_s, half) == s)
        x_s, s_s = np.where(scaled, x_s, x), np.where(scaled, s_s, s)
        p, e, ok = two_prod(s_s, s_s)
        r = (p - x_s) + e
    return np.sign(r), ok


def sqrt_up(x):
    """√x rounded toward +∞, x >= 0."""
    x = np.asarray(x, dtype=np.float64)
    s = np.sqrt(x)
    sg, ok = _sqrt_residual_sign(x, s)
    return np.where(x == 0, s, np.where(ok & (sg >= 0), s, np.where(ok, np.nextafter(s, np.inf), _away(s, np.inf))))


def sqrt_down(x):
    """√x rounded toward −∞, x >= 0."""
    x = np.asarray(x, dtype=np.float64)
    s = np.sqrt(x)
    sg, ok = _sqrt_residual_sign(x, s)
    return np.where(x == 0, s, np.where(ok & (sg <= 0), s, np.where(ok, np.nextafter(s, -np.inf), _away(s, -np.inf))))


def fma_up(a, b, c):
    """a·b + c rounded up once (not twice), for a, b, c >= 0: the product's exact error term and the sum's
    are added before the one directed rounding."""
    p, pe, ok = two_prod(a, b)
    s, se = two_sum(p, np.asarray(c, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        r = se + pe  # |r| <= ulp(s): its sign says on which side of a·b + c the sum s fell
        out = np.where(r > 0, np.nextafter(s, np.inf), s)
    return np.where(ok | (pe == 0) & (p == 0), out, _away(s, np.inf))


def add_up(a, b):
    """a + b rounded toward +∞."""
    s, e = two_sum(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(s) & (e > 0), np.nextafter(s, np.inf), s)


def add_down(a, b):
    """a + b rounded toward −∞."""
    s, e = two_sum(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(s) & (e < 0), np.nextafter(s, -np.inf), s)


#: Below this a result may have passed through the subnormal range, where an ulp is absolute:
#: the relative margins below then get an absolute one added (16 subnormal ulps).
_SUBNORMAL_RISK = TINY * 2.0**53
_ABS = 16 * 2.0**-1074


def widen_up(x, rel):
    """A double >= x·(1 + rel) for x >= 0: the top of a relative error bound ``rel`` around a computed x,
    rounded up (within 2 ulps of x·(1 + rel)); results that may have been subnormal get 16 subnormal
    ulps more. ``x`` = 0 gives the absolute margin alone (mask exact zeros in the caller)."""
    x = np.asarray(x, dtype=np.float64)
    y = mul_up(x, add_up(1.0, rel))
    return np.where(np.abs(x) < _SUBNORMAL_RISK, add_up(y, _ABS), y)


def widen_down(x, rel):
    """A double <= x·(1 − rel) for x >= 0, never below 0 (see :func:`widen_up`)."""
    x = np.asarray(x, dtype=np.float64)
    y = mul_down(x, add_down(1.0, -np.asarray(rel, dtype=np.float64)))
    y = np.where(np.abs(x) < _SUBNORMAL_RISK, add_down(y, -_ABS), y)
    return np.maximum(y, 0.0)
