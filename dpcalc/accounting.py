"""Composition of arbitrary lists of privacy objects: what pipes and ledgers need.

Every part is classified by what it can be accounted with, and the total is
computed by every sound method that applies:

- all Gaussian or GDP parts: exact μ-GDP composition (μ = √Σ tᵢμᵢ²);
- all parts with a zCDP bound (Gaussian, GDP, zCDP, pure ε-DP): ρ adds;
- all parts with an RDP bound (the above, Laplace, Poisson-subsampled
  Gaussian, RDP curves): RDP adds order by order, improved conversion;
- parts that are only (ε, δ>0)-DP: basic composition; mixed with the rest,
  the rest is accounted at δ_rest = δ − Σ tᵢδᵢ and the two are added (basic
  composition of the two groups is sound).

Neighbouring relation: parts are combined as given; Poisson-subsampled
Gaussians assume add/remove neighbours, Gaussians sampled without
replacement substitution neighbours. The latter have no RDP bound here: only
the PLD engine accounts for them (and their (ε, δ) is what it says).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dpcalc.core import _fp
from dpcalc.core import gdp as _gdp
from dpcalc.core import rdp as _rdp
from dpcalc.core import zcdp as _zcdp
from dpcalc.core.amplification import subsample
from dpcalc.model import (
    DP,
    EPOCH_SCHEMES,
    GDP,
    ZCDP,
    BoundedRange,
    Composed,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    ObjectError,
    RandomizedResponse,
    RDPCurve,
    Shuffled,
    Subsampled,
    type_name,
)


@dataclass(frozen=True)
class Part:
    """One accounted part: a normalised object and how many times it runs."""

    #: gauss | zcdp | pure | laplace | sgauss | wgauss | tgauss | ugauss | ragauss | curve | dp | dgauss | dlaplace
    #: | rr | br (ragauss: one balls-in-bins epoch of a Gaussian, μ = Δ/σ, noise multiplier ``sigma``, ``size`` batches)
    kind: str
    times: int
    mu: float = 0.0  # gauss: Δ/σ (also GDP μ)
    rho: float = 0.0  # zcdp
    epsilon: float = 0.0  # pure, dp
    delta: float = 0.0  # dp
    scale: float = 0.0  # laplace b/Δ
    rate: float = 1.0  # sgauss, wgauss
    sigma: float = 1.0  # sgauss, wgauss noise multiplier
    orders: tuple[float, ...] = ()
    values: tuple[float, ...] = ()
    #: A "pure" part that is a subsampled Laplace (scale > 0, rate < 1): "poisson" or
    #: "without-replacement". Other methods use its amplified ε; PLD uses the mechanism itself.
    scheme: str = "poisson"
    #: The neighbouring relation the part's construction fixes where its kind does not say (a subsampled
    #: (ε, δ) object flattened to an amplified dp part; an epoch scheme's Gaussians): see :func:`relation`.
    neighbours: str | None = None
    #: Integer sensitivity Δ of a discrete Gaussian or discrete Laplace part (dgauss: σ in ``sigma``,
    #: ρ = Δ²/(2σ²) in ``rho``; dlaplace: t in ``scale``, ε = Δ/t in ``epsilon``).
    sensitivity: int = 1
    #: Number of values of a randomized-response part (rr: ε₀ in ``epsilon``; br: ε₀ in ``epsilon``, ρ = ε₀²/8
    #: in ``rho``).
    k: int = 2
    #: tgauss (truncated Poisson): the dataset size N; ugauss (user level): the examples per user K.
    size: int = 0
    #: tgauss: the largest batch B_max.
    cap: int = 0
    #: A "dp" or "pure" part flattened from a subsampled (ε, δ) object (rate < 1): the object's own (ε, δ).
    #: ``epsilon`` and ``delta`` hold the amplified guarantee (the other methods use it); PLD composes the
    #: subsampled object's own pair (Poisson: exact; without replacement: see :func:`safe_side_only`).
    inner_epsilon: float = 0.0
    inner_delta: float = 0.0


def flatten(obj, times: int = 1, where: str = "object") -> list[Part]:
    """Normalise a privacy object (possibly composed) into parts."""
    if isinstance(obj, Composed):
        out: list[Part] = []
        for i, (p, t) in enumerate(obj.parts, 1):
            out += flatten(p, times * t, f"{where} part {i}")
        return out
    if isinstance(obj, Gaussian):
        return [Part("gauss", times, mu=float(_fp.div_up(obj.sensitivity, obj.sigma)))]
    if isinstance(obj, GDP):
        return [Part("gauss", times, mu=obj.mu)]
    if isinstance(obj, ZCDP):
        return [Part("zcdp", times, rho=obj.rho)]
    if isinstance(obj, DiscreteGaussian):
        from dpcalc.core import discrete as _d

        rho = float(_d.dgauss_rho_of(obj.sigma, obj.sensitivity))
        return [Part("dgauss", times, sigma=obj.sigma, rho=rho, sensitivity=obj.sensitivity)]
    if isinstance(obj, DiscreteLaplace):
        from dpcalc.core import discrete as _d

        eps = float(_d.dlaplace_epsilon_of(obj.scale, obj.sensitivity))
        return [Part("dlaplace", times, scale=obj.scale, epsilon=eps, sensitivity=obj.sensitivity)]
    if isinstance(obj, RandomizedResponse):
        return [Part("rr", times, epsilon=obj.epsilon, k=obj.k)]
    if isinstance(obj, BoundedRange):
        from dpcalc.core import discrete as _d

        return [Part("br", times, epsilon=obj.epsilon, rho=float(_d.br_rho_of(obj.epsilon)))]
    if isinstance(obj, Laplace):
        return [Part("laplace", times, scale=obj.scale / obj.sensitivity, epsilon=obj.sensitivity / obj.scale)]
    if isinstance(obj, DP):
        if obj.delta == 0:
            return [Part("pure", times, epsilon=obj.epsilon)]
        return [Part("dp", times, epsilon=obj.epsilon, delta=obj.delta)]
    if isinstance(obj, RDPCurve):
        return [Part("curve", times, orders=obj.orders, values=obj.values)]
    if isinstance(obj, Shuffled) and obj.batches is not None:  # balls-in-bins epochs, amplified (PLD only)
        g = obj.inner
        return [
            Part(
                "ragauss",
                times * obj.epochs,
                mu=float(_fp.div_up(g.sensitivity, g.sigma)),
                sigma=g.sigma / g.sensitivity,
                size=obj.batches,
                scheme=obj.scheme,
            )
        ]
    if isinstance(obj, Shuffled):  # one batch per epoch: E Gaussian mechanisms on the record, no amplification
        # The parts keep the scheme: their GDP total is exact for the Gaussians, an upper bound for the scheme
        # (stated under substitution or zero-out neighbours).
        return [
            dataclasses.replace(q, scheme=obj.scheme, neighbours="substitution")
            for q in flatten(obj.inner, times * obj.epochs, where)
        ]
    if isinstance(obj, Subsampled):
        inner = obj.inner
        if obj.scheme == "truncated-poisson":
            sig = inner.sigma / inner.sensitivity
            return [Part("tgauss", times, rate=obj.rate, sigma=sig, size=obj.dataset_size, cap=obj.max_batch_size)]
        if obj.scheme == "user-level":
            why = user_level_limit(obj.examples_per_user, inner.sigma / inner.sensitivity)
            if why is not None:  # (piped, or a group of a subsampled step: the command line's limit)
                raise ObjectError(f"{where}: {why}; give the step's (ε, δ) and use 'dpcalc group dp' instead")
            return [
                Part("ugauss", times, rate=obj.rate, sigma=inner.sigma / inner.sensitivity, size=obj.examples_per_user)
            ]
        if isinstance(inner, Gaussian) and obj.scheme == "poisson":
            return [Part("sgauss", times, rate=obj.rate, sigma=inner.sigma / inner.sensitivity)]
        if isinstance(inner, Gaussian):
            return [Part("wgauss", times, rate=obj.rate, sigma=inner.sigma / inner.sensitivity)]
        if isinstance(inner, Laplace):
            e, _ = subsample(inner.sensitivity / inner.scale, 0.0, obj.rate)
            return [
                Part(
                    "pure",
                    times,
                    epsilon=float(e),
                    rate=obj.rate,
                    scale=inner.scale / inner.sensitivity,
                    scheme=obj.scheme,
                )
            ]
        if isinstance(inner, DP):
            e, d = subsample(inner.epsilon, inner.delta, obj.rate)
            rel = "substitution" if obj.scheme == "without-replacement" else "add-remove"
            return [
                dataclasses.replace(
                    q,
                    neighbours=rel,
                    rate=obj.rate,
                    scheme=obj.scheme,
                    inner_epsilon=float(inner.epsilon),
                    inner_delta=float(inner.delta),
                )
                for q in flatten(DP(float(e), float(d)), times, where)
            ]
        raise ObjectError(f"{where}: subsampling of a {type_name(inner)} object is not supported")
    raise ObjectError(f"{where}: cannot compose a {type_name(obj)} object")


def _gauss_mu(parts: Sequence[Part]) -> float:
    """μ of composed Gaussian/GDP parts, √(Σ kᵢμᵢ²), every step rounded up (as ``compose gaussian`` does:
    √k·μ for one part, so a ledger of k identical releases gives the same digits)."""
    if len(parts) == 1:
        return float(_fp.mul_up(_fp.sqrt_up(float(parts[0].times)), parts[0].mu))
    # (One array operation over all parts: the same roundings, element by element, as one part at a time.)
    mu = np.array([p.mu for p in parts], dtype=float)
    times = np.array([float(p.times) for p in parts])
    mu2 = _zcdp.sum_up(_fp.mul_up(times, _fp.mul_up(mu, mu)))
    return float(_fp.sqrt_up(mu2))


def _key(p: Part) -> tuple:
    """Everything but the count: parts with equal keys are the same mechanism."""
    return (
        p.kind,
        p.mu,
        p.rho,
        p.epsilon,
        p.delta,
        p.scale,
        p.rate,
        p.sigma,
        p.orders,
        p.values,
        p.scheme,
        p.neighbours or "",
        p.sensitivity,
        p.k,
        p.size,
        p.cap,
        p.inner_epsilon,
        p.inner_delta,
    )


def group_parts(parts: Iterable[Part]) -> list[Part]:
    """Identical parts merged into one (their counts added), in a canonical order.

    k runs of a mechanism are one k-fold self-composition, so the accounting of
    the grouped list is that of the given one; its cost grows with the number of
    *distinct* parts. The order (sorted by kind and parameters) does not depend on
    the order of the input, so neither does any total computed from it: the same
    releases give the same digits however they are listed or grouped.
    """
    counts: dict[tuple, tuple[Part, int]] = {}
    for p in parts:
        k = _key(p)
        first, t = counts.get(k, (p, 0))
        counts[k] = (first, t + p.times)
    return [
        first if t == first.times else dataclasses.replace(first, times=t)
        for _, (first, t) in sorted(counts.items(), key=lambda kv: kv[0])
    ]


#: Largest number of elements one broadcast block of :class:`_RDPSum` holds (8 MiB of float64).
_BLOCK = 1 << 20


class _RDPSum:
    """Σᵢ tᵢ·RDPᵢ(α) of (grouped) parts: the ``rdp_fn`` of :func:`dpcalc.core.rdp.optimal_epsilon`.

    One vectorised term per family: Gaussian and zCDP parts are linear in α
    (one slope, summed exactly with ``math.fsum``); pure ε and Laplace parts are
    broadcast over the orders in blocks of at most :data:`_BLOCK` elements;
    subsampled Gaussians are one series each; RDP curves are summed once at
    their common orders. :meth:`rows` gives each part's own term instead (row
    i of the orders for part i), for per-part answers and attributions; on a
    single part both give the same numbers bit for bit.
    """

    def __init__(self, parts: Sequence[Part]):
        if any(p.kind not in RDP_KINDS for p in parts):
            raise ValueError("only parts with an RDP bound")  # pragma: no cover - callers filter
        self.parts = parts
        self.slope = math.fsum(_slope(p) for p in parts if p.kind in LINEAR_KINDS)
        pure = [p for p in parts if p.kind in PURE_KINDS]
        br = [p for p in parts if p.kind == "br"]
        self.br = (np.array([float(p.times) for p in br]), np.array([p.epsilon for p in br]))
        self.pure = (np.array([float(p.times) for p in pure]), np.array([p.epsilon for p in pure]))
        lap = [p for p in parts if p.kind == "laplace"]
        self.lap = (np.array([float(p.times) for p in lap]), np.array([p.scale for p in lap]))
        self.sg = [(float(p.times), p.rate, p.sigma) for p in parts if p.kind == "sgauss"]
        curves = [p for p in parts if p.kind == "curve"]
        self.orders = None
        if curves:
            common = set(curves[0].orders)
            for c in curves[1:]:
                common &= set(c.orders)
            if not common:
                raise ObjectError("the RDP curves given have no order in common; they cannot be composed")
            self.orders = np.array(sorted(common))
            self.curve = np.sum([_curve_at(c, self.orders) for c in curves], axis=0)

    def __call__(self, alpha):
        alpha = np.asarray(alpha, float)
        total = alpha * self.slope
        if self.pure[0].size:
            total = total + _blocks(*self.pure, alpha, _pure_rdp)
        if self.lap[0].size:
            total = total + _blocks(*self.lap, alpha, _rdp.laplace)
        if self.br[0].size:
            total = total + _blocks(*self.br, alpha, _br_rdp)
        for t, q, s in self.sg:
            total = total + t * _rdp._subsampled_gaussian(alpha, q, s)
        if self.orders is not None:
            total = total + self.curve[_order_index(self.orders, alpha)]
        return total

    def rows(self, alpha):
        """Part i's own tᵢ·RDPᵢ at the orders in row i of ``alpha`` (shape (len(parts), k))."""
        alpha = np.asarray(alpha, float)
        out = np.zeros(alpha.shape)
        kinds = np.array([p.kind for p in self.parts])
        for kind in np.unique(kinds):
            idx = np.flatnonzero(kinds == kind)
            ps = [self.parts[i] for i in idx]
            a = alpha[idx]
            t = np.array([float(p.times) for p in ps])[:, None]
            if kind in LINEAR_KINDS:
                out[idx] = a * np.array([_slope(p) for p in ps])[:, None]
            elif kind in PURE_KINDS:
                out[idx] = t * _pure_rdp(a, np.array([p.epsilon for p in ps])[:, None])
            elif kind == "br":
                out[idx] = t * _br_rdp(a, np.array([p.epsilon for p in ps])[:, None])
            elif kind == "laplace":
                out[idx] = t * _rdp.laplace(a, np.array([p.scale for p in ps])[:, None])
            elif kind == "sgauss":
                for j, p in zip(idx, ps):
                    out[j] = float(p.times) * _rdp._subsampled_gaussian(alpha[j], p.rate, p.sigma)
            else:
                for j, p in zip(idx, ps):
                    out[j] = _curve_at(p, alpha[j])
        return out


