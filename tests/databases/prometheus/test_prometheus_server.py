"""The local Prometheus server (tsbench/databases/prometheus/server.py): Debian's 2.42
unpacked into tsbench's home, one for the module. It answers /-/ready and its build info,
listens on 127.0.0.1 only with the remote-write receiver on and no scrape job, takes its
out-of-order window from the config file, reads a 2016 block from the TSDB under the
instance dir across a restart, and leaves no process when the command that started it
gets SIGINT; the target's count (count_over_time in slices) counts each sample of
its range once. Run with `pytest -m prometheus`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tsbench.core.model import Column, Table, Tables
from tsbench.databases.prometheus.server import PrometheusServer
from tsbench.databases.prometheus.target import PrometheusTarget
from tsbench.databases.shared.server import pid_alive

from conftest import local_server

T2016_S = 1451606400          # 2016-01-01T00:00:00Z
SAMPLES = 360                 # one series, 10 s apart: an hour of 2016


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _api(srv, path: str, **params) -> dict:
    status, body = _get(f"{srv.url}/api/v1/{path}?{urllib.parse.urlencode(params)}")
    assert status == 200, body
    return json.loads(body)["data"]


@pytest.fixture(scope="module")
def server():
    with local_server("prometheus") as srv:
        yield srv


def test_ready_and_its_build_info_is_debian_2_42(server):
    assert _get(server.url + "/-/ready")[0] == 200
    assert server.state.version == "2.42.0" and server.url.startswith("http://127.0.0.1:")
    info = _api(server, "status/buildinfo")
    assert info["version"] == "2.42.0+ds", info


def test_flags_and_config_are_tsbench_s(server):
    flags = _api(server, "status/flags")
    assert flags["web.listen-address"] == f"127.0.0.1:{server.state.ports['http']}"
    assert flags["web.enable-remote-write-receiver"] == "true"
    assert flags["storage.tsdb.path"] == str(server.datadir)
    assert flags["storage.tsdb.retention.time"] == "100y"
    config = _api(server, "status/config")["yaml"]
    assert "out_of_order_time_window: 100y" in config and "scrape_configs" not in config, config
    assert _api(server, "targets")["activeTargets"] == []


def test_the_remote_write_receiver_is_on(server):
    """A body that is no snappy block is refused as bad (400), not as an absent endpoint (404)."""
    req = urllib.request.Request(server.url + "/api/v1/write", b"not snappy",
                                 {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"})
    try:
        urllib.request.urlopen(req, timeout=30)
        status = 204
    except urllib.error.HTTPError as e:
        status = e.code
    assert status == 400


def _backfill(srv: PrometheusServer) -> None:
    """A 2016 block written into the stopped server's TSDB by Debian's promtool: host_0 every
    10 s from the start, host_1 each 1 ms earlier (its first sample before the start)."""
    lines = [f'cpu_usage_user{{hostname="host_0"}} {i} {T2016_S + 10 * i}' for i in range(SAMPLES)]
    lines += [f'cpu_usage_user{{hostname="host_1"}} {i} {T2016_S + 10 * i - 1}.999' for i in range(SAMPLES)]
    om = srv.dir / "backfill.om"
    om.write_text("# TYPE cpu_usage_user gauge\n" + "\n".join(lines) + "\n# EOF\n")
    promtool = srv.binary().with_name("promtool")
    subprocess.run([str(promtool), "tsdb", "create-blocks-from", "openmetrics", str(om), str(srv.datadir)],
                   check=True, capture_output=True, timeout=120)


def _count_2016(srv) -> list:
    res = _api(srv, "query", query='count_over_time(cpu_usage_user{hostname="host_0"}[2h])', time=T2016_S + 3600)
    return [(r["metric"], r["value"][1]) for r in res["result"]]


@pytest.fixture(scope="module")
def with_2016_block(server):
    server.stop()
    _backfill(server)
    server.start(fresh=False)
    return server


def test_a_2016_block_under_the_instance_dir_is_read_and_kept_across_a_restart(with_2016_block):
    server = with_2016_block
    assert _count_2016(server) == [({"hostname": "host_0"}, str(SAMPLES))]
    old_pid = server.state.pid
    server.restart()
    assert server.state.pid != old_pid and not pid_alive(old_pid)
    assert _count_2016(server) == [({"hostname": "host_0"}, str(SAMPLES))]


CPU = Table("cpu", ("hostname",), (Column("usage_user", "float"),))


def _target_count(url: str, end_s: int, **options) -> int:
    async def run() -> int:
        t = PrometheusTarget(url, options)
        await t.open()
        try:
            return await t.count(Tables((CPU,), T2016_S * 10**9, end_s * 10**9, SAMPLES, SAMPLES))
        finally:
            await t.close()
    return asyncio.run(run())


@pytest.mark.parametrize("max_samples", [20_000_000, 100, 7])
def test_the_target_counts_the_samples_of_its_range_once_in_any_slicing(with_2016_block, max_samples):
    """host_0's samples fall on the slices' edges (900 s apart for 4 slices) and host_1's 1 ms
    before them: each counted once, host_1's first (before the start) not at all (a window
    closed at both ends and d = b - a would count it and those 1 ms before each edge). The
    range's end is exclusive: ending it at host_0's last sample leaves that one out."""
    url = with_2016_block.url
    assert _target_count(url, T2016_S + 3600, max_samples_per_query=max_samples) == 2 * SAMPLES - 1
    assert _target_count(url, T2016_S + 10 * (SAMPLES - 1), max_samples_per_query=max_samples) == 2 * SAMPLES - 2


CHILD = """
import os, signal, sys, time
sys.path.insert(0, {tests!r})
from conftest import local_server
signal.signal(signal.SIGINT, signal.default_int_handler)   # as a command does: a shell's background job starts
                                                           # with SIGINT ignored, and Python then installs none
