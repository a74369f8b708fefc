"""Accuracy control: a certified [lower, upper] on ε(δ) as narrow as asked, on grids that fit.

The grid spacing is a power of two chosen from two scales: the per-step
loss spread (a grid much coarser than a step makes both bounds loose — the
small sampling rates of large datasets give narrow steps) and the width
asked for (connect-the-dots error grows like T·h², so a wide target allows a
coarse grid — large ε). The lower end comes first; the upper end's windows
then start at it. Each end is refined by halving the spacing of the side
that moved more, until the width is met or the grid no longer fits; a
spacing whose grid does not fit is replaced by a coarser one (every grid
gives sound bounds). Mechanisms with two directions are bounded by the
larger δ: the direction whose upper bound is the largest is refined, the
others keep the coarser (still sound) bounds they have.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import blocks, jumps
from . import discretise as D
from .compose import FULL, MAX_GRID, Composed, choose_tilts, compose, parts_log_mgf, spread
from .discretise import WIDEST_BIN, Discrete, discretise_lower, discretise_upper
from .errors import LOWER_ETA, lower_shift
from .fold import FOLD_FROM, fold, foldable
from .query import MANY, Reader, chernoff_epsilon, delta_at, epsilon_at

__all__ = ["MIN_DELTA", "UPPER_H", "REL_WIDTH", "ABS_WIDTH", "Answer", "Interval", "epsilon", "delta_interval"]

#: Smallest δ the PLD engine answers for. The FFT's round-off (about 1e-16 of the tilted mass per grid
#: point) is relative to the masses where δ is read — the tilt centres the composition there, and the
#: reads far out in the tilted tail go to long double — so it is not what limits δ: every allowance is
#: counted in the bound either way. Below this the answers get slow and wide: at δ = 1e-30, 118 of 120
#: random DP-SGD rows of the box met their width (the slowest 9 s; 240 rows against the exact T = 1 and
#: q = 1 routes, none on the wrong side); at 1e-50 one of five rows took 35 s and missed it, and at 1e-100
#: most miss it. Beneath it RDP answers, and says so.
MIN_DELTA = 1e-30

#: The upper end is computed on a grid no coarser than this (2^-14 ≈ 6.1e-5) where it fits. Both ends
#: are connect-the-dots bounds whose error is second order in h, so on this grid the upper end is
#: about 0.37× as far above the true ε as a bound on a 1e-4 grid (the spacing peers such as
#: dp-accounting use): an upper end no looser than theirs, whatever interval width is asked for.
UPPER_H = 2.0**-14

#: Default interval width: at most 0.1 % of ε, or 1e-4 absolute for small ε.
REL_WIDTH = 1e-3
ABS_WIDTH = 1e-4


#: Largest grid for the quick upper ends of searches (upper_only). They retry in long double as the full
#: answer does: at tiny δ the double-precision reads' round-off made them up to 4× loose (q = 1e-6, σ = 0.58,
#: 10 steps, δ = 1e-12: 0.0916 against a certified 0.0216), and a search then ran on full evaluations.
QUICK_GRID = 1 << 20
#: ... and count round-off against this share of the ε they read (the width they would be asked for).
QUICK_REL = 1e-2

#: A read whose round-off allowance exceeds this fraction of δ is composed again in long double — unless
#: that allowance moves ε by less than NOISE_WIDTH of the width asked for (it is part of the bound
#: either way; long double only narrows it).
NOISE_LIMIT = 1e-5
NOISE_WIDTH = 0.005
#: ... and every stage of it in long double where the round-off still moves ε by this share of the width
#: (see :func:`_eps_dirs`).
FULL_SHARE = 0.1
#: A double-precision read whose round-off is within this range of δ goes to every stage in long double
#: at once, not through the steps' transforms in long double first (see :func:`_eps_dirs`).
NEAR_ONE = (0.1, 10.0)

#: The final upper ends' sparse tail bins: P-mass·4^k at most this times the per-step tail at TAIL_SHARE
#: (1e-9·δ/T, whatever share the answer's grids take), so that they move δ by a small fraction of itself
#: even where a single step's heavy tail makes ε (round-off and the other allowances are kept to
#: NOISE_LIMIT·δ and 1e-9·δ).
FINE_TAIL_BUDGET = 1e6

#: Whether long double is wider than double here (x86: 64-bit mantissa); elsewhere there is no retry.
_EXTENDED = bool(np.finfo(np.longdouble).eps < np.finfo(np.float64).eps)

#: The spread model of :func:`initial_h` overstates connect-the-dots error (measured: the first
#: intervals came out 3-10x narrower than asked); its width is scaled by this.
SD_SLACK = 2.0


@dataclass(frozen=True)
class Answer:
    lower: np.ndarray
    upper: np.ndarray
    h_upper: float
    h_lower: float
    met: np.ndarray  # whether the width target was met
    #: The grid the answer's lower end started on (:func:`initial_h`, doubled where it did not fit; 0
    #: where none was chosen): where a missed width is narrowed by the split (:func:`_by_jumps`), the
    #: split starts there.
    h_start: float = 0.0
    #: The answer is only the split's bracket (see :func:`_once`'s ``jumps_first``): not refined.
    bracket: bool = False


@dataclass(frozen=True)
class Interval:
    lower: np.ndarray
    upper: np.ndarray
    h: float


def _pow2_at_most(x: float) -> float:
    return float(2.0 ** np.floor(np.log2(max(x, 1e-300))))


#: The steps' P-mass beyond their grids (sent to +∞ by an upper end, dropped by a lower one): at most this
#: share of δ over all steps ...
TAIL_SHARE = 1e-9
#: ... and where an answer misses its width, it is computed again with this share (and the two intervals,
#: both certified, intersected): where one step's heavy upper tail makes ε (small q, small σ, tiny δ), a
#: grid reaching a 1e-9·δ tail lets the tilt that the answer needs (λ ≈ 28 at δ = 1.8e-12) weigh that
#: far tail above the whole composition, and the reads drown in round-off (q = 4.39e-6, σ = 0.774, 4064
#: steps, δ = 1.49e-12: [0.02658, 0.02699], then with this share [0.026769, 0.026840]). (1e-5·δ moves ε by
#: about 1e-5/λ: under 1 % of the width asked for wherever λ·width >= 1e-3 — λ, the slope of log δ(ε), is
#: about log(1/δ)/ε or more. Where the first answer meets the width, it stands as it was.)
RETRY_TAIL_SHARE = 1e-5


def _tail_for(mechs, delta_min: float, share: float | None = None) -> float:
    """Per-step P-mass left outside the grid: at most ``share`` (default TAIL_SHARE) of δ over all steps."""
    total = sum(t for _, t in mechs)
    share = TAIL_SHARE if share is None else share
    return float(min(max(share * delta_min / max(total, 1), 1e-300), 1e-12))


def _discretised(
    mechs, h: float, kind: str, tail: float, dirs=None, widest=None, fine_tails: float = 0.0, width: float = 0.0
):
    """Per direction k (all, or those in ``dirs``), the discretised parts: direction k of every
    mechanism (symmetric ones serve every direction). ``fine_tails`` (a per-step tail; 0: off): an upper
    discretisation whose sparse tail bins keep their P-mass·4^k below FINE_TAIL_BUDGET times it (see
    :func:`node_edges`).

    A two-atom step released k >= 2 times is composed exactly first (:func:`.fold.fold`) and enters
    as one step; a lower end may use a step's :attr:`~.mechanisms.Direction.dominated` two-atom
    post-processing that way when it is released at least FIT_FROM times (its k roundings would
    vary more than the post-processing gives up)."""
    n_dir = max(len(m) for m, _ in mechs)
    times: dict = {}
    for m, t in mechs:
        for d in m:
            times[id(d)] = times.get(id(d), 0) + t
    w = WIDEST_BIN if widest is None else widest
    cache: dict = {}
    out = []
    for k in range(n_dir) if dirs is None else dirs:
        parts = []
        for m, t in mechs:
            d = m[min(k, len(m) - 1)]
            key = (id(d), t)
            if key not in cache:
                cache[key] = _one_part(d, t, times[id(d)], h, kind, tail, w, fine_tails, width)
            parts.append(cache[key])
        out.append((k, parts))
    return out


def _one_part(d, t: int, total: int, h: float, kind: str, tail: float, w: float, fine_tails: float, width: float):
    """(discretised step, times) for ``t`` releases of direction ``d`` (see :func:`_discretised`)."""
    src = d
    if kind == "lower" and d.dominated is not None and t >= D.FIT_FROM:
        src = d.dominated
    if t >= FOLD_FROM and foldable(src):
        one = fold(src, t, tail, kind)
        if one is not None:
            try:
                return _discretise_one(one, h, kind, tail, w, fine_tails, width, 1), 1
            except MemoryError:
                pass  # the folded step spans too many cells on this grid: compose it as it is
    return _discretise_one(d, h, kind, tail, w, fine_tails, width, total), t


def _discretise_one(d, h: float, kind: str, tail: float, w: float, fine_tails: float, width: float, total: int):
    if kind == "upper":
        fine = min(D.SPARSE_BUDGET, FINE_TAIL_BUDGET * fine_tails) if fine_tails else None
        out = discretise_upper(d, h, tail, w, fine)
    else:
        out = discretise_lower(d, h, tail, times=total, widest=w, enough=width / (4 * h))
    # A step whose masses are not numbers (σ = 1e308: its loss range underflows) or which holds no finite
    # mass on the grid has no PLD here: the callers' next sound engine answers (nothing is composed from it).
    if not (np.isfinite(out.p_inf) and np.all(np.isfinite(out.p)) and np.any(out.p > 0)):
        raise FloatingPointError("a step's masses are not finite on this grid")
    return out


def _lower_read(cp: Composed, dl: np.ndarray, reader: Reader) -> np.ndarray:
    """Lower ε at each δ, with the give-back of the lower discretisation's moves (lower_shift) at the
    price η = LOWER_ETA·δ: δ_true(ε) >= δ_lower(ε − s) − η, so ε_true >= s + (the lower answer at
    δ + η for ε' >= −s)."""
    eta = LOWER_ETA * dl
    s_ = np.array([lower_shift(cp.move_mean, cp.move_var, cp.move_b, float(e)) for e in eta])
    if dl.size > MANY:  # one read for all δ, each from its own floor (see query.epsilon_at)
        return epsilon_at(cp, np.where(s_ > 0, dl + eta, dl), -1.0, floor=-s_, reader=reader) + s_
    eps = np.zeros(dl.shape)
    for v in np.unique(s_):
        sel = s_ == v
        eps[sel] = (
            epsilon_at(cp, dl[sel] + eta[sel], -1.0, floor=-v, reader=reader) + v
            if v > 0
            else epsilon_at(cp, dl[sel], -1.0, reader=reader)
        )
    return eps


def _clearly_below(k: int, stats: dict | None) -> bool:
    """Whether direction k's Chernoff estimate (``stats["guess_dir"]``) is below CLEARLY_BELOW times
    direction 0's at every δ (only then is its Chernoff bound worth trying against the lower end:
    where the two are close it is not below it)."""
    gd = None if stats is None else stats.get("guess_dir")
    if gd is None or gd.shape[0] <= k:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all(gd[k] < CLEARLY_BELOW * gd[0]))


