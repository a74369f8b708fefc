"""Composition in time linear in the number of releases (issue 15, item 1).

Identical releases are one k-fold self-composition: listing them one by one, as one release
with a count, or in another order gives the same totals to the last digit. Ledgers and pipes
are read as streams (the same messages as a whole read), costed once per distinct release,
and a ledger too large for a row per release is shown a row per distinct release.
"""

from __future__ import annotations

import json
import random
from importlib import resources

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.cli import cli

SCHEMA = json.loads(resources.files("dpcalc").joinpath("schema/result-v1.schema.json").read_text())


def run(args, stdin=None):
    return CliRunner().invoke(cli, args.split() if isinstance(args, str) else args, input=stdin)


def doc(args, stdin=None):
    r = run(args, stdin)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    jsonschema.validate(d, SCHEMA)
    return d


def totals(d):
    """The total rows' numbers (what must agree to the last digit)."""
    keys = ("method", "bound", "epsilon", "epsilon_lower", "delta", "mu", "rho", "order")
    return [tuple(r.get(k) for k in keys) for r in d["rows"] if r.get("row", "total") == "total"]


#: (TOML body, JSON object) of a release kind; one of each family the accounting treats apart.
KINDS = [
    ('mechanism = "gaussian"\nsigma = 30', '{"type":"gaussian","sigma":30}'),
    ('mechanism = "gaussian"\nsigma = 50\nsensitivity = 2', '{"type":"gaussian","sigma":50,"sensitivity":2}'),
    ('mechanism = "gdp"\nmu = 0.02', '{"type":"gdp","mu":0.02}'),
    ('mechanism = "laplace"\nscale = 200', '{"type":"laplace","scale":200}'),
    ('mechanism = "dp"\nepsilon = 0.01\ndelta = 1e-9', '{"type":"dp","epsilon":0.01,"delta":1e-9}'),
    ('mechanism = "dp"\nepsilon = 0.02', '{"type":"dp","epsilon":0.02,"delta":0}'),
    (
        'mechanism = "gaussian"\nnoise_multiplier = 2\nrate = 0.01\ntimes = 50',
        '{"type":"composed","parts":[{"times":50,"of":{"type":"subsampled","rate":0.01,'
        '"inner":{"type":"gaussian","sigma":2}}}]}',
    ),
]


def ledger_text(releases, delta="1e-6"):
    """A ledger of (name, TOML body) releases."""
    out = f'[ledger]\ndelta = {delta}\nneighbours = "add-remove"\n'
    return out + "".join(f'\n[[release]]\nname = "{name}"\n{body}\n' for name, body in releases)


# ---------------------------------------------------------------- grouping gives the same digits


def test_identical_releases_listed_one_by_one_or_with_a_count_give_the_same_totals(tmp_path):
    counts = [7, 3, 5, 2, 4, 6, 3]
    one_by_one = [(f"r{i}-{j}", body) for i, ((body, _), k) in enumerate(zip(KINDS, counts)) for j in range(k)]
    random.Random(1).shuffle(one_by_one)
    counted = []
    for (body, _), k in zip(KINDS, counts):
        if "times = " in body:  # a DP-SGD run: k runs of T steps are kT steps
            t = int(body.rsplit("times = ", 1)[1])
            counted.append(("all", body.replace(f"times = {t}", f"times = {k * t}")))
        else:
            counted.append(("all", f"{body}\ntimes = {k}"))
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(ledger_text(one_by_one))
    b.write_text(ledger_text(counted[::-1]))
    da, db = doc(f"compose --ledger {a} --json"), doc(f"compose --ledger {b} --json")
    assert totals(da) == totals(db)
    assert {t[0] for t in totals(da)} >= {"pld", "rdp+basic"}
    # Shares: each release's is its kind's over the count, and they add up to 100 %.
    assert sum(r["share_pct"] for r in da["rows"] if r["row"] == "entry") == pytest.approx(100)


