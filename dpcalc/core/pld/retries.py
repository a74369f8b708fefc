"""Narrowing an answer that missed its width, for T releases of one step.

Where single steps' rare large losses carry δ (small q and σ, many steps, tiny δ) no tilt of the whole
composition centres its reads; :func:`_by_jumps` composes the releases by their number of far-tail
steps instead (:mod:`.jumps`). Where a step is narrow next to the grid (small q), :func:`_by_blocks`
composes its bulk in blocks on a finer grid (:mod:`.blocks`). :func:`.engine._epsilon` calls them after
the usual refinements; each returns the interval it was given, narrowed where it could (both ends stay
certified bounds), or as it was on any failure.
"""

from __future__ import annotations

import numpy as np

from . import blocks, jumps
from .compose import FULL, choose_tilts, parts_log_mgf
from .directions import _EXTENDED, _discretise_one, _eps_dirs
from .discretise import WIDEST_BIN
from .sizing import RETRY_TAIL_SHARE, _step_std, _tail_for, within

__all__: list[str] = []  # (the engine's own stages: see :mod:`.engine`)


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


#: The far tail blocks the whole composition's tilt (:func:`_tilt_blocked`) where the bulk alone takes a tilt
#: this many times larger.
TILT_BLOCKED = 4.0


def _tilt_blocked(whole, sp, delta: float, guess: float) -> tuple[bool, float]:
    """Whether the far tail of ``whole`` (T releases, split as ``sp``) blocks the whole composition's tilt
    (the bulk alone, centred at ``guess``, takes a tilt TILT_BLOCKED times the whole's or more); and the
    bulk's tilt. Where it does, the split helps even where its far-tail steps do not carry δ
    (:func:`_jumps_carry`): each term is tilted for itself. (q = 1e-6, σ = 0.7, 10⁷ steps, δ = 1e-12: the
    bulk's Chernoff bound still reaches δ/2 at the answer, ~0.0715, but the whole composition's tilt, 58
    against the bulk's ~1000, left its reads at ε ~ 0.07 drowned in round-off: [0.056, 0.091]. The split
    on the same grid gives [0.0712, 0.0732], the blocks after it [0.07143, 0.07150].)"""
    g, ld = np.array([max(guess, 0.0)]), np.log([delta])
    with np.errstate(all="ignore"):
        lam_bulk = float(choose_tilts([(sp.b, sp.times)], ld, g)[0][0])
        if sp.j is None or sp.times < 2:
            return False, lam_bulk
        lam_whole = float(choose_tilts([(whole, sp.times)], ld, g)[0][0])
    return bool(lam_bulk >= TILT_BLOCKED * lam_whole), lam_bulk


def _far_tail_blocks(mechs, delta: float, h: float, guess: float) -> bool:
    """:func:`_tilt_blocked` for T releases of one step, its upper discretisation on the grid h (False on
    any failure)."""
    ((m, t),) = mechs
    tail = _tail_for(mechs, delta, JUMPS_TAIL_SHARE)
    try:
        st = _discretise_one(m[0], h, "upper", tail, WIDEST_BIN, tail, 0.0, t)
        return _tilt_blocked(st, jumps.split(st, t, delta), delta, guess)[0]
    except (MemoryError, FloatingPointError, ValueError, ZeroDivisionError, OverflowError):
        return False


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


