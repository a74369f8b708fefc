"""Mechanisms: the privacy loss of one step, per direction of the neighbouring relation.

A :class:`Direction` is one dominating pair (P, Q) described by the
distribution of its privacy loss L = log(P(X)/Q(X)), X ~ P: either
continuous, through the four tail functions at a loss ℓ (``cdf``), or as
discrete atoms. Mechanisms with two directions (Poisson subsampling: remove
and add) are bounded by the larger δ of the two; symmetric ones have one.

Every continuous direction also says how far its numbers can be off in
floating point, so that the discretisations can round toward the safe side:

* ``cdf(ℓ)`` returns the tail functions *and* a bound on the absolute error
  of each (:class:`Tails`);
* the tails are those of an output point found by inverting ℓ(x) in
  floating point, whose loss may differ from ℓ by a little: ``gap`` bounds
  it. With ``side=-1`` the point is moved down by that bound first, so
  that its loss is in [ℓ − gap, ℓ]: a connect-the-dots bin then never holds
  losses above its upper node (:mod:`.discretise`); ``side=1`` moves it up.

Error model for Φ (scipy's ``ndtr``): relative error at most
u·(64 + 4z²) for z <= 0 (the exponential carries the rounding of its
argument; measured <= 816 u at z = −34.6 against 50-digit mpmath, and the
tests re-measure it), plus (|z| + 2)·Φ(−|z|)·dz for an error dz in the
argument (the Mills ratio bounds φ(z) <= (|z| + 2)·Φ(−|z|)); 1 − Φ(−z) for
z > 0 adds 4u.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np
from scipy import special

__all__ = [
    "Tails",
    "Direction",
    "gaussian",
    "laplace",
    "dp",
    "subsampled_gaussian",
    "subsampled_dp",
    "subsampled_laplace",
    "sampled_wor_gaussian",
    "sampled_wor_laplace",
]

_U = float(np.finfo(float).eps)


class Tails(NamedTuple):
    """P[L<=ℓ], Q[L<=ℓ], P[L>ℓ], Q[L>ℓ], bounds on the absolute error of each, and ``gap``: the
    tails are those of a point whose loss lies in [ℓ − gap, ℓ] (``cdf(ℓ, side=-1)``), in
    [ℓ, ℓ + gap] (``side=1``) or within gap of ℓ (``side=0``)."""

    fp: np.ndarray
    fq: np.ndarray
    sp: np.ndarray
    sq: np.ndarray
    efp: np.ndarray
    efq: np.ndarray
    esp: np.ndarray
    esq: np.ndarray
    gap: np.ndarray | float = 0.0


@dataclass(frozen=True)
class Direction:
    """One direction of a dominating pair, as the distribution of its privacy loss.

    Either continuous — ``cdf(ℓ)`` returns :class:`Tails` for finite losses on
    the support [lo, hi] — or discrete atoms ``(losses, p, q)``. ``p_inf`` is
    P[L = +∞]. ``median`` is a point where P[L<=ℓ] is about 1/2 (differences
    of P[L<=ℓ] are used below it, of P[L>ℓ] above). ``cdf(ℓ, side=0)``.
    """

    lo: float
    hi: float
    cdf: Callable[..., Tails] | None = None
    atoms: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    p_inf: float = 0.0
    median: float = 0.0
    #: A two-atom pair dominated by this one (a binary post-processing of its output) whose k-fold
    #: composition the engine can take exactly (:mod:`.fold`), for lower ends of many steps; None if
    #: there is none as tight.
    dominated: "Direction | None" = None


def _ndtr_pair(z, dz):
    """Φ(z), Φ(−z) and bounds on their absolute errors, for an argument z known to within dz."""
    z = np.asarray(z, float)
    # The smaller tail Φ(−|z|) once; the larger is 1 minus it (rounded to within u of itself, and
    # the smaller tail's error carries over: both are inside the bounds below).
    small_tail = special.ndtr(-np.abs(z))
    neg = z < 0
    v = np.where(neg, small_tail, 1.0 - small_tail)
    w = np.where(neg, 1.0 - small_tail, small_tail)
    with np.errstate(invalid="ignore", over="ignore"):
        base = (_U * (64.0 + 4.0 * z * z) + (np.abs(z) + 2.0) * dz) * np.minimum(v, w) + 1e-300
        ev = base + (z > 0) * (4.0 * _U) + 2.0 * _U * v
        ew = base + (z < 0) * (4.0 * _U) + 2.0 * _U * w
        # Infinite z: exact (0 or 1). A bound that is not finite (z² overflows where Φ is 0): at most 1.
        # (Where every z is finite and every bound at most 1 — the usual case — nothing changes.)
        if not (ev.max(initial=0.0) <= 1.0 and ew.max(initial=0.0) <= 1.0 and np.isfinite(z).all()):
            ok = np.isfinite(z)
            ev = np.where(ok, np.where(ev <= 1.0, ev, np.where(np.isnan(ev), 0.0, 1.0)), 0.0)
            ew = np.where(ok, np.where(ew <= 1.0, ew, np.where(np.isnan(ew), 0.0, 1.0)), 0.0)
    return v, w, ev, ew


def gaussian(mu: float) -> list[Direction]:
    """The Gaussian mechanism with μ = Δ/σ: L ~ N(μ²/2, μ²) under P, N(−μ²/2, μ²) under Q (symmetric).

    ``mu`` may be the mechanism's μ rounded either way (Δ/σ or √k/σ in floating point, within 2u
    relative): the arguments' error bound covers it. With μ' = μ(1 + r), |r| <= 2u, the arguments
    (ℓ ∓ μ²/2)/μ move by at most 2u·(|ℓ| + μ²/2)/μ (1/μ' − 1/μ and (μ' − μ)/2), on top of their
    own rounding (3u of the same), so either end of an interval stays a bound for the μ asked for."""
    half = mu * mu / 2

    def cdf(ell, side=0):
        ell = np.asarray(ell, float)
        a = (ell - half) / mu
        b = (ell + half) / mu
        da = 5.0001 * _U * (np.abs(ell) + half) / mu
        F, S, eF, eS = _ndtr_pair(np.stack(np.broadcast_arrays(a, b)), da)
        fp, sp, efp, esp = F[0], S[0], eF[0], eS[0]
        fq, sq, efq, esq = F[1], S[1], eF[1], eS[1]
        return Tails(fp, fq, sp, sq, efp, efq, esp, esq)

    return [Direction(lo=-np.inf, hi=np.inf, cdf=cdf, median=half)]


def _exp_err(x):
    """e^x and a bound on its absolute error when x itself is off by u·|x| (two roundings)."""
    with np.errstate(over="ignore", under="ignore"):
        v = np.exp(x)
    return v, v * _U * (4.0 + 2.0 * np.abs(x))


def laplace(eps0: float) -> list[Direction]:
    """Laplace noise with ε₀ = Δ/b (symmetric; losses in [−ε₀, ε₀] with atoms at both ends)."""

    def cdf(ell, side=0):
        ell = np.asarray(ell, float)
        inside = (ell >= -eps0) & (ell < eps0)
        top = ell >= eps0
        ep, eep = _exp_err(-(eps0 - ell) / 2)
        eq, eeq = _exp_err(-(eps0 + ell) / 2)
        fp = np.where(top, 1.0, np.where(inside, 0.5 * ep, 0.0))
        sq = np.where(top, 0.0, np.where(inside, 0.5 * eq, 1.0))
        sp = np.where(top, 0.0, 1.0 - fp)
        fq = 1 - sq
        # Outside [−ε₀, ε₀) every value is exact (0 or 1): no error there (2u a step would otherwise
        # reach P[L = +∞] of a composition).
        efp = np.where(inside, 0.5 * eep + _U, 0.0)
        esq = np.where(inside, 0.5 * eeq + _U, 0.0)
        return Tails(fp, fq, sp, sq, efp, np.where(inside, esq + _U, 0.0), np.where(inside, efp + _U, 0.0), esq)

    med = eps0 - 2 * np.log(2) if eps0 > 2 * np.log(2) else 0.0
    return [Direction(lo=-eps0, hi=eps0, cdf=cdf, median=med, dominated=_laplace_threshold(eps0, 1.0)[0])]


#: Laplace steps with ε₀ at most this carry their threshold post-processing (:func:`_laplace_threshold`)
#: for lower ends: it gives up about ε₀/4 of the step's loss, below the width asked for.
THRESHOLD_UPTO = 1e-3


def _laplace_threshold(eps0: float, rate: float) -> list[Direction | None]:
    """Laplace noise (ε₀ = Δ/b), Poisson-subsampled at ``rate`` (1: not subsampled), post-processed
    by the threshold at Δ/2 — [remove, add] two-atom pairs dominated by the mechanism's
    (:attr:`Direction.dominated`), or [None, None] when ε₀ > :data:`THRESHOLD_UPTO`.

    With s = P[Lap(0, b) > Δ/2] = e^{−ε₀/2}/2 and g = q(1 − 2s): outcome 1 has P-mass s + g and
    Q-mass s, outcome 0 has 1 − s − g and 1 − s (remove; add swaps P and Q). At q = 1 the losses are
    ±log(2e^{ε₀/2} − 1) = ±(ε₀ − ε₀²/4 + …)."""
    if not (0 < eps0 <= THRESHOLD_UPTO):
        return [None, None]
    s = 0.5 * float(np.exp(-eps0 / 2))
    g = rate * float(-np.expm1(-eps0 / 2))  # q(1 − 2s)
    l1 = float(np.log1p(g / s))
    l0 = float(np.log1p(-g / (1 - s)))
    p1, p0 = s + g, 1 - s - g
    remove = Direction(lo=l0, hi=l1, atoms=(np.array([l1, l0]), np.array([p1, p0]), np.array([s, 1 - s])))
    if rate >= 1:
        return [remove, remove]
    add = Direction(lo=-l1, hi=-l0, atoms=(np.array([-l1, -l0]), np.array([s, 1 - s]), np.array([p1, p0])))
    return [remove, add]


def _dp_pair(eps: float, delta: float):
    """The worst-case pair of an (ε, δ) guarantee over outcomes (+∞, ε, −ε, −∞)."""
    a = 1.0 / (1.0 + np.exp(-eps))  # e^ε/(1+e^ε)
    b = 1.0 / (1.0 + np.exp(eps))  # 1/(1+e^ε), not 1 − a: that cancels to a relative error u/b at large ε
    p = np.array([delta, (1 - delta) * a, (1 - delta) * b, 0.0])
    q = np.array([0.0, (1 - delta) * b, (1 - delta) * a, delta])
    return p, q


def _atoms_from_pair(p, q):
    """Losses of outcome probabilities; returns finite atoms and P[L=+∞]."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ell = np.log(p) - np.log(q)
    finite = (p > 0) & (q > 0)
    p_inf = float(np.sum(p[(p > 0) & (q == 0)]))
    return (ell[finite], p[finite], q[finite]), p_inf