def test_piped_identical_objects_give_the_same_totals_as_times_k():
    obj = '{"type":"subsampled","rate":0.01,"inner":{"type":"gaussian","sigma":1.5}}'
    many = doc("compose --delta 1e-5 --json", (obj + "\n") * 400)
    once = doc("compose --delta 1e-5 --times 400 --json", obj)
    assert totals(many) == totals(once)
    assert many["rows"][0]["objects"] == 400 and once["rows"][0]["times"] == 400
    # And as the direct command for a Poisson-subsampled Gaussian composed 400 times.
    direct = doc("compose mixed --subsampled-gaussian 0.01,1.5,400 --delta 1e-5 --json")
    by = {r["method"]: r["epsilon"] for r in many["rows"]}
    assert by["pld"] == [r for r in direct["rows"] if r["method"] == "pld"][0]["epsilon"]
    assert by["rdp"] == [r for r in direct["rows"] if r["method"] == "rdp"][0]["epsilon"]
    # The composed object carries the distinct object once, with its count.
    assert many["objects"][0] == once["objects"][0]
    assert [part["times"] for part in many["objects"][0]["parts"]] == [400]


def test_many_gaussian_releases_match_compose_gaussian_times_k(tmp_path):
    p = tmp_path / "g.toml"
    p.write_text(ledger_text([(f"count {i}", 'mechanism = "gaussian"\nsigma = 40') for i in range(1000)]))
    d = doc(f"compose --ledger {p} --json")
    g = doc("compose gaussian --sigma 40 --times 1000 --delta 1e-6 --json")
    gdp = [r for r in d["rows"] if r["method"] == "gdp" and r["row"] == "total"][0]
    ref = [r for r in g["rows"] if r["method"] == "gdp"][0]
    assert (gdp["epsilon"], gdp["bound"]) == (ref["epsilon"], ref["bound"])
    entry = d["rows"][0]
    one = doc("compose gaussian --sigma 40 --times 1 --delta 1e-6 --json")["rows"][0]
    assert entry["epsilon"] == one["epsilon"] and entry["share_pct"] == pytest.approx(0.1)


def test_a_mixed_pipe_gives_the_totals_of_its_distinct_objects_with_counts():
    lines = [json_ for _, json_ in KINDS]
    rng = random.Random(7)
    stream = [rng.choice(lines) for _ in range(300)]
    counts = {x: stream.count(x) for x in lines}
    composed = {
        "type": "composed",
        "parts": [{"times": k, "of": json.loads(x)} for x, k in reversed(counts.items()) if k],
    }
    a = doc("compose --delta 1e-6 --json", "\n".join(stream))
    b = doc("compose --delta 1e-6 --json", json.dumps(composed))
    assert totals(a) == totals(b)
    assert a["rows"][0]["objects"] == 300 and b["rows"][0]["objects"] == 1


@settings(max_examples=25, deadline=None)
@given(st.permutations(range(len(KINDS))), st.lists(st.integers(1, 40), min_size=len(KINDS), max_size=len(KINDS)))
def test_totals_do_not_depend_on_the_order_of_the_parts(order, counts):
    from dpcalc.accounting import compose_parts, flatten
    from dpcalc.model import from_dict

    parts = [p for i in range(len(KINDS)) for p in flatten(from_dict(json.loads(KINDS[i][1])), counts[i])]
    shuffled = [parts[i] for i in order]
    assert compose_parts(parts, 1e-6) == compose_parts(shuffled, 1e-6)