def _eps_dirs(
    mechs,
    delta,
    h: float,
    kind: str,
    guess=None,
    dirs=None,
    cut=None,
    widest=None,
    quick: bool = False,
    stats: dict | None = None,
) -> np.ndarray:
    # (quick: a search's bound, on a coarse grid with coarse tails. stats: records
    # the highest loss of the composed windows as "top".)
    """ε(δ) by one discretisation kind, per direction (rows; NaN for directions not in ``dirs``),
    each composed with the tilt for its δ. The answer for the mechanism is the maximum over
    directions. ``guess`` (one per δ, e.g. a previous upper bound) centres the tilt.

    ``cut`` (one per δ): a certified lower bound on the mechanism's ε. The windows start there
    (:func:`.compose.compose`), so a direction's upper bound is never reported below it — which
    cannot change the maximum over directions, as the mechanism's ε is at least ``cut`` — and a
    lower bound that finds nothing above it makes no claim (−inf). A direction other than 0 whose
    Chernoff bound (:func:`.query.chernoff_epsilon`, from its discretised steps alone) is already at
    most ``cut`` at every δ takes that bound as its upper end, and is not composed.
    """
    delta = np.atleast_1d(np.asarray(delta, float))
    sign = 1.0 if kind == "upper" else -1.0
    n_dir = max(len(m) for m, _ in mechs)
    out = np.full((n_dir, delta.size), np.nan)
    share = stats.get("tail_share") if stats is not None else None
    tail = _tail_for(mechs, float(delta.min()), share)
    fine = 0.0 if quick else _tail_for(mechs, float(delta.min()))
    width = float(stats.get("width", 0.0)) if stats is not None else 0.0
    if width > 0 and stats is not None and stats.get("target", 0.0) > 0:
        # The width asked for as known from a certified end (the Chernoff guess behind "width" can be
        # many times the answer: 40× at q = 6.2e-5, σ = 0.302, 613 steps, δ = 0.007, where a lower
        # end's fit sized to it gave back 4e-4 of ε, four times the width).
        width = min(width, float(stats["target"]))
    for k, parts in _discretised(mechs, h, kind, tail, dirs, widest, fine_tails=fine, width=width):
        best = np.full(delta.shape, -np.inf if sign < 0 else 0.0)
        gs = None if guess is None else np.broadcast_to(np.asarray(guess, float), delta.shape)
        # (A lower end of 0 or less says nothing about where the answer is: no fallback there.)
        fb = None if cut is None else np.where(np.broadcast_to(np.asarray(cut, float), delta.shape) > 0, cut, np.nan)
        tilts = choose_tilts(parts, np.log(delta), gs, fallback=fb)[0]
        if k > 0 and sign > 0 and cut is not None and _clearly_below(k, stats):
            # A direction whose Chernoff bound is already at most the mechanism's certified lower end
            # cannot be the maximum over directions: that bound is its (sound) upper end, no composition.
            ch = chernoff_epsilon(parts, delta, tilts)
            if np.all(ch <= np.broadcast_to(np.asarray(cut, float), delta.shape)):
                out[k] = ch
                continue
        for lam in np.unique(tilts):
            sel = tilts == lam
            dl = delta[sel]
            # Wrap-around allowance e^{G−λε}·4η of at most 1e-10·δ at every ε a read can be at: from 0
            # (or −s), or from the window's cut (a certified lower bound) on. (Not from the tilt's guess:
            # where the per-step loss has a heavy tail the Chernoff guess can be 20× the answer.)
            # A lower bound reads its curve at ε − s (the give-back of its moves, at most their total
            # mean): its window starts that much lower, and its reads from −s on.
            give = sum(t * d.move_mean for d, t in parts) if sign < 0 else 0.0
            c_ = None
            if cut is not None:
                c_v = float(np.min(np.broadcast_to(cut, delta.shape)[sel]))
                c_ = c_v - 2 * h - give if np.isfinite(c_v) else None
            start = c_ if c_ is not None else -give
            level = float(parts_log_mgf(parts, [lam])[0]) - lam * max(start, -give)
            eta_t = float(np.clip(1e-10 * dl.min() * np.exp(float(np.clip(-level, -700.0, 700.0))), 1e-300, 1e-10))
            # A cut window adds at most e^{−λW} <= 1e-9·δ to δ (see compose).
            kw = dict(lam=float(lam), eta=eta_t, cut=c_, cut_eta=1e-9 * float(dl.min()), upper=sign > 0)
            if quick:
                kw["max_size"] = QUICK_GRID
            # After one composition of this answer needed long double (same δ, other grid or side),
            # the others go straight to that level (1: the steps' transforms; FULL: every stage).
            ext_key = "extended"
            direct = int(stats.get(ext_key, 0)) if (not quick and _EXTENDED and stats is not None) else 0
            cp = compose(parts, **kw, extended=direct)
            if stats is not None:
                stats["top"] = max(stats.get("top", -np.inf), (cp.k0 + cp.p.size + cp.c) * h)
            reader = Reader(cp)
            eps = epsilon_at(cp, dl, 1.0, reader=reader) if sign > 0 else _lower_read(cp, dl, reader)
            # Relative round-off in δ of r moves ε by about r/λ (log δ falls with slope about λ there):
            # below NOISE_WIDTH of the width asked for, long double would not change the answer. (A
            # search's quick bound asks for no width: its round-off is weighed against QUICK_REL of the
            # ε read.)
            w_read = width
            if quick and not width > 0:
                fin = eps[np.isfinite(eps)]
                w_read = QUICK_REL * float(fin.max()) if fin.size else 0.0
            limit = max(NOISE_LIMIT, NOISE_WIDTH * w_read * float(lam))
            for level in (1, FULL):
                if direct >= level or not _EXTENDED:
                    continue
                r = reader.noise(eps[np.isfinite(eps)])
                # The round-off bound is a visible part of δ there (reads far out in the tilted tail:
                # tiny δ, many steps): the same composition with the steps' transforms in long double.
                # Where that still leaves it a share of δ that moves ε by FULL_SHARE of the width or more
                # (a tilt that cannot centre the composition at the reads: a heavy upper tail), with
                # every stage in long double (about 3× the transforms' time). A noise ratio of 1 or more
                # is mostly a read where the curve's own value is negligible, where precision does not
                # help: only the retry of an answer that missed its width (``tail_share`` set) escalates
                # there too — a read drowned in the T-th power of the spectrum's rounding (small q and
                # σ, 10^5 steps and more, δ <= 1e-11: 2^-53·T is a visible share of δ).
                if level == 1 and not np.any(r > limit):
                    break
                w_now = float(stats.get("target", width)) if stats is not None else w_read
                drowned = (r < 1.0) | (share is not None)
                if level == FULL and not np.any(drowned & (r > FULL_SHARE * w_now * float(lam))):
                    break
                go = level
                near = (r >= NEAR_ONE[0]) & (r < NEAR_ONE[1]) & (r > FULL_SHARE * w_now * float(lam))
                if level == 1 and np.any(near):
                    # Round-off about δ itself in double: the steps' transforms in long double have left
                    # it within a few times of that wherever seen (the far tail of one sampled step: q =
                    # 1e-6, σ = 0.5, δ = 1e-12), and every stage in long double followed. Straight there.
                    go = FULL
                cp = compose(parts, **kw, extended=go)
                reader = Reader(cp)
                eps = epsilon_at(cp, dl, 1.0, reader=reader) if sign > 0 else _lower_read(cp, dl, reader)
                if stats is not None:
                    stats[ext_key] = go
                if go == FULL:
                    break
            best[sel] = np.maximum(best[sel], eps)
        out[k] = best
    return out


