"""IoTDB target (phases 2-5): paths, device grouping and tablet bytes without a server
(the tablet checked against the client library's own serialization); against one real
IoTDB 2.0.1-beta started by tsbench for the module (ConfigNode and DataNode in one JVM):
the seven ports held by that one process, tag values of every odd character and null tags
kept apart and read back, lastpoint's nulls, a refused statement as one line. The
contract suite (tests/contract/test_contract.py) runs the queries on devops, iot and synthetic
data; tests/faults/test_faults.py kills the server mid-load. Run with `pytest -m iotdb`."""

from __future__ import annotations

import asyncio

import numpy as np
import psutil
import pyarrow as pa
import pytest

from tsbench.core.errors import Fatal, Unsupported, UserError
from tsbench.core.model import Batch, Column, Table, Tables
from tsbench.databases.iotdb import paths
from tsbench.databases.iotdb.target import IotdbTarget, device_keys, device_runs, device_tablets
from tsbench.execute.timer import timed_query
from tsbench.queries.base import QuerySpec

from conftest import local_server

ODD = ("a`b", "x.y", "k=v", "with space", "naïve", "12")
T0 = 1451606400 * 10**9
SENSOR = Table("sensor", ("site", "kind"), (Column("v", "float"), Column("n", "int")))


def test_paths_quote_every_node_and_read_back():
    p = paths.device_path("tsbench", "cpu.x", ("site", "kind"), ["a`b.c", None])
    assert p == "root.tsbench.`cpu.x`.`site=a``b.c`.`kind`"
    nodes = paths.split(p)
    assert nodes == ["root", "tsbench", "cpu.x", "site=a`b.c", "kind"]
    assert paths.tag_value("site", nodes[3]) == "a`b.c" and paths.tag_value("kind", nodes[4]) is None
    assert paths.tag_value("kind", "kind=") == ""
    with pytest.raises(UserError, match="database"):
        paths.database_path("1bad")


def test_devices_keep_null_tags_apart_from_every_value():
    arrow = pa.table({"site": ["x", None, "x", "y", None, "x"], "kind": ["1", "1", None, None, "1", "1"]})
    key = device_keys(arrow, ("site", "kind"))
    assert key[0] == key[5] and key[1] == key[4] and len({*key[:4].tolist()}) == 4
    order, starts, counts = device_runs(key, np.array([5, 4, 3, 2, 1, 0]))
    runs = {tuple(order[s: s + n].tolist()) for s, n in zip(starts, counts)}
    assert runs == {(5, 0), (4, 1), (2,), (3,)}          # a device's rows, by time


def test_tablets_equal_the_client_librarys_own_numpy_tablets():
    """Each device's tablet (values block slice, bitmaps, times) is byte for byte what the
    client's NumpyTablet with BitMaps makes of the same rows, sorted by time."""
    from iotdb.utils.BitMap import BitMap
    from iotdb.utils.IoTDBConstants import TSDataType
    from iotdb.utils.NumpyTablet import NumpyTablet

    n = 21
    rng = np.random.default_rng(3)
    times = rng.permutation(n).astype(np.int64) * 10**9 + T0
    site = ["x" if i % 3 else "y`z" for i in range(n)]
    v = [None if i % 5 == 0 else i / 3 for i in range(n)]
    k = [None if i == 7 else i * 7 for i in range(n)]
    arrow = pa.table({"time": pa.array(times, pa.timestamp("ns", tz="UTC")), "site": site, "kind": [None] * n,
                      "v": pa.array(v, pa.float64()), "n": pa.array(k, pa.int64())})
    tablets = device_tablets("tsbench", SENSOR, arrow, 1, {})
    assert sorted(t.get_insert_target_name() for t in tablets) == [
        "root.tsbench.`sensor`.`site=x`.`kind`", "root.tsbench.`sensor`.`site=y``z`.`kind`"]
    for tab in tablets:
        rows = [i for i in range(n) if f"site={site[i].replace('`', '``')}`" in tab.get_insert_target_name()]
        rows.sort(key=lambda i: times[i])
        maps = []
        for col in (v, k):
            bm = BitMap(len(rows))
            for j, i in enumerate(rows):
                if col[i] is None:
                    bm.mark(j)
            maps.append(None if bm.is_all_unmarked() else bm)
        theirs = NumpyTablet(tab.get_insert_target_name(), ["`v`", "`n`"], [TSDataType.DOUBLE, TSDataType.INT64],
                             [np.array([v[i] or 0.0 for i in rows]), np.array([k[i] or 0 for i in rows])],
                             times[rows], maps if any(maps) else None)
        assert tab.get_binary_values() == theirs.get_binary_values()
        assert tab.get_binary_timestamps() == theirs.get_binary_timestamps()
        assert tab.get_row_number() == len(rows) and tab.get_measurements() == theirs.get_measurements()