def test_each_part_alone_is_what_compose_parts_says_to_the_last_digit():
    from dpcalc.accounting import Part, alone, compose_parts, tightest

    parts = [
        Part("gauss", 10, mu=0.3),
        Part("gauss", 1, mu=2.0),
        Part("zcdp", 4, rho=0.01),
        Part("pure", 3, epsilon=0.2),
        Part("laplace", 5, scale=4.0, epsilon=0.25),
        Part("sgauss", 100, rate=0.02, sigma=1.2),
        Part("sgauss", 1, rate=0.5, sigma=3.0),
        Part("pure", 7, epsilon=0.01, rate=0.1, scale=10.0),
        Part("curve", 2, orders=(2.0, 8.0, 32.0), values=(0.01, 0.05, 0.3)),
    ]
    for with_pld in (False, True):
        together = alone(parts, 1e-6, with_pld)
        for p, t in zip(parts, together):
            assert t == tightest(compose_parts([p], 1e-6, with_pld)), p


# ---------------------------------------------------------------- big ledgers: the row rule


def test_a_ledger_past_the_row_limit_is_shown_a_row_per_distinct_release(tmp_path, monkeypatch):
    import dpcalc.cli.compose as compose

    monkeypatch.setattr(compose, "MAX_ROWS", 40)
    releases = [(f"r{i}", KINDS[i % 4][0]) for i in range(39)]
    p = tmp_path / "big.toml"
    p.write_text(ledger_text(releases))
    d = doc(f"compose --ledger {p} --json")  # 39 releases and the totals: over 40 rows
    groups = [r for r in d["rows"] if r["row"] == "group"]
    assert len(groups) == 4 and sorted(r["releases"] for r in groups) == [9, 10, 10, 10]
    assert [r["entry"] for r in groups] == ["r0", "r1", "r2", "r3"]  # named after their first release
    assert sum(r["share_pct"] for r in groups) == pytest.approx(100)
    assert all(r["releases"] == 39 for r in d["rows"] if r["row"] == "total")
    assert any("grouped" in w for w in d["warnings"]) and any("One row per distinct release" in n for n in d["notes"])
    assert d["inputs"]["ledger_rows"] == "auto"
    # The same numbers as a row per release: grouping changes the rows, never a total.
    explicit = doc(f"compose --ledger {p} --json --ledger-rows grouped")
    assert totals(explicit) == totals(d) and not explicit["warnings"]
    monkeypatch.setattr(compose, "MAX_ROWS", 100_000)
    per_release = doc(f"compose --ledger {p} --json")
    assert totals(per_release) == totals(d)
    entries = [r for r in per_release["rows"] if r["row"] == "entry"]
    assert len(entries) == 39 and not per_release["warnings"]
    for g in groups:  # each release of a group: the group's ε, and its share over the count
        mine = [r for r in entries if r["mechanism"] == g["mechanism"]]
        assert all(r["epsilon"] == g["epsilon"] for r in mine)
        assert sum(r["share_pct"] for r in mine) == pytest.approx(g["share_pct"])
    # A row each, asked for, where it does not fit: refused, with the way out.
    monkeypatch.setattr(compose, "MAX_ROWS", 40)
    r = run(f"compose --ledger {p} --ledger-rows each")
    assert r.exit_code == 2 and "--ledger-rows grouped" in r.stderr and r.stderr.count("\n") == 1


def test_more_distinct_releases_than_rows_is_refused_not_cut(tmp_path, monkeypatch):
    import dpcalc.cli.compose as compose

    monkeypatch.setattr(compose, "MAX_ROWS", 5)
    p = tmp_path / "l.toml"
    p.write_text(ledger_text([(f"r{i}", KINDS[i % 4][0]) for i in range(8)]))
    r = run(f"compose --ledger {p}")  # 4 distinct releases and 2 or more totals: over 5 rows
    assert r.exit_code == 2 and "4 distinct releases" in r.stderr and "split the ledger" in r.stderr


