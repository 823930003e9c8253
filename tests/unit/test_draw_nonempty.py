"""The drawing rule for empty answers (tsbench/queries/__init__.py): a query whose
reference answer is empty is redrawn from (seed, crc32(type), i, attempt) until
one is not, up to queries.ATTEMPTS; attempt 0 is the draw of (seed, crc32(type),
i) and is kept when every attempt is empty or when empty answers are allowed."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from tsbench import queries
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.experiments import session
from tsbench.queries.reference import Reference

from conftest import run_cli

# 4 hosts x 16 h: two hosts have usage_user > 90 at times; many random (host, 12 h) draws miss them
SOME = dict(use_case="devops", scale=4, end="2016-01-01T16:00:00Z", seed=2)
# 1 host x 20 min: no usage_user > 90 at all, so high-cpu-1 cannot answer anything
NONE = dict(use_case="devops", scale=1, end="2016-01-01T00:20:00Z", seed=1)
# 4 trucks x 12 h: no truck's newest fuel_state is below 0.1, so low-fuel (a random fleet) answers nothing
IOT_NONE = dict(use_case="iot", scale=4, end="2016-01-01T12:00:00Z", interval="60s", seed=1)
N = 8


@pytest.fixture(scope="module")
def some():
    ds = resolve(DatasetSpec(**SOME))
    return ds, Reference(ds)


@pytest.fixture(scope="module")
def none():
    ds = resolve(DatasetSpec(**NONE))
    return ds, Reference(ds)


@pytest.fixture(scope="module")
def iot_none():
    ds = resolve(DatasetSpec(**IOT_NONE))
    return ds, Reference(ds)


def _above(ref: Reference) -> int:
    return ref.con.execute("SELECT count(*) FROM cpu WHERE usage_user > 90").fetchone()[0]


def _attempt(ds, name: str, seed: int, i: int, attempt: int) -> dict:
    """The rule's draw, written out independently of queries.generate."""
    key = [seed, zlib.crc32(name.encode()), i] + ([attempt] if attempt else [])
    return queries.CATALOG[name].make(np.random.Generator(np.random.PCG64(key)), queries.context(ds))


def test_high_cpu_1_is_not_empty_when_the_data_has_a_point_above_the_threshold(some):
    ds, ref = some
    assert _above(ref) > 0
    old = queries.generate(ds, ["high-cpu-1"], N, 1, allow_empty=True)
    assert sum(not ref.expected(s) for s in old) >= 3          # without the rule, empty answers (the issue)
    new = queries.generate(ds, ["high-cpu-1"], N, 1, reference=ref)
    assert all(ref.expected(s) for s in new)
    # the redrawn queries still are high-cpu-1 queries: one host, 12 h, usage_user > 90
    for s in new:
        p = s.params
        assert len(p["tag_values"]) == 1 and p["end"] - p["start"] == 12 * 3600 * 10**9
        assert p["value_filter"] == {"field": "usage_user", "op": ">", "value": 90.0}


def test_a_redrawn_query_is_the_first_non_empty_attempt(some):
    ds, ref = some
    new = queries.generate(ds, ["high-cpu-1"], N, 1, reference=ref)
    firsts, later_differ = set(), False
    for i, s in enumerate(new):
        attempts = [_attempt(ds, "high-cpu-1", 1, i, a) for a in range(queries.ATTEMPTS)]
        good = [a for a, p in enumerate(attempts) if ref.expected(queries.QuerySpec(0, "high-cpu-1", p))]
        assert s.params == attempts[good[0]]
        firsts.add(good[0])
        later_differ |= any(attempts[a] != attempts[good[0]] for a in good[1:])
    # the data make the check bite: attempts 0, 1 and later ones win, and a later non-empty draw differs
    assert {0, 1} < firsts and later_differ


def test_same_seed_same_specs(some):
    ds, ref = some
    types = ["high-cpu-1", "high-cpu-all", "max-cpu-2", "lastpoint"]
    a = queries.generate(ds, types, N, 7, reference=ref)
    assert a == queries.generate(ds, types, N, 7)                       # its own reference: the same
    assert a == session.draw(ds, types, N, 7, reference=lambda: ref)
    # a type's draws still ignore the other types drawn with it
    assert [s.params for s in a if s.type == "high-cpu-1"] == \
        [s.params for s in queries.generate(ds, ["high-cpu-1"], N, 7, reference=ref)]
    assert [s.params for s in a] != [s.params for s in queries.generate(ds, types, N, 8, reference=ref)]


def test_allow_empty_gives_the_old_draws_and_the_rule_changes_only_empty_ones(some):
    ds, ref = some
    types = ["high-cpu-1", "high-cpu-all", "max-cpu-1", "max-cpu-2", "single-groupby-5-1-1"]
    old = queries.generate(ds, types, N, 3, allow_empty=True)
    assert [s.params for s in old] == [_attempt(ds, s.type, 3, i % N, 0) for i, s in enumerate(old)]
    new = queries.generate(ds, types, N, 3, reference=ref)
    changed = 0
    for o, n in zip(old, new):
        assert (o.id, o.type) == (n.id, n.type)
        if ref.expected(o):
            assert n.params == o.params                     # a non-empty first draw is kept as drawn
        else:
            assert n.params != o.params and ref.expected(n)
            changed += 1
    assert changed


