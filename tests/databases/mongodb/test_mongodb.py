"""MongoDB target (phase 2): the C template writes the documents pymongo's own BSON
encoder writes (no server); against the local stand-in (mongo-java-server, one
for the module): the version names the stand-in, never MongoDB; a document the
server refuses fails the load with the count and the first reason; the
time-series layout asks for a time-series collection; bad options and names are
one line; the bucket layout (a document per series and hour): devops and iot
(with nulls) loaded with their counts verified and every query type it runs
equal to the reference engine's answer, a series-hour written by many batches
(several workers) ends as one document with exactly its events, a lost race to
make a bucket is sent again (the C grouping's golden bytes are
tests/unit/test_bson_groups.py). The contract suite, tests/contract/test_contract.py, covers
the default layout, the faults, tests/faults/test_faults.py, the rest. Run with
`pytest -m mongodb`."""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io

import bson
import pytest
from pymongo.errors import BulkWriteError

from tsbench import queries
from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import Column, Table, Tables
from tsbench.data import native
from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.databases.mongodb.dialect import Mql
from tsbench.databases.mongodb.documents import document_ops
from tsbench.databases.mongodb.target import MongoTarget
from tsbench.execute.run import ExecOptions
from tsbench.experiments import session
from tsbench.load.run import LoadOptions

from conftest import load_into, local_server, run_cli

CPU = Table("cpu", ("hostname", "region"), (Column("usage_user", "float"), Column("n", "int"),
                                            Column("note", "string")))
DATASET = {"use_case": "devops", "scale": 3, "end": "2016-01-01T00:10:00Z", "seed": 7}
# the bucket layout's query runs (32 hosts: every devops type draws): 20 minutes across an hour,
# so that windows read two hours' buckets, part of each (the stand-in's $unwind copies the whole
# bucket per event: short buckets keep the run short)
BUCKET_DATASETS = {"devops": {"use_case": "devops", "scale": 32, "start": "2016-01-01T00:50:00Z",
                              "end": "2016-01-01T01:10:00Z", "seed": 11},
                   "iot": {"use_case": "iot", "scale": 10, "start": "2016-01-01T00:40:00Z",
                           "end": "2016-01-01T01:40:00Z", "seed": 12}}
UTC = dt.timezone.utc


# ---- without a server ---------------------------------------------------------------------

def test_documents_are_the_bytes_pymongo_encodes():
    data = (b'2016-01-01T00:00:10.5Z,host_0,"eu ""w""",1.5,-3,"a,b"\n'
            b"2016-01-02T00:00:00Z,host_1,,,,\n")
    out, ends = native.render(native.Template(document_ops(CPU)), data, 0, len(data))
    docs = [bytes(out[a:b]) for a, b in zip([0, *ends.tolist()], ends.tolist())]
    utc = dt.timezone.utc
    assert docs == [
        bson.encode({"time": dt.datetime(2016, 1, 1, 0, 0, 10, 500000, tzinfo=utc),
                     "tags": {"hostname": "host_0", "region": 'eu "w"'},
                     "usage_user": 1.5, "n": bson.int64.Int64(-3), "note": "a,b"}),
        bson.encode({"time": dt.datetime(2016, 1, 2, tzinfo=utc), "tags": {"hostname": "host_1"}})]


def test_bucket_pipelines_start_at_the_hours_of_the_window():
    """The buckets whose hour overlaps [start, end): from the start's hour (floored), before
    the end; the tag filter on the bucket; then one document per event, then the point stages."""
    hour = 3600 * 10**9
    start = 1451606400 * 10**9 + hour + 30 * 60 * 10**9            # 2016-01-01T01:30:00Z
    p = {"shape": "aggregate", "measurement": "cpu", "start": start, "end": start + hour, "bucket": 60 * 10**9,
         "group_by": [], "agg": "max", "fields": ["usage_user"], "types": ["float"], "tag": "hostname",
         "tag_values": ["host_1"]}
    point = Mql().aggregate(p).pipeline
    bucket = Mql("bucket").aggregate(p).pipeline
    assert bucket[0] == {"$match": {"hour": {"$gte": dt.datetime(2016, 1, 1, 1, tzinfo=UTC),
                                             "$lt": dt.datetime(2016, 1, 1, 2, 30, tzinfo=UTC)},
                                    "tags.hostname": {"$in": ["host_1"]}}}
    assert bucket[1:3] == [{"$unwind": "$events"},
                           {"$replaceRoot": {"newRoot": {"$mergeObjects": [{"tags": "$tags"}, "$events"]}}}]
    assert bucket[3:] == point and Mql("timeseries").aggregate(p).pipeline == point
    last = {"shape": "last", "measurement": "cpu", "group_by": ["hostname"], "fields": ["usage_user"],
            "types": ["float"]}
    assert Mql("bucket").last(last).pipeline == bucket[1:3] + Mql().last(last).pipeline


