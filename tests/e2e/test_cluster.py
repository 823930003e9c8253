"""--cluster on Dask (LocalCluster, 2 workers): the merged load count equals one
client's; each worker's generated share has the bytes `generate --group i --groups 2`
writes; the merged timeline ends on the totals and moves each slot onto the driver's
clock; a worker killed mid-load fails the cell with its address within seconds, one that
dies while its facts are gathered is one line naming the cause; Ctrl-C at a terminal (the
whole process group, workers included) ends a load in one line, 130, no traceback; Ctrl-C
leaves no task running on a cluster tsbench joined; a worker with another build is
refused; stream and execute run from two slots (each stream slot its group, the execute
slots at once, every answer judged); experiments record clients and worker facts; bad
addresses, options that run from one client and in-process targets are one line each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tsbench.cluster.facts import check_same_build
from tsbench.cluster.merge import merged_timeline, on_driver_clock, shift_of
from tsbench.core.errors import UserError

from conftest import run_cli
from faultserver import FaultServer

pytestmark = pytest.mark.cluster
GEN = "use_case=devops,scale=10,end=2016-01-01T01:00:00Z,seed=5"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("cluster")
    run_cli("generate", "-q", "--scale", "10", "--end", "2016-01-01T01:00:00Z", "--seed", "5", "-o", str(d / "d.lp"))
    return d / "d.lp"


def _summary(tmp_path, *args: str) -> dict:
    out = tmp_path / f"s{len(list(tmp_path.iterdir()))}.json"
    run_cli("load", *args, "-q", "--json", str(out))
    return json.loads(out.read_text())


def test_two_slots_load_what_one_client_loads_and_the_timeline_ends_on_the_totals(data, tmp_path):
    one = _summary(tmp_path, str(data), "-t", "null-http", "-b", "500")
    two = _summary(tmp_path, str(data), "-t", "null-http", "-b", "500", "--cluster", "local:2")
    assert two["verify"]["ok"] and two["verify"]["counted"] == one["verify"]["counted"] == one["rows"] == two["rows"]
    assert two["clients"] == 2 and len(two["client_hosts"]) == 1 and one["clients"] == 1
    slots = two["client_slots"]
    assert sum(s["rows"] for s in slots) == two["rows"] and all(s["rows"] > 0 for s in slots)
    assert len({s["worker"] for s in slots}) == 2
    assert all(0 <= s["start_to_first_batch_s"] < 5 for s in slots)
    last = two["timeline"][-1]
    assert (last["rows"], last["values"], last["bytes"]) == (two["rows"], two["values"], two["bytes"])
    ts = [r["t"] for r in two["timeline"]]
    assert ts == sorted(ts)


def test_each_worker_generates_the_bytes_of_its_group(data, tmp_path):
    s = _summary(tmp_path, "-t", "null", "--generate", GEN, "--cluster", "local:2")
    run_cli("generate", "-q", "--scale", "10", "--end", "2016-01-01T01:00:00Z", "--seed", "5", "--groups", "2",
            "-o", str(tmp_path / "g.lp"))
    want = [json.loads((tmp_path / f"g.g{i}.lp.manifest.json").read_text())["sha256"] for i in (0, 1)]
    assert [sh["sha256"] for sh in s["shares"]] == want
    assert s["verify"]["ok"] and s["rows"] == json.loads(open(f"{data}.manifest.json").read())["rows"]
    assert not any(os.path.exists(sh["path"]) for sh in s["shares"])          # removed after the load


def test_merged_timeline_moves_each_slot_onto_the_drivers_clock():
    # slot 0's clock runs 2 s behind the scheduler's, the driver's 0.5 s behind: +1.5 s
    shift = shift_of(2.0, 0.5)
    a = on_driver_clock([[98.5, 0, 0, 0, 0, 0], [99.2, 10, 20, 100, 1, 0], [100.1, 30, 60, 300, 3, 1]], shift)
    b = [[100.0, 0, 0, 0, 0, 0], [100.7, 5, 10, 50, 1, 0], [101.9, 7, 14, 70, 2, 0]]
    tl = merged_timeline([a, b], 100.0)
    assert [(r["t"], r["rows"]) for r in tl] == [(1.0, 15), (1.9, 37)]
    assert tl[-1]["backoffs"] == 1 and tl[0]["rows_per_s"] == 15.0


def test_a_worker_with_another_tsbench_is_refused_in_one_line():
    me = {"tsbench": "0.1.0", "build": "aaaa", "hostname": "here"}
    check_same_build(me, {"tcp://a:1": dict(me)})
    with pytest.raises(UserError, match=r"worker tcp://b:2 \(there\) runs tsbench 0.1.0 build bbbb"):
        check_same_build(me, {"tcp://a:1": dict(me), "tcp://b:2": {**me, "build": "bbbb", "hostname": "there"}})


@pytest.mark.parametrize("address,words", [("local:0", "at least 1 worker"), ("lokal:2", "neither local:N"),
                                           ("tcp://127.0.0.1:9", "no Dask scheduler answered")])
def test_a_bad_cluster_address_is_one_line(data, address, words):
    p = run_cli("load", str(data), "-t", "null", "-q", "--cluster", address, check=False)
    err = p.stderr.decode().strip()
    assert p.returncode != 0 and len(err.splitlines()) == 1 and words in err and "Traceback" not in err, err


def _ctrl_c_acts() -> None:
    """In the child, SIGINT as on a terminal (a background pytest ignores it; children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _slow_load(fs: FaultServer, data, cluster: str) -> subprocess.Popen:
    fs.service_seconds = 0.05                        # 20 writes/s: about 16 s of load at 100 rows a batch
    return subprocess.Popen([sys.executable, "-m", "tsbench", "load", str(data), "-t", "null-http", "-s", fs.url,
                             "-b", "100", "-w", "2", "-q", "--cluster", cluster],
                            stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_acts)


def _until(cond, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


def test_a_worker_killed_mid_load_fails_the_cell_with_its_address_within_seconds(data):
    with FaultServer() as fs:
        p = _slow_load(fs, data, "local:2")
        assert _until(lambda: fs.writes >= 10, 60), p.stderr.read() if p.poll() is not None else "no writes"
        workers = [c for c in psutil.Process(p.pid).children() if "spawn_main" in " ".join(c.cmdline())]
        assert len(workers) == 2
        workers[0].kill()
        killed = time.monotonic()
        code = p.wait(timeout=60)
        took = time.monotonic() - killed
        err = p.stderr.read().strip()
    assert code == 2 and took < 15, (code, took, err)
    assert len(err.splitlines()) == 1 and "client slot" in err and "tcp://127.0.0.1:" in err, err
    assert fs.writes < 300                               # it stopped, not ran to the end


def test_ctrl_c_at_a_terminal_ends_a_cluster_load_in_one_line_from_every_process(data):
    """Ctrl-C at a terminal reaches the whole process group, the worker processes of local:2
    included: the load ends as interrupted (130), one line, no traceback from any process,
    no worker left behind."""
    with FaultServer() as fs:
        fs.service_seconds = 0.05
        p = subprocess.Popen([sys.executable, "-m", "tsbench", "load", str(data), "-t", "null-http", "-s", fs.url,
                              "-b", "100", "-w", "2", "-q", "--cluster", "local:2"], stderr=subprocess.PIPE,
                             text=True, preexec_fn=_ctrl_c_acts, start_new_session=True)     # a terminal's group
        assert _until(lambda: fs.writes >= 10, 60), p.stderr.read() if p.poll() is not None else "no writes"
        workers = [c for c in psutil.Process(p.pid).children(recursive=True)]
        os.killpg(p.pid, signal.SIGINT)
        code = p.wait(timeout=60)
        err = p.stderr.read()
    assert (code, err.strip()) == (130, "tsbench: interrupted (SIGINT)"), err      # (click's newline after ^C)
    assert _until(lambda: not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers), 10)


def test_a_ctrl_c_while_the_cluster_closes_is_not_lost_and_the_close_finishes(monkeypatch):
    """The main task cancelled (asyncio's way of a Ctrl-C) while the client closes: the
    client and the cluster still close, then the interruption goes on out."""
    import asyncio

    import distributed

    from tsbench.cluster.address import open_cluster
    from tsbench.core.clusteraddress import parse

    real, seen = distributed.Client._close, []

    async def interrupted_close(self, *args, **kwargs):
        asyncio.get_running_loop().call_soon(seen[0].cancel)
        return await real(self, *args, **kwargs)

    async def go():
        seen.append(asyncio.current_task())
        async with open_cluster(parse("local:1")) as client:
            seen.append(client)
            monkeypatch.setattr(distributed.Client, "_close", interrupted_close)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(go())
    assert seen[1].status == "closed"


@pytest.fixture(scope="module")
def joined():
    """A Dask cluster tsbench did not start (two worker processes here), and a client of it."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield cluster.scheduler_address, client


def _other_build() -> None:
    import tsbench.cluster.facts as f
    from tsbench.cluster.clientfacts import client_facts

    f.client_facts = lambda: {**client_facts(), "build": "0000000000000000"}


def _same_build() -> None:
    import tsbench.cluster.facts as f
    from tsbench.cluster.clientfacts import client_facts

    f.client_facts = client_facts


def test_a_worker_with_another_build_is_refused_before_anything_runs(data, joined):
    address, client = joined
    worker = sorted(client.scheduler_info()["workers"])[1]
    client.run(_other_build, workers=[worker])
    try:
        p = run_cli("load", str(data), "-t", "null", "-q", "--cluster", address, check=False)
    finally:
        client.run(_same_build, workers=[worker])
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and len(err.splitlines()) == 1, err
    assert f"worker {worker}" in err and "build 0000000000000000" in err and "install the same tsbench" in err, err


def _dies_when_asked_its_facts() -> None:
    import tsbench.cluster.facts as f

    f.client_facts = lambda: os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_that_dies_before_the_slots_start_is_named_in_one_line(data, joined):
    """Killed while the driver gathers the workers' facts (the connection closes mid-answer):
    one line naming the cause, exit 2, not an internal error."""
    address, client = joined
    worker = sorted(client.scheduler_info()["workers"])[1]
    client.run(_dies_when_asked_its_facts, workers=[worker])
    try:
        p = run_cli("load", str(data), "-t", "null", "-q", "--cluster", address, check=False)
    finally:
        client.wait_for_workers(2, timeout=60)          # its nanny starts it again, unpatched
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"--cluster {address}: a cluster worker died or its connection broke while waiting for the " \
           "workers' facts" in err, err


def test_ctrl_c_leaves_no_task_running_on_a_cluster_tsbench_joined(data, joined):
    address, client = joined
    with FaultServer() as fs:
        p = _slow_load(fs, data, address)
        assert _until(lambda: fs.writes >= 10, 60), p.stderr.read() if p.poll() is not None else "no writes"
        p.send_signal(signal.SIGINT)
        code = p.wait(timeout=60)
        err = p.stderr.read()
        assert code == 130 and "interrupted" in err and "Traceback" not in err, err
        assert _until(lambda: not any(client.processing().values()), 5), client.processing()
        arrived = fs.arrived             # requests, not answers: one queued before the stop is answered after it
        time.sleep(1.0)
        assert fs.arrived == arrived and fs.writes < 300


def test_an_experiments_cluster_cells_record_their_clients_and_each_workers_facts(tmp_path):
    import pyarrow.parquet as pq

    (tmp_path / "e.yaml").write_text(
        "name: so\ndatasets:\n  d: {use_case: devops, scale: 4, end: '2016-01-01T00:10:00Z', seed: 1}\n"
        "targets:\n  sink: {target: null-http}\nphases: [generate, load]\n"
        "matrix:\n  load.cluster: ['local:1', 'local:2']\n")
    run_cli("run", str(tmp_path / "e.yaml"), "--results", str(tmp_path / "r"), "--no-report", "-q")
    run = next(d for d in (tmp_path / "r" / "so").iterdir() if d.name[:1].isdigit())     # beside data/
    cells = pq.read_table(run / "cells.parquet").to_pylist()
    assert [(c["cluster"], c["clients"], c["status"]) for c in cells] == [("local:1", 1, "ok"), ("local:2", 2, "ok")]
    facts = json.loads((run / "manifest.json").read_text())["cluster_clients"]["1"]
    assert [f["slot"] for f in facts] == [0, 1] and all(f["cores"] and f["build"] and f["host"] for f in facts)
    assert sum(f["rows"] for f in facts) == cells[1]["rows"] and cells[1]["client_hosts"] == facts[0]["host"]


@pytest.mark.parametrize("value,words", [("lokal:2", "neither local:N"), ("local:0", "at least 1 worker")])
def test_a_bad_load_cluster_in_an_experiment_is_one_line_naming_the_field(tmp_path, value, words):
    (tmp_path / "e.yaml").write_text(
        "name: so\ndatasets:\n  d: {use_case: devops, scale: 4, end: '2016-01-01T00:10:00Z'}\n"
        f"targets:\n  sink: {{target: null-http}}\nphases: [generate, load]\nload:\n  cluster: '{value}'\n")
    p = run_cli("run", str(tmp_path / "e.yaml"), "--dry-run", check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and len(err.splitlines()) == 1 and "load.cluster" in err and words in err, err


def test_two_slots_stream_each_its_group_and_their_seconds_merge(tmp_path):
    common = ["-t", "null-http", "--scale", "10", "--seed", "5", "-w", "2", "-b", "500", "--points-per-series", "60",
              "-q"]
    run_cli("stream", *common, "--json", str(tmp_path / "one.json"))
    run_cli("stream", *common, "--cluster", "local:2", "--json", str(tmp_path / "two.json"),
            "--seconds", str(tmp_path / "s.parquet"))
    one, two = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "two"))
    assert two["verify"]["ok"] and two["rows"] == one["rows"] == two["verify"]["counted"]
    assert two["clients"] == 2 and two["writers"] == 4
    run_cli("generate", "-q", "--scale", "10", "--seed", "5", "--end", "2016-01-01T00:10:00Z", "--groups", "2",
            "-o", str(tmp_path / "g.lp"))
    want = [json.loads((tmp_path / f"g.g{i}.lp.manifest.json").read_text())["rows"] for i in (0, 1)]
    assert [c["rows"] for c in two["client_slots"]] == want                       # group i of 2 each
    import pyarrow.parquet as pq

    from tsbench.stream.stats import merged

    rows = pq.read_table(tmp_path / "s.parquet").to_pylist()
    writes = [r for r in rows if r["op"] == "write"]
    assert {r["slot"] for r in writes} == {0, 1} and {r["writer"] for r in writes} == {0, 1, 2, 3}
    assert sum(r["rows"] for r in writes) == two["rows"]
    assert merged([r["latency_hdr"] for r in writes if r["latency_hdr"]]).get_total_count() == two["batches"]


def test_what_runs_from_one_client_is_refused_with_cluster_in_one_line():
    p = run_cli("stream", "-t", "null", "--scale", "2", "--duration", "1", "--freshness", "--report-url",
                "http://127.0.0.1:9/write", "--cluster", "local:2", check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and len(err.splitlines()) == 1, err
    assert "--freshness, --report-url run from one client; not with --cluster" in err, err


def test_two_slots_query_at_once_and_every_answer_is_judged_on_the_driver(tmp_path):
    run_cli("generate", "-q", "--scale", "20", "--end", "2016-01-01T02:00:00Z", "--seed", "3", "-o",
            str(tmp_path / "d.lp"))
    run_cli("queries", "generate", str(tmp_path / "d.lp"), "--types", "single-groupby-1-1-1,max-cpu-1,lastpoint",
            "--count", "3", "-o", str(tmp_path / "q.jsonl"))
    run_cli("execute", str(tmp_path / "q.jsonl"), "-t", "influx", "--load", str(tmp_path / "d.lp"), "-w", "2",
            "-n", "30", "--cluster", "local:2", "-q", "--json", str(tmp_path / "e.json"))
    s = json.loads((tmp_path / "e.json").read_text())
    every = next(r for r in s["stats"] if r["type"] == "all")
    assert s["clients"] == 2 and [c["queries"] for c in s["client_slots"]] == [15, 15]
    assert every["count"] == 30 and every["errors"] == 0 and every["executions_validated"] == 30
    assert every["validated"] == 9 and every["mismatches"] == 0


def test_a_target_of_one_process_has_no_slots_in_one_line(tmp_path):
    p = run_cli("stream", "-t", "duckdb", "--scale", "2", "--duration", "1", "--cluster", "local:2", check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and err.endswith("--cluster: target duckdb is reached from one process only"), err


def test_an_experiments_cluster_runs_each_phase_with_slots_unless_its_section_says(tmp_path):
    from tsbench.experiments.experiment import load_experiment

    (tmp_path / "e.yaml").write_text(
        "name: so\ncluster: 'local:2'\ndatasets:\n  d: {use_case: devops, scale: 4, end: '2016-01-01T00:10:00Z'}\n"
        "targets:\n  sink: {target: null-http}\nphases: [generate, load, queries, execute]\n"
        "execute: {cluster: 'local:1'}\n")
    c = load_experiment(tmp_path / "e.yaml").cells[0]
    assert (c.load.cluster, c.execute.cluster, c.stream.cluster) == ("local:2", "local:1", None)
