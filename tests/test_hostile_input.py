"""Every document or ledger a user (or an adversary) can pipe in is answered or refused with one line.

Issue 15, item 2: hypothesis *generates* hostile input — documents nested thousands deep, integers
of thousands of digits, floats that overflow, truncated and byte-flipped JSON and TOML, non-UTF-8
bytes, TOML literals JSON has no word for (inf, nan, dates) — and every one must give exit 0, 1 or
2, never the internal-error exit 3 or a traceback; exit 2 is exactly one `Error:` line on stderr.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpcalc.cli import cli

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- pieces of documents

plausible = st.floats(1e-3, 10).map(repr)
numbers = st.one_of(
    plausible,  # twice: so that many generated documents are answered, not only refused
    plausible,
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(1, 6000).map(lambda n: "9" * n),  # integers longer than Python's int-string limit
    st.integers(-400, 400).map(lambda e: f"1e{e}"),  # overflow to inf, underflow to 0
    st.sampled_from(["-0", "0.0", "1e999", "-1e999", "NaN", "Infinity", "-Infinity", "1E-400", "4.9e-324"]),
)
fields = st.sampled_from(
    ["type", "mu", "sigma", "sensitivity", "rho", "epsilon", "delta", "scale", "rate", "inner", "parts", "times",
     "of", "orders", "values", "scheme", "neighbours", "schema_version", "objects", "sigma "]
)  # fmt: skip
types = st.sampled_from(["gdp", "gaussian", "laplace", "dp", "zcdp", "rdp", "subsampled", "composed", "GDP", ""])


def _json_value(depth: int):
    leaf = st.one_of(numbers, types.map(json.dumps), st.sampled_from(["true", "false", "null", '"x"', "[]", "{}"]))
    if depth == 0:
        return leaf
    inner = _json_value(depth - 1)
    return st.one_of(
        leaf,
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(fields, inner), max_size=4).map(
            lambda kv: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in kv) + "}"
        ),
    )


# Objects of the right shape whose numbers are drawn from the hostile list above.
SHAPES = {
    "gdp": ["mu"], "gaussian": ["sigma", "sensitivity"], "laplace": ["scale", "sensitivity"],
    "dp": ["epsilon", "delta"], "zcdp": ["rho"],
}  # fmt: skip


@st.composite
def shaped(draw) -> str:
    kind = draw(st.sampled_from(sorted(SHAPES)))
    body = ", ".join(f'"{k}": {draw(numbers)}' for k in SHAPES[kind])
    obj = f'{{"type": "{kind}", {body}}}'
    how = draw(st.sampled_from(["bare", "subsampled", "composed", "list"]))
    if how == "subsampled":
        return f'{{"type": "subsampled", "rate": {draw(numbers)}, "inner": {obj}}}'
    if how == "composed":
        return f'{{"type": "composed", "parts": [{{"times": {draw(numbers)}, "of": {obj}}}]}}'
    if how == "list":
        return f"[{obj}, {obj}]"
    return obj


def _deep(depth: int, opener: str) -> str:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "[":
        return "[" * depth + "1" + "]" * depth
    return '{"inner": ' * depth + '{"type": "gdp", "mu": 1}' + closer * depth


def _mangle(text: str, data) -> bytes:
    """Truncate, flip a byte, or splice in bytes that are not UTF-8."""
    raw = text.encode()
    how = data.draw(st.sampled_from(["keep"] * 4 + ["truncate", "flip", "latin1", "nul"]))
    if not raw or how == "keep":
        return raw
    i = data.draw(st.integers(0, len(raw) - 1))
    if how == "truncate":
        return raw[:i]
    if how == "flip":
        return raw[:i] + bytes([raw[i] ^ data.draw(st.integers(1, 255))]) + raw[i + 1 :]
    if how == "latin1":
        return raw[:i] + b"\xe9\xff" + raw[i:]
    return raw[:i] + b"\x00" + raw[i:]


def _check(args: list[str], stdin: bytes | None, what) -> None:
    r = CliRunner().invoke(cli, args, input=stdin)
    out = r.stdout + r.stderr
    assert r.exit_code in (0, 1, 2), (args, what, r.exit_code, out[-400:], r.exception)
    assert "Traceback" not in out and "internal error" not in out, (args, what, out[-400:])
    if r.exit_code == 2:
        assert r.stderr.startswith("Error:") and r.stderr.count("\n") == 1, (args, what, r.stderr[:400])
        assert not r.stdout, (args, what, r.stdout[:200])
        assert "sys.set_int_max_str_digits" not in r.stderr, r.stderr  # Python's advice is not the user's
    else:
        for bad in ("nan", "inf"):
            assert f" {bad} " not in f" {r.stdout.lower()} ", (args, what, r.stdout[:400])


PIPE_COMMANDS = [["compose", "--delta", "1e-5"], ["amplify", "--rate", "0.01"], ["group", "--size", "3"],
                 ["convert", "--delta", "1e-6"], ["compose", "--delta", "1e-5", "--json"]]  # fmt: skip


@SETTINGS
@given(st.sampled_from(PIPE_COMMANDS), st.one_of(shaped(), _json_value(3)), st.data())
def test_generated_documents_are_answered_or_refused(args, doc, data):
    stdin = _mangle(doc, data)
    _check(args, stdin, stdin[:300])


@SETTINGS
@given(
    st.sampled_from(PIPE_COMMANDS),
    st.integers(50, 200_000),
    st.sampled_from(["[", "{"]),
    st.booleans(),
)
def test_deeply_nested_documents_are_refused(args, depth, opener, wrap):
    doc = _deep(depth, opener)
    if wrap:  # inside a dpcalc document's objects list
        doc = '{"schema_version": 1, "objects": [' + doc + "]}"
    _check(args, doc.encode(), (depth, opener, wrap))


# ---------------------------------------------------------------- ledgers

toml_values = st.one_of(
    numbers.filter(lambda s: s[0] in "-0123456789" and "Infinity" not in s),
    st.sampled_from(["inf", "-inf", "nan", "+nan", "1979-05-27", "1979-05-27T07:32:00Z", "0x10", "0o7", "0b1",
                     "1_000", "true", '"3"', "[]", "{}", "[1, [2, [3]]]", '{ a = 1 }', '"gaussian"', "'''x'''"]),
)  # fmt: skip
release_keys = st.sampled_from(
    ["name", "mechanism", "sigma", "noise_multiplier", "sensitivity", "scale", "epsilon", "delta", "mu", "rho",
     "rate", "sampling", "times", "note", "sigmaa", "Times"]
)  # fmt: skip
mechanisms = st.sampled_from(['"gaussian"', '"laplace"', '"dp"', '"gdp"', '"zcdp"', '"sgd"', "1", '""'])


LEDGER_SHAPES = {**SHAPES, "gaussian": ["sigma", "times"], "laplace": ["scale", "rate"]}


@st.composite
def ledgers(draw) -> str:
    head = ["[ledger]", 'name = "fuzz"']
    for key in draw(st.lists(st.sampled_from(["delta", "delta", "max_epsilon", "neighbours", "max_delta"]),
                             max_size=3, unique=True)):  # fmt: skip
        value = '"add-remove"' if key == "neighbours" else draw(st.one_of(plausible, toml_values))
        head.append(f"{key} = {value}")
    body = []
    for i in range(draw(st.integers(0, 3))):
        mech = draw(mechanisms)
        body += ["[[release]]", f'name = "r{i}"', f"mechanism = {mech}"]
        for key in LEDGER_SHAPES.get(mech.strip('"'), []):
            body.append(f"{key} = {draw(st.one_of(plausible, toml_values))}")
        for key in draw(st.lists(release_keys, max_size=1)):
            if key not in ("name", "mechanism"):
                body.append(f"{key} = {draw(toml_values)}")
    if body and draw(st.integers(0, 4)) == 0:
        depth = draw(st.integers(10, 50_000))
        body.append("extra = " + "[" * depth + "]" * depth)
    return "\n".join(head + body) + "\n"


EXAMPLE = (Path(__file__).resolve().parent.parent / "examples" / "privacy.toml").read_text()


@st.composite
def edited_example(draw) -> str:
    """The README's example ledger with one value replaced by a generated (often hostile) one."""
    lines = EXAMPLE.splitlines()
    at = [i for i, line in enumerate(lines) if " = " in line and not line.startswith("#")]
    i = draw(st.sampled_from(at))
    lines[i] = lines[i].split(" = ")[0] + " = " + draw(st.one_of(plausible, toml_values))
    return "\n".join(lines) + "\n"


@st.composite
def json_ledgers(draw) -> str:
    """The same keys as a TOML ledger, in JSON, with generated values (nested, huge, mistyped)."""
    head = '{"name": "fuzz", "delta": ' + draw(_json_value(1)) + "}"
    releases = [
        "{"
        + ", ".join(f"{json.dumps(k)}: {draw(_json_value(2))}" for k in draw(st.lists(release_keys, max_size=5)))
        + "}"
        for _ in range(draw(st.integers(0, 3)))
    ]
    return '{"ledger": ' + head + ', "release": [' + ", ".join(releases) + "]}"


@SETTINGS
@given(st.one_of(ledgers().map(lambda t: ("l.toml", t)), edited_example().map(lambda t: ("l.toml", t)),
                 json_ledgers().map(lambda t: ("l.json", t))),
       st.data(), st.booleans())  # fmt: skip
def test_generated_ledgers_are_answered_or_refused(tmp_path_factory, named, data, as_json):
    name, text = named
    raw = _mangle(text, data)
    path = tmp_path_factory.mktemp("ledger") / name
    path.write_bytes(raw)
    args = ["compose", "--ledger", str(path)] + (["--json"] if as_json else [])
    _check(args, None, raw[:300])
