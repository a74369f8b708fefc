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
    return max(_one_remove(q, s, eps), _one_add(q, s, eps))


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


def _one_remove(q, s, e):
    """∫ (p − e^e·N(0, s²))_+ of one step, p = (1 − q)N(0, s²) + qN(1, s²), for any real e."""
    t = mp.expm1(e) + q
    if t <= 0:  # p >= (1 − q)·N(0, s²) >= e^e·N(0, s²) everywhere
        return -mp.expm1(e)
    x = s**2 * mp.log(t / q) + mp.mpf(1) / 2
    return (1 - q) * mp.ncdf(-x / s) + q * mp.ncdf(-(x - 1) / s) - mp.exp(e) * mp.ncdf(-x / s)


def _one_add(q, s, e):
    """∫ (N(0, s²) − e^e·p)_+ of one step, for any real e."""
    t = mp.expm1(-e) + q
    if t <= 0:
        return mp.mpf(0)
    x = s**2 * mp.log(t / q) + mp.mpf(1) / 2
    return mp.ncdf(x / s) - mp.exp(e) * ((1 - q) * mp.ncdf(x / s) + q * mp.ncdf((x - 1) / s))


def delta_two_steps(q, s, eps, step=1, span=40):
    """max(δ_remove, δ_add) of two composed Poisson-subsampled Gaussian steps, by quadrature.

    (p₁p₂ − e^ε q₁q₂)_+ = p₁·(p₂ − e^{ε − L(x₁)} q₂)_+, so δ₂(ε) = E_{x₁∼p}[δ₁(ε − L(x₁))] with δ₁ the
    one-step curve at any real level (closed form above), and likewise for the add direction under
    N(0, s²) with ε + L. The integrand is smooth except where δ₁'s level crosses log(1 − q) (remove) or
    −log(1 − q) (add), where its second derivative jumps: that point is a breakpoint, with the others
    every ``step`` standard deviations over ±``span`` (tanh-sinh misses the kink by 1e-5 relative)."""
    q, s, eps = mp.mpf(q), mp.mpf(s), mp.mpf(eps)

    def loss(x):
        return mp.log((1 - q) + q * mp.exp((2 * x - 1) / (2 * s**2)))

    total = mp.mpf(0)
    for direction in ("remove", "add"):
        if direction == "remove":
            f = lambda x: _one_remove(q, s, eps - loss(x))  # noqa: E731
            comps = [(1 - q, mp.mpf(0)), (q, mp.mpf(1))]
            t = mp.exp(eps) / (1 - q) - (1 - q)
        else:
            f = lambda x: _one_add(q, s, eps + loss(x))  # noqa: E731
            comps = [(mp.mpf(1), mp.mpf(0))]
            t = mp.exp(-eps) / (1 - q) - (1 - q)
        kink = s**2 * mp.log(t / q) + mp.mpf(1) / 2 if t > 0 else None
        d = mp.mpf(0)
        for w, m in comps:
            pts = [mp.mpf(k) * step for k in range(-int(span / step), int(span / step) + 1)]
            if kink is not None and abs((kink - m) / s) < span:
                pts = sorted(set(pts + [(kink - m) / s]))
            d += w * mp.quad(lambda z: mp.npdf(z) * f(m + s * z), [-mp.inf, *pts, mp.inf])  # noqa: B023
        total = max(total, d)
    return total


# --------------------------------------------------------------------------- closed forms (tests/test_exactness.py)
#
# Each reference works on the exact binary values of its double arguments and raises the working
# precision until two evaluations agree to 40 digits (δ of a tiny μ cancels as many digits as δ has
# leading zeros), so it is the true value to far better than a double's ulp.


def stable(fn, *args, digits=40):
    """fn(*args) in mpmath, re-evaluated at rising precision until two evaluations agree to ``digits``."""
    prev = None
    for dps in (60, 120, 360, 1000):
        with mp.workdps(dps):
            val = fn(*[mp.mpf(a) if isinstance(a, float) else a for a in args])
        if prev is not None and (val == prev or abs(val - prev) <= abs(val) * mp.mpf(10) ** -digits):
            return +val
        prev = val
    raise AssertionError(f"no stable value for {fn.__name__}{args}")


def gdp_delta(mu, eps):
    """δ_μ(ε) of μ-GDP at the doubles' exact values."""
    return stable(delta_gauss, float(mu), float(eps))


def isf(alpha):
    """z with Φ̄(z) = α (Newton on log Φ̄, from a double start); α may be an mpf."""
    a = mp.mpf(alpha)
    if a > mp.mpf(1) / 2:
        return -isf(1 - a)
    z = mp.sqrt(-2 * mp.log(a)) if a < mp.mpf("0.3") else mp.mpf(0)
    for _ in range(200):
        f = mp.log(mp.ncdf(-z)) - mp.log(a)
        step = f / (mp.npdf(z) / mp.ncdf(-z))
        z += step
        if abs(step) < mp.mpf(10) ** (-mp.mp.dps + 5) * (1 + abs(z)):
            break
    return z


