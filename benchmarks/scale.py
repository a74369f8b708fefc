"""Wall time and peak memory of the largest requests dpcalc accepts (issue 16).

Each case runs in a fresh process with a timeout; peak RSS is the child's
ru_maxrss (resource.getrusage(RUSAGE_CHILDREN) taken around each run, which
reports the largest child so far, so each case runs in its own wrapper
process). Output: one line per case with seconds, peak RSS in MiB and the
exit code ("timeout" past the limit).

Run: python benchmarks/scale.py [--timeout SECONDS] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

MNIST = "--dataset-size 60000 --batch-size 256 --delta 1e-5"

#: (name, dpcalc arguments). Sizes at the limits the CLI states.
CASES = [
    ("plan-sgd --per-epoch, 1,000 epochs (pld)", f"plan-sgd {MNIST} --epochs 1000 --noise-multiplier 1.1 --per-epoch"),
    (
        "plan-sgd --per-epoch, 10,000 epochs (pld)",
        f"plan-sgd {MNIST} --epochs 10000 --noise-multiplier 1.1 --per-epoch",
    ),
    (
        "plan-sgd --per-epoch, 10,000 epochs (rdp)",
        f"plan-sgd {MNIST} --epochs 10000 --noise-multiplier 1.1 --per-epoch --accountant rdp",
    ),
    (
        "plan-sgd δ grid of 10,000 points (pld)",
        "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 60 --noise-multiplier 1.1 "
        "--delta 1e-12:1e-3:10000:log",
    ),
    (
        "plan-sgd σ grid of 10,000 points (pld lattice)",
        "plan-sgd --rate 0.01 --steps 1000 --noise-multiplier 0.5:2:10000 --delta 1e-5",
    ),
    (
        "plan-sgd σ × steps grid of 100 × 100 (pld lattice)",
        "plan-sgd --rate 0.01 --steps 100:10000:100 --noise-multiplier 0.5:2:100 --delta 1e-5",
    ),
    (
        "plan-sgd dataset-size grid of 10,000 (q and T vary)",
        "plan-sgd --dataset-size 10000:1009900:10000 --batch-size 256 --epochs 10 --noise-multiplier 1 --delta 1e-7",
    ),
    (
        "amplify gaussian σ grid of 10,000 (pld lattice, rdp rows)",
        "amplify gaussian --rate 0.01 --steps 1000 --sigma 0.5:2:10000 --delta 1e-5",
    ),
    (
        "plan-sgd --target-epsilon grid of 1,000 (solve σ, pld)",
        f"plan-sgd {MNIST} --epochs 60 --target-epsilon 1:10:1000",
    ),
    (
        "plan-sgd --target-epsilon 3, σ grid of 10,000 (solve epochs on a lattice)",
        f"plan-sgd {MNIST} --noise-multiplier 0.6:2:10000 --target-epsilon 3",
    ),
    (
        "plan-sgd --target-epsilon, epochs × targets grid of 100 × 100 (solve σ on a lattice)",
        f"plan-sgd {MNIST} --epochs 1:100:100 --target-epsilon 1:10:100",
    ),
    (
        "plan-sgd --target-advantage grid of 1,000 (solve σ on a lattice)",
        "plan-sgd --rate 0.01 --steps 1000 --target-advantage 0.05:0.5:1000",
    ),
    (
        "plan-sgd --sampling shuffle --target-epsilon grid of 1,000 (on a lattice)",
        f"plan-sgd {MNIST} --epochs 2 --sampling shuffle --target-epsilon 1:5:1000",
    ),
    ("plan-sgd --target-epsilon 1000 (solve σ, pld)", f"plan-sgd {MNIST} --epochs 60 --target-epsilon 1000"),
    ("plan-sgd --target-epsilon 1e6 (solve σ, pld)", f"plan-sgd {MNIST} --epochs 60 --target-epsilon 1e6"),
    ("plan-sgd --target-epsilon 3 (solve epochs, pld)", f"plan-sgd {MNIST} --noise-multiplier 1.1 --target-epsilon 3"),
    (
        "plan-sgd --target-epsilon 0.7981 (solve 2.4e8 steps, pld)",
        "plan-sgd --rate 3.39857e-05 --noise-multiplier 2.435 --delta 1.67e-05 --target-epsilon 0.7981",
    ),
    (
        "plan-sgd --target-epsilon 0.1 (solve σ at q = 1e-6, 10 steps, δ = 1e-12, pld)",
        "plan-sgd --rate 1e-6 --steps 10 --delta 1e-12 --target-epsilon 0.1",
    ),
    (
        "plan-sgd --target-epsilon 0.1 (solve σ at q = 1e-6, 100 steps, δ = 1e-12, pld)",
        "plan-sgd --rate 1e-6 --steps 100 --delta 1e-12 --target-epsilon 0.1",
    ),
    (
        "plan-sgd --target-epsilon 3 (solve batch size, pld)",
        "plan-sgd --dataset-size 60000 --epochs 60 --noise-multiplier 1.1 --delta 1e-5 --target-epsilon 3",
    ),
    (
        "plan-sgd --to attack, σ = 0.7 (pld risk profile)",
        f"plan-sgd {MNIST} --epochs 60 --noise-multiplier 0.7 --to attack --fpr 0.001,0.01",
    ),
    (
        "plan-sgd --to tradeoff, σ = 1.1 (pld risk profile)",
        f"plan-sgd {MNIST} --epochs 60 --noise-multiplier 1.1 --to tradeoff --alpha 1e-5,1e-3,0.1",
    ),
    (
        "plan-sgd --to attack, σ grid of 10,000 (lattice of 128 runs)",
        "plan-sgd --rate 0.01 --steps 1000 --noise-multiplier 0.5:2:10000 --to attack --fpr 0.001,0.01",
    ),
    (
        "plan-sgd --to tradeoff, q × T grid of 100 × 100 (lattice)",
        "plan-sgd --rate 0.001:0.1:100:log --steps 100:10000:100 --noise-multiplier 1 --to tradeoff --alpha 0.01",
    ),
    (
        "plan-sgd --sampling shuffle, σ grid of 10,000 (lattice)",
        f"plan-sgd {MNIST} --epochs 2 --noise-multiplier 1:2:10000 --sampling shuffle",
    ),
    (
        "plan-sgd --sampling shuffle, δ grid of 10,000 (zero-out lower ends at once)",
        "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 10 --noise-multiplier 1.1 --sampling shuffle "
        "--delta 1e-12:1e-3:10000:log",
    ),
    (
        "plan-sgd --max-batch-size, σ × epochs grid of 100 × 100 (lattice)",
        f"plan-sgd {MNIST} --epochs 1:10:100 --noise-multiplier 1:2:100 --max-batch-size 300",
    ),
    (
        "plan-sgd --examples-per-user 4, σ grid of 10,000 (lattice, rdp-group rows in one call)",
        "plan-sgd --examples-per-user 4 --rate 0.01 --steps 1000 --noise-multiplier 0.8:3:10000 --delta 1e-5",
    ),
    (
        "amplify gaussian σ × q grid of 100 × 100 (single steps, 2,048 rows at a time)",
        "amplify gaussian --sigma 0.5:5:100 --rate 0.0001:0.5:100:log --delta 1e-5",
    ),
    (
        "compose randomized-response, ε₀ grid of 10,000 (lattice of 128)",
        "compose randomized-response --epsilon 0.01:2:10000 --times 100 --delta 1e-6",
    ),
    (
        "compose discrete-laplace, scale grid of 10,000 (lattice of 128)",
        "compose discrete-laplace --scale 1:100:10000 --times 100 --delta 1e-6",
    ),
    (
        "compose discrete-gaussian, times grid of 10,000 (lattice of 128)",
        "compose discrete-gaussian --sigma 30 --times 1:10000:10000 --delta 1e-6",
    ),
    ("amplify gaussian --orders 1e6", "amplify gaussian --sigma 1 --rate 0.01 --orders 1e6"),
    ("amplify gaussian --orders 1e8 (refused)", "amplify gaussian --sigma 1 --rate 0.01 --orders 1e8"),
    ("amplify gaussian --orders 1e12 (refused)", "amplify gaussian --sigma 1 --rate 0.01 --orders 1e12"),
    ("amplify gaussian 10,000 σ --orders 2,4,8", "amplify gaussian --sigma 1:1e6:10000:log --rate 0.01 --orders 2,4,8"),
    ("convert 2,000 piped Gaussians", "convert --delta 1e-5 --input {STREAM_2000}"),
    ("group 2,000 piped Gaussians", "group --size 2 --delta 1e-5 --input {STREAM_2000}"),
    ("convert 100,001 piped Gaussians (refused)", "convert --delta 1e-5 --input {STREAM_100001}"),
    (
        "calibrate discrete-gaussian, σ = 4e4 (tiny ε)",
        "calibrate discrete-gaussian --epsilon 1e-320,1e-12,1e-8 --delta 1e-5,1e-3",
    ),
    ("calibrate discrete-gaussian, σ = 1.47e5", "calibrate discrete-gaussian --epsilon 1e-8 --delta 2.7e-6"),
    (
        "convert discrete-gaussian, σ grid of 10,000 (exact, σ by σ)",
        "convert discrete-gaussian --sigma 1:300:10000 --delta 1e-6",
    ),
    (
        "calibrate discrete-gaussian, ε grid of 10,000 (one σ search a row)",
        "calibrate discrete-gaussian --epsilon 0.01:5:10000 --delta 1e-6",
    ),
    (
        "compose discrete-gaussian, σ grid of 1,000 at 10 runs (law of the sum, else PLD)",
        "compose discrete-gaussian --sigma 0.1:1000:1000:log --times 10 --delta 1e-6",
    ),
    (
        "convert discrete-gaussian σ = 1e5, Δ = 1e6 --to attack (2.7 M atoms)",
        "convert discrete-gaussian --sigma 1e5 --sensitivity 1000000 --to attack",
    ),
]


def _streams(tmp: str) -> dict[str, str]:
    """Files of n piped Gaussian mechanisms for the stream cases (one JSON object per line)."""
    out = {}
    for n in (2000, 100_001):
        path = os.path.join(tmp, f"stream-{n}.ndjson")
        with open(path, "w") as fh:
            fh.writelines(json.dumps({"type": "gaussian", "sigma": 1.0 + 1e-6 * i}) + "\n" for i in range(n))
        out[f"STREAM_{n}"] = path
    return out


#: Runs one command and prints its wall time, peak RSS (KiB) and exit code as JSON (the wrapper
#: process, so that ru_maxrss of its children is this command's alone).
_WRAPPER = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
try:
    rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        timeout=float(sys.argv[1])).returncode
except subprocess.TimeoutExpired:
    rc = "timeout"
dt = time.perf_counter() - t
print(json.dumps([dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc]))
"""


def run(args: str, timeout: float) -> tuple[float, float, object]:
    cmd = [sys.executable, "-c", _WRAPPER, str(timeout), sys.executable, "-m", "dpcalc", *args.split()]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60)
    dt, kib, rc = json.loads(out.stdout.strip().splitlines()[-1])
    return dt, kib / 1024.0, rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per case (default 300)")
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    a = ap.parse_args()
    print(f"{'case':<58} {'seconds':>9} {'peak MiB':>9} {'exit':>8}", flush=True)
    tmp = tempfile.mkdtemp(prefix="dpcalc-scale-")
    streams = _streams(tmp)
    for name, args in CASES:
        if a.only not in name:
            continue
        dt, mib, rc = run(args.format(**streams) if "{" in args else args, a.timeout)
        shown = f">{a.timeout:.0f}" if rc == "timeout" else f"{dt:.1f}"
        print(f"{name:<58} {shown:>9} {mib:9.0f} {rc!s:>8}", flush=True)


if __name__ == "__main__":
    main()