def dp(eps: float, delta: float) -> list[Direction]:
    """A generic (ε, δ)-DP mechanism via its worst-case pair (symmetric). Its finite losses are ±ε exactly
    (log of the masses' ratio would carry their rounding: k releases add it up k times)."""
    (ell, p, q), p_inf = _atoms_from_pair(*_dp_pair(eps, delta))
    if ell.size < 2:  # 1/(1 + e^ε) underflowed (ε past ~745): the pair is not representable
        raise ValueError("an (ε, δ) object with ε above 745 is beyond the PLD engine's range")
    ell = np.where(ell > 0, eps, -eps)
    return [Direction(lo=-eps, hi=eps, atoms=(ell, p, q), p_inf=p_inf)]


#: Largest ε of :func:`subsampled_dp` (beyond it callers compose the amplified guarantee's pair, a bound only).
SUBSAMPLED_DP_MAX_EPSILON = 700.0


def subsampled_dp(eps: float, delta: float, rate: float) -> list[Direction]:
    """An (ε, δ) mechanism under Poisson subsampling at rate q (add/remove): both directions of the
    dominating pair (qP + (1 − q)Q, Q) and its reverse, (P, Q) the worst-case pair of the guarantee
    (Zhu, Dong & Wang 2022, Prop. 30). The pair is also the output of two datasets — randomized
    response with an atom of δ on the record's presence — so it is the subsampled object's exact
    worst case, and its composition's lower end a lower bound too.

    The losses are formed directly (log(1 − q + q·e^{±ε}) and log(1 − q)), not as logs of the
    rounded masses' ratio."""
    if not eps <= SUBSAMPLED_DP_MAX_EPSILON:  # e^{−ε} nears underflow: the small masses are not representable
        raise ValueError("a subsampled (ε, δ) object with ε above 700 is beyond the PLD engine's range")
    if rate >= 1:  # every record sampled: the mechanism itself
        return dp(eps, delta)
    p, q = _dp_pair(eps, delta)
    m = (1 - rate) * q + rate * p  # the mixture: (qδ, ·, ·, (1 − q)δ)
    # M/Q at the outcomes "ε", "−ε" and P's −∞ atom: 1 − q + q·e^{±ε} and 1 − q (ε <= 700: no overflow).
    ell = np.log1p(rate * np.array([np.expm1(eps), np.expm1(-eps), -1.0]))
    keep = (m[1:] > 0) & (q[1:] > 0)  # (δ = 0: no −∞ atom)
    ell, pm, pq = ell[keep], m[1:][keep], q[1:][keep]
    remove = Direction(lo=float(ell.min()), hi=float(ell.max()), atoms=(ell, pm, pq), p_inf=float(m[0]))
    add = Direction(lo=float(-ell.max()), hi=float(-ell.min()), atoms=(-ell, pq, pm), p_inf=0.0)
    return [remove, add]


