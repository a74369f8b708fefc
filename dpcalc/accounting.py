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

from dataclasses import dataclass

import numpy as np

from dpcalc.core import gdp as _gdp
from dpcalc.core import rdp as _rdp
from dpcalc.core import zcdp as _zcdp
from dpcalc.core.amplification import subsample
from dpcalc.model import DP, GDP, ZCDP, Composed, Gaussian, Laplace, ObjectError, RDPCurve, Subsampled


@dataclass(frozen=True)
class Part:
    """One accounted part: a normalised object and how many times it runs."""

    kind: str  # gauss | zcdp | pure | laplace | sgauss | wgauss | curve | dp
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


def flatten(obj, times: int = 1, where: str = "object") -> list[Part]:
    """Normalise a privacy object (possibly composed) into parts."""
    if isinstance(obj, Composed):
        out: list[Part] = []
        for i, (p, t) in enumerate(obj.parts, 1):
            out += flatten(p, times * t, f"{where} part {i}")
        return out
    if isinstance(obj, Gaussian):
        return [Part("gauss", times, mu=obj.sensitivity / obj.sigma)]
    if isinstance(obj, GDP):
        return [Part("gauss", times, mu=obj.mu)]
    if isinstance(obj, ZCDP):
        return [Part("zcdp", times, rho=obj.rho)]
    if isinstance(obj, Laplace):
        return [Part("laplace", times, scale=obj.scale / obj.sensitivity, epsilon=obj.sensitivity / obj.scale)]
    if isinstance(obj, DP):
        if obj.delta == 0:
            return [Part("pure", times, epsilon=obj.epsilon)]
        return [Part("dp", times, epsilon=obj.epsilon, delta=obj.delta)]
    if isinstance(obj, RDPCurve):
        return [Part("curve", times, orders=obj.orders, values=obj.values)]
    if isinstance(obj, Subsampled):
        inner = obj.inner
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
            return flatten(DP(float(e), float(d)), times, where)
        raise ObjectError(f"{where}: subsampling of a {type(inner).__name__} guarantee is not supported")
    raise ObjectError(f"{where}: cannot compose a {type(obj).__name__}")


def _rdp_parts(parts: list[Part]):
    """An rdp_fn for rdp.optimal_epsilon and the fixed orders it must use (or None)."""
    curves = [p for p in parts if p.kind == "curve"]
    orders = None
    if curves:
        common = set(curves[0].orders)
        for c in curves[1:]:
            common &= set(c.orders)
        if not common:
            raise ObjectError("the RDP curves given have no order in common; they cannot be composed")
        orders = np.array(sorted(common))

    def fn(alpha):
        total = np.zeros(np.shape(alpha))
        for p in parts:
            if p.kind == "gauss":
                r = alpha * p.mu**2 / 2
            elif p.kind == "zcdp":
                r = alpha * p.rho
            elif p.kind == "pure":
                r = np.minimum(p.epsilon, alpha * p.epsilon**2 / 2)
            elif p.kind == "laplace":
                r = _rdp.laplace(alpha, p.scale)
            elif p.kind == "sgauss":
                r = _rdp._subsampled_gaussian(alpha, p.rate, p.sigma)
            elif p.kind == "curve":
                lookup = dict(zip(p.orders, p.values))
                r = np.vectorize(lambda a, lk=lookup: lk[float(a)])(alpha)
            else:  # pragma: no cover - dp parts never reach here
                raise ValueError(p.kind)
            total = total + p.times * r
        return total

    return fn, orders


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
PLD_KINDS = ("gauss", "laplace", "sgauss", "wgauss", "dp", "pure")

#: Part kinds only the PLD engine can account for (no RDP, zCDP or GDP bound in dpcalc).
PLD_ONLY_KINDS = ("wgauss",)


