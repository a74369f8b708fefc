"""Sampling schemes (issue 12): each scheme's certified interval on ε and its time, through the CLI path.

    PYTHONPATH=. python benchmarks/sampling.py [--no-peer] [--slow-peer] [--no-inverse]

Settings: MNIST (N = 60,000, B = 256, 60 epochs, σ = 1.1, δ = 1e-5) and two others. Per setting, each
row is one ``dpcalc plan-sgd ... --json`` run in-process (Click's runner: the command's whole path —
parsing, the scheme's interval, notes, JSON — without interpreter start-up): Poisson (the default),
truncated Poisson at B_max = ⌈1.1·B⌉ and B_max = B (``--max-batch-size``), ``--sampling shuffle``,
``--sampling balls-in-bins``, and user level with K = 2 (``--examples-per-user 2``). Peers (test/benchmark
extras, never runtime dependencies): dp-accounting 0.6.0's ``TruncatedSubsampledGaussianDpEvent`` (PLD,
1e-4 grid) for truncated Poisson; its ``GaussianDpEvent`` composed E times (PLD) for the shuffle/
balls-in-bins upper end; with ``--slow-peer`` its ``MixtureOfGaussiansDpEvent`` for user level (slow:
7-60 s), and, on a line under the balls-in-bins row, PLD_accounting 2.0's certified interval for random
allocation (pip ``pld-accounting==2.0``, Feldman & Shenfeld, arXiv:2602.17284:
``gaussian_allocation_epsilon_range`` with k = ⌈N/B⌉ steps per epoch and the epochs begun; slow: 225 s
for MNIST). With inverse rows (MNIST only): ``--target-epsilon`` solving σ per scheme, and its time.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import time

from click.testing import CliRunner

from dpcalc.cli import cli

SETTINGS = [
    ("MNIST", 60_000, 256, 60, 1.1, 1e-5),
    ("CIFAR-like", 50_000, 512, 20, 1.0, 1e-5),
    ("large", 1_000_000, 4096, 10, 0.8, 1e-7),
]


def _cli(args: str):
    t = time.perf_counter()
    r = CliRunner().invoke(cli, shlex.split(args + " --json"))
    dt = time.perf_counter() - t
    if r.exit_code != 0:
        raise SystemExit(f"dpcalc {args}: exit {r.exit_code}: {r.stderr}")
    return json.loads(r.stdout), dt


def _timed(f):
    t = time.perf_counter()
    v = f()
    return v, time.perf_counter() - t


def _row(label, row, dt, peer=""):
    lo = row.get("epsilon_lower")
    lo_s = f"{lo:9.4f}" if lo is not None else f"{'–':>9s}"
    lm = row.get("lower_method") or (row["method"] if lo is not None else "")
    zo = row.get("epsilon_lower_zero_out")
    if zo is not None:  # shuffle: the lower end that holds under zero-out neighbours only
        peer = f"[zero-out: ε ≥ {zo:.4f}]  {peer}"
    print(f"  {label:30s} {lo_s} {row['epsilon']:9.4f}  {row['method']:22s} {lm:18s} {dt:6.2f}s  {peer}")


def _allocation_peer(sigma: float, k: int, epochs: int, delta: float) -> None:
    """PLD_accounting's [lower, upper] for random allocation (k steps per epoch, E epochs) and its time, as
    a row under dpcalc's balls-in-bins row (or why it is missing)."""
    label = "  peer: PLD_accounting"
    # PLD_accounting imports numba, which imports ``coverage`` if it can: run as a script, this folder is
    # sys.path[0] and its coverage.py (the coverage sweep) would be taken for coverage.py the package.
    here = os.path.dirname(os.path.abspath(__file__))
    saved_path = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        from PLD_accounting import gaussian_allocation_epsilon_range
    except ImportError:
        print(f"  {label:30s} (PLD_accounting not installed: pip install pld-accounting==2.0)")
        return
    finally:
        sys.path[:] = saved_path
    (up, lo), pt = _timed(
        lambda: gaussian_allocation_epsilon_range(delta=delta, sigma=sigma, num_steps=k, num_epochs=epochs)
    )
    print(f"  {label:30s} {lo:9.4f} {up:9.4f}  {'random allocation':22s} {'':18s} {pt:6.2f}s  k = {k}, E = {epochs}")


