"""Wall time of typical dpcalc calls next to the cost of importing numpy and scipy.

Run: python benchmarks/startup.py   (best of N runs, each a fresh process)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 7


def _dpcalc(args: str) -> list[str]:
    return [sys.executable, "-m", "dpcalc", *args.split()]


MNIST = "--dataset-size 60000 --batch-size 256 --epochs 60 --delta 1e-5"
CASES = [
    ("python -c 'import numpy, scipy.special'  (baseline)", [sys.executable, "-c", "import numpy, scipy.special"]),
    ("dpcalc --help", _dpcalc("--help")),
    ("dpcalc calibrate gaussian --epsilon 1 --delta 1e-5", _dpcalc("calibrate gaussian --epsilon 1 --delta 1e-5")),
    (
        "dpcalc calibrate gaussian --epsilon 0.01:10:1000 --delta 1e-6 --json",
        _dpcalc("calibrate gaussian --epsilon 0.01:10:1000 --delta 1e-6 --json"),
    ),
    ("dpcalc plan-sgd (MNIST, pld interval)", _dpcalc(f"plan-sgd {MNIST} --noise-multiplier 1.1")),
    ("dpcalc plan-sgd --target-epsilon 3 (solve σ, pld)", _dpcalc(f"plan-sgd {MNIST} --target-epsilon 3")),
]


def best_of(cmd: list[str]) -> tuple[float, float]:
    times = []
    for _ in range(RUNS):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times)


def main() -> None:
    results = [(name, *best_of(cmd)) for name, cmd in CASES]
    base = results[0][1]
    print(f"{'case':<70} {'best s':>8} {'median s':>9} {'× baseline':>11}")
    for name, best, med in results:
        print(f"{name:<70} {best:8.3f} {med:9.3f} {best / base:11.2f}")


if __name__ == "__main__":
    main()
