"""Sampling schemes (issue 12): each scheme's certified interval on ε and its time, against Poisson.

    PYTHONPATH=. python benchmarks/sampling.py [--no-peer]

Settings: MNIST (N = 60,000, B = 256, 60 epochs, σ = 1.1, δ = 1e-5) and two others. Per setting:
Poisson (the engine), truncated Poisson at B_max = ⌈1.1·B⌉ and B_max = B, shuffle, balls-in-bins,
user level with K = 2 examples per user; dp-accounting 0.6.0's truncated-Poisson PLD (1e-4 grid)
where it has the event.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from dpcalc.core import sampling as S
from dpcalc.core import sgd

SETTINGS = [
    ("MNIST", 60_000, 256, 60, 1.1, 1e-5),
    ("CIFAR-like", 50_000, 512, 20, 1.0, 1e-5),
    ("large", 1_000_000, 4096, 10, 0.8, 1e-7),
]


def _timed(f):
    t = time.perf_counter()
    r = f()
    return r, time.perf_counter() - t


def main(peer: bool = True) -> None:
    for name, n, b, epochs, sigma, delta in SETTINGS:
        q = b / n
        steps = int(np.ceil(epochs * n / b))
        print(f"\n{name}: N = {n}, B = {b}, {epochs} epochs (T = {steps}), σ = {sigma}, δ = {delta:g}")
        print(f"  {'scheme':34s} {'lower':>9s} {'upper':>9s}  {'upper method':24s} {'lower method':20s} {'time':>7s}")
        p, tp = _timed(lambda: sgd.tight_interval(q, sigma, steps, delta))
        print(f"  {'poisson':34s} {p.lower[0]:9.4f} {p.upper[0]:9.4f}  {'pld':24s} {'pld':20s} {tp:6.2f}s")
        rows = []
        for bmax in (int(np.ceil(1.1 * b)), b):
            rows.append(
                (
                    f"truncated-poisson B_max={bmax}",
                    lambda bmax=bmax: S.truncated_poisson_interval(n, b, bmax, sigma, steps, delta),
                )
            )
        rows.append(("shuffle", lambda: S.shuffle_interval(n, b, epochs, sigma, delta)))
        rows.append(("balls-in-bins", lambda: S.balls_in_bins_interval(n, b, epochs, sigma, delta)))
        rows.append(("user-level K=2", lambda: S.user_level_interval(q, sigma, steps, 2, delta)))
        for label, f in rows:
            r, t = _timed(f)
            print(f"  {label:34s} {r.lower[0]:9.4f} {r.upper[0]:9.4f}  {r.method:24s} {r.lower_method:20s} {t:6.2f}s")
        if peer:
            import dp_accounting
            from dp_accounting.pld import pld_privacy_accountant as P

            for bmax in (int(np.ceil(1.1 * b)), b):

                def run(bmax=bmax):
                    acc = P.PLDAccountant(value_discretization_interval=1e-4)
                    acc.compose(dp_accounting.TruncatedSubsampledGaussianDpEvent(n, q, bmax, sigma), steps)
                    return acc.get_epsilon(delta)

                e, t = _timed(run)
                print(
                    f"  {'dp-accounting truncated B_max=' + str(bmax):34s} {'':9s} {e:9.4f}  "
                    f"{'(peer, 1e-4 grid)':24s} {'':20s} {t:6.2f}s"
                )


if __name__ == "__main__":
    main(peer="--no-peer" not in sys.argv)
