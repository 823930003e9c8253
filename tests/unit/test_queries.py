"""Phases 3-5 on the SQL targets and the core: queries drawn once for every
target, the reference engine, validation of DuckDB answers, a wrong rendering
caught, and one-line errors (PostgreSQL's answers and cold caches:
tests/databases/postgres/test_postgres_queries.py; validate and execute on local
servers: tests/e2e/test_validate_local.py)."""

from __future__ import annotations

import asyncio
import json
import re
import tempfile

import pytest

from tsbench import queries
from tsbench.core.errors import UserError
from tsbench.execute.run import ExecOptions, execute
from tsbench.load.run import LoadOptions, load
from tsbench.queries.base import SqlSpelling
from tsbench.queries.compare import compare
from tsbench.queries.reference import Reference
from tsbench.queries.shapes import sql as shape_sql

from conftest import execute_on, load_into, run_cli
from querysets import assert_all_valid, devops_csv, devops_specs


@pytest.fixture(scope="module")
def devops(tmp_path_factory):
    return devops_csv(tmp_path_factory)


@pytest.fixture(scope="module")
def specs(devops):
    return devops_specs(devops)


@pytest.fixture(scope="module")
def reference(devops):
    return Reference(devops.dataset)


def test_catalog_has_the_named_sets():
    names = set(queries.CATALOG)
    assert {f"max-cpu-{n}" for n in (1, 2, 4, 8, 16, 32)} <= names
    assert {"1-host-1-hr", "1-host-12-hr", "8-host-1-hr", "groupby"} <= names
    tsbs = {"single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-1-8-1", "single-groupby-5-1-1",
            "single-groupby-5-1-12", "single-groupby-5-8-1", "cpu-max-all-1", "cpu-max-all-8", "cpu-max-all-32-24",
            "double-groupby-1", "double-groupby-5", "double-groupby-all", "high-cpu-all", "high-cpu-1",
            "lastpoint", "groupby-orderby-limit"}
    assert tsbs <= names and len(tsbs) == 16
    assert {"flux-sum-1d", "flux-sum-by-tag-12d", "read-all", "read-tenth", "read-one"} <= names


def test_same_seed_same_queries_and_independent_per_type(devops, tmp_path):
    a = queries.generate(devops.dataset, ["max-cpu-8", "high-cpu-1"], 3, 11)
    b = queries.generate(devops.dataset, ["high-cpu-1"], 3, 11)
    assert [s.params for s in a[3:]] == [s.params for s in b]       # a type's draws ignore the other types
    c = queries.generate(devops.dataset, ["max-cpu-8", "high-cpu-1"], 3, 12)
    assert [s.params for s in a] != [s.params for s in c]
    p = a[0].params
    assert len(p["tag_values"]) == 8 and len(set(p["tag_values"])) == 8
    assert p["end"] - p["start"] == 3600 * 10**9 and p["start"] % (60 * 10**9) == 0
    queries.write_queries(tmp_path / "q.jsonl", devops.dataset, 11, a)
    head, back = queries.read_queries(tmp_path / "q.jsonl")
    assert back == a and head["dataset"] == devops.dataset.describe()


def test_every_target_renders_the_same_parameters(devops, specs):
    """The queries file is the only source of parameters: each rendering names the same hosts and window."""
    from tsbench.databases.postgres.dialect import PostgresSpelling

    s = next(x for x in specs if x.type == "max-cpu-4")
    for d in (SqlSpelling(), PostgresSpelling("public", ("hostname",)), PostgresSpelling("public", ())):
        text = shape_sql(s.params, d)
        for h in s.params["tag_values"]:
            assert f"'{h}'" in text


def test_duckdb_answers_equal_the_reference(devops, specs, reference, tmp_path):
    url = f"duckdb:{tmp_path / 'q.duckdb'}"
    _load(url, devops)
    res = execute_on("duckdb", url, devops, specs, reference, workers=2)
    assert_all_valid(res, specs)
    st = {s["type"]: s for s in res.stats()}
    assert st["all"]["count"] == len(specs) and st["max-cpu-1"]["p50_ms"] > 0


def _load(url, df, options=None):
    load_into("duckdb" if url.startswith("duckdb:") else "postgres", url, df, options)


