"""Random points of the DP-SGD box, checked against dp-accounting's two PLD estimates.

    python -m pip install -e '.[bench]'
    python benchmarks/random_box.py                  # 10 minutes, seed 20261130
    python benchmarks/random_box.py --seconds 60 --seed 1
    python benchmarks/random_box.py --steps 1e4 1e7 --no-peers --seed 7   # long runs: dpcalc alone

Draws q ∈ [1e-6, 1], σ ∈ [0.3, 100], δ ∈ [1e-12, 0.1] log-uniformly and T ∈ [1, 10⁴]
(log-uniform; longer runs make dp-accounting slow), asks dpcalc for its certified interval and
dp-accounting for its optimistic and pessimistic PLDs (connect the dots; 2e-4 grid for σ < 1,
5e-5 otherwise), and prints every point where

- WIDE: dpcalc's interval is wider than asked (it says so itself: ``met`` false);
- LOWER>pess: dpcalc's lower end is above dp-accounting's pessimistic answer;
- UPPER<opt: dpcalc's upper end is below dp-accounting's optimistic answer.

With ``--no-peers`` (for ``--steps`` up to 10⁷, where dp-accounting takes minutes a point) dpcalc
answers alone and every point is printed with its width over the width asked for and its time.

The last two are leads, not verdicts: dp-accounting returns the raw loss past ε ≈ 745, and its
FFT round-off is not bounded (at δ below about 1e-10 its answers move by 1e-3 from one grid to
the next) — check such a point with a narrower dpcalc interval before calling it a bug.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--steps", type=float, nargs=2, default=(1.0, 1e4), metavar=("FROM", "TO"))
    ap.add_argument("--no-peers", action="store_true", help="dpcalc alone: each point, its width and time")
    args = ap.parse_args()
    log_t = (float(np.log10(args.steps[0])), float(np.log10(args.steps[1])))
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    from dp_accounting.pld import privacy_loss_distribution as PLD

    from dpcalc._alloc import keep_freed_memory
    from dpcalc.core import sgd

    keep_freed_memory()
    rng = np.random.default_rng(args.seed)
    counts = {"points": 0, "WIDE": 0, "LOWER>pess": 0, "UPPER<opt": 0}
    t0 = time.time()
    while time.time() - t0 < args.seconds:
        q = float(10 ** rng.uniform(-6, 0))
        s = float(10 ** rng.uniform(np.log10(0.3), 2))
        t = int(10 ** rng.uniform(*log_t))
        d = float(10 ** rng.uniform(-12, -1))
        t_run = time.time()
        r = sgd.tight_interval(q, s, t, d)
        lo, up = float(r.lower[0]), float(r.upper[0])
        if args.no_peers:
            counts["points"] += 1
            counts["WIDE"] += int(not r.met[0])
            ratio = (up - lo) / max(1e-3 * up, 1e-4)
            print(
                f"{q!r} {s!r} {t} {d!r} [{lo:.8g}, {up:.8g}] w/need={ratio:.2f} {r.method[0]}"
                f"{'' if r.met[0] else ' WIDE'} {time.time() - t_run:.1f}s",
                flush=True,
            )
            continue
        h = 2e-4 if s < 1 else 5e-5
        try:
            pess = PLD.from_gaussian_mechanism(s, sampling_prob=q, value_discretization_interval=h).self_compose(t)
            opt = PLD.from_gaussian_mechanism(
                s, sampling_prob=q, value_discretization_interval=h, pessimistic_estimate=False
            ).self_compose(t)
            e_pess, e_opt = pess.get_epsilon_for_delta(d), opt.get_epsilon_for_delta(d)
        except Exception:  # noqa: BLE001 - a peer's failure is not ours to report here
            continue
        counts["points"] += 1
        flags = []
        if not r.met[0]:
            flags.append("WIDE")
        if lo > e_pess * (1 + 1e-6) + 1e-9:
            flags.append("LOWER>pess")
        if up < e_opt * (1 - 1e-6) - 1e-9:
            flags.append("UPPER<opt")
        for f in flags:
            counts[f] += 1
        if flags:
            print(
                f"q={q:.4g} σ={s:.4g} T={t} δ={d:.3g}: dpcalc [{lo:.8g}, {up:.8g}], "
                f"dp-accounting optimistic {e_opt:.8g}, pessimistic {e_pess:.8g}: {' '.join(flags)}",
                flush=True,
            )
    print(", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