def test_names_options_and_urls_are_checked():
    for bad in (Table("m", ("a.b",), (Column("v", "float"),)), Table("m", (), (Column("$v", "float"),)),
                Table("m", (), (Column("time", "float"),))):
        with pytest.raises(UserError, match="target mongodb: measurement m"):
            document_ops(bad)
    with pytest.raises(UserError, match="option write_concern"):
        MongoTarget("mongodb://x:1", {"write_concern": "all"})
    with pytest.raises(UserError, match="option layout"):
        MongoTarget("mongodb://x:1", {"layout": "buckets"})
    with pytest.raises(UserError, match="mongodb:// URL"):
        MongoTarget("http://x:1")
    assert MongoTarget("mongodb://x:1", {"write_concern": "majority", "journal": True}).options.journal


# ---- one server for the module -------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    with local_server("mongo-java-server") as srv:
        yield srv


@pytest.fixture(scope="module")
def devops(tmp_path_factory):
    d = tmp_path_factory.mktemp("mongodb")
    generate(resolve(DatasetSpec(**DATASET)), "csv", str(d / "devops.csv"), show_progress=False)
    return open_datafile(d / "devops.csv")


def _on(url: str, options: dict, fn):
    async def go():
        t = MongoTarget(url, options)
        await t.open()
        try:
            return await fn(t)
        finally:
            await t.close()
    return asyncio.run(go())


def test_version_names_the_stand_in(server):
    v = _on(server.url, {}, lambda t: t.version())
    assert v.startswith("mongo-java-server 1.47.0 (MongoDB wire protocol)") and "client pymongo" in v


def test_a_refused_document_fails_the_load_with_the_count_and_the_first_reason(server, devops):
    opts = {"database": "refuse"}
    load_into("mongodb", server.url, devops, opts)
    _on(server.url, opts, lambda t: t.db["cpu"].create_index([("time", 1), ("tags.hostname", 1)], unique=True))
    p = run_cli("load", str(devops.path), "-t", "mongodb", "--server", server.url, "-O", "database=refuse",
                "--if-exists", "reuse", "-q", check=False)
    err = p.stderr.decode()
    assert p.returncode != 0 and "Traceback" not in err
    assert "documents refused by the server; the first:" in err and "duplicate key" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_a_cold_cache_pass_keeps_the_in_memory_stand_in_and_says_why(server, devops):
    """Its data lives in its heap only: a cold-cache pass does not restart it (the data
    would be gone), records why, and its answers still equal the reference."""
    from tsbench.execute.run import execute

    opts = {"database": "cold"}
    load_into("mongodb", server.url, devops, opts)
    ds = devops.dataset
    ref = session.reference(ds)
    specs = session.draw(ds, ["max-cpu-1", "lastpoint"], 2, seed=3, reference=ref)
    pid = server.state.pid

    async def go(t):
        await t.attach(devops.tables())
        return await execute(t, specs, ExecOptions(cache="cold", progress=False), ref, server)
    res = _on(server.url, opts, go)
    assert server.state.pid == pid and server.exit_report() is None
    assert "keeps its data in memory only: not restarted" in res.cache_note, res.cache_note
    assert [r["status"] for r in res.records] == ["ok"] * len(specs)
    assert all(v["ok"] for v in res.validation) and len(res.validation) == len(specs)


def test_the_timeseries_layout_asks_for_a_time_series_collection(server):
    asked = []

    async def make(t):
        real = t.db.create_collection

        async def spy(name, **kw):
            asked.append((name, kw))
            return await real(name, **kw)
        t.db.create_collection = spy
        await t.create(Tables((CPU,), 0, 0, 0, 0), if_exists="drop")
    _on(server.url, {"database": "ts", "layout": "timeseries"}, make)
    assert asked == [("cpu", {"timeseries": {"timeField": "time", "metaField": "tags"}})]