def test_a_wrong_rendering_is_caught(devops, specs, reference, tmp_path):
    from tsbench.databases.duckdb.target import DuckDBTarget

    class OffByOne(DuckDBTarget):     # test-only: the window shifted by one bucket
        def render(self, spec):
            p = dict(spec.params)
            if p.get("bucket"):
                p["start"] += p["bucket"]
                p["end"] += p["bucket"]
            return shape_sql(p, SqlSpelling())

    url = f"duckdb:{tmp_path / 'w.duckdb'}"
    _load(url, devops)
    some = [s for s in specs if s.type in ("max-cpu-8", "double-groupby-5", "cpu-max-all-8")]

    async def go():
        t = OffByOne(url)
        await t.open()
        try:
            await t.attach(devops.tables())
            return await execute(t, some, ExecOptions(progress=False), reference)
        finally:
            await t.close()
    res = asyncio.run(go())
    assert len(res.validation) == len(some) and not any(v["ok"] for v in res.validation)
    assert re.search(r"row \d+", res.validation[0]["diff"])


def test_compare_rules():
    p = {"shape": "aggregate", "agg": "max", "fields": ["a", "b"], "types": ["float", "int"], "bucket": 60,
         "group_by": ["h"]}
    exp = [(0, "x", 1.0, 2), (60, "x", None, None), (60, "y", 3.0, 4)]
    assert compare(p, exp, [(60, "y", 3.0, 4), (0, "x", 1.0, 2)]) is None             # order, empty bucket
    assert compare(p, exp, [(60, "y", 3.0 + 3e-16, 4), (0, "x", 1.0, 2)]) is not None  # a stored max exactly
    assert compare(p, exp, [(0, "x", 1.0, 2), (60, "y", 3.0, 5)]) is not None          # ints exactly
    assert compare(p, exp, [(0, "x", 1.0, 2), (60, "y", 3.001, 4)]) is not None        # floats within tolerance
    assert compare(p, exp, [(0, "x", 1.0, 2)]) is not None                             # a missing row
    assert compare(p, exp, [(0, "x", 1.0, None), (60, "y", 3.0, 4)]) is not None       # null vs value
    big = [(0, "x", 1.0, 2**53)]                            # integers as integers, not as doubles
    assert compare(p, big, [(0, "x", 1.0, 2**53 + 1)]) is not None
    assert compare(p, big, [(0, "x", 1.0, 2**53)]) is None
    newest = {**p, "group_by": [], "fields": ["a"], "types": ["float"], "order": "desc", "limit": 2}
    assert compare(newest, [(60, 3.0), (0, 1.0)], [(60, 3.0), (0, 1.0)]) is None
    assert compare(newest, [(60, 3.0), (0, 1.0)], [(0, 1.0), (60, 3.0)]) is not None     # an ordered answer in order
    assert compare(p, exp, exp[::-1]) is None                                           # an unordered one as a set


def test_unsupported_types_are_recorded_not_run(devops, specs, reference):
    from tsbench.core.errors import Unsupported
    from tsbench.databases.duckdb.target import DuckDBTarget
    from tsbench.queries.sql import Sql

    class NarrowSql(Sql):             # test-only: a dialect that excludes every type but one
        excluded = {n: "narrowed for the test" for n in queries.CATALOG if n != "max-cpu-1"}

    class Narrow(DuckDBTarget):
        dialects = {"sql": NarrowSql}

    async def go():
        t = Narrow(f"duckdb:{tempfile.mkdtemp()}/n.duckdb")
        with pytest.raises(Unsupported):
            t.render(next(s for s in specs if s.type == "lastpoint"))
        await t.open()
        try:
            await _load_direct(t, devops)
            return await execute(t, specs, ExecOptions(progress=False), reference)
        finally:
            await t.close()
    res = asyncio.run(go())
    assert {r["type"] for r in res.records} == {"max-cpu-1"}
    assert "lastpoint" in res.unsupported and len(res.unsupported) == len({s.type for s in specs}) - 1


async def _load_direct(t, df):
    await load(t, df, LoadOptions(progress=False))


def test_errors_are_one_line(devops, tmp_path):
    with pytest.raises(UserError, match=r"unknown query type 'nope'"):
        queries.generate(devops.dataset, ["nope"], 1, 1)
    from tsbench.data.dataset import DatasetSpec, resolve

    iot = resolve(DatasetSpec(use_case="iot", scale=2, end="2016-01-01T00:10:00Z"))
    with pytest.raises(UserError, match=r"needs measurement 'cpu', which the dataset \(iot\) lacks"):
        queries.generate(iot, ["max-cpu-1"], 1, 1)
    q = tmp_path / "q.jsonl"
    for args, pattern in [
        (["queries", "generate", str(devops.path), "-T", "nope", "-o", str(q)], r"unknown query type 'nope'"),
        (["queries", "generate", "--dataset", "use_case=iot,scale=2,end=2016-01-01T00:10:00Z", "-T", "max-cpu-1",
          "-o", str(q)], r"needs measurement 'cpu'"),
        (["execute", str(tmp_path / "none.jsonl"), "-t", "duckdb"], r"no such queries file"),
    ]:
        p = run_cli(*args, check=False)
        err = p.stderr.decode().strip()
        assert p.returncode == 2 and len(err.splitlines()) == 1 and re.search(pattern, err), err