def subsampled_gaussian(rate: float, sigma: float) -> list[Direction]:
    """Poisson-subsampled Gaussian (sensitivity 1, noise multiplier σ), add/remove neighbours.

    remove: P = (1−q)N(0,σ²) + qN(1,σ²) vs Q = N(0,σ²);
    add:    P = N(0,σ²) vs Q = (1−q)N(0,σ²) + qN(1,σ²)   ([ZDW] Prop. 30).

    With r(x) = q·e^{(2x−1)/(2σ²)} the remove loss is log(1 − q + r(x)),
    increasing in x, so L <= ℓ ⇔ x <= x(ℓ) = σ²·log((e^ℓ − 1 + q)/q) + 1/2;
    the add loss is minus that. The tails are normal tails at x(ℓ)/σ and
    (x(ℓ) − 1)/σ. The gap: x(ℓ) is computed to within σ²·(3 + |log A| +
    |log q| + 2|x − ½|/σ²)·u + u|x| (A = e^ℓ − 1 + q), and |dℓ/dx| <= 1/σ²
    in both directions, which bounds the loss error ζ of the point; with
    ``side`` ±1 the point for ℓ ± ζ is used (gap 2ζ).
    """
    if rate >= 1.0:
        return gaussian(1.0 / sigma)
    q, s2 = rate, sigma * sigma
    log1mq = float(np.log1p(-q))
    log_q = float(np.log(q))

    def x_of(ell):
        # L(x) = log(1 − q + q e^{(2x−1)/(2σ²)}) = ell  ⇔  x = σ² log((e^ℓ − 1 + q)/q) + 1/2
        with np.errstate(all="ignore"):
            ell = np.asarray(ell, float)
            # log(e^ℓ − 1 + q), without overflow for large ℓ: ℓ + log1p((q − 1)e^{−ℓ})
            big = ell > 30.0
            if big.any():
                la = np.where(big, ell + np.log1p((q - 1.0) * np.exp(-np.abs(ell))), np.log(np.expm1(ell) + q))
            else:  # (the usual case: the same values as the line above, without its unused branch)
                la = np.log(np.expm1(ell) + q)
            diff = la - log_q
            x = s2 * diff + 0.5
            zeta = 4.0 * _U * (4.0 + np.abs(la) + abs(log_q) + 2.0 * np.abs(diff) + np.abs(x) / s2)
        return x, zeta

    def tails_at(x, forward: bool):
        # forward (remove): L <= ℓ ⇔ X <= x. Otherwise (add): L <= ℓ ⇔ X >= x.
        a, b = x / sigma, (x - 1) / sigma
        da = 2 * _U * (np.abs(x) + 1) / sigma
        F, S, eF, eS = _ndtr_pair(np.stack((a, b)), da)  # (a and b have x's shape)
        Fa, Sa, eFa, eSa = F[0], S[0], eF[0], eS[0]
        Fb, Sb, eFb, eSb = F[1], S[1], eF[1], eS[1]
        mix_F = (1 - q) * Fa + q * Fb
        mix_S = (1 - q) * Sa + q * Sb
        e_mix_F = (1 - q) * eFa + q * eFb + 2 * _U * mix_F
        e_mix_S = (1 - q) * eSa + q * eSb + 2 * _U * mix_S
        if forward:
            return Tails(mix_F, Fa, mix_S, Sa, e_mix_F, eFa, e_mix_S, eSa)
        return Tails(Sa, mix_S, Fa, mix_F, eSa, e_mix_S, eFa, e_mix_F)

    def point(m, shift):
        # x for the loss m of the remove form (m = ℓ for remove, −ℓ for add), moved by ``shift`` (±1, 0)
        # times its error bound; returns x and the gap.
        x, zeta = x_of(np.maximum(m, log1mq))
        if shift:
            x, z2 = x_of(np.maximum(m + shift * zeta, log1mq))
            zeta = zeta + z2
        return np.where(m > log1mq, x, -np.inf), np.where(m > log1mq, zeta, 0.0)

    def remove(ell, side=0):
        x, gap = point(np.asarray(ell, float), side)
        return tails_at(x, True)._replace(gap=gap)

    def add(ell, side=0):
        # The add loss is −m: a loss at or below ℓ means m at or above −ℓ.
        x, gap = point(-np.asarray(ell, float), -side)
        return tails_at(x, False)._replace(gap=gap)

    # Median of L under P (roughly): L at x = q (the P-mean of x).
    with np.errstate(all="ignore"):
        med_r = float(np.log1p(q * np.expm1((2 * q - 1) / (2 * s2))))
    return [
        Direction(lo=log1mq, hi=np.inf, cdf=remove, median=med_r),
        Direction(lo=-np.inf, hi=-log1mq, cdf=add, median=-med_r),
    ]


