"""QuestDB target (phases 2-5): rendering (SAMPLE BY where a bucket width divides a
day, the reference's GROUP BY otherwise, LATEST ON for the newest rows), the server's
config and the names QuestDB cannot keep apart, and the flush's bound (no server);
against one real QuestDB 9.3.4 started by tsbench for the module: it listens on
127.0.0.1 only with telemetry off; a load makes WAL tables (designated timestamp
`time`, DAY partitions, the dataset's column types), verified, and compaction
leaves the settled files (no WAL segment, no preallocated page, no partition version
a squash replaced); a refused line, a table with other columns and a query error are
each one line with QuestDB's words.
The contract suite (tests/contract/test_contract.py) runs the queries; tests/faults/test_faults.py
a SIGKILL mid-load. Run with `pytest -m questdb`."""

from __future__ import annotations

import asyncio
import pathlib

import psutil
import pytest

from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import Batch, Column, Table, Tables
from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.databases.questdb.dialect import QuestSql, sample_by
from tsbench.databases.questdb.server import server_conf
from tsbench.databases.questdb.target import QuestDbTarget, columns
from tsbench.queries.base import DAY, HOUR, MINUTE

from conftest import load_into, local_server

DATASET = {"use_case": "devops", "scale": 3, "end": "2016-01-01T00:10:00Z", "seed": 7}
AGG = {"shape": "aggregate", "measurement": "cpu", "agg": "max", "fields": ["usage_user"], "types": ["float"],
       "tag": "hostname", "tag_values": ["host_1"], "start": 0, "end": HOUR, "bucket": MINUTE, "group_by": []}


def test_sample_by_only_where_calendar_buckets_are_the_epoch_multiples():
    assert sample_by(MINUTE) == "SAMPLE BY 1m ALIGN TO CALENDAR"
    assert sample_by(10 * MINUTE) == "SAMPLE BY 10m ALIGN TO CALENDAR"
    assert sample_by(90 * 10**9) == "SAMPLE BY 90s ALIGN TO CALENDAR"
    assert sample_by(HOUR) == "SAMPLE BY 1h ALIGN TO CALENDAR" and sample_by(DAY) == "SAMPLE BY 1d ALIGN TO CALENDAR"
    assert sample_by(7 * HOUR) is None and sample_by(2 * DAY) is None and sample_by(1500) is None


def test_rendered_forms():
    d = QuestSql()
    newest = d.aggregate({**AGG, "order": "desc", "limit": 5})
    assert "SAMPLE BY 1m ALIGN TO CALENDAR" in newest and newest.endswith("ORDER BY t DESC LIMIT 5")
    assert "m.time >= '1970-01-01T00:00:00Z' AND m.time < '1970-01-01T01:00:00Z'" in newest
    odd = d.aggregate({**AGG, "bucket": 7 * HOUR})
    assert "SAMPLE BY" not in odd and "((cast(m.time AS long) / 25200000000) * 25200000000000) AS t" in odd
    last = d.last({"shape": "last", "measurement": "cpu", "fields": ["usage_user"], "types": ["float"],
                   "group_by": ["hostname"]})
    assert last.endswith('FROM "cpu" m LATEST ON time PARTITION BY "hostname"')


def test_server_conf_binds_every_listener_to_127_and_turns_telemetry_off():
    conf = dict(line.split("=", 1) for line in server_conf({"http": 1, "pg": 2, "ilp": 3, "http_min": 4}).splitlines())
    assert [conf[k] for k in ("http.net.bind.to", "pg.net.bind.to", "line.tcp.net.bind.to", "http.min.net.bind.to")] \
        == ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4"]
    assert conf["telemetry.enabled"] == "false" and conf["line.udp.enabled"] == "false"


def test_url_options_and_names_are_checked():
    with pytest.raises(UserError, match="needs a server"):
        QuestDbTarget(None)
    with pytest.raises(UserError, match="option partition_by"):
        QuestDbTarget("http://x:1", {"partition_by": "MINUTE"})
    for bad in (Table("cpu", ("Host", "host"), (Column("v", "float"),)),
                Table("cpu", ("host",), (Column("Time", "int"),))):
        with pytest.raises(UserError, match="case-insensitive") as ei:
            columns(bad)
        assert "\n" not in str(ei.value)


