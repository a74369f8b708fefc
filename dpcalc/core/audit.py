"""What a privacy audit proves: the ε lower bound implied by observed attack counts.

An auditor runs a membership-inference attack against a mechanism claimed to be (ε, δ)-DP
and counts how often it is right. Two settings, both giving an ε *lower* bound that holds
with the stated confidence (the chance that the bound is above the true ε is at most
1 − confidence):

* **Classic** ([JUO], [NST]): T independent trials with the target record in (positives)
  and F with it out (negatives), e.g. one training run each; the attack says "in" on TP of
  the positives and FP of the negatives. Every test against an (ε, δ)-DP mechanism has
  TPR <= e^ε FPR + δ and TNR <= e^ε FNR + δ ([KOV] Thm 2.1), so with one-sided
  Clopper–Pearson bounds TPR >= TPR_lo and FPR <= FPR_hi, each at level (1 − c)/2
  (union bound: both hold with probability >= c),

      ε >= max( log((TPR_lo − δ)/FPR_hi),  log((1 − FPR_hi − δ)/(1 − TPR_lo)) ).

* **One run** ([SNJ] Thm 5.2 and its Algorithm): m canaries, each included independently
  with probability 1/2 in one training run; the auditor guesses in/out for r of them and is
  right on v. Under (ε, δ)-DP, P[≥ v correct] <= P[Binomial(r, e^ε/(1+e^ε)) >= v] + 2mδ·α
  with α = max_{1<=i<=v} P[v−i <= Binomial(r, e^ε/(1+e^ε)) < v]/i; the ε lower bound is the
  largest ε whose p-value is still below 1 − c.

Both are rounded down (toward the conservative side for a lower bound: a bound that is too
high would accuse a correct implementation), and the one-run search keeps a margin for the
binomial tails' floating-point error.

References
----------
.. [JUO] M. Jagielski, J. Ullman, A. Oprea. Auditing Differentially Private Machine Learning:
   How Private is Private SGD? NeurIPS 2020, arXiv:2006.07709 (Clopper–Pearson ε lower bounds).
.. [NST] M. Nasr, S. Song, A. Thakurta, N. Papernot, N. Carlini. Adversary Instantiation:
   Lower Bounds for Differentially Private Machine Learning. IEEE S&P 2021, arXiv:2101.04535.
.. [KOV] P. Kairouz, S. Oh, P. Viswanath. The Composition Theorem for Differential Privacy.
   ICML 2015 (the hypothesis-testing region of (ε, δ)-DP).
.. [SNJ] T. Steinke, M. Nasr, M. Jagielski. Privacy Auditing with One (1) Training Run.
   NeurIPS 2023, arXiv:2305.08846.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from ._arrays import checked
from .errors import ValidationError

__all__ = ["clopper_pearson", "classic_epsilon", "one_run_p_value", "one_run_epsilon"]

#: Relative allowance for the floating-point error of scipy's binomial tails and beta quantiles
#: (they are accurate to ~1e-14 relative; the margin is kept far larger).
_TAIL_SLACK = 1e-9


def clopper_pearson(k, n, level, side: str) -> np.ndarray:
    """One-sided Clopper–Pearson bound on a binomial proportion from k successes in n trials.

    ``side="lower"``: p_lo with P[Bin(n, p_lo) >= k] = 1 − level (0 when k = 0).
    ``side="upper"``: p_hi with P[Bin(n, p_hi) <= k] = 1 − level (1 when k = n).
    Each is widened by a few ulps so that it stays on its conservative side.
    """
    k = np.asarray(k, float)
    n = np.asarray(n, float)
    tail = 1.0 - np.asarray(level, float)
    with np.errstate(all="ignore"):
        if side == "lower":
            p = np.where(k > 0, stats.beta.ppf(tail, np.maximum(k, 1), n - k + 1), 0.0)
            return np.clip(p * (1 - 4 * np.finfo(float).eps) - 1e-300, 0.0, 1.0)
        p = np.where(k < n, stats.beta.isf(tail, k + 1, np.maximum(n - k, 1)), 1.0)
        return np.clip(p * (1 + 4 * np.finfo(float).eps) + 1e-300, 0.0, 1.0)


def classic_epsilon(tp, positives, fp, negatives, delta, confidence):
    """ε lower bound of the classic audit (see the module docstring), with TPR_lo and FPR_hi.

    Returns (epsilon, tpr_lower, fpr_upper) as arrays; ε is 0 where the counts prove nothing.
    """
    tp, pos, fp, neg = (np.asarray(x, float) for x in (tp, positives, fp, negatives))
    d = checked("delta", delta, low=0, high=1, low_open=False)
    c = checked("confidence", confidence, low=0, high=1)
    if np.any(tp > pos):
        raise ValidationError("true_positives", float(np.max(tp)), "at most --positives")
    if np.any(fp > neg):
        raise ValidationError("false_positives", float(np.max(fp)), "at most --negatives")
    level = (1.0 + c) / 2.0  # each side at (1 − c)/2: both hold with probability >= c
    tpr = clopper_pearson(tp, pos, level, "lower")
    fpr = clopper_pearson(fp, neg, level, "upper")
    with np.errstate(all="ignore"):
        first = np.where((tpr > d) & (fpr > 0), np.log(tpr - d) - np.log(fpr), 0.0)
        fnr = 1.0 - tpr
        tnr = 1.0 - fpr
        second = np.where((tnr > d) & (fnr > 0), np.log(tnr - d) - np.log(fnr), 0.0)
    eps = np.maximum(np.maximum(first, second), 0.0)
    # log and the subtractions above round to nearest: step down past their error.
    eps = np.maximum(eps * (1 - 8 * np.finfo(float).eps) - 4 * np.finfo(float).tiny, 0.0)
    return eps, tpr, fpr


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P[at least v of r guesses correct] under (ε, δ)-DP, bounded as in [SNJ] (Thm 5.2, Algorithm)."""
    q = float(special.expit(epsilon))  # accuracy of ε-DP randomised response
    beta = float(stats.binom.sf(v - 1, r, q))  # P[Bin(r, q) >= v]
    if delta == 0 or v == 0:
        return min(beta, 1.0)
    i = np.arange(1, v + 1)
    window = stats.binom.sf(v - i - 1, r, q) - beta  # P[v − i <= Bin(r, q) < v]
    alpha = float(np.max(np.maximum(window, 0.0) / i, initial=0.0))
    return min(beta + alpha * delta * 2 * m, 1.0)