def test_the_stand_in_s_default_heap_holds_data(tmp_path):
    """Its data lives in the heap: by default a quarter of the machine, at least 1 GiB, not
    capped at the other JVMs' 1 GiB."""
    import psutil

    from tsbench.databases.mongodb.server import MongoJavaServer

    heap = MongoJavaServer(name="heap-check", instance_dir=str(tmp_path)).heap
    assert heap == f"{max(1024, psutil.virtual_memory().total // (4 << 20))}m"
    assert MongoJavaServer(name="heap-check", instance_dir=str(tmp_path), options={"heap": "3g"}).heap == "3g"


def test_a_stand_in_out_of_memory_fails_the_load_at_once(tmp_path):
    """Its data lives in the heap: a heap too small for the data ends the JVM (not a server
    wedged until the push-back bound), and the load fails in one line naming the error."""
    path = tmp_path / "big.csv"
    run_cli("generate", "-q", "--scale", "10", "--end", "2016-01-01T02:00:00Z", "--format", "csv", "-o", str(path))
    p = run_cli("load", str(path), "-t", "mongodb", "--server-option", "heap=64m", "-q", check=False)
    err = p.stderr.decode().strip()
    assert p.returncode != 0 and "Traceback" not in err
    assert "mongo-java-server" in err and "OutOfMemoryError" in err, err


# ---- layout=bucket --------------------------------------------------------------------------

def _generate(tmp_path_factory, name: str, decl: dict):
    d = tmp_path_factory.mktemp(f"mongodb-{name}")
    generate(resolve(DatasetSpec(**decl)), "csv", str(d / f"{name}.csv"), show_progress=False)
    return open_datafile(d / f"{name}.csv")


@pytest.mark.parametrize("name", list(BUCKET_DATASETS))
def test_bucket_layout_loads_and_every_query_equals_the_reference(server, tmp_path_factory, name):
    df = _generate(tmp_path_factory, name, BUCKET_DATASETS[name])
    ds = df.dataset
    if name == "iot":                             # null tags and fields: lines of another series, no element
        assert any(c == "" for r in csv.reader(io.StringIO(df.path.read_text())) for c in r)
    opts = {"database": f"bucket_{name}", "layout": "bucket"}
    reach = session.Reach("mongodb", server.url, opts)
    ref = session.reference(ds)
    ctx = queries.context(ds)
    runs = MongoTarget(server.url, opts).query_types
    types = [n for n, qt in queries.CATALOG.items() if n in runs and qt.applies(ctx) is None]
    assert types
    specs = session.draw(ds, types, 1, seed=5, reference=ref)    # one of each: the stand-in's $unwind is slow

    async def go():
        async with session.open_target(reach, announce=False) as conn:
            loaded = await session.load(conn, df, LoadOptions(workers=2, batch_size=2000, if_exists="drop",
                                                              progress=False))
            buckets = sum([await conn.target.db[t.name].count_documents({}) for t in df.tables()])
            res = await session.run_queries(conn, ds, specs, ExecOptions(cache="none", progress=False), ref)
            return loaded, buckets, res
    loaded, buckets, res = asyncio.run(go())
    assert loaded.verified and loaded.counted == loaded.expected == df.rows      # events, exactly
    assert buckets < df.rows / 10                 # documents are buckets: an hour of a series each
    assert not res.unsupported
    assert [r["error"] for r in res.records if r["status"] != "ok"] == []
    bad = [v["diff"] for v in res.validation if not v["ok"]]
    assert not bad, bad[0]
    assert len(res.validation) == len(specs)


