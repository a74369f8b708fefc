"""A direction settled by its Chernoff bound (dpcalc.core.pld.query.chernoff_epsilon).

Where a direction's Chernoff bound on ε, taken from its dominating discretised steps without composing
them, is already at most the mechanism's certified lower end, the engine keeps that bound as the
direction's upper end and composes nothing for it. The bound must hold (it is an upper end): checked
against the exact μ-GDP value of T Gaussian steps and against each direction's own certified interval;
and the answers must not move (the direction cannot be the maximum).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc.core import pld, sgd
from dpcalc.core.pld import directions as Dr
from dpcalc.core.pld import sizing as S
from dpcalc.core.pld.query import chernoff_epsilon


def _bound(mech, times, delta, h):
    """The Chernoff bound of every direction of ``mech`` (T = ``times``), from its upper discretisation."""
    tail = S._tail_for([(mech, times)], delta)
    out = []
    for _, parts in Dr._discretised([(mech, times)], h, "upper", tail):
        tilts = Dr.choose_tilts(parts, np.log([delta]), None)[0]
        out.append(float(chernoff_epsilon(parts, [delta], tilts)[0]))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sigma=st.floats(0.3, 20.0),
    steps=st.integers(1, 5000),
    log_delta=st.floats(-25.0, -2.0),
)
def test_chernoff_bound_is_above_the_exact_gaussian_composition(sigma, steps, log_delta):
    """T Gaussian steps are exactly √T/σ-GDP: the bound is at least that ε (the exact route's certified
    lower end, q = 1)."""
    delta = 10.0**log_delta
    (ch,) = _bound(pld.gaussian(1.0 / sigma), steps, delta, 2.0**-10)
    exact = sgd.tight_interval(1.0, sigma, steps, delta)
    assert ch >= float(exact.lower[0]), (sigma, steps, delta, ch, exact.lower)


@pytest.mark.parametrize(
    "q, sigma, steps, delta",
    [
        (0.0604, 1.8, 33, 1.5e-9),
        (9.31e-05, 1.45, 4966, 2.2e-11),
        (0.00866, 0.88, 331, 4.7e-12),
        (0.221, 0.762, 1000, 2.6e-05),
        (1e-4, 0.5, 10000, 1e-8),
    ],
)
def test_chernoff_bound_of_each_direction_is_above_its_certified_lower_end(q, sigma, steps, delta):
    """Each direction of the subsampled Gaussian on its own: its Chernoff bound is at least its own
    certified lower end (so it is no smaller than its true ε as far as can be told)."""
    mech = pld.subsampled_gaussian(q, sigma)
    bounds = _bound(mech, steps, delta, 2.0**-12)
    for k, ch in enumerate(bounds):
        own = pld.epsilon([([mech[k]], steps)], delta)
        assert ch >= float(own.lower[0]), (k, ch, own.lower, own.upper)


@pytest.mark.parametrize(
    "case",
    [(0.0604, 1.8, 33, 1.5e-9), (9.31e-05, 1.45, 4966, 2.2e-11), (0.00866, 0.88, 331, 4.7e-12)],
)
def test_settled_direction_leaves_the_answer_as_it_was(monkeypatch, case):
    """These cases settle the add direction by its Chernoff bound (it is below the remove direction's
    certified lower end); composing it instead gives the same interval, digit for digit."""
    calls = []

    def spy(parts, delta, tilts):
        out = chernoff_epsilon(parts, delta, tilts)
        calls.append(out)
        return out

    monkeypatch.setattr(Dr, "chernoff_epsilon", spy)
    fast = sgd.tight_interval(*case)
    assert calls and np.all(np.isfinite(calls[0]))
    assert np.all(calls[0] <= fast.lower)  # settled: below the certified lower end
    monkeypatch.setattr(Dr, "chernoff_epsilon", lambda parts, delta, tilts: np.full(np.shape(delta), np.inf))
    slow = sgd.tight_interval(*case)
    assert np.array_equal(fast.lower, slow.lower) and np.array_equal(fast.upper, slow.upper)
