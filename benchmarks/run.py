"""dpcalc benchmarks: one command, peers measured in the same run.

    python -m pip install -e '.[bench]'
    python benchmarks/run.py            # everything
    python benchmarks/run.py --quick    # skip prv-accountant and the inverse searches

Prints, for each DP-SGD case of issue 3, dpcalc's certified PLD interval and
time, dp-accounting's PLD accountant (value_discretization_interval 1e-4)
and prv-accountant (when installed), with time ratios; then the inverse
search for σ at a target ε; then peak memory of a 10⁶-step composition;
then start-up times (benchmarks/startup.py). Each tool gets one untimed
warm-up call, and each time is the best of three runs (one when over 2 s).

The process first applies dpcalc's allocator setting (dpcalc._alloc: freed
large arrays stay in the heap), as the dpcalc command does; it is
process-wide, so every tool timed here runs with it.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
import warnings

from machine import describe

warnings.simplefilter("ignore")

CASES = [  # (q, σ, T, δ)
    (0.01, 1.1, 10000, 1e-5),
    (0.01, 4.0, 10000, 1e-5),
    (256 / 60000, 1.1, 14062, 1e-5),
    (0.001, 0.8, 100000, 1e-6),
    (0.1, 2.0, 1000, 1e-5),
    (0.01, 0.6, 1000, 1e-5),
    (0.004, 1.0, 250000, 1e-6),
]
INVERSE_TARGETS = [1.0, 3.0, 8.0]
Q_MNIST = 256 / 60000
T_MNIST = math.ceil(60 / Q_MNIST)


def timed(fn, repeat: int = 3):
    """(result, seconds): the best of up to ``repeat`` runs (one run when it takes over 2 s).

    Every tool is timed the same way, after a warm-up call (imports, FFT plans).
    """
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
        if best > 2.0:
            break
    return out, best


def warm_up(use_prv: bool) -> None:
    """One small untimed call per tool, so that no tool's first case pays for imports."""
    dpcalc_forward(0.01, 1.0, 100, 1e-5)
    dpa_forward(0.01, 1.0, 100, 1e-5)
    if use_prv:
        prv_forward(0.01, 1.0, 100, 1e-5)


def dpcalc_forward(q, s, t, d, width=None):
    from dpcalc.core import sgd

    kw = {} if width is None else {"rel": width, "abs_": width / 10}
    lo, up = sgd.pld_interval(q, s, t, d, **kw)
    return float(lo[0]), float(up[0])


def dpa_forward(q, s, t, d):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant as P

    acc = P.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(s)), t)
    return acc.get_epsilon(d)


def prv_forward(q, s, t, d):
    from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

    acc = PRVAccountant(
        prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=s, sampling_probability=q)],
        max_self_compositions=[t],
        eps_error=0.001 * 5,
        delta_error=d / 1000,
    )
    return acc.compute_epsilon(delta=d, num_self_compositions=[t])


def dpcalc_inverse(target):
    from dpcalc.core import sgd

    sol = sgd.solve_sigma(Q_MNIST, T_MNIST, 1e-5, target, "pld")
    return float(sol.value[0]), float(sol.epsilon[0])


def dpa_inverse(target):
    import dp_accounting
    from dp_accounting import mechanism_calibration as mc
    from dp_accounting.pld import pld_privacy_accountant as P

    def make_event(sigma):
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(Q_MNIST, dp_accounting.GaussianDpEvent(sigma)), T_MNIST
        )

    sigma = mc.calibrate_dp_mechanism(
        lambda: P.PLDAccountant(value_discretization_interval=1e-4),
        make_event,
        target,
        1e-5,
        mc.LowerEndpointAndGuess(0.3, 1.0),
        tol=1e-3,
    )
    return sigma


_PEAK = """
import resource, sys
try:  # VmHWM belongs to this program's own address space (ru_maxrss can carry the parent's over exec)
    with open("/proc/self/status") as f:
        print([int(line.split()[1]) for line in f if line.startswith("VmHWM:")][0])
except OSError:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_memory_mib(code: str) -> float:
    """Peak resident memory (MiB) of a fresh interpreter running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", code + "\n" + _PEAK], capture_output=True, text=True, check=True
    ).stdout.split()[-1]
    return int(out) / 1024