def pld_total(parts: list[Part], delta: float, width: float | None = None) -> Total | None:
    """Tight total by privacy loss distributions, with a certified interval (None if a part is not
    supported, or if the parts are all Gaussian: their exact μ-GDP total is reported instead).

    One subsampled Gaussian release run once (or with every record sampled) takes the engine's exact
    route, as plan-sgd does.
    """
    from dpcalc.core import pld, sgd

    if not parts or any(p.kind not in PLD_KINDS for p in parts) or all(p.kind == "gauss" for p in parts):
        return None
    if len(parts) == 1 and parts[0].kind in ("sgauss", "wgauss") and (parts[0].times == 1 or parts[0].rate >= 1):
        p = parts[0]
        sampling = "poisson" if p.kind == "sgauss" else "without-replacement"
        kw = {} if width is None else {"rel": width, "abs_": width / 10}
        t = sgd.tight_interval(p.rate, p.sigma, p.times, delta, sampling, **kw)
        if not np.isfinite(t.upper[0]):
            return None
        return Total(
            str(t.method[0]), str(t.bound[0]), float(t.upper[0]), delta, epsilon_lower=float(t.lower[0]), met=True
        )
    if delta < pld.MIN_DELTA:
        return None
    mechs = []
    for p in parts:
        if p.kind == "gauss":
            mechs.append((pld.gaussian(p.mu), p.times))
        elif p.kind == "laplace":
            mechs.append((pld.laplace(p.epsilon), p.times))
        elif p.kind == "sgauss":
            mechs.append((pld.subsampled_gaussian(p.rate, p.sigma), p.times))
        elif p.kind == "wgauss":
            mechs.append((pld.sampled_wor_gaussian(p.rate, p.sigma), p.times))
        elif p.kind == "pure" and p.scale > 0 and p.rate < 1:
            eps0 = 1.0 / p.scale
            sub = pld.subsampled_laplace if p.scheme == "poisson" else pld.sampled_wor_laplace
            mechs.append((sub(eps0, p.rate), p.times))
        else:
            mechs.append((pld.dp(p.epsilon, p.delta), p.times))
    try:
        with np.errstate(all="ignore"):
            ans = pld.epsilon(mechs, delta, **({} if width is None else {"rel": width, "abs_": width / 10}))
    except (MemoryError, ZeroDivisionError, OverflowError, FloatingPointError, ValueError):
        return None  # beyond what the PLD grid can represent; the other methods answer
    if not (np.isfinite(ans.upper[0]) and np.isfinite(ans.lower[0])):
        return None
    return Total("pld", "upper", float(ans.upper[0]), delta, epsilon_lower=float(ans.lower[0]), met=bool(ans.met[0]))


