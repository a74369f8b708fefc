"""One line naming what a benchmark ran on, printed at the top of its output.

Results move with the machine: a peer's last digits follow its numpy build and the CPU's BLAS
kernels (dp-accounting 0.6.0's answer at q = 1e-4, σ = 0.5, 10⁴ steps, δ = 1e-8 was 3.57964 on one
machine and 3.5796137 on another), dpcalc's certified ends can differ by a small share of their
width, and times by tens of per cent. A record that names its machine can be compared with the
next one.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata

PACKAGES = ("numpy", "scipy", "dp-accounting", "prv-accountant")


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe() -> str:
    """Python and the packages that set the numbers (installed versions), the CPU and the cores usable."""
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name} not installed")
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 0
    blas = os.environ.get("OPENBLAS_NUM_THREADS")
    threads = f", OPENBLAS_NUM_THREADS={blas}" if blas else ""
    return f"Machine: Python {platform.python_version()}, {', '.join(versions)}; {_cpu()}, {cores} cores{threads}."
