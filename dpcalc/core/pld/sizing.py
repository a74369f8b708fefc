"""Sizing an answer: the width asked for, the first grid, and how far the grids reach.

Before anything is composed, each step's loss tails are read on a geometric ladder of losses
(:func:`_ladder_tails`). From them come a Chernoff estimate of ε (:func:`_first_guess`), which sets
the width asked for, max(rel·ε, abs); the per-step loss spread (:func:`_step_std`); and from both the
first grid spacing (:func:`initial_h`, a model of connect-the-dots error). No claim is made from these
estimates: they size the work, and every grid gives sound bounds. Also here: the P-mass a step may
leave beyond its grid (:func:`_tail_for`), and how certified ends are reported (:func:`consistent`,
:func:`within`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["REL_WIDTH", "ABS_WIDTH", "initial_h", "consistent", "within"]


#: Default interval width: at most 0.1 % of ε, or 1e-4 absolute for small ε.
REL_WIDTH = 1e-3
ABS_WIDTH = 1e-4

#: The spread model of :func:`initial_h` overstates connect-the-dots error (measured: the first
#: intervals came out 3-10x narrower than asked); its width is scaled by this.
SD_SLACK = 2.0


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


_LADDER = 2.0 ** (np.arange(-60 * 4, 14 * 4 + 1) / 4.0)
_LOG_LADDER = np.log(_LADDER)
_LADDER_DLOG = np.diff(_LOG_LADDER)


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
    Kept in ``cache`` (the sizing asks for each direction's a few times).
    """
    key = ("std", id(d))
    if cache is not None and key in cache:
        return cache[key]
    out = _step_std_of(d, cache)
    if cache is not None:
        cache[key] = out
    return out


def _step_std_of(d, cache: dict | None) -> float:
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

    def integral(f):  # ∫ f(x) dx = ∫ f(x)·x d(log x)
        g = f * x
        return float(np.sum(0.5 * (g[1:] + g[:-1]) * _LADDER_DLOG))

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


#: :func:`_log_mgf_estimate` of atoms works on at most this many (tilt, atom) cells at once.
ESTIMATE_CELLS = 1 << 22


def _log_mgf_estimate(d, ts: np.ndarray, tail: float, cache: dict | None = None) -> np.ndarray:
    """An estimate of log E_P[e^{tL}; L <= x_tail] for each t, x_tail where P[L > x] falls to ``tail``
    (the engine sends that mass to +∞), from the tails on the ladder of :func:`_step_std`:
    P[L <= x_tail] + ∫₀^x_tail t e^{tx} P[x < L <= x_tail] dx − ∫₀^∞ t e^{−tx} P[L <= −x] dx
    (rectangles in log x, in log space). For sizing the work only."""
    if d.atoms is not None:
        ell, p, _ = d.atoms
        with np.errstate(divide="ignore"):
            lp = np.log(np.maximum(p, 0.0))
        # A few tilts at a time: one row per atom and tilt (49 × 2.7 M atoms of a discrete Gaussian at
        # σ = 1e5, Δ = 1e6 took 3 GB at once).
        rows = max(1, ESTIMATE_CELLS // max(ell.size, 1))
        out = np.empty(ts.shape)
        for i in range(0, ts.size, rows):
            m = lp[None, :] + ts[i : i + rows, None] * ell[None, :]
            mx = np.max(m, axis=1)
            out[i : i + rows] = mx + np.log(np.sum(np.exp(m - mx[:, None]), axis=1))
        return out
    x = _LADDER
    sp, fp = _ladder_tails(d, cache)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        keep = sp > tail
        log_up = np.where(keep, np.log(np.clip(sp - tail, 0.0, 1.0)), -np.inf)
        log_down = np.log(np.clip(fp, 0.0, 1.0))
        base = np.log(ts)[:, None] + _LOG_LADDER[None, :] + np.log(np.log(2.0) / 4.0)

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