def gdp_tradeoff(mu, alpha):
    """β = Φ(Φ̄⁻¹(α) − μ), and its condition number |d log β / d log α| = α φ(w)/(φ(z) Φ̄(w)), w = μ − z."""

    def f(m, a):
        z = isf(a)
        return mp.ncdf(z - m)

    beta = stable(f, float(mu), float(alpha))
    with mp.workdps(60):
        z = isf(mp.mpf(float(alpha)))
        w = mp.mpf(float(mu)) - z
        kappa = mp.mpf(float(alpha)) * mp.npdf(w) / (mp.npdf(z) * mp.ncdf(-w))
    return beta, float(kappa)


def gdp_tpr(mu, alpha):
    """TPR = Φ(μ − Φ̄⁻¹(α)) and its condition number in α."""

    def f(m, a):
        return mp.ncdf(m - isf(a))

    tpr = stable(f, float(mu), float(alpha))
    with mp.workdps(60):
        z = isf(mp.mpf(float(alpha)))
        w = mp.mpf(float(mu)) - z
        kappa = mp.mpf(float(alpha)) * mp.npdf(w) / (mp.npdf(z) * mp.ncdf(w))
    return tpr, float(kappa)


def gdp_eps(mu, delta):
    """The exact ε at δ of μ-GDP (0 where δ_μ(0) <= δ)."""
    with mp.workdps(80):
        return eps_of(lambda e: gdp_delta(mu, e) if e == 0 else _delta_mp(mu, e), delta)


def _delta_mp(mu, eps):
    return stable(delta_gauss, mp.mpf(float(mu)), mp.mpf(eps))


def gdp_mu(eps, delta):
    """The largest μ with δ_μ(ε) <= δ, to 1e-40 relative."""
    with mp.workdps(80):
        d = mp.mpf(float(delta))
        lo, hi = mp.mpf(0), mp.mpf(1)
        while _delta_mp(hi, float(eps)) <= d:
            lo, hi = hi, hi * 2
        for _ in range(400):
            mid = (lo + hi) / 2
            if _delta_mp(mid, float(eps)) <= d:
                lo = mid
            else:
                hi = mid
            if hi - lo < mp.mpf(10) ** -42 * hi:
                break
        return lo


def kov_delta(e0, d0, k, eps):
    """δ(ε) of k-fold composition of (ε₀, δ₀)-DP (Kairouz, Oh & Viswanath, continuous form)."""
    e0, d0, eps = mp.mpf(e0), mp.mpf(d0), mp.mpf(eps)
    s = mp.mpf(0)
    for j in range(0, k // 2 + 1):
        t = mp.exp((k - j) * e0) - mp.exp(eps + j * e0)
        if t > 0:
            s += mp.binomial(k, j) * t
    pure = s / (1 + mp.exp(e0)) ** k
    return 1 - (1 - d0) ** k * (1 - pure)


def kov_eps(e0, d0, k, dt):
    """The smallest ε with kov_delta <= δ_t, by Illinois regula falsi to 1e-30 relative."""
    with mp.workdps(60):
        dt = mp.mpf(float(dt))

        def g(x):
            return kov_delta(e0, d0, k, x) - dt

        a, b = mp.mpf(0), mp.mpf(k) * mp.mpf(float(e0))
        ga, gb = g(a), g(b)
        if ga <= 0:
            return mp.mpf(0)
        side = 0
        for _ in range(400):
            c = b - gb * (b - a) / (gb - ga)
            if not (a < c < b):
                c = (a + b) / 2
            gc = g(c)
            if gc > 0:
                a, ga = c, gc
                if side == -1:
                    gb /= 2
                side = -1
            else:
                b, gb = c, gc
                if side == 1:
                    ga /= 2
                side = 1
            if b - a < mp.mpf(10) ** -32 * b:
                break
        return b


def zcdp_tight(rho, delta):
    """min over α > 1 of αρ + log(1 − 1/α) − (log δ + log α)/(α − 1), by golden section in log(α − 1)."""
    with mp.workdps(60):
        r, ld = mp.mpf(float(rho)), mp.log(mp.mpf(float(delta)))

        def f(t):
            a = 1 + mp.exp(t)
            return a * r + mp.log(1 - 1 / a) - (ld + mp.log(a)) / (a - 1)

        guess = mp.log(mp.sqrt(-ld / r))
        lo, hi = guess - 12, guess + 12
        g = (mp.sqrt(5) - 1) / 2
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        f1, f2 = f(x1), f(x2)
        for _ in range(200):
            if f1 < f2:
                hi, x2, f2 = x2, x1, f1
                x1 = hi - g * (hi - lo)
                f1 = f(x1)
            else:
                lo, x1, f1 = x1, x2, f2
                x2 = lo + g * (hi - lo)
                f2 = f(x2)
        return min(f1, f2)