def _slope(p: Part) -> float:
    """tᵢ·RDPᵢ(α)/α of a part linear in α: tμ²/2 (Gaussian, GDP) or tρ (zCDP, discrete Gaussian)."""
    return p.times * p.mu**2 / 2 if p.kind == "gauss" else p.times * p.rho


def _pure_rdp(alpha, eps):
    """RDP of pure ε-DP: min(ε, αε²/2) ([BS] Prop. 1.4 via zCDP; ε itself is a bound at every α)."""
    return np.minimum(eps, alpha * eps**2 / 2)


def _br_rdp(alpha, eps):
    """RDP of an ε₀-bounded-range mechanism: min(ε₀, αε₀²/8) (ε₀²/8-zCDP, [CR] Lemma 3.2; and ε₀-DP)."""
    return np.minimum(eps, alpha * eps**2 / 8)


#: Part kinds whose RDP is linear in α (slope tμ²/2 or tρ): Gaussian, GDP, zCDP, discrete Gaussian ([CKS] Thm 4).
LINEAR_KINDS = ("gauss", "zcdp", "dgauss")
#: Part kinds accounted (outside PLD) as pure ε-DP: ε-DP guarantees, discrete Laplace, randomized response.
PURE_KINDS = ("pure", "dlaplace", "rr")
#: The discrete mechanisms' kinds (issue 13, item 4).
DISCRETE_KINDS = ("dgauss", "dlaplace", "rr", "br")
#: Part kinds with a zCDP bound (ρ adds).
ZCDP_KINDS = ("gauss", "zcdp", "pure", "dgauss", "dlaplace", "rr", "br")
#: Part kinds with a pure ε-DP bound (basic composition of ε).
EPS_KINDS = ("pure", "laplace", "dlaplace", "rr", "br")
#: Part kinds with an RDP bound.
RDP_KINDS = ("gauss", "zcdp", "pure", "laplace", "sgauss", "curve", "dgauss", "dlaplace", "rr", "br")


