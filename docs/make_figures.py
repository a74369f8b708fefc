"""Draw the README's figures, one of each kind of plot: ``python docs/make_figures.py``.

Each figure is the real command line with ``--plot docs/figures/NAME.png``, so the pictures are what a user
gets (matplotlib is needed: ``pip install -e '.[plot]'``). The PNGs are committed. The tests do not compare
their pixels, which change with matplotlib's version, its fonts and freetype: they check that every figure
listed here exists as a PNG, that nothing else is in docs/figures, and that the README shows each one with the
command below. Rerun this script after changing what a plot shows, and look at the pictures.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: name → dpcalc arguments (without --plot).
FIGURES = [
    ("epsilon-delta", "compose gaussian --sigma 2 --times 1000 --delta 1e-10:1e-2:17:log"),
    ("tradeoff", "convert dp --epsilon 0.5,1 --delta 1e-5 --to tradeoff --alpha 0:1:41"),
    ("attack", "convert gaussian --sigma 1,2,4 --to attack --fpr 0:1:21"),
    (
        "epochs",
        "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 30 --noise-multiplier 1.1 --delta 1e-5 "
        "--per-epoch --accountant all",
    ),
    ("sigma-epsilon", "calibrate gaussian --epsilon 0.1:0.9:17 --delta 1e-5,1e-7 --method classical"),
]


def main() -> None:
    out = ROOT / "docs" / "figures"
    out.mkdir(parents=True, exist_ok=True)
    keep = {f"{name}.png" for name, _ in FIGURES}
    for stale in out.iterdir():
        if stale.name not in keep:
            stale.unlink()
    for name, args in FIGURES:
        target = f"docs/figures/{name}.png"
        cmd = [sys.executable, "-m", "dpcalc", *shlex.split(args), "--plot", target]
        subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        print(f"wrote {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
