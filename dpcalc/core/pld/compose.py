"""Composition: T-fold (and mixed) composition of discrete PLDs by one FFT power.

Every step is first tilted exponentially by λ — masses p·e^{λℓ}, normalised
— which centres the composed loss near the ε asked about and keeps the
transforms' round-off small next to the masses δ reads there; the true
composed masses are the tilted ones times e^{G − λℓ}. The composition is
computed on a window sized by Chernoff bounds on the tilted measure; what
may have wrapped around is bounded and carried to the reads
(:mod:`.query`), as is a bound on the round-off (:func:`.errors.roundoff_l2`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import fft as sfft

from .discretise import Discrete
from .errors import FFT_ERROR_PER_LEVEL, best_chernoff, roundoff_l2
from .spectrum import low_band_rfft

__all__ = [
    "Composed",
    "log_mgf",
    "parts_log_mgf",
    "spread",
    "choose_tilt",
    "choose_tilts",
    "int_power",
    "compose",
    "MAX_GRID",
    "FULL",
]

#: Largest grid (points) for one composition; beyond it the engine takes a coarser grid (MemoryError).
MAX_GRID = 1 << 22

_U = float(np.finfo(float).eps)

#: ``compose(extended=FULL)``: every stage in long double (see :func:`compose`); 1 (True) is the
#: steps' transforms only.
FULL = 2


@dataclass(frozen=True)
class Composed:
    """A composed discrete PLD, stored exponentially tilted.

    The finite part has masses p̃_i at losses ℓ_i = (k0 + i + c)·h; the true
    masses are p_i = p̃_i · exp(G − λ ℓ_i). ``tilted_wrap`` bounds the tilted
    mass that may have wrapped around the window (both sides, counted
    twice: missing above and misplaced); ``roundoff`` bounds the Euclidean
    norm of the round-off error in the tilted masses (:func:`.errors.roundoff_l2`).
    """

    h: float
    k0: int
    c: float
    p: np.ndarray
    p_inf: float
    lam: float
    g: float
    tilted_wrap: float
    roundoff: float
    move_mean: float = 0.0  # Σ over steps of the mean move of the lower discretisation
    move_var: float = 0.0  # Σ over steps of its variance
    move_b: float = 0.0  # the largest per-step mean move (Bernstein's one-sided bound)
    #: δ(ε) is read for ε >= read_from only (the window was cut there, see compose) ...
    read_from: float = -np.inf
    #: ... and mass from below the cut, wrapped onto the window, adds at most this to δ.
    alias: float = 0.0
    #: Relative error of e^G from the round-off in forming G (see compose).
    g_rel: float = 0.0
    #: The window's upper end x_hi: at most ``eta`` of the tilted mass lies above it (see compose).
    x_hi: float = np.inf

    def losses(self) -> np.ndarray:
        return (self.k0 + np.arange(self.p.size) + self.c) * self.h


def _log_mgf_blocked(d: Discrete, ts: np.ndarray, r: int, with_mean: bool):
    """log Σ p e^{tℓ} (and the tilted mean) by blocks of r grid points: with ℓ = b_j + k·h the sum is
    Σ_j e^{t b_j} Σ_k p_jk e^{tkh} — exponentials of the block starts and of r offsets, and one
    matrix product. Each t's sum is centred at the end that dominates it (terms <= e^{|t| r h})."""
    grid, base, top, starts, offs = d.mgf_blocks(r)
    out = np.empty(ts.shape)
    mean = np.empty(ts.shape) if with_mean else None
    with np.errstate(under="ignore", divide="ignore", over="ignore", invalid="ignore"):
        for positive in (True, False):
            sel = ts > 0 if positive else ts <= 0
            tt = ts[sel]
            if tt.size == 0:
                continue
            ref = top - base if positive else 0.0  # dominant end, relative to base
            e_off = np.exp(offs[:, None] * tt[None, :])
            inner = grid @ e_off  # (m, n_t): Σ_k p_jk e^{t k h}
            outer = np.exp((starts - ref)[:, None] * tt[None, :])  # e^{t (b_j − ref)} <= e^{|t| r h}
            total = np.einsum("jt,jt->t", outer, inner)
            out[sel] = tt * (base + ref) + np.log(total)
            if with_mean:
                inner2 = grid @ (offs[:, None] * e_off)  # Σ_k p_jk (k h) e^{t k h}
                num = np.einsum("jt,jt->t", outer, inner * (base + starts)[:, None] + inner2)
                mean[sel] = num / total
    return out, mean


