"""A few steps at tiny q and σ and tiny δ: dpcalc's answer beside its PLD grids, RDP and dp-accounting.

    python -m pip install -e '.[bench]'
    python benchmarks/corner.py          # about three minutes (the grids take most of it)

Past the box's edges, where single steps' rare large losses carry δ, dpcalc answers by one step's exact
curve (method ``rare-steps``, ``dpcalc/core/pld/rare.py``). Each row prints that answer and its time; the
PLD engine's own certified interval on the same case (called directly, as before the route existed) and
its time; RDP's bound; and dp-accounting's pessimistic PLD at a 1e-4 grid with its time (``inf`` where it
has no finite answer). The two certified intervals must overlap.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
from machine import describe

#: (q, σ, T, δ): found by hand and by random scans of the CLI's range past the box.
CASES = [
    (1e-12, 0.3, 3, 1e-20),
    (1e-9, 0.2, 3, 1e-20),
    (1e-7, 0.3, 10, 1e-15),
    (1e-6, 0.25, 2, 1e-12),
    (1e-8, 0.3, 3, 1e-15),
    (1e-7, 0.3, 4, 1e-13),
    (1e-10, 0.25, 5, 1e-25),
    (1.6e-11, 0.125, 2, 3.7e-21),
    (1e-9, 0.35, 50, 1e-18),
    (1e-6, 0.2, 20, 1e-14),
    (1e-12, 0.3, 3, 1e-40),
]


def _dpa(q, s, t, d):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant as P

    acc = P.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), t)
    return acc.get_epsilon(d)


def main() -> None:
    from dpcalc.core import pld, sgd

    warnings.simplefilter("ignore")
    print(describe())
    print(
        f"{'q':>8} {'σ':>5} {'T':>4} {'δ':>7} | {'dpcalc [lower, upper]':>34} {'s':>5} | "
        f"{'PLD grids [lower, upper]':>28} {'s':>5} | {'RDP':>7} | {'dp-acc 1e-4':>10} {'s':>5}"
    )
    overlap = True
    for q, s, t, d in CASES:
        t0 = time.perf_counter()
        r = sgd.tight_interval(q, s, t, d)
        t_r = time.perf_counter() - t0
        grids, t_e = "below its range", float("nan")
        if d >= pld.MIN_DELTA:
            t0 = time.perf_counter()
            e = pld.epsilon([(sgd._mechanism(q, s, "poisson"), t)], d)
            t_e = time.perf_counter() - t0
            grids = f"[{e.lower[0]:.8g}, {e.upper[0]:.8g}]"
            overlap &= bool(r.lower[0] <= e.upper[0] and e.lower[0] <= r.upper[0])
        rdp = float(np.atleast_1d(sgd.epsilon(q, s, t, d, "rdp"))[0])
        try:
            t0 = time.perf_counter()
            peer = _dpa(q, s, t, d)
            t_p = time.perf_counter() - t0
        except Exception:  # a peer's refusal is a result too
            peer, t_p = float("nan"), float("nan")
        print(
            f"{q:8.2g} {s:5.3g} {t:4d} {d:7.1e} | {r.method[0]:>10} [{r.lower[0]:.8g}, {r.upper[0]:.8g}] "
            f"{t_r:5.2f} | {grids:>28} {t_e:5.1f} | {rdp:7.4g} | {peer:10.6g} {t_p:5.2f}",
            flush=True,
        )
    print("dpcalc's interval and the grids' overlap in every row" if overlap else "AN INTERVAL PAIR DOES NOT OVERLAP")


if __name__ == "__main__":
    main()