def test_flush_bound_names_the_shortfall():
    t = QuestDbTarget("http://x:1", {"wal_timeout": 0.01})

    async def rows(query: str):
        if "wal_tables()" in query:
            return [["cpu", False, 1, 3, None]]
        return [[20]]                                        # count()
    t._rows = rows
    with pytest.raises(Fatal, match=r"2 of 3 WAL transactions of table 'cpu' not applied \(20 rows visible\)"):
        asyncio.run(t.flush())

    async def suspended(query: str):
        return [["cpu", True, 1, 3, "disk full"]]
    t._rows = suspended
    with pytest.raises(Fatal, match="table 'cpu' is suspended, its WAL not applied: disk full"):
        asyncio.run(t.flush())


def test_a_writer_pool_caught_releasing_a_writer_counts_as_busy_not_as_an_error():
    t = QuestDbTarget("http://x:1")
    npe = 'Cannot invoke "io.questdb.cairo.TableToken.getTableName()" because "this.this$0.tableToken" is null'

    async def answers(query: str):
        raise Fatal(f"questdb: {npe} (in: {query})")
    t._rows = answers
    assert asyncio.run(t._open_writers()) is None

    async def other(query: str):
        raise Fatal("questdb: table does not exist [table=writer_pool]")
    t._rows = other
    with pytest.raises(Fatal, match="does not exist"):
        asyncio.run(t._open_writers())

    async def pool(query: str):
        return [["cpu"], ["mem"]]
    t._rows = pool
    assert asyncio.run(t._open_writers()) == {"cpu", "mem"}


# ---- one server for the module -------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    with local_server("questdb") as srv:
        yield srv


@pytest.fixture(scope="module")
def devops(tmp_path_factory):
    d = tmp_path_factory.mktemp("questdb")
    generate(resolve(DatasetSpec(**DATASET)), "influx", str(d / "devops.lp"), show_progress=False)
    return open_datafile(d / "devops.lp")


def _run(url: str, go, options: dict | None = None):
    async def main():
        t = QuestDbTarget(url, options)
        await t.open()
        try:
            return await go(t)
        finally:
            await t.close()
    return asyncio.run(main())


def test_listens_on_127_only_with_telemetry_off(server):
    listening = {c.laddr for c in psutil.Process(server.state.pid).net_connections("inet") if c.status == "LISTEN"}
    assert {a.ip for a in listening} == {"127.0.0.1"}
    assert {a.port for a in listening} == set(server.state.ports.values())
    enabled = _run(server.url, lambda t: t._rows("SELECT enabled FROM telemetry_config"))
    assert enabled == [[False]]


def test_load_makes_wal_tables_of_the_dataset_types_and_settled_files(server, devops):
    res = load_into("questdb", server.url, devops)
    assert res.counted == devops.rows and res.compact_seconds is not None

    async def go(t):
        meta = await t._rows("SELECT table_name, designatedTimestamp, partitionBy, walEnabled FROM tables()")
        return {r[0]: r[1:] for r in meta}, dict(await t._columns("cpu")), dict(await t._columns("diskio"))
    tables, cpu, diskio = _run(server.url, go)
    assert {t.name for t in devops.tables()} <= set(tables)
    assert tables["cpu"] == ["time", "DAY", True]
    assert cpu["hostname"] == "SYMBOL" and cpu["usage_user"] == "DOUBLE" and cpu["time"] == "TIMESTAMP"
    assert diskio["reads"] == "LONG"
    root = pathlib.Path(server.state.extra["db_root"])
    dirs = [d for d in root.iterdir() if d.is_dir() and d.name.split("~")[0] in tables]
    assert dirs and not [w for d in dirs for w in d.glob("wal*")]             # applied segments purged
    assert max(f.stat().st_size for d in dirs for f in d.rglob("*.d")) < 1 << 20   # no 16 MB page left
    assert 0 < res.own_disk_bytes < 8 * devops.bytes


def test_index_option_makes_the_tag_an_indexed_symbol(server, devops):
    """-O index=hostname: hostname is `SYMBOL INDEX` in every table (TSBS's QuestDB runner adds
    that index); the other tags and the default's tables have none."""
    def indexed(t):
        return _run(server.url, lambda tg: tg._rows(f"SELECT \"column\", indexed FROM table_columns('{t}') "
                                                     "WHERE type = 'SYMBOL'"))
    load_into("questdb", server.url, devops, {"index": "hostname"})
    for t in ("cpu", "diskio"):
        assert {c: i for c, i in indexed(t)} == {c: c == "hostname" for c, _ in indexed(t)}, t
    load_into("questdb", server.url, devops)
    assert not [c for c, i in indexed("cpu") if i]


def test_gzip_bodies_load_every_row(server, devops):
    """-O gzip=true: QuestDB's /write inflates the gzip'd line protocol; the count is verified
    (load_into) and every table holds its rows."""
    assert QuestDbTarget(server.url, {"gzip": True})._gzip.headers["Content-Encoding"] == "gzip"
    res = load_into("questdb", server.url, devops, {"gzip": True, "gzip_level": 1})
    assert res.counted == devops.rows

    async def go(t):
        return sum([await t._count(x.name) for x in devops.tables()])
    assert _run(server.url, go) == devops.rows


