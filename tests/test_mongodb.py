"""MongoDB target (phase 2): the C template writes the documents pymongo's own BSON
encoder writes (no server); against the local stand-in (mongo-java-server, one
for the module): the version names the stand-in, never MongoDB; a document the
server refuses fails the load with the count and the first reason; the
time-series layout asks for a time-series collection; bad options and names are
one line (the contract suite, tests/test_contract.py, and the faults,
tests/test_faults.py, cover the rest). Run with `pytest -m mongodb`."""

from __future__ import annotations

import asyncio
import datetime as dt

import bson
import pytest
from conftest import load_into, local_server, run_cli

from tsbench import native
from tsbench.dataset import DatasetSpec, resolve
from tsbench.datafile import open_datafile
from tsbench.databases.mongodb.documents import document_ops
from tsbench.databases.mongodb.load import MongoTarget
from tsbench.errors import UserError
from tsbench.generate import generate
from tsbench.model import Column, Table, Tables

pytestmark = pytest.mark.mongodb

CPU = Table("cpu", ("hostname", "region"), (Column("usage_user", "float"), Column("n", "int"),
                                            Column("note", "string")))
DATASET = {"use_case": "devops", "scale": 3, "end": "2016-01-01T00:10:00Z", "seed": 7}


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


def test_names_options_and_urls_are_checked():
    for bad in (Table("m", ("a.b",), (Column("v", "float"),)), Table("m", (), (Column("$v", "float"),)),
                Table("m", (), (Column("time", "float"),))):
        with pytest.raises(UserError, match="target mongodb: measurement m"):
            document_ops(bad)
    with pytest.raises(UserError, match="option write_concern"):
        MongoTarget("mongodb://x:1", {"write_concern": "all"})
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