def test_render_filters_at_the_tags_level_and_refuses_what_it_cannot_say():
    t = IotdbTarget("iotdb://127.0.0.1:1")
    t._tables = Tables((SENSOR,), T0, T0 + 10**10, 1, 1)
    p = {"shape": "aggregate", "measurement": "sensor", "agg": "max", "fields": ["v"], "types": ["float"],
         "tag": "kind", "tag_values": ["b", None], "start": T0, "end": T0 + 3600 * 10**9, "bucket": 60 * 10**9,
         "group_by": ["site"]}
    q = t.render(QuerySpec(1, "max-cpu-1", p))
    assert "FROM root.tsbench.`sensor`.*.`kind=b` WHERE" in q.sql and "LEVEL = 3" in q.sql, q.sql
    assert t.render(QuerySpec(1, "max-cpu-1", {**p, "tag_values": [None]})).sql is None
    with pytest.raises(Unsupported, match="LIMIT"):
        t.render(QuerySpec(1, "max-cpu-1", {**p, "limit": 5, "order": None}))
    with pytest.raises(Unsupported, match="COUNT_IF counts runs"):
        t.render(QuerySpec(1, "breakdown-frequency", {"shape": "custom", "type": "breakdown-frequency"}))


def test_url_options_and_string_fields_are_checked():
    with pytest.raises(UserError, match="needs a server"):
        IotdbTarget(None)
    with pytest.raises(UserError, match="expected iotdb://"):
        IotdbTarget("http://127.0.0.1:6667")
    with pytest.raises(UserError, match="database"):
        IotdbTarget("iotdb://127.0.0.1:6667", {"database": "a.b"})
    t = IotdbTarget("iotdb://127.0.0.1:6667")
    with pytest.raises(UserError, match="holds strings"):
        asyncio.run(t.attach(Tables((Table("m", (), (Column("s", "string"),)),), 0, 1, 1, 1)))


# ---- one server for the module -------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    with local_server("iotdb") as srv:
        yield srv


def test_both_nodes_run_in_the_one_process_tsbench_watches(server):
    """The ConfigNode's and the DataNode's thrift ports are the one process's, and it opens
    no port but those tsbench picked (no REST, MQTT, metrics; no consensus ports: one node)."""
    proc, ports = psutil.Process(server.state.pid), server.state.ports
    listening = {c.laddr.port for c in proc.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
    assert {ports[k] for k in ("rpc", "cn_internal", "dn_internal", "mpp")} <= listening <= set(ports.values()), \
        (ports, listening)
    assert proc.children(recursive=True) == []
    assert server.url.startswith("iotdb://127.0.0.1:")


def _csv(rows: list[tuple]) -> bytes:
    def cell(x):
        return "" if x is None else str(x)
    return "".join("sensor," + ",".join(cell(x) for x in r) + "\n" for r in rows).encode()


def test_odd_tag_values_and_null_tags_are_kept_apart_and_read_back(server):
    """Every odd tag value, a null tag beside a value, null fields: the count is exact,
    the rows come back as written, and lastpoint's newest row keeps its null."""
    tags = [(s, "a") for s in ODD] + [(None, "a"), ("x", None), (None, None)]
    rows = []
    for i, (site, kind) in enumerate(tags):
        t = f"2016-01-01T00:00:{i:02d}Z"
        rows.append((t, site, kind, 0.5 + i, i))
    rows.append(("2016-01-01T00:01:00Z", "x", None, None, 99))      # x's newest row: v null
    data = _csv(rows)
    values = sum((r[3] is not None) + (r[4] is not None) for r in rows)
    tables = Tables((SENSOR,), T0, T0 + 3600 * 10**9, len(rows), values)

    async def go():
        t = IotdbTarget(server.url)
        await t.open()
        try:
            await t.create(tables, "drop")
            await t.write(Batch(memoryview(data), len(rows), values))
            await t.flush()
            n = await t.count(tables)
            got = {}
            for typ, p in (("read-all", {"shape": "rows", "measurement": "sensor", "fields": ["v", "n"],
                                         "types": ["float", "int"], "tag": None, "tag_values": None,
                                         "start": T0, "end": T0 + 3600 * 10**9, "value_filter": None,
                                         "tags_out": ["site", "kind"]}),
                           ("lastpoint", {"shape": "last", "measurement": "sensor", "fields": ["v", "n"],
                                          "types": ["float", "int"], "group_by": ["site", "kind"]})):
                q = t.render(QuerySpec(0, typ, p))
                got[typ] = t.answer_rows(q, await timed_query(t, q))
            return n, got
        finally:
            await t.close()
    n, got = asyncio.run(go())
    assert n == values
    sec = [int(r[0][-3:-1]) + 60 * int(r[0][-6:-4]) for r in rows]
    want = sorted((T0 + s * 10**9, r[1], r[2], r[3], r[4]) for s, r in zip(sec, rows))
    assert sorted(got["read-all"], key=repr) == sorted(want, key=repr)
    last = {(r[1], r[2]): r for r in got["lastpoint"]}
    assert len(last) == len(tags)
    assert last["x", None] == (T0 + 60 * 10**9, "x", None, None, 99)
    assert last[None, None] == (T0 + 8 * 10**9, None, None, 8.5, 8)


def test_a_refused_statement_is_one_fatal_line_with_iotdbs_words(server):
    async def go():
        t = IotdbTarget(server.url)
        await t.open()
        try:
            await t._query("SELECT FROM WHERE")
        finally:
            await t.close()
    with pytest.raises(Fatal) as ei:
        asyncio.run(go())
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("iotdb at 127.0.0.1:") and "700" in msg, msg
