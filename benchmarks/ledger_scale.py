"""Composition of many releases, end to end: ledgers and stdin at 1k, 10k and 100k releases (issue 15).

Run: python benchmarks/ledger_scale.py [--sizes 1000,10000,100000] [--gdp 1000000] [--repeat 3]
                                       [--timeout 120] [--limit-mib 4096] [--only SUBSTRING]
                                       [--keep DIR] [--root CHECKOUT]

Each case is a fresh ``python -m dpcalc compose`` process: the input file is its stdin (or its
``--ledger``), stdout goes to a pipe that is read and counted, and the child's peak RSS comes from
``os.wait4`` for that very child. Times are the best of ``--repeat`` runs (the machine is shared;
the best run is the least disturbed one; one run when it takes over 10 s); the peak memory printed
is that of the fastest run.

The mixes (a dozen distinct kinds each, in a fixed pseudo-random order, every release named on
its own as a real ledger names them):

* ledger: Gaussian counts (four σ/Δ), Laplace histograms (two scales, and one on a 10 % Poisson
  sample), two DP-SGD runs (Poisson-subsampled Gaussians of 100 and 200 steps), legacy (ε, δ) and
  pure ε entries, μ-GDP entries — every kind the PLD engine takes, so the tight total runs
  (default ``--accountant pld``) beside RDP;
* stdin: the same kinds as bare objects, one per line (NDJSON), the DP-SGD runs as composed
  objects of a subsampled Gaussian;
* stdin, four kinds: the mix of the issue's measurement ({"type":"gdp","mu":0.01}, zCDP, (ε, δ),
  Gaussian; closed forms and RDP only; its (ε, δ) objects have δ = 1e-10, so that 25,000 of them
  stay below the total δ = 1e-5);
* 10⁶ identical GDP objects, one per line.

The ledger and the 12-kind stdin mix also run with ``--accountant rdp``: everything but the PLD
engine's total (closed forms, RDP, and for the ledger each distinct release's own PLD cost), to
show what the engine's one composition adds.

Goals (issue 15): 100,000 releases under 2 s and 200 MiB, from a ledger and from stdin; 10⁶
identical GDP objects under 5 s. The growth from 1k to 100k is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The ledger mix: (weight, name, TOML body lines, JSON object for stdin).
SGD1 = {
    "type": "subsampled",
    "rate": 0.001,
    "scheme": "poisson",
    "neighbours": "add-remove",
    "inner": {"type": "gaussian", "sigma": 8, "sensitivity": 1},
}
SGD2 = dict(SGD1, rate=0.0005, inner={"type": "gaussian", "sigma": 10, "sensitivity": 1})
KINDS = [
    (
        30,
        "daily active users",
        'mechanism = "gaussian"\nsigma = 2000\nsensitivity = 1',
        '{"type":"gaussian","sigma":2000}',
    ),
    (
        10,
        "weekly retention",
        'mechanism = "gaussian"\nsigma = 3000\nsensitivity = 2',
        '{"type":"gaussian","sigma":3000,"sensitivity":2}',
    ),
    (10, "region counts", 'mechanism = "gaussian"\nsigma = 5000', '{"type":"gaussian","sigma":5000}'),
    (5, "funnel sums", 'mechanism = "gaussian"\nsigma = 1500', '{"type":"gaussian","sigma":1500,"sensitivity":1}'),
    (
        10,
        "search histogram",
        'mechanism = "laplace"\nscale = 20000\nsensitivity = 2',
        '{"type":"laplace","scale":20000,"sensitivity":2}',
    ),
    (8, "click histogram", 'mechanism = "laplace"\nscale = 50000', '{"type":"laplace","scale":50000}'),
    (
        1,
        "ranking model (DP-SGD)",
        'mechanism = "gaussian"\nnoise_multiplier = 8\nrate = 0.001\ntimes = 100',
        '{"type":"composed","parts":[{"times":100,"of":%s}]}' % json.dumps(SGD1, separators=(",", ":")),
    ),
    (
        1,
        "embeddings (DP-SGD)",
        'mechanism = "gaussian"\nnoise_multiplier = 10\nrate = 0.0005\ntimes = 200',
        '{"type":"composed","parts":[{"times":200,"of":%s}]}' % json.dumps(SGD2, separators=(",", ":")),
    ),
    (
        10,
        "legacy report",
        'mechanism = "dp"\nepsilon = 1e-4\ndelta = 1e-12',
        '{"type":"dp","epsilon":1e-4,"delta":1e-12}',
    ),
    (5, "legacy pure", 'mechanism = "dp"\nepsilon = 5e-5', '{"type":"dp","epsilon":5e-5,"delta":0}'),
    (5, "gdp release", 'mechanism = "gdp"\nmu = 0.0005', '{"type":"gdp","mu":0.0005}'),
    (
        5,
        "sampled survey",
        'mechanism = "laplace"\nscale = 5000\nrate = 0.1',
        '{"type":"subsampled","rate":0.1,"inner":{"type":"laplace","scale":5000}}',
    ),
]
#: The four kinds of the issue's measurement (no PLD: closed forms and RDP).
FOUR = ['{"type":"gdp","mu":0.01}', '{"type":"zcdp","rho":1e-4}', '{"type":"dp","epsilon":0.01,"delta":1e-10}']
FOUR.append('{"type":"gaussian","sigma":50}')
DELTA = "1e-6"


def _order(n: int, weights: list[int]) -> list[int]:
    """n kind indices with the given weights, in a fixed pseudo-random order."""
    rng = random.Random(15)
    return rng.choices(range(len(weights)), weights=weights, k=n)


def write_ledger(path: Path, n: int) -> None:
    kinds = _order(n, [k[0] for k in KINDS])
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f'[ledger]\nname = "benchmark, {n} releases"\ndelta = {DELTA}\nneighbours = "add-remove"\n')
        for i, k in enumerate(kinds, 1):
            _, name, body, _ = KINDS[k]
            fh.write(f'\n[[release]]\nname = "{name} #{i}"\n{body}\n')


def write_stdin(path: Path, n: int) -> None:
    kinds = _order(n, [k[0] for k in KINDS])
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(KINDS[k][3] + "\n" for k in kinds)


def write_four(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(FOUR[i % 4] + "\n" for i in range(n))


def write_gdp(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines('{"type":"gdp","mu":0.001}\n' for _ in range(n))


def run(args: list[str], stdin: Path | None, timeout: float, limit_mib: int, root: Path = ROOT):
    """(seconds, peak RSS MiB, bytes written, exit status) of one fresh process.

    The process is killed after ``timeout`` seconds, and its address space is capped at ``limit_mib``
    (the machine is shared: a run that would take gigabytes fails instead).
    """
    env = dict(os.environ, PYTHONPATH=str(root), NO_COLOR="1")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mib << 20, limit_mib << 20))

    fin = open(stdin, "rb") if stdin is not None else subprocess.DEVNULL
    try:
        t = time.perf_counter()
        p = subprocess.Popen(
            [sys.executable, "-m", "dpcalc", *args],
            stdin=fin,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=root,  # python -m puts the working directory first on sys.path
            preexec_fn=cap,
        )
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        size = 0
        assert p.stdout is not None
        while chunk := p.stdout.read(1 << 16):
            size += len(chunk)
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.perf_counter() - t
        timer.cancel()
    finally:
        if stdin is not None:
            fin.close()
    code = os.waitstatus_to_exitcode(status)
    return seconds, usage.ru_maxrss / 1024, size, code


def best_of(args, stdin, repeat: int, timeout: float, limit_mib: int, root: Path):
    best = None
    for _ in range(repeat):
        r = run(args, stdin, timeout, limit_mib, root)
        if best is None or r[0] < best[0]:
            best = r
        if r[0] > 10 or r[3] != 0:  # one run is enough when it is slow (or fails)
            break
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="release counts (default 1000,10000,100000)")
    ap.add_argument("--gdp", type=int, default=1_000_000, help="identical GDP objects on stdin (0: skip)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best is shown (default 3)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run before it is killed")
    ap.add_argument("--limit-mib", type=int, default=4096, help="address-space cap per run, MiB (default 4096)")
    ap.add_argument("--root", default=str(ROOT), help="the dpcalc checkout to run (default: this one)")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    ap.add_argument("--keep", default=None, help="write the inputs to this directory and keep them")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",") if s]
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="dpcalc-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    cases = []  # (family, n, dpcalc arguments, stdin file, goal)
    for n in sizes:
        goal = "< 2 s, < 200 MiB" if n == 100_000 else ""
        led = tmp / f"ledger-{n}.toml"
        write_ledger(led, n)
        cases.append(("ledger TOML (table)", n, ["compose", "--ledger", str(led)], None, goal))
        cases.append(("ledger TOML (--json)", n, ["compose", "--ledger", str(led), "--json"], None, goal))
        rdp = ["--accountant", "rdp"]
        cases.append(("ledger TOML (table, --accountant rdp)", n, ["compose", "--ledger", str(led), *rdp], None, goal))
        mix = tmp / f"stdin-{n}.ndjson"
        write_stdin(mix, n)
        cases.append(("stdin NDJSON, 12 kinds", n, ["compose", "--delta", DELTA], mix, goal))
        cases.append(("stdin NDJSON, 12 kinds (--accountant rdp)", n, ["compose", "--delta", DELTA, *rdp], mix, goal))
        four = tmp / f"four-{n}.ndjson"
        write_four(four, n)
        cases.append(("stdin NDJSON, 4 kinds", n, ["compose", "--delta", "1e-5"], four, goal))
    if a.gdp:
        g = tmp / f"gdp-{a.gdp}.ndjson"
        write_gdp(g, a.gdp)
        cases.append(("stdin NDJSON, identical GDP", a.gdp, ["compose", "--delta", "1e-5"], g, "< 5 s"))
    print(f"{'case':<44} {'releases':>9} {'seconds':>8} {'peak MiB':>9} {'out bytes':>10} {'exit':>5}  goal")
    seconds: dict[tuple[str, int], float] = {}
    try:
        for family, n, args, stdin, goal in cases:
            if a.only not in family:
                continue
            dt, mib, size, code = best_of(args, stdin, a.repeat, a.timeout, a.limit_mib, Path(a.root).resolve())
            shown = f">{a.timeout:.0f}" if dt > a.timeout else f"{dt:.2f}"
            seconds[(family, n)] = dt if dt <= a.timeout and code == 0 else math.nan
            print(f"{family:<44} {n:>9,} {shown:>8} {mib:9.1f} {size:10d} {code:5d}  {goal}", flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    # Growth: seconds at each size over seconds at the smallest (linear work grows by n / smallest n;
    # less while start-up dominates).
    if len(sizes) > 1:
        print(f"\ngrowth: seconds at n / seconds at {sizes[0]:,} (linear work: at most n / {sizes[0]:,})")
        for family in dict.fromkeys(f for f, n in seconds if n in sizes):
            base = seconds.get((family, sizes[0]), math.nan)
            steps = ", ".join(f"{n:,}: {seconds.get((family, n), math.nan) / base:.1f}x" for n in sizes[1:])
            print(f"  {family:<42} {steps}")


if __name__ == "__main__":
    main()