def test_allow_empty_builds_no_reference(some, monkeypatch):
    ds, _ = some
    monkeypatch.setenv("TSBENCH_REFERENCE_CACHE", "off")        # else answers cached by another test suffice

    def boom(*a, **k):
        raise AssertionError("a reference engine was built")
    monkeypatch.setattr("tsbench.queries.reference.Reference", boom)
    queries.generate(ds, ["high-cpu-1"], N, 1, allow_empty=True)
    with pytest.raises(AssertionError, match="reference engine was built"):
        queries.generate(ds, ["high-cpu-1"], N, 1)


def test_a_type_that_cannot_be_non_empty_keeps_attempt_0(none, iot_none):
    ds, ref = none
    assert _above(ref) == 0
    lines = []
    new = queries.generate(ds, ["high-cpu-1", "max-cpu-1"], N, 1, reference=ref, say=lines.append)
    old = queries.generate(ds, ["high-cpu-1", "max-cpu-1"], N, 1, allow_empty=True)
    assert new == old
    assert all(not ref.expected(s) for s in new if s.type == "high-cpu-1")
    assert all(ref.expected(s) for s in new if s.type == "max-cpu-1")
    assert lines == [f"high-cpu-1: 0 of {N} redrawn (empty answer at attempt 0), {N} still empty after "
                     f"{queries.ATTEMPTS} attempts (attempt 0 kept)"]
    # low-fuel's attempts name other fleets, all empty: attempt 0 (its fleet) is kept
    ds, ref = iot_none
    new = queries.generate(ds, ["low-fuel"], N, 1, reference=ref)
    assert new == queries.generate(ds, ["low-fuel"], N, 1, allow_empty=True)
    assert all(not ref.expected(s) for s in new)
    fleets = {_attempt(ds, "low-fuel", 1, i, a)["fleet"] for i in range(N) for a in range(queries.ATTEMPTS)}
    assert len(fleets) == 4 and len({s.params["fleet"] for s in new}) > 1


class _Always:
    """A reference whose answers are all empty, counting the questions."""

    def __init__(self):
        self.asked = []

    def expected(self, spec):
        self.asked.append(spec.params)
        return []


def test_every_attempt_is_asked_and_the_reference_factory_is_called_once(some):
    ds, _ = some
    fake, calls = _Always(), []
    got = queries.generate(ds, ["max-cpu-2"], 2, 5, reference=lambda: calls.append(1) or fake)
    assert got == queries.generate(ds, ["max-cpu-2"], 2, 5, allow_empty=True)
    assert calls == [1]
    per_query = [_attempt(ds, "max-cpu-2", 5, i, a) for i in range(2) for a in range(queries.ATTEMPTS)]
    assert fake.asked[:len(per_query)] == per_query


def test_cli_allow_empty_and_the_documented_rule(tmp_path):
    d = ",".join(f"{k}={v}" for k, v in SOME.items())
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    p = run_cli("queries", "generate", "--dataset", d, "-T", "high-cpu-1,max-cpu-1", "-n", str(N), "-o", str(a),
                env={"TSBENCH_REFERENCE_CACHE": str(tmp_path / "answers")})       # an empty cache
    assert "queries generate: building the reference engine" in p.stderr.decode()
    assert "queries generate: high-cpu-1: " in p.stderr.decode()
    p = run_cli("queries", "generate", "--dataset", d, "-T", "high-cpu-1,max-cpu-1", "-n", str(N), "--allow-empty",
                "-o", str(b))
    assert "reference" not in p.stderr.decode()
    ha, sa = queries.read_queries(a)
    hb, sb = queries.read_queries(b)
    assert (ha["allow_empty"], hb["allow_empty"]) == (False, True)
    ds = resolve(DatasetSpec(**SOME))
    assert sb == queries.generate(ds, ["high-cpu-1", "max-cpu-1"], N, 1, allow_empty=True)
    assert sa == queries.generate(ds, ["high-cpu-1", "max-cpu-1"], N, 1) != sb
    assert json.loads(a.read_text().splitlines()[1])["params"] == sa[0].params
    # the rule as documented names the number of attempts the code uses
    k = queries.ATTEMPTS
    help_text = " ".join(run_cli("queries", "generate", "--help").stdout.decode().split())
    assert f"attempts 1 to {k - 1}, and the first with a non-empty answer is kept; if all {k} are empty" in help_text
    assert f"attempts 1 .. {k - 1} draw again" in queries.__doc__ and f"if all {k} (ATTEMPTS)" in \
        " ".join(queries.__doc__.split())
    from pathlib import Path
    guide = " ".join((Path(__file__).resolve().parents[2] / "docs" / "guide" / "queries.md").read_text().split())
    assert f"attempts 1 to {k - 1} draw again" in guide and f"if all {k} are empty" in guide