def _upper_dirs(
    mechs,
    delta,
    h: float,
    guess=None,
    h_other: float | None = None,
    cut=None,
    widest=None,
    quick: bool = False,
    stats: dict | None = None,
):
    """Upper bounds per direction and the spacing each was computed at.

    Direction 0 (remove, for subsampled mechanisms) usually dominates, so it
    is computed at ``h`` and the others at ``h_other`` (default 4·h); an
    upper bound at any spacing is sound, so a coarse one that stays below
    direction 0 settles its direction. Those that do not are recomputed at
    ``h``. ``cut``: see :func:`_eps_dirs`.
    """
    delta = np.atleast_1d(np.asarray(delta, float))
    n_dir = max(len(m) for m, _ in mechs)
    vals = _eps_dirs(mechs, delta, h, "upper", guess, dirs=[0], cut=cut, widest=widest, quick=quick, stats=stats)
    hs = np.full(n_dir, float(h))
    if n_dir > 1:
        others = list(range(1, n_dir))
        per = _other_grids(n_dir, h, h_other, stats)
        for h_k in sorted(set(per[k] for k in others)):
            ks = [k for k in others if per[k] == h_k]
            coarse_vals = _eps_dirs(
                mechs, delta, h_k, "upper", guess, dirs=ks, cut=cut, widest=widest, quick=quick, stats=stats
            )
            vals[ks] = coarse_vals[ks]
            hs[ks] = h_k
        redo = [k for k in others if np.any(vals[k] > vals[0]) and hs[k] > h]
        if redo and not quick:
            vals[redo] = _eps_dirs(mechs, delta, h, "upper", guess, dirs=redo, cut=cut, widest=widest, stats=stats)[
                redo
            ]
            hs[redo] = h
    return vals, hs


#: An upper end whose last halving moved it by less than this fraction of what the width still misses
#: is not refined again (see :func:`_epsilon`).
UPPER_STALL = 0.02

#: A direction whose Chernoff estimate is below this fraction of direction 0's takes its first upper
#: bound on the coarse grid (see :func:`_other_grids`).
CLEARLY_BELOW = 0.9


def _other_grids(n_dir: int, h: float, h_other, stats: dict | None) -> list[float]:
    """The spacing of each direction's first upper bound in :func:`_upper_dirs` (direction 0's is h):
    ``h_other`` (default 4·h) — or h where the steps are narrow next to it (its bound would be
    inflated past direction 0's and computed again on h anyway), or where the direction's Chernoff
    estimate (``stats["guess_dir"]``) is within the width asked for of direction 0's (a near tie, the
    same). Where the estimate is below CLEARLY_BELOW times direction 0's, the coarse grid whatever
    the steps' width (the gap is then usually many widths); and ``stats["far_h"]`` (the lower end's
    grid) where it is below ``stats["far_below"]``, certified lower bounds on the mechanism's ε less
    twice the width. (Only the time depends on these choices: every grid gives a sound bound, and a
    direction whose bound ends above direction 0's is computed again on h.)"""
    coarse = h_other or 4 * h
    base = coarse
    if base > h and stats is not None and stats.get("narrow", np.inf) < 4 * base:
        base = h
    out = [float(h)] + [float(base)] * (n_dir - 1)
    gd = None if stats is None else stats.get("guess_dir")
    if gd is None or gd.shape[0] != n_dir:
        return out
    far_h, far_below = stats.get("far_h"), stats.get("far_below")
    for k in range(1, n_dir):
        with np.errstate(invalid="ignore"):
            if far_h is not None and far_h > coarse and np.all(gd[k] < far_below):
                out[k] = float(far_h)
            elif _clearly_below(k, stats):
                out[k] = float(coarse)
            elif np.all(gd[k] >= gd[0] - stats.get("width", 0.0)):
                out[k] = float(h)
    return out


_LADDER = 2.0 ** (np.arange(-60 * 4, 14 * 4 + 1) / 4.0)


def _ladder_tails(d, cache: dict | None = None):
    """P[L > x] and P[L <= −x] on a geometric ladder of x (2^-60 … 2^14), once per direction (``cache``)."""
    key = id(d)
    if cache is not None and key in cache:
        return cache[key]
    x = _LADDER
    t = d.cdf(np.concatenate([x, -x]))
    out = (t.sp[: x.size], t.fp[x.size :])
    if cache is not None:
        cache[key] = out
    return out


def _step_std(d, cache: dict | None = None) -> float:
    """Standard deviation of a direction's loss under P (finite part).

    The variance, not a quantile spread, is what adds up over steps (the losses of small sampling
    rates are skewed, and a symmetrised hull has an atom at 0 holding most of its mass). From the
    tails on a geometric ladder of losses x around 0: E[L₊^k] = ∫ k x^{k−1} P[L > x] dx and
    E[L₋^k] = ∫ k x^{k−1} P[L <= −x] dx (trapezoids in log x; an estimate, for choosing grids).
    """
    if d.atoms is not None:
        ell, p, _ = d.atoms
        mass = float(p.sum())
        if mass <= 0:
            return 0.0
        mean = float(np.dot(ell, p)) / mass
        return float(np.sqrt(np.dot((ell - mean) ** 2, p) / mass))
    x = _LADDER
    sp, fp = _ladder_tails(d, cache)
    up = np.minimum(sp, 1.0)
    down = np.minimum(fp, 1.0)
    lx = np.log(x)

    def integral(f):  # ∫ f(x) dx = ∫ f(x)·x d(log x)
        g = f * x
        return float(np.sum(0.5 * (g[1:] + g[:-1]) * np.diff(lx)))

    m1 = integral(up) - integral(down)
    m2 = integral(2 * x * up) + integral(2 * x * down)
    return float(np.sqrt(max(m2 - m1 * m1, 0.0)))


def initial_h(mechs, width: float, delta_min: float, cache: dict | None = None) -> float:
    """A starting spacing (a power of two) from a model of connect-the-dots error.

    Over T steps of loss spread s, connect-the-dots on a grid h moves the
    composed loss's mean up by at most about T·h²/8 and its variance by
    T·h²/4; with ε ≈ mean + z·sd (z = √(2 log(1/δ))) the two move ε by
    T·h²/8 and z·√T·(√(s² + h²/4) − s). Each is kept to a quarter of the
    width W asked for — so a narrow step (small q, large σ) gets a grid
    finer than its spread only where W needs it, and a large ε (a wide W)
    a coarse grid. The refinement that follows corrects the model where
    it is off (heavy tails).
    """
    best, sp = -1.0, 1.0
    total = 0
    for m, t in mechs:
        total += t
        s = max(_step_std(d, cache) for d in m)
        if s > 0 and t * s * s > best:
            best, sp = t * s * s, s
    total = float(max(total, 1))  # (a Python int past 2^64 — nested --times — has no numpy sqrt)
    z = float(np.sqrt(2 * np.log(1 / max(delta_min, 1e-300))))
    h_mean = np.sqrt(2 * width / total)
    c = SD_SLACK * width / (4 * z * np.sqrt(total))
    h_sd = 2 * np.sqrt(2 * sp * c + c * c)
    return _pow2_at_most(min(h_mean, h_sd))