def _widest(width: float, h: float) -> float:
    """The widest tail bin for the blocks' steps: a quarter of the width asked for (as the usual route's,
    :func:`.engine._once`), at most WIDEST_BIN and at least a cell. (Where the far tail carries δ its
    bins are what a term with a jump reads: at q = 1e-6, σ = 0.7, 10⁷ steps, δ = 1e-12, bins of
    WIDEST_BIN left the blocks' lower end at 0.07128, bins of 2.5e-5 at 0.071419, upper 0.071504. The
    split keeps WIDEST_BIN: its fits on the finer tails gave back more, lower ends 1e-5 to 9e-5 lower
    on the small-q cases of benchmarks/coverage.py.)"""
    return float(max(min(width / 4, WIDEST_BIN), h))


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
    ``check``: first ask :func:`_jumps_carry` and :func:`_tilt_blocked` whether the split can help (off:
    the tests exercise the route itself); taken for a blocked tilt alone, the lower end is read on h only,
    and halvings stop where those to come could not close the gap (the upper end lags). ``halvings``: of
    the lower end's grid (default JUMP_HALVINGS). ``h_up`` (at most h): the upper curve (and the other
    directions') on that grid instead (the usual upper end's grid, where the split starts on a coarser
    one: a bracket from the usual route is otherwise not improved on)."""
    ((m, t),) = mechs
    tail = _tail_for(mechs, delta, JUMPS_TAIL_SHARE)
    width = max(rel * up, abs_)
    ext = FULL if _EXTENDED else 0
    h_up = h if h_up is None else min(h, h_up)
    try:
        st = _discretise_one(m[0], h_up, "upper", tail, WIDEST_BIN, tail, width, t)
        sp = jumps.split(st, t, delta)
        if sp.j is None:
            return lo, up
        carry = _jumps_carry(sp, delta, lo)
        if check and not (carry or _tilt_blocked(st, sp, delta, 0.5 * (lo + up))[0]):
            return lo, up
        # Taken for a blocked tilt alone, the bulk carries δ: halving the lower end's grid would not help it
        # (the blocks do), one grid's lower end is read.
        halvings = (JUMP_HALVINGS if halvings is None else halvings) if carry or not check else 0
        others = _other_uppers(mechs, delta, h_up, lo)
        if not others < up:
            return lo, up
        guess = 0.5 * (lo + up)
        ups = [jumps.terms(sp, delta, guess, True, ext)]
        found = False  # a lower end read on the grid before
        for _ in range(halvings + 1):
            st = _discretise_one(m[0], h, "lower", tail, WIDEST_BIN, 0.0, width, t)
            low = jumps.terms(jumps.split(st, t, delta), delta, guess, False, ext)
            new_lo, new_up = jumps.epsilon_bounds(ups, low, delta, lo, up)
            before = lo
            lo = max(lo, new_lo) if np.isfinite(new_lo) else lo
            up = min(up, max(new_up, others)) if np.isfinite(new_up) else up
            if bool(within(lo, up, rel, abs_)):
                break
            # Once the lower curves read something, a halving gains about half of the last one: where all of
            # them to come would not close the gap to the width, the upper end is what lags (its grid stays),
            # and the halvings stop.
            if found and np.isfinite(new_lo) and lo - before < (up - lo) - max(rel * up, abs_):
                break
            found = found or bool(np.isfinite(new_lo))
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


def _block_tilts(whole, sp, delta: float, guess: float, give: float = 0.0) -> list[float]:
    """The tilts the blocks of :func:`_by_blocks` are composed with: the bulk's own, centred at ``guess``,
    for the term without jumps; and, where the far tail blocks the whole composition's tilt (the bulk's
    TILT_BLOCKED times the whole's or more), a second one for the terms with jumps — that of the term
    with one. Those terms read the blocks near the bulk's centre, where blocks tilted for the bulk alone
    hold masses e^{−λ·(their distance)} below their round-off (q = 1e-6, σ = 0.7, 10⁷ steps, δ = 1e-12:
    tilts 1959 and 42, the one-jump term's upper δ 3e-8 and 1.0e-12 at ε = 0.0712); and where the bulk
    carries δ (δ = 1e-8 at σ = 0.65), its own term needs its own tilt.

    ``give`` (lower blocks): the bulk's total move, given back when the terms are read — they are read that
    much below ``guess``; where that is more than FAR_READ e-folds of a tilt, the tilts are chosen for
    the read's level (σ = 0.65, δ = 1e-8: moves of 0.38 in all on one fit of the fine grid, and the
    bulk's tilt for the guess, 4,300, left its term's lower δ 14 % short)."""
    blocked, lam = _tilt_blocked(whole, sp, delta, guess)
    lam = jumps.read_tilt([(sp.b, sp.times)], delta, guess, give, lam)
    if not blocked:
        return [lam]
    return [lam, jumps.read_tilt([(sp.b, sp.times - 1), (sp.j, 1)], delta, guess, give)]


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
            fine = _discretise_one(m[0], h_f, kind, tail, _widest(width, h_f), tail if upper else 0.0, width, t)
            sp = jumps.split(fine, t, delta)
            lams = _block_tilts(fine, sp, delta, guess, 0.0 if upper else t * sp.b.move_mean)
            spare = jumps.TERMS - 1 if sp.j is not None else 0
            # The largest blocks whose window fits: the lower end gives the blocks' roundings back up
            # to √(2·(T/B)·var·log(1/η)), var about a fine cell's square.
            size = min(BLOCK_STEPS, 1 << int(np.floor(np.log2(max(t // BLOCK_COUNT, 1)))))
            bulk = None
            while size >= BLOCK_MIN and bulk is None:
                try:
                    bulk = blocks.bulk(sp, size, k, lams[0], upper, spare, ext)
                except MemoryError:
                    size //= 2
            if bulk is None:
                continue
            if len(lams) > 1:
                try:  # the terms with jumps read blocks tilted for them (the same blocks otherwise)
                    bulk = (bulk, blocks.bulk(sp, size, k, lams[1], upper, spare, ext))
                except MemoryError:
                    pass
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