def test_a_series_hour_written_by_many_batches_is_one_document(server, tmp_path_factory):
    """Batches of 200 rows (about 7 epochs of the 27 series) by 4 workers: each series' first
    hour is written by about 50 batches, some at once; it ends as ONE document holding its
    360 events, each once; the second hour (to 01:05) its 30; count() counts events."""
    df = _generate(tmp_path_factory, "spanning",
                   {"use_case": "devops", "scale": 3, "end": "2016-01-01T01:05:00Z", "seed": 7})
    opts = {"database": "bucket_spanning", "layout": "bucket"}

    async def go():
        async with session.open_target(session.Reach("mongodb", server.url, opts), announce=False) as conn:
            res = await session.load(conn, df, LoadOptions(workers=4, batch_size=200, if_exists="drop",
                                                           progress=False))
            db = conn.target.db
            docs = {t.name: await db[t.name].find({}, {"_id": 0}).to_list(None) for t in df.tables()}
            index = await db["cpu"].index_information()
            return res, docs, index
    res, docs, index = asyncio.run(go())
    assert res.verified and res.counted == df.rows
    assert index["tags_hour"]["unique"] and index["tags_hour"]["key"] == [("tags", 1), ("hour", 1)]
    h0 = dt.datetime(2016, 1, 1, tzinfo=UTC)
    for name, buckets in docs.items():
        keys = [(tuple(sorted(d["tags"].items())), d["hour"]) for d in buckets]
        assert len(keys) == len(set(keys)) == 3 * 2, (name, keys)       # 3 hosts x 2 hours, once each
        for d in buckets:
            times = sorted(e["time"] for e in d["events"])
            first = d["hour"]
            want = 360 if first == h0 else 30
            assert times == [first + dt.timedelta(seconds=10 * k) for k in range(want)], (name, d["tags"])
            assert all(set(e) - {"time"} for e in d["events"])          # the fields are there
    assert sum(len(d["events"]) for b in docs.values() for d in b) == df.rows


def test_a_lost_race_to_make_a_bucket_is_sent_again_and_appends(server):
    """Two batches that make the same bucket at once: the unique index refuses the second
    insert (a duplicate key), which is sent again and then appends; any other refusal
    fails the load with the count and the first reason, in one line."""
    table = Table("m", ("h",), (Column("v", "float"),))
    opts = {"database": "bucket_race", "layout": "bucket"}
    data = (b"2016-01-01T00:00:00Z,a,1\n2016-01-01T00:00:10Z,b,2\n2016-01-01T00:00:20Z,a,3\n"
            b"2016-01-01T01:00:00Z,a,4\n")
    calls = []

    async def go(t):
        await t.create(Tables((table,), 0, 0, 0, 0), if_exists="drop")
        coll = t.db["m"]
        real = type(coll).bulk_write
        lose = {"first": True}

        async def racing(self, ops, ordered=True):
            calls.append([(dict(o._filter), len(o._doc["$push"]["events"]["$each"])) for o in ops])
            if lose["first"]:     # another batch makes op 1's bucket first: op 1's insert loses
                lose["first"] = False
                await self.insert_one({"tags": {"h": "b"}, "hour": dt.datetime(2016, 1, 1, tzinfo=UTC),
                                       "events": [{"time": dt.datetime(2016, 1, 1, tzinfo=UTC), "v": 9.0}]})
                await real(self, [ops[0], ops[2]], ordered=False)
                raise BulkWriteError({"writeErrors": [{"index": 1, "code": 11000, "errmsg": "E11000 dup"}]})
            return await real(self, ops, ordered=ordered)
        type(coll).bulk_write = racing
        try:
            f, fends, u, uends = _groups(table, data)
            await t._upsert("m", f, fends, u, uends)
            with pytest.raises(Fatal, match=r"1 of 3 bucket updates refused by the server; the first: no"):
                async def refuse(self, ops, ordered=True):
                    raise BulkWriteError({"writeErrors": [{"index": 2, "code": 2, "errmsg": "no"}]})
                type(coll).bulk_write = refuse
                await t._upsert("m", f, fends, u, uends)
        finally:
            type(coll).bulk_write = real
        return await coll.find({}, {"_id": 0}).to_list(None), await t.count(Tables((table,), 0, 0, 0, 0))
    docs, count = _on(server.url, opts, go)
    assert len(calls) == 2 and calls[1] == [calls[0][1]]              # op 1 alone, sent again
    got = sorted(((d["tags"]["h"], d["hour"].hour), sorted(e["v"] for e in d["events"])) for d in docs)
    assert got == [(("a", 0), [1.0, 3.0]), (("a", 1), [4.0]), (("b", 0), [2.0, 9.0])]   # appended, once
    assert count == 5                                                # the events


def _groups(table: Table, data: bytes):
    from tsbench.databases.mongodb.documents import bucket_key_ops, event_ops

    k, kends = native.render(native.Template(bucket_key_ops(table)), data, 0, len(data))
    e, eends = native.render(native.Template(event_ops(table)), data, 0, len(data))
    f, fends, u, uends = native.bson_groups(k, kends, e, eends, b"events")
    return bytes(f), fends, bytes(u), uends
