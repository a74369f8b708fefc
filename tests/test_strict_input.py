"""Nothing typed or piped changes an answer silently (issue 16, item 1 and 10).

Every privacy object, dpcalc document and ledger is read strictly: a typo'd
field, a repeated key or section, a wrong type, a count that is not an exact
integer — each is refused with exit 2 and a message naming the document, the
object and the field. Never answered.
"""

from __future__ import annotations

import copy
import json
import string

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from dpcalc.cli import cli
from dpcalc.cli.pipe import read_objects
from dpcalc.model import FIELDS, from_dict


def run(args: str, stdin: str | bytes | None = None):
    return CliRunner().invoke(cli, args.split(), input=stdin)


# ---------------------------------------------------------------- strategies

pos = st.floats(0.05, 50, allow_nan=False)
simple = st.one_of(
    st.builds(lambda s, d: {"type": "gaussian", "sigma": s, "sensitivity": d}, pos, pos),
    st.builds(lambda s, d: {"type": "laplace", "scale": s, "sensitivity": d}, pos, pos),
    st.builds(lambda e, d: {"type": "dp", "epsilon": e, "delta": d}, pos, st.floats(0, 1e-3)),
    st.builds(lambda m: {"type": "gdp", "mu": m}, pos),
    st.builds(lambda r: {"type": "zcdp", "rho": r}, pos),
    st.builds(lambda o, v: {"type": "rdp", "orders": [o, o + 1], "values": [v, v * 2]}, st.floats(1.5, 64), pos),
    st.builds(lambda s, d: {"type": "discrete_gaussian", "sigma": s, "sensitivity": d}, pos, st.integers(1, 2**31 - 1)),
    st.builds(lambda s, d: {"type": "discrete_laplace", "scale": s, "sensitivity": d}, pos, st.integers(1, 2**20 - 1)),
    st.builds(lambda e, k: {"type": "randomized_response", "epsilon": e, "k": k}, pos, st.integers(2, 2**31 - 1)),
    st.builds(lambda e: {"type": "bounded_range", "epsilon": e}, pos),
)
sub = st.builds(
    lambda inner, q: {"type": "subsampled", "rate": q, "scheme": "poisson", "neighbours": "add-remove", "inner": inner},
    st.sampled_from(
        [{"type": "gaussian", "sigma": 1.0, "sensitivity": 1.0}, {"type": "laplace", "scale": 1.0, "sensitivity": 1.0}]
    ),
    st.floats(1e-4, 1.0),
)
valid_object = st.one_of(
    simple,
    sub,
    st.builds(
        lambda ps, t: {"type": "composed", "parts": [{"times": t, "of": p} for p in ps]},
        st.lists(simple, min_size=1, max_size=3),
        st.integers(1, 1000),
    ),
)


def _paths(obj, prefix=()):
    """Every (path, key) of a dict field in a nested privacy object (type excluded)."""
    for k, v in obj.items():
        if k != "type":
            yield prefix, k
        if isinstance(v, dict):
            yield from _paths(v, prefix + (k,))
        if isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, dict):
                    yield from _paths(x, prefix + (k, i))


