"""Peer accountants as references for the tests (test extras only, never the product)."""

from dp_accounting import GaussianDpEvent, PoissonSampledDpEvent
from dp_accounting.pld import pld_privacy_accountant as P


def dpa_epsilon(q: float, s: float, t: int, d: float, h: float = 1e-4) -> float:
    """dp-accounting's pessimistic PLD ε at δ for t Poisson-sampled Gaussian steps, on a grid of h."""
    acc = P.PLDAccountant(value_discretization_interval=h)
    acc.compose(PoissonSampledDpEvent(q, GaussianDpEvent(s)), t)
    return acc.get_epsilon(d)