def _laplace_cdf(x, mu: float, b: float):
    """(F, 1 − F) of Laplace(μ, b) at x (x may be ±∞), and a bound on their errors."""
    z = (np.asarray(x, float) - mu) / b
    with np.errstate(over="ignore", invalid="ignore"):
        half = 0.5 * np.exp(-np.abs(z))
        # (At x = ±∞ both values are exact, 0 and 1: no error there, so that mass a whole composition
        # would otherwise send to +∞ by error bounds alone — 2u a step — is not added.)
        err = np.where(np.isfinite(z), half * _U * (6.0 + 2.0 * np.abs(z)) + 2 * _U, 0.0)
    below = z < 0
    return np.where(below, half, 1.0 - half), np.where(below, 1.0 - half, half), err


def subsampled_laplace(eps0: float, rate: float) -> list[Direction]:
    """Poisson-subsampled Laplace noise (ε₀ = Δ/b; sensitivity 1, b = 1/ε₀), add/remove neighbours.

    remove: P = (1−q)Lap(0,b) + qLap(1,b) vs Q = Lap(0,b); add: the reverse. With
    ℓ₀(x) = (|x| − |x−1|)/b ∈ [−ε₀, ε₀], the loss is log(1 − q + q e^{ℓ₀(x)})
    (remove) or minus that (add): atoms at both ends of the support, continuous
    in between, where x = (ℓ₀/ε₀ + 1)/2.
    """
    if rate >= 1.0:
        return laplace(eps0)
    q, b = rate, 1.0 / eps0
    top = float(np.log1p(q * np.expm1(eps0)))  # log(1 − q + q e^{ε₀})
    bottom = float(np.log1p(q * np.expm1(-eps0)))  # log(1 − q + q e^{−ε₀})

    def m_of(ell):
        # ℓ₀ with log(1 − q + q e^{ℓ₀}) = ℓ (−∞ where 1 − q + ... cannot reach e^ℓ); no overflow for large ℓ.
        with np.errstate(all="ignore"):
            ell = np.asarray(ell, float)
            big = ell > 30.0
            la = np.where(
                big, ell + np.log1p((q - 1.0) * np.exp(-np.abs(ell))), np.log(np.maximum(np.expm1(ell) + q, 1e-300))
            )
            return np.where(big | (np.expm1(ell) + q > 0), la - np.log(q), -np.inf)

    def x_of(m):
        return (np.clip(m, -eps0, eps0) / eps0 + 1.0) / 2.0

    log_q = float(np.log(q))

    def m_err(m_arg):
        # m = log(e^ℓ − 1 + q) − log q is computed to within (6 + |log A| + |log q|)·u + 2ε₀·u, and
        # |dℓ/dℓ₀| <= 1: a bound on the loss error of the point.
        with np.errstate(all="ignore"):
            m_arg = np.asarray(m_arg, float)
            la = np.abs(np.where(m_arg > 30.0, m_arg, np.log(np.abs(np.expm1(m_arg) + q))))
        return 4.0 * _U * (6.0 + np.nan_to_num(la, posinf=0.0, nan=0.0) + abs(log_q) + 2.0 * eps0)

    def m_at(ell_form, shift):
        # ℓ₀ for the loss ``ell_form`` of the remove form, the point moved by ``shift`` times its error.
        z = m_err(ell_form)
        if shift:
            ell_form = ell_form + shift * z
            z = z + m_err(ell_form)
        return m_of(ell_form), z

    def remove(ell, side=0):
        # L <= ℓ  ⇔  ℓ₀(x) <= m  ⇔  x <= x*(m) (none below −ε₀, all from ε₀ on)
        m, gap = m_at(np.asarray(ell, float), side)
        x = np.where(m < -eps0, -np.inf, np.where(m >= eps0, np.inf, x_of(m)))
        f0, s0, e0 = _laplace_cdf(x, 0.0, b)
        f1, s1, e1 = _laplace_cdf(x, 1.0, b)
        fp, sp = (1 - q) * f0 + q * f1, (1 - q) * s0 + q * s1
        # A sum of two nonnegative products (1 − q rounded too): 4u relative on top of the inputs' errors
        # (exact 0 beyond the support stays exact).
        ep = (1 - q) * e0 + q * e1
        return Tails(fp, f0, sp, s0, ep + 4 * _U * fp, e0, ep + 4 * _U * sp, e0, gap)

    def add(ell, side=0):
        # L = −log(1 − q + q e^{ℓ₀(x)}) <= ℓ  ⇔  ℓ₀(x) >= m(−ℓ)  ⇔  x >= x* (all up to −ε₀, none past ε₀)
        m, gap = m_at(-np.asarray(ell, float), -side)
        x = np.where(m <= -eps0, -np.inf, np.where(m > eps0, np.inf, x_of(m)))
        f0, s0, e0 = _laplace_cdf(x, 0.0, b)
        f1, s1, e1 = _laplace_cdf(x, 1.0, b)
        fq, sq = (1 - q) * s0 + q * s1, (1 - q) * f0 + q * f1
        eq = (1 - q) * e0 + q * e1
        return Tails(s0, fq, f0, sq, e0, eq + 4 * _U * fq, e0, eq + 4 * _U * sq, gap)

    low = _laplace_threshold(eps0, q)
    return [
        Direction(lo=bottom, hi=top, cdf=remove, median=0.0, dominated=low[0]),
        Direction(lo=-top, hi=-bottom, cdf=add, median=0.0, dominated=low[1]),
    ]