def _blocks(times: np.ndarray, x: np.ndarray, alpha: np.ndarray, f) -> np.ndarray:
    """Σᵢ tᵢ·f(α, xᵢ), broadcast over α in blocks of at most :data:`_BLOCK` elements."""
    out = np.zeros(alpha.shape)
    step = max(1, _BLOCK // max(alpha.size, 1))
    shape = (-1,) + (1,) * alpha.ndim
    for i in range(0, times.size, step):
        t, xs = times[i : i + step].reshape(shape), x[i : i + step].reshape(shape)
        out = out + np.sum(t * f(alpha[None], xs), axis=0)
    return out


def _order_index(orders: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Where each α sits in ``orders`` (every α must be one of them)."""
    i = np.minimum(np.searchsorted(orders, alpha), orders.size - 1)
    if not np.all(orders[i] == alpha):  # pragma: no cover - optimal_epsilon is called on these orders only
        raise ValueError("an RDP curve is evaluated only at its own orders")
    return i


def _curve_at(p: Part, alpha) -> np.ndarray:
    """t·RDP of a curve part at orders it lists (for a repeated order, its last value, as a dict keeps)."""
    lookup = dict(zip(p.orders, p.values))
    alpha = np.asarray(alpha, float)
    return p.times * np.array([lookup[float(a)] for a in alpha.ravel()]).reshape(alpha.shape)


def _rdp_epsilon(parts: Sequence[Part], delta: float) -> tuple[float, float]:
    """(ε, best order) of the RDP total of parts with an RDP bound, at δ (improved conversion).

    The last few answers are kept: a ledger asks for the same total twice (for the total, and for the
    order its shares are taken at).
    """
    key = (tuple(parts), delta)
    if key not in _RDP_MEMO:
        if len(_RDP_MEMO) >= 4:
            _RDP_MEMO.pop(next(iter(_RDP_MEMO)))
        _RDP_MEMO[key] = _rdp_search(parts, delta)
    return _RDP_MEMO[key]


_RDP_MEMO: dict = {}


def _rdp_epsilons(parts: Sequence[Part], deltas: np.ndarray) -> list[tuple[float, float]]:
    """:func:`_rdp_epsilon` at each δ: one vectorised search for all of them (one δ: the memo's)."""
    if deltas.size == 1:
        return [_rdp_epsilon(parts, float(deltas[0]))]
    e, a = _rdp_search_many(parts, deltas)
    return [(float(x), float(y)) for x, y in zip(e, a)]


def _rdp_search(parts: Sequence[Part], delta: float) -> tuple[float, float]:
    e, a = _rdp_search_many(parts, np.array([delta]))
    return float(e[0]), float(a[0])


def _rdp_search_many(parts: Sequence[Part], d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fn = _RDPSum(parts)
    if fn.orders is None:
        return _rdp.optimal_epsilon(fn, d)
    return _rdp.optimal_epsilon(fn, d, orders=fn.orders, refine_steps=0, extend=False)


@dataclass(frozen=True)
class Total:
    method: str
    bound: str
    epsilon: float
    delta: float
    mu: float | None = None
    rho: float | None = None
    order: float | None = None
    #: A certified lower bound on the true ε (PLD and its exact routes only).
    epsilon_lower: float | None = None
    #: Whether the certified interval is as narrow as asked (None: no interval).
    met: bool | None = None

    @property
    def epsilon_width(self) -> float | None:
        return None if self.epsilon_lower is None else self.epsilon - self.epsilon_lower


#: Part kinds the PLD engine can account for.
PLD_KINDS = (
    "gauss", "laplace", "sgauss", "wgauss", "tgauss", "ugauss", "ragauss",
    "dp", "pure", "dgauss", "dlaplace", "rr", "br",
)  # fmt: skip

#: Part kinds whose PLD pair dominates the release without being the output of two datasets (truncated
#: Poisson, a balls-in-bins epoch's convex-order construction): the engine's lower end, and the other end of
#: any reading, is that pair's, not a bound on the release.
DOMINATING_KINDS = ("tgauss", "ragauss")


def relation(p: Part) -> str | None:
    """The neighbouring relation a part's construction is analysed under: "substitution" for sampling without
    replacement and for epoch schemes without amplification (shuffle, balls-in-bins without batches),
    "add-remove" for Poisson-type sampling (Poisson, truncated Poisson, user level, balls-in-bins with
    batches), for a subsampled (ε, δ) object the one of its scheme; None for a mechanism on its own, whose
    guarantee holds under whichever relation its sensitivity is stated for."""
    if p.neighbours:
        return p.neighbours
    if p.kind in ("sgauss", "tgauss", "ugauss", "ragauss"):
        return "add-remove" if p.rate < 1 or p.kind != "sgauss" else None
    if p.kind == "wgauss":
        return "substitution" if p.rate < 1 else None
    if p.kind == "pure" and p.scale > 0 and p.rate < 1:
        return "substitution" if p.scheme == "without-replacement" else "add-remove"
    return None


def is_hull(p: Part) -> bool:
    """Whether the PLD engine takes this part as the symmetrised hull C_q(f) of sampling without replacement
    (a Gaussian or Laplace on a sample of m of n records, q < 1)."""
    return p.rate < 1 and (
        p.kind == "wgauss" or (p.kind == "pure" and p.scale > 0 and p.scheme == "without-replacement")
    )


def safe_side_only(parts: Sequence[Part]) -> bool:
    """Whether only the safe end of a PLD reading of these parts is a claim: a dominating construction
    (:data:`DOMINATING_KINDS`), or a hull of sampling without replacement (:func:`is_hull`) in 2 or more
    releases — no pair of datasets is known to reach the hull's composition; likewise the bounded-range
    class's dominating pair (at each ε the largest δ over the class's generalized randomized responses, a
    different one at each ε: tight for one release, not for a composition); a subsampled (ε, δ) object
    sampled without replacement (:func:`_amplified_wor`)."""
    return (
        any(p.kind in DOMINATING_KINDS for p in parts)
        or (any(is_hull(p) or p.kind == "br" for p in parts) and sum(p.times for p in parts) >= 2)
        or any(_amplified_wor(p) for p in parts)
    )


def _amplified_wor(p: Part) -> bool:
    """A subsampled (ε, δ) object that PLD composes as its amplified guarantee's worst-case pair, which
    bounds it but which no pair of datasets is known to reach: sampled without replacement, or with an
    ε past :data:`~dpcalc.core.pld.mechanisms.SUBSAMPLED_DP_MAX_EPSILON` (otherwise, under Poisson
    sampling, the object's own pair is composed: exact, see :func:`dpcalc.risk.mechanisms`)."""
    return is_subsampled_dp(p) and not own_pair(p)


def is_subsampled_dp(p: Part) -> bool:
    """A "dp" or "pure" part flattened from a subsampled (ε, δ) object."""
    return p.kind in ("dp", "pure") and p.scale == 0 and p.rate < 1


def own_pair(p: Part) -> bool:
    """Whether PLD composes a subsampled (ε, δ) part as the object's own pair (Poisson, ε within range)."""
    from dpcalc.core.pld.mechanisms import SUBSAMPLED_DP_MAX_EPSILON

    return is_subsampled_dp(p) and p.scheme == "poisson" and p.inner_epsilon <= SUBSAMPLED_DP_MAX_EPSILON


#: Part kinds only the PLD engine can account for (no RDP, zCDP or GDP bound in dpcalc): sampling without
#: replacement, truncated Poisson, user level.
PLD_ONLY_KINDS = ("wgauss", "tgauss", "ugauss")


def pld_total(parts: list[Part], delta: float, width: float | None = None) -> Total | None:
    """Tight total by privacy loss distributions, with a certified interval (None if a part is not
    supported, or if the parts are all Gaussian: their exact μ-GDP total is reported instead).

    One subsampled Gaussian release run once (or with every record sampled) takes the engine's exact
    route, as plan-sgd does. Otherwise identical parts are grouped first: each distinct part is one
    k-fold self-composition, and the engine multiplies one transform (raised to its k) per distinct
    part, however many releases there are.
    """
    return pld_totals(parts, [delta], width)[0]


def pld_totals(parts: list[Part], deltas, width: float | None = None) -> list[Total | None]:
    """:func:`pld_total` at each δ of ``deltas``, from one reading of the engine where it can: an ε(δ) curve
    shares its compositions (one per tilt), so a grid of a thousand δ costs about what a few do. Where the
    reading of all fails (a grid the smallest δ needs does not fit), the largest δ alone, then each half in
    turn, as plan-sgd does. A balls-in-bins epoch's construction depends on δ: each δ is read on its own."""
    from dpcalc.core import pld, sgd
    from dpcalc.core.pld.engine import widths

    deltas = [float(d) for d in np.atleast_1d(np.asarray(deltas, float))]
    out: list[Total | None] = [None] * len(deltas)
    if not parts or any(p.kind not in PLD_KINDS for p in parts) or all(p.kind == "gauss" for p in parts):
        return out
    parts = group_parts(parts)
    if len(deltas) > 1 and any(p.kind == "ragauss" for p in parts):
        return [pld_totals(parts, [d], width)[0] for d in deltas]
    kw = {} if width is None else {"rel": width, "abs_": width / 10}  # the engine's width, for every route
    d_all = np.array(deltas)
    one_run = len(parts) == 1 and parts[0].kind in ("sgauss", "wgauss")
    if one_run and (parts[0].times == 1 or parts[0].rate >= 1 or parts[0].kind == "wgauss"):
        # The exact routes (one step, or every record sampled), and one run sampled without replacement
        # (its lower end from datasets that realise it, see sgd.tight_interval).
        p = parts[0]
        sampling = "poisson" if p.kind == "sgauss" else "without-replacement"
        t = sgd.tight_interval(p.rate, p.sigma, p.times, d_all, sampling, **kw)
        for i, d in enumerate(deltas):
            if np.isfinite(t.upper[i]):
                low = float(t.lower[i]) if np.isfinite(t.lower[i]) else None
                method, bound, up = str(t.method[i]), str(t.bound[i]), float(t.upper[i])
                out[i] = Total(method, bound, up, d, epsilon_lower=low, met=bool(t.met[i]))
        return out
    rows = np.flatnonzero(d_all >= pld.MIN_DELTA)
    if rows.size == 0:
        return out
    # Each reading's certified ends and whether they meet the width, per δ (NaN: none).
    lo_r, up_r, met_r = np.full(d_all.shape, np.nan), np.full(d_all.shape, np.nan), np.zeros(d_all.shape, bool)
    if len(parts) == 1 and parts[0].kind == "tgauss":
        # One truncated-Poisson run (a plan-sgd pipe): its scheme's own route, digit for digit (the pair's
        # upper end, refined against the realisable lower end at the effective rate; the upper end alone is
        # a claim).
        from dpcalc.core import sampling as _sampling

        p = parts[0]

        def tg(sel):
            r = _sampling.truncated_poisson_rate_interval(
                int(p.size), p.rate, int(p.cap), p.sigma, p.times, d_all[sel], **kw
            )
            return r.lower, r.upper, r.met

        sgd.read_in_runs(tg, rows, d_all, (lo_r, up_r, met_r), *widths(kw))
        for i in np.flatnonzero(np.isfinite(up_r)):
            out[i] = Total("pld", "upper", float(up_r[i]), deltas[i], epsilon_lower=None, met=bool(met_r[i]))
        return out
    from dpcalc.risk import mechanisms

    # (A discrete Gaussian past its sums' range, σ ≳ 1.5e5, raises ValidationError, a ValueError: no reading.)
    try:
        mechs = mechanisms(parts, float(d_all[rows].min()))
    except sgd.PLD_FAILURES:
        return out
    # A truncated-Poisson pair's upper end is itself a bound on its release: no need of the fine grid.
    fine = not any(p.kind == "tgauss" for p in parts)

    def read(sel):
        with np.errstate(all="ignore"):
            ans = pld.epsilon(mechs, d_all[sel], fine_upper=fine, **kw)
        return ans.lower, ans.upper, ans.met

    sgd.read_in_runs(read, rows, d_all, (lo_r, up_r, met_r), *widths(kw))
    safe = safe_side_only(parts)
    wor_dp = len(parts) == 1 and is_subsampled_dp(parts[0]) and parts[0].scheme == "without-replacement"
    for i in np.flatnonzero(np.isfinite(up_r) & np.isfinite(lo_r)):
        up = float(up_r[i])
        # (One run sampled without replacement took sgd.tight_interval's realisable lower end above.)
        lower = None if safe else float(lo_r[i])
        if lower is None and wor_dp:
            lower = _realisable_wor_lower(parts[0], deltas[i], up, kw)
        out[i] = Total("pld", "upper", up, deltas[i], epsilon_lower=lower, met=bool(met_r[i]))
    return out


def _realisable_wor_lower(p: Part, delta: float, upper: float, kw: dict) -> float | None:
    """A lower end for T releases of a subsampled (ε, δ) object sampled without replacement: Poisson sampling's
    pair (qP + (1 − q)Q, Q) composed. Two datasets realise it under substitution too — a mechanism answering
    randomized response (with δ's atom) on whether record x is in the batch is (ε, δ)-DP under substitution;
    the dataset holding x puts it in each batch with probability q = m/n, its neighbour (x replaced) never —
    so its certified lower end is one for the object (None where it cannot be read, or is not below the
    upper end, which a sound pair of bounds never is)."""
    from dpcalc.core import pld

    try:  # (ValueError: ε past what the pair represents)
        with np.errstate(all="ignore"):
            a = pld.epsilon([(pld.subsampled_dp(p.inner_epsilon, p.inner_delta, p.rate), p.times)], delta, **kw)
    except (MemoryError, ZeroDivisionError, OverflowError, FloatingPointError, ValueError):
        return None
    lo = float(a.lower[0])
    return lo if math.isfinite(lo) and lo <= upper else None


#: User level is accounted for K up to this many examples per user, and K/σ up to USER_LEVEL_MAX_RATIO: the
#: mixture's privacy loss spans about K/σ², and beyond these the engine takes more than about 15 s and 1 GB
#: (K = 200 at σ = 1: 86 s and 6.6 GB).
USER_LEVEL_MAX_K = 64
USER_LEVEL_MAX_RATIO = 32.0


def user_level_limit(k: int, sigma: float) -> str | None:
    """Why a user-level pair of K examples at noise multiplier σ is not accounted (None: it is)."""
    if k > USER_LEVEL_MAX_K or k / sigma > USER_LEVEL_MAX_RATIO:
        return (
            f"K = {k:g} examples per user at σ = {sigma:g} is beyond what dpcalc accounts at user level (K up to "
            f"{USER_LEVEL_MAX_K} and K/σ up to {USER_LEVEL_MAX_RATIO:g}: the privacy loss distribution grows with K/σ)"
        )
    return None


def _no_pld_error() -> ObjectError:
    from dpcalc.core.pld import MIN_DELTA

    return ObjectError(
        "a Gaussian sampled without replacement, with capped batches (truncated-poisson) or at user level (as "
        "a group of k records of a Poisson-subsampled one is) is accounted only by the PLD engine, which cannot answer "
        f"here (it needs δ >= {MIN_DELTA:g} and a loss distribution that fits its grid)"
    )


def compose_parts(
    parts: list[Part], delta: float, with_pld: bool = False, width: float | None = None, every: bool = False
) -> list[Total]:
    """Total ε at δ of all parts, by every applicable sound method (tightest first is not implied).

    ``width`` is the PLD interval's relative width target (None: the engine's default). ``every`` (with
    ``with_pld``): the PLD row also where the law of a discrete Gaussian's sum already answers within the width.
    Identical parts are grouped first (:func:`group_parts`): the cost grows with the number of
    distinct parts, and the digits do not depend on how the parts are listed.
    """
    return compose_parts_many(parts, [delta], with_pld, width, every)[0]


def compose_parts_many(
    parts: list[Part], deltas, with_pld: bool = False, width: float | None = None, every: bool = False
) -> list[list[Total]]:
    """:func:`compose_parts` at each δ of ``deltas``, every method in one vectorised call for all of them (the
    PLD totals from one reading of the engine, :func:`pld_totals`: an ε(δ) curve shares its compositions)."""
    deltas = [float(x) for x in np.atleast_1d(np.asarray(deltas, float))]
    if not parts:
        raise ObjectError("nothing to compose")
    relations = sorted({r for r in map(relation, parts) if r is not None})
    if len(relations) > 1:
        raise ObjectError(
            "the parts are analysed under different neighbouring relations (add-remove: Poisson-type sampling; "
            "substitution: sampling without replacement, shuffled epochs), and dpcalc makes no claim for their "
            "composition: account them separately, or state every part under one relation"
        )
    parts = group_parts(parts)
    if not deltas:
        return []
    totals: list[list[Total]] = [[] for _ in deltas]
    pld_only = any(p.kind in PLD_ONLY_KINDS for p in parts)
    # One discrete Gaussian run k > 1 times: the law of its outputs' sum first. Where it answers a δ within the
    # width asked, it is the tight answer there and the PLD engine is not run for that δ (as for plain Gaussians,
    # whose exact μ-GDP total stands alone): near σ = 0.12 the engine's table takes 10 s and 0.9 GB for a row
    # 10 % wide.
    fold = _dgauss_fold_first(parts, deltas, width) if with_pld else None
    need = [i for i in range(len(deltas)) if every or fold is None or fold[i] is None or not fold[i].met]
    if (with_pld or pld_only) and need:
        for i, t in zip(need, pld_totals(parts, [deltas[i] for i in need], width)):
            if t is not None:
                totals[i].append(t)
            elif pld_only:
                raise _no_pld_error()
    if pld_only:
        return totals  # the other methods have no bound for such parts
    parts = group_parts(unamplified(parts))  # the other methods bound balls-in-bins epochs without amplification
    dp_parts = [p for p in parts if p.kind == "dp"]
    rest = [p for p in parts if p.kind != "dp"]
    dp_eps = _zcdp.sum_up([_fp.mul_up(float(p.times), p.epsilon) for p in dp_parts])
    dp_delta = _zcdp.sum_up([_fp.mul_up(float(p.times), p.delta) for p in dp_parts])
    for delta in deltas:
        if dp_parts and dp_delta >= delta:
            raise ObjectError(
                f"the (ε, δ) parts alone spend δ = {dp_delta:g}, which is not below --delta {delta:g}; raise --delta"
            )
    d_rest = np.asarray(_fp.add_down(np.array(deltas), -dp_delta), float)  # the δ left, rounded down
    suffix = "+basic" if dp_parts else ""
    if not rest:
        for found in totals:
            found.append(Total("basic", "upper", dp_eps, dp_delta))
        return totals
    if all(p.kind == "gauss" for p in rest):
        mu = _gauss_mu(rest)
        e = np.atleast_1d(_gdp.epsilon(mu, d_rest))
        exact = not dp_parts and not any(p.scheme in EPOCH_SCHEMES for p in rest)
        for found, x, delta in zip(totals, e, deltas):
            found.append(Total("gdp" + suffix, "exact" if exact else "upper", float(x) + dp_eps, delta, mu=mu))
    if all(p.kind in ZCDP_KINDS for p in rest):
        rho = _zcdp.sum_up(_rhos(rest))
        e = np.atleast_1d(_zcdp.epsilon_tight(rho, d_rest))
        for found, x, delta in zip(totals, e, deltas):
            found.append(Total("zcdp-rdp" + suffix, "upper", float(x) + dp_eps, delta, rho=rho))
    pure = basic_epsilon(rest)
    if pure is not None:
        for found in totals:
            found.append(Total("basic", "upper", pure + dp_eps, dp_delta))
    if not dp_parts and len(rest) == 1:
        for found, t in zip(totals, fold if fold is not None else _discrete_closed_forms(rest[0], deltas)):
            if t is not None:
                found.append(t)
    for found, (e, a), delta in zip(totals, _rdp_epsilons(rest, d_rest), deltas):
        found.append(Total("rdp" + suffix, "upper", e + dp_eps, delta, order=a))
    return totals


def basic_epsilon(parts: Sequence[Part]) -> float | None:
    """Σ kε of parts that are all pure ε-DP (rounded up; basic composition, δ = 0), else None."""
    if not all(p.kind in EPS_KINDS for p in parts):
        return None
    return _zcdp.sum_up(
        _fp.mul_up(np.array([float(p.times) for p in parts]), np.array([p.epsilon for p in parts], dtype=float))
    )


def _discrete_closed_form(p: Part, delta: float) -> Total | None:
    """The closed form of a discrete mechanism (None for other kinds, or where it cannot answer).

    Run once: its exact ε at δ (docs/discrete.md). Run k > 1 times, an ε₀-DP discrete mechanism (discrete Laplace,
    randomized response, bounded range) also has the optimal composition of k ε₀-DP mechanisms ([KOV] Thm 3.3),
    sound for each of them (for bounded range it is the third engine of the min-of-engines rule).
    """
    return _discrete_closed_forms(p, [delta])[0]


def _discrete_closed_forms(p: Part, deltas: list[float]) -> list[Total | None]:
    """:func:`_discrete_closed_form` at each δ, in one vectorised call; where that call refuses (a δ beyond
    the closed form's range), δ by δ, so that only the δ out of range go unanswered."""
    from dpcalc.core import composition as _comp
    from dpcalc.core import discrete as _d
    from dpcalc.core.errors import ValidationError

    if p.kind not in DISCRETE_KINDS:
        return [None] * len(deltas)
    dl = np.asarray(deltas, float)
    try:
        with np.errstate(all="ignore"):
            if p.times == 1:
                if p.kind == "dgauss":
                    e, method = _d.dgauss_epsilon_at(p.sigma, dl, p.sensitivity), "discrete-gaussian-cks"
                elif p.kind == "dlaplace":
                    e, method = _d.dlaplace_epsilon_at(p.scale, dl, p.sensitivity), "discrete-laplace"
                elif p.kind == "rr":
                    e, method = _d.rr_epsilon_at(p.epsilon, dl, p.k), "randomized-response"
                else:
                    e, method = _d.br_epsilon_at(p.epsilon, dl), "bounded-range-ddr"
                bound = "exact"
            elif p.kind != "dgauss" and p.times <= _comp.KOV_MAX_TIMES:
                e, method, bound = _comp.optimal_homogeneous(p.epsilon, 0.0, p.times, dl), "optimal-kov", "upper"
            elif p.kind == "dgauss":
                return _dgauss_sum_totals(p, dl)
            else:
                return [None] * len(deltas)
    except (ValidationError, MemoryError, OverflowError, ArithmeticError):
        # Beyond the closed form's range (σ too large for its sums, δ below 1e-30): the others answer.
        return [None] if len(deltas) == 1 else [_discrete_closed_form(p, d) for d in deltas]
    e = np.broadcast_to(np.asarray(e, float), dl.shape)
    return [Total(method, bound, float(x), d) if math.isfinite(x) else None for x, d in zip(e, deltas)]


def closed_form_lowers(parts: list[Part], deltas: list[float]) -> list[float | None]:
    """Certified lower ends of the exact ε(δ) of one release of a discrete mechanism (the ``exact`` closed form
    of :func:`_discrete_closed_forms`), per δ; None where there is none (other parts, several releases, out of
    range). An exact value is rounded up within its search's tolerance (1e-12 relative) or its formula's error
    bound, which grows where ε cancels far below ε₀: as a lower end it needs its own certificate."""
    from dpcalc.core import discrete as _d
    from dpcalc.core.errors import ValidationError

    if len(parts) != 1 or parts[0].kind not in DISCRETE_KINDS or parts[0].times != 1:
        return [None] * len(deltas)
    p, dl = parts[0], np.asarray(deltas, float)
    try:
        with np.errstate(all="ignore"):
            if p.kind == "dgauss":
                lo = _d.dgauss_epsilon_at(p.sigma, dl, p.sensitivity, lower=True)
            elif p.kind == "dlaplace":
                lo = _d.dlaplace_epsilon_at(p.scale, dl, p.sensitivity, lower=True)
            elif p.kind == "rr":
                lo = _d.rr_epsilon_bounds(p.epsilon, dl, p.k)[0]
            else:
                lo = _d.br_epsilon_bounds(p.epsilon, dl)[0]
    except (ValidationError, MemoryError, OverflowError, ArithmeticError):
        return [None] * len(deltas)
    lo = np.broadcast_to(np.asarray(lo, float), dl.shape)
    return [float(x) if math.isfinite(x) else None for x in lo]


def _dgauss_fold_first(parts: list[Part], deltas: list[float], width: float | None) -> list[Total | None] | None:
    """:func:`_dgauss_sum_totals` where the parts (grouped) are one discrete Gaussian run k > 1 times (else None),
    each row's ``met`` judged by the width asked (``width``: the PLD engine's relative width, None its default)."""
    if len(parts) != 1 or parts[0].kind != "dgauss" or parts[0].times <= 1:
        return None
    from dpcalc.core.errors import ValidationError
    from dpcalc.core.pld.sizing import ABS_WIDTH, REL_WIDTH

    rel, abs_ = (REL_WIDTH, ABS_WIDTH) if width is None else (width, width / 10)
    try:
        with np.errstate(all="ignore"):
            return _dgauss_sum_totals(parts[0], np.asarray(deltas, float), rel, abs_)
    except (ValidationError, MemoryError, OverflowError, ArithmeticError):
        return None  # (the closed forms' own call answers what it can, δ by δ)


def _dgauss_sum_totals(
    p: Part, dl: np.ndarray, rel: float | None = None, abs_: float | None = None
) -> list[Total | None]:
    """k > 1 runs of one discrete Gaussian by the exact law of their sum (:mod:`dpcalc.core.dgauss_fold`): a
    certified interval as narrow as round-off (method ``discrete-gaussian-sum``), where its convolutions are
    small enough (σ up to a few, or few runs); else none (the PLD engine answers)."""
    from dpcalc.core.dgauss_fold import dgauss_fold_epsilon
    from dpcalc.core.pld.sizing import ABS_WIDTH, REL_WIDTH, within

    got = dgauss_fold_epsilon(p.sigma, p.sensitivity, p.times, dl)
    if got is None:
        return [None] * dl.size
    lo, up = got
    rel = REL_WIDTH if rel is None else rel
    abs_ = ABS_WIDTH if abs_ is None else abs_
    return [
        Total(
            "discrete-gaussian-sum",
            "upper",
            float(u),
            float(d),
            epsilon_lower=float(x),
            met=bool(within(x, u, rel, abs_)),
        )
        if math.isfinite(u)
        else None
        for x, u, d in zip(lo, up, dl)
    ]


def _rho(p: Part) -> float:
    """tρ of a part with a zCDP bound: tμ²/2 (Gaussian), tρ (zCDP, discrete Gaussian Δ²/(2σ²), bounded range
    ε₀²/8), or tε²/2 (pure ε-DP, [BS] Prop. 1.4)."""
    # Rounded up (×½ is exact): the ρ of a guarantee must not come out below it.
    per = (
        p.rho
        if p.kind in ("zcdp", "dgauss", "br")
        else _fp.mul_up(p.mu, p.mu) * 0.5
        if p.kind == "gauss"
        else (_fp.mul_up(p.epsilon, p.epsilon) * 0.5)
    )
    return float(_fp.mul_up(float(p.times), float(per)))


def _rhos(parts: Sequence[Part]) -> np.ndarray:
    """:func:`_rho` of every part, in one array operation per rounding (the same values, element by element)."""
    kinds = np.array([p.kind for p in parts], dtype=object)
    own = np.isin(kinds, ("zcdp", "dgauss", "br"))
    x = np.array([0.0 if o else p.mu if p.kind == "gauss" else p.epsilon for p, o in zip(parts, own)], dtype=float)
    per = np.where(own, np.array([p.rho for p in parts], dtype=float), _fp.mul_up(x, x) * 0.5)
    return np.asarray(_fp.mul_up(np.array([float(p.times) for p in parts]), per), dtype=float)


def unamplified(parts: Iterable[Part]) -> list[Part]:
    """The parts with each balls-in-bins epoch (ragauss) as the Gaussian mechanism it runs on the record, μ = Δ/σ
    (scheme kept: its GDP total is then an upper bound, not exact): how every method but PLD bounds it."""
    return [Part("gauss", p.times, mu=p.mu, scheme=p.scheme) if p.kind == "ragauss" else p for p in parts]


def tightest(totals: list[Total]) -> Total:
    """The smallest ε among sound totals at the requested δ (basic at a smaller δ also qualifies)."""
    return min(totals, key=lambda t: t.epsilon)


def part_cost(part: Part, delta: float) -> float:
    """ε of one part on its own at δ (its best sound method)."""
    return alone([part], delta)[0].epsilon


def alone(
    parts: Sequence[Part], delta: float, with_pld: bool = False, width: float | None = None, every: bool = False
) -> list[Total]:
    """Each part on its own (with its count) at δ: its tightest total, as
    ``tightest(compose_parts([p], δ, with_pld, width, every))`` gives it, to the last digit — but each
    closed form and the RDP search run once for all parts (vectorised), and PLD once per part that
    needs it. (ε, δ) parts cost their basic tε at tδ (no check against δ: on its own such a part
    is just what it says).
    """
    n = len(parts)
    found: list[list[Total]] = [[] for _ in range(n)]
    idx = {k: [i for i, p in enumerate(parts) if p.kind == k] for k in {p.kind for p in parts}}

    def pick(kinds):
        return [i for k in kinds for i in idx.get(k, [])]

    for i in pick(("dp",)):
        p = parts[i]
        found[i].append(Total("basic", "upper", p.times * p.epsilon, p.times * p.delta))
    folds: dict = {}  # one discrete Gaussian run k > 1 times: the law of the sum first, as compose_parts has it
    for i in pick(PLD_KINDS):
        if parts[i].kind == "dp" or not (with_pld or parts[i].kind in PLD_ONLY_KINDS):
            continue
        f = _dgauss_fold_first([parts[i]], [delta], width) if with_pld else None
        if f is not None:
            folds[i] = f[0]
            if not every and f[0] is not None and f[0].met:
                continue
        t = pld_total([parts[i]], delta, width)
        if t is not None:
            found[i].append(t)
        elif parts[i].kind in PLD_ONLY_KINDS:
            raise _no_pld_error()
    parts = unamplified(parts)  # the closed forms and RDP: balls-in-bins epochs as Gaussian mechanisms
    idx = {k: [i for i, p in enumerate(parts) if p.kind == k] for k in {p.kind for p in parts}}
    for gauss in _chunks(pick(("gauss",))):
        mu = np.array([_gauss_mu([parts[i]]) for i in gauss])
        e = np.atleast_1d(_gdp.epsilon(mu, np.full(mu.shape, delta)))
        for i, m, x in zip(gauss, mu, e):
            bound = "upper" if parts[i].scheme in EPOCH_SCHEMES else "exact"
            found[i].append(Total("gdp", bound, float(x), delta, mu=float(m)))
    for i in pick(DISCRETE_KINDS):
        t = folds[i] if i in folds else _discrete_closed_form(parts[i], delta)
        if t is not None:
            found[i].append(t)
    for z in _chunks(pick(ZCDP_KINDS)):
        rho = _rhos([parts[i] for i in z])
        e = np.atleast_1d(_zcdp.epsilon_tight(rho, np.full(rho.shape, delta)))
        for i, r, x in zip(z, rho, e):
            found[i].append(Total("zcdp-rdp", "upper", float(x), delta, rho=float(r)))
    for i in pick(EPS_KINDS):
        # kε rounded up, as compose_parts has it (a product rounded to nearest can be half an ulp low)
        found[i].append(Total("basic", "upper", float(_fp.mul_up(float(parts[i].times), parts[i].epsilon)), 0.0))
    for r in _chunks(pick(tuple(k for k in RDP_KINDS if k != "curve"))):
        fn = _RDPSum([parts[i] for i in r])
        e, a = _rdp.optimal_epsilon(fn.rows, np.full(len(r), delta))
        for i, x, o in zip(r, e, a):
            found[i].append(Total("rdp", "upper", float(x), delta, order=float(o)))
    for i in pick(("curve",)):
        found[i] += compose_parts([parts[i]], delta, with_pld, width, every)
    return [tightest(f) for f in found]


#: Parts per vectorised call of :func:`alone` (its searches hold a few hundred orders per part).
_ALONE_CHUNK = 2048


def _chunks(items: list) -> list[list]:
    """``items`` in runs of at most :data:`_ALONE_CHUNK` (the same answers: every case is its own row)."""
    return [items[i : i + _ALONE_CHUNK] for i in range(0, len(items), _ALONE_CHUNK)]


def shares(parts: Sequence[Part], delta: float, counts: Sequence[int] | None = None) -> list[float]:
    """Approximate attribution of the total ε to parts (fractions summing to 1).

    ``counts[i]`` (default 1) says how many times part i occurs in the composition (as a ledger's
    identical releases do); its fraction is that of all of them. The work is done once per listed
    part, vectorised.

    RDP-accounted parts share the RDP part of the budget in proportion to
    their RDP at the order that attains the total; (ε, δ) parts count their
    basic ε. With parts only PLD accounts for (no RDP curve), every part
    counts its own ε at δ. This explains *who spends* — it is not itself a
    guarantee.
    """
    n = len(parts)
    k = np.ones(n) if counts is None else np.asarray(counts, float)
    parts = unamplified(parts)

    def normalised(w: np.ndarray) -> list[float]:
        total = w.sum()
        return list(w / total) if total > 0 else [1.0 / n] * n

    if any(p.kind in PLD_ONLY_KINDS for p in parts):
        # No RDP curve for these: attribute in proportion to each part's own ε (PLD where needed).
        return normalised(np.array([t.epsilon for t in alone(parts, delta)]) * k)
    dp_eps = np.array([p.times * p.epsilon if p.kind == "dp" else 0.0 for p in parts]) * k
    rest = [i for i, p in enumerate(parts) if p.kind != "dp"]
    if not rest:
        return normalised(dp_eps)
    # The RDP total as compose_parts finds it (the same grouped parts, the same δ: the same search).
    pool = group_parts(dataclasses.replace(p, times=int(c) * p.times) for p, c in zip(parts, k))
    dp_delta = math.fsum(p.times * p.delta for p in pool if p.kind == "dp")
    rdp_eps, order = _rdp_epsilon([p for p in pool if p.kind != "dp"], delta - dp_delta)
    each = _RDPSum([parts[i] for i in rest]).rows(np.full((len(rest), 1), order))[:, 0]
    contrib = np.zeros(n)
    contrib[rest] = each * k[rest]
    weights = (contrib / contrib.sum() * rdp_eps if contrib.sum() > 0 else np.zeros(n)) + dp_eps
    return normalised(weights)
