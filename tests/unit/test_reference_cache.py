"""The reference answers' disk cache (queries/answer_store.py, queries/cached.py):
a second run on the same dataset takes every answer from the cache and builds no
engine; a changed query or dataset misses; a corrupt entry is computed again;
answers from the cache equal the engine's, floats bit for bit."""

from __future__ import annotations

import json

import pytest

from tsbench import queries
from tsbench.experiments import session
from tsbench.experiments.experiment import load_experiment
from tsbench.experiments.runner import Runner
from tsbench.queries import answer_store
from tsbench.queries.base import QuerySpec
from tsbench.queries.reference import Reference

from conftest import dataset

EXP = """\
name: cached
datasets:
  d10: {use_case: devops, scale: 10, end: "2016-01-01T01:00:00Z", seed: 3}
targets:
  duck: {target: duckdb}
queries: {types: [max-cpu-8, lastpoint, high-cpu-1], count: 2}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "answers"
    monkeypatch.setenv(answer_store.ENV, str(d))
    return d


@pytest.fixture(scope="module")
def small():
    ds = dataset(use_case="devops", scale=10, end="2016-01-01T01:00:00Z", seed=3)
    return ds, queries.generate(ds, ["max-cpu-8", "lastpoint", "single-groupby-5-8-1"], 2, 1, allow_empty=True)


def _bits(rows: list[tuple]) -> list[tuple]:
    """Rows with each float as its exact bits (and every value's type)."""
    return [tuple((type(v).__name__, v.hex() if isinstance(v, float) else v) for v in r) for r in rows]


def _no_engine(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a reference engine was built")
    monkeypatch.setattr("tsbench.queries.reference.Reference", boom)


def _run(tmp_path, name: str) -> dict:
    f = tmp_path / "e.yaml"
    f.write_text(EXP)
    out = Runner(load_experiment(f), tmp_path / name, quiet=True).run()
    cells = json.loads((out / "manifest.json").read_text())
    assert cells["status"]["ok"] == 1, cells["status"]
    return cells["reference"]["d10"]


def test_a_second_run_takes_every_answer_from_the_cache_and_builds_no_engine(tmp_path, cache, monkeypatch):
    first = _run(tmp_path, "r1")
    # the PSS the build added: measured, but not asserted positive (the engine's data is on
    # disk and the process may give back more than the engine keeps)
    assert first["built"] and first["build_seconds"] > 0 and isinstance(first["pss_added_bytes"], int)
    assert first["hits"] == 0 and first["misses"] >= 6          # the drawn queries and any redraw attempts
    assert first["cache"].startswith(str(cache))
    _no_engine(monkeypatch)
    second = _run(tmp_path, "r2")
    assert second == {**first, "hits": first["misses"], "misses": 0, "built": False, "build_seconds": 0.0,
                      "pss_added_bytes": 0}


def test_answers_from_the_cache_equal_the_engines_bit_for_bit(small, cache, monkeypatch):
    ds, specs = small
    fresh = session.reference(ds, say=lambda m: None)
    computed = [fresh.expected(s) for s in specs]
    distinct = len({(s.type, json.dumps(s.params, sort_keys=True)) for s in specs})
    assert fresh.summary()["misses"] == distinct and any(computed)
    _no_engine(monkeypatch)
    again = session.reference(ds, say=lambda m: None)
    for s, rows in zip(specs, computed):
        assert _bits(again.expected(s)) == _bits(rows)
    assert again.summary()["hits"] == distinct
    monkeypatch.undo()
    engine = Reference(ds)                      # a new engine: the same rows (DuckDB may order them otherwise)
    for s, rows in zip(specs, computed):
        assert sorted(_bits(engine.expected(s)), key=repr) == sorted(_bits(rows), key=repr)


def test_a_changed_query_or_dataset_misses(small, cache):
    ds, specs = small
    ref = session.reference(ds, say=lambda m: None)
    ref.expected(specs[0])
    p = dict(specs[0].params)
    p["end"] = p["end"] - 60 * 10**9
    again = session.reference(ds, say=lambda m: None)
    again.expected(QuerySpec(99, specs[0].type, specs[0].params))     # another id: the same query
    again.expected(QuerySpec(specs[0].id, specs[0].type, p))          # other parameters: another query
    assert (again.hits, again.misses) == (1, 1)
    other = dataset(use_case="devops", scale=10, end="2016-01-01T01:00:00Z", seed=4)
    assert answer_store.dataset_key(other) != answer_store.dataset_key(ds)
    assert answer_store.dataset_key(dataset(use_case="devops", scale=10, end="2016-01-01T01:00:00Z", seed=3)) \
        == answer_store.dataset_key(ds)


def test_a_corrupt_entry_is_computed_again_with_a_note(small, cache):
    ds, specs = small
    ref = session.reference(ds, say=lambda m: None)
    want = ref.expected(specs[0])
    key = answer_store.query_key(specs[0], ref.engine.sql(specs[0]))
    entry = ref.store.path(key)
    entry.write_bytes(entry.read_bytes()[:40])                      # torn
    notes = []
    again = session.reference(ds, say=notes.append)
    got = again.expected(specs[0])         # from a new engine: the same rows, maybe in another order
    assert sorted(_bits(got), key=repr) == sorted(_bits(want), key=repr) and (again.hits, again.misses) == (0, 1)
    assert len(notes) == 3 and "unreadable" in notes[0] and str(entry) in notes[0]
    third = session.reference(ds, say=notes.append)
    assert _bits(third.expected(specs[0])) == _bits(got) and third.hits == 1        # rewritten whole
    assert not [p for p in entry.parent.iterdir() if p.name.endswith(".tmp")]


def test_the_cache_can_be_turned_off(small, monkeypatch):
    ds, specs = small
    monkeypatch.setenv(answer_store.ENV, "off")
    ref = session.reference(ds, say=lambda m: None)
    ref.expected(specs[0])
    assert ref.summary()["cache"] is None and ref.summary()["built"] and ref.misses == 1


def test_the_engine_keeps_its_database_on_disk_with_a_bounded_memory_and_removes_it(small, tmp_path, monkeypatch):
    import gc

    from tsbench.queries import reference

    monkeypatch.setenv("TSBENCH_HOME", str(tmp_path / "home"))
    ds, specs = small
    engine = Reference(ds)
    (folder,) = (tmp_path / "home" / "tmp").iterdir()
    assert (folder / "reference.duckdb").stat().st_size > 0
    limit = engine.con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit.replace(" ", "").lower() in ("256mb", "244.1mib")      # MEMORY_LIMIT, as DuckDB prints it
    assert reference.MEMORY_LIMIT == "256MB"
    assert engine.expected(specs[0])
    del engine
    gc.collect()
    assert not folder.exists()
