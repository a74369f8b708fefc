"""Wall time and peak memory of printing big results: table, csv, json and ndjson at 10,000 and 100,000 rows.

Run: python benchmarks/render_scale.py [--rows 10000,100000] [--formats table,csv,json,ndjson]

Each case is a fresh ``dpcalc convert gdp`` process with stdout to a pipe that is read and counted
(a pipe, not a terminal, as in ``dpcalc ... | grep``). Its peak RSS comes from ``os.wait4`` for that
very child. The GDP → (ε, δ) conversion itself is cheap (compare csv with table: the difference is
the table renderer). Requirement (issue 16): a 100,000-row table in under 5 s and 300 MiB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DELTAS = ",".join(f"1e-{k}" for k in range(5, 15))  # 10 values: rows = 10 × the μ count


def _args(rows: int, fmt: str) -> list[str]:
    if rows % 10:
        raise SystemExit("--rows must be multiples of 10")
    return ["convert", "gdp", "--mu", f"0.01:10:{rows // 10}", "--delta", DELTAS, "--format", fmt]


def run(rows: int, fmt: str) -> tuple[float, float, int, int]:
    """(seconds, peak RSS MiB, bytes written, exit status) of one fresh process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1")
    t = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "dpcalc", *_args(rows, fmt)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,  # python -m puts the working directory first on sys.path
    )
    size = 0
    assert p.stdout is not None
    while chunk := p.stdout.read(1 << 16):
        size += len(chunk)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - t
    return seconds, usage.ru_maxrss / 1024, size, p.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="10000,100000")
    ap.add_argument("--formats", default="table,csv,json,ndjson")
    ns = ap.parse_args()
    print(f"{'rows':>8} {'format':<7} {'seconds':>8} {'peak MiB':>9} {'bytes':>11} {'exit':>5}")
    for rows in (int(r) for r in ns.rows.split(",")):
        for fmt in ns.formats.split(","):
            seconds, mib, size, code = run(rows, fmt)
            print(f"{rows:>8} {fmt:<7} {seconds:8.2f} {mib:9.1f} {size:11d} {code:5d}", flush=True)


if __name__ == "__main__":
    main()