def _log_mgf_estimate(d, ts: np.ndarray, tail: float, cache: dict | None = None) -> np.ndarray:
    """An estimate of log E_P[e^{tL}; L <= x_tail] for each t, x_tail where P[L > x] falls to ``tail``
    (the engine sends that mass to +∞), from the tails on the ladder of :func:`_step_std`:
    P[L <= x_tail] + ∫₀^x_tail t e^{tx} P[x < L <= x_tail] dx − ∫₀^∞ t e^{−tx} P[L <= −x] dx
    (rectangles in log x, in log space). For sizing the work only."""
    if d.atoms is not None:
        ell, p, _ = d.atoms
        with np.errstate(divide="ignore"):
            m = np.log(np.maximum(p, 0.0))[None, :] + ts[:, None] * ell[None, :]
        mx = np.max(m, axis=1)
        return mx + np.log(np.sum(np.exp(m - mx[:, None]), axis=1))
    x = _LADDER
    sp, fp = _ladder_tails(d, cache)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        keep = sp > tail
        log_up = np.where(keep, np.log(np.clip(sp - tail, 0.0, 1.0)), -np.inf)
        log_down = np.log(np.clip(fp, 0.0, 1.0))
        base = np.log(ts)[:, None] + np.log(x)[None, :] + np.log(np.log(2.0) / 4.0)

        def lse(m):
            mx = np.max(m, axis=1)
            mx = np.where(np.isfinite(mx), mx, 0.0)
            return mx + np.log(np.sum(np.exp(m - mx[:, None]), axis=1))

        a = lse(base + ts[:, None] * x[None, :] + log_up[None, :])
        i_down = np.exp(lse(base - ts[:, None] * x[None, :] + log_down[None, :]))
        rest = np.log(np.maximum(1.0 - min(d.p_inf, 1.0) - tail - i_down, 1e-300))
        return np.logaddexp(a, rest)


def _first_guess(mechs, delta, cache: dict | None = None, share: float | None = None) -> np.ndarray:
    """A rough ε: the Chernoff bound min_t (Σ T·log E[e^{tL}] − log δ)/t from :func:`_log_mgf_estimate`,
    on tilts that are powers of 2 over the composed spread — to size the width target and the work
    (no claim is made from it)."""
    var = sum(t * max(_step_std(d, cache) for d in m) ** 2 for m, t in mechs)
    ts = 2.0 ** (np.arange(-24, 25, dtype=float) / 2) / max(float(np.sqrt(var)), 1e-12)
    n_dir = max(len(m) for m, _ in mechs)
    ld = np.log(np.atleast_1d(np.asarray(delta, float)))
    tail = _tail_for(mechs, float(np.exp(ld.min())), share)
    out = np.zeros(ld.shape)
    per_dir = []
    for k in range(n_dir):
        total = sum(t * _log_mgf_estimate(m[min(k, len(m) - 1)], ts, tail, cache) for m, t in mechs)
        with np.errstate(invalid="ignore"):
            x = np.where(np.isfinite(total)[None, :], (total[None, :] - ld[:, None]) / ts[None, :], np.inf)
        per_dir.append(np.min(x, axis=1))
        out = np.maximum(out, per_dir[-1])
    if cache is not None:
        cache["guess_dir"] = np.array(per_dir)  # each direction's estimate (for choosing its grid)
    return np.where(np.isfinite(out), out, 0.0)


def epsilon(
    mechs,
    delta,
    *,
    rel: float = REL_WIDTH,
    abs_: float = ABS_WIDTH,
    h0: float | None = None,
    upper_only: bool = False,
    fine_upper: bool = True,
    lower_hint=None,
    lower_used: bool = True,
) -> Answer:
    """Certified [lower, upper] on ε(δ): see :func:`_epsilon`. ``lower_used`` false: the caller discards
    this mechanism's lower end (a dominating construction, as the hull of sampling without
    replacement, whose lower end is no bound on the mechanism it stands for): a missed width then
    takes the retry and the split, not the blocks (:func:`_by_blocks`, seconds a row, for the lower
    end first). The heap's free pages go back to the system
    afterwards (:func:`dpcalc._alloc.release_freed_memory`), so that many answers in a row (a search)
    stay within the memory of one.

    Where a direction's composed P[L = +∞] is above δ (:func:`_infinite_at`), δ(ε) >= P[L = +∞] > δ at
    every ε: both ends are +∞ there (exactly; the width is met), and the engine composes for the rest."""
    from ..._alloc import release_freed_memory

    delta = np.atleast_1d(np.asarray(delta, float))
    if np.any(delta < MIN_DELTA) or np.any(delta >= 1):
        raise ValueError(f"the PLD engine answers for δ in [{MIN_DELTA:g}, 1)")
    inf = _infinite_at(mechs, delta)
    try:
        if not inf.any():
            return _epsilon(mechs, delta, rel, abs_, h0, upper_only, fine_upper, lower_hint, lower_used)
        lo, up, met = np.full(delta.shape, np.inf), np.full(delta.shape, np.inf), np.ones(delta.shape, dtype=bool)
        h_up = h_lo = 0.0
        if not inf.all():
            hint = None if lower_hint is None else np.broadcast_to(np.asarray(lower_hint, float), delta.shape)[~inf]
            a = _epsilon(mechs, delta[~inf], rel, abs_, h0, upper_only, fine_upper, hint, lower_used)
            lo[~inf], up[~inf], met[~inf] = a.lower, a.upper, a.met
            h_up, h_lo = a.h_upper, a.h_lower
        return Answer(lo, up, h_up, h_lo, met)
    finally:
        release_freed_memory()


def _infinite_at(mechs, delta) -> np.ndarray:
    """Where some direction's composed P[L = +∞], 1 − Π(1 − p_j)^{T_j}, rounded down, is above δ."""
    n_dir = max(len(m) for m, _ in mechs)
    out = np.zeros(np.shape(delta), dtype=bool)
    for k in range(n_dir):
        keep = sum(t * float(np.log1p(-min(m[min(k, len(m) - 1)].p_inf, 1.0))) for m, t in mechs)
        out |= -np.expm1(keep) * (1 - 1e-12) > delta
    return out


def _epsilon(
    mechs, delta, rel: float, abs_: float, h0, upper_only: bool, fine_upper: bool, lower_hint, lower_used=True
) -> Answer:
    """:func:`_once`; where that misses the width (and a δ-answer was asked for): for T releases of one
    step the split (:func:`_by_jumps`) on the starting grid; where a first answer that was only the
    split's bracket (:func:`_once`'s ``jumps_first``) is still not settled, :func:`_once` without it;
    then :func:`_once` again for the δ still missing with the steps' grids cut at RETRY_TAIL_SHARE of
    δ, the split on the finest grid, and the blocks. Every stage's certified interval is intersected
    with the ones before (each end is a bound: the larger lower end and the smaller upper end are both
    bounds)."""

    def missing(ans):  # rows whose certified interval missed the width
        return ~ans.met & np.isfinite(ans.lower) & np.isfinite(ans.upper)

    a = _once(mechs, delta, rel, abs_, h0, upper_only, fine_upper, lower_hint, jumps_first=True)
    miss = missing(a)
    if upper_only or h0 is not None or not (miss.any() or a.bracket):
        return a
    if _jumps_apply(mechs) and a.h_start > 0 and miss.any():
        # Where far-tail steps carry δ (small q, tiny δ) the split narrows what the refinements could not,
        # on the answer's starting grid (seconds, where the retry below and the split on its finest
        # grid took 10–15: q = 1e-6, σ = 0.5, 100 steps, δ = 1e-12); where it does not meet the width,
        # its ends (each a bound) carry on into the retry.
        lo, up = a.lower.copy(), a.upper.copy()
        h_fine = min(a.h_start, UPPER_H) if fine_upper else a.h_start  # the usual upper end's grid
        for i in np.flatnonzero(miss):
            lo[i], up[i] = _by_jumps(
                mechs,
                float(delta[i]),
                float(lo[i]),
                float(up[i]),
                a.h_start,
                rel,
                abs_,
                h_up=h_fine,
                halvings=JUMP_HALVINGS_FIRST,
            )
        lo, up = consistent(lo, up)
        a = Answer(lo, up, a.h_upper, a.h_lower, within(lo, up, rel, abs_), a.h_start, a.bracket)
        miss = missing(a)
    if a.bracket and not np.all(a.met):
        # The split did not settle the bracket (or a row's bracket has no finite end): the usual
        # refinements, as without it, intersected with what the split found.
        try:
            c = _once(mechs, delta, rel, abs_, h0, False, fine_upper, lower_hint)
        except (MemoryError, FloatingPointError, ValueError, ZeroDivisionError, OverflowError):
            c = None
        if c is not None:
            lo, up = consistent(np.fmax(a.lower, c.lower), np.fmin(a.upper, c.upper))
            a = Answer(lo, up, c.h_upper, c.h_lower, within(lo, up, rel, abs_), a.h_start)
            miss = missing(a)
    if not miss.any():
        return a
    hint = None if lower_hint is None else np.broadcast_to(np.asarray(lower_hint, float), delta.shape)[miss]
    try:
        b = _once(mechs, delta[miss], rel, abs_, h0, False, fine_upper, hint, tail_share=RETRY_TAIL_SHARE)
    except (MemoryError, FloatingPointError, ValueError, ZeroDivisionError, OverflowError):
        return a  # the first answer stands
    lo, up = a.lower.copy(), a.upper.copy()
    lo[miss] = np.fmax(lo[miss], b.lower)
    up[miss] = np.fmin(up[miss], b.upper)
    lo, up = consistent(lo, up)
    h = min(a.h_upper, b.h_upper, a.h_lower, b.h_lower)
    met = within(lo, up, rel, abs_)
    if _jumps_apply(mechs):
        for i in np.flatnonzero(~met & np.isfinite(lo) & np.isfinite(up)):
            lo[i], up[i] = _by_jumps(mechs, float(delta[i]), float(lo[i]), float(up[i]), h, rel, abs_)
        lo, up = consistent(lo, up)
        met = within(lo, up, rel, abs_)
    blocks_help = lower_used and len(mechs) == 1 and BLOCK_COUNT * BLOCK_MIN <= mechs[0][1] <= JUMPS_MAX_TIMES
    if blocks_help and _narrow(mechs, a, b):
        for i in np.flatnonzero(~met & np.isfinite(lo) & np.isfinite(up)):
            lo[i], up[i] = _by_blocks(mechs, float(delta[i]), float(lo[i]), float(up[i]), h, rel, abs_)
        lo, up = consistent(lo, up)
        met = within(lo, up, rel, abs_)
    return Answer(lo, up, min(a.h_upper, b.h_upper), min(a.h_lower, b.h_lower), met)


