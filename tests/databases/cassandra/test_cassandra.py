"""Cassandra target and server (phase 2): the C templates bind the agreed
layouts' prepared INSERTs (no server; decoded by the protocol's rules); against one real Cassandra 5.0 started by tsbench
for the module: a small devops CSV loaded into each schema, counted and read
back exactly, if_exists abort, an unreachable URL as one line, a count read that a
replica failed (a ReadFailure injected at the driver's session) read again, and one that
keeps failing failing the load with the server's words within the stall bound (a server
SIGKILLed mid-load: tests/faults/test_faults.py). Run with `pytest -m cassandra`."""

from __future__ import annotations

import asyncio
import struct

import numpy as np
import pytest

from tsbench.core.errors import UserError
from tsbench.core.model import Column, Table
from tsbench.data import native
from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.databases.cassandra import driver
from tsbench.databases.cassandra.schema import insert_cql, template_ops
from tsbench.databases.cassandra.target import CassandraTarget, chunks, parse_url, rendered, token_slices

from conftest import load_into, local_server, run_cli

DATASET = {"use_case": "devops", "scale": 3, "end": "2016-01-01T00:10:00Z", "seed": 7}
CPU = Table("cpu", ("hostname", "region"), (Column("usage_user", "float"), Column("n", "int")))
LINES = b"2016-01-01T00:00:10.5Z,host_0,it's,1.5,\n2016-01-02T00:00:00Z,host_1,,,7\n"


def _render(schema: str, table: Table, data: bytes) -> list[driver.BoundStatements]:
    cqls = insert_cql(schema, "ks", table)
    ids = [f"id{i}".encode() for i in range(len(cqls))]
    tpls = [native.Template(ops) for ops in template_ops(schema, table, ids)]
    return chunks(*rendered(tpls, data, 0, len(data)), 1000)


def _statements(batch: driver.BoundStatements) -> list[tuple[bytes, list]]:
    """The statements of a batch body, read by the protocol's rules: (prepared id, values)."""
    buf, pos, out = bytes(batch.data), 0, []
    for _ in range(batch.count):
        assert buf[pos] == 1                                 # kind: prepared
        n = int.from_bytes(buf[pos + 1: pos + 3], "big")
        qid, pos = buf[pos + 3: pos + 3 + n], pos + 3 + n
        values, pos = [], pos + 2
        for _ in range(int.from_bytes(buf[pos - 2: pos], "big")):
            size, pos = struct.unpack(">i", buf[pos: pos + 4])[0], pos + 4
            values.append("unset" if size == -2 else buf[pos: pos + size])
            pos += max(size, 0)
        out.append((qid, values))
    assert pos == len(buf)
    return out


def be(fmt: str, *v) -> bytes:
    return struct.pack(">" + fmt, *v)


def test_series_template_binds_one_statement_per_non_null_value():
    assert insert_cql("series", "ks", CPU) == [
        'INSERT INTO "ks".series_double (series_id, timestamp_ns, value) VALUES (?, ?, ?)',
        'INSERT INTO "ks".series_bigint (series_id, timestamp_ns, value) VALUES (?, ?, ?)']
    [batch] = _render("series", CPU, LINES)
    assert batch.count == 2
    assert _statements(batch) == [
        (b"id0", [b"cpu,hostname=host_0,region=it's#usage_user#2016-01-01", be("q", 1451606410500000000),
                  be("d", 1.5)]),
        (b"id1", [b"cpu,hostname=host_1#n#2016-01-02", be("q", 1451692800000000000), be("q", 7)])]


