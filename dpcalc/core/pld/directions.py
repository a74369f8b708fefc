"""One answer's compositions: ε(δ) per direction of the neighbouring relation, on one grid.

Each direction of every mechanism is discretised (:mod:`.discretise`; a two-atom step released many
times is folded first, :mod:`.fold`), composed under the exponential tilt for its δ in a window that
starts at a certified lower end (:mod:`.compose`), and read (:mod:`.query`). A read whose round-off
allowance is a visible share of δ is composed again with the steps' transforms in long double, and
where that is not enough, with every stage in long double. :func:`_upper_dirs` computes direction 0
(remove, which usually dominates for subsampled mechanisms) on the grid asked for and the others on a
coarser one first (any grid is sound); a direction whose Chernoff bound is already below the
mechanism's certified lower end is not composed at all. An answer's first lower end, which has no
certified lower end to start its window at, starts it a few standard deviations below the tilted
composition's centre (:func:`_speculative_cut`), and composes again uncut where its read falls below.
"""

from __future__ import annotations

import numpy as np

from . import discretise as D
from .compose import FULL, Composed, choose_tilts, compose, parts_log_mgf
from .discretise import WIDEST_BIN, discretise_lower, discretise_upper
from .errors import LOWER_ETA, lower_shift
from .fold import FOLD_FROM, fold, foldable
from .query import MANY, Reader, chernoff_epsilon, epsilon_at
from .sizing import _tail_for

__all__: list[str] = []  # (the engine's own stages: see :mod:`.engine`)


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


def _discretised(
    mechs, h: float, kind: str, tail: float, dirs=None, widest=None, fine_tails: float = 0.0, width: float = 0.0
):
    """Per direction k (all, or those in ``dirs``), the discretised parts: direction k of every
    mechanism (symmetric ones serve every direction). ``fine_tails`` (a per-step tail; 0: off): an upper
    discretisation whose sparse tail bins keep their P-mass·4^k below FINE_TAIL_BUDGET times it (see
    :func:`.discretise.node_edges`).

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
    speculative: bool = False,
) -> np.ndarray:
    # (quick: a search's bound, on a coarse grid with coarse tails. stats: records
    # the highest loss of the composed windows as "top". speculative: see below.)
    """ε(δ) by one discretisation kind, per direction (rows; NaN for directions not in ``dirs``),
    each composed with the tilt for its δ. The answer for the mechanism is the maximum over
    directions. ``guess`` (one per δ, e.g. a previous upper bound) centres the tilt.

    ``cut`` (one per δ): a certified lower bound on the mechanism's ε. The windows start there
    (:func:`.compose.compose`), so a direction's upper bound is never reported below it — which
    cannot change the maximum over directions, as the mechanism's ε is at least ``cut`` — and a
    lower bound that finds nothing above it makes no claim (−inf). A direction other than 0 whose
    Chernoff bound (:func:`.query.chernoff_epsilon`, from its discretised steps alone) is already at
    most ``cut`` at every δ takes that bound as its upper end, and is not composed.

    ``speculative`` (a lower end without ``cut``): its window is cut SPECULATIVE_STDS standard deviations
    below the centre of the tilted composition (:func:`_speculative_cut`) — not a bound, only where the
    window starts: a read that finds nothing above it makes no claim, and that δ's window is composed
    again uncut. (The mass below the cut is accounted as for any cut window, see :func:`.compose.compose`.)
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
        # (A lower end reads below ε by its steps' total move at most: the floor of its tilt's level.)
        give = sum(t * d.move_mean for d, t in parts) if sign < 0 else 0.0
        tilts = choose_tilts(parts, np.log(delta), gs, fallback=fb, floor=min(-give, 0.0))[0]
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
            # mean): its window starts that much lower, and its reads from −s on (``give``, above).
            c_ = None
            if cut is not None:
                c_v = float(np.min(np.broadcast_to(cut, delta.shape)[sel]))
                c_ = c_v - 2 * h - give if np.isfinite(c_v) else None
            spec = None
            if c_ is None and speculative and sign < 0:
                spec = _speculative_cut(parts, float(lam))
                spec = spec - 2 * h - give if np.isfinite(spec) else None

            def composed_read(c_):
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
                return eps

            eps = composed_read(spec if spec is not None else c_)
            if spec is not None and np.any((eps == -np.inf) | (eps < spec)):
                # The read found nothing above the speculative cut (its true ε is below it): no claim
                # there, so the window is composed again uncut. (Also where the cut did not take and the
                # read fell below it: its wrap allowance was sized for reads above the cut.)
                eps = composed_read(None)
            best[sel] = np.maximum(best[sel], eps)
        out[k] = best
    return out


#: A speculative cut (see :func:`_eps_dirs`) this many standard deviations below the tilted composition's
#: mean: the tilt's Chernoff level sits within about one of the answer where the composition is near
#: Gaussian, so the reads stay above it; elsewhere (a heavy tail carrying δ) a read below it composes again.
SPECULATIVE_STDS = 3.0


def _speculative_cut(parts, lam: float) -> float:
    """The tilted composition's mean less SPECULATIVE_STDS standard deviations: each step's finite masses
    tilted by λ (p·e^{λℓ}, normalised), their means and variances summed over the steps' releases."""
    mean = var = 0.0
    for d, t in parts:
        pos = d.nonzero_index()
        ell = (d.k0 + pos + d.c) * d.h
        lw = np.log(d.p[pos]) + lam * ell
        w = np.exp(lw - lw.max())
        w /= w.sum()
        m = float(np.dot(w, ell))
        mean += t * m
        var += t * float(np.dot(w, np.square(ell - m)))
    return mean - SPECULATIVE_STDS * np.sqrt(var)


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
