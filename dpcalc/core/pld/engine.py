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

from .compose import FULL, MAX_GRID
from .directions import _eps_dirs, _upper_dirs
from .retries import (
    BLOCK_COUNT,
    BLOCK_MIN,
    JUMP_HALVINGS_FIRST,
    JUMPS_BRACKET,
    JUMPS_MAX_TIMES,
    _by_blocks,
    _by_jumps,
    _far_tail_blocks,
    _jumps_ahead,
    _jumps_apply,
    _narrow,
)
from .sizing import (
    ABS_WIDTH,
    REL_WIDTH,
    RETRY_TAIL_SHARE,
    _first_guess,
    _pow2_at_most,
    _step_std,
    consistent,
    initial_h,
    within,
)

__all__ = ["MIN_DELTA", "UPPER_H", "REL_WIDTH", "ABS_WIDTH", "Answer", "epsilon", "consistent", "within"]


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


def widths(kw: dict) -> tuple[float, float]:
    """The (relative, absolute) width asked of an answer, from the engine's keyword arguments ``rel`` and
    ``abs_`` (REL_WIDTH and ABS_WIDTH where absent)."""
    return kw.get("rel", REL_WIDTH), kw.get("abs_", ABS_WIDTH)


@dataclass(frozen=True)
class Answer:
    lower: np.ndarray
    upper: np.ndarray
    h_upper: float
    h_lower: float
    met: np.ndarray  # whether the width target was met
    #: The grid the answer's lower end started on (:func:`.sizing.initial_h`, doubled where it did not fit; 0
    #: where none was chosen): where a missed width is narrowed by the split (:func:`.retries._by_jumps`), the
    #: split starts there.
    h_start: float = 0.0
    #: The answer is only the split's bracket (see :func:`_once`'s ``jumps_first``): not refined.
    bracket: bool = False


#: An upper end whose last halving moved it by less than this fraction of what the width still misses
#: is not refined again (see :func:`_epsilon`).
UPPER_STALL = 0.02


#: Grids the blocks try right after the split where the far tail blocks the tilt: the starting grid and halvings ...
EARLY_BLOCK_GRIDS = 4
#: ... and the halvings of the split's lower end before them (JUMP_HALVINGS_FIRST otherwise).
EARLY_SPLIT_HALVINGS = 1


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
    takes the retry and the split, not the blocks (:func:`.retries._by_blocks`, seconds a row, for the lower
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
    step the split (:func:`.retries._by_jumps`) on the starting grid, and where its far tail blocks the
    whole composition's tilt (:func:`.retries._far_tail_blocks`; the split's lower end then halved at most
    EARLY_SPLIT_HALVINGS times) the blocks (:func:`.retries._by_blocks`) on that grid and up to
    EARLY_BLOCK_GRIDS − 1 halvings of it; where a first answer that was only the
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
    blocks_help = lower_used and len(mechs) == 1 and BLOCK_COUNT * BLOCK_MIN <= mechs[0][1] <= JUMPS_MAX_TIMES
    # Rows whose far tail blocks the whole composition's tilt (:func:`.retries._far_tail_blocks`: small q and
    # σ, millions of steps) take the blocks right after the split.
    blocked_early = np.zeros(delta.shape, dtype=bool)
    if blocks_help and a.h_start > 0 and miss.any() and _narrow(mechs, a):  # (blocks_help: the split applies)
        for i in np.flatnonzero(miss):
            mid = 0.5 * (float(a.lower[i]) + float(a.upper[i]))
            blocked_early[i] = _far_tail_blocks(mechs, float(delta[i]), a.h_start, mid)
    if _jumps_apply(mechs) and a.h_start > 0 and miss.any():
        # Where far-tail steps carry δ (small q, tiny δ) the split narrows what the refinements could not,
        # on the answer's starting grid (seconds, where the retry below and the split on its finest
        # grid took 10–15: q = 1e-6, σ = 0.5, 100 steps, δ = 1e-12); where it does not meet the width,
        # its ends (each a bound) carry on into the retry. (Its lower end halved once at most for rows the
        # blocks take next: they narrow both ends, where the halvings narrow only the lower one — q =
        # 1.94e-6, σ = 0.511, 3.7·10⁶ steps, δ = 2.3e-7 spent 15 s and 1.5 GB on four.)
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
                halvings=EARLY_SPLIT_HALVINGS if blocked_early[i] else JUMP_HALVINGS_FIRST,
            )
        lo, up = consistent(lo, up)
        a = Answer(lo, up, a.h_upper, a.h_lower, within(lo, up, rel, abs_), a.h_start, a.bracket)
        miss = missing(a)
    if np.any(blocked_early & miss):
        # The split has the lower end and the blocks, each term tilted for itself, the upper one — on the
        # starting grid, then up to EARLY_BLOCK_GRIDS − 1 halvings until the width is met (q = 1e-6, σ = 0.7,
        # 10⁷ steps, δ = 1e-12: [0.071437, 0.0801] after the split, met at [0.071443, 0.071504] in 4 s, where
        # the refinements, the split on the finest grid and then the blocks took 18 s).
        lo, up = a.lower.copy(), a.upper.copy()
        for i in np.flatnonzero(blocked_early & miss):
            for h_b in a.h_start / 2.0 ** np.arange(EARLY_BLOCK_GRIDS):
                lo[i], up[i] = _by_blocks(mechs, float(delta[i]), float(lo[i]), float(up[i]), h_b, rel, abs_)
                if within(lo[i], up[i], rel, abs_):
                    break
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
        # (Not again for rows the blocks took after the first split: the split on a finer grid is no
        # narrower than they were; the blocks below, on the finest grid, follow.)
        for i in np.flatnonzero(~met & np.isfinite(lo) & np.isfinite(up) & ~blocked_early):
            lo[i], up[i] = _by_jumps(mechs, float(delta[i]), float(lo[i]), float(up[i]), h, rel, abs_)
        lo, up = consistent(lo, up)
        met = within(lo, up, rel, abs_)
    if blocks_help and _narrow(mechs, a, b):
        for i in np.flatnonzero(~met & np.isfinite(lo) & np.isfinite(up)):
            lo[i], up[i] = _by_blocks(mechs, float(delta[i]), float(lo[i]), float(up[i]), h, rel, abs_)
        lo, up = consistent(lo, up)
        met = within(lo, up, rel, abs_)
    return Answer(lo, up, min(a.h_upper, b.h_upper), min(a.h_lower, b.h_lower), met)


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
    a Chernoff estimate of ε (:func:`.sizing._first_guess`), the starting grid h0
    from it and the per-step spread (:func:`.sizing.initial_h`); a grid that does
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
    stage in long double and the far-tail steps carry δ above the first lower end (:func:`.retries._jumps_ahead`),
    the upper end is composed on a grid JUMPS_BRACKET times the lower end's and returned without
    refinement, marked as the split's bracket (``bracket``, missing the width), for the split
    (:func:`.retries._by_jumps`) on the starting grid (``h_start`` of the answer).
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
            lo_dir = _eps_dirs(mechs, delta, h_lo, "lower", dirs=[0], widest=widest, stats=stats, speculative=True)
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
    # split (:func:`.retries._by_jumps`, called by _epsilon on the starting grid) narrows both ends: halving
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
            lo_dir[more] = _eps_dirs(
                mechs, delta, h_lo, "lower", dirs=more, widest=widest, stats=stats, speculative=True
            )[more]
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
