"""The numeric box users reach: every command at its extremes gives a finite sound answer or a clear refusal.

δ down to 1e-300, ε up to 1e3, T up to 1e9, q from 1e-9 to 1, σ from 0.05 to 1e5, group sizes up to 1e6.
"""

import itertools
import json

import pytest
from click.testing import CliRunner

from dpcalc.cli import cli

D = ["1e-300", "1e-12", "0.5"]
E = ["1e-6", "1e3"]
T = ["1", "1e9"]
Q = ["1e-9", "1"]
S = ["0.05", "1e5"]
K = ["1", "1e6"]


def _cases():
    cases = []
    for e, d in itertools.product(E, D):
        cases += [
            f"calibrate gaussian --epsilon {e} --delta {d}",
            f"calibrate laplace --epsilon {e}",
            f"convert dp --epsilon {e} --delta {d} --to gdp",
            f"convert dp --epsilon {e} --delta {d} --to attack",
            f"convert gdp --mu {e} --delta {d}",
            f"convert gdp --mu {e} --epsilon {e}",
            f"convert zcdp --rho {e} --delta {d}",
            f"amplify dp --epsilon {e} --delta {d} --rate 1e-9",
        ]
        cases += [f"group dp --epsilon {e} --delta {d} --size {k}" for k in K]
        cases += [f"group zcdp --rho {e} --size {k}" for k in K]
        for t in T:
            cases += [
                f"compose dp --epsilon {e} --delta {d} --times {t}",
                f"compose gdp --mu {e} --times {t} --delta {d}",
                f"compose zcdp --rho {e} --times {t} --delta {d}",
            ]
    for s, d, t, q in itertools.product(S, D, T, Q):
        cases += [
            f"plan-sgd --rate {q} --steps {t} --sigma {s} --delta {d}",
            f"compose gaussian --sigma {s} --times {t} --delta {d}",
            f"compose mixed --subsampled-gaussian {q},{s},{t} --delta {d}",
        ]
        cases += [f"group gaussian --sigma {s} --size {k} --delta {d}" for k in K]
        cases.append(f"plan-sgd --rate {q} --steps {t} --sigma {s} --delta {d} --sampling without-replacement")
    for s, d, q in itertools.product(S, D, Q):
        cases.append(f"plan-sgd --rate {q} --sigma {s} --delta {d} --target-epsilon 1")
    for d, q in itertools.product(D, Q):
        cases.append(f"plan-sgd --rate {q} --steps 1000 --delta {d} --target-epsilon 1e-6")
    return list(dict.fromkeys(cases))  # each command once (several don't use every varied value)


@pytest.mark.parametrize("args", _cases())
def test_extreme_inputs(args):
    r = CliRunner().invoke(cli, args.split() + ["--json"])
    assert r.exit_code in (0, 2), r.stderr
    assert "internal error" not in r.stderr and "Warning" not in r.stderr
    if r.exit_code == 2:
        assert r.stderr.startswith("Error:") and r.stderr.count("\n") == 1
        return
    for row in json.loads(r.stdout)["rows"]:
        for key in ("epsilon", "delta", "mu", "rho", "sigma", "noise_multiplier"):
            v = row.get(key)
            if isinstance(v, float):
                assert v >= 0, (key, v)