def test_wide_template_sends_null_columns_unset():
    assert insert_cql("wide", "ks", CPU) == [
        'INSERT INTO "ks"."cpu" ("series", "day", "time", "ns", "hostname", "region", "usage_user", "n") '
        'VALUES (?, ?, ?, ?, ?, ?, ?, ?)']
    [batch] = _render("wide", CPU, LINES)
    day = 16801 + 2 ** 31                                   # 2016-01-01 as a CQL date
    assert _statements(batch) == [
        (b"id0", [b"hostname=host_0,region=it's", be("I", day), be("q", 1451606410500), be("i", 0),
                  b"host_0", b"it's", be("d", 1.5), "unset"]),
        (b"id0", [b"hostname=host_1", be("I", day + 1), be("q", 1451692800000), be("i", 0),
                  b"host_1", "unset", "unset", be("q", 7)])]


def test_chunks_cut_every_k_statements_and_skip_empty_ones():
    out = b"a;b;c;"
    ends = np.array([2, 2, 4, 6], np.uint64)          # the second line rendered nothing
    got = [(bytes(c.data), c.count) for c in chunks(out, ends, 2)]
    assert got == [(b"a;b;", 2), (b"c;", 1)]
    assert chunks(b"", np.array([0, 0], np.uint64), 5) == []


def test_token_slices_cover_the_ring_once():
    s = token_slices(7)
    assert s[0][0] == -(2 ** 63) and s[-1][1] == 2 ** 63 - 1
    assert all(a[1] == b[0] for a, b in zip(s, s[1:])) and all(lo < hi for lo, hi in s)


def test_url_and_options_are_checked():
    assert parse_url("cassandra://a:1,b:2") == [("a", 1), ("b", 2)]
    assert parse_url("cassandra://h") == [("h", 9042)]
    with pytest.raises(UserError, match="not a cassandra://"):
        CassandraTarget("http://x:1")
    with pytest.raises(UserError, match="option schema"):
        CassandraTarget("cassandra://x:1", {"schema": "tall"})


# ---- one server for the module -------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    with local_server("cassandra") as srv:
        yield srv


@pytest.fixture(scope="module")
def devops(tmp_path_factory):
    d = tmp_path_factory.mktemp("cassandra")
    generate(resolve(DatasetSpec(**DATASET)), "csv", str(d / "devops.csv"), show_progress=False)
    return open_datafile(d / "devops.csv")


def _query(url: str, options: dict, cql: str) -> list:
    async def go():
        t = CassandraTarget(url, options)
        await t.open()
        try:
            return await t.db.rows(cql)
        finally:
            await t.close()
    return asyncio.run(go())


def _first_cpu_line(df) -> list[str]:
    with open(df.path, "rb") as f:
        line = next(x for x in f if x.startswith(b"cpu,"))
    return line.decode().rstrip("\n").split(",")


@pytest.mark.parametrize("schema", ["series", "wide"])
def test_load_counts_and_reads_back_each_schema(server, devops, schema):
    opts = {"schema": schema, "keyspace": f"t_{schema}", "batch_rows": 50}
    res = load_into("cassandra", server.url, devops, opts)
    assert res.counted == devops.values
    cols = _first_cpu_line(devops)                  # cpu,time,<tags>,usage_user,...
    tags = devops.tables().by_name()["cpu"].tags
    series = ",".join(f"{k}={v}" for k, v in zip(tags, cols[2:]))
    host, user = cols[2], float(cols[2 + len(tags)])
    if schema == "series":
        rows = _query(server.url, opts, f"SELECT timestamp_ns, value FROM t_series.series_double "
                                        f"WHERE series_id = 'cpu,{series}#usage_user#2016-01-01' LIMIT 1")
        assert rows == [(1451606400000000000, user)]
    else:
        rows = _query(server.url, opts, f"SELECT \"hostname\", \"usage_user\", \"ns\" FROM t_wide.\"cpu\" "
                                        f"WHERE \"series\" = '{series}' AND \"day\" = '2016-01-01' LIMIT 1")
        assert rows == [(host, user, 0)]


