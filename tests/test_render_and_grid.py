import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.cli.options import parse_grid
from dpcalc.render import format_number


@given(st.floats(1e-300, 1e300))
def test_up_rounding_never_shows_less(x):
    # From the very value computed, to the last digit shown: what is printed reads back as at least it
    # (the shortest text of a float reads back as that float), not lower even by round-off.
    assert float(format_number(x, "up")) >= x
    assert Decimal(format_number(x, "up")) >= Decimal(x) or float(format_number(x, "up")) == x


@given(st.floats(1e-300, 1e300))
def test_down_rounding_never_shows_more(x):
    assert float(format_number(x, "down")) <= x
    assert Decimal(format_number(x, "down")) <= Decimal(x) or float(format_number(x, "down")) == x


def test_examples():
    assert format_number(3.730631634816, "up") == "3.73064"
    assert format_number(3.730631634816, "down") == "3.73063"
    assert format_number(1e-5, "up") == "1e-05"
    assert format_number(0.1 * 3, "up") == "0.300001"  # 0.30000000000000004: a bound is not shown below it
    assert format_number(0.1 * 3, "down") == "0.3"
    assert format_number(0.1 * 3) == "0.3"  # inputs echoed back: round-off is not information
    assert format_number(123456789.0) == "1.23457e+08"


def test_grid_syntax():
    assert parse_grid("0.5,1,2") == (0.5, 1.0, 2.0)
    assert parse_grid("1:10:10") == tuple(float(i) for i in range(1, 11))
    assert parse_grid("1e-10:1e-4:7:log") == (1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4)
    assert parse_grid("0.1, 1:2:3") == (0.1, 1.0, 1.5, 2.0)


@pytest.mark.parametrize(
    "bad", ["", "1,", "a", "1:2", "1:2:x", "1:2:0", "1:1:3", "0:1:3:log", "1:2:3:lin", "nan", "inf", "1:2:100000"]
)
def test_grid_errors(bad):
    with pytest.raises(ValueError):
        parse_grid(bad)


def test_grid_values_are_finite():
    assert all(math.isfinite(v) for v in parse_grid("1e-300:1e300:50:log"))


def test_whole_number_ranges_are_exact_past_float_precision():
    """Counts past 1e15 (group sizes, steps) were spaced in floats and printed to 15 digits: 10^15 + 1, + 2, + 3
    came back as 10^15, 10^15 + 2, 10^15 + 3 — a range that silently changed the user's numbers."""
    n = 10**15
    assert parse_grid(f"{n + 1}:{n + 3}:3", integer=True) == (n + 1, n + 2, n + 3)
    assert all(isinstance(x, int) for x in parse_grid(f"{n + 1}:{n + 3}:3", integer=True))
    assert parse_grid("1:10:4", integer=True) == (1, 4, 7, 10)
    # Not whole: refused by the range itself, the point shown exactly (past 2^52 a float would round it whole).
    with pytest.raises(ValueError, match=r"the grid point 5\.5 of '1:10:3' is not a whole number"):
        parse_grid("1:10:3", integer=True)
    with pytest.raises(ValueError, match=r"the grid point 4503599627370496\.5 of"):
        parse_grid("4503599627370496:4503599627370497:3", integer=True)


def test_minus_zero_is_zero():
    """'-0' reads as 0, not −0.0 (echoed as "-0.0" in tables and JSON)."""
    (z,) = parse_grid("-0")
    assert z == 0 and math.copysign(1.0, z) == 1.0
    assert all(math.copysign(1.0, v) == 1.0 for v in parse_grid("-0.0,-0e5"))


@pytest.mark.parametrize(
    "value, shown",
    [(0.9999999, "0.9999999"), (0.99999949, "0.999999"), (1.0000001, "1.0000001"), (1.0, "1"), (0.5, "0.5")],
)
def test_an_echoed_value_near_one_is_not_shown_as_one(value, shown):
    """δ = 0.9999999 is not δ = 1 (no guarantee at all): echoed inputs get the digits to say so; bounds keep
    their safe-side rounding (an upper δ of 0.9999999 is shown as 1)."""
    from dpcalc.render import format_number

    assert format_number(value) == shown
    assert format_number(0.9999999, "up") == "1" and format_number(0.9999999, "down") == "0.999999"
