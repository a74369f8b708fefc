import numpy as np
import pytest

from dpcalc.core import sgd


def test_default_delta():
    assert sgd.default_delta(60000) == 1e-5
    assert sgd.default_delta(100000) == 1e-6
    assert sgd.default_delta(10) == 0.01


def test_steps_for_epochs():
    assert sgd.steps_for_epochs(60, 60000, 256) == 14063


def test_clt_is_labelled_approximate_and_can_undershoot():
    assert sgd.ACCOUNTANTS["gdp-clt"].bound == "approximate"
    assert sgd.ACCOUNTANTS["rdp"].bound == "upper"
    # FORMULAS.md: the CLT falls below the sound value at q=0.01, σ=0.6, T=1000.
    assert sgd.epsilon(0.01, 0.6, 1000, 1e-5, "gdp-clt") < sgd.epsilon(0.01, 0.6, 1000, 1e-5, "rdp")


@pytest.mark.parametrize("target", [1.0, 3.0, 8.0])
def test_solve_sigma_meets_target_and_is_tight(target):
    q, t, d = 256 / 60000, 14063, 1e-5
    sol = sgd.solve_sigma(q, t, d, target)
    s = float(sol.value[0])
    assert sol.found[0]
    assert sgd.epsilon(q, s, t, d) <= target
    assert sgd.epsilon(q, s * (1 - 2e-4), t, d) > target * (1 - 1e-4)


def test_solve_steps_meets_target_and_is_tight():
    q, s, d, target = 256 / 60000, 1.1, 1e-5, 3.0
    sol = sgd.solve_steps(q, s, d, target)
    t = float(sol.value[0])
    assert sgd.epsilon(q, s, t, d) <= target
    assert sgd.epsilon(q, s, np.ceil(t * 1.01), d) > target


def test_solve_steps_reports_impossible():
    sol = sgd.solve_steps(0.01, 0.3, 1e-5, 0.01)
    assert not sol.found[0]
    assert sol.value[0] == 0


def test_solve_batch_size_meets_target():
    sol = sgd.solve_batch_size(60000, 60, 1.1, 1e-5, 3.0)
    b = float(sol.value[0])
    assert 1 <= b <= 60000
    t = sgd.steps_for_epochs(60, 60000, b)
    assert sgd.epsilon(b / 60000, 1.1, t, 1e-5) <= 3.0
    t2 = sgd.steps_for_epochs(60, 60000, b + 10)
    assert sgd.epsilon((b + 10) / 60000, 1.1, t2, 1e-5) > 3.0


def test_epsilon_vectorised_over_a_grid():
    sig = np.linspace(0.6, 5, 200)
    e = sgd.epsilon(0.01, sig, 1000, 1e-5)
    assert e.shape == (200,)
    assert np.all(np.diff(e) < 0)
