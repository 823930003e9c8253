"""The load phase end to end without a database server: the null targets, the
null HTTP sink, DuckDB in-process, and a fault-injecting server for push-back,
resets, stalls and fatal answers. Command-line errors are one line each. (The local
server's restarts and death: tests/databases/test_server_restart.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket

import numpy as np
import pytest

from tsbench.data.datafile import open_datafile
from tsbench.load.connect import connect
from tsbench.load.run import LoadError, LoadOptions, load

from conftest import columns, run_cli
from faultserver import FaultServer

END = "2016-01-01T02:00:00Z"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("load")
    out = {}
    specs = {"devops.lp": ["--scale", "10"], "devops.csv": ["--scale", "10", "--format", "csv"],
             "cpu.csv": ["-u", "cpu-only", "--scale", "10", "--format", "csv"],
             "iot.csv": ["-u", "iot", "--scale", "10", "--format", "csv"]}
    for name, args in specs.items():
        run_cli("generate", "-q", "--end", END, "--seed", "5", *args, "-o", str(d / name))
        out[name] = open_datafile(d / name)
    return out


def _load(target, df, server="local", options=None, **kw):
    async def go():
        async with connect(target, server, options) as c:
            return await load(c.target, df, LoadOptions(progress=False, **kw), c.datadir)
    return asyncio.run(go())


def test_null_target_counts_rows_values_bytes(data):
    df = data["devops.lp"]
    r = _load("null", df, batch_size=1000)
    assert (r.rows, r.values, r.bytes, r.batches) == (64_800, 727_200, df.bytes, 65)
    assert r.verified and r.counted == 64_800
    assert r.timeline and r.timeline[-1]["rows"] == 64_800


def test_null_target_values_with_nulls(data):
    df = data["iot.csv"]
    r = _load("null", df, batch_size=333)
    assert (r.rows, r.values) == (df.rows, df.values) and df.values < df.rows * 10


@pytest.mark.parametrize("step", ["create", "count", "compact"])
def test_a_server_refusing_a_step_around_the_load_fails_it_as_a_load_error(data, monkeypatch, step):
    """Fatal (the server's words) from create, count or compact is the load's failure
    (LoadError, one line, the partial result kept), never an internal error."""
    from tsbench.core.errors import Fatal
    from tsbench.databases.null.target import NullTarget

    async def refuse(*args, **kw):
        raise Fatal(f"db: {step} refused: no such table")
    monkeypatch.setattr(NullTarget, step, refuse)
    with pytest.raises(LoadError, match=f"^db: {step} refused: no such table$") as ei:
        _load("null", data["devops.lp"], batch_size=5000)
    assert ei.value.result.status == "failed"


def test_null_http_sink_local(data):
    df = data["devops.lp"]
    r = _load("null-http", df, workers=3, batch_size=2000)
    assert r.verified and r.counted == df.rows and r.backoffs == 0


def _sink_state(url: str) -> dict:
    import urllib.request

    with urllib.request.urlopen(url + "/count") as r:
        return json.loads(r.read())


@pytest.mark.parametrize("gzip", [False, True])
def test_null_http_sink_counts_gzip_bodies(data, tmp_path, gzip):
    """-O gzip=true: every request reaches the sink gzip'd (smaller on the wire), and the
    lines it inflates count to the file's rows; without it, none is gzip'd."""
    from tsbench.databases.null.server import NullHttpServer

    df = data["devops.lp"]
    with NullHttpServer(name=f"test-gzip-sink-{os.getpid()}", instance_dir=tmp_path / "sink") as srv:
        r = _load("null-http", df, server=srv.url, options={"gzip": gzip}, workers=2, batch_size=5000)
        s = _sink_state(srv.url)
    assert r.verified and r.counted == df.rows == s["rows"] and s["bytes"] == df.bytes
    assert s["gzip_requests"] == (s["requests"] if gzip else 0) and s["requests"] == r.batches
    assert (s["wire_bytes"] < df.bytes / 3) if gzip else (s["wire_bytes"] == df.bytes)


@pytest.mark.parametrize("level", [1, 6, 9])
def test_a_gzip_body_is_the_gzip_of_the_batch_at_the_chosen_level(level):
    import gzip
    import zlib

    from tsbench.databases.shared.http import GZIP_LEVEL, Gzip, GzipOption

    data = memoryview(b"".join(b"cpu,hostname=host_%d usage_user=%.14f,usage_system=%d 14516064%05d0000000000\n"
                               % (i % 100, i * 37.1 % 100, i * 7 % 101, i) for i in range(2000)))
    g = Gzip(GzipOption(gzip=True, gzip_level=level), {"Content-Type": "text/plain"})
    body = asyncio.run(g.body(data))
    assert body[:4] == b"\x1f\x8b\x08\x00" and body[4:8] == bytes(4)      # one gzip member, no name, mtime 0
    assert gzip.decompress(body) == data == zlib.decompress(body, wbits=31)
    assert len(body) < len(data) / 3
    group = (level - 1) // 3                         # ISA-L's level: 1 for 1-3, 2 for 4-6, 3 for 7-9
    for other in range(1, 10):
        b = asyncio.run(Gzip(GzipOption(gzip=True, gzip_level=other)).body(data))
        assert (b == body) == ((other - 1) // 3 == group), other            # the level tells
    assert g.headers == {"Content-Type": "text/plain", "Content-Encoding": "gzip"}
    plain = Gzip(GzipOption())
    assert asyncio.run(plain.body(data)) is data and "Content-Encoding" not in plain.headers
    assert GzipOption(gzip=True).gzip_level == GZIP_LEVEL == 6


def test_gzip_options_refused_in_one_line(data):
    f = str(data["devops.lp"].path)
    _one_line_error(run_cli("load", f, "-t", "null-http", "-O", "gzip=true", "-O", "gzip_level=10", check=False),
                    r"option gzip_level: Input should be less than or equal to 9")
    _one_line_error(run_cli("load", f, "-t", "null-http", "-O", "gzip=true", "-O", "gzip_level=0", check=False),
                    r"option gzip_level: Input should be greater than or equal to 1")
    _one_line_error(run_cli("load", f, "-t", "null-http", "-O", "gzip_level=3", check=False),
                    r"gzip_level needs gzip=true")
    _one_line_error(run_cli("load", f, "-t", "null", "-O", "gzip=true", check=False),
                    r"^tsbench: error: target null: option gzip: null cannot gzip its request bodies")
    _one_line_error(run_cli("load", f, "-t", "duckdb", "-O", "gzip=true", "-O", "gzip_level=1", check=False),
                    r"target duckdb: option gzip: duckdb cannot gzip")


def test_push_back_is_retried_with_backoff(data):
    df = data["devops.lp"]
    with FaultServer() as fs:
        fs.faults = ["503"] * 6 + ["reset"] * 3
        r = _load("null-http", df, server=fs.url, workers=4, batch_size=5000)
        assert r.verified and fs.rows == df.rows
        assert r.backoffs == 9 and r.backoff_seconds > 0
        assert fs.refused == 9


def test_stall_times_out_and_recovers(data):
    df = data["devops.lp"]
    with FaultServer() as fs:
        # a stall far past the 2 s timeout; a normal write on a busy box stays well under it
        fs.faults, fs.stall_seconds = ["stall"], 6.0
        r = _load("null-http", df, server=fs.url, options={"timeout": 2.0}, workers=2, batch_size=20_000)
        assert r.verified and r.backoffs >= 1


def test_fatal_answer_stops_the_load_with_the_servers_words(data):
    df = data["devops.lp"]
    with FaultServer() as fs:
        fs.always = "fatal"
        with pytest.raises(LoadError, match=r"HTTP 400: unable to parse .*missing field value") as ei:
            _load("null-http", df, server=fs.url)
        assert ei.value.result.status == "failed"


def test_endless_push_back_gives_up(data):
    df = data["devops.lp"]
    with FaultServer() as fs:
        fs.always = "503"
        with pytest.raises(LoadError, match="gave up after .* push-back.*overloaded"):
            _load("null-http", df, server=fs.url, give_up_after=0.5, backoff_cap=0.1)


def test_count_shortfall_fails_naming_both_numbers(data):
    df = data["devops.lp"]
    with FaultServer() as fs:
        async def go():
            async with connect("null-http", fs.url) as c:
                orig = c.target.count

                async def short(tables):
                    return await orig(tables) - 1
                c.target.count = short
                return await load(c.target, df, LoadOptions(progress=False))
        with pytest.raises(LoadError, match="holds 64,799 rows, the data file has 64,800"):
            asyncio.run(go())


def test_several_processes(data):
    df = data["devops.lp"]
    r = _load("null-http", df, workers=2, batch_size=1000, processes=2)
    assert r.verified and (r.rows, r.values) == (df.rows, df.values)


def _duck_rows(path, sql):
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("name", ["devops.csv", "cpu.csv", "iot.csv"])
def test_duckdb_load_and_read_back(data, tmp_path, name):
    df = data[name]
    url = f"duckdb:{tmp_path / 'db.duckdb'}"
    r = _load("duckdb", df, server=url, workers=3, batch_size=700)
    assert r.verified and r.counted == df.rows and r.disk["duckdb_database_size"] > 0
    ds = df.dataset
    cols, sim = columns(ds)
    s = 0                                              # first series: cpu (devops) or readings (iot)
    se = ds.schema.series[s]
    fields = [f.name for f in se.fields if not f.hidden]
    pick = np.flatnonzero(cols["series"] == s)[[0, 17, 123, -1]]
    for i in pick:
        ent, t = int(cols["entity"][i]), int(cols["time"][i])
        tagkey = ds.schema.series_tags(s)[0].key
        tagval = sim.tag_values(ent, s)[0]
        got = _duck_rows(tmp_path / "db.duckdb",
                         f'SELECT {", ".join(chr(34) + f + chr(34) for f in fields)} FROM "{se.name}" '
                         f"WHERE \"{tagkey}\" = '{tagval}' AND epoch_ns(time) = {t}")
        assert len(got) >= 1
        want = cols["values"][i][: len(fields)]
        assert any(all((w != w and g is None) or g == w for g, w in zip(row, want)) for row in got)
    total = sum(_duck_rows(tmp_path / "db.duckdb", f'SELECT count(*) FROM "{t.name}"')[0][0] for t in df.tables())
    assert total == df.rows


# ---- the command line --------------------------------------------------------------------------

def test_cli_load_prints_summary_and_json(data, tmp_path):
    df = data["devops.lp"]
    p = run_cli("load", str(df.path), "-t", "null-http", "-w", "2", "-b", "5000", "--json", str(tmp_path / "s.json"))
    err = p.stderr.decode()
    assert "loaded 64,800 rows, 727,200 values" in err and "verified: 64,800 rows" in err
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["status"] == "ok" and s["verify"]["ok"] and s["rows_per_s"] > 0 and s["timeline"]


def test_cli_load_generate_first(tmp_path):
    out = tmp_path / "g.csv"
    run_cli("load", str(out), "-t", "duckdb", "-q", "--json", str(tmp_path / "s.json"),
                "--generate", "use-case=cpu-only,scale=2,end=2016-01-01T00:10:00Z,seed=3")
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["rows"] == 2 * 60 and s["verify"]["ok"] and out.exists()


def _one_line_error(p, pattern):
    import re

    err = p.stderr.decode().strip()
    assert p.returncode == 2, err
    assert len(err.splitlines()) == 1, err
    assert re.search(pattern, err), err


def test_cli_errors_are_one_line(data, tmp_path):
    f = str(data["devops.lp"].path)
    _one_line_error(run_cli("load", f, "-t", "nosuchdb", check=False), r"unknown target 'nosuchdb' \(one of .*influx")
    _one_line_error(run_cli("load", f, "-t", "null", "-b", "0", check=False), r"'--batch-size'.*0 is not in the range 1<=x<=1000000")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]            # bound, not listening: refused
        _one_line_error(run_cli("load", f, "-t", "null-http", "-s", f"http://127.0.0.1:{port}", check=False),
                        rf"cannot reach http://127.0.0.1:{port}")
        _one_line_error(run_cli("load", f, "-t", "null-http", "--port", f"http={port}", check=False),
                        rf"port {port} on 127.0.0.1 is in use")
    _one_line_error(run_cli("load", f, "-t", "duckdb", check=False), r"loads csv data; .* is influx")
    _one_line_error(run_cli("load", str(tmp_path / "none.lp"), "-t", "null", check=False), r"no such data file")
    _one_line_error(run_cli("load", f, "-t", "null-http", "-O", "nope=1", check=False), r"option nope")


def test_cli_servers_start_list_stop(tmp_path):
    env_home = {"TSBENCH_HOME": str(tmp_path)}
    import subprocess
    import sys

    def cli(*a):
        return subprocess.run([sys.executable, "-m", "tsbench", *a], capture_output=True,
                              env={**os.environ, **env_home}, check=True).stdout.decode()
    out = cli("servers", "start", "null-http", "--name", "sink1")
    pid = int(out.split("pid ")[1].split()[0])
    assert "127.0.0.1" in out and os.path.exists(f"/proc/{pid}")
    assert "sink1\tnull-http" in cli("servers", "list")
    assert "stopped" in cli("servers", "stop", "sink1")
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
    assert "no servers running" in cli("servers", "list")


def test_every_target_declares_its_capabilities():
    from tsbench import databases

    caps = {n: databases.target_class(n).capabilities() for n in databases.names()}
    assert {"influx", "postgres", "victoriametrics", "duckdb", "null", "null-http"} <= set(caps)
    for n, c in caps.items():
        assert c["name"] == n and c["format"] in ("influx", "csv") and c["count_unit"] in ("rows", "values")


def test_third_party_target_through_entry_point(monkeypatch):
    from importlib.metadata import EntryPoint

    from tsbench import databases

    ep = EntryPoint("mydb", "tsbench.databases.null.target:NullTarget", databases.TARGET_GROUP)
    monkeypatch.setattr(databases, "entry_points", lambda group: [ep] if group == databases.TARGET_GROUP else [])
    assert "mydb" in databases.names() and databases.target_class("mydb").name == "null"


def test_a_target_that_needs_a_url_says_so_in_one_check():
    """needs_url is class data; the base class alone refuses a missing URL, with the target's example."""
    from tsbench import databases
    from tsbench.core.errors import UserError

    need = [n for n in databases.names() if databases.target_class(n).needs_url]
    assert set(need) == set(databases.names()) - {"null"}
    for n in need:
        cls = databases.target_class(n)
        with pytest.raises(UserError, match=f"^target {n}: needs a server: --server local or --server "
                                            f"{re.escape(cls.url_example)}$"):
            cls(None)
    databases.target_class("null")(None)