def one_run_epsilon(m: int, r: int, v: int, delta: float, confidence: float, rtol: float = 1e-9) -> tuple[float, str]:
    """Largest ε (to ``rtol``, rounded down) whose one-run p-value is at most 1 − confidence.

    Returns (epsilon, status): status "bound" when the audit proves ε > 0, "none" when even
    ε = 0 cannot be rejected (the lower bound is 0), "unbounded" when ε up to 700 is rejected
    (the counts are too good for any finite ε this search reaches: reported as 700, still a
    true lower bound).
    """
    if not 0 <= v <= r <= m:
        raise ValidationError("correct_guesses", v, "0 <= correct <= guesses <= canaries")
    alpha = 1.0 - confidence

    def rejected(eps: float) -> bool:
        # The p-value's own floating-point error is far below _TAIL_SLACK; keep it as a margin.
        return one_run_p_value(m, r, v, eps, delta) * (1 + _TAIL_SLACK) <= alpha

    if not rejected(0.0):
        return 0.0, "none"
    lo, hi = 0.0, 1.0
    while rejected(hi):
        lo, hi = hi, hi * 2
        if hi > 700:
            return (700.0, "unbounded") if rejected(700.0) else _bisect(rejected, lo, 700.0, rtol)
    return _bisect(rejected, lo, hi, rtol)


def _bisect(rejected, lo: float, hi: float, rtol: float) -> tuple[float, str]:
    """Invariant: rejected(lo), not rejected(hi); returns lo (the safe side) once hi − lo <= rtol·hi."""
    while hi - lo > rtol * max(hi, 1e-12):
        mid = 0.5 * (lo + hi)
        if rejected(mid):
            lo = mid
        else:
            hi = mid
    return lo, "bound"
