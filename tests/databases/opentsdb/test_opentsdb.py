"""OpenTSDB target (phases 2-5): the C template's /api/put points (no server:
parsed back as JSON); against one real OpenTSDB 2.4.1 on HBase started by
tsbench for the module: a small devops CSV loaded, counted and read back, the
window's ends, a refused point as one line naming OpenTSDB's words, an
unreachable URL as one line, and SIGINT to a load leaving no process of the
server (HBase and OpenTSDB share its one JVM). The contract suite
(tests/contract/test_contract.py) runs the queries. Run with `pytest -m opentsdb`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tsbench.core.errors import UserError
from tsbench.core.model import Column, Table
from tsbench.data import native
from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.databases.opentsdb.points import point_ops
from tsbench.databases.opentsdb.target import OpenTsdbTarget
from tsbench.execute.timer import timed_query
from tsbench.experiments import session

from conftest import load_into, local_server, run_cli

DATASET = {"use_case": "devops", "scale": 3, "end": "2016-01-01T00:10:00Z", "seed": 7}
CPU = Table("cpu", ("hostname", "region"), (Column("usage_user", "float"), Column("n", "int")))


def _points(table: Table, data: bytes) -> list[dict]:
    out, ends = native.render(native.Template(point_ops(table)), data, 0, len(data))
    body = bytes(out)
    return json.loads(b"[" + body[:-1] + b"]")


def test_points_one_per_value_nulls_left_out():
    data = b"2016-01-01T00:00:10.5Z,host_0,,1.5,\n2016-01-02T00:00:00Z,,eu,,7\n2016-01-02T00:00:00Z,h,r,,\n"
    assert _points(CPU, data) == [
        {"metric": "cpu.usage_user", "timestamp": 1451606410500, "value": 1.5, "tags": {"hostname": "host_0"}},
        {"metric": "cpu.n", "timestamp": 1451692800000, "value": 7, "tags": {"region": "eu"}}]


def test_names_opentsdb_cannot_hold_are_refused_before_loading():
    with pytest.raises(UserError, match="not a valid OpenTSDB name"):
        point_ops(Table("cpu load", ("host",), (Column("v", "float"),)))
    with pytest.raises(UserError, match="numbers only"):
        point_ops(Table("cpu", ("host",), (Column("state", "string"),)))
    with pytest.raises(UserError, match="no tags"):
        point_ops(Table("cpu", (), (Column("v", "float"),)))


def test_url_and_options_are_checked():
    with pytest.raises(UserError, match="needs a server"):
        OpenTsdbTarget(None)
    with pytest.raises(UserError, match="option gzip"):
        OpenTsdbTarget("http://x:1", {"gzip": 11})


# ---- one server for the module -------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    with local_server("opentsdb") as srv:
        yield srv


@pytest.fixture(scope="module")
def devops(tmp_path_factory):
    d = tmp_path_factory.mktemp("opentsdb")
    generate(resolve(DatasetSpec(**DATASET)), "csv", str(d / "devops.csv"), show_progress=False)
    return open_datafile(d / "devops.csv")


@pytest.fixture(scope="module")
def loaded(server, devops):
    """The devops file loaded once for the module's read-only tests (a drop and reload is
    about 10 s: OpenTSDB's deletes are waited for)."""
    return load_into("opentsdb", server.url, devops)


def _with_target(url: str, fn):
    async def go():
        t = OpenTsdbTarget(url, {})
        await t.open()
        try:
            return await fn(t)
        finally:
            await t.close()
    return asyncio.run(go())


def test_load_counts_and_reads_back(server, devops, loaded):
    assert loaded.counted == devops.values
    with open(devops.path) as f:
        cols = next(x for x in f if x.startswith("cpu,")).rstrip("\n").split(",")
    tags = devops.tables().by_name()["cpu"].tags
    body = {"start": 1451606400000, "end": 1451606400001, "msResolution": True, "queries": [
        {"metric": "cpu.usage_user", "aggregator": "none",
         "filters": [{"type": "literal_or", "tagk": "hostname", "filter": cols[2], "groupBy": False}]}]}
    series = _with_target(server.url, lambda t: t._query_json(body))
    assert [s["dps"] for s in series] == [{"1451606400000": float(cols[2 + len(tags)])}]
    assert series[0]["tags"] == dict(zip(tags, cols[2:2 + len(tags)]))


def test_the_window_is_start_inclusive_end_exclusive(server, devops, loaded):
    """count() over [start, end): the points at the end's millisecond are not counted,
    those at the start's are (OpenTSDB's own end is inclusive)."""
    tables = devops.tables()
    ten_s = 10 * 10**9
    one_epoch = dataclasses.replace(tables, end_ns=tables.start_ns + ten_s)
    first = _with_target(server.url, lambda t: t.count(one_epoch))
    assert first * (tables.end_ns - tables.start_ns) // ten_s == devops.values