def have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="skip prv-accountant and the inverse searches")
    args = ap.parse_args()
    use_prv = have("prv_accountant") and not args.quick
    from dpcalc._alloc import keep_freed_memory

    kept = keep_freed_memory()
    print(describe())
    print(f"Allocator: freed large arrays kept in the heap for every tool: {'yes' if kept else 'no (not glibc)'}.")
    warm_up(use_prv)

    print(
        "Forward DP-SGD cases (ε at δ). dpcalc: certified PLD interval [lower, upper], default width\n"
        "<= max(0.1 % of ε, 1e-4), upper end on a 2^-14 (6.1e-5) grid where it fits; dp-accounting:\n"
        "pessimistic PLD on a 1e-4 grid."
    )
    head = f"{'q':>9} {'σ':>5} {'T':>7} {'δ':>6} | {'dpcalc [lower, upper]':>22} {'s':>6} | "
    head += f"{'dp-acc 1e-4':>11} {'s':>6} {'×':>6}"
    if use_prv:
        head += f" | {'prv [lower, upper]':>20} {'s':>6} {'×':>6}"
    print(head)
    ratios_dpa, ratios_prv, dpa_results = [], [], []
    for q, s, t, d in CASES:
        (lo, up), t_us = timed(lambda: dpcalc_forward(q, s, t, d))
        e_dpa, t_dpa = timed(lambda: dpa_forward(q, s, t, d))
        dpa_results.append((e_dpa, t_dpa))
        ratios_dpa.append(t_dpa / t_us)
        line = (
            f"{q:9.6g} {s:5g} {t:7d} {d:6.0e} | [{lo:9.5f}, {up:9.5f}] {t_us:6.2f} | {e_dpa:11.5f} {t_dpa:6.2f} "
            f"{t_dpa / t_us:6.2f}"
        )
        if use_prv:
            (p_lo, p_est, p_up), t_prv = timed(lambda: prv_forward(q, s, t, d))
            ratios_prv.append(t_prv / t_us)
            line += f" | [{p_lo:8.5f}, {p_up:8.5f}] {t_prv:6.2f} {t_prv / t_us:6.2f}"
        flag = "" if up <= e_dpa * (1 + 1e-9) else "  (upper above dp-accounting's)"
        print(line + flag)
    med = sorted(ratios_dpa)[len(ratios_dpa) // 2]
    print(
        f"median time ratio dp-accounting / dpcalc: {med:.2f}×"
        + (f"; prv-accountant / dpcalc: {sorted(ratios_prv)[len(ratios_prv) // 2]:.2f}×" if ratios_prv else "")
    )

    print(
        f"\nThe same cases with a 1e-5 interval (--pld-width 1e-5), against dp-accounting's times above:\n"
        f"{'q':>9} {'σ':>5} {'T':>7} {'δ':>6} | {'dpcalc [lower, upper]':>22} {'s':>6} | {'×':>6}  upper <= dp-acc"
    )
    ratios_narrow = []
    for (q, s, t, d), (e_dpa, t_dpa) in zip(CASES, dpa_results):
        (lo, up), t_us = timed(lambda: dpcalc_forward(q, s, t, d, width=1e-5))
        ratios_narrow.append(t_dpa / t_us)
        print(
            f"{q:9.6g} {s:5g} {t:7d} {d:6.0e} | [{lo:9.5f}, {up:9.5f}] {t_us:6.2f} | {t_dpa / t_us:6.2f}  "
            f"{'yes' if up <= e_dpa * (1 + 1e-9) else 'no'}"
        )
    print(f"median time ratio dp-accounting / dpcalc at 1e-5: {sorted(ratios_narrow)[len(ratios_narrow) // 2]:.2f}×")

    if not args.quick:
        print(f"\nInverse: smallest σ for a target ε at δ = 1e-5, q = 256/60000, 60 epochs (T = {T_MNIST}).")
        print(f"{'target ε':>8} | {'dpcalc σ':>9} {'ε at σ':>8} {'s':>6} | {'dp-acc σ':>9} {'s':>6} {'×':>6}")
        for target in INVERSE_TARGETS:
            (sig, eps), t_us = timed(lambda: dpcalc_inverse(target))
            sig_d, t_d = timed(lambda: dpa_inverse(target))
            print(f"{target:8g} | {sig:9.5f} {eps:8.5f} {t_us:6.2f} | {sig_d:9.5f} {t_d:6.2f} {t_d / t_us:6.2f}")

    code = (
        "from dpcalc._alloc import keep_freed_memory\nkeep_freed_memory()\n"
        "from dpcalc.core import sgd\nsgd.pld_interval(4e-3, 3.0, 1_000_000, 1e-6)"
    )
    print(f"\nPeak memory, PLD interval at T = 10⁶ (q = 0.004, σ = 3): {peak_memory_mib(code):.0f} MiB")
    print()
    subprocess.run([sys.executable, __file__.replace("run.py", "startup.py")], check=True)


if __name__ == "__main__":
    main()
