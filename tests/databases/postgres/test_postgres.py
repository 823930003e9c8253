"""PostgreSQL target and server against a real PostgreSQL (phase 2): loads
through the real loader count exactly and read back the generator's values
(tags table or inline, btree or BRIN), iot's null tags and fields, concurrent
writers adding the same new tag sets, if_exists, and the server's refusals
as Fatal / UserError."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import pathlib
import random
import re
import shutil
import tempfile

import psycopg
import pytest

from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import Batch
from tsbench.data.datafile import open_datafile
from tsbench.databases.postgres.server import PostgresServer
from tsbench.databases.postgres.target import PostgresTarget
from tsbench.load.run import LoadOptions, load

from conftest import columns, generator_series, run_cli

END2H = "2016-01-01T02:00:00Z"


@pytest.fixture(scope="module")
def pg():
    # Not under tmp_path_factory: as root the server runs as `postgres`, which must
    # pass through every directory above its data dir, and each new pytest session
    # (anyone's) resets /tmp/pytest-of-root to mode 0700, which would cut a running
    # server off from its own files. /tmp itself is open to all.
    d = pathlib.Path(tempfile.mkdtemp(prefix=f"tsbench-test-pg-{os.getpid()}-"))
    s = PostgresServer(name=f"test-pg-{os.getpid()}", instance_dir=d / "inst")
    try:
        s.start()
        yield s
    finally:
        s.stop()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pg-data")
    out = {}
    for uc, scale, end in (("devops", 10, END2H), ("cpu-only", 10, END2H), ("iot", 5, "2016-01-01T01:00:00Z")):
        p = d / f"{uc}.csv"
        run_cli("generate", "-q", "-u", uc, "--scale", str(scale), "--end", end, "--format", "csv", "-o", str(p))
        out[uc] = p
    return out


def run(coro):
    return asyncio.run(coro)


async def opened(url: str, **options) -> PostgresTarget:
    t = PostgresTarget(url, options)
    await t.open()
    return t


async def load_file(t: PostgresTarget, path, **kw):
    opts = LoadOptions(**{"workers": 4, "batch_size": 1000, "progress": False, **kw})
    return await load(t, open_datafile(path), opts)


def sql(pg, db: str, q: str, params=None) -> list[tuple]:
    with psycopg.connect(pg.url, dbname=db) as c:
        return c.execute(q, params).fetchall()


def expected(df, checks):
    """As generator_series, with times as the datetimes psycopg returns."""
    return {k: (tag, [(dt.datetime.fromtimestamp(t / 1e9, dt.timezone.utc), v) for t, v in series])
            for k, (tag, series) in generator_series(df.dataset, checks).items()}


def read_back(pg, db: str, tags: str, meas: str, field: str, host: str) -> list[tuple]:
    if tags == "table":
        q = (f'SELECT m.time, m."{field}" FROM "{meas}" m JOIN tags t ON t.id = m.tags_id '
             f"WHERE t.hostname = %s ORDER BY m.time")
    else:
        q = f'SELECT time, "{field}" FROM "{meas}" WHERE hostname = %s ORDER BY time'
    return sql(pg, db, q, (host,))


def index_kinds(pg, db: str, table: str) -> set[tuple[str, str]]:
    """(access method, indexed columns) of every index on a table."""
    rows = sql(pg, db, "SELECT am.amname, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                       "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam "
                       "WHERE i.indrelid = %s::regclass", (table,))
    return {(am, re.search(r"\((.*)\)$", d).group(1)) for am, d in rows}


CHECKS = {
    "devops": [("cpu", "usage_user", 3), ("mem", "used_percent", 9), ("mem", "total", 9),
               ("diskio", "write_bytes", 7), ("redis", "used_memory", 0)],
    "cpu-only": [("cpu", "usage_user", 3), ("cpu", "usage_guest_nice", 9)],
}


@pytest.mark.parametrize("uc,tags,index,processes", [
    ("devops", "table", "btree", 1),
    ("devops", "inline", "brin", 1),
    ("devops", "table", "brin", 2),
    ("devops", "inline", "btree", 1),
    ("cpu-only", "table", "btree", 1),
    ("cpu-only", "inline", "brin", 1),
])
def test_load_counts_values_and_indexes(pg, files, uc, tags, index, processes):
    db = f"{uc.replace('-', '_')}_{tags}_{index}"
    df = open_datafile(files[uc])
    want = expected(df, CHECKS[uc])

    async def go():
        t = await opened(pg.url, database=db, tags=tags, index=index)
        try:
            res = await load_file(t, files[uc], if_exists="drop", processes=processes)
            return res, await t.version()
        finally:
            await t.close()

    res, version = run(go())
    assert res.status == "ok" and res.verified and res.counted == df.rows == res.rows
    assert version == pg.version()
    assert res.disk["pg_total_relation_size"] > 0
    assert res.disk["pg_database_size"] >= res.disk["pg_total_relation_size"]
    for (meas, field, entity), (host, series) in want.items():
        got = read_back(pg, db, tags, meas, field, host)
        assert got == series, (meas, field, host)
    types = dict(sql(pg, db, "SELECT table_name || '.' || column_name, data_type FROM information_schema.columns "
                             "WHERE table_schema = 'public'"))
    assert types["cpu.usage_user"] == "double precision"
    assert types["cpu.time"] == "timestamp with time zone"
    if uc == "devops":
        assert types["mem.total"] == "bigint"
    kinds = index_kinds(pg, db, "cpu")
    if tags == "table":
        assert types["tags.hostname"] == "text" and "cpu.hostname" not in types
        assert kinds == {(index, "\"time\""), ("btree", "tags_id, \"time\"")}
        assert sql(pg, db, "SELECT count(*) FROM tags") == [(10,)]
    else:
        assert types["cpu.hostname"] == "text" and "tags.hostname" not in types
        assert kinds == {(index, "\"time\"")}
    if uc == "devops":     # diskio's own tag (serial) stays in its table either way
        assert types["diskio.serial"] == "text"


@pytest.mark.parametrize("tags", ["table", "inline"])
def test_iot_null_tags_and_fields(pg, files, tags):
    db = f"iot_{tags}"
    df = open_datafile(files["iot"])
    ds = df.dataset
    cols, _ = columns(ds)
    keys = [t.key for t in ds.schema.entity_tags]
    assert (cols["null_tag"] >= 0).any()          # the file has null tags to test

    async def go():
        t = await opened(pg.url, database=db, tags=tags, index="btree")
        try:
            return await load_file(t, files["iot"], if_exists="drop")
        finally:
            await t.close()

    res = run(go())
    assert res.verified and res.counted == df.rows
    for k, key in enumerate(keys):          # rows whose tag k is null, per the generator and the database
        n = int((cols["null_tag"] == k).sum())
        if tags == "table":
            got = sum(sql(pg, db, f'SELECT count(*) FROM "{m}" x JOIN tags t ON t.id = x.tags_id '
                                  f'WHERE t."{key}" IS NULL')[0][0] for m in ("readings", "diagnostics"))
        else:
            got = sum(sql(pg, db, f'SELECT count(*) FROM "{m}" WHERE "{key}" IS NULL')[0][0]
                      for m in ("readings", "diagnostics"))
        assert got == n, key
    if tags == "table":     # one tag set per distinct (truck, which tag is null), NULLs equal
        distinct = len(set(zip(cols["entity"].tolist(), cols["null_tag"].tolist())))
        assert sql(pg, db, "SELECT count(*) FROM tags") == [(distinct,)]
    nonnull = slots = 0     # null fields stay NULL: non-null values add up to the file's value count
    for s, se in enumerate(ds.schema.series):
        names = [f.name for f in se.fields if not f.hidden]
        counts = ", ".join(f'count("{n}")' for n in names)
        nonnull += sum(sql(pg, db, f'SELECT {counts} FROM "{se.name}"')[0])
        slots += int((cols["series"] == s).sum()) * len(names)
    assert nonnull == df.values < slots


def _cpu_lines(hosts: list[int], minute: int) -> bytes:
    return b"".join(f"cpu,2016-01-01T00:{minute:02d}:00Z,h{h},r{h % 3},,x,{h},{h}.5,{h * 2}\n".encode()
                    for h in hosts)


def test_concurrent_writers_add_the_same_new_tag_sets(pg, tmp_path):
    """16 writers at once, each a different order of the same 2,000 new tag sets
    (one with a null tag): no deadlock, no error, one tags row per set. (With the new
    sets inserted in random order instead of the key's, most of these batches deadlock.)"""
    from tsbench.core.model import Column, Table, Tables

    tables = Tables((Table("cpu", ("host", "rack", "zone", "os"), (Column("a", "int"), Column("b", "float"),
                                                                     Column("c", "int"))),), 0, 1, 0, 0)
    rng = random.Random(5)
    N = 2000

    async def go():
        t = await opened(pg.url, database="concurrent")
        try:
            await t.create(tables, "drop")
            batches = []
            for w in range(16):
                hosts = list(range(N))
                rng.shuffle(hosts)
                batches.append(Batch(memoryview(_cpu_lines(hosts, w)), N, 3 * N))
            await asyncio.gather(*(t.write(b) for b in batches))
            return await t.count(tables), len(t._all)
        finally:
            await t.close()

    n, conns = run(go())
    assert n == 16 * N and conns == 16
    assert sql(pg, "concurrent", "SELECT count(*), count(DISTINCT key), count(*) FILTER (WHERE zone IS NULL) "
                                 "FROM tags") == [(N, N, N)]
    assert sql(pg, "concurrent", "SELECT count(DISTINCT tags_id), sum(a), min(time), max(time) FROM cpu") == \
        [(N, 16 * sum(range(N)), dt.datetime(2016, 1, 1, tzinfo=dt.timezone.utc),
          dt.datetime(2016, 1, 1, 0, 15, tzinfo=dt.timezone.utc))]


def test_reuse_keeps_tag_sets_and_refuses_other_columns(pg, files):
    """PostgreSQL's own part of if_exists (the contract suite covers abort, reuse, drop):
    a reused load finds its tag sets, and a layout with other columns is refused."""
    path = str(files["cpu-only"])
    rows = open_datafile(path).rows
    base = ["load", path, "--target", "postgres", "--server", pg.url, "-O", "database=exists", "-q"]
    run_cli(*base, "--if-exists", "drop")
    run_cli(*base, "--if-exists", "reuse", "--no-verify")  # reuse: appended, tag sets reused
    assert sql(pg, "exists", "SELECT count(*) FROM cpu") == [(2 * rows,)]
    assert sql(pg, "exists", "SELECT count(*) FROM tags") == [(10,)]
    p = run_cli(*base, "-O", "tags=inline", "--if-exists", "reuse", check=False)   # other columns
    assert p.returncode == 2 and "exists with other columns" in p.stderr.decode()


@pytest.mark.parametrize("tags", ["table", "inline"])
def test_bad_value_is_fatal_with_the_servers_words(pg, files, tags):
    df = open_datafile(files["cpu-only"])
    with open(files["cpu-only"], "rb") as f:
        good = f.readline()
    bad = good.rsplit(b",", 1)[0] + b",abc\n"             # usage_guest_nice: not a number

    async def go():
        t = await opened(pg.url, database=f"fatal_{tags}", tags=tags)
        try:
            await t.create(df.tables(), "drop")
            with pytest.raises(Fatal) as ei:
                await t.write(Batch(memoryview(good + bad), 2, 20))
            n0 = await t.count(df.tables())
            await t.write(Batch(memoryview(good), 1, 10))   # the same connection goes on
            return str(ei.value), n0, await t.count(df.tables())
        finally:
            await t.close()

    msg, n0, n1 = run(go())
    assert 'invalid input syntax for type double precision: "abc"' in msg
    assert "usage_guest_nice" in msg and "\n" not in msg
    assert (n0, n1) == (0, 1)                            # the failed batch left nothing behind


def test_server_runs_unprivileged_with_its_settings(pg):
    assert re.fullmatch(r"\d+\.\d+", pg.version())
    assert pg.url.startswith("postgresql://postgres@127.0.0.1:")
    st = pg.state
    with open(f"/proc/{st.pid}/status") as f:
        uid = int(next(x for x in f if x.startswith("Uid:")).split()[1])
    assert uid != 0 and (os.geteuid() != 0 or uid == pg.run_as().pw_uid)
    got = dict(sql(pg, "postgres", "SELECT name, setting FROM pg_settings WHERE name IN "
                                   "('listen_addresses', 'fsync', 'synchronous_commit', 'unix_socket_directories')"))
    assert got == {"listen_addresses": "127.0.0.1", "fsync": "on", "synchronous_commit": "on",
                   "unix_socket_directories": str(pg.socket_dir)}


def test_server_options_checked():
    with pytest.raises(UserError, match="option durable"):
        PostgresServer(options={"durable": "maybe"})
    with pytest.raises(UserError, match="unknown option 'fsync'"):
        PostgresServer(options={"fsync": "off"})
    with pytest.raises(UserError, match="option tags"):
        PostgresTarget("postgresql://x@127.0.0.1:1/postgres", {"tags": "json"})


def test_timescaledb_on_plain_postgres_is_one_line(pg, files):
    """-O timescaledb=true against a PostgreSQL without the extension (tsbench's own: no registry
    ships TimescaleDB) stops in one line before any table is made."""
    path = str(files["cpu-only"])
    p = run_cli("load", path, "--target", "postgres", "--server", pg.url, "-O", "database=tsdb",
                "-O", "timescaledb=true", "-q", check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and "Traceback" not in err, err
    assert "the timescaledb extension is not installed on this server" in err and "\n" not in err, err
    assert sql(pg, "tsdb", "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == [(0,)]


def test_timescaledb_options_checked_and_rendered():
    url = "postgresql://x@127.0.0.1:1/postgres"
    with pytest.raises(UserError, match="chunk_interval: only with timescaledb=true"):
        PostgresTarget(url, {"chunk_interval": "6 hours"})
    with pytest.raises(UserError, match="compress_after needs compress=true"):
        PostgresTarget(url, {"timescaledb": True, "compress_after": "7 days"})
    with pytest.raises(UserError, match="not an interval"):
        PostgresTarget(url, {"timescaledb": True, "chunk_interval": "1 day'; DROP TABLE cpu; --"})
    from tsbench.databases.postgres.dialect import PostgresSpelling
    plain, ts = PostgresSpelling("public", ("hostname",)), PostgresSpelling("public", ("hostname",), True)
    assert "time_bucket" not in plain.bucket_ns(60 * 10**9)
    assert ts.bucket_ns(60 * 10**9) == ("(extract(epoch from time_bucket(INTERVAL '60000000 microseconds', m.time))"
                                       " * 1000000)::bigint * 1000")


def test_a_multi_host_url_goes_to_libpq_which_takes_the_host_that_answers(pg, files):
    """postgresql://DEAD,LIVE/db is one URL for libpq (not a spread over two targets): the
    load reaches the live host."""
    live = pg.url.split("@", 1)[1].split("/", 1)[0]                       # host:port
    url = pg.url.replace(live, f"127.0.0.1:9,{live}", 1)
    p = run_cli("load", str(files["cpu-only"]), "-t", "postgres", "-s", url, "--if-exists", "drop", "-q",
                "--no-compact")
    assert p.returncode == 0


def test_only_urls_each_with_a_scheme_make_a_spread():
    from tsbench.databases.shared.spread import is_spread

    assert is_spread("http://a:8086,http://b:8086") and not is_spread("http://a:8086")
    for one in ("postgresql://u@h1:5432,h2:5432/db", "mongodb://h1:27017,h2:27017/?replicaSet=r", "cassandra://h1,h2"):
        assert not is_spread(one)