def _symmetrised_hull(remove: Direction, add: Direction) -> list[Direction]:
    """The loss distribution of C_q(f) = min{f_q, f_q⁻¹}** from the two Poisson directions.

    For sampling m of n without replacement with substitution neighbours, a
    mechanism that is f-DP (f symmetric) becomes C_q(f)-DP, q = m/n ([DRS]
    Thm 4.2), and that is tight. f_q = q·f + (1 − q)·Id and f_q⁻¹ are the
    trade-offs of the add and remove pairs of Poisson subsampling, so for
    every ε the hull's curve is δ(ε) = max(δ_remove(ε), δ_add(ε)) (the
    conjugate of a convex hull of a minimum is the maximum of the
    conjugates). The hull is symmetric, and a symmetric trade-off's loss L
    has, for ε >= 0,

        P[L > ε] = δ(ε) − δ'(ε),   Q[L > ε] = −e^{−ε} δ'(ε),
        P[L < −ε] = Q[L > ε],      Q[L < −ε] = P[L > ε],

    with the rest of the mass at L = 0. Where one direction's δ is the
    larger, these are that direction's own survival functions; where the
    larger one changes, the jump is an atom. Composing the two directions
    separately and taking the larger δ would *under*-state ε: the hull is
    less private than either direction.

    Which direction is the larger is decided from δ values with error bounds;
    where the two are too close to tell at a point (near a crossing, or
    everywhere when the losses are so small that both δs are round-off apart),
    the tails there are the larger of the two directions' with their
    difference added to the error bounds: the hull's are one of the two. At
    0, where both δ always equal the total variation distance, the right
    limit decides (the direction whose δ falls slower).
    """

    def survival(e, side):
        """(P[L > e], Q[L > e]) of the hull for e >= 0 from the direction with the larger δ(e), their
        error bounds, and the gap of the point; ``side`` -1 keeps the point's loss at or below e."""
        e = np.asarray(e, float)
        r, a = remove.cdf(e, side), add.cdf(e, side)
        with np.errstate(over="ignore", invalid="ignore"):
            x = np.exp(e)
            dr = r.sp - x * r.sq
            da = a.sp - x * a.sq
            err = r.esp + x * r.esq + a.esp + x * a.esq + 4 * _U * (np.abs(dr) + np.abs(da))
            err = err + x * (r.sq + a.sq) * np.expm1(np.maximum(r.gap, a.gap))  # the points' own loss error
        use_add = da > dr
        unsure = ~(np.abs(da - dr) > err)
        # At ε = 0 the two always tie (both δ(0) are the total variation distance): the hull's
        # survival there is the right limit, from the direction whose δ falls slower (δ'(0+) =
        # −P_Q[L > 0]): the smaller Q-tail.
        zero = e == 0
        use_add = np.where(zero, a.sq < r.sq, use_add)
        unsure = unsure & ~zero
        sp = np.where(unsure, np.maximum(r.sp, a.sp), np.where(use_add, a.sp, r.sp))
        sq = np.where(unsure, np.maximum(r.sq, a.sq), np.where(use_add, a.sq, r.sq))
        esp = np.where(use_add, a.esp, r.esp)
        esq = np.where(use_add, a.esq, r.esq)
        esp = np.where(unsure, np.maximum(r.esp, a.esp) + np.abs(r.sp - a.sp), esp)
        esq = np.where(unsure, np.maximum(r.esq, a.esq) + np.abs(r.sq - a.sq), esq)
        return sp, sq, esp, esq, np.maximum(r.gap, a.gap)

    def cdf(ell, side=0):
        ell = np.asarray(ell, float)
        neg = ell < 0
        # ℓ < 0: P[L <= ℓ] = Q[L >= −ℓ], Q[L <= ℓ] = P[L >= −ℓ] (atoms sit off the grid edges); a point
        # whose loss is below ℓ < 0 mirrors one above −ℓ.
        sp, sq, esp, esq, gap = survival(np.abs(ell), side)
        if side and np.any(neg):
            m = survival(np.abs(ell), -side)
            sp, sq, esp, esq, gap = (np.where(neg, b_, a_) for a_, b_ in zip((sp, sq, esp, esq, gap), m))
        fp = np.where(neg, sq, 1.0 - sp)
        fq = np.where(neg, sp, 1.0 - sq)
        efp = np.where(neg, esq, esp + _U)
        efq = np.where(neg, esp, esq + _U)
        e_sp = np.where(neg, esq + _U, esp)
        e_sq = np.where(neg, esp + _U, esq)
        return Tails(fp, fq, np.where(neg, 1.0 - sq, sp), np.where(neg, 1.0 - sp, sq), efp, efq, e_sp, e_sq, gap)

    top = float(max(remove.hi, add.hi))
    return [Direction(lo=-top, hi=top, cdf=cdf, median=0.0)]


def sampled_wor_gaussian(rate: float, sigma: float) -> list[Direction]:
    """Gaussian on a sample of m of n records drawn without replacement (q = m/n), substitution neighbours.

    G_{1/σ} (σ relative to the substitution sensitivity) becomes C_q(G_{1/σ}):
    see :func:`_symmetrised_hull`.
    """
    if rate >= 1.0:
        return gaussian(1.0 / sigma)
    return _symmetrised_hull(*subsampled_gaussian(rate, sigma))


def sampled_wor_laplace(eps0: float, rate: float) -> list[Direction]:
    """Laplace noise (ε₀ = Δ/b, substitution sensitivity) on a sample of m of n without replacement."""
    if rate >= 1.0:
        return laplace(eps0)
    return _symmetrised_hull(*subsampled_laplace(eps0, rate))
