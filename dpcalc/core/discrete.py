"""Discrete mechanisms: discrete Gaussian, discrete Laplace, randomized response, bounded range.

Closed forms and calibrations, rounded toward the safe side; the privacy
loss distributions the PLD engine composes are in :mod:`.pld.discrete`.

* **Discrete Gaussian** N_Z(0, σ²) (P(x) ∝ e^{−x²/(2σ²)} on the integers) on
  an integer query of sensitivity Δ ([CKS]). The pair P = N_Z(0, σ²),
  Q = N_Z(Δ, σ²) has the loss L(x) = Δ(Δ − 2x)/(2σ²) (the normalising
  constants cancel for an integer shift), so

      δ(ε) = Σ_{x: L(x) > ε} P(x) − e^ε Q(x)
           = P[X <= X*] − e^ε P[X <= X* − Δ],   X* = ⌈Δ/2 − εσ²/Δ⌉ − 1

  ([CKS] Thm 7 in the form of its tails). A smaller shift d < Δ is no
  worse: the family is log-concave, so its likelihood ratio is monotone and
  the best tests are thresholds whose power grows with the shift. The sums
  run over x in [−N, N] with e^{−N²/(2σ²)} <= 1e-40; what is left out is
  bounded (f decreasing: Σ_{x>N} f(x) <= f(N+1)(1 + σ²/(N+1))) and added
  to the upper end. The masses are computed in extended precision (x86 long
  double, 64-bit mantissa) and the normaliser by an exactly rounded sum, so
  every δ comes with an interval whose width is round-off only.
  zCDP: ρ = Δ²/(2σ²) ([CKS] Thm 4 / Prop 5: D_α <= αΔ²/(2σ²), with equality
  at the orders where (α − 1)Δ is an integer — α = 2 among them — so no
  smaller ρ holds). It is *not* claimed to be Δ/σ-GDP.
* **Discrete Laplace** (geometric) with scale t: P(x) ∝ e^{−|x|/t}.
  Pure ε = Δ/t, exact; its losses take the Δ + 1 values (Δ − 2x)/t,
  x = 0..Δ (all x <= 0 share the top one, all x >= Δ the bottom one), so
  δ(ε) is a finite sum, exact.
* **Randomized response** over k values: keep the true value with
  probability e^{ε₀}/(e^{ε₀} + k − 1), else one of the k − 1 others
  uniformly. Losses ε₀, 0 (k > 2), −ε₀ with P-masses keep, (k−2)r, r
  (r = (1 − keep)/(k − 1)): δ(ε) = keep·(1 − e^{ε−ε₀}) for ε < ε₀.
* **ε₀-bounded range** (BR; [DDR], [DR19]): the loss of every neighbouring
  pair ranges over an interval of width ε₀. The exponential mechanism run
  the usual way for ε₀-DP (scores·ε₀/(2Δu), or ·ε₀/Δu for monotone scores),
  and report-noisy-max with Gumbel noise, are ε₀-BR. Every BR pair is
  dominated by the generalized randomized response with some t in [0, ε₀]
  (losses t and t − ε₀; [DDR] §4), whose δ(ε) is maximised at t = (ε₀ + ε)/2:

      δ(ε) = (e^{ε₀/2} − e^{ε/2})² / (e^{ε₀} − 1)   for 0 <= ε <= ε₀

  — exact for the class (attained by a BR pair). ε₀-BR ⇒ ε₀-DP and
  (ε₀²/8)-zCDP ([CR] Lemma 3.2, via Hoeffding's lemma).

References
----------
.. [CKS] C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for
   Differential Privacy. NeurIPS 2020, arXiv:2004.00010.
.. [GRS] A. Ghosh, T. Roughgarden, M. Sundararajan. Universally
   Utility-Maximizing Privacy Mechanisms. STOC 2009 (the geometric mechanism).
.. [W] S. Warner. Randomized response. JASA 1965; k-ary form: Kairouz, Oh,
   Viswanath, Extremal Mechanisms for Local Differential Privacy, 2014.
.. [DDR] J. Dong, D. Durfee, R. Rogers. Optimal Differential Privacy
   Composition for Exponential Mechanisms. ICML 2020, arXiv:1909.13830.
.. [DR19] D. Durfee, R. Rogers. Practical Differentially Private Top-k
   Selection with Pay-what-you-get Composition. NeurIPS 2019,
   arXiv:1905.04273 (bounded range).
.. [CR] M. Cesar, R. Rogers. Bounding, Concentrating, and Truncating:
   Unifying Privacy Loss Composition for Data Analytics. ALT 2021,
   arXiv:2004.07223.
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from decimal import Decimal, localcontext

import numpy as np

from ._arrays import all_scalar, checked, finish, log_expm1
from .errors import ValidationError
from .solve import bisect_predicate, secant, walk_and_bisect

__all__ = [
    # discrete Gaussian
    "dgauss_delta_at",
    "dgauss_delta_interval",
    "dgauss_epsilon_at",
    "dgauss_rho_of",
    "dgauss_sigma_for_rho",
    "dgauss_sigma",
    "dgauss_variance",
    # discrete Laplace
    "dlaplace_epsilon_of",
    "dlaplace_scale_for_epsilon",
    "dlaplace_delta_at",
    "dlaplace_epsilon_at",
    "dlaplace_variance",
    # randomized response
    "rr_keep_of",
    "rr_epsilon_of_keep",
    "rr_delta_at",
    "rr_epsilon_at",
    # bounded range (exponential mechanism, report-noisy-max with Gumbel noise)
    "br_delta_at",
    "br_epsilon_at",
    "br_rho_of",
    "br_epsilon0_for",
    "br_epsilon0_for_rho",
    "DGAUSS_TAIL",
    "DGAUSS_MAX_ATOMS",
]

_U = float(np.finfo(float).eps)
_LD = np.longdouble
_ULD = float(np.finfo(np.longdouble).eps)

#: Whether long double carries at least a 64-bit mantissa here (x86, or quad on aarch64 Linux).
EXTENDED = np.finfo(np.longdouble).nmant >= 63

#: The smallest σ the discrete Gaussian is accounted for.
DGAUSS_SIGMA_MIN = 0.05

#: The discrete Gaussian's sums stop where e^{−x²/(2σ²)} <= this (what is left is bounded and added).
DGAUSS_TAIL = 1e-40

#: Largest number of integers the discrete Gaussian's sums run over (about 26σ of them).
DGAUSS_MAX_ATOMS = 1 << 22

#: The normalising sum reads its terms in blocks of this many (see :class:`DGaussTable`).
_FSUM_BLOCK = 1 << 16

#: Without extended precision the masses are computed one by one in decimal: at most this many.
_DECIMAL_MAX_ATOMS = 1 << 16


# --------------------------------------------------------------------------
# Rounding helpers
# --------------------------------------------------------------------------


def _up(x, rel=0.0, abs_=0.0):
    """x raised by a relative and an absolute error bound, then by one ulp (so it is above the truth)."""
    x = np.asarray(x, dtype=np.float64)
    return np.nextafter(x + np.abs(x) * rel + abs_, np.inf)


def _down(x, rel=0.0, abs_=0.0):
    x = np.asarray(x, dtype=np.float64)
    return np.nextafter(x - np.abs(x) * rel - abs_, -np.inf)


def _ld_up(x) -> np.ndarray:
    """A long double rounded up to a double."""
    x = np.asarray(x, dtype=_LD)
    d = x.astype(np.float64)
    return np.where(d.astype(_LD) < x, np.nextafter(d, np.inf), d)


def _ld_down(x) -> np.ndarray:
    x = np.asarray(x, dtype=_LD)
    d = x.astype(np.float64)
    return np.where(d.astype(_LD) > x, np.nextafter(d, -np.inf), d)


def _two_prod(a, b):
    """(p, e) with p + e = a·b exactly (Dekker; no overflow assumed)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    p = a * b
    c = 134217729.0  # 2^27 + 1
    with np.errstate(over="ignore", invalid="ignore"):
        ah = a * c
        ah = ah - (ah - a)
        al = a - ah
        bh = b * c
        bh = bh - (bh - b)
        bl = b - bh
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, np.nan_to_num(e)