def test_if_exists_abort_refuses_a_table_with_data(server, devops):
    opts = {"keyspace": "t_abort"}
    load_into("cassandra", server.url, devops, opts)

    async def go():
        t = CassandraTarget(server.url, opts)
        await t.open()
        try:
            await t.create(devops.tables(), "abort")
        finally:
            await t.close()
    with pytest.raises(UserError) as ei:
        asyncio.run(go())
    msg = str(ei.value)
    assert "\n" not in msg and "already exists and holds data" in msg and "series_" in msg, msg


def test_version_names_the_server_and_the_client(server):
    async def go():
        t = CassandraTarget(server.url, {})
        await t.open()
        try:
            return await t.version()
        finally:
            await t.close()
    assert asyncio.run(go()).startswith("5.0.9 (client cassandra-driver 3.")


def test_unreachable_url_is_one_line(devops):
    p = run_cli("load", str(devops.path), "--target", "cassandra", "--server", "cassandra://127.0.0.1:9", "-q",
                check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and len(err.splitlines()) == 1 and "cassandra" in err and "Traceback" not in err, err



# ---- a replica's failed read (a fault injected at the driver's session) ---------------------------

READ_FAILED = "Replica(s) failed to execute read"


def _read_failure() -> Exception:
    """A ReadFailure as the driver makes it from the server's error frame (code 0x1300)."""
    from cassandra import ConsistencyLevel
    from cassandra.protocol import ReadFailureMessage

    return ReadFailureMessage(code=0x1300, message="Operation failed - received 0 responses and 1 failures: "
                              "UNKNOWN from localhost/127.0.0.1:7000",
                              info={"consistency": ConsistencyLevel.ONE, "required_responses": 1,
                                    "received_responses": 0, "failures": 1, "error_code_map": {}}).to_exception()


class _FailedRead:
    """What the driver's execute_async returns, for a read the replica failed."""

    has_more_pages = False

    def add_callbacks(self, callback, errback) -> None:
        errback(_read_failure())


@pytest.fixture
def failing_counts(monkeypatch):
    """The driver session's count statements fail with a ReadFailure while state["left"] > 0
    (None: every time); state["failed"] counts them. Every other statement reaches the server."""
    from cassandra.cluster import Session

    real, state = Session.execute_async, {"left": 0, "failed": 0}

    def execute_async(self, query, *args, **kwargs):
        text = query if isinstance(query, str) else getattr(query, "query_string", "")
        if text.startswith("SELECT count") and (state["left"] is None or state["left"] > 0):
            state["failed"] += 1
            if state["left"] is not None:
                state["left"] -= 1
            return _FailedRead()
        return real(self, query, *args, **kwargs)
    monkeypatch.setattr(Session, "execute_async", execute_async)
    return state


def _load_and_count(url: str, df, stall: float):
    """A load into keyspace t_readfail (drop first), counted, not compacted."""
    from tsbench.load.connect import connect
    from tsbench.load.run import LoadOptions, load

    async def go():
        async with connect("cassandra", url, {"keyspace": "t_readfail"}) as c:
            return await load(c.target, df, LoadOptions(progress=False, if_exists="drop", compact=False,
                                                        stall_seconds=stall))
    return asyncio.run(go())


def test_a_count_read_a_replica_failed_is_read_again(server, devops, failing_counts):
    failing_counts["left"] = 2
    res = _load_and_count(server.url, devops, 120.0)
    assert failing_counts["failed"] == 2 and res.verified and res.counted == devops.values


def test_a_count_read_that_keeps_failing_fails_the_load_with_the_servers_words(server, devops, failing_counts):
    import time

    from tsbench.load.run import LoadError

    failing_counts["left"], stall = None, 30.0
    t0 = time.monotonic()
    with pytest.raises(LoadError) as ei:
        _load_and_count(server.url, devops, stall)
    took = time.monotonic() - t0
    assert READ_FAILED in str(ei.value) and "no answer within" not in str(ei.value), ei.value
    assert failing_counts["failed"] >= driver.ADMIN_RETRIES + 1 and took < stall, took