def _at(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def _typo(name: str, data) -> str:
    kind = data.draw(st.sampled_from(["delete", "insert", "replace", "swap"]))
    i = data.draw(st.integers(0, len(name) - 1))
    ch = data.draw(st.sampled_from(string.ascii_lowercase + "_"))
    if kind == "delete" and len(name) > 1:
        return name[:i] + name[i + 1 :]
    if kind == "swap" and i + 1 < len(name) and name[i] != name[i + 1]:
        return name[:i] + name[i + 1] + name[i] + name[i + 2 :]
    if kind == "replace" and name[i] != ch:
        return name[:i] + ch + name[i + 1 :]
    return name[:i] + ch + name[i:]


def _read(tmp_path, text: str):
    p = tmp_path / "in.json"
    p.write_text(text, encoding="utf-8")
    return read_objects(str(p))


# ---------------------------------------------------------------- properties


@given(valid_object)
def test_valid_objects_are_read_back_unchanged(obj):
    o = from_dict(obj)
    assert from_dict(o.to_dict()) == o


@given(valid_object, st.data())
def test_any_single_field_typo_is_refused(tmp_path_factory, obj, data):
    obj = copy.deepcopy(obj)  # generated values are shared between examples: never mutate them
    path, key = data.draw(st.sampled_from(list(_paths(obj))))
    bad = _typo(key, data)
    holder = _at(obj, path)
    if bad in holder or bad == key or bad == "type":
        return
    holder[bad] = holder.pop(key)
    with pytest.raises(Exception) as info:
        _read(tmp_path_factory.mktemp("t"), json.dumps(obj))
    msg = str(info.value.format_message() if hasattr(info.value, "format_message") else info.value)
    assert f"unknown field {bad!r}" in msg or "is missing" in msg or "part" in msg, msg


@given(valid_object, st.data())
def test_any_duplicated_key_is_refused(tmp_path_factory, obj, data):
    obj = copy.deepcopy(obj)
    path, key = data.draw(st.sampled_from(list(_paths(obj))))
    text = json.dumps(obj)
    # Repeat the key inside its own object, with a different value, as the first member.
    holder = _at(obj, path)
    marker = json.dumps(holder)
    dup = "{" + json.dumps(key) + ": 12345, " + marker[1:]
    text = text.replace(marker, dup, 1)
    with pytest.raises(Exception) as info:
        _read(tmp_path_factory.mktemp("t"), text)
    assert f"duplicate key {key!r}" in str(info.value.format_message()), text


def test_the_schema_lists_exactly_the_fields_dpcalc_reads():
    from importlib import resources

    schema = json.loads(resources.files("dpcalc").joinpath("schema/result-v1.schema.json").read_text())
    for variant in schema["$defs"]["privacy_object"]["oneOf"]:
        kind = variant["properties"]["type"]["const"]
        assert set(variant["properties"]) == {"type", *FIELDS[kind]}, kind
        assert variant.get("additionalProperties") is False, kind


# ---------------------------------------------------------------- the issue's examples, end to end


@pytest.mark.parametrize(
    "stdin, mentions",
    [
        ('{"type":"gaussian","sigma":2,"sensitivty":5}', "unknown field 'sensitivty' (did you mean 'sensitivity'?)"),
        ('{"type":"gdp","mu":50,"mu":1}', "duplicate key 'mu'"),
        ('{"schema_version":true,"objects":[{"type":"gdp","mu":1}]}', "schema_version True is not supported"),
        ('{"schema_version":1.0,"objects":[{"type":"gdp","mu":1}]}', "schema_version 1.0 is not supported"),
        ('{"schema_version":1,"objects":[{"type":"gdp","mu":1}],"object":[]}', "unknown field 'object'"),
        ('{"type":"gpd","mu":1}', "unknown type 'gpd' (did you mean 'gdp'?)"),
        ('{"type":"gdp","mu":true}', "field 'mu' must be a number"),
        ('{"type":"gdp","mu":NaN}', "NaN is not a JSON number"),
        ('{"type":"gdp","mu":' + "9" * 5000 + "}", "an integer of 5000 digits"),
        ("[" * 100_000, "nested too deeply"),
        ('{"type":"composed","parts":[{"times":2.5,"of":{"type":"gdp","mu":1}}]}', "field 'times' must be a whole"),
        ('{"type":"composed","parts":[{"times":true,"of":{"type":"gdp","mu":1}}]}', "field 'times' must be a whole"),
        ('{"type":"composed","parts":[{"time":2,"of":{"type":"gdp","mu":1}}]}', "unknown field 'time'"),
        ('{"type":"subsampled","rate":0.1,"scheme":"poison","inner":{"type":"gaussian","sigma":1}}', "'poisson'"),
        # A neighbouring relation the scheme is not analysed under: refused, not ignored (Poisson with
        # substitution printed the add/remove interval [5.1909, 5.1926] as certified; a substitution pair
        # of the same run has ε in [9.32, 9.52]).
        (
            '{"type":"composed","parts":[{"times":10000,"of":{"type":"subsampled","rate":0.01,"scheme":"poisson",'
            '"neighbours":"substitution","inner":{"type":"gaussian","sigma":1.1,"sensitivity":1}}}]}',
            "poisson sampling is analysed with add-remove neighbours; got neighbours = 'substitution'",
        ),
        (
            '{"type":"subsampled","rate":0.01,"scheme":"without-replacement","neighbours":"add-remove",'
            '"inner":{"type":"gaussian","sigma":1.1}}',
            "without-replacement sampling is analysed with substitution neighbours; got neighbours = 'add-remove'",
        ),
    ],
)
def test_malformed_documents_are_refused_with_the_field(stdin, mentions):
    r = run("compose --delta 1e-5 --max-epsilon 10", stdin)
    assert r.exit_code == 2, r.stdout
    assert r.stderr.startswith("Error: stdin document 1") and r.stderr.count("\n") == 1, r.stderr
    assert mentions in r.stderr


def test_parts_under_different_relations_are_not_composed():
    # A Poisson (add/remove) part and a without-replacement (substitution) part, in one object or piped as
    # two: no claim for their composition (was a certified [0.7650, 0.7654]).
    wor = '{"type":"subsampled","rate":0.01,"scheme":"without-replacement","inner":{"type":"gaussian","sigma":1.1}}'
    poi = '{"type":"subsampled","rate":0.01,"scheme":"poisson","inner":{"type":"gaussian","sigma":1.1}}'
    for stdin in (
        '{"type":"composed","parts":[{"times":100,"of":' + wor + '},{"times":100,"of":' + poi + "}]}",
        wor + "\n" + poi + "\n",
    ):
        r = run("compose --delta 1e-5 --max-epsilon 10", stdin)
        assert r.exit_code == 2 and r.stderr.startswith("Error: ") and r.stderr.count("\n") == 1, r.stderr
        assert "different neighbouring relations" in r.stderr
    assert run("compose --delta 1e-5", wor + "\n" + wor + "\n").exit_code == 0  # one relation: answered
    # The same through other objects that fix a relation: a subsampled (ε, δ) object without replacement (it
    # flattens to an amplified (ε, δ) part), and shuffled epochs (substitution or zero-out), each piped with a
    # Poisson run (found in review: both printed certified totals).
    sdp = (
        '{"type":"subsampled","rate":0.05,"scheme":"without-replacement",'
        '"inner":{"type":"dp","epsilon":1,"delta":1e-7}}'
    )
    shuf = '{"type":"shuffled","scheme":"shuffle","epochs":3,"inner":{"type":"gaussian","sigma":1}}'
    for other in (sdp, shuf):
        r = run("compose --delta 1e-5", other + "\n" + poi + "\n")
        assert r.exit_code == 2 and "different neighbouring relations" in r.stderr, r.stderr
    assert run("compose --delta 1e-5", shuf + "\n" + wor + "\n").exit_code == 0  # both substitution


def test_a_byte_order_mark_is_accepted_and_latin1_is_named():
    plain = run("compose --delta 1e-5 --value epsilon", '{"type":"gdp","mu":1}')
    bom = run("compose --delta 1e-5 --value epsilon", '\ufeff{"type":"gdp","mu":1}'.encode("utf-8"))
    assert bom.exit_code == 0 and bom.stdout == plain.stdout
    r = run("compose --delta 1e-5", '{"type":"gdp","mu":1,"n":"caf\xe9"}'.encode("latin-1"))
    assert r.exit_code == 2 and "not UTF-8 text (byte 0xE9" in r.stderr


def test_stdin_is_bounded(monkeypatch):
    import dpcalc.strictjson as sj

    monkeypatch.setattr(sj, "MAX_INPUT_BYTES", 1000)
    r = run("compose --delta 1e-5", " " * 2000 + '{"type":"gdp","mu":1}')
    assert r.exit_code == 2 and "at most" in r.stderr


JSON_LEDGER_TWO_RELEASE_ARRAYS = (
    '{"ledger": {"delta": 1e-6}, "release": [{"mechanism": "gdp", "mu": 5}], '
    '"release": [{"mechanism": "gdp", "mu": 0.1}]}'
)


@pytest.mark.parametrize(
    "name, text, mentions",
    [
        ("l.json", JSON_LEDGER_TWO_RELEASE_ARRAYS, "duplicate key 'release'"),
        ("l.json", '{"ledger": {"delta": 1e-6, "delta": 0.1}, "release": [{"mechanism": "gdp", "mu": 1}]}', "'delta'"),
        ("l.toml", '[ledger]\ndelta = 1e-6\n[[release]]\nmechanism = "gdp"\nmu = 1\nmu = 2\n', "not valid TOML"),
        ("l.toml", "[ledger]\ndelta = 1e-6\n[ledger]\n[[release]]\nmechanism='gdp'\nmu=1\n", "not valid TOML"),
        ("l.toml", '[ledger]\ndelta = 1e-6\n[[releases]]\nmechanism = "gdp"\nmu = 1\n', "did you mean 'release'"),
        ("l.toml", '[ledger]\ndelat = 1e-6\n[[release]]\nmechanism = "gdp"\nmu = 1\n', "did you mean 'delta'"),
        ("l.toml", '[ledger]\ndelta = 1e-6\n[[release]]\nmechanism = "gaussian"\nsigam = 1\n', "did you mean 'sigma'"),
        ("l.toml", '[ledger]\ndelta = 1e-6\n[[release]]\nmechanism = "gdp"\nmu = true\n', "must be a number"),
        ("l.toml", '[ledger]\ndelta = 1e-6\n[[release]]\nmechanism = "gdp"\nmu = 1\ntimes = 2.5\n', "whole number"),
        ("l.toml", '[ledger]\ndelta = 1e-6\n[[release]]\nmechanism = "gdp"\nmu = 1\nname = 3\n', "must be a string"),
        ("l.toml", '[ledger]\ndelta = true\n[[release]]\nmechanism = "gdp"\nmu = 1\n', "must be a number"),
        ("l.toml", '[ledger]\nneighbours = "add-remov"\n[[release]]\nmechanism = "gdp"\nmu = 1\n', "did you mean"),
    ],
)
def test_malformed_ledgers_are_refused(tmp_path, name, text, mentions):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    r = run(f"compose --ledger {p} --delta 1e-5 --max-epsilon 1")
    assert r.exit_code == 2, r.stdout
    assert r.stderr.startswith(f"Error: ledger {p}") and r.stderr.count("\n") == 1, r.stderr
    assert mentions in r.stderr


def test_a_ledger_with_a_bom_reads_like_one_without(tmp_path):
    text = '[ledger]\ndelta = 1e-6\n[[release]]\nmechanism = "gdp"\nmu = 1\n'
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(text, encoding="utf-8")
    b.write_bytes(b"\xef\xbb\xbf" + text.encode())
    ra, rb = run(f"compose --ledger {a} --value epsilon"), run(f"compose --ledger {b} --value epsilon")
    assert ra.exit_code == rb.exit_code == 0 and ra.stdout == rb.stdout


@pytest.mark.parametrize(
    "args, stdin, names",
    [
        ("compose --ledger examples/privacy.toml --times 5", None, "'--times'"),
        ("compose --ledger examples/privacy.toml --input x.json --delta-prime 0.5", None, "'--input', '--delta-prime'"),
        ("compose --delta 1e-5 --delta-prime 1e-7", '{"type":"gdp","mu":1}', "'--delta-prime'"),
    ],
)
def test_options_a_mode_ignores_are_refused(args, stdin, names):
    r = run(args, stdin)
    assert r.exit_code == 2 and names in r.stderr and "cannot be used" in r.stderr, r.stderr


def test_one_dp_object_with_delta_is_composed_at_that_delta():
    """--delta used to be dropped silently for a single (ε, δ) object; now it is the δ of the answer."""
    r = run("compose --delta 1e-3 --times 10 --json", '{"type":"dp","epsilon":1,"delta":1e-6}')
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["rows"]
    best = [row for row in rows if row["tightest"]]
    # Basic composition is 10 at δ = 1e-5; the answer is at the δ asked for, and tighter.
    assert len(best) == 1 and best[0]["delta"] == 1e-3 and best[0]["epsilon"] < 10


@pytest.mark.parametrize(
    "value, ok",
    [
        ("1000", 1000),
        ("1e3", 1000),
        ("+7", 7),
        ("9007199254740992", 2**53),
        ("9007199254740993", None),
        ("1_000", None),
        ("١٠", None),
        ("１０", None),
        ("10.5", None),
        ("0x10", None),
        ("1e400", None),
    ],
)
def test_counts_are_read_exactly(value, ok):
    r = run(f"compose gdp --mu 1e-9 --delta 1e-5 --times {value} --json")
    if ok is None:
        assert r.exit_code == 2 and "'--times'" in r.stderr, r.stderr
    else:
        assert r.exit_code == 0, r.stderr
        doc = json.loads(r.stdout)
        assert doc["inputs"]["times"] == ok and all(row["times"] == ok for row in doc["rows"])


@pytest.mark.parametrize("value", ["1_0", "٠.٥", "０.５", "nan", "inf", "0x1p-3", "1e-5 1"])
def test_number_syntax_is_ascii_decimal(value):
    r = CliRunner().invoke(cli, ["convert", "gdp", "--mu", value, "--delta", "1e-5"])
    assert r.exit_code == 2 and "'--mu'" in r.stderr, r.stderr


# ---------------------------------------------------------------- no option given is dropped without a word

#: A value for each option that differs from its default (flags: None).
ALT = {
    "--epsilon": "0.7", "--delta": "1e-7", "--mu": "0.3", "--rho": "0.2", "--sensitivity": "3",
    "--method": "classical", "--sigma": "3", "--to": "gdp", "--alpha": "0.1", "--fpr": "0.05",
    "--orders": "2,3", "--values": "0.5,0.8", "--times": "7", "--delta-prime": "1e-8", "--release": "0.5,1e-7,3",
    "--target-delta": "1e-3", "--pld-width": "0.01", "--size": "3", "--rate": "0.3",
    "--scheme": "without-replacement", "--steps": "5", "--accountant": "rdp", "--gaussian": "2,1,3",
    "--subsampled-gaussian": "0.1,1,10", "--laplace": "3,1,2", "--dataset-size": "1000", "--batch-size": "30",
    "--epochs": "3", "--noise-multiplier": "1.3", "--target-epsilon": "5", "--solve": "epochs",
    "--sampling": "without-replacement", "--per-epoch": None,
}  # fmt: skip
BASES = [
    "calibrate gaussian --epsilon 1 --delta 1e-5",
    "calibrate gaussian --mu 1",
    "calibrate gaussian --rho 0.5",
    "calibrate laplace --epsilon 1",
    "convert gaussian --sigma 2 --delta 1e-5",
    "convert gaussian --sigma 2 --epsilon 1",
    "convert gaussian --sigma 2 --to tradeoff --alpha 0.1",
    "convert gdp --mu 1 --delta 1e-5",
    "convert gdp --mu 1 --epsilon 1",
    "convert gdp --mu 1 --to attack",
    "convert dp --epsilon 1 --delta 1e-5 --to gdp",
    "convert dp --epsilon 1 --to zcdp",
    "convert zcdp --rho 0.5 --delta 1e-5",
    "convert rdp --orders 2,4 --values 0.1,0.3 --delta 1e-5",
    "compose dp --epsilon 1 --delta 1e-6 --times 10",
    "compose dp --release 1,1e-6,10 --release 0.5,0,3",
    "compose gaussian --sigma 2 --times 10 --delta 1e-5",
    "compose gaussian --release 2,1,10 --delta 1e-5",
    "compose gdp --mu 0.5 --times 10 --delta 1e-5",
    "compose gdp --release 0.5,10 --delta 1e-5",
    "compose zcdp --rho 0.1 --times 10 --delta 1e-5",
    "compose zcdp --release 0.1,10 --delta 1e-5",
    "group dp --epsilon 1 --delta 1e-6 --size 2",
    "group pure --epsilon 1 --size 2",
    "group gdp --mu 1 --size 2",
    "group zcdp --rho 1 --size 2",
    "group gaussian --sigma 2 --size 2 --delta 1e-5",
    "amplify dp --epsilon 1 --delta 1e-6 --rate 0.1",
    "amplify gaussian --sigma 1 --rate 0.01 --steps 100 --delta 1e-5 --accountant rdp",
    "amplify gaussian --sigma 1 --rate 0.01 --orders 2,4",
    "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 2 --noise-multiplier 1.1 --delta 1e-5",
    "plan-sgd --rate 0.004 --steps 500 --noise-multiplier 1.1 --delta 1e-5 --accountant rdp",
    "plan-sgd --dataset-size 60000 --batch-size 256 --epochs 2 --target-epsilon 3 --delta 1e-5 --accountant rdp",
]
#: --accountant is documented as applying where the PLD engine runs ("wherever it applies" in its help).
APPLIES_WHERE_USED = {"--accountant"}


def _rows(args):
    r = CliRunner().invoke(cli, [*args, "--json"])
    return (json.dumps(json.loads(r.stdout)["rows"], sort_keys=True) if r.exit_code == 0 else None), r


@pytest.mark.parametrize("base", BASES)
def test_every_option_given_changes_the_answer_or_is_refused(base):
    """An option a mode does not use must be refused (exit 2), never accepted with the same answer."""
    args = base.split()
    before, r0 = _rows(args)
    assert before is not None, r0.stderr
    cmd = args[:1] if args[0] == "plan-sgd" else args[:2]
    # --solve may name what an inverse search infers anyway (it is not ignored there, just agreed with).
    agreed = {"--solve"} if "--target-epsilon" in args else set()
    help_text = CliRunner().invoke(cli, [*cmd, "-h"]).stdout
    ignored = []
    for opt, value in ALT.items():
        if opt in args or opt in APPLIES_WHERE_USED | agreed or f"{opt} " not in help_text.replace("\n", " "):
            continue
        after, r = _rows([*args, opt, *([value] if value is not None else [])])
        if after is None:
            assert r.exit_code == 2 and r.stderr.startswith("Error: "), (opt, r.stderr)
        elif after == before:
            ignored.append(opt)
    assert not ignored, f"{base}: {ignored} accepted and ignored"


def test_minus_zero_is_echoed_as_zero_from_the_command_line_and_from_pipes():
    import math

    for args, stdin in [
        ("group pure --epsilon -0 --size 2 --json", None),
        ("compose zcdp --rho -0 --times 2 --delta 1e-5 --json", None),
        ("convert --delta 1e-5 --json", '{"type": "gdp", "mu": -0.0}'),
    ]:
        r = CliRunner().invoke(cli, args.split(), input=stdin)
        assert r.exit_code == 0, r.output
        assert "-0.0" not in r.stdout and "-0" not in r.stdout.replace("e-0", "")
        doc = json.loads(r.stdout)
        for row in doc["rows"]:
            assert all(math.copysign(1.0, v) == 1.0 for v in row.values() if isinstance(v, float) and v == 0)


def test_numbers_that_underflow_are_refused_not_read_as_zero():
    """1e-400 is 0 in double precision: accepted, it silently became FPR 0 (or a piped μ of 0)."""
    r = CliRunner().invoke(cli, "convert gaussian --sigma 1 --to attack --fpr 1e-400".split())
    assert r.exit_code == 2 and "'--fpr'" in r.stderr and "too small" in r.stderr
    r = CliRunner().invoke(cli, ["convert", "--delta", "1e-5"], input='{"type": "gdp", "mu": 1e-400}')
    assert r.exit_code == 2 and "too small" in r.stderr
    for zero in ("0", "0.0", "0e-400", "-0"):  # a zero written as one is still 0
        r = CliRunner().invoke(cli, f"convert gaussian --sigma 1 --to attack --fpr {zero} --json".split())
        assert r.exit_code == 0, r.output


def test_epsilon_on_a_piped_composition_says_what_to_give():
    src = CliRunner().invoke(cli, "compose discrete-gaussian --sigma 1 --times 10 --delta 1e-5 --json".split())
    r = CliRunner().invoke(cli, ["convert", "--epsilon", "1"], input=src.stdout)
    assert r.exit_code == 2 and "--epsilon" in r.stderr and "give --delta" in r.stderr
    assert "Missing option" not in r.stderr
