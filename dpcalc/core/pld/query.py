"""Queries: δ at ε and ε at δ from a composed PLD, with every allowance, in log space.

For the grid losses ℓ_i = (k0 + i + c)h and tilted masses p̃_i of a
:class:`.compose.Composed`, the suffix sums

    A_i = Σ_{j>=i} p̃_j e^{−λ(ℓ_j − ℓ_i)},   B_i = Σ_{j>=i} p̃_j e^{−(λ+1)(ℓ_j − ℓ_i)}

are taken where read (:class:`GeomSuffix`), each relative to its own loss, so
nothing overflows or underflows however far the losses reach. For ε in
[ℓ_{i−1}, ℓ_i) the losses above ε are those from i on, and

    δ(ε) = P[L = ∞] + e^{G − λℓ_i} (A_i − e^{ε − ℓ_i} B_i).

The upper curve adds, and the lower one subtracts, inside the same factor
e^{G − λℓ_i}: the round-off of the composed masses (their error norm R
times √(Σ_{j>=i} e^{−2λ(ℓ_j − ℓ_i)}) <= R/√(1 − e^{−2λh})), the rounding
of the sums (a relative bound ρ each), and the tilted mass that may have
wrapped around the window (its weight is at most e^{λh} there); outside it,
the alias of a cut window; and the whole is widened by the relative error
of e^{G} and of the exponential. ε at δ is then searched on the grid and
solved within one segment, and the point returned is evaluated again: an
upper end only where the upper curve is at most δ, a lower end only where
the lower curve is above δ.
"""

from __future__ import annotations

import math

import numpy as np

from .compose import Composed, log_mgf

__all__ = ["GeomSuffix", "geom_suffix", "Reader", "epsilon_at", "delta_at", "chernoff_epsilon", "MANY"]

_U = float(np.finfo(float).eps)


#: A segment's solution is checked where it is returned, and moved toward the safe side first by a margin
#: of a few ulps, then (where the check fails on the curve's own rounding, or on the allowance the solve
#: froze at the segment's end) by these fractions of the grid spacing more, before the read falls back to
#: the grid point, a whole spacing away.
BACK_OFF = (0.0, 2.0**-20, 2.0**-10)

#: Reads touching more blocks than this form their rows at once (:meth:`GeomSuffix.__getitem__`).
ROWS_AT_ONCE = 8