def _log_mgf_blocks_lse(d: Discrete, ts: np.ndarray, r: int, with_mean: bool):
    """log Σ p e^{tℓ} (and the tilted mean) for larger t·h: each block of r grid points summed as in
    :func:`_log_mgf_blocked` (offset terms within e^{±|t| r h} <= e^{±MID_REACH}, one matrix product),
    then a log-sum-exp over the blocks' logarithms — r times fewer exponentials than one per mass,
    and no block total can under- or overflow the others away."""
    grid, base, _, starts, offs = d.mgf_blocks(r)
    out = np.empty(ts.shape)
    mean = np.empty(ts.shape) if with_mean else None
    b = base + starts  # loss of each block's first point
    with np.errstate(under="ignore", divide="ignore", over="ignore", invalid="ignore"):
        e_off = np.exp(offs[:, None] * ts[None, :])
        inner = grid @ e_off  # (m, n_t): Σ_k p_jk e^{t k h}, positive terms
        lb = np.log(inner) + b[:, None] * ts[None, :]  # log of each block's Σ p e^{tℓ}
        mx = np.max(lb, axis=0)
        w = np.exp(lb - mx)
        total = w.sum(axis=0)
        out[:] = mx + np.log(total)
        if with_mean:
            inner2 = grid @ (offs[:, None] * e_off)  # Σ_k p_jk (k h) e^{t k h}
            within = b[:, None] + inner2 / np.where(inner > 0, inner, 1.0)
            mean[:] = np.einsum("jt,jt->t", w, np.where(inner > 0, within, 0.0)) / total
    return out, mean


#: Exponents with 1/128 < |t|·h <= MID_TH go by :func:`_log_mgf_blocks_lse`, in blocks of r points
#: with |t|·(r − 1)·h <= MID_REACH (at least 4 points a block; beyond, one exponential per mass) ...
MID_TH = 4.0
MID_REACH = 16.0
#: ... for steps of at least this many masses (below it, the calls cost more than the exponentials saved).
MID_FROM = 4096