def compose_parts(parts: list[Part], delta: float, with_pld: bool = False, width: float | None = None) -> list[Total]:
    """Total ε at δ of all parts, by every applicable sound method (tightest first is not implied).

    ``width`` is the PLD interval's relative width target (None: the engine's default).
    """
    if not parts:
        raise ObjectError("nothing to compose")
    totals: list[Total] = []
    pld_only = any(p.kind in PLD_ONLY_KINDS for p in parts)
    if with_pld or pld_only:
        t = pld_total(parts, delta, width)
        if t is not None:
            totals.append(t)
        elif pld_only:
            from dpcalc.core.pld import MIN_DELTA

            raise ObjectError(
                "a Gaussian sampled without replacement is accounted only by the PLD engine, which cannot answer "
                f"here (it needs δ >= {MIN_DELTA:g} and a loss distribution that fits its grid)"
            )
    if pld_only:
        return totals  # the other methods have no bound for such parts
    dp_parts = [p for p in parts if p.kind == "dp"]
    rest = [p for p in parts if p.kind != "dp"]
    dp_eps = float(sum(p.times * p.epsilon for p in dp_parts))
    dp_delta = float(sum(p.times * p.delta for p in dp_parts))
    if dp_parts and dp_delta >= delta:
        raise ObjectError(
            f"the (ε, δ) parts alone spend δ = {dp_delta:g}, which is not below --delta {delta:g}; raise --delta"
        )
    d_rest = delta - dp_delta
    suffix = "+basic" if dp_parts else ""
    if not rest:
        totals.append(Total("basic", "upper", dp_eps, dp_delta))
        return totals
    if all(p.kind == "gauss" for p in rest):
        mu = float(np.sqrt(sum(p.times * p.mu**2 for p in rest)))
        e = float(_gdp.epsilon(mu, d_rest))
        totals.append(Total("gdp" + suffix, "exact" if not dp_parts else "upper", e + dp_eps, delta, mu=mu))
    if all(p.kind in ("gauss", "zcdp", "pure") for p in rest):
        rho = float(
            sum(
                p.times * (p.mu**2 / 2 if p.kind == "gauss" else p.rho if p.kind == "zcdp" else p.epsilon**2 / 2)
                for p in rest
            )
        )
        totals.append(
            Total("zcdp-rdp" + suffix, "upper", float(_zcdp.epsilon_tight(rho, d_rest)) + dp_eps, delta, rho=rho)
        )
    if all(p.kind in ("pure", "laplace") for p in rest):
        pure = float(sum(p.times * p.epsilon for p in rest))
        totals.append(Total("basic", "upper", pure + dp_eps, dp_delta))
    fn, orders = _rdp_parts(rest)
    if orders is None:
        e, a = _rdp.optimal_epsilon(fn, np.array([d_rest]))
    else:
        e, a = _rdp.optimal_epsilon(fn, np.array([d_rest]), orders=orders, refine_steps=0, extend=False)
    totals.append(Total("rdp" + suffix, "upper", float(e[0]) + dp_eps, delta, order=float(a[0])))
    return totals


def tightest(totals: list[Total]) -> Total:
    """The smallest ε among sound totals at the requested δ (basic at a smaller δ also qualifies)."""
    return min(totals, key=lambda t: t.epsilon)


def part_cost(part: Part, delta: float) -> float:
    """ε of one part on its own at δ (its best sound method)."""
    if part.kind == "dp":
        return part.times * part.epsilon
    return tightest(compose_parts([part], delta)).epsilon


def shares(parts: list[Part], delta: float) -> list[float]:
    """Approximate attribution of the total ε to parts (fractions summing to 1).

    RDP-accounted parts share the RDP part of the budget in proportion to
    their RDP at the order that attains the total; (ε, δ) parts count their
    basic ε. With parts only PLD accounts for (no RDP curve), every part
    counts its own ε at δ. This explains *who spends* — it is not itself a
    guarantee.
    """
    if any(p.kind in PLD_ONLY_KINDS for p in parts):
        # No RDP curve for these: attribute in proportion to each part's own ε (PLD where needed).
        costs = np.array([part_cost(p, delta) for p in parts])
        return list(costs / costs.sum()) if costs.sum() > 0 else [1.0 / len(parts)] * len(parts)
    dp_eps = np.array([p.times * p.epsilon if p.kind == "dp" else 0.0 for p in parts])
    rest = [p for p in parts if p.kind != "dp"]
    if not rest:
        total = dp_eps.sum()
        return list(dp_eps / total) if total > 0 else [1.0 / len(parts)] * len(parts)
    dp_delta = sum(p.times * p.delta for p in parts if p.kind == "dp")
    rdp_total = [t for t in compose_parts(rest, delta - dp_delta) if t.method == "rdp"][0]
    alpha = np.array([[rdp_total.order]])
    contrib = []
    for p in parts:
        if p.kind == "dp":
            contrib.append(0.0)
        else:
            fn, _ = _rdp_parts([p])
            contrib.append(float(fn(alpha)[0, 0]))
    contrib = np.array(contrib)
    rdp_eps = rdp_total.epsilon
    weights = (contrib / contrib.sum() * rdp_eps if contrib.sum() > 0 else np.zeros_like(contrib)) + dp_eps
    return list(weights / weights.sum()) if weights.sum() > 0 else [1.0 / len(parts)] * len(parts)