def test_cli_generate_execute_validate(devops, tmp_path):
    q, cache = tmp_path / "q.jsonl", {"TSBENCH_REFERENCE_CACHE": str(tmp_path / "answers")}
    p = run_cli("queries", "generate", str(devops.path), "--family", "devops", "-n", "1", "--seed", "4", "-o", str(q),
                env=cache)
    assert "building the reference engine" in p.stderr.decode()
    assert len(q.read_text().splitlines()) == 1 + 26
    p = run_cli("execute", str(q), "-t", "duckdb", "--load", str(devops.path), "-w", "2", "--json",
                str(tmp_path / "e.json"), env=cache)
    err = p.stderr.decode()
    # the draw cached every answer it asked for: execute's validation builds no engine
    assert "reference answers: 26 from the cache, 0 computed; no engine built" in err
    assert "building the reference engine" not in err
    assert "validated 26/26 distinct queries equal to the reference" in err and "max-cpu-32" in err
    assert re.search(r"; \d+ non-empty; 26/26 executions", err)
    e = json.loads((tmp_path / "e.json").read_text())
    assert e["cache"] == "warm" and len(e["records"]) == 26 and all(v["ok"] for v in e["validation"])
    assert all(r["valid"] is True and r["answer_digest"] and r["client_s"] is None for r in e["records"])
    p = run_cli("validate", str(q), "-t", "duckdb", "--load", str(devops.path), env=cache)
    assert "validated 26/26" in p.stderr.decode()
    assert "reference answers: 26 from the cache, 0 computed; no engine built" in p.stderr.decode()
    p = run_cli("validate", str(q), "-t", "duckdb", "--load", str(devops.path),
                env={"TSBENCH_REFERENCE_CACHE": "off"})
    assert "reference answers: 0 from the cache, 26 computed (cache off); engine built in" in p.stderr.decode()


def test_the_queries_file_gives_every_dialect_the_same_parameters(devops, specs):
    """InfluxQL, PromQL and SQL renderings of one drawn query name the same hosts and window."""
    from tsbench.databases.influx.target import InfluxTarget
    from tsbench.databases.victoriametrics.target import VictoriaMetricsTarget
    from tsbench.queries.base import iso

    s = next(x for x in specs if x.type == "single-groupby-1-8-1")
    p = s.params
    texts = {"influxql": str(InfluxTarget("http://127.0.0.1:1").render(s)),
             "promql": str(VictoriaMetricsTarget("http://127.0.0.1:1").render(s)),
             "sql": shape_sql(p, SqlSpelling())}
    for name, text in texts.items():
        for h in p["tag_values"]:
            assert h in text, (name, h, text)
    assert iso(p["start"]) in texts["sql"] and iso(p["end"]) in texts["sql"]
    assert str(p["start"]) in texts["influxql"] or iso(p["start"]) in texts["influxql"]


def test_rate_burn_in_duration_and_print_responses(devops, specs, reference, tmp_path, capsys):
    from tsbench.databases.duckdb.target import DuckDBTarget

    class Slow(DuckDBTarget):         # test-only: every query takes at least 50 ms
        async def query(self, native):
            ans = await super().query(native)
            await asyncio.sleep(0.05)
            return ans

    url = f"duckdb:{tmp_path / 'r.duckdb'}"
    _load(url, devops)
    one = [s for s in specs if s.type == "max-cpu-1"]

    async def go(**kw):
        t = Slow(url)
        await t.open()
        try:
            return await execute(t, one, ExecOptions(progress=False, cache="none", validate=False, **kw))
        finally:
            await t.close()
    # 100 q/s asked of a server that does 20 q/s: latency counted from the schedule shows the queue
    res = asyncio.run(go(rate=100.0, count=10, burn_in=3))
    lat = [r["latency"] for r in res.records]
    assert len(res.records) == 10                      # burn-in not recorded
    assert lat[-1] > 0.3 and lat[-1] > 4 * lat[0]
    res = asyncio.run(go(duration=0.5, workers=2))
    assert 0.45 < res.seconds < 1.5 and 10 <= len(res.records) <= 30
    asyncio.run(go(count=1, print_responses=True))
    out = capsys.readouterr().out
    assert "-- query" in out and "max-cpu-1" in out and "SELECT" in out
