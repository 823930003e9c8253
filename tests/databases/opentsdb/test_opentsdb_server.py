"""The local OpenTSDB server (tsbench/databases/opentsdb/server.py and its Launcher.java):
OpenTSDB 2.4.1 on HBase standalone in one JVM, one for the module: it answers
/api/version, auto-creates a metric on /api/put and reads it back, compacts through
its control port (after which the HBase root dir holds the data), keeps its data
across a restart, and stops with its JVM gone well within stop_timeout; its HBase never
splits a region; a port taken under it fails the start with one ServerError, quickly. Run with `pytest -m opentsdb`."""

from __future__ import annotations

import json
import pathlib
import socket
import time
import urllib.error
import urllib.request

import pytest

from tsbench.core.errors import ServerError
from tsbench.databases.opentsdb.server import OpenTsdbServer
from tsbench.databases.shared.server import allocated_bytes, pid_alive

from conftest import local_server

POINT = {"metric": "cpu.usage_user", "timestamp": 1451606400, "value": 42.5, "tags": {"hostname": "host_0"}}
QUERY = {"start": 1451606000, "end": 1451607000,
         "queries": [{"metric": "cpu.usage_user", "aggregator": "max", "tags": {"hostname": "host_0"}}]}
TABLES = ["tsdb", "tsdb-uid", "tsdb-tree", "tsdb-meta"]


def _http(url: str, body=None, method: str | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data, {"Content-Type": "application/json"}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=330) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.fixture(scope="module")
def server():
    with local_server("opentsdb") as srv:
        yield srv


def _control(srv) -> str:
    return f"http://127.0.0.1:{srv.state.ports['control']}"


def test_version_answers_from_the_2_4_1_build(server):
    status, body = _http(server.url + "/api/version")
    v = json.loads(body)
    assert status == 200 and server.state.version == "2.4.1"
    # the 2.4.1 jar on Maven Central was built with its version field unset: it names itself "BuildData"
    assert (v["version"], v["short_revision"]) == ("BuildData", "eb125a342"), v


def test_a_put_point_is_read_back_with_its_metric_created(server):
    status, body = _http(server.url + "/api/put?details&sync", [POINT])
    assert status == 200 and json.loads(body) == {"success": 1, "failed": 0, "errors": []}, body
    status, body = _http(server.url + "/api/query", QUERY)
    assert status == 200, body
    assert [(r["metric"], r["tags"], r["dps"]) for r in json.loads(body)] == \
        [("cpu.usage_user", {"hostname": "host_0"}, {"1451606400": 42.5})]


def test_compact_flushes_the_tables_into_the_hbase_root_dir(server):
    _http(server.url + "/api/put?details&sync", [POINT])
    root = pathlib.Path(server.state.extra["hbase_root"])
    assert root == server.datadir / "hbase"
    status, body = _http(_control(server) + "/compact", {})
    assert status == 200, body
    answer = json.loads(body)
    assert answer["tables"] == TABLES and 0 <= answer["seconds"] < 300
    hfiles = [p for p in (root / "data" / "default" / "tsdb").glob("*/t/*") if p.is_file()]
    assert len(hfiles) == 1 and allocated_bytes(root) > 0, hfiles               # one file: the compacted one
    assert not [p for p in (root / "archive").rglob("*") if p.is_file()]     # the files compacted away are gone
    assert _http(_control(server) + "/compact")[0] == 405                    # POST only


def test_a_restart_keeps_the_data(server):
    server.restart()
    status, body = _http(server.url + "/api/query", QUERY)
    assert status == 200 and json.loads(body)[0]["dps"] == {"1451606400": 42.5}, body


def test_stop_ends_the_jvm_well_within_stop_timeout(server):
    """Last on the module's server: the fixture's own stop then finds nothing to do."""
    pid = server.state.pid
    t0 = time.monotonic()
    server.stop()
    took = time.monotonic() - t0
    assert not pid_alive(pid) and took < server.stop_timeout / 2, took
    assert "launcher: stopped" in server.logfile.read_text()          # a clean stop, not the SIGKILL


def test_a_port_taken_under_it_fails_the_start_with_one_server_error(tmp_path, monkeypatch):
    """ZooKeeper's port is taken between tsbench's pick and the JVM's bind: the launcher ends
    with the reason, and start() raises at once rather than after ready_timeout."""
    import psutil

    inst = tmp_path / "inst"
    srv = OpenTsdbServer(name=f"test-opentsdb-port-{tmp_path.name}", instance_dir=inst)
    taker, taken = socket.socket(), []
    real = srv.prepare

    def prepare(datadir, ports):
        taker.bind(("127.0.0.1", ports["zk"]))
        taker.listen()
        taken.append(ports["zk"])
        real(datadir, ports)
    monkeypatch.setattr(srv, "prepare", prepare)
    t0 = time.monotonic()
    try:
        with pytest.raises(ServerError) as e:
            srv.start()
    finally:
        taker.close()
        srv.stop()
    msg = str(e.value)
    assert time.monotonic() - t0 < 60
    assert msg.startswith("opentsdb exited with code 1 while starting:"), msg
    assert f"launcher: HBase did not start: ZooKeeper could not listen on 127.0.0.1:{taken[0]} (in use?)" in msg, msg
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(inst) in " ".join(p.info["cmdline"] or [])]


def test_hbase_keeps_each_table_in_one_region(tmp_path):
    """Splits off: OpenTSDB 2.4's asynchbase lost acknowledged points while the tsdb region
    split under a day's load (README, the ten databases side by side)."""
    from tsbench.databases.opentsdb.server import hbase_settings

    conf = hbase_settings(tmp_path, {"zk": 1, "master": 2, "regionserver": 3})
    assert conf["hbase.regionserver.region.split.policy"] == \
        "org.apache.hadoop.hbase.regionserver.DisabledRegionSplitPolicy"