def test_ledger_rows_grouped_on_a_small_ledger_and_refused_without_a_ledger(tmp_path):
    p = tmp_path / "l.toml"
    p.write_text(ledger_text([("a", KINDS[0][0]), ("b", KINDS[0][0]), ("c", KINDS[4][0])]))
    d = doc(f"compose --ledger {p} --ledger-rows grouped --json")
    assert [(r["entry"], r["releases"]) for r in d["rows"] if r["row"] == "group"] == [("a", 2), ("c", 1)]
    assert not d["warnings"]
    table = run(f"compose --ledger {p} --ledger-rows grouped").stdout
    assert "releases" in table.splitlines()[2]
    r = run("compose --delta 1e-5 --ledger-rows grouped", '{"type":"gdp","mu":1}')
    assert r.exit_code == 2 and "'--ledger-rows'" in r.stderr


def test_a_hundred_thousand_releases_at_the_real_limit(tmp_path):
    n = 100_000
    lines = [f'\n[[release]]\nname = "count {i}"\n{KINDS[i % 3][0]}\n' for i in range(n)]
    p = tmp_path / "huge.toml"
    p.write_text("[ledger]\ndelta = 1e-6\n" + "".join(lines))
    d = doc(f"compose --ledger {p} --accountant rdp --json")
    groups = [r for r in d["rows"] if r["row"] == "group"]
    assert sorted(r["releases"] for r in groups) == [33333, 33333, 33334]
    assert all(r["epsilon"] == 0.0 or r["share_pct"] > 0 for r in groups)
    # All Gaussian (μ = 1/30, 2/50 and 0.02): the exact total is that of compose gaussian with counts.
    g = doc("compose gaussian --release 30,1,33334 --release 50,2,33333 --release 50,1,33333 --delta 1e-6 --json")
    exact = [r["epsilon"] for r in d["rows"] if r["method"] == "gdp" and r["row"] == "total"]
    assert exact == [pytest.approx([r for r in g["rows"] if r["method"] == "gdp"][0]["epsilon"], rel=1e-12)]


# ---------------------------------------------------------------- streams: the same as a whole read


BAD_INPUTS = [
    '{"type":"gdp","mu":1}\n{"type":"gdp","mu":1,"mu":2}\n',
    '[{"type":"gdp","mu":1},\n {"type":"gdp","mu":2} {"type":"gdp","mu":3}]',
    '[{"type":"gdp","mu":1},\n "type":"dp","epsilon":1}]',
    '[{"type":"gdp","mu":1},]',
    '{"type":"gdp","mu":1}\n\n{"type":"gdp","mu":NaN}',
    '{"type":"gdp","mu":1}{"type":"gdp","mu":' + "9" * 300 + "}",
    '{"type":"gdp","mu":1}\n{"type":"gdp" "mu":1}',
    '{"type":"gdp","mu":1}\n[{"type":"gdp","mu":1}, 7]',
    '{"type":"gdp","mu":1}\n{"type":"gdp","mu":1',
    '["abc',
    "[" * 5000,
]
GOOD_INPUTS = [
    '{"type":"gdp","mu":1}\n' * 50,
    "[" + ",\n".join(['{"type":"gdp","mu":1}', '{"type":"zcdp","rho":0.5}'] * 30) + "]",
    '{"schema_version":1,"objects":[{"type":"gdp","mu":1},{"type":"zcdp","rho":0.1}]}' * 3,
    '\ufeff{"type":"gaussian","sigma":2}\r\n{"type":"gaussian","sigma":2}',
]


@pytest.mark.parametrize("text", BAD_INPUTS + GOOD_INPUTS)
def test_reading_a_chunk_at_a_time_reads_what_a_whole_read_does(tmp_path, monkeypatch, text):
    import click

    import dpcalc.strictjson as sj
    from dpcalc.cli.pipe import read_objects

    p = tmp_path / "in.json"
    p.write_text(text, encoding="utf-8")

    def read():
        try:
            return read_objects(str(p))
        except click.UsageError as exc:
            return exc.message

    whole = read()
    for chunk in (1, 2, 3, 5, 64):
        monkeypatch.setattr(sj, "CHUNK_BYTES", chunk)
        assert read() == whole, chunk
    if text in BAD_INPUTS:
        assert isinstance(whole, str) and whole.startswith(str(p))