class GeomSuffix:
    """S_i = Σ_{j>=i} x_j e^{−rate·(j−i)} for x >= 0 and rate >= 0, read at the indices asked for, and a
    bound ``rel`` on its relative error.

    Blocks of b points (b·rate <= 32): within a block a reversed cumulative
    sum of x_j e^{−rate·o_j} rescaled by e^{rate·o_i} (no over- or
    underflow: both factors are within e^{±32}); across blocks the
    recurrence S = T_b + e^{−rate·b}·S_next, solved by doubling (log2 of
    the number of blocks passes). Every term is positive, so the relative
    error is at most about (b + blocks + 4·log2(blocks) + 80)·u: the sums
    within a block, and the powers e^{−rate·b·d} formed by squaring for a
    block d blocks on (d·u). The block totals are formed at once (one
    pass); the sums within a block only for the blocks a read touches —
    searches read a few dozen points of grids of millions.
    """

    def __init__(self, x: np.ndarray, rate: float):
        n = x.size
        self.n = n
        b = 1
        while b < 1024 and 2 * b * rate <= 32.0:
            b *= 2
        k = max(-(-n // b), 1)
        X = np.zeros(k * b)
        X[:n] = x
        self.X = X.reshape(k, b)
        o = np.arange(b)
        with np.errstate(under="ignore"):
            self.down = np.exp(-rate * o)
            self.up = np.exp(rate * o)
            T = self.X @ self.down  # Σ_o x e^{−rate·o} per block
            R = float(np.exp(-rate * b))
            S = T.copy()
            f, step = R, 1
            while step < k and f > 0.0:
                S[:-step] += f * S[step:]
                f *= f
                step *= 2
            self.nxt = np.zeros(k)
            self.nxt[:-1] = S[1:]  # S at the start of the next block
            self.carry = np.exp(-rate * (b - o))  # e^{−rate·(b − o)}
        self.b, self.k = b, k
        self.rel = float((b + k + 4.0 * np.log2(k + 1) + 80.0) * _U)
        self._rows: dict = {}

    def _row(self, blk: int) -> np.ndarray:
        r = self._rows.get(blk)
        if r is None:
            with np.errstate(under="ignore"):
                c = np.cumsum((self.X[blk] * self.down)[::-1])[::-1]
                r = c * self.up + self.nxt[blk] * self.carry
            self._rows[blk] = r
        return r

    def __getitem__(self, idx):
        idx = np.asarray(idx, dtype=np.int64)
        flat = idx.ravel()
        blk, off = np.divmod(flat, self.b)
        ublk = np.unique(blk)
        if flat.size <= 64 and ublk.size > 2 and not all(int(q) in self._rows for q in ublk):
            # A few scattered points (a search): each one's partial block sum directly.
            rows = self.X[blk] * self.down[None, :]
            rows[np.arange(self.b)[None, :] < off[:, None]] = 0.0
            with np.errstate(under="ignore"):
                out = rows.sum(axis=1) * self.up[off] + self.nxt[blk] * self.carry[off]
        elif ublk.size > ROWS_AT_ONCE:
            # A long run of points (a lower read's scan): the rows it touches at once, by the same
            # operations as :meth:`_row` (so the same values), not kept.
            with np.errstate(under="ignore"):
                C = np.cumsum((self.X[ublk] * self.down)[:, ::-1], axis=1)[:, ::-1]
                rows = C * self.up + self.nxt[ublk][:, None] * self.carry
            out = rows[np.searchsorted(ublk, blk), off]
        else:
            out = np.empty(flat.shape)
            for q in ublk:
                sel = blk == q
                out[sel] = self._row(int(q))[off[sel]]
        return out.reshape(idx.shape) if idx.ndim else float(out[0])

    def all(self) -> np.ndarray:
        """Every S_i (all blocks)."""
        if self.n == 0:
            return np.zeros(0)
        with np.errstate(under="ignore"):
            C = np.cumsum((self.X * self.down)[:, ::-1], axis=1)[:, ::-1]
            out = C * self.up + self.nxt[:, None] * self.carry[None, :]
        return out.ravel()[: self.n]


def geom_suffix(x: np.ndarray, rate: float) -> tuple[np.ndarray, float]:
    """All of :class:`GeomSuffix` at once, and its relative error bound."""
    g = GeomSuffix(x, rate)
    return g.all(), g.rel


#: Grids of at most this many points have every suffix sum formed once, on the first read: one pass
#: over the grid costs less there than the scattered partial sums of a search's rounds.
WHOLE_GRID = 1 << 15


class Reader:
    """Upper and lower δ-curves of a composed PLD at the grid points and between them."""

    def __init__(self, cp: Composed):
        self.cp = cp
        lam, h = cp.lam, cp.h
        self.n = cp.p.size
        self.A = GeomSuffix(cp.p, lam * h)
        self.B = GeomSuffix(cp.p, (lam + 1.0) * h)
        self.rho = max(self.A.rel, self.B.rel) + 4 * _U
        with np.errstate(divide="ignore"):
            self.rr = float(1.0 / np.sqrt(-np.expm1(-2.0 * lam * h)))
        self.top = (cp.k0 + self.n - 1 + cp.c) * h
        # First index whose loss is above the window's cut (reads start there).
        first = 0
        if np.isfinite(cp.read_from):
            first = int(np.clip(np.floor(cp.read_from / h - cp.k0 - cp.c), 0, self.n))
            while first < self.n and self.loss(first) <= cp.read_from:
                first += 1
            while first > 0 and self.loss(first - 1) > cp.read_from:
                first -= 1
        self.first = first
        self._all: tuple | None = None  # every A_i and B_i, once a read needs most of them

    def suffix(self, j, whole: bool = False):
        """(A_j, B_j) at valid indices j: from every suffix sum at once (formed on the first call) where
        ``whole`` or the grid has at most WHOLE_GRID points, else each from its block."""
        if self.n > 0 and (whole or self.n <= WHOLE_GRID):
            if self._all is None:
                self._all = (self.A.all(), self.B.all())
            return self._all[0][j], self._all[1][j]
        return self.A[j], self.B[j]

    def loss(self, i):
        cp = self.cp
        return (cp.k0 + np.asarray(i) + cp.c) * cp.h

    def index_after(self, eps: np.ndarray) -> np.ndarray:
        """For each ε: the index of the first loss > ε (n if none)."""
        cp = self.cp
        eps = np.asarray(eps, float)
        if eps.size == 1:
            # One ε (a search's step): the same operations on Python numbers, without the array calls.
            e = float(eps.reshape(-1)[0])
            x = e / cp.h - cp.k0 - cp.c
            if math.isfinite(x):
                n, k0, c, h = self.n, cp.k0, cp.c, cp.h
                i = int(min(max(math.floor(x), 0), n))
                for _ in range(64):
                    if i < n and (k0 + min(i, n - 1) + c) * h <= e:
                        i += 1
                    elif i > 0 and (k0 + i - 1 + c) * h > e:
                        i -= 1
                    else:
                        break
                return np.full(eps.shape, i, dtype=np.int64)
        i = np.clip(np.floor(eps / cp.h - cp.k0 - cp.c), 0, self.n).astype(np.int64)
        top = max(self.n - 1, 0)
        for _ in range(64):  # the estimate is within a step or two: move it until exact
            up = (i < self.n) & (self.loss(np.minimum(i, top)) <= eps)
            down = (i > 0) & (self.loss(np.maximum(i - 1, 0)) > eps)
            if not (np.any(up) or np.any(down)):
                break
            i = i + up - down
        return i

    def log_delta(self, i: np.ndarray, eps: np.ndarray, sign: float, whole: bool = False) -> np.ndarray:
        """log of the upper (sign +1) or lower (−1) δ-curve at ε, given i = index_after(ε); sign 0:
        the value without allowances (not a bound; monotone, for searches). ``whole``: the suffix sums
        are taken from every grid point at once (:meth:`GeomSuffix.all`, for reads at most points)."""
        cp = self.cp
        i = np.asarray(i, dtype=np.int64)
        eps = np.asarray(eps, float)
        inside = i < self.n
        if inside.all():  # (the usual case: the same values as below, without the selections)
            ell_i = self.loss(i)
            A, B = self.suffix(i, whole)
        else:
            j = np.minimum(i, max(self.n - 1, 0))
            ell_i = np.where(inside, self.loss(j), self.top + cp.h)
            A, B = self.suffix(j, whole)
            A = np.where(inside, A, 0.0)
            B = np.where(inside, B, 0.0)
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            x = np.exp(np.minimum(eps - ell_i, 0.0))
            core = np.maximum(A - x * B, 0.0)
            reach = np.minimum(eps, self.top)
            wrap = cp.tilted_wrap * np.exp(cp.lam * (ell_i - reach))
            allow = cp.roundoff * self.rr + self.rho * (A + x * B) + wrap
            log_scale = cp.g - cp.lam * ell_i
            rel = cp.g_rel + _U * (np.abs(log_scale) + 4.0)
            if sign > 0:
                inner = (core + allow) * (1.0 + rel)
                extra = cp.p_inf + cp.alias
            elif sign == 0:
                inner, extra = core, cp.p_inf
            else:
                inner = core * (1.0 - rel) - allow
                # A cut window's alias (mass from below the cut, wrapped onto the top) comes off the
                # whole: off P[L = ∞] as far as it goes, the rest off the finite part (an overflow of
                # its scale leaves nothing: no claim).
                extra = cp.p_inf - cp.alias
                if extra < 0:
                    inner = inner + extra * np.exp(-log_scale) * (1.0 + rel) * (1 + 4 * _U)
                    extra = 0.0
                inner = np.where(inner > 0, inner, 0.0)
            main = log_scale + np.log(inner)
            out = np.logaddexp(main, np.log(extra)) if extra > 0 else main
        out = np.where(np.isnan(out), np.inf if sign > 0 else -np.inf, out)
        return np.minimum(out, 0.0) if sign > 0 else out

    def noise(self, eps) -> np.ndarray:
        """The round-off allowance relative to δ's value at each ε (without P[L = ∞]): how far the
        two curves are apart there for floating-point reasons alone."""
        cp = self.cp
        eps = np.atleast_1d(np.asarray(eps, float))
        i = self.index_after(eps)
        inside = i < self.n
        j = np.minimum(i, max(self.n - 1, 0))
        A, B = self.suffix(j)
        A = np.where(inside, A, 0.0)
        B = np.where(inside, B, 0.0)
        with np.errstate(all="ignore"):
            x = np.exp(np.minimum(eps - np.where(inside, self.loss(j), self.top + cp.h), 0.0))
            core = A - x * B
            r = (cp.roundoff * self.rr + self.rho * (A + x * B)) / core
        return np.where(core > 0, r, np.inf)

    def segment_solve(self, i: int, log_target: float, sign: float) -> float:
        """Within [ℓ_{i−1}, ℓ_i] (losses above from i on): the ε where the curve, with its
        allowance frozen at the segment's left end, meets the target (nan if it does not)."""
        cp = self.cp
        if i >= self.n or i < 1:
            return float("nan")
        lo_e = float(self.loss(i - 1))
        ell_i = float(self.loss(i))
        A, B = (float(v) for v in self.suffix(i))
        x0 = float(np.exp(lo_e - ell_i))
        reach = min(lo_e, self.top)
        wrap = cp.tilted_wrap * float(np.exp(cp.lam * (ell_i - reach)))
        allow = cp.roundoff * self.rr + self.rho * (A + x0 * B) + wrap
        log_scale = cp.g - cp.lam * ell_i
        rel = cp.g_rel + _U * (abs(log_scale) + 4.0)
        with np.errstate(all="ignore"):
            extra = cp.p_inf + cp.alias if sign > 0 else cp.p_inf - cp.alias  # (see log_delta)
            target = (np.exp(log_target) - extra) * np.exp(-log_scale)
            if sign > 0:
                core_t = target / (1.0 + rel) - allow
            else:
                core_t = (target + allow) / (1.0 - rel)
            if not (B > 0 and A > core_t and np.isfinite(core_t)):
                return float("nan")
            e = ell_i + np.log((A - core_t) / B)
        return float(e) if np.isfinite(e) and lo_e <= e <= ell_i else float("nan")


def _segment_solve_many(r: Reader, i: np.ndarray, log_target: np.ndarray, sign: float) -> np.ndarray:
    """:meth:`Reader.segment_solve` for many (segment, target) pairs at once (nan where it has none)."""
    cp = r.cp
    i = np.asarray(i, dtype=np.int64)
    out = np.full(i.shape, np.nan)
    ok = (i < r.n) & (i >= 1)
    if not ok.any():
        return out
    ii = i[ok]
    lt = np.asarray(log_target, float)[ok]
    lo_e = r.loss(ii - 1)
    ell_i = r.loss(ii)
    A, B = r.suffix(ii)
    with np.errstate(all="ignore"):
        x0 = np.exp(lo_e - ell_i)
        reach = np.minimum(lo_e, r.top)
        wrap = cp.tilted_wrap * np.exp(cp.lam * (ell_i - reach))
        allow = cp.roundoff * r.rr + r.rho * (A + x0 * B) + wrap
        log_scale = cp.g - cp.lam * ell_i
        rel = cp.g_rel + _U * (np.abs(log_scale) + 4.0)
        extra = cp.p_inf + cp.alias if sign > 0 else cp.p_inf - cp.alias  # (see Reader.log_delta)
        target = (np.exp(lt) - extra) * np.exp(-log_scale)
        core_t = target / (1.0 + rel) - allow if sign > 0 else (target + allow) / (1.0 - rel)
        fine = (B > 0) & (A > core_t) & np.isfinite(core_t)
        e = ell_i + np.log((A - core_t) / B)
    e = np.where(fine & np.isfinite(e) & (lo_e <= e) & (e <= ell_i), e, np.nan)
    out[ok] = e
    return out


_PROBES = np.arange(1.0, 33.0)


def _first_at_most(reader: Reader, log_target: float, sign: float, lo: int, hi: int) -> int:
    """The first grid point j in [lo, hi) (ε = ℓ_{j−1}, suffix j) where the curve is at most the
    target, assuming it is non-increasing (hi if none); every answer is re-checked by the caller."""

    def val(j):
        j = np.asarray(j, dtype=np.int64)
        return reader.log_delta(j, reader.loss(j - 1), sign)

    a, b = lo, hi
    if a >= b:
        return hi
    if val(a) <= log_target:
        return a
    # invariant: val(a) > target; val(b) <= target or b = hi. Each round checks 32 points at once.
    while b - a > 1:
        # (np.linspace(a, b, 34)[1:-1], formed as it forms it: the same points)
        m = np.unique((_PROBES * ((b - a) / 33) + a).astype(np.int64))
        m = m[(m > a) & (m < b)]
        if m.size == 0:
            break
        ok = val(m) <= log_target
        k = int(np.argmax(ok)) if ok.any() else m.size
        if k < m.size:
            b = int(m[k])
        if k > 0:
            a = int(m[k - 1])
    return b


#: A lower read scans back for the last point where its curve is above δ in blocks of SCAN_FIRST
#: points, doubling to SCAN_MOST (the last such point is the same whatever the blocks).
SCAN_FIRST = 256
SCAN_MOST = 1 << 16

#: Above this many levels δ in one read, the curves are evaluated at every grid point once and each δ
#: is answered from them (:func:`_epsilon_at_many`); below it, by a search per δ.
MANY = 16


def epsilon_at(cp: Composed, delta, sign: float, floor=0.0, reader: Reader | None = None) -> np.ndarray:
    """ε bounds at each δ: for sign +1 the smallest checked ε >= ``floor`` where the upper δ-curve is
    at most δ (+inf if none in the window); for −1 the largest checked ε where the lower δ-curve is
    above δ (``floor`` if there is none above it — or −inf, no claim, when the window was cut above
    ``floor``). ``floor`` is one number or one per δ."""
    r = reader or Reader(cp)
    delta = np.atleast_1d(np.asarray(delta, float))
    if delta.size > MANY:
        return _epsilon_at_many(cp, delta, sign, np.broadcast_to(np.asarray(floor, float), delta.shape), r)
    if np.ndim(floor) > 0:
        floors = np.broadcast_to(np.asarray(floor, float), delta.shape)
        out = np.empty(delta.shape)
        for v in np.unique(floors):
            sel = floors == v
            out[sel] = epsilon_at(cp, delta[sel], sign, float(v), r)
        return out
    out = np.empty(delta.shape)
    no_claim = floor
    if cp.read_from > floor:
        floor, no_claim = cp.read_from, -np.inf
    i_floor = int(r.index_after(np.array([floor]))[0])
    lo_j = max(i_floor + 1, r.first + 1, 1)  # grid points above the floor: ε = ℓ_{j−1} >= ℓ_{i_floor}

    def at(eps):
        eps = np.atleast_1d(np.asarray(eps, float))
        return r.log_delta(r.index_after(eps), eps, sign)

    for k, dl in enumerate(delta):
        lt = float(np.log(dl))
        if sign > 0:
            if at(floor)[0] <= lt:
                out[k] = floor
                continue
            j = _first_at_most(r, lt, sign, lo_j, r.n + 1)
            # Check, and walk forward past any non-monotone spot (rare: allowances only).
            while j <= r.n and at(r.loss(j - 1))[0] > lt:
                j += 1
            if j > r.n:
                out[k] = np.inf if at(r.top + cp.h)[0] > lt else float(r.top + cp.h)
                continue
            e_grid = float(r.loss(j - 1))
            # The crossing is in the segment before this point (suffix j − 1; the floor's segment
            # when j is the first point above it).
            e = r.segment_solve(j - 1, lt, sign)
            out[k] = e_grid
            for back in BACK_OFF if np.isfinite(e) else ():
                e_try = max(float(np.nextafter(e + 4 * _U * (abs(e) + cp.h) + back * cp.h, np.inf)), floor)
                if not e_try < e_grid:
                    break
                if at(e_try)[0] <= lt:
                    out[k] = e_try
                    break
        else:
            # The lower curve need not be monotone (its allowance is large far below the tilt's
            # centre): every point where it is above δ is below the true ε, so the answer is the
            # *last* such point. It lies before the first point where the curve without allowances
            # (monotone, and above the lower curve) is at most δ: search backwards from there.
            j = _first_at_most(r, lt, 0.0, lo_j, r.n + 1)
            # Blocks double from SCAN_FIRST points (to SCAN_MOST): a read whose lower curve is nowhere
            # above δ scans the window in O(log n) passes, not n/256.
            j_last = -1
            end, size = j, SCAN_FIRST
            while end > lo_j and j_last < 0:
                block = np.arange(max(end - size, lo_j), end)
                vals = r.log_delta(block, r.loss(block - 1), -1.0)
                over = np.flatnonzero(vals > lt)
                j_last = int(block[over[-1]]) if over.size else -1
                end, size = int(block[0]), min(2 * size, SCAN_MOST)
            if j_last < 0:
                if at(floor)[0] <= lt:
                    out[k] = no_claim
                    continue
                best = floor
            else:
                best = float(r.loss(j_last - 1))
            # The crossing is in the segment from that point on (suffix j_last, or the floor's).
            e = r.segment_solve(j_last if j_last >= lo_j else i_floor, lt, sign)
            for back in BACK_OFF if np.isfinite(e) else ():
                e_try = float(np.nextafter(e - 4 * _U * (abs(e) + cp.h) - back * cp.h, -np.inf))
                if not e_try > best:
                    break
                if at(e_try)[0] > lt:
                    best = e_try
                    break
            out[k] = best
    return out


def _epsilon_at_many(cp: Composed, delta: np.ndarray, sign: float, floor: np.ndarray, r: Reader) -> np.ndarray:
    """:func:`epsilon_at` for many δ: the curve at every grid point above the lowest floor, once; for
    each δ the first point where the upper curve is at most δ (sign +1), or the last point before the
    curve without allowances reaches δ where the lower curve is above it (−1); then the segment solve
    and its check, as in the search per δ. Every answer is evaluated where it is returned."""
    n = r.n
    lt = np.log(delta)
    floor = np.array(floor, float)
    no_claim = floor.copy()
    cut = cp.read_from > floor
    floor[cut] = cp.read_from
    no_claim[cut] = -np.inf
    i_floor = r.index_after(floor)
    lo_j = np.maximum(np.maximum(i_floor + 1, r.first + 1), 1)
    lo0 = int(lo_j.min())
    js = np.arange(lo0, n + 1, dtype=np.int64)  # grid points ε = ℓ_{j−1}; j = n is past the grid

    def at(eps):
        eps = np.asarray(eps, float)
        return r.log_delta(r.index_after(eps), eps, sign)

    def curve(s_):
        return r.log_delta(js, r.loss(js - 1), s_, whole=True) if js.size else np.zeros(0)

    def first_at_most(v):
        """Per δ, the first j >= lo_j with v(j) <= log δ (n + 1 if none)."""
        if v.size == 0:
            return np.full(delta.shape, n + 1, dtype=np.int64)
        m = np.minimum.accumulate(v)
        j = lo0 + np.searchsorted(-m, -lt, side="left")
        for k in np.flatnonzero(j < lo_j):  # met before this δ's floor: look from the floor on
            hit = np.flatnonzero(v[lo_j[k] - lo0 :] <= lt[k])
            j[k] = lo_j[k] + hit[0] if hit.size else n + 1
        return j

    out = np.empty(delta.shape)
    if sign > 0:
        j = first_at_most(curve(1.0))
        beyond = j > n
        jj = np.minimum(j, n)
        e_grid = r.loss(jj - 1)
        e = _segment_solve_many(r, jj - 1, lt, sign)
        out = e_grid.copy()
        todo = np.isfinite(e) & ~beyond
        for back in BACK_OFF:
            with np.errstate(invalid="ignore"):
                e_try = np.maximum(np.nextafter(e + 4 * _U * (np.abs(e) + cp.h) + back * cp.h, np.inf), floor)
            todo &= e_try < e_grid
            idx = np.flatnonzero(todo)
            if not idx.size:
                break
            ok = at(e_try[idx]) <= lt[idx]
            out[idx[ok]] = e_try[idx[ok]]
            todo[idx[ok]] = False
        if beyond.any():
            past = float(r.top + cp.h)
            out[beyond] = np.where(at(np.full(int(beyond.sum()), past)) > lt[beyond], np.inf, past)
        at_floor = at(floor) <= lt
        out[at_floor] = floor[at_floor]
        return out
    j = first_at_most(curve(0.0))
    low = curve(-1.0)
    j_last = np.full(delta.shape, -1, dtype=np.int64)
    for k in range(delta.size):
        end, start, size = int(j[k]), int(lo_j[k]), SCAN_FIRST
        while end > start:
            a = max(end - size, start)
            over = np.flatnonzero(low[a - lo0 : end - lo0] > lt[k])
            if over.size:
                j_last[k] = a + int(over[-1])
                break
            end, size = a, min(2 * size, SCAN_MOST)
    none = j_last < 0
    best = np.where(none, floor, r.loss(np.maximum(j_last, 1) - 1))
    seg = np.where(j_last >= lo_j, j_last, i_floor)
    e = _segment_solve_many(r, seg, lt, sign)
    out = best.copy()
    todo = np.isfinite(e)
    for back in BACK_OFF:
        with np.errstate(invalid="ignore"):
            e_try = np.nextafter(e - 4 * _U * (np.abs(e) + cp.h) - back * cp.h, -np.inf)
        todo &= e_try > best
        idx = np.flatnonzero(todo)
        if not idx.size:
            break
        ok = at(e_try[idx]) > lt[idx]
        out[idx[ok]] = e_try[idx[ok]]
        todo[idx[ok]] = False
    if none.any():
        claim_none = none.copy()
        claim_none[none] = at(floor[none]) <= lt[none]
        out[claim_none] = no_claim[claim_none]
    return out


def delta_at(cp: Composed, eps, sign: float, reader: Reader | None = None) -> np.ndarray:
    """δ bounds at each ε (upper for sign +1, lower for −1); ε below a cut window's start is refused."""
    r = reader or Reader(cp)
    eps = np.atleast_1d(np.asarray(eps, float))
    if np.any(eps < cp.read_from):
        raise ValueError("δ below a cut window's start is not in the window")
    return np.exp(r.log_delta(r.index_after(eps), eps, sign))


#: Tilts tried by :func:`chernoff_epsilon` around each one given: t·2^(i/4) for |i| <= 8.
CHERNOFF_SPREAD = 2.0 ** (np.arange(-8, 9) / 4.0)


def chernoff_epsilon(parts, delta, tilts) -> np.ndarray:
    """A certified upper bound on ε at each δ of the composition of ``parts`` (discrete dominating
    steps, each ``times`` times) without composing them: for every t > 0 and ℓ >= ε,
    1 − e^{ε−ℓ} <= c(t)·e^{t(ℓ−ε)} with c(t) = (1/(1+t))·(t/(1+t))^t, so

        δ(ε) <= P[L = ∞] + c(t)·e^{−tε}·Π_j M_j(t)^{T_j},   M_j(t) = Σ p e^{tℓ} over step j's finite masses,

    and ε = (Σ T_j log M_j(t) + log c(t) − log(δ − P[L = ∞]))/t is an upper bound at every t; the
    smallest over t·2^(i/4), |i| <= 8, for each tilt t in ``tilts`` (one per δ) is returned (+inf where
    δ <= P[L = ∞]). The steps dominate the mechanism's, so the bound holds for it. Floating point:
    each log M_j is taken as high as its sums' and exponentials' round-off allow (relative
    4u·(size + 64) of the sum, 1e-12 of the logarithm, 8u·t·max|ℓ|, and the terms the blocked sums
    may underflow), P[L = ∞] rounded up, and the result moved up by 1e-12 relative and one ulp.
    (Loose next to the composition: the engine uses it only to settle a direction whose bound is
    already below a certified lower end.)"""
    delta = np.atleast_1d(np.asarray(delta, float))
    tilts = np.broadcast_to(np.asarray(tilts, float), delta.shape)
    u = _U
    with np.errstate(divide="ignore"):
        keep = sum(t * float(np.log1p(-min(d.p_inf, 1.0))) for d, t in parts)
    p_inf = min(-float(np.expm1(keep)) * (1 + 8 * u * (1 + len(parts))) + 1e-300 * (keep < 0), 1.0)
    # Per step: its largest |ℓ|, and (where it has finite mass) its mass, its top loss over its mean.
    steps = []
    for d, t in parts:
        pos = d.p > 0
        ell, p = d.losses()[pos], d.p[pos]
        mass = float(p.sum()) if p.size else 0.0
        spread = float(ell.max()) - float(np.dot(p, ell)) / mass if p.size else 0.0
        steps.append((d, t, float(np.max(np.abs(ell), initial=0.0)), mass, spread))
    out = np.full(delta.shape, np.inf)
    for lam in np.unique(tilts):
        if not (np.isfinite(lam) and lam > 0):
            continue
        ts = lam * CHERNOFF_SPREAD
        lm = np.zeros(ts.shape)
        with np.errstate(all="ignore"):
            for d, t, reach, mass, spread in steps:
                one = log_mgf(d, ts)
                slack = 4 * u * (d.p.size + 64) + 1e-12 * (1 + np.abs(one)) + 8 * u * ts * reach
                # Terms below e^{-707} of the largest may underflow in the blocked sums: at most
                # e^{t(top − mean) − 707}/Σp of M (M >= Σp·e^{t·mean} by Jensen).
                if mass > 0:
                    slack = slack + np.log1p(np.exp(np.minimum(ts * spread - 707.0, 700.0)) / mass)
                lm = lm + t * (one + slack)
            log_c = -np.log1p(ts) - ts * np.log1p(1.0 / ts)
            log_c = log_c + 1e-12 * (1 + np.abs(log_c))
            sel = tilts == lam
            rest = delta[sel] - p_inf
            bound = (lm[None, :] + log_c[None, :] - np.log(np.where(rest > 0, rest, np.nan))[:, None]) / ts[None, :]
            bound = np.where(np.isfinite(bound), bound, np.inf)
            best = np.min(bound, axis=1)
            best = np.nextafter(best + 1e-12 * np.abs(best), np.inf)
        out[sel] = np.minimum(out[sel], np.maximum(best, 0.0))
    return out
