"""The lower discretisation's fit (edges placed so that the atoms share one offset) and what it buys:
small sampling rates at large δ, where the give-back of the moves decides the lower end."""

import numpy as np
import pytest
from peers import dpa_epsilon as _dpa

from dpcalc.core import pld, sgd
from dpcalc.core.pld import directions as Dr
from dpcalc.core.pld import discretise as D
from dpcalc.core.pld import sizing as S
from dpcalc.core.pld.errors import LOWER_ETA, lower_shift

# q = 4.2e-5, σ = 0.469: three quarters of the remove direction's P-mass lies within a fraction of a
# cell of the support's end log(1 − q), where no nudge of the edges moves its atom.
PILE = (4.2e-5, 0.469, 30416, 0.00658)


def _hockey(direction, eps):
    t = direction.cdf(np.asarray(eps, float))
    return t.sp - np.exp(eps) * t.sq


def _delta_of(disc, eps):
    ell, p = disc.losses(), disc.p
    return np.array([np.sum(p[ell > e] * -np.expm1(e - ell[ell > e])) + disc.p_inf for e in eps])


def _give_back_loss(st, times, delta):
    """What the give-back leaves of the moves' total mean: the lower end's loss from rounding."""
    mean, var = times * st.move_mean, times * st.move_var
    return mean - lower_shift(mean, var, st.move_mean, LOWER_ETA * delta)


@pytest.mark.parametrize("k", [13, 15, 16])
def test_placed_edges_line_the_pile_up_with_the_rest(k, monkeypatch):
    q, s, t, d = PILE
    direction = pld.subsampled_gaussian(q, s)[0]
    h = 2.0**-k
    tail = S._tail_for([(pld.subsampled_gaussian(q, s), t)], d)
    placed = D.discretise_lower(direction, h, tail, times=t)
    monkeypatch.setattr(D, "ALIGN_BINS", 0)  # the nudges alone
    nudged = D.discretise_lower(direction, h, tail, times=t)
    # The moves vary over 20 times less, and the rounding costs the lower end 3-20 times less.
    assert placed.move_var < nudged.move_var / 20
    assert placed.move_var / h**2 < 5e-6
    assert _give_back_loss(placed, t, d) < _give_back_loss(nudged, t, d) / 3
    assert _give_back_loss(placed, t, d) < 1.5e-4
    # Still dominated by the step: any partition is a post-processing, the atoms then moved down.
    assert placed.p.sum() + placed.p_inf <= 1.0 + 1e-12
    eps = np.concatenate([np.linspace(-1e-4, 2e-3, 120), np.linspace(2e-3, 3.0, 80)])
    assert np.all(_delta_of(placed, eps) <= _hockey(direction, eps) + 1e-15)


@pytest.mark.parametrize(
    "q, s, t, d",
    [
        PILE,  # [0.07275, 0.07286] (1.08× the width) before
        (6.2e-5, 0.302, 613, 0.00696),  # [0.10895, 0.10916] (1.9×), the Chernoff guess 40× ε
        (8e-5, 0.45, 3140, 0.0067),  # [0.033271, 0.033530] (2.6×) two stops ago
    ],
)
def test_small_rates_at_large_delta_meet_the_width(q, s, t, d):
    r = sgd.tight_interval(q, s, t, d)
    lo, up = float(r.lower[0]), float(r.upper[0])
    assert r.method[0] == "pld" and r.met[0]
    assert up - lo <= max(1e-3 * up, 1e-4) * (1 + 1e-9)
    # dp-accounting's pessimistic answer is an upper bound on ε: our lower end is below it.
    assert 0 < lo <= _dpa(q, s, t, d, 1e-4)


def test_a_lower_fit_is_sized_to_the_width_of_the_answer_not_the_chernoff_guess(monkeypatch):
    # The Chernoff guess (4.7) is 40× this answer (0.11): a fit stopped at its width gave back 4e-4 of
    # ε at h = 2^-15, four times the width asked for. After the first lower end, the width is its own.
    seen = []
    real = D.discretise_lower

    def spy(d, h, tail=1e-30, times=1, widest=D.WIDEST_BIN, enough=0.0):
        seen.append(enough * 4 * h)  # the width the fit was asked to resolve
        return real(d, h, tail, times, widest, enough)

    monkeypatch.setattr(Dr, "discretise_lower", spy)
    r = sgd.tight_interval(6.2e-5, 0.302, 613, 0.00696)
    assert r.met[0]
    width = max(1e-3 * float(r.upper[0]), 1e-4)
    assert max(seen[1:]) <= 2 * width  # from the certified ends (within the gap of the final answer)
    assert seen[0] > 10 * width  # the first one, before any end is known


def test_a_pile_beside_the_heaviest_bin_joins_it(monkeypatch):
    # q = 0.00866, σ = 0.88 on h = 2^-10: the bin against log(1 − q) holds a share of the heaviest
    # bin's mass next to it, and no edge places its atom; anchored on the heaviest bin alone, the
    # placed edges left the moves varying more than the nudges did (1.5e-3 against 1.1e-3 cells²).
    d = pld.subsampled_gaussian(0.00866, 0.88)[0]
    h = 2.0**-10
    monkeypatch.setattr(D, "MERGE_FIT", 1.0)  # no merging of bins: the placement alone
    joined = D.discretise_lower(d, h, 1e-25, times=331)
    monkeypatch.setattr(D, "ABSORB", 0)
    alone = D.discretise_lower(d, h, 1e-25, times=331)
    assert joined.move_var / h**2 < 5e-5 < 1e-3 < alone.move_var / h**2
    eps = np.linspace(-0.01, 1.5, 200)
    assert np.all(_delta_of(joined, eps) <= _hockey(d, eps) + 1e-15)
