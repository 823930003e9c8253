"""InfluxDB target and server against a real InfluxDB 1.8 (phase 2): concurrent
loads count exactly, values read back equal the generator's, if_exists, the
v2 API, and the server's refusals as Fatal / Retryable / UserError."""

from __future__ import annotations

import asyncio
import itertools
import json
import os

import numpy as np
import pytest

from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.core.model import Batch
from tsbench.data.datafile import open_datafile
from tsbench.databases.influx.server import InfluxServer
from tsbench.databases.influx.target import InfluxTarget
from tsbench.databases.shared.server import free_port

from conftest import generator_series, local_server, run_cli

END = "2016-01-01T02:00:00Z"


@pytest.fixture(scope="module")
def server():
    with local_server("influx") as s:
        yield s


@pytest.fixture(scope="module")
def datafiles(tmp_path_factory):
    d = tmp_path_factory.mktemp("influx-data")
    out = {}
    for uc in ("devops", "cpu-only"):
        p = d / f"{uc}.lp"
        run_cli("generate", "-q", "-u", uc, "--scale", "10", "--end", END, "--format", "influx", "-o", str(p))
        out[uc] = open_datafile(p)
    return out


def batches(data: bytes, lines: int) -> list[Batch]:
    """Whole-line batches of `lines` lines (the last one shorter), as views of data."""
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == ord("\n")) + 1
    cuts = [0, *ends[lines - 1::lines].tolist()]
    if cuts[-1] != len(data):
        cuts.append(len(data))
    mv = memoryview(data)
    return [Batch(mv[a:b], int(np.searchsorted(ends, b) - np.searchsorted(ends, a)), 0)
            for a, b in itertools.pairwise(cuts)]


async def load(t: InfluxTarget, data: bytes, lines: int = 2000, workers: int = 4) -> None:
    q: asyncio.Queue = asyncio.Queue()
    for b in batches(data, lines):
        q.put_nowait(b)

    async def worker():
        while not q.empty():
            await t.write(q.get_nowait())

    await asyncio.gather(*(worker() for _ in range(workers)))


def run(coro):
    return asyncio.run(coro)


async def opened(url: str, **options) -> InfluxTarget:
    t = InfluxTarget(url, options)
    await t.open()
    return t


def expected(df, checks):
    return generator_series(df.dataset, checks)


async def read_back(t: InfluxTarget, meas: str, field: str, host: str, tables):
    res = await t.influxql(f"SELECT \"{field}\" FROM \"{meas}\" WHERE hostname='{host}' "
                        f"AND time >= {tables.start_ns} AND time < {tables.end_ns} ORDER BY time", db=t.db)
    return [tuple(r) for r in res[0]["series"][0]["values"]]


@pytest.mark.parametrize("uc,checks", [
    ("devops", [("cpu", "usage_user", 3), ("diskio", "write_bytes", 7), ("redis", "used_memory", 0),
                ("mem", "used_percent", 9)]),
    ("cpu-only", [("cpu", "usage_user", 3), ("cpu", "usage_guest_nice", 9)]),
])
def test_load_counts_and_values(server, datafiles, uc, checks):
    df = datafiles[uc]
    tables = df.tables()
    want = expected(df, checks)

    async def go():
        t = await opened(server.url, database=f"load_{uc.replace('-', '_')}")
        try:
            assert await t.version() == "1.8.10"
            await t.create(tables, "drop")
            await load(t, df.path.read_bytes())
            await t.flush()
            assert await t.count(tables) == df.values
            got = {c: await read_back(t, c[0], c[1], want[c][0], tables) for c in checks}
            if uc == "devops":
                await t.compact()
                assert [v["memBytes"] for _, v in await t._stats("tsm1_cache")] == [0]   # all in TSM files
                assert (await t.disk_bytes())["influx_shard_disk_bytes"] > 0
                assert await t.count(tables) == df.values
            return got
        finally:
            await t.close()

    got = run(go())
    for c in checks:
        _, rows = want[c]
        assert len(rows) == 720                      # 2 hours of 10 s
        assert got[c] == rows, c                     # exact: same doubles, same integers


