"""The FFT library's cached plans are dropped after large long-double compositions (compose.forget_plans).

The library keeps a plan per transform length (16 a kind): in long double about 60 MB per million
points, so that an answer composing on many windows of different sizes held hundreds of MB of plans
(a peak of 1,037 MiB at q = 1e-6, σ = 0.5, 100 steps, δ = 1e-12; 627 MiB with the plans dropped).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from dpcalc.core.pld import compose as C
from dpcalc.core.pld import subsampled_gaussian
from dpcalc.core.pld.discretise import discretise_upper

_CHILD = """
import gc, numpy as np, scipy.fft as sfft
from dpcalc.core.pld.compose import forget_plans
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20
for n in (1_048_576, 1_179_648, 1_572_864, 2_097_152, 2_359_296, 3_145_728):
    x = np.zeros(n, dtype=np.longdouble)
    sfft.irfft(sfft.rfft(x), n)
    del x
gc.collect()
before = rss()
forget_plans()
gc.collect()
print(before - rss())
"""


def test_forget_plans_gives_back_the_plans_memory():
    """Six long-double plans of 1–3 million points hold well over 150 MB; forget_plans frees them (in a
    fresh process, so that nothing else holds plans or heap)."""
    r = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout.strip()) > 150.0, r.stdout


def test_large_long_double_compositions_drop_plans_past_the_budget_and_keep_their_numbers(monkeypatch):
    """Long-double compositions of at least FORGET_FROM points are counted by length: a length that
    comes again adds nothing, and past PLAN_BUDGET points of distinct lengths the plans are dropped;
    the composed masses are the same with and without a drop (plans are rebuilt exactly)."""
    d = discretise_upper(subsampled_gaussian(1e-3, 1.0)[0], 2.0**-14, 1e-20, 2.0**-7)
    kw = dict(lam=2.0, eta=1e-18, extended=1)
    calls = []
    monkeypatch.setattr(C, "forget_plans", lambda: calls.append(1))
    monkeypatch.setattr(C, "FORGET_FROM", 1)
    monkeypatch.setattr(C, "_LENGTHS", set())
    a = C.compose([(d, 2000)], **kw)
    n = len(C._LENGTHS) and next(iter(C._LENGTHS))
    monkeypatch.setattr(C, "PLAN_BUDGET", n)  # the same length again: still within the budget
    b = C.compose([(d, 2000)], **kw)
    assert calls == [] and C._LENGTHS == {n}
    C.compose([(d, 1000)], **kw)  # another length: past the budget, dropped
    assert calls == [1] and C._LENGTHS == set()
    C.forget_plans()  # the real one, between two identical compositions
    c = C.compose([(d, 2000)], **kw)
    assert np.array_equal(a.p, b.p) and np.array_equal(b.p, c.p) and a.roundoff == c.roundoff
