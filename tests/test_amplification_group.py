import numpy as np
import pytest

from dpcalc.core import amplification as amp
from dpcalc.core import group


def test_subsample_formula():
    e, d = amp.subsample(1.0, 1e-6, 0.01)
    assert e == pytest.approx(np.log(1 + 0.01 * (np.e - 1)))
    assert d == pytest.approx(1e-8)


def test_subsample_large_epsilon_no_overflow():
    e, _ = amp.subsample(1000.0, 0.0, 1e-3)
    assert e == pytest.approx(1000 + np.log(1e-3), rel=1e-12)


def test_subsample_rate_one_is_identity():
    assert amp.subsample(2.5, 1e-5, 1.0) == (2.5, 1e-5)


def test_group_tight_and_textbook():
    e, d = group.dp_tight(0.5, 1e-7, 4)
    assert e == 2.0
    assert d == pytest.approx(1e-7 * (np.exp(2.0) - 1) / (np.exp(0.5) - 1))
    _, db = group.dp_textbook(0.5, 1e-7, 4)
    assert db == pytest.approx(4 * np.exp(1.5) * 1e-7)
    assert d <= db


def test_group_delta_capped_and_zero_epsilon():
    _, d = group.dp_tight(5.0, 1e-5, 1000)
    assert d == 1.0
    _, d0 = group.dp_tight(0.0, 1e-5, 10)
    assert d0 == pytest.approx(1e-4)


def test_group_other_languages():
    assert group.pure(0.5, 4) == 2.0
    assert group.gdp(0.5, 4) == 2.0
    assert group.zcdp(0.1, 3) == pytest.approx(0.9)
    assert group.gaussian_sensitivity(1.5, 4) == 6.0


def test_group_size_one_is_identity():
    assert group.dp_tight(0.7, 1e-6, 1) == (0.7, pytest.approx(1e-6))