def _jumps_apply(mechs) -> bool:
    """Whether :func:`_by_jumps` can answer: T releases of one mechanism, 2 <= T <= JUMPS_MAX_TIMES."""
    return len(mechs) == 1 and 2 <= mechs[0][1] <= JUMPS_MAX_TIMES


#: :func:`_jumps_ahead` looks at most this many levels δ (a longer curve refines as usual).
JUMPS_AHEAD_MAX = 4

#: Where the split will answer (:func:`_jumps_ahead`), the usual upper end — the split's bracket — is
#: composed on a grid this many times the lower end's.
JUMPS_BRACKET = 4


def _jumps_ahead(mechs, delta: np.ndarray, h: float, lo: np.ndarray) -> bool:
    """Whether :func:`_by_jumps` would take every level δ (at most JUMPS_AHEAD_MAX of them): one
    mechanism released 2..JUMPS_MAX_TIMES times whose far-tail steps carry δ above the lower end
    ``lo`` on the grid h (:func:`_jumps_carry`)."""
    if not _jumps_apply(mechs) or delta.size > JUMPS_AHEAD_MAX or not np.all(np.isfinite(lo)):
        return False
    ((m, t),) = mechs
    try:
        for dl, e in zip(delta, lo):
            tail = _tail_for(mechs, float(dl), JUMPS_TAIL_SHARE)
            sp = jumps.split(_discretise_one(m[0], h, "upper", tail, WIDEST_BIN, tail, 0.0, t), t, float(dl))
            if sp.j is None or not _jumps_carry(sp, float(dl), float(e)):
                return False
    except (MemoryError, FloatingPointError, ValueError, ZeroDivisionError, OverflowError):
        return False
    return True


def _jumps_carry(sp, delta: float, eps: float) -> bool:
    """Whether the far-tail steps carry δ at ε: the bulk's own composition B^{*T} holds (by Chernoff's
    bound) less than half of δ above ε. Where the bulk alone reaches δ (a composition of many sampled
    steps, Gaussian-like), the split is the same composition again, with more terms: no narrower."""
    ts = 2.0 ** np.arange(-8.0, 20.0, 0.5)
    with np.errstate(all="ignore"):
        vals = parts_log_mgf([(sp.b, sp.times)], ts) - ts * eps
    vals = vals[np.isfinite(vals)]
    return bool(vals.size and float(np.min(vals)) < np.log(0.5 * delta))


#: Grids tried by :func:`_by_jumps`: the finest of the answer, and this many halvings of it ...
JUMP_HALVINGS = 2
#: ... or, for the split tried first on the starting grid, this many (the lower end stops at the first
#: grid that meets the width: q = 1e-7, σ = 0.45, 2 steps, δ = 1e-13 met it on the fourth, 0.2 s, where
#: two halvings left the retry and the split on its finest grid to do it in 18 s).
JUMP_HALVINGS_FIRST = 4

#: The steps' grids of :func:`_by_jumps` reach the loss where their upper tails hold this share of δ/T.
JUMPS_TAIL_SHARE = RETRY_TAIL_SHARE

#: :func:`_by_jumps` is tried for at most this many releases (issue 11's box; beyond it a split costs
#: tens of seconds a row, and searches — an inverse over T or σ — would pay it for every candidate).
JUMPS_MAX_TIMES = 10**7


def _other_uppers(mechs, delta: float, h: float, lo: float) -> float:
    """The largest upper end of directions 1, 2, … (the usual composition on h, windows from ``lo``): 0
    for a symmetric mechanism, +inf where one has none."""
    ((m, _),) = mechs
    if len(m) < 2:
        return 0.0
    vals = _eps_dirs(mechs, np.array([delta]), h, "upper", dirs=list(range(1, len(m))), cut=[lo])[1:, 0]
    return float(np.max(vals)) if np.all(np.isfinite(vals)) else np.inf


def _by_jumps(
    mechs,
    delta: float,
    lo: float,
    up: float,
    h: float,
    rel: float,
    abs_: float,
    check: bool = True,
    h_up: float | None = None,
    halvings: int | None = None,
) -> tuple[float, float]:
    """[lo, up] narrowed by composing T releases of one step by their number of far-tail steps
    (:mod:`.jumps`): direction 0's upper and lower curves on the grid h, then (JUMP_HALVINGS) the lower
    one on finer grids until the width is met — the lower end, which gives its moves back, is the one
    that lags; an upper end on a finer grid would compose its terms with two or more jumps coarser.
    The other directions' upper ends come from the usual composition (their far tails are light):
    the answer's upper end is the largest. Any failure (a window beyond the grid limit) keeps [lo, up].
    ``check``: first ask :func:`_jumps_carry` whether the split can help (off: the tests exercise the
    route itself). ``halvings``: of the lower end's grid (default JUMP_HALVINGS). ``h_up`` (at most h):
    the upper curve (and the other directions') on that grid instead
    (the usual upper end's grid, where the split starts on a coarser one: a bracket from the usual
    route is otherwise not improved on)."""
    ((m, t),) = mechs
    tail = _tail_for(mechs, delta, JUMPS_TAIL_SHARE)
    width = max(rel * up, abs_)
    ext = FULL if _EXTENDED else 0
    h_up = h if h_up is None else min(h, h_up)
    try:
        st = _discretise_one(m[0], h_up, "upper", tail, WIDEST_BIN, tail, width, t)
        sp = jumps.split(st, t, delta)
        if sp.j is None or (check and not _jumps_carry(sp, delta, lo)):
            return lo, up
        others = _other_uppers(mechs, delta, h_up, lo)
        if not others < up:
            return lo, up
        guess = 0.5 * (lo + up)
        ups = [jumps.terms(sp, delta, guess, True, ext)]
        for _ in range((JUMP_HALVINGS if halvings is None else halvings) + 1):
            st = _discretise_one(m[0], h, "lower", tail, WIDEST_BIN, 0.0, width, t)
            low = jumps.terms(jumps.split(st, t, delta), delta, guess, False, ext)
            new_lo, new_up = jumps.epsilon_bounds(ups, low, delta, lo, up)
            lo = max(lo, new_lo) if np.isfinite(new_lo) else lo
            up = min(up, max(new_up, others)) if np.isfinite(new_up) else up
            if bool(within(lo, up, rel, abs_)):
                break
            ups, h = [], h / 2
    except (MemoryError, FloatingPointError, ValueError, ZeroDivisionError, OverflowError):
        pass
    return lo, up