def test_utf8_errors_name_the_byte_offset_across_chunks(tmp_path, monkeypatch):
    import dpcalc.strictjson as sj

    p = tmp_path / "in.json"
    p.write_bytes(b'{"type":"gdp","mu":1}\n' * 3 + "é".encode()[:1] + b"x")
    for chunk in (1, 2, 7, 1 << 20):
        monkeypatch.setattr(sj, "CHUNK_BYTES", chunk)
        r = run(f"compose --input {p} --delta 1e-5")
        assert r.exit_code == 2 and "not UTF-8 text (byte 0xC3 at offset 66)" in r.stderr, (chunk, r.stderr)


def test_identical_objects_are_held_once():
    from dpcalc.cli.pipe import _Reader

    text = ('{"type":"gdp","mu":0.01}\n' + '{"type":"zcdp","rho":1e-4}\n') * 50_000
    r = CliRunner().invoke(cli, ["compose", "--delta", "1e-5", "--value", "epsilon"], input=text)
    assert r.exit_code == 0 and float(r.stdout) > 0
    reader = _Reader("-")
    with CliRunner().isolation(input=text):
        reader.run()
    assert len(reader.units) == 2 and reader.counts == [50_000, 50_000]


# ---------------------------------------------------------------- plain TOML is read as tomllib reads it

_key = st.sampled_from(["name", "mechanism", "sigma", "times", "rate", "note", "x-y", "a_1"])
_value = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr).filter(lambda s: "e" in s or "." in s),
    st.sampled_from(["true", "false", '"plain"', "'lit'", '"tab\there"', '""', '"é€"', "1e-06", "-0.0", "+7", "1E5"]),
)
_line = st.one_of(
    st.tuples(_key, st.sampled_from([" = ", "=", "  =\t"]), _value, st.sampled_from(["", " # note", "\t#"])).map(
        "".join
    ),
    st.sampled_from(["[ledger]", "[[release]]", "[[ release ]]  # r", "", "   ", "# comment", "\r"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_line, max_size=25), st.sampled_from(["\n", "\r\n"]))
def test_plain_toml_is_read_as_tomllib_reads_it(lines, newline):
    from dpcalc.ledger import _plain_toml, tomllib

    text = newline.join(lines)
    try:
        expected = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        expected = None
    got = _plain_toml(text)
    if expected is None:
        assert got is None  # tomllib words the error
    elif got is not None:  # (None: the plain reader left it to tomllib)
        data, bodies = got
        assert data == expected and repr(data) == repr(expected)
        assert len(bodies) == len(data.get("release", []))


def test_vectorised_totals_match_one_part_at_a_time():
    """_gauss_mu and _rhos round every product up in one array operation: the same digits as the per-part
    scalar roundings (100,000 distinct piped objects took 32 s in scalar directed rounding, now about 9 s)."""
    import random

    import numpy as np

    from dpcalc import accounting as A
    from dpcalc.core import _fp
    from dpcalc.core import zcdp as _zcdp

    rng = random.Random(3)
    parts = [
        A.Part(
            rng.choice(["gauss", "zcdp", "dgauss", "br", "pure"]),
            rng.randint(1, 10**6),
            mu=rng.random() * 3,
            rho=rng.random(),
            epsilon=rng.random() * 2,
        )
        for _ in range(2000)
    ]
    assert np.array_equal(A._rhos(parts), np.array([A._rho(p) for p in parts]))
    gauss = [p for p in parts if p.kind == "gauss"]
    one_by_one = _zcdp.sum_up([_fp.mul_up(float(p.times), _fp.mul_up(p.mu, p.mu)) for p in gauss])
    assert A._gauss_mu(gauss) == float(_fp.sqrt_up(one_by_one))
