"""Cassandra target and server (phase 2): the C templates render the agreed
layouts' CQL (no server); against one real Cassandra 5.0 started by tsbench
for the module: a small devops CSV loaded into each schema, counted and read
back exactly, if_exists abort, an unreachable URL as one line (a server
SIGKILLed mid-load: tests/test_faults.py). Run with `pytest -m cassandra`."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from conftest import load_into, local_server, run_cli

from tsbench import native
from tsbench.databases.cassandra.load import CassandraTarget, chunks, parse_url, rendered, token_slices
from tsbench.databases.cassandra.schema import template_ops
from tsbench.dataset import DatasetSpec, resolve
from tsbench.datafile import open_datafile
from tsbench.errors import UserError
from tsbench.generate import generate
from tsbench.model import Column, Table

pytestmark = pytest.mark.cassandra

DATASET = {"use_case": "devops", "scale": 3, "end": "2016-01-01T00:10:00Z", "seed": 7}
CPU = Table("cpu", ("hostname", "region"), (Column("usage_user", "float"), Column("n", "int")))
LINES = b"2016-01-01T00:00:10.5Z,host_0,it's,1.5,\n2016-01-02T00:00:00Z,host_1,,,7\n"


def _render(schema: str, table: Table, data: bytes) -> bytes:
    tpls = [native.Template(ops) for ops in template_ops(schema, "ks", table)]
    out, ends = rendered(tpls, data, 0, len(data))
    return bytes(out)


# ---- without a server ---------------------------------------------------------------------

def test_series_template_renders_one_insert_per_non_null_value():
    text = _render("series", CPU, LINES).decode()
    assert text.splitlines() == [
        "INSERT INTO \"ks\".series_double (series_id, timestamp_ns, value) VALUES "
        "('cpu,hostname=host_0,region=it''s#usage_user#2016-01-01',1451606410500000000,1.5);",
        "INSERT INTO \"ks\".series_bigint (series_id, timestamp_ns, value) VALUES "
        "('cpu,hostname=host_1#n#2016-01-02',1451692800000000000,7);"]


def test_wide_template_leaves_null_columns_out():
    text = _render("wide", CPU, LINES).decode()
    assert text.splitlines() == [
        "INSERT INTO \"ks\".\"cpu\" (\"series\", \"day\", \"time\", \"ns\", \"hostname\", \"region\", \"usage_user\") "
        "VALUES ('hostname=host_0,region=it''s', '2016-01-01', 1451606410500, 0, 'host_0', 'it''s', 1.5);",
        "INSERT INTO \"ks\".\"cpu\" (\"series\", \"day\", \"time\", \"ns\", \"hostname\", \"n\") "
        "VALUES ('hostname=host_1', '2016-01-02', 1451692800000, 0, 'host_1', 7);"]


def test_chunks_cut_every_k_statements_and_skip_empty_ones():
    out = b"a;\nb;\nc;\n"
    ends = np.array([3, 3, 6, 9], np.uint64)          # the second line rendered nothing
    got = chunks(out, ends, 2)
    assert got == [b"BEGIN UNLOGGED BATCH\na;\nAPPLY BATCH", b"BEGIN UNLOGGED BATCH\nb;\nc;\nAPPLY BATCH"]
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