with local_server("prometheus") as srv:
    print(srv.state.pid, flush=True)
    time.sleep(300)
"""


def test_sigint_to_the_command_that_started_it_leaves_no_process():
    tests = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.Popen([sys.executable, "-c", CHILD.format(tests=tests)], stdout=subprocess.PIPE, text=True)
    pid = None
    try:
        pid = int(p.stdout.readline())
        assert pid_alive(pid)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)
        deadline = time.monotonic() + 10
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(pid)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if pid is not None and pid_alive(pid):     # the server of a child that hung: not left behind
            os.kill(pid, signal.SIGKILL)


def test_names_remote_write_sanitized_are_counted_and_summed_under_that_spelling(server):
    """A measurement and fields with bytes a metric name may not hold: written as the encoder
    spells them (m_x_a_b, m_x_c_d_e_), counted and summed by the target under that spelling."""
    from tsbench.core.model import Batch

    t0 = (T2016_S + 7200) * 10**9
    lines = b"".join(b"m.x,h=1 a|b=1.5,c+d(e)=2i %d\n" % (t0 + i * 10**9) for i in range(3))
    tables = Tables((Table("m.x", ("h",), (Column("a|b", "float"), Column("c+d(e)", "int"))),),
                    t0, t0 + 3 * 10**9, 3, 6)

    async def go():
        t = PrometheusTarget(server.url)
        await t.open()
        try:
            await t.write(Batch(memoryview(lines), 3, 6))
            return await t.count(tables), await t.stats(tables.tables[0], tables)
        finally:
            await t.close()
    count, stats = asyncio.run(go())
    assert count == 6
    assert _api(server, "series", **{"match[]": '{__name__=~"m_x_.*"}'})[0]["__name__"] in ("m_x_a_b", "m_x_c_d_e_")
    assert stats.series == 1 and [f.sum for f in stats.fields.values()] == [4.5, 6.0], stats


def test_an_integer_fields_sum_is_exact_beyond_2_53(server):
    """Two series whose sums (each under 2^53) add up to an odd number above 2^53, which no
    double holds: the stats' sum is exact (each series' sum_over_time added in ints), not the
    server's sum() across series (rounded to an even number)."""
    from tsbench.core.model import Batch

    t0 = (T2016_S + 9000) * 10**9
    big = 3 * 10**15
    values = {"a": (big + 1, big + 1), "b": (big + 2, big + 1)}
    lines = b"".join(b"big,h=%s v=%di %d\n" % (h.encode(), v, t0 + i * 10**9)
                     for h, vs in values.items() for i, v in enumerate(vs))
    tables = Tables((Table("big", ("h",), (Column("v", "int"),)),), t0, t0 + 2 * 10**9, 4, 4)

    async def go():
        t = PrometheusTarget(server.url)
        await t.open()
        try:
            await t.write(Batch(memoryview(lines), 4, 4))
            return await t.stats(tables.tables[0], tables)
        finally:
            await t.close()
    exact = sum(sum(vs) for vs in values.values())
    assert exact > 2**53 and exact % 2 == 1
    assert asyncio.run(go()).fields["v"].sum == exact


RACE_ANSWER = (b'{"status":"error","errorType":"execution","error":"cannot populate chunk 139888427068 '
               b'from block 00000000000000000000000000: not found"}')


@pytest.mark.parametrize("error,counted", [(RACE_ANSWER, 2), (b'{"status":"error","error":"bad data"}', None)])
def test_a_count_asks_again_when_its_query_meets_a_head_compaction_and_only_then(server, error, counted):
    """Prometheus 2.42 answers a query that a head compaction overtook with HTTP 422 "cannot
    populate chunk ... not found" (seen verifying DevOps-100 x 1 day, whose load makes the head
    compact). The first two count queries get that answer (injected at the client's GET): the
    count asks again and is right. Any other 422 fails the count with the server's words."""
    from tsbench.core.errors import Fatal
    from tsbench.core.model import Batch

    t0 = (T2016_S + 10800) * 10**9
    lines = b"".join(b"race,h=1 v=1 %d\n" % (t0 + i * 10**9) for i in range(2))
    tables = Tables((Table("race", ("h",), (Column("v", "float"),)),), t0, t0 + 2 * 10**9, 2, 2)
    injected = []

    async def go():
        t = PrometheusTarget(server.url)
        await t.open()
        real_get = t.http.get

        async def get(path, params=None):
            if path == "/api/v1/query" and len(injected) < 2:
                injected.append(path)
                return 422, error
            return await real_get(path, params)
        try:
            await t.write(Batch(memoryview(lines), 2, 2))
            t.http.get = get
            return await t.count(tables)
        finally:
            await t.close()
    if counted is None:
        with pytest.raises(Fatal, match="HTTP 422: .*bad data"):
            asyncio.run(go())
        assert len(injected) == 1
    else:
        assert asyncio.run(go()) == counted and len(injected) == 2