def _log_mgf_direct(d: Discrete, ts: np.ndarray, with_mean: bool):
    """log Σ p e^{tℓ} (and the tilted mean) over the nonzero masses, one log-sum-exp per t (for large
    t·h, where blocks would be a point each, and for sparse steps)."""
    ell, logp = d.nonzero_log()
    out = np.empty(ts.shape)
    mean = np.empty(ts.shape) if with_mean else None
    chunk = max(1, int(4_000_000 // max(ell.size, 1)))
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        for a in range(0, ts.size, chunk):
            tt = ts[a : a + chunk]
            m = logp[:, None] + ell[:, None] * tt[None, :]
            mx = m.max(axis=0)
            e = np.exp(m - mx)
            total = e.sum(axis=0)
            out[a : a + chunk] = mx + np.log(total)
            if with_mean:
                mean[a : a + chunk] = (e * ell[:, None]).sum(axis=0) / total
    return out, mean


def log_mgf(d: Discrete, t: np.ndarray, with_mean: bool = False):
    """log E[e^{tL}] over the finite part of a discrete PLD, for each t (and, ``with_mean``, the mean
    of L under the tilt, d/dt of it).

    Exponents with small t·h go by blocks of r grid points (:func:`_log_mgf_blocked`: one matrix
    product instead of one exponential per point and t); the others, and steps whose masses are
    mostly zero, by a log-sum-exp over the nonzero masses (:func:`_log_mgf_direct`).
    """
    t = np.asarray(t, float)
    key = ("mgf", t.shape, t.tobytes(), with_mean)
    cached = d._blocks.get(key)  # the same step at the same tilts: each composition asks a few times
    if cached is not None:
        return (cached[0].copy(), cached[1].copy()) if with_mean else cached.copy()
    res = _log_mgf(d, t, with_mean)
    d._blocks[key] = (res[0].copy(), res[1].copy()) if with_mean else res.copy()
    return res


def _log_mgf(d: Discrete, t: np.ndarray, with_mean: bool):
    flat = np.atleast_1d(t).ravel()
    out = np.full(flat.shape, -np.inf)
    mean = np.full(flat.shape, np.nan)
    if d.mgf_blocks(1) is None:
        return (out.reshape(t.shape), mean.reshape(t.shape)) if with_mean else out.reshape(t.shape)
    n_nz = d.nonzero_log()[0].size
    dense = n_nz * 4 >= d.p.size
    a_flat = np.abs(flat)
    small = a_flat * d.h <= 0.5 / 64
    if dense and small.any():
        tmax = float(a_flat[small].max())
        r = 1 << int(min(max(float(np.floor(np.log2(0.5 / max(tmax * d.h, 1e-300)))), 6.0), 10.0))
        o, m = _log_mgf_blocked(d, flat[small], r, with_mean)
        out[small] = o
        if with_mean:
            mean[small] = m
    rest = ~small if dense else np.ones(flat.shape, dtype=bool)
    mid = rest & (a_flat * d.h <= MID_TH) if dense and n_nz >= MID_FROM else np.zeros(flat.shape, dtype=bool)
    if mid.any():
        # Per tilt the largest power-of-two block with |t|·(r − 1)·h <= MID_REACH (4 to 64 points).
        with np.errstate(divide="ignore"):
            rs = 2.0 ** np.clip(np.floor(np.log2(MID_REACH / np.maximum(np.abs(flat) * d.h, 1e-300))), 2, 6)
        for r in np.unique(rs[mid]):
            sel = mid & (rs == r)
            o, m = _log_mgf_blocks_lse(d, flat[sel], int(r), with_mean)
            out[sel] = o
            if with_mean:
                mean[sel] = m
        rest = rest & ~mid
    if rest.any():
        o, m = _log_mgf_direct(d, flat[rest], with_mean)
        out[rest] = o
        if with_mean:
            mean[rest] = m
    if with_mean:
        return out.reshape(t.shape), mean.reshape(t.shape)
    return out.reshape(t.shape)


def parts_log_mgf(parts: list[tuple[Discrete, int]], t, with_mean: bool = False):
    """log E[e^{tS}] of the composition (each part ``times`` times), for each t (``with_mean``: and
    the mean of S under the tilt by t, G'(t))."""
    t = np.atleast_1d(np.asarray(t, float))
    if not with_mean:
        return sum(times * log_mgf(d, t) for d, times in parts)
    g = 0.0
    gp = 0.0
    for d, times in parts:
        a, b = log_mgf(d, t, True)
        g = g + times * a
        gp = gp + times * b
    return g, gp


def spread(parts: list[tuple[Discrete, int]]) -> float:
    """Standard deviation of the composed loss (finite parts, normalised): the scale of tilts and windows."""
    var = 0.0
    for d, t in parts:
        v = d._blocks.get("var")
        if v is None:
            pos = d.nonzero_index()
            p = d.p[pos]
            mass = float(p.sum())
            if mass <= 0:
                v = d._blocks["var"] = 0.0
                continue
            ell = (d.k0 + pos + d.c) * d.h
            mean = float(np.dot(ell, p)) / mass
            v = d._blocks["var"] = float(np.dot((ell - mean) ** 2, p)) / mass
        var += t * v
    h = parts[0][0].h
    return float(max(np.sqrt(var), h))


#: Tilts are powers of √2 over the composed spread, so that δs of one curve share compositions.
_TILT_STEPS = np.arange(-24, 16)


def choose_tilt(parts: list[tuple[Discrete, int]], log_delta: float, guess: float | None = None) -> tuple[float, float]:
    """The exponential tilt λ for answering at level δ, and G(λ) − λ·ε_g.

    Tilting by λ centres the composed loss at G'(λ) (G = log E[e^{λS}]) and
    keeps the transforms' round-off small next to the masses there. λ is the
    largest power of √2 over the composed spread whose centre G'(λ) is at
    most ε_g — the ``guess`` of the answer if given (a previous bound), else
    the Chernoff bound min_λ (G(λ) − log δ)/λ. (Not the Chernoff exponent
    itself: where the per-step loss has a heavy upper tail, G' jumps past
    any reasonable ε near it, and the tilted measure would be all tail.)
    Only accuracy and the window's size depend on this choice: every
    allowance is computed for the λ and window used.
    """
    lam, rest = choose_tilts(parts, np.array([log_delta]), None if guess is None else np.array([guess]))
    return float(lam[0]), float(rest[0])


#: A lower end's read more than this many e-folds of its tilt below the level the tilt was chosen for (0)
#: takes a tilt chosen for the read's own level instead (see :func:`choose_tilts`' ``floor``).
FAR_READ = 5.0


def choose_tilts(
    parts: list[tuple[Discrete, int]], log_delta, guess=None, fallback=None, floor: float = 0.0, signed: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`choose_tilt` for many levels δ at once (``guess``: None or one per δ, NaN for none): one
    log-MGF evaluation shared by all. Raises FloatingPointError where no tilt has a finite log-MGF (a
    loss distribution beyond what floating point represents).

    ``fallback`` (None or one per δ, e.g. a certified lower bound on ε): the level ε_g used instead of
    the Chernoff bound where that bound is above every tilt's centre — the losses end below it (a few
    atoms, bounded losses: the Chernoff bound tends to the largest loss, above the answer), and the
    largest tilt would weigh the masses read at ε by up to e^{λ(ℓ_max − ε)} next to the round-off.

    ``floor`` (<= 0): the lowest level a read can be at — for a lower end, −(its steps' total move), the
    give-back it reads below ε. The level is the Chernoff bound clipped at 0; where that bound is below 0
    and the read's level, max(bound, floor), lies more than FAR_READ/λ below 0, the tilt is chosen for
    the read's level instead. (Tens of millions of steps move a lower discretisation down by more than ε:
    at q = 1e-4, σ = 1, 6·10⁷ steps, δ = 1e-8 the read was at about −2.1 on a tilt chosen for 0, λ = 11.1,
    and made no claim. Any tilt gives sound bounds; this one puts the read near its centre.)

    ``signed``: a guess below 0 is taken as it is (a lower end read below 0 by the moves it gives back,
    :func:`.jumps.read_tilt`), not as 0."""
    log_delta = np.atleast_1d(np.asarray(log_delta, float))
    s = spread(parts)
    ts = 2.0 ** (_TILT_STEPS / 2.0) / s
    total, centre = parts_log_mgf(parts, ts, with_mean=True)
    ok = np.isfinite(total)
    if not ok.any():
        raise FloatingPointError("no exponential tilt of the composition has a finite log-MGF")
    with np.errstate(invalid="ignore"):
        x = np.where(ok[None, :], (total[None, :] - log_delta[:, None]) / ts[None, :], np.inf)
    eps_raw = np.min(x, axis=1)
    eps_g = np.maximum(eps_raw, 0.0)
    usable = ok & np.isfinite(centre)
    first_ok = int(np.flatnonzero(ok)[0])

    def largest_below(level):
        """Per δ, the index of the largest tilt whose centre is at most ``level`` (the first usable if none),
        and whether any is."""
        below = usable[None, :] & (centre[None, :] <= level[:, None])
        last = ts.size - 1 - np.argmax(below[:, ::-1], axis=1)
        return np.where(below.any(axis=1), last, first_ok), below

    fixed = np.zeros(log_delta.shape, dtype=bool)  # levels a guess or the fallback set
    if guess is not None:
        g = np.broadcast_to(np.asarray(guess, float), log_delta.shape)
        fixed = ~np.isnan(g)
        eps_g = np.where(fixed, g if signed else np.maximum(g, 0.0), eps_g)
    i, below = largest_below(eps_g)
    if fallback is not None:
        fb = np.broadcast_to(np.asarray(fallback, float), log_delta.shape)
        saturated = np.all(below | ~usable[None, :], axis=1) & ~fixed & np.isfinite(fb)
        if saturated.any():
            eps_g = np.where(saturated, np.maximum(fb, 0.0), eps_g)
            fixed = fixed | saturated
            i, _ = largest_below(eps_g)
    if floor < 0:
        low = np.maximum(eps_raw, floor)
        with np.errstate(invalid="ignore"):
            far = ~fixed & (low < 0) & (ts[i] * (eps_g - low) > FAR_READ)
        if far.any():
            eps_g = np.where(far, low, eps_g)
            i, _ = largest_below(eps_g)
    return ts[i], total[i] - ts[i] * eps_g


def int_power(z: np.ndarray, t: int, overwrite: bool = False) -> np.ndarray:
    """z**t for a whole t >= 1 by repeated squaring (numpy uses exp/log past t = 100, ~8× slower).
    ``overwrite``: z's own memory is used for the squarings (its contents are lost).

    Each complex product errs by at most √5·u relative, so z**t errs by at most (t − 1)·√5·u
    relative — inside the round-off allowance's u·(π t + 1)·|z**t| (see :func:`.errors.roundoff_l2`).
    """
    t = int(t)
    result = None
    base = z if overwrite else z.copy()
    while t:
        if t & 1:
            if result is None:
                result = base if t == 1 else base.copy()  # the last bit: base is not squared again
            else:
                np.multiply(result, base, out=result)
        t >>= 1
        if t:
            np.multiply(base, base, out=base)
    return result


#: Long-double transforms of at least this many points are counted (see :func:`_planned`) ...
FORGET_FROM = 1 << 18
#: ... and once the distinct lengths counted add up to more than this many points (about 240 MB of
#: long-double plans), the FFT library's plans are dropped (:func:`forget_plans`).
PLAN_BUDGET = 1 << 22

_LENGTHS: set = set()


def _planned(n: int) -> None:
    """Count a long-double transform of n points; drop the plans once the lengths counted since the last
    drop exceed PLAN_BUDGET (a length that comes again costs nothing: its plan is reused)."""
    _LENGTHS.add(int(n))
    if sum(_LENGTHS) > PLAN_BUDGET:
        forget_plans()
        _LENGTHS.clear()


#: Distinct lengths transformed by :func:`forget_plans` (at least the library's plan cache: 16 a kind).
_TINY = range(2, 42)


def forget_plans() -> None:
    """Evict the FFT library's cached plans by transforming a few dozen tiny lengths in double and long
    double. The library keeps a plan per length (16 a kind, least recently used first out): about 60 MB
    per million points in long double, so that an answer composing in long double on many windows of
    different sizes held up to 400 MB of plans it would not use again (a peak of 1,037 MiB at q = 1e-6,
    σ = 0.5, 100 steps, δ = 1e-12). The numbers computed do not depend on it: plans are rebuilt
    exactly as they were."""
    for n in _TINY:
        for dt in (np.longdouble, np.float64):
            sfft.irfft(sfft.rfft(np.zeros(n, dtype=dt)), n)


#: :func:`_sub_infinite` applies where some part's finite mass plus its P[L = ∞] falls short of 1 by this much.
SUB_PROBABILITY = 1e-6


def _sub_infinite(parts: list[tuple[Discrete, int]]) -> float:
    """An upper bound on the infinite mass of the composition of sub-probability parts: with finite
    masses m_j and infinite masses π_j, Π(m_j + π_j)^{T_j} − Π m_j^{T_j} = Π m_j^{T_j}·(Π(1 + π_j/m_j)^{T_j}
    − 1), which rises with every m_j and π_j, so m_j's upper bound (its sum, rounded up) is used. For
    probability steps it is 1 − Π(1 − π_j)^{T_j}, the formula above; for the terms of a split (a
    far-tail step of mass ι taken k times, blocks carrying the tilted mass beyond their windows at +∞,
    :mod:`.blocks`) it is about ι^k times that — which the weight C(T, k) of a term would otherwise
    multiply. +inf where no part falls short of 1 by SUB_PROBABILITY (nothing to gain) or a mass is 0.
    (A lower composition keeps 1 − Π(1 − π_j)^{T_j}: its parts are the true steps' dominated forms, whose
    own finite masses are 1 − π_j whatever mass the discretisation dropped; the parts of a split, which
    are not, carry π = 0 and their terms' infinite paths separately, :func:`.jumps.terms`.)"""
    log_m = log_r = err = 0.0
    short = False
    for d, t in parts:
        m = float(np.sum(d.p)) * (1 + (d.p.size + 4) * _U)
        if not m > 0:
            return np.inf
        short = short or m + d.p_inf < 1 - SUB_PROBABILITY
        lm = float(np.log(m))
        log_m += t * lm
        err += t * (abs(lm) + 1.0)
        log_r += t * float(np.log1p(d.p_inf / m))
    if not short:
        return np.inf
    # Each log within u of 1 plus 2u of itself, each product t·(·) and sum within u of itself: Σ T_j log m_j
    # is off by at most 4u·Σ T_j(|log m_j| + 1); Σ T_j log1p(π_j/m_j), of positive terms, by (4 + parts)·u
    # relative. exp and expm1 add 2u each.
    n = len(parts) + 4
    a = log_m + 4 * _U * (err + n)
    b = log_r * (1 + 4 * n * _U) + 1e-300
    with np.errstate(over="ignore"):
        out = float(np.exp(a) * np.expm1(b)) * (1 + 8 * _U)
    return out if np.isfinite(out) else np.inf


def compose(
    parts: list[tuple[Discrete, int]],
    lam: float,
    eta: float = 1e-18,
    max_size: int | None = None,
    cut: float | None = None,
    cut_eta: float = 1e-18,
    upper: bool = True,
    extended: int = 0,
    pow2: bool = False,
) -> Composed:
    """Compose discrete PLDs (same h), each ``times`` times, by one FFT power of the tilted steps.

    The window [x_lo, x_hi] holds all but ``eta`` of the tilted finite mass
    on each side (Chernoff bounds computed from the discrete steps); mass
    beyond it may wrap around and is accounted for.

    ``cut``: start the window at ``cut`` instead, as long as it stays at
    least log(1/``cut_eta``)/λ wide. Mass below it then wraps around onto
    the top of the window, which can only *raise* δ — by little: P-mass at
    x lands at x + W (W the window's width) where δ weighs it e^{−λW} times
    its own mass, at most e^{−λW} <= ``cut_eta`` in all (``alias``; an upper
    bound may keep it, a lower bound subtracts it). δ is then read only for
    ε >= cut (``read_from``): the mass between ε and the cut is not in the
    window.

    P[L = ∞] of the composition, 1 − Π(1 − p_j)^{T_j}, is formed as
    −expm1(Σ T_j log1p(−p_j)) and rounded up (``upper``) or down; an upper composition of
    sub-probability parts takes the smaller bound of :func:`_sub_infinite` where that is smaller.

    ``pow2``: a transform length that is a power of two (at most twice the window) — for runs of
    many long-double compositions of different sizes, whose transform plans the FFT library keeps
    (about 30 MB per million points each).
    """
    if not lam > 0:
        raise ValueError("compose needs a tilt λ > 0")
    max_size = MAX_GRID if max_size is None else max_size
    h = parts[0][0].h
    c_total = sum(t * d.c for d, t in parts)
    shift = int(np.floor(c_total))
    c = c_total - shift
    eta_t = min(eta, 1e-6)
    scale = spread(parts)

    def logm(t):
        return parts_log_mgf(parts, t)

    # Each step tilted by λ and normalised; G = Σ T_j·log Σ p e^{λℓ} is the very constant divided
    # out, so that true masses are tilted ones times e^{G − λℓ} up to the round-off of the tilt:
    # per entry, relative u·(|log p| + |λℓ| + |lw| + |lw − max| + 2) (the logarithm, product and
    # sum forming lw, the shift, exp, the division), carried as an error vector (its L1 norm) into the
    # round-off bound; and in G, u·(|max| + |log s| + 2) per step, carried as a relative error of δ
    # (g_rel). ``extended`` (1): the tilt and each step's transform in long double (u ≈ 1.1e-19 on x86),
    # the spectrum then rounded to double — a relative error, which the T-th power turns into a
    # relative error of the composition rather than an absolute one — for reads far out in the
    # tilted tail, where the double-precision bound would swamp δ. ``extended`` 2 (FULL): the powers,
    # products and inverse transform in long double too, the composed masses rounded to double at
    # the end (u/2 of each, in the round-off bound) — for a tilt that cannot centre the composition
    # where δ is read (a heavy upper tail: δ = 1e-12 from the far tail of one sampled step, the
    # tilted bulk still at 0), where even that bound is a visible share of δ. (Where long double is
    # double, nothing changes but the time.)
    full = extended == FULL
    dtype = np.longdouble if extended else np.float64
    u_c = float(np.finfo(dtype).eps)
    tilted = []
    tilt_err = []
    g_lam = 0.0
    g_rel = 0.0
    for d, t in parts:
        # Over the nonzero masses only (a step's tails are sparse).
        pos = d.nonzero_index()
        ell = ((d.k0 + pos + d.c) * d.h).astype(dtype, copy=False)
        logp = np.log(d.p[pos].astype(dtype, copy=False))
        lw = logp + dtype(lam) * ell
        mx = lw.max()
        with np.errstate(under="ignore", invalid="ignore"):
            e = np.exp(lw - mx)
        total = e.sum()
        w = e / total
        lse = float(mx + np.log(total))
        g_lam += t * lse
        g_rel += t * _U * (abs(lse) + 4.0)
        rel = u_c * (np.abs(logp) + np.abs(lam * ell) + np.abs(lw) + (mx - lw) + 2.0)
        tilted.append((pos, w))
        tilt_err.append(float(np.sum(w * rel)))

    # Window from the tilted measure alone: log E~[e^{tS}] = logm(λ+t) − G. Any tilted mass W~ beyond
    # it (both sides) changes δ(ε) by at most 2·W~·e^{G−λε} (the mass missing above the window plus its
    # wrapped copy), for every ε inside it.
    def both(ts):  # rows: upper tail (λ + t), lower tail (λ − t); one log-MGF call
        return logm(np.stack([lam + ts[0], lam - ts[1]])) - g_lam

    up_t, lo_t = best_chernoff(both, np.log(eta_t), 2, scale)
    x_hi, x_lo = up_t, -lo_t
    read_from, alias = -np.inf, 0.0
    if cut is not None:
        top_cut = min(float(cut), x_hi + np.log(cut_eta) / lam)  # keeps λ·W >= log(1/cut_eta)
        if top_cut > x_lo + h:
            x_lo = read_from = top_cut
            alias = float(np.exp(-lam * (x_hi - x_lo)))
    if not (np.isfinite(x_lo) and np.isfinite(x_hi)):
        raise FloatingPointError("the composition window could not be bounded")
    k_lo = int(np.floor(x_lo / h)) - 1
    k_hi = max(int(np.ceil(x_hi / h)) + 1, k_lo + 2)
    if k_hi - k_lo + 1 > max_size:
        raise MemoryError(f"PLD grid of {k_hi - k_lo + 1} points exceeds the limit {max_size}")
    n = sfft.next_fast_len(k_hi - k_lo + 1, real=True)
    if extended:  # a multiple of 256, so that the low band's blocks divide it (see .spectrum)
        n = 256 * sfft.next_fast_len(-(-(k_hi - k_lo + 1) // 256), real=True)
    if pow2:
        n = max(1 << int(k_hi - k_lo).bit_length(), 256)
    spec = None
    log_keep = 0.0
    kappa = FFT_ERROR_PER_LEVEL * u_c * np.log2(max(n, 2))
    spectra = []  # (times, bound on each coefficient's error, moduli of the coefficients)
    for (d, t), (pos, w), err in zip(parts, tilted, tilt_err):
        idx = (d.k0 + pos) % n
        # Long double only where the power needs it (the low frequencies, see .spectrum) where that
        # applies; else the whole transform.
        band = None
        if extended and not full and d.p.size <= n and pos.size:
            band = low_band_rfft(idx, w, n, t, d.p.size, int((d.k0 + pos[0]) % n))
        if band is not None:
            f, b, absf = band
            b = b + err
        else:
            x = np.zeros(n, dtype=dtype)
            if d.p.size <= n:
                x[idx] = w  # distinct indices
            else:  # a step wider than the window: its far tail wraps (bounded with the window's)
                np.add.at(x, idx, w)
            f = sfft.rfft(x)
            b = kappa * float(np.sum(w)) * (1 + 1e-6) + err
            if full:  # kept in long double; its moduli in double, rounded up (the bound's c >= |F|)
                absf = np.abs(f).astype(np.float64) * (1 + 2 * _U)
            elif extended:
                f = f.astype(np.complex128)
                absf = np.abs(f)
                b = b + 2 * _U * absf  # rounding the spectrum to double
            else:
                absf = np.abs(f)
        spectra.append((t, b, absf))
        # Where |F|^T <= c^T < e^{−700} (c = |F̃|(1 + 2u) + b >= |F|) the power is 0 to well within the
        # u·k/e per frequency of the round-off bound (the other parts' |F_k|^{T_k} are at most
        # ||w_k||₁^{T_k} ≈ 1): only the other frequencies are raised (for many steps, a small share).
        live = np.flatnonzero(absf * (1 + 2 * _U) + b > np.exp(-700.0 / max(t, 1)))
        if live.size < f.size // 2:
            g = np.zeros_like(f)
            g[live] = int_power(f[live], t, overwrite=True)
            f = g
        else:
            f = int_power(f, t, overwrite=True)  # this step's spectrum is not used again
        spec = f if spec is None else spec * f
        log_keep += t * float(np.log1p(-min(d.p_inf, 1.0)))
    out = sfft.irfft(spec, n)
    if extended and n >= FORGET_FROM:
        _planned(n)
    move_mean = sum(t * d.move_mean for d, t in parts)
    move_var = sum(t * d.move_var for d, t in parts)
    # >= every step's own mean: theirs are rounded down, by 1e-9 (and by at most 5e-9 more in .jumps).
    move_b = max(d.move_mean for d, _ in parts) * (1 + 1.5e-8)
    out_norm = float(np.sqrt(np.sum(np.square(out))))
    if full:  # powers, products and the inverse in long double; then each mass rounded to double
        roundoff = roundoff_l2(n, spectra, out_norm, u_c) + _U * out_norm
    else:
        roundoff = roundoff_l2(n, spectra, out_norm, _U)
    start = k_lo - shift
    p = np.roll(out, -(start % n)).astype(np.float64, copy=False)  # out[(start + i) mod n], ...
    np.maximum(p, 0.0, out=p)  # ... less its negative round-off
    p_inf = float(-np.expm1(log_keep))
    p_inf = min(p_inf * (1 + 8 * _U * (1 + len(parts))), 1.0) if upper else p_inf * (1 - 8 * _U * (1 + len(parts)))
    if upper and p_inf > 0:
        p_inf = min(p_inf, _sub_infinite(parts))
    return Composed(
        h,
        start + shift,
        c,
        p,
        p_inf,
        lam,
        g_lam,
        4.0 * eta_t,
        roundoff,
        move_mean,
        move_var,
        move_b,
        read_from,
        alias,
        float(np.expm1(g_rel)),
        float(x_hi),
    )