def test_gzip_bodies_load_every_value(server, datafiles):
    """-O gzip=true: InfluxDB inflates the gzip'd line protocol; every value is there, exactly."""
    df = datafiles["devops"]
    tables = df.tables()
    checks = [("cpu", "usage_user", 3), ("diskio", "write_bytes", 7)]
    want = expected(df, checks)

    async def go():
        t = await opened(server.url, database="gzipped", gzip=True, gzip_level=1)
        try:
            assert t._gzip.headers["Content-Encoding"] == "gzip" and t._gzip.level == 1
            await t.create(tables, "drop")
            await load(t, df.path.read_bytes(), lines=5000, workers=2)
            await t.flush()
            return await t.count(tables), {c: await read_back(t, c[0], c[1], want[c][0], tables) for c in checks}
        finally:
            await t.close()

    counted, got = run(go())
    assert counted == df.values
    for c in checks:
        assert got[c] == want[c][1], c
    with pytest.raises(UserError, match="gzip is a v1 /write setting"):
        InfluxTarget(server.url, {"gzip": True, "api": "v2"})


def one_table():
    from tsbench.core.model import Column, Table, Tables

    return Tables((Table("m", ("host",), (Column("v", "float"),)),), 1451606400000000000,
                  1451606400000000000 + 10 ** 9, 1, 1)


def test_v2_api(server, datafiles):
    df = datafiles["cpu-only"]
    tables = df.tables()

    async def go():
        t = await opened(server.url, database="v2load", api="v2")
        try:
            await t.create(tables, "drop")
            await load(t, df.path.read_bytes(), lines=5000, workers=3)
            return await t.count(tables)
        finally:
            await t.close()

    assert run(go()) == df.values


def test_consistency_and_shard_duration_options(server, datafiles):
    """inch's -consistency and -shard-duration: the write carries the consistency, the database
    is made with the shard duration; consistency with api v2 is refused in one line."""
    df = datafiles["cpu-only"]
    tables = df.tables()

    async def go():
        t = await opened(server.url, database="shards", consistency="one", shard_duration="1h")
        try:
            await t.create(tables, "drop")
            await load(t, df.path.read_bytes(), lines=5000, workers=2)
            rps = await t.influxql('SHOW RETENTION POLICIES ON "shards"')
            return await t.count(tables), rps[0]["series"][0]["values"][0], t._write_params
        finally:
            await t.close()
    counted, rp, params = run(go())
    assert counted == df.values and rp[2] == "1h0m0s" and params["consistency"] == "one"
    with pytest.raises(UserError, match="consistency is a v1 /write setting"):
        InfluxTarget(server.url, {"consistency": "one", "api": "v2"})
    with pytest.raises(UserError, match="shard_duration"):
        InfluxTarget(server.url, {"shard_duration": "soon"})


@pytest.mark.parametrize("api", ["v1", "v2"])
def test_malformed_line_is_fatal_with_server_words(server, api):
    async def go():
        t = await opened(server.url, database="bad", api=api)
        try:
            await t.create(one_table(), "drop")
            with pytest.raises(Fatal) as e:
                await t.write(Batch(memoryview(b"m,host=a v=1.5 1451606400000000000\nm,host=b v= 12\n"), 2, 2))
            assert "unable to parse" in str(e.value) and "HTTP 400" in str(e.value)
            with pytest.raises(Fatal) as e:    # a string into a float field
                await t.write(Batch(memoryview(b'm,host=a v="x" 1451606410000000000\n'), 1, 1))
            assert "field type conflict" in str(e.value)
        finally:
            await t.close()

    run(go())


def test_pushback_is_retryable():
    """A stand-in server answering as InfluxDB does when its cache is full or it times out."""
    from aiohttp import web

    answers = iter([(500, {"error": "engine: cache-max-memory-size exceeded: (1073741824/1073741824)"}),
                    (500, {"error": "timeout"}),
                    (500, {"error": "something else broke"})])

    async def ping(_):
        return web.Response(status=204, headers={"X-Influxdb-Version": "1.8.10"})

    async def write(request):
        await request.read()
        status, body = next(answers)
        return web.Response(status=status, text=json.dumps(body, separators=(",", ":")),  # as Go writes it
                            content_type="application/json")

    async def go():
        app = web.Application()
        app.router.add_get("/ping", ping)
        app.router.add_post("/write", write)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        t = await opened(f"http://127.0.0.1:{port}")
        b = Batch(memoryview(b"m v=1 1\n"), 1, 1)
        try:
            for exc in (Retryable, Retryable, Fatal):
                with pytest.raises(exc):
                    await t.write(b)
        finally:
            await t.close()
            await runner.cleanup()

    run(go())