def test_a_window_cut_inside_its_buckets_equals_the_reference(server, devops, loaded):
    """Start and end inside a minute (OpenTSDB drops a bucket that starts before the
    query's start): the cut buckets come from their own requests, and every bucket and
    group equals the reference engine's, for max, mean (sums over counts) and count."""
    from tsbench.queries.base import MINUTE, QuerySpec
    from tsbench.queries.compare import compare, tolerance

    ref = session.reference(devops.dataset)
    t0 = devops.tables().start_ns
    for agg in ("max", "mean", "count"):
        p = {"shape": "aggregate", "measurement": "cpu", "agg": agg, "fields": ["usage_user", "usage_system"],
             "types": ["float", "float"], "tag": None, "tag_values": None, "start": t0 + 25 * 10**9,
             "end": t0 + 5 * MINUTE + 35 * 10**9, "bucket": MINUTE, "group_by": ["hostname"]}
        q = OpenTsdbTarget(server.url).dialect().aggregate(p)
        assert len(q.requests) == 3
        answer = _with_target(server.url, lambda t: timed_query(t, q))
        spec = QuerySpec(1, "cut-window", p)
        expected = ref.expected(spec)
        assert len(expected) == 6 * 3 and compare(p, expected, answer.rows, tolerance(spec, 0.0, ref)) is None, agg


def test_a_refused_point_fails_the_load_in_one_line(server, devops, loaded, tmp_path):
    """One hostname with a space (which OpenTSDB refuses) in an otherwise good file: the
    load fails, in one line, with the count refused and OpenTSDB's words. (Loaded with
    reuse: the good points rewrite themselves, the module's loaded data stays as it was.)"""
    import shutil

    bad = tmp_path / "bad.csv"
    bad.write_bytes(devops.path.read_bytes().replace(b",host_1,", b",host 1,", 1))
    shutil.copy(f"{devops.path}.manifest.json", f"{bad}.manifest.json")
    p = run_cli("load", str(bad), "--target", "opentsdb", "--server", server.url, "-q", "--if-exists", "reuse",
                check=False)
    err = p.stderr.decode().strip()
    assert p.returncode != 0 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert re.search(r"of \d+ points refused; the first: .*host 1", err), err


def test_unreachable_url_is_one_line(devops):
    p = run_cli("load", str(devops.path), "--target", "opentsdb", "--server", "http://127.0.0.1:9", "-q",
                check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and len(err.splitlines()) == 1 and "opentsdb" in err and "Traceback" not in err, err


def _ctrl_c_acts() -> None:
    """In the child, SIGINT as on a terminal: a pytest started in the background (`cmd &`)
    ignores it, and a process inherits that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_mid_load_leaves_no_process_of_the_server(tmp_path):
    """`load --server local` interrupted while it loads: exit 130, and the JVM that ran
    HBase and OpenTSDB (and any process under it) is gone."""
    run_dir = os.path.join(os.environ["TSBENCH_HOME"], "run")
    before = set(os.listdir(run_dir)) if os.path.isdir(run_dir) else set()
    p = subprocess.Popen([sys.executable, "-m", "tsbench", "load", "-t", "opentsdb", "-b", "200", "--generate",
                          "use_case=devops,scale=10,end=2016-01-01T06:00:00Z,seed=2", str(tmp_path / "d.csv")],
                         stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_acts)
    pids: set[int] = set()
    deadline = time.monotonic() + 240
    os.set_blocking(p.stderr.fileno(), False)
    lines: list[str] = []
    while p.poll() is None and time.monotonic() < deadline and not pids:
        line = p.stderr.readline()
        lines.append(line)
        if line.startswith("tsbench: started opentsdb"):           # the load (about 30 s) begins
            st = next(json.loads(open(os.path.join(run_dir, n)).read())
                      for n in set(os.listdir(run_dir)) - before)
            pids = {st["pid"]} | {c.pid for c in psutil.Process(st["pid"]).children(recursive=True)}
        time.sleep(0.05 if not line else 0)
    time.sleep(3)
    os.set_blocking(p.stderr.fileno(), True)
    assert pids, "".join(lines)
    p.send_signal(signal.SIGINT)
    code = p.wait(timeout=150)
    err = "".join(lines) + p.stderr.read()
    assert code == 130 and "interrupted (SIGINT)" in err and "Traceback" not in err, err
    assert not [x for x in pids if psutil.pid_exists(x) and psutil.Process(x).status() != psutil.STATUS_ZOMBIE], err