def _div_up(a, b):
    """a/b (a, b > 0) rounded up: the smallest double r with r·b >= a, checked exactly."""
    r = np.asarray(a, np.float64) / np.asarray(b, np.float64)
    p, e = _two_prod(r, b)
    low = (p < a) | ((p == a) & (e < 0))
    return np.where(low, np.nextafter(r, np.inf), r)


def _div_down(a, b):
    r = np.asarray(a, np.float64) / np.asarray(b, np.float64)
    p, e = _two_prod(r, b)
    high = (p > a) | ((p == a) & (e > 0))
    return np.where(high, np.nextafter(r, -np.inf), r)


def _integer(name, value, low=1):
    return checked(name, value, low=low, low_open=False, high=2.0**31, integer=True)


# --------------------------------------------------------------------------
# Discrete Gaussian
# --------------------------------------------------------------------------


class DGaussTable:
    """The masses of N_Z(0, σ²) on x = −N..N and their prefix sums, with error bounds.

    ``p`` (long double) are the masses f(x)/Z, each within ``rel`` (relative)
    of the truth; ``tail`` bounds the mass beyond N on each side. ``cum`` are
    the prefix sums (block-wise, so their round-off is at most ``cum_rel``
    relative). ``p64`` are the masses rounded to the nearest double (within
    ``rel64``).
    """

    def __init__(self, sigma: float):
        self.sigma = float(sigma)
        n_half = _dg_half_width(self.sigma)
        n_atoms = 2 * n_half + 1
        if n_atoms > DGAUSS_MAX_ATOMS or (not EXTENDED and n_atoms > _DECIMAL_MAX_ATOMS):
            cap = (DGAUSS_MAX_ATOMS if EXTENDED else _DECIMAL_MAX_ATOMS) / (2 * n_half / self.sigma)
            raise ValidationError(
                "sigma",
                self.sigma,
                f"at most {cap:.4g} for the discrete Gaussian (its sums run over {n_atoms} integers; "
                "for larger σ use the zCDP bound or the continuous Gaussian's as an approximation)",
            )
        self.N = n_half
        x = np.arange(-n_half, n_half + 1, dtype=np.int64)
        self.x = x
        if EXTENDED:
            s2 = _LD(self.sigma) * _LD(self.sigma)
            xl = x[n_half:].astype(_LD)  # (f is even: computed for x >= 0 and mirrored, the same values)
            t = (xl * xl) / (2 * s2)
            f = np.exp(-t)
            f = np.concatenate([f[:0:-1], f])
            # exponent: x² exact, σ² and the division rounded (3 u_ld relative); exp to 1 u_ld.
            t_max = float(t.max())
            f_rel = (3.0 * t_max + 4.0) * _ULD
            del xl, t  # (the temporaries of a table of millions of atoms go as soon as they are used)
        else:  # pragma: no cover - exercised by monkeypatching EXTENDED in the tests
            f = _decimal_gauss(x, self.sigma)
            f_rel = 0.5 * _U
        # Z = Σ f: the long doubles split exactly into two doubles each, summed exactly rounded — over x >= 0,
        # the terms at x > 0 doubled (exact): the same real sum as over every x, so the same rounding of it.
        hi = np.asarray(f, dtype=np.float64)
        lo = np.asarray(f - hi.astype(f.dtype), dtype=np.float64)
        # (fsum reads its terms lazily: a block of them at a time as Python floats, not millions at once.)
        tail_terms = (
            (2.0 * part[k : k + _FSUM_BLOCK]).tolist()
            for part in (hi[n_half + 1 :], lo[n_half + 1 :])
            for k in range(0, part.size, _FSUM_BLOCK)
        )
        terms = itertools.chain([float(hi[n_half]), float(lo[n_half])], itertools.chain.from_iterable(tail_terms))
        z = math.fsum(terms)
        del hi, lo
        n1 = float(n_half + 1)
        tail_f = math.exp(-(n1 * n1) / (2.0 * self.sigma * self.sigma)) * (1.0 + self.sigma**2 / n1) * (1 + 1e-12)
        # Z_true in [z(1 − f_rel − u/2), z(1 + f_rel + u/2) + 2·tail_f]
        z_rel = f_rel + 0.5 * _U + 2.0 * tail_f / z
        ld = f.dtype
        self.p = f / ld.type(z)
        del f
        self.rel = f_rel + z_rel + 4.0 * _ULD + (0.0 if EXTENDED else 2 * _U)
        self.tail = tail_f  # Z >= 1 (the x = 0 term): the mass beyond N on each side is at most tail_f
        self.p64 = np.asarray(self.p, dtype=np.float64)
        self.rel64 = self.rel + 0.5 * _U
        # Prefix sums by blocks of B: round-off at most (B + n/B + 2) u_ld relative (positive terms).
        b = 1024
        n = self.p.size
        m = -(-n // b)
        padded = np.zeros(m * b, dtype=ld)
        padded[:n] = self.p
        blocks = np.cumsum(padded.reshape(m, b), axis=1)
        offs = np.concatenate([np.zeros(1, dtype=ld), np.cumsum(blocks[:, -1])[:-1]])
        blocks += offs[:, None]
        del padded
        self.cum = blocks.reshape(-1)[:n]
        self.cum_rel = (b + m + 2) * (_ULD if EXTENDED else _U)

    def _q_sums(self, sens: int):
        """S(X) = Σ_{x <= X} p(x)·e^{−Δ(X − x)/σ²} for every table point X, and its relative round-off.

        Since Q(x) = P(x − Δ) = P(x)·e^{−ℓ(x)} with ℓ(x) = Δ(Δ − 2x)/(2σ²), e^ε·Q[x <= X] over the table
        is e^{ε − ℓ(X)}·S(X): the Q-masses of the atoms above a threshold never have to be represented
        (they underflow even a long double where Δ/σ ≳ 150, while e^ε times them is of the order of
        their P-masses). A recurrence of positive terms S(X) = p(X) + r·S(X − 1), r = e^{−Δ/σ²}: each
        step's round-off (two operations and r's own rounding) adds at most 3 u_ld relative, so S(X) is
        within (3n + 2) u_ld of the sum it stands for (plus ``rel``, the masses' own). Cached per Δ."""
        cache = self.__dict__.setdefault("_q_cache", {})
        if sens not in cache:
            ld = self.p.dtype
            r = np.exp(-ld.type(sens) / (ld.type(self.sigma) * ld.type(self.sigma)))
            if len(cache) >= 4:
                cache.pop(next(iter(cache)))
            cache[sens] = _first_order_sums(self.p, r)
        u = _ULD if EXTENDED else _U
        return cache[sens], (3 * self.p.size + 2) * u

    def delta_bounds(self, eps: np.ndarray, sens: int):
        """[lower, upper] on δ(ε) of the pair N_Z(0, σ²) vs N_Z(Δ, σ²) (ε >= 0), as doubles.

        δ(ε) = Σ_{ℓ(x) > ε} P(x)(1 − e^{ε − ℓ(x)}), every term in [0, P(x)]: over the table's atoms above
        ε (x <= X) it is cp − e^{ε − ℓ(X)}·S(X) (:meth:`_q_sums`); the atoms beyond −N add at most the
        tail, and none is negative, so the table's sum is a lower bound and the tail goes to the upper."""
        eps = np.asarray(eps, dtype=np.float64)
        lo, hi = _table_bounds([(np.arange(eps.size), self, int(sens))], eps.reshape(-1))
        return lo.reshape(eps.shape), hi.reshape(eps.shape)


def _table_bounds(groups: list, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`DGaussTable.delta_bounds` for cases of several tables at once: ``groups`` lists (indices into
    ``eps``, table, Δ); the arithmetic runs over all cases together (the same operations, case by case, as one
    table's)."""
    return _Cases(groups, eps.size).bounds(eps)


class _Cases:
    """Cases of several tables, each with its Δ (``groups`` as for :func:`_table_bounds`), laid out once for many
    reads: every case's table constants, and the tables' masses, prefix sums and Q-sums in one array each (a case
    reads them at its table's offset), so that a read at new ε is whole-array arithmetic, without a pass over the
    tables (a search reads the same cases some fifty times)."""

    def __init__(self, groups: list, n: int):
        ld = groups[0][1].cum.dtype
        self.ld = ld
        self.size, self.big_n, self.off = (np.empty(n, np.int64) for _ in range(3))
        self.sigma, self.sens, self.rel, self.cum_rel, self.s_rel, self.tail = (np.empty(n) for _ in range(6))
        self.two_s2_ld = np.empty(n, dtype=ld)
        cums, sums, ps, at = [], [], [], 0
        for idx, tab, dv in groups:
            S, sr = tab._q_sums(dv)
            cums.append(tab.cum)
            sums.append(S)
            ps.append(tab.p)
            self.off[idx] = at
            at += tab.p.size
            self.size[idx], self.big_n[idx], self.sigma[idx], self.sens[idx] = tab.p.size, tab.N, tab.sigma, dv
            self.rel[idx], self.cum_rel[idx], self.s_rel[idx], self.tail[idx] = tab.rel, tab.cum_rel, sr, tab.tail
            self.two_s2_ld[idx] = 2 * ld.type(tab.sigma) ** 2
        self.cum, self.S, self.p = (np.concatenate(a) if len(a) > 1 else a[0] for a in (cums, sums, ps))

    def bounds(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) δ of every case at its ε (one per case)."""
        ld, size, big_n, off = self.ld, self.size, self.big_n, self.off
        sigma, sens, rel, cum_rel, s_rel, tail = self.sigma, self.sens, self.rel, self.cum_rel, self.s_rel, self.tail
        two_s2_ld = self.two_s2_ld
        s2 = sigma * sigma
        xs = sens / 2.0 - eps * s2 / sens
        with np.errstate(invalid="ignore", over="ignore"):
            X = np.ceil(xs) - 1.0
        X = np.clip(np.nan_to_num(X, nan=-np.inf), -big_n - 1, big_n)
        j = (X + big_n).astype(np.int64)  # index of X; −1: no atom above ε
        some = j >= 0
        jg = off + np.maximum(j, 0)
        cum_j, s_j = self.cum[jg], self.S[jg]
        p_at = tuple(self.p[off + np.clip(j + k, 0, size - 1)] for k in (0, 1))
        cp = np.where(some, cum_j, ld.type(0))  # Σ_{i<=j} p_i (0 where j = −1)
        sq = np.where(some, s_j, ld.type(0))
        sens_ld = sens.astype(ld)
        ell_x = sens_ld * (sens_ld - 2 * X.astype(ld)) / two_s2_ld
        expo = np.where(some, eps.astype(ld) - ell_x, ld.type(0))  # < 0: X is above ε
        with np.errstate(over="ignore", under="ignore"):
            eq = np.exp(np.minimum(expo, ld.type(0))) * sq
        dc = cp - eq
        # cp and S carry the masses' error and their sums'; e^{ε − ℓ(X)} that of its exponent's two
        # roundings and the exp (ℓ in long double: a few u_ld of |ℓ|) and the product.
        exp_rel = (4 * (np.abs(eps) + np.abs(ell_x)) + 4) * _ULD
        err = (rel + cum_rel + 4 * _ULD) * cp + (rel + s_rel + exp_rel + 4 * _ULD) * eq
        # The atoms next to the threshold may be on the wrong side of it by round-off (their losses
        # within w = 8u(|ℓ| + |ε| + 1) of ε): either way their term is within 2w of their mass.
        for k, jj in enumerate((j, j + 1)):
            ok = (jj >= 0) & (jj < size)
            xj = np.where(ok, jj - big_n, 0).astype(np.float64)
            ell = sens * (sens - 2.0 * xj) / (2.0 * s2)
            w = 8 * _U * (np.abs(ell) + np.abs(eps) + 1)
            near = ok & (np.abs(ell - eps) <= w)
            err = err + np.where(near, p_at[k] * (2 * w), 0)
        hi = _ld_up(dc + err + tail)
        lo = _ld_down(dc - err)
        return np.maximum(lo, 0.0), np.minimum(hi, 1.0)


def _decimal_gauss(x, sigma):  # pragma: no cover - platforms without extended long double
    with localcontext() as ctx:
        ctx.prec = 40
        s2 = Decimal(sigma) * Decimal(sigma) * 2
        cache = {}
        out = np.empty(x.size)
        for i, v in enumerate(np.abs(x).tolist()):
            if v not in cache:
                cache[v] = float((-(Decimal(v) * Decimal(v)) / s2).exp())
            out[i] = cache[v]
    return out


#: The tables kept for reuse hold at most this many atoms in all (the newest is always kept): a table
#: of DGAUSS_MAX_ATOMS takes about 300 MB, and a calibration builds one per σ it tries.
TABLE_CACHE_ATOMS = 2 * DGAUSS_MAX_ATOMS
#: ... and at most this many tables.
TABLE_CACHE_SIZE = 16
#: A calibration reads its rows' tables (one σ each) together, at most this many atoms at once (about 100 MB).
READ_ATOMS = 1 << 20


class _TableCache:
    """The tables of N_Z(0, σ²) by σ, least recently used evicted first (see TABLE_CACHE_ATOMS)."""

    def __init__(self) -> None:
        self._tables: OrderedDict[float, DGaussTable] = OrderedDict()

    def __call__(self, sigma: float) -> DGaussTable:
        key = float(sigma)
        tab = self._tables.get(key)
        if tab is not None:
            self._tables.move_to_end(key)
            return tab
        # Room is made before the new table is built (the oldest go first), so that the tables kept and the one
        # being built (about 500 MB at DGAUSS_MAX_ATOMS while it is formed) are within the budget together.
        n_new = 2 * _dg_half_width(key) + 1
        while (
            n_new <= DGAUSS_MAX_ATOMS
            and self._tables
            and (
                len(self._tables) >= TABLE_CACHE_SIZE
                or sum(t.p.size for t in self._tables.values()) + n_new > TABLE_CACHE_ATOMS
            )
        ):
            self._tables.popitem(last=False)
        tab = DGaussTable(key)
        self._tables[key] = tab
        return tab

    def cache_clear(self) -> None:
        self._tables.clear()


#: The (cached) table of N_Z(0, σ²): ``dgauss_table(σ)``.
dgauss_table = _TableCache()


def _dg_half_width(sigma: float) -> int:
    """N of the table of N_Z(0, σ²): the integers −N..N carry all but DGAUSS_TAIL of its mass."""
    return int(math.ceil(sigma * math.sqrt(2.0 * math.log(1.0 / DGAUSS_TAIL)))) + 1


def _table_runs(sigmas: np.ndarray) -> list[np.ndarray]:
    """The distinct σ in runs whose tables the cache keeps together (at most TABLE_CACHE_SIZE, and
    TABLE_CACHE_ATOMS atoms in all, or one σ): a search over many σ builds each table once, not once a round."""
    runs: list[list[float]] = []
    atoms = 0
    for v in np.unique(sigmas):
        n = 2 * _dg_half_width(float(v)) + 1
        if not runs or len(runs[-1]) >= TABLE_CACHE_SIZE or atoms + n > TABLE_CACHE_ATOMS:
            runs.append([])
            atoms = 0
        runs[-1].append(float(v))
        atoms += n
    return [np.array(r) for r in runs]


def _atom_chunks(sigmas: np.ndarray) -> list[np.ndarray]:
    """Consecutive index ranges of ``sigmas`` whose tables hold at most READ_ATOMS atoms in all (or one σ): cases
    read together (:class:`_Cases` lays out every table of a read at once)."""
    sizes = 2 * np.array([_dg_half_width(float(v)) for v in sigmas], dtype=np.int64) + 1
    out, start, atoms = [], 0, 0
    for i, n in enumerate(sizes.tolist()):
        if i > start and atoms + n > READ_ATOMS:
            out.append(np.arange(start, i))
            start, atoms = i, 0
        atoms += n
    if sigmas.size:
        out.append(np.arange(start, sigmas.size))
    return out


def _dg_args(sigma, sensitivity):
    s = checked("sigma", sigma, low=0)
    if (s < DGAUSS_SIGMA_MIN).any():
        raise ValidationError(
            "sigma", float(s[s < DGAUSS_SIGMA_MIN].flat[0]), f"at least {DGAUSS_SIGMA_MIN:g} for the discrete Gaussian"
        )
    d = _integer("sensitivity", sensitivity)
    return s, d


def _dg_delta(s, d, e):
    """(lower, upper) δ at broadcast arrays σ, Δ, ε: one table per σ, all cases' arithmetic at once."""
    s, d, e = np.broadcast_arrays(s, d, e)
    shape = s.shape
    s, d, e = (np.asarray(a, dtype=np.float64).reshape(-1) for a in (s, d, e))
    if s.size == 0:
        return np.empty(shape), np.empty(shape)
    lo, hi = np.empty(s.shape), np.empty(s.shape)
    for part in _atom_chunks(s):  # (the tables of a chunk are laid out together: at most READ_ATOMS atoms)
        lo[part], hi[part] = _dg_cases(s[part], d[part]).bounds(e[part])
    return lo.reshape(shape), hi.reshape(shape)


def _dg_cases(s: np.ndarray, d: np.ndarray) -> _Cases:
    """The cases of 1-D arrays σ, Δ (one table per σ), laid out for reads at any ε (:class:`_Cases`)."""
    # The cases of each (σ, Δ), in the order of σ then Δ (one sort, not a pass over all cases per pair).
    pairs, which = np.unique(np.stack([s, d], axis=1), axis=0, return_inverse=True)
    order = np.argsort(which.reshape(-1), kind="stable")
    cuts = np.searchsorted(which.reshape(-1)[order], np.arange(pairs.shape[0] + 1))
    groups = [(order[cuts[g] : cuts[g + 1]], dgauss_table(float(sv)), int(dv)) for g, (sv, dv) in enumerate(pairs)]
    return _Cases(groups, s.size)


def dgauss_delta_interval(sigma, epsilon, sensitivity=1):
    """[lower, upper] on the exact δ(ε) of the discrete Gaussian mechanism ([CKS] Thm 7).

    The width is round-off only (about 1e-15 relative where δ is not far
    below the tail masses it is the difference of).
    """
    scalar = all_scalar(sigma, epsilon, sensitivity)
    s, d = _dg_args(sigma, sensitivity)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    lo, hi = _dg_delta(s, d, e)
    return finish(lo, hi, scalar=scalar)


def dgauss_delta_at(sigma, epsilon, sensitivity=1):
    """Exact δ(ε) of the discrete Gaussian N_Z(0, σ²) on an integer query of sensitivity Δ, rounded up.

    Examples
    --------
    >>> round(dgauss_delta_at(2.0, 1.0), 6)
    0.007249
    """
    scalar = all_scalar(sigma, epsilon, sensitivity)
    s, d = _dg_args(sigma, sensitivity)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(_dg_delta(s, d, e)[1], scalar=scalar)


def dgauss_epsilon_at(sigma, delta, sensitivity=1, *, rtol: float = 1e-12, lower: bool = False):
    """Smallest ε (rounded up, to ``rtol``) at which the discrete Gaussian is (ε, δ)-DP.

    A bisection that keeps only points where the certified upper δ was at
    most the target, so the answer is a sound upper bound within ``rtol`` of
    the exact ε. ``lower``: a certified lower end instead — the largest ε found
    where the certified lower δ is above the target (0 where it is not at 0).
    """
    scalar = all_scalar(sigma, delta, sensitivity)
    s, d = _dg_args(sigma, sensitivity)
    dl = checked("delta", delta, low=0, high=1)
    if (dl < 1e-30).any():
        raise ValidationError("delta", float(dl[dl < 1e-30].flat[0]), "at least 1e-30 for the discrete Gaussian")
    s, d, dl = (np.array(a, dtype=float) for a in np.broadcast_arrays(s, d, dl))
    for v in s.reshape(-1):  # a σ past the tables' range is refused as before, the first in the grid's order
        n = 2 * _dg_half_width(float(v)) + 1
        if n > DGAUSS_MAX_ATOMS or (not EXTENDED and n > _DECIMAL_MAX_ATOMS):
            dgauss_table(float(v))  # (raises, naming σ and its range)
    out = np.empty(s.shape)
    # σ by runs whose tables stay cached through the search (each case's search is its own: the same
    # digits however the cases are grouped).
    for run in _table_runs(s):
        sel = np.isin(s, run)
        out[sel] = _dg_epsilon_search(s[sel], d[sel], dl[sel], rtol, lower)
    return finish(out, scalar=scalar)


def _dg_epsilon_search(s: np.ndarray, d: np.ndarray, dl: np.ndarray, rtol: float, lower: bool = False) -> np.ndarray:
    """:func:`dgauss_epsilon_at` for 1-D arrays of cases."""

    cases = _dg_cases(s, d)  # (each case's search still its own: the same digits however they are grouped)
    # The largest loss kept is Δ(Δ + 2N)/(2σ²); above it δ is the tail alone (<= 1e-40 < δ).
    n_half = np.array([dgauss_table(float(v)).N for v in s])
    top = _up(d * (d + 2.0 * n_half) / (2.0 * s * s), rel=1e-12)
    if lower:
        return _lower_end(lambda e: cases.bounds(e)[0] > dl, top, rtol)

    def pred(e):
        return cases.bounds(e)[1] <= dl

    zero = pred(np.zeros(s.shape))
    ok, bad = bisect_predicate(pred, top, np.zeros(s.shape), rtol=rtol, atol=1e-300)
    ok = np.where(zero, 0.0, ok)
    if not pred(ok).all():  # pragma: no cover - the bracket's top always holds
        raise ArithmeticError("discrete Gaussian ε search failed")
    return ok


def dgauss_rho_of(sigma, sensitivity=1):
    """ρ = Δ²/(2σ²), rounded up: the discrete Gaussian is ρ-zCDP ([CKS] Thm 4), and no smaller ρ."""
    scalar = all_scalar(sigma, sensitivity)
    s, d = _dg_args(sigma, sensitivity)
    return finish(_up(d * d / (2.0 * s * s), rel=2 * _U), scalar=scalar)


def dgauss_sigma_for_rho(rho, sensitivity=1):
    """σ = Δ/√(2ρ), rounded up and re-checked: the smallest discrete Gaussian that is ρ-zCDP."""
    scalar = all_scalar(rho, sensitivity)
    r = checked("rho", rho, low=0)
    d = _integer("sensitivity", sensitivity)
    r, d = np.broadcast_arrays(r, d)
    sig = _up(d / np.sqrt(2.0 * r), rel=2 * _U)
    for _ in range(8):  # re-check ρ at σ (rounded up) against the target
        bad = _up(d * d / (2.0 * sig * sig), rel=2 * _U) > r
        if not bad.any():
            break
        sig = np.where(bad, np.nextafter(sig, np.inf), sig)
    return finish(sig, scalar=scalar)


def dgauss_sigma(epsilon, delta, sensitivity=1, *, rtol: float = 1e-9):
    """Smallest σ (to ``rtol``, rounded up) for which the discrete Gaussian is (ε, δ)-DP.

    Starts from the continuous Gaussian's analytic σ and searches σ (secant steps in log σ, each
    point checked) with the certified upper δ of :func:`dgauss_delta_at`: the returned σ was checked
    (δ at it is at most the target); a point within ``rtol`` below it was not.
    """
    from . import gaussian

    scalar = all_scalar(epsilon, delta, sensitivity)
    e = checked("epsilon", epsilon, low=0)
    dl = checked("delta", delta, low=0, high=1)
    if (dl < 1e-30).any():
        raise ValidationError("delta", float(dl[dl < 1e-30].flat[0]), "at least 1e-30 for the discrete Gaussian")
    d = _integer("sensitivity", sensitivity)
    e, dl, d = np.broadcast_arrays(e, dl, d)
    e, dl, d = e.reshape(-1), dl.reshape(-1), d.reshape(-1)
    guess = np.maximum(np.asarray(gaussian.sigma_analytic(e, dl, d)), DGAUSS_SIGMA_MIN)
    # In x = −log σ, from the continuous Gaussian's σ: steps of 2%, 4%, 8%, … until the target is
    # bracketed, then the secant of log δ (nearly straight in x; every point is evaluated, and the answer
    # is one where the certified δ met the target) — a handful of tables a row instead of ~30 bisections.
    tol = float(np.log1p(rtol))
    x_hi = -math.log(DGAUSS_SIGMA_MIN)

    def sig_of(x):  # (the end of the range is σ = 0.05 itself, not e^{log 20}'s rounding of it)
        x = np.asarray(x, float)
        return np.where(x >= x_hi, DGAUSS_SIGMA_MIN, np.maximum(np.exp(-x), DGAUSS_SIGMA_MIN))

    def ev(rows, x):  # the certified δ of each row at its own σ (one table per σ; rows read together in chunks)
        rows, sig = np.asarray(rows, dtype=np.int64), np.asarray(sig_of(x), float).reshape(-1)
        val = np.empty(sig.shape)
        for part in _atom_chunks(sig):
            val[part] = _dg_delta(sig[part], d[rows[part]], e[rows[part]])[1]
        return val, np.full(val.shape, None, dtype=object)

    ok, _, _, _, _, _ = walk_and_bisect(
        ev,
        dl,
        np.minimum(-np.log(guess), x_hi),
        np.full(e.size, -np.inf),
        np.full(e.size, x_hi),
        lambda x, k, direction, rows: x + direction * math.log(1.02) * 2.0**k,
        lambda a, b: 0.5 * (a + b),
        lambda a, b: np.abs(b - a) <= tol,
        interp=secant(lambda a, b: tol, log=True),
    )
    out = sig_of(ok)
    return finish(out.reshape(e.shape), scalar=scalar)


def dgauss_variance(sigma):
    """Var of N_Z(0, σ²), rounded up (it is below σ², [CKS] Cor 9)."""
    scalar = all_scalar(sigma)
    s = checked("sigma", sigma, low=0)
    if (s < DGAUSS_SIGMA_MIN).any():
        raise ValidationError(
            "sigma", float(s[s < DGAUSS_SIGMA_MIN].flat[0]), f"at least {DGAUSS_SIGMA_MIN:g} for the discrete Gaussian"
        )
    out = np.empty(s.shape)
    for sv in np.unique(s):
        tab = dgauss_table(float(sv))
        xl = tab.x.astype(tab.p.dtype)
        v = np.sum(xl * xl * tab.p)
        # the mass beyond N: Σ_{x>N} x² f(x) <= f(N+1)(N+1)²(1 + ...) — bounded crudely by 2·tail·(N+1)²·4
        extra = 8.0 * tab.tail * (tab.N + 1) ** 2
        out[s == sv] = _up(_ld_up(v), rel=tab.rel + (tab.p.size + 8) * _ULD, abs_=extra)
    return finish(np.minimum(out, s * s), scalar=scalar)


# --------------------------------------------------------------------------
# Discrete Laplace (geometric mechanism)
# --------------------------------------------------------------------------


def _dl_args(scale, sensitivity):
    return checked("scale", scale, low=0), _integer("sensitivity", sensitivity)


def dlaplace_epsilon_of(scale, sensitivity=1):
    """Pure ε = Δ/t of the discrete Laplace mechanism with scale t (exact, rounded up)."""
    scalar = all_scalar(scale, sensitivity)
    t, d = _dl_args(scale, sensitivity)
    t, d = np.broadcast_arrays(t, d)
    return finish(_div_up(d, t), scalar=scalar)


def dlaplace_scale_for_epsilon(epsilon, sensitivity=1):
    """Scale t = Δ/ε (rounded up, so Δ/t <= ε exactly): the discrete Laplace is then ε-DP.

    Examples
    --------
    >>> dlaplace_scale_for_epsilon(0.5, 2)
    4.0
    """
    scalar = all_scalar(epsilon, sensitivity)
    e = checked("epsilon", epsilon, low=0)
    d = _integer("sensitivity", sensitivity)
    e, d = np.broadcast_arrays(e, d)
    return finish(_div_up(d, e), scalar=scalar)


def dlaplace_atoms(scale: float, sens: int):
    """Losses (Δ − 2x)/t, x = 0..Δ, their P- and Q-masses in long double (each within 8 u_ld
    (2 + Δ/t) relative; x = 0 collects all x <= 0, x = Δ all x >= Δ), and a bound on each loss's
    round-off (0 where the division was exact)."""
    return tuple(a[0] for a in _dlaplace_atom_rows(np.array([float(scale)]), sens))


def _dlaplace_atom_rows(scales: np.ndarray, sens: int):
    """:func:`dlaplace_atoms` for each scale of a 1-D array, one row each (the same operations, element by
    element)."""
    t = scales.astype(_LD)[:, None]
    x = np.arange(sens + 1, dtype=np.int64).astype(_LD)[None, :]
    inv = _LD(1) / t
    a = np.exp(-inv)
    one_m_a = -np.expm1(-inv)
    p = one_m_a * np.exp(-x * inv) / (1 + a)
    p[:, :1] = 1 / (1 + a)
    p[:, -1:] = np.exp(-_LD(sens) * inv) / (1 + a)
    num = sens - 2 * np.arange(sens + 1, dtype=np.float64)
    ell = num[None, :] / scales[:, None]
    q = p[:, ::-1].copy()  # Q = P shifted by Δ: its mass at x is P's at Δ − x
    prod, low = _two_prod(ell, scales[:, None])
    exact = (prod == num[None, :]) & (low == 0)
    ell_err = np.where(exact, 0.0, 0.5 * _U * np.abs(ell))  # one correctly rounded division (half an ulp), or none
    return ell, p, q, ell_err


def _finite_atoms_delta(ell, p, q, eps, rel, ell_err):
    """[lower, upper] δ(ε) = Σ_{ℓ > ε} p − e^ε q of finitely many atoms, one row of atoms per ε (long double
    masses within ``rel``, one per row; computed losses within ``ell_err`` of the exact ones)."""
    eps = np.asarray(eps, float)
    above = ell > eps[:, None]
    ee = np.exp(eps.astype(_LD))[:, None]
    terms = np.where(above, p - ee * q, 0)
    gross = np.where(above, p + ee * q, 0)
    dc = terms.sum(axis=1)
    err = (gross.sum(axis=1)) * ((rel + (ell.shape[1] + 4) * _ULD) + 2 * _ULD * (1 + np.abs(eps)))
    # atoms within their losses' round-off w of ε may be on the wrong side: their term is within 2w of their mass
    near = np.abs(ell - eps[:, None]) <= ell_err
    err = err + np.where(near, p * (2 * ell_err), 0).sum(axis=1)
    lo = _ld_down(dc - err)
    hi = _ld_up(dc + err)
    return np.maximum(lo, 0.0), np.minimum(hi, 1.0)


#: :func:`_dl_delta` forms (cases × atoms) arrays of at most about this many cells at once.
_DL_CELLS = 1 << 20


def _dl_delta(t, d, e):
    """[lower, upper] δ(ε) of the discrete Laplace at each (scale t, sensitivity Δ, ε): the cases of one Δ
    together, in chunks (one row of Δ + 1 atoms per case, each distinct scale's atoms formed once)."""
    t, d, e = np.broadcast_arrays(t, d, e)
    shape = t.shape
    tf, df, ef = (np.asarray(v, float).reshape(-1) for v in (t, d, e))
    lo = np.empty(tf.shape)
    hi = np.empty(tf.shape)
    for dv in np.unique(df):
        idx = np.flatnonzero(df == dv)
        step = max(1, _DL_CELLS // (int(dv) + 1))
        for s in range(0, idx.size, step):
            ii = idx[s : s + step]
            ts, back = np.unique(tf[ii], return_inverse=True)
            ell, p, q, ell_err = _dlaplace_atom_rows(ts, int(dv))
            rel = 8 * _ULD * (2 + int(dv) / ts)
            lo[ii], hi[ii] = _finite_atoms_delta(ell[back], p[back], q[back], ef[ii], rel[back], ell_err[back])
    return lo.reshape(shape), hi.reshape(shape)


def dlaplace_delta_at(scale, epsilon, sensitivity=1):
    """Exact δ(ε) of the discrete Laplace mechanism (a finite sum over Δ + 1 losses), rounded up."""
    scalar = all_scalar(scale, epsilon, sensitivity)
    t, d = _dl_args(scale, sensitivity)
    if (d > 4096).any():
        raise ValidationError("sensitivity", float(d[d > 4096].flat[0]), "at most 4096 for the discrete Laplace δ(ε)")
    e = checked("epsilon", epsilon, low=0, low_open=False)
    return finish(_dl_delta(t, d, e)[1], scalar=scalar)


def dlaplace_epsilon_at(scale, delta, sensitivity=1, *, rtol: float = 1e-12, lower: bool = False):
    """Smallest ε (rounded up, to ``rtol``) at which the discrete Laplace mechanism is (ε, δ)-DP; ``lower``: a
    certified lower end instead (the largest ε found where the certified lower δ is above the target)."""
    scalar = all_scalar(scale, delta, sensitivity)
    t, d = _dl_args(scale, sensitivity)
    if (d > 4096).any():
        raise ValidationError("sensitivity", float(d[d > 4096].flat[0]), "at most 4096 for the discrete Laplace δ(ε)")
    dl = checked("delta", delta, low=0, high=1, low_open=False)
    t, d, dl = np.broadcast_arrays(t, d, dl)
    top = _div_up(d, t)  # δ(Δ/t) = 0
    if lower:
        return finish(_lower_end(lambda e: _dl_delta(t, d, e)[0] > dl, top, rtol), scalar=scalar)

    def pred(e):
        return _dl_delta(t, d, e)[1] <= dl

    ok, _ = bisect_predicate(pred, top, np.zeros(t.shape), rtol=rtol, atol=1e-300)
    ok = np.where(pred(np.zeros(t.shape)), 0.0, ok)
    return finish(ok, scalar=scalar)


def dlaplace_variance(scale):
    """Var = 2a/(1 − a)², a = e^{−1/t}, of the discrete Laplace noise (rounded up)."""
    scalar = all_scalar(scale)
    t = checked("scale", scale, low=0).astype(_LD)
    a = np.exp(-1 / t)
    v = 2 * a / np.expm1(-1 / t) ** 2
    return finish(_up(_ld_up(v), rel=64 * _ULD * (1 + float(np.max(1 / t)))), scalar=scalar)


def _lower_end(above, top: np.ndarray, rtol: float) -> np.ndarray:
    """The largest ε in [0, top] found where ``above(ε)`` (the certified lower δ is above the target) held, by
    bisection; 0 where it does not hold at 0 (no claim beyond ε >= 0). Every nonzero answer was checked."""
    zero = np.zeros(np.shape(top))
    at0 = above(zero)
    ok, _ = bisect_predicate(above, zero, top, rtol=rtol, atol=1e-300)
    return np.where(at0 & above(ok), ok, 0.0)


#: A closed form's error bound, relative to its value, above which it is computed again in decimal (an exact
#: value is within 2^-46 of the truth, as the README says).
EXACT_REL = 2.0**-47
#: ... at this many digits (the cancellation of ε₀ + log(…) loses log10(ε₀/ε) of them).
_EXACT_DIGITS = 80


def _cancelled(v, err, lo, hi, exact):
    """(lo, hi) where the double-precision value v (error bound ``err``) cancelled past EXACT_REL of itself:
    ``exact(i)`` (i a flat index) in decimal at _EXACT_DIGITS digits (every operation correctly rounded there;
    None: the value is −∞), rounded to the nearest double and moved an ulp to each side. Unchanged elsewhere."""
    with np.errstate(invalid="ignore"):
        redo = np.flatnonzero((np.isfinite(v) & (err > EXACT_REL * np.abs(v))).reshape(-1))
    if not redo.size:
        return lo, hi
    lo, hi = np.array(lo, float).reshape(-1), np.array(hi, float).reshape(-1)
    shape = np.shape(v)
    with localcontext() as ctx:
        ctx.prec = _EXACT_DIGITS
        for i in redo.tolist():
            val = exact(i)
            x = -np.inf if val is None else float(val)
            lo[i], hi[i] = (0.0, 0.0) if x <= 0 else (np.nextafter(x, -np.inf), np.nextafter(x, np.inf))
    return lo.reshape(shape), hi.reshape(shape)


# --------------------------------------------------------------------------
# Randomized response (k values)
# --------------------------------------------------------------------------


def _rr_args(epsilon0, k):
    return checked("epsilon0", epsilon0, low=0), _integer("k", k, low=2)


def rr_masses(epsilon0: float, k: int):
    """(keep, r) in long double: keep = e^{ε₀}/(e^{ε₀} + k − 1), r = 1/(e^{ε₀} + k − 1) (within 8 u_ld (1 + ε₀))."""
    e = _LD(epsilon0)
    em = np.exp(-e)
    den = 1 + (k - 1) * em
    return 1 / den, em / den


def rr_keep_of(epsilon0, k):
    """Keep-probability e^{ε₀}/(e^{ε₀} + k − 1) for ε₀-DP randomized response over k values, rounded
    down (keeping less is more private) and re-checked: :func:`rr_epsilon_of_keep` at it is <= ε₀."""
    scalar = all_scalar(epsilon0, k)
    e, kk = _rr_args(epsilon0, k)
    e, kk = np.broadcast_arrays(e, kk)
    keep = np.empty(e.shape)
    for idx in np.ndindex(e.shape):
        kp, _ = rr_masses(float(e[idx]), int(kk[idx]))
        # (Below 1 whatever ε₀: where the true keep rounds to 1 — ε₀ = 500 — the largest double below it is below
        # the truth too, so the answer keeps less than allowed: safe, and more private than asked.)
        keep[idx] = min(_ld_down(kp), np.nextafter(1.0, 0.0))
    for i in range(64):  # steps of growing size down until the (rounded-up) ε at keep is within ε₀
        bad = _rr_eps(keep, kk) > e
        if not bad.any():
            break
        keep = np.where(bad, np.nextafter(keep - keep * _U * 2.0**i, -np.inf), keep)
    return finish(keep, scalar=scalar)


def _rr_eps(keep, k):
    keep = np.asarray(keep, float)
    a = np.log(keep)
    b = np.log1p(-keep)
    c = np.log(np.asarray(k, float) - 1)
    v = a - b + c
    return np.maximum(_up(v, abs_=4 * _U * (np.abs(a) + np.abs(b) + c + np.abs(v))), 0.0)


def rr_epsilon_of_keep(keep, k):
    """ε₀ = log(keep·(k − 1)/(1 − keep)) of randomized response keeping the true value with
    probability ``keep`` (>= 1/k), rounded up."""
    scalar = all_scalar(keep, k)
    kk = _integer("k", k, low=2)
    p = checked("keep", keep, low=0, high=1)
    p, kk = np.broadcast_arrays(p, kk)
    if (p < 1.0 / kk).any():
        bad = p < 1.0 / kk
        raise ValidationError("keep", float(p[bad].flat[0]), f"in [1/k, 1) (here 1/k = {1.0 / kk[bad].flat[0]:g})")
    return finish(_rr_eps(p, kk), scalar=scalar)


def rr_delta_at(epsilon0, epsilon, k):
    """Exact δ(ε) = keep·(1 − e^{ε − ε₀}) (ε < ε₀; 0 above) of ε₀-randomized response over k values, rounded up."""
    scalar = all_scalar(epsilon0, epsilon, k)
    e0, kk = _rr_args(epsilon0, k)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    e0, kk, e = np.broadcast_arrays(e0, kk, e)
    with np.errstate(over="ignore"):
        keep = 1.0 / (1.0 + (kk - 1) * np.exp(-e0))
        v = keep * -np.expm1(np.minimum(e - e0, 0.0))
    out = np.where(e < e0, _up(v, rel=16 * _U * (2 + e0 + e)), 0.0)
    return finish(np.minimum(out, 1.0), scalar=scalar)


def rr_epsilon_at(epsilon0, delta, k):
    """Exact ε(δ) = max(0, ε₀ + log(1 − δ/keep)) of ε₀-randomized response over k values, rounded up."""
    return rr_epsilon_bounds(epsilon0, delta, k)[1]


def rr_epsilon_bounds(epsilon0, delta, k):
    """(lower, upper) on ε(δ) of ε₀-randomized response over k values: the value rounded down and up by its
    error bound (where ε₀ + log(1 − δ/keep) cancels — ε far below ε₀ — the two are that far apart)."""
    scalar = all_scalar(epsilon0, delta, k)
    e0, kk = _rr_args(epsilon0, k)
    dl = checked("delta", delta, low=0, high=1, low_open=False)
    e0, kk, dl = np.broadcast_arrays(e0, kk, dl)
    keep = 1.0 / (1.0 + (kk - 1) * np.exp(-e0))
    with np.errstate(all="ignore"):  # (δ >= keep: ε = 0, where x/(1 − x) and the sum overflow unused)
        x = np.minimum(dl / keep, 1.0)
        w = np.log1p(-x)
        v = e0 + w
        # Absolute error: keep and x within a few u relative, which log1p turns into x/(1 − x) of that; w's own
        # rounding u|w|; the sum's u|v| <= u(ε₀ + |w|). (No absolute term: ε₀ = 1e-8 stays exact to ~1e-15.)
        err = 16 * _U * (e0 + np.abs(np.nan_to_num(w)) + np.nan_to_num(x / (1.0 - x)))
        hi = np.where(np.isfinite(v), _up(v, abs_=err), 0.0)
        lo = np.where(np.isfinite(v), _down(v, abs_=err), 0.0)

    def exact(i):
        keep_d = 1 / (1 + (Decimal(int(kk.flat[i])) - 1) * (-Decimal(float(e0.flat[i]))).exp())
        left = 1 - Decimal(float(dl.flat[i])) / keep_d
        return Decimal(float(e0.flat[i])) + left.ln() if left > 0 else None

    lo, hi = _cancelled(v, err, lo, hi, exact)
    hi = np.minimum(np.maximum(hi, 0.0), e0)
    return finish(np.minimum(np.maximum(lo, 0.0), hi), scalar=scalar), finish(hi, scalar=scalar)


# --------------------------------------------------------------------------
# Bounded range (exponential mechanism, report-noisy-max with Gumbel noise)
# --------------------------------------------------------------------------


def _log_br_delta(e0, e):
    """log δ_BR(ε) = ε − ε₀ + 2 log(e^{(ε₀−ε)/2} − 1) − log(1 − e^{−ε₀}) for 0 <= ε < ε₀ (−inf above)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        half = np.maximum((e0 - e) / 2.0, 0.0)
        v = e - e0 + 2.0 * log_expm1(half) - np.log(-np.expm1(-e0))
    return np.where(e < e0, v, -np.inf)


def br_delta_at(epsilon0, epsilon):
    """Exact δ(ε) = (e^{ε₀/2} − e^{ε/2})²/(e^{ε₀} − 1) of the ε₀-bounded-range class, rounded up ([DDR]).

    Examples
    --------
    >>> round(br_delta_at(1.0, 0.0), 6)  # tanh(ε₀/4)
    0.244919
    """
    scalar = all_scalar(epsilon0, epsilon)
    e0 = checked("epsilon0", epsilon0, low=0)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    e0, e = np.broadcast_arrays(e0, e)
    lv = _log_br_delta(e0, e)
    # log-domain error: the exponents and logs carry at most 16u(2 + ε₀ + ε) absolute
    # ((ε₀ − ε)/2 is exact when the two are close: Sterbenz; log(e^h − 1) moves by at most (1 + 1/h)·dh.)
    err = 16 * _U * (2 + e0 + e)
    with np.errstate(over="ignore"):
        v = np.exp(lv + err)
    out = np.where(e < e0, _up(v, rel=4 * _U), 0.0)
    return finish(np.minimum(out, 1.0), scalar=scalar)


def br_epsilon_at(epsilon0, delta):
    """Exact ε(δ) = max(0, ε₀ + 2 log(1 − √(δ(1 − e^{−ε₀})))) of the ε₀-BR class, rounded up."""
    return br_epsilon_bounds(epsilon0, delta)[1]


def br_epsilon_bounds(epsilon0, delta):
    """(lower, upper) on ε(δ) of the ε₀-BR class: the value rounded down and up by its error bound (where
    ε₀ + 2 log(1 − r) cancels — ε far below ε₀ — the two are that far apart)."""
    scalar = all_scalar(epsilon0, delta)
    e0 = checked("epsilon0", epsilon0, low=0)
    dl = checked("delta", delta, low=0, high=1, low_open=False)
    e0, dl = np.broadcast_arrays(e0, dl)
    r = np.sqrt(dl * -np.expm1(-e0))
    with np.errstate(divide="ignore"):
        w = 2.0 * np.log1p(-r)
    v = e0 + w
    # Absolute error: r within a few u relative (expm1, the product, the root), which log1p turns into r/(1 − r)
    # of that; w's own rounding u|w|; the sum's u(ε₀ + |w|) (no absolute term: tiny ε₀ stay exact).
    err = 16 * _U * (e0 + np.abs(w) + r / np.maximum(1 - r, 1e-300))
    with np.errstate(all="ignore"):
        hi = np.where(v > 0, _up(v, abs_=err), 0.0)
        lo = np.where(v > 0, _down(v, abs_=err), 0.0)

    def exact(i):
        r_d = (Decimal(float(dl.flat[i])) * (1 - (-Decimal(float(e0.flat[i]))).exp())).sqrt()
        return Decimal(float(e0.flat[i])) + 2 * (1 - r_d).ln() if r_d < 1 else None

    lo, hi = _cancelled(v, err, lo, hi, exact)
    hi = np.minimum(np.maximum(hi, 0.0), e0)
    lo = np.minimum(np.maximum(lo, 0.0), hi)
    return finish(lo, scalar=scalar), finish(hi, scalar=scalar)


def br_rho_of(epsilon0):
    """ρ = ε₀²/8, rounded up: an ε₀-BR mechanism is ρ-zCDP ([CR] Lemma 3.2)."""
    scalar = all_scalar(epsilon0)
    e0 = checked("epsilon0", epsilon0, low=0)
    return finish(_up(e0 * e0 / 8.0, rel=2 * _U), scalar=scalar)


def br_epsilon0_for(epsilon, delta):
    """Largest ε₀ (rounded down, re-checked) such that an ε₀-BR mechanism is (ε, δ)-DP.

    Solves (e^{ε₀/2} − e^{ε/2})² = δ(e^{ε₀} − 1) for y = e^{ε₀/2} >= e^{ε/2}:
    log y = ε/2 + log(1 + √(δ(1 − (1 − δ)e^{−ε}))) − log(1 − δ); then steps
    down until :func:`br_delta_at` (rounded up) is at most δ.
    """
    scalar = all_scalar(epsilon, delta)
    e = checked("epsilon", epsilon, low=0, low_open=False)
    dl = checked("delta", delta, low=0, high=1)
    e, dl = np.broadcast_arrays(e, dl)
    inner = np.sqrt(dl * (1.0 - (1.0 - dl) * np.exp(-e)))
    e0 = 2.0 * (e / 2.0 + np.log1p(inner) - np.log1p(-dl))
    e0 = _down(e0, abs_=64 * _U * (1 + e0))
    e0 = np.maximum(e0, np.nextafter(e, np.inf))
    for _ in range(64):
        lv = np.asarray(br_delta_at(e0, e))
        bad = lv > dl
        if not bad.any():
            break
        e0 = np.where(bad, _down(e0, rel=1e-12), e0)
    bad = np.asarray(br_delta_at(e0, e)) > dl
    if bad.any():
        # Where the closed form's rounding is too coarse (δ near 1: ε₀ far above ε), bisect between ε
        # (δ(ε) = 0 there: it meets any δ) and the estimate, keeping the side that meets δ.
        lo, hi = e.copy(), e0.copy()
        for _ in range(200):
            mid = np.where(bad, 0.5 * (lo + hi), lo)
            ok = np.asarray(br_delta_at(np.maximum(mid, np.nextafter(e, np.inf)), e)) <= dl
            lo = np.where(bad & ok, mid, lo)
            hi = np.where(bad & ~ok, mid, hi)
            if np.all(~bad | (hi - lo <= 1e-12 * hi)):
                break
        e0 = np.where(bad, np.maximum(lo, e), e0)
    # ε₀ = ε always meets the target: an ε-BR mechanism is ε-DP (δ(ε) = 0).
    return finish(np.maximum(e0, e), scalar=scalar)


def br_epsilon0_for_rho(rho):
    """ε₀ = √(8ρ), rounded down: the largest BR parameter that :func:`br_rho_of` certifies within ρ."""
    scalar = all_scalar(rho)
    r = checked("rho", rho, low=0)
    e0 = _down(np.sqrt(8.0 * r), rel=2 * _U)
    for _ in range(8):
        bad = np.asarray(br_rho_of(e0)) > r
        if not bad.any():
            break
        e0 = np.where(bad, np.nextafter(e0, -np.inf), e0)
    return finish(e0, scalar=scalar)


def _first_order_sums(p: np.ndarray, r) -> np.ndarray:
    """S_i = p_i + r·S_{i−1} (S_{−1} = 0) in p's own precision (long double where the platform has it),
    each step one multiplication and one addition, in order.

    scipy's ``lfilter`` runs this recurrence in C; for long double it warns that the dtype is deprecated
    (SciPy 1.15–1.16), so a SciPy that refuses it — or that returned another precision, which would void
    the (3n + 2)·u_ld bound — is met by the same steps in a Python loop (the same values; slower)."""
    import warnings

    ld = p.dtype
    try:
        from scipy.signal import lfilter

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            out = lfilter(np.ones(1, dtype=ld), np.array([1, -r], dtype=ld), p)
        if out.dtype == ld and out.shape == p.shape:
            return out
    except (TypeError, ValueError, NotImplementedError):
        pass
    out = np.empty(p.shape, dtype=ld)
    acc = ld.type(0)
    r = ld.type(r)
    for i, x in enumerate(p):
        acc = x + r * acc
        out[i] = acc
    return out