def test_compaction_waits_until_replaced_partition_versions_are_deleted(server, devops):
    """A partition version the table no longer lists (what a squash leaves when its VACUUM
    ran before the squash was applied; here one appears right after compaction's first
    VACUUM) is counted as stale, and compaction settles only once a later VACUUM deleted it."""
    import shutil

    load_into("questdb", server.url, devops)
    root = pathlib.Path(server.state.extra["db_root"])
    cpu = next(d for d in root.iterdir() if d.is_dir() and d.name.split("~")[0] == "cpu")
    live = next(p for p in cpu.iterdir() if p.is_dir() and p.name[:1].isdigit())
    replaced = cpu / "2016-01-01T000500-000001.1"

    async def go(t):
        vacuum, calls = t._vacuum, []

        async def late_version(names, existing):
            await vacuum(names, existing)
            if not calls:
                shutil.copytree(live, replaced)
            calls.append(sorted(names))
        t._vacuum = late_version
        await t.attach(devops.tables())
        await t.compact()
        return calls, await t._stale_partitions("cpu", cpu)
    calls, stale = _run(server.url, go)
    assert len(calls) >= 2 and calls[1] == ["cpu"] and stale == 0
    assert not replaced.exists()


def test_refusals_are_one_line_with_questdbs_words(server, devops):
    tables = devops.tables()
    load_into("questdb", server.url, devops)
    other = Tables((Table("cpu", ("hostname",), (Column("usage_user", "int"),)),), 0, 1, 0, 0)

    async def go(t):
        await t.attach(tables)
        out = []
        for call in (lambda: t.write(Batch(memoryview(b'cpu,hostname=x usage_user="s" 1451606400000000000\n'), 1, 1)),
                     lambda: t.create(other, "reuse"),
                     lambda: t.query('SELECT nope FROM "cpu"')):
            try:
                await call()
                out.append(None)
            except (Fatal, UserError) as exc:
                out.append(str(exc))
        return out
    line, reuse, query = _run(server.url, go)
    assert line and "cast error from protocol type: STRING to column type: DOUBLE" in line and "HTTP 400" in line
    assert reuse and "exists with other columns" in reuse and "--if-exists drop" in reuse
    assert query and "Invalid column: nope" in query
    assert all("\n" not in m for m in (line, reuse, query))


def test_pgwire_answers_equal_http_answers_for_every_type(server, devops):
    """-O protocol=pgwire (text and binary results) gives each drawn query of every catalog
    type that fits the dataset the rows /exec gives (floats within 1e-12: QuestDB's parallel
    aggregation sums in any order); its connections are the server's own PostgreSQL wire
    port, opened before timing (one dropped when a query is cancelled mid-answer, the next
    query going on another); an error is one line with QuestDB's words."""
    import contextlib

    from tsbench import queries
    from tsbench.queries.compare import compare

    load_into("questdb", server.url, devops)
    ctx = queries.context(devops.dataset)
    specs = []
    for name in (n for n, qt in queries.CATALOG.items() if qt.applies(ctx) is None):
        with contextlib.suppress(UserError):         # a type needing more hosts than the 3 here
            specs += queries.generate(devops.dataset, [name], 1, 5, allow_empty=True)

    async def answers(t):
        await t.attach(devops.tables())
        await t.prepare(2)
        rows = [t.canonical(t.render(s), await t.query(t.render(s))) for s in specs]
        with contextlib.suppress(asyncio.TimeoutError):      # cancelled mid-answer: that connection dropped
            await asyncio.wait_for(t.query("SELECT sum(x) FROM long_sequence(20000000000)"), 0.2)
        assert t.canonical(t.render(specs[0]), await t.query(t.render(specs[0]))) == rows[0]
        try:
            await t.query('SELECT nope FROM "cpu"')
        except Fatal as exc:
            return rows, (len(t.pg.all) if t.pg else None), str(exc)
    http, none, _ = _run(server.url, answers)
    assert none is None and sum(map(len, http)) > len(specs)
    for fmt in ("text", "binary"):
        got, conns, err = _run(server.url, answers, {"protocol": "pgwire", "pg_results": fmt})
        assert conns == 1 and "Invalid column: nope" in err and "\n" not in err
        for spec, want, rows in zip(specs, http, got):
            assert compare(spec.params, want, rows, 1e-12) is None, (fmt, spec.type)