def main(peer: bool = True, slow_peer: bool = False, inverse: bool = True) -> None:
    if peer:
        import dp_accounting
        from dp_accounting.dp_event import MixtureOfGaussiansDpEvent
        from dp_accounting.pld import pld_privacy_accountant as P
    for name, n, b, epochs, sigma, delta in SETTINGS:
        steps = math.ceil(epochs * n / b)
        base = (
            f"plan-sgd --dataset-size {n} --batch-size {b} --epochs {epochs} --noise-multiplier {sigma} --delta {delta}"
        )
        print(f"\n{name}: N = {n}, B = {b}, {epochs} epochs (T = {steps}), σ = {sigma}, δ = {delta:g}")
        print(
            f"  {'scheme (plan-sgd option)':30s} {'lower':>9s} {'upper':>9s}  {'upper method':22s} "
            f"{'lower method':18s} {'time':>7s}  peer (ε, time)"
        )
        d, dt = _cli(base)
        _row("poisson (default)", d["rows"][0], dt)
        q = b / n
        for bmax in (math.ceil(1.1 * b), b):
            d, dt = _cli(f"{base} --max-batch-size {bmax}")
            ptxt = ""
            if peer:

                def run(bmax=bmax):
                    acc = P.PLDAccountant(value_discretization_interval=1e-4)
                    acc.compose(dp_accounting.TruncatedSubsampledGaussianDpEvent(n, q, bmax, sigma), steps)
                    return acc.get_epsilon(delta)

                e, pt = _timed(run)
                ptxt = f"dp-accounting truncated {e:.4f}, {pt:.2f}s"
            _row(f"--max-batch-size {bmax}", d["rows"][0], dt, ptxt)
        for scheme in ("shuffle", "balls-in-bins"):
            d, dt = _cli(f"{base} --sampling {scheme}")
            ptxt = ""
            e_begun = math.ceil(steps / math.ceil(n / b))
            if peer:

                def run(e_begun=e_begun):
                    acc = P.PLDAccountant(value_discretization_interval=1e-4)
                    acc.compose(dp_accounting.GaussianDpEvent(sigma), e_begun)
                    return acc.get_epsilon(delta)

                e, pt = _timed(run)
                ptxt = f"dp-accounting Gaussian×{e_begun} {e:.4f}, {pt:.2f}s"
            _row(f"--sampling {scheme}", d["rows"][0], dt, ptxt)
            if scheme == "balls-in-bins" and peer and slow_peer:
                _allocation_peer(sigma, math.ceil(n / b), e_begun, delta)
        d, dt = _cli(f"{base} --examples-per-user 2")
        ptxt = ""
        if peer and slow_peer:

            def run():
                acc = P.PLDAccountant(value_discretization_interval=1e-4)
                acc.compose(
                    MixtureOfGaussiansDpEvent(sigma, [0, 1, 2], [(1 - q) ** 2, 2 * q * (1 - q), q * q]),
                    steps,
                )
                return acc.get_epsilon(delta)

            e, pt = _timed(run)
            ptxt = f"dp-accounting mixture {e:.4f}, {pt:.2f}s"
        _row("--examples-per-user 2", d["rows"][0], dt, ptxt)
        if inverse and name == "MNIST":
            inv = f"plan-sgd --dataset-size {n} --batch-size {b} --epochs {epochs} --delta {delta}"
            print("  inverse: --target-epsilon solving σ (ε at answer ≤ target, re-checked in full)")
            for extra, target in (
                ("", 3.0),
                ("--max-batch-size 282", 6.0),
                ("--sampling shuffle", 8.0),
                ("--sampling balls-in-bins", 8.0),
                ("--examples-per-user 2", 6.0),
            ):
                d, dt = _cli(f"{inv} --target-epsilon {target} {extra}")
                r = d["rows"][0]
                print(
                    f"  {(extra or 'poisson') + f' ε={target:g}':30s} σ = {r['noise_multiplier']:.6g}, "
                    f"ε at answer {r['epsilon']:.4f}, found {r['found']}  {dt:6.2f}s"
                )


if __name__ == "__main__":
    main(peer="--no-peer" not in sys.argv, slow_peer="--slow-peer" in sys.argv, inverse="--no-inverse" not in sys.argv)
