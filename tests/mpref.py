"""High-precision references shared by the PLD tests: the exact δ(ε) of a Gaussian (μ-GDP) and of one
Poisson-subsampled Gaussian step, and ε at δ by bisection — in mpmath, independent of the engine."""

import mpmath as mp


def delta_gauss(mu, eps):
    """δ(ε) of μ-GDP (Balle & Wang's formula)."""
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu)


def delta_step(q, s, eps):
    """max(δ_remove, δ_add) of one Poisson-subsampled Gaussian step, from the mixture densities' tails."""
    q, s, eps = mp.mpf(q), mp.mpf(s), mp.mpf(eps)
    x = s**2 * mp.log((mp.expm1(eps) + q) / q) + mp.mpf(1) / 2
    dr = (1 - q) * mp.ncdf(-x / s) + q * mp.ncdf(-(x - 1) / s) - mp.exp(eps) * mp.ncdf(-x / s)
    da = mp.mpf(0)
    if mp.exp(-eps) > 1 - q:
        xp = s**2 * mp.log((mp.expm1(-eps) + q) / q) + mp.mpf(1) / 2
        da = mp.ncdf(xp / s) - mp.exp(eps) * ((1 - q) * mp.ncdf(xp / s) + q * mp.ncdf((xp - 1) / s))
    return max(dr, da)


def eps_of(delta_fn, delta):
    """The ε >= 0 where the decreasing ``delta_fn`` meets ``delta`` (0 if it is below already), to 1e-40
    relative or the working precision."""
    delta = mp.mpf(delta)
    if delta_fn(mp.mpf(0)) <= delta:
        return mp.mpf(0)
    lo, hi = mp.mpf(0), mp.mpf(1)
    while delta_fn(hi) > delta:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if delta_fn(mid) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo < mp.mpf(10) ** -40 * hi:
            break
    return (lo + hi) / 2