def test_server_options_checked():
    with pytest.raises(UserError, match="version"):
        InfluxServer(options={"version": "2.7"})
    with pytest.raises(UserError, match="unknown option"):
        InfluxServer(options={"flx": True})
    with pytest.raises(UserError, match="flux"):
        InfluxServer(options={"flux": "maybe"})
    assert InfluxServer(options={"flux": "true"}).flux is True
    with pytest.raises(UserError, match="option api"):
        InfluxTarget("http://127.0.0.1:1", {"api": "v3"})


def test_flux_option(tmp_path):
    """flux: true serves Flux on /api/v2/query (1.8 only)."""
    import urllib.request

    s = InfluxServer(name=f"test-influx-flux-{os.getpid()}", instance_dir=tmp_path / "flux",
                     options={"flux": "true"})   # as the command line gives it
    s.start()
    try:
        assert "flux-enabled = true" in s.config_file.read_text()
        req = urllib.request.Request(s.url + "/api/v2/query", data=b'buckets()', method="POST",
                                     headers={"Content-Type": "application/vnd.flux", "Accept": "application/csv"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 200
    finally:
        s.stop()


@pytest.mark.skipif(os.geteuid() != 0, reason="installing Debian's influxdb needs root (apt-get)")
def test_apt_version(tmp_path, datafiles):
    """Debian's 1.6 (installed by the server when missing): loads and counts through v1;
    has no v2 API (404 is Fatal)."""
    s = InfluxServer(name=f"test-influx-apt-{os.getpid()}", instance_dir=tmp_path / "apt", options={"version": "apt"})
    s.start()
    df = datafiles["cpu-only"]
    tables = df.tables()

    async def go():
        t = await opened(s.url, database="apt")
        try:
            assert (await t.version()).startswith("1.6")
            await t.create(tables, "abort")
            await load(t, df.path.read_bytes())
            assert await t.count(tables) == df.values
            await t.compact()
            assert (await t.disk_bytes())["influx_shard_disk_bytes"] > 0
        finally:
            await t.close()
        t = await opened(s.url, database="apt", api="v2")
        try:
            with pytest.raises(Fatal, match="HTTP 404"):
                await t.write(Batch(memoryview(b"m v=1 1451606400000000000\n"), 1, 1))
        finally:
            await t.close()

    try:
        assert s.version().startswith("1.6")
        run(go())
    finally:
        s.stop()


def test_two_servers_behind_one_target_hold_a_share_of_the_series_each(server, datafiles, tmp_path):
    """`--server A,B -O spread=series`: each record goes to the server its series hashes to;
    the load verifies the sum, and each server holds its own series, none of the other's."""
    df = datafiles["devops"]
    with local_server("influx") as other:
        urls = [server.url, other.url]
        out = tmp_path / "s.json"
        run_cli("load", str(df.path), "-t", "influx", "-s", ",".join(urls), "-O", "spread=series",
                "--if-exists", "drop", "-q", "--no-compact", "--json", str(out))
        s = json.loads(out.read_text())

        async def per_server():
            counts, hosts = [], []
            for u in urls:
                t = InfluxTarget(u)
                await t.open()
                try:
                    counts.append(await t.count(df.tables()))
                    res = await t.influxql("SHOW SERIES", t.db)
                    hosts.append({row[0] for x in res[0].get("series", []) for row in x["values"]})
                finally:
                    await t.close()
            return counts, hosts
        counts, keys = asyncio.run(per_server())
    assert s["verify"]["ok"] and sum(counts) == s["verify"]["counted"] == df.values
    assert all(c > 0 for c in counts) and not keys[0] & keys[1]