#: :func:`_by_blocks`: blocks of at most BLOCK_STEPS releases (and at least BLOCK_MIN, at least
#: BLOCK_COUNT of them; as large as fit: their roundings' give-back grows as the root of their number),
#: composed on a grid 2^BLOCK_FINER times finer than the answer's.
BLOCK_STEPS = 1 << 20
BLOCK_MIN = 64
BLOCK_COUNT = 4
BLOCK_FINER = 2
BLOCK_COARSER = 1
BLOCK_GRID = 4097
BLOCK_SCALES = 6
BLOCK_NARROW = 64


def _narrow(mechs, *answers) -> bool:
    """Whether direction 0's step is narrow next to the finest grid the answers' lower ends took: its
    loss's spread at most BLOCK_NARROW cells. (The rows that missed their width in the scans of
    10⁴–10⁷ steps had 1–13 cells; q = 0.001, σ = 0.8, 10⁵ steps at a width of 1e-5, 509 — where the
    blocks, 24 s, moved neither end.)"""
    h_lo = min(x.h_lower for x in answers)
    return bool(h_lo > 0 and _step_std(mechs[0][0][0]) <= BLOCK_NARROW * h_lo)


def _by_blocks(mechs, delta: float, lo: float, up: float, h: float, rel: float, abs_: float) -> tuple[float, float]:
    """[lo, up] narrowed by composing T releases of one step with its bulk in blocks (:mod:`.blocks`):
    direction 0 discretised on a grid 2^BLOCK_FINER times finer than h and split
    (:func:`.jumps.split`), B releases of its bulk composed there and put once onto the grid
    2^BLOCK_COARSER·h, the terms with k jumps composed on that grid — the lower end first, then,
    where the width is still missed, the upper end (the other directions' upper ends from the usual
    composition on h: their far tails are light). A block or term beyond the grid limit, or any
    other failure, keeps what was had. (For at most JUMPS_MAX_TIMES releases, as the split: 5–25 s
    a row.)"""
    ((m, t),) = mechs
    tail = _tail_for(mechs, delta, JUMPS_TAIL_SHARE)
    width = max(rel * up, abs_)
    ext = FULL if _EXTENDED else 0
    k = BLOCK_FINER + BLOCK_COARSER
    guess = 0.5 * (lo + up)
    # Each term's curves are read at these ε (and its composition dropped): a spacing of 1/4096 of the
    # interval, far below the width asked for.
    grid = np.linspace(lo, up, BLOCK_GRID)

    def blocked(kind: str):
        # The terms' windows (from the lower end given, less the moves given back) span the composed
        # loss's tilted spread: where they do not fit the coarse grid, grids twice as coarse (and the
        # fine one with them), up to 2^(BLOCK_SCALES − 1)·h.
        upper = kind == "upper"
        for scale in range(BLOCK_SCALES):
            h_f = h * 2.0**scale / (1 << BLOCK_FINER)
            fine = _discretise_one(m[0], h_f, kind, tail, WIDEST_BIN, tail if upper else 0.0, width, t)
            sp = jumps.split(fine, t, delta)
            lam = float(choose_tilts([(sp.b, t)], np.log([delta]), [guess])[0][0])
            spare = jumps.TERMS - 1 if sp.j is not None else 0
            # The largest blocks whose window fits: the lower end gives the blocks' roundings back up
            # to √(2·(T/B)·var·log(1/η)), var about a fine cell's square.
            size = min(BLOCK_STEPS, 1 << int(np.floor(np.log2(max(t // BLOCK_COUNT, 1)))))
            bulk = None
            while size >= BLOCK_MIN and bulk is None:
                try:
                    bulk = blocks.bulk(sp, size, k, lam, upper, spare, ext)
                except MemoryError:
                    size //= 2
            if bulk is None:
                continue
            try:
                tm = jumps.terms(sp, delta, guess, upper, ext, blocked=bulk, grid=grid, cut=float(grid[0]))
            except MemoryError:
                continue
            if tm.items:  # (a lower term that does not fit is left out: none at all says nothing)
                return tm
        raise MemoryError("no blocked composition fits the grid limit")

    try:
        new_lo, _ = jumps.epsilon_bounds([], blocked("lower"), delta, lo, up)
        if np.isfinite(new_lo):
            lo = max(lo, new_lo)
        if bool(within(lo, up, rel, abs_)):
            return lo, up
        others = _other_uppers(mechs, delta, h, lo)
        if not others < up:
            return lo, up
        _, new_up = jumps.epsilon_bounds([blocked("upper")], None, delta, lo, up)
        if np.isfinite(new_up):
            up = min(up, max(new_up, others))
    except (MemoryError, FloatingPointError, ValueError, ZeroDivisionError, OverflowError):
        pass
    return lo, up


def consistent(lo: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Certified ends as reported: where a lower end is above an upper end one of them is false, and
    neither is (NaN); elsewhere the lower end at most the upper one."""
    with np.errstate(invalid="ignore"):
        bad = lo > up * (1 + 1e-12) + 1e-300
    lo, up = np.where(bad, np.nan, lo), np.where(bad, np.nan, up)
    return np.minimum(lo, up), up


def within(lo, up, rel: float, abs_: float):
    """Whether [lo, up] is within the width asked for, max(rel·up, abs_) (and a hair of rounding)."""
    with np.errstate(invalid="ignore"):
        return np.asarray(up) - lo <= np.maximum(rel * np.asarray(up), abs_) * (1 + 1e-9)


def _once(
    mechs,
    delta,
    rel: float,
    abs_: float,
    h0,
    upper_only: bool,
    fine_upper: bool,
    lower_hint,
    tail_share=None,
    jumps_first: bool = False,
) -> Answer:
    """Certified [lower, upper] on ε(δ), refining the grid until the width target is met.

    ``mechs`` is a list of (directions, times). The width target comes from
    a Chernoff estimate of ε (:func:`_first_guess`), the starting grid h0
    from it and the per-step spread (:func:`initial_h`); a grid that does
    not fit is doubled until it does. For small ε (the estimate within 8×
    the absolute width) the upper bounds come first, and where they are
    within the absolute width the answer is [0, upper]. Otherwise direction
    0's lower bound comes first, on h0; the upper bounds follow on
    min(h0, :data:`UPPER_H`), or the finest grid expected to fit, in windows
    cut at it.
    Then the two ends are refined separately: each round halves the
    spacing of the side whose last halving moved it more (expected, for an
    upper end not refined yet), for the direction(s) whose upper bound is
    the largest; the others keep the coarser (still sound) bounds they
    have. A side whose finer grid does not fit stops; the interval is
    returned as it is, with ``met`` false where the width was missed.

    ``upper_only``: the upper end alone, on the starting grid (no lower end,
    no refinement; the lower end returned is 0) — a quick sound bound for
    searches.

    ``fine_upper`` false: the upper end starts on the starting grid h0, not on
    :data:`UPPER_H`, and is refined only as far as the width asks — for pairs
    whose upper end is itself a bound on another mechanism's (a dominating
    construction: a tighter upper end on it buys little), at about half the
    time.

    ``lower_hint`` (one per δ): certified lower bounds on this mechanism's ε
    known from elsewhere (e.g. a realisable mechanism it dominates). Where
    the upper ends alone, refined a few times, come within the width of
    them, they are the answer's lower end and the engine's own is not
    computed; otherwise the engine proceeds as without them.

    ``jumps_first`` (the first answer of :func:`_epsilon`): where the compositions so far needed every
    stage in long double and the far-tail steps carry δ above the first lower end (:func:`_jumps_ahead`),
    the upper end is composed on a grid JUMPS_BRACKET times the lower end's and returned without
    refinement, marked as the split's bracket (``bracket``, missing the width), for the split
    (:func:`_by_jumps`) on the starting grid (``h_start`` of the answer).
    """
    delta = np.atleast_1d(np.asarray(delta, float))  # (its range is checked by epsilon)
    ladder: dict = {}  # each direction's tails on the ladder, and its estimate, for the choices below
    if h0 is None:
        guess = _first_guess(mechs, delta, ladder, tail_share)
        width = float(np.min(np.maximum(rel * guess, abs_)))
        h0 = initial_h(mechs, width, float(delta.min()), ladder)
        narrow = min(_step_std(d, ladder) for m, _ in mechs for d in m)
        h_start = h0
    else:
        width, guess, narrow, h_start = float(abs_), None, np.inf, 0.0
    # Tail bins at most a quarter of the width asked for (their connect-the-dots error is second order
    # in their width, and next to ε it moves ε by about that much).
    widest = float(max(min(width / 4, 1.0 / 128), h0))

    if upper_only:
        h_up = h0
        for _ in range(60):
            try:
                up_dir, _ = _upper_dirs(mechs, delta, h_up, widest=widest, quick=True)
                break
            except MemoryError:
                h_up *= 2
        up = _claimed_upper(mechs, delta, up_dir)
        return Answer(np.zeros(delta.shape), up, h_up, h_up, np.zeros(delta.shape, dtype=bool))

    # Small ε (the Chernoff guess within a few times the absolute width): the upper ends first, on the
    # finer grid — where they are at most the absolute width, [0, upper] is the answer and no lower
    # end is needed. Otherwise they are kept (sound) and the lower end follows as usual.
    stats: dict = {"narrow": narrow, "width": width}  # shared by this answer's compositions (see _eps_dirs)
    if tail_share is not None:
        stats["tail_share"] = tail_share
    if "guess_dir" in ladder:
        stats["guess_dir"] = ladder["guess_dir"]
    early = None
    finest = UPPER_H if fine_upper else h0
    if guess is not None and np.all(guess <= 8 * abs_):
        try:
            early = _upper_dirs(mechs, delta, min(h0, finest), widest=widest, stats=stats)
        except MemoryError:
            early = None
        if early is not None:
            up = _claimed_upper(mechs, delta, early[0])
            if np.all(up <= abs_):
                h_e = float(np.min(early[1]))
                return Answer(np.zeros(delta.shape), up, h_e, h_e, np.ones(delta.shape, dtype=bool))

    if lower_hint is not None:
        hint = np.broadcast_to(np.asarray(lower_hint, float), delta.shape)
        got = _upper_to_hint(mechs, delta, hint, min(h0, finest), widest, stats, rel, abs_)
        if got is not None:
            return got

    # Direction 0's lower bound first; a grid that does not fit is doubled (any grid is sound).
    h_lo = h0
    for _ in range(60):
        try:
            lo_dir = _eps_dirs(mechs, delta, h_lo, "lower", dirs=[0], widest=widest, stats=stats)
            break
        except MemoryError:
            h_lo *= 2
    else:  # pragma: no cover - a grid of 2^60 h always fits
        raise MemoryError("no PLD grid fits")
    if h_start > 0:
        h_start = h_lo  # (doubled where the starting grid did not fit: the split would not fit it either)

    def cut():
        return np.nanmax(lo_dir, axis=0)

    # The width asked for, from the certified lower end (the Chernoff guess behind stats["width"] can be
    # many times the answer where one step's tail makes ε): for the whole-long-double choice in _eps_dirs.
    stats["target"] = float(np.min(np.maximum(rel * np.where(np.isfinite(cut()), cut(), 0.0), abs_)))
    # Directions whose estimate is far below the lower end take their first upper bound on its grid.
    stats["far_h"] = h_lo
    stats["far_below"] = cut() - 2 * np.maximum(rel * cut(), abs_)

    # The upper end on UPPER_H, or the finest grid on which its window — from the lower end to about
    # the top of the lower end's window — would fit.
    span = stats.get("top", 0.0) - float(np.min(np.where(np.isfinite(cut()), cut(), 0.0)))
    # (The lower end's window is wider than the upper end's, which is tilted further: a guess on the
    # fine side, corrected by doubling where it does not fit.)
    h_fit = _pow2_at_most(max(span, 0.0) / MAX_GRID) / 2
    h_up = min(max(finest, h_fit), h_lo)
    # Where this answer's compositions so far (the lower end's; with a lower hint, the upper ends
    # first) needed every stage in long double and the far-tail steps carry δ above the lower end, the
    # split (:func:`_by_jumps`, called by _epsilon on the starting grid) narrows both ends: halving
    # these grids would take several long-double compositions of millions of points, each moving the
    # ends a little. The upper end here is then only the split's bracket: on a grid JUMPS_BRACKET
    # times the lower end's (any grid is sound); where the split does not settle it, _epsilon refines
    # as without it. (Where the compositions stay in double the usual route is the faster: q = 1e-4,
    # σ = 0.5, 10⁴ steps, δ = 1e-8 takes 0.15 s, the split's long-double terms 1.3.)
    ahead = (
        jumps_first
        and h_start > 0
        and early is None
        and int(stats.get("extended", 0)) >= FULL
        and _jumps_ahead(mechs, delta, h_start, cut())
    )
    if ahead:
        h_up = max(h_up, JUMPS_BRACKET * h_lo)
    for _ in range(60):
        if early is not None:
            up_dir, h_dir = early
            h_up = float(h_dir[0])
            break
        try:
            up_dir, h_dir = _upper_dirs(mechs, delta, h_up, h_other=4 * h_up, cut=cut(), widest=widest, stats=stats)
            break
        except MemoryError:
            h_up = 2 * h_up
    else:  # every grid tried for the upper end was too large: no claim (callers fall back to other engines)
        raise MemoryError("no PLD grid fits the upper end")

    def target(up):
        return np.maximum(rel * up, abs_)

    def dominant() -> list[int]:
        return sorted(set(np.argmax(up_dir, axis=0).tolist()))

    def lower_dirs() -> list[int]:
        """The direction(s) whose lower end to refine: per δ, among those whose upper end is within an
        eighth of the width asked for of the largest (a near tie: the mechanism's ε is within about that
        of each of their ε), the one with the highest lower end so far; else the largest upper end.
        (Any direction's lower end is a lower bound on the mechanism's ε: this only saves the work of a
        second lower end where two directions are nearly the same.)"""
        top = up_dir.max(axis=0)
        with np.errstate(invalid="ignore"):
            near = up_dir >= top - target(top) / 8
        lo_now = np.where(near & np.isfinite(lo_dir), lo_dir, -np.inf)
        has = np.isfinite(lo_now).any(axis=0)
        pick = np.where(has, np.argmax(lo_now, axis=0), np.argmax(up_dir, axis=0))
        return sorted(set(pick.tolist()))

    more = [k for k in lower_dirs() if k != 0]
    if more:
        try:
            lo_dir[more] = _eps_dirs(mechs, delta, h_lo, "lower", dirs=more, widest=widest, stats=stats)[more]
        except MemoryError:
            pass
    if ahead:
        # (Returned as missing the width even where the bracket meets it: its upper end is from the
        # coarse grid, and _epsilon takes both ends to the split.)
        h_up_f = float(min(h_dir[k] for k in dominant()))
        up = _claimed_upper(mechs, delta, up_dir)
        lo, up = consistent(np.maximum(np.nanmax(lo_dir, axis=0), 0.0), up)
        return Answer(lo, up, h_up_f, h_lo, np.zeros(delta.shape, dtype=bool), h_start, bracket=True)
    # A side not yet refined goes first — except an upper end that started on the finer grid: its
    # next halving is expected to move it by about 3/4 of its error there, which is at most
    # (h_up/h_lo)² of the first gap if connect-the-dots error (second order) made all of it.
    gap0 = float(np.max(up_dir.max(axis=0) - np.nanmax(lo_dir, axis=0)))
    moved = {"upper": np.inf if h_up >= h_lo else 0.75 * (h_up / h_lo) ** 2 * gap0, "lower": np.inf}
    stuck: set = set()

    for _ in range(40):
        up, lo = up_dir.max(axis=0), np.nanmax(lo_dir, axis=0)
        if np.all(up - lo <= target(up)):
            break
        stats["target"] = float(np.min(target(up)))
        sides = [k for k in ("lower", "upper") if k not in stuck]
        if not sides:
            break
        kind = max(sides, key=lambda k: moved[k])
        # The refinements' tilts centre at or below the current upper end (certified, and usually within
        # the width of the answer), not at the Chernoff level: that can sit far above the answer (few
        # steps, bounded losses), and a centre far above the reads weighs the round-off by up to
        # e^{λ(centre − ε)} next to δ (ten Laplace(0.05) releases at δ = 1e-3 stayed at [0.322, 0.427]
        # down to h = 2^-23).
        guess = up
        try:
            if kind == "upper":
                for k in dominant():
                    new = _eps_dirs(
                        mechs, delta, h_dir[k] / 2, "upper", guess, dirs=[k], cut=cut(), widest=widest, stats=stats
                    )[k]
                    h_dir[k] /= 2
                    up_dir[k] = np.minimum(up_dir[k], new)
                moved[kind] = _moved(up, up_dir.max(axis=0))
                top = up_dir.max(axis=0)
                with np.errstate(invalid="ignore"):
                    missing = float(np.nanmax(top - np.nanmax(lo_dir, axis=0) - target(top)))
                if moved[kind] < UPPER_STALL * missing:
                    # Its halvings move it about 4× less each time: all the rest together would close
                    # under 1 % of what is missing. The lower end is refined alone from here on.
                    stuck.add(kind)
            else:
                dirs = lower_dirs()
                # The window starts at the current lower bound: the finer one is sought above it (where
                # it finds nothing it makes no claim, and the current bound stays).
                new = _eps_dirs(
                    mechs, delta, h_lo / 2, "lower", guess, dirs=dirs, cut=cut(), widest=widest, stats=stats
                )
                h_lo /= 2
                lo_dir[dirs] = np.fmax(lo_dir[dirs], new[dirs])
                moved[kind] = _moved(np.nanmax(lo_dir, axis=0), lo)
        except MemoryError:
            stuck.add(kind)
    up = _claimed_upper(mechs, delta, up_dir)
    lo, up = consistent(np.maximum(np.nanmax(lo_dir, axis=0), 0.0), up)
    h_up_f = float(min(h_dir[k] for k in dominant()))
    return Answer(lo, up, h_up_f, h_lo, within(lo, up, rel, abs_), h_start)


def _moved(a: np.ndarray, b: np.ndarray) -> float:
    """How far a refinement moved an end: the largest a − b over δ (0 where both are the same infinity,
    e.g. an upper end that found no ε in its window before and after)."""
    with np.errstate(invalid="ignore"):
        d = a - b
    return float(np.max(np.where(np.isnan(d), 0.0, d)))


def _upper_to_hint(mechs, delta, hint, h, widest, stats, rel, abs_) -> Answer | None:
    """The upper ends alone (windows cut at ``hint``, certified lower bounds on the mechanism's ε), the
    dominant direction's halved up to three times while they stay within 4× the width of the hint: the
    Answer [hint, upper] once within the width, else None (the engine's own lower end is needed)."""
    if not np.all(np.isfinite(hint) & (hint > 0)):
        return None
    try:
        up_dir, h_dir = _upper_dirs(mechs, delta, h, cut=hint, widest=widest, stats=stats)
    except MemoryError:
        return None
    for rounds in range(4):
        up = _claimed_upper(mechs, delta, up_dir)
        target = np.maximum(rel * up, abs_)
        if not np.all(np.isfinite(up)) or np.any(hint > up * (1 + 1e-12) + 1e-300):
            return None  # no claim, or one of the two is false: the engine's own ends decide
        dom = sorted(set(np.argmax(up_dir, axis=0).tolist()))
        if np.all(up - hint <= target):
            h_up = float(min(h_dir[k] for k in dom))
            return Answer(np.minimum(hint, up), up, h_up, h_up, np.ones(delta.shape, dtype=bool))
        if rounds == 3 or np.any(up - hint > 4 * target):
            return None
        try:
            for k in dom:
                new = _eps_dirs(mechs, delta, h_dir[k] / 2, "upper", dirs=[k], cut=hint, widest=widest, stats=stats)
                h_dir[k] /= 2
                up_dir[k] = np.minimum(up_dir[k], new[k])
        except MemoryError:
            return None
    return None


def _claimed_upper(mechs, delta, up_dir) -> np.ndarray:
    """The upper end claimed from per-direction upper bounds: their maximum, capped by the largest loss
    the composition can have (:func:`_loss_cap`); NaN (no claim) where neither is finite."""
    up = np.minimum(up_dir.max(axis=0), _loss_cap(mechs, delta))
    return np.where(np.isfinite(up), up, np.nan)


def _loss_cap(mechs, delta) -> np.ndarray:
    """The largest loss the composition can have, per δ where that bounds ε (else inf).

    If every direction's finite losses are at most its ``hi`` and P[L = ∞] = p, the composition's
    finite losses are at most M = Σ T·hi per direction, so δ(M) = 1 − Π(1 − p)^T <= δ gives ε <= M
    (a grid can place an atom such as Laplace's ±ε₀ between nodes and end a little above M).
    """
    n_dir = max(len(m) for m, _ in mechs)
    cap = np.zeros(np.size(delta))
    for k in range(n_dir):
        m_k, keep = 0.0, 0.0
        for m, t in mechs:
            d = m[min(k, len(m) - 1)]
            top = float(d.atoms[0].max()) if d.atoms is not None else float(d.hi)
            m_k += t * top
            keep += t * float(np.log1p(-min(d.p_inf, 1.0)))
        p_inf = -np.expm1(keep) * (1 + 1e-12)
        cap = np.maximum(cap, np.where(p_inf <= np.asarray(delta, float), m_k, np.inf))
    return np.where(np.isfinite(cap), np.nextafter(cap * (1 + 1e-15), np.inf), np.inf)


def _delta_dirs(mechs, eps, h: float, kind: str, tilt_step: float = 0.5) -> np.ndarray:
    """δ at each ε by one discretisation kind (max over directions); each ε read under a tilt from a
    ladder of powers 2^tilt_step apart, near the one that minimises its Chernoff bound
    (:func:`_cover_tilts`) — a coarser ladder composes fewer times, with a little more round-off
    allowance on the reads between its rungs. (Any tilt gives sound bounds; it sets their width.)"""
    eps = np.atleast_1d(np.asarray(eps, float))
    sign = 1.0 if kind == "upper" else -1.0
    best = np.zeros(eps.shape)
    tail = 1e-18 / max(sum(t for _, t in mechs), 1)
    for _, parts in _discretised(mechs, h, kind, tail):
        s = spread(parts)
        ts = 2.0 ** np.arange(-12.0, 8.0 - 1e-9, tilt_step) / s
        total = parts_log_mgf(parts, ts)
        tilts = _cover_tilts(ts, total, eps)
        for lam in np.unique(tilts):
            sel = tilts == lam
            cp = compose(parts, lam=float(lam), upper=sign > 0)
            r = Reader(cp)
            dl = delta_at(cp, eps[sel], sign, reader=r)
            if sign < 0:
                # δ_true(ε) >= δ_lower(ε − s) − η (lower_shift), with η a small fixed level.
                eta = 1e-15
                v = lower_shift(cp.move_mean, cp.move_var, cp.move_b, eta)
                if v > 0:
                    dl = np.maximum(dl, delta_at(cp, eps[sel] - v, sign, reader=r) - eta)
            best[sel] = np.maximum(best[sel], dl)
    return best


#: A read of δ(ε) may use a tilt whose Chernoff exponent at ε is up to this many nats above the best
#: rung's (see :func:`_cover_tilts`).
READ_SLACK = 2.0


def _cover_tilts(ts: np.ndarray, total: np.ndarray, eps: np.ndarray, slack: float = READ_SLACK) -> np.ndarray:
    """A tilt for each ε from the ladder ``ts`` (increasing; ``total`` the composition's log-MGF at each),
    as few distinct ones as the greedy cover gives: going up in ε, the current tilt is kept while its
    Chernoff exponent G(λ) − λε stays within ``slack`` of the best rung's for that ε, and where it does
    not, the largest rung that is within it is taken (the best tilt grows with ε, so the largest serves
    the most ε above). The round-off allowance of a read scales with e^{G(λ) − λε} — ``slack`` nats
    let it grow at most e^slack times (about 7×) over the best rung's, far below the discretisation's
    share of the width — for a handful of compositions instead of one per rung (a risk profile of
    2,001 ε read 13 tilts per direction and kind, 155 compositions in all at σ = 0.7; 3-4 now)."""
    with np.errstate(invalid="ignore", over="ignore"):
        ex = np.where(np.isfinite(total)[None, :], total[None, :] - ts[None, :] * eps[:, None], np.inf)
    best = ex.min(axis=1)
    ok = ex <= best[:, None] + slack
    # Where no rung is finite (no Chernoff information): the smallest, as the argmin would have taken.
    none = ~np.isfinite(best)
    ok[none] = False
    ok[none, 0] = True
    order = np.argsort(eps, kind="stable")
    out = np.empty(eps.shape)
    i = 0
    while i < order.size:
        cur = int(np.flatnonzero(ok[order[i]])[-1])
        run = ok[order[i:], cur]
        stop = int(np.argmin(run)) if not run.all() else run.size
        out[order[i : i + stop]] = ts[cur]
        i += stop
    return out


def delta_interval(mechs, eps, h: float, tilt_step: float = 0.5) -> Interval:
    """[lower, upper] on δ at each ε, on the grid h (``tilt_step``: see :func:`_delta_dirs`)."""
    up = _delta_dirs(mechs, eps, h, "upper", tilt_step)
    lo = _delta_dirs(mechs, eps, h, "lower", tilt_step)
    return Interval(np.minimum(lo, up), up, h)


__all__ += ["Discrete", "initial_h"]
