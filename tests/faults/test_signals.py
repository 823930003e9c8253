"""Signals to `run` (all phases): SIGINT and SIGTERM at start-up (while the server
starts), mid-load and mid-execute, once and twice. Each asserts the exit code
(130, 143), the recorded statuses (finished cells ok, the current one
interrupted), that no server process of the run survives (by pid), and that the
run folder is readable (cells table, manifest, the report or one line saying it
was not written). Run with `pytest -m faults`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import psutil
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.faults

EXP = """\
name: sig
datasets:
  d: {use_case: devops, scale: 10, end: "2016-01-01T04:00:00Z", seed: 5}
targets:
  pg: {target: postgres}
load: {workers: 1, batch_size: 1000}
queries: {types: [max-cpu-8, lastpoint, single-groupby-1-1-1], count: 40}
execute: {count: 3000}          # about a second of queries: the signal comes 0.3 s into them
matrix:
  load.batch_size: [20000, 1000]
"""
EXIT = {"SIGINT": 130, "SIGTERM": 143}


def _when(stage: str, line: str, lines: list[str], home: str) -> bool:
    """Is it the moment to send the signal?"""
    if stage == "startup":
        return bool(_state_pids(home))
    second = "[2/2]" in "".join(lines)
    return second and line.startswith({"load": "tsbench: load:", "execute": "tsbench: execute:"}[stage])


def _run_and_signal(tmp_path, stage: str, sig: str, times: int, to_server: bool = False):
    """Start the run, send sig (times times) at the stage, to the run or (to_server) to
    the cell's server; (exit code, stderr, server pids, run folder)."""
    f = tmp_path / "e.yaml"
    f.write_text(EXP)
    home = os.environ["TSBENCH_HOME"]
    p = subprocess.Popen([sys.executable, "-m", "tsbench", "run", str(f), "--results", str(tmp_path / "r")],
                         stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    pids: set[int] = set()
    deadline = time.monotonic() + 240
    os.set_blocking(p.stderr.fileno(), False)
    while p.poll() is None and time.monotonic() < deadline:
        line = p.stderr.readline()
        if line:
            lines.append(line)
        pids |= {int(m) for m in re.findall(r"\(pid (\d+)\)", line)}
        if _when(stage, line, lines, home):
            current = _state_pids(home)
            pids |= current
            time.sleep(0.3 if stage != "startup" else 0)
            for _ in range(times):
                os.kill(current.pop() if to_server else p.pid, getattr(signal, sig))
                time.sleep(0.2)
            if not to_server:
                break
        if not line:
            pids |= _state_pids(home)
            time.sleep(0.01)
    os.set_blocking(p.stderr.fileno(), True)
    code = p.wait(timeout=120)
    err = "".join(lines) + p.stderr.read()
    run = next((tmp_path / "r" / "sig").glob("2*"))
    return code, err, pids, run


def test_a_server_killed_mid_execute_fails_its_cell_and_the_run_exits_1(tmp_path):
    """Not a false ok: the cell names how its server ended; the next cell still runs."""
    code, err, pids, run = _run_and_signal(tmp_path, "execute", "SIGKILL", 1, to_server=True)
    assert code == 1 and "1 of 2 cells not ok" in err, err
    cells = pq.read_table(run / "cells.parquet").to_pylist()
    assert [c["status"] for c in cells] == ["ok", "failed"], err
    assert "killed by SIGKILL" in cells[1]["reason"] and "(log: " in cells[1]["reason"], cells[1]["reason"]
    assert not any(_alive(p) for p in pids), err


def _state_pids(home: str) -> set[int]:
    out = set()
    try:
        out.add(json.loads(open(os.path.join(home, "run", "sig-postgres.json")).read())["pid"])
    except (OSError, ValueError, KeyError):
        pass
    return out


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("stage", ["startup", "load", "execute"])
def test_signal_stops_the_run_and_keeps_what_finished(tmp_path, stage, sig):
    code, err, pids, run = _run_and_signal(tmp_path, stage, sig, 1)
    assert code == EXIT[sig], err
    assert pids and not any(_alive(p) for p in pids), err          # every server of the run stopped
    assert f"interrupted ({sig})" in err and "Traceback" not in err, err
    cells = pq.read_table(run / "cells.parquet").to_pylist()
    statuses = [c["status"] for c in cells]
    assert statuses == (["interrupted"] if stage == "startup" else ["ok", "interrupted"]), err
    assert cells[-1]["reason"] == f"interrupted by {sig}"
    m = json.loads((run / "manifest.json").read_text())
    assert m["interrupted_by"] == sig and m["status"]["interrupted"] == 1
    assert (run / "report.html").is_file()
    assert not os.path.exists(os.path.join(os.environ["TSBENCH_HOME"], "run", "sig-postgres.json"))


def test_a_second_signal_still_leaves_a_readable_run(tmp_path):
    code, err, pids, run = _run_and_signal(tmp_path, "load", "SIGINT", 2)
    assert code == 130, err
    assert pids and not any(_alive(p) for p in pids), err
    cells = pq.read_table(run / "cells.parquet").to_pylist()
    assert [c["status"] for c in cells][0] == "ok"
    json.loads((run / "manifest.json").read_text())
    assert (run / "report.html").is_file() or "report: not written" in err, err


def test_sigterm_to_a_command_stops_its_local_server(tmp_path):
    """Every command takes SIGTERM like Ctrl-C: `load --server local` stops the server it started."""
    run_dir = os.path.join(os.environ["TSBENCH_HOME"], "run")
    before = set(os.listdir(run_dir)) if os.path.isdir(run_dir) else set()
    p = subprocess.Popen([sys.executable, "-m", "tsbench", "load", "-q", "-t", "victoriametrics", "-b", "500",
                          "--generate", "use_case=devops,scale=10,end=2016-01-01T03:00:00Z,seed=2",
                          str(tmp_path / "d.lp")], stderr=subprocess.PIPE, text=True)
    deadline, pid = time.monotonic() + 120, None
    while pid is None and p.poll() is None and time.monotonic() < deadline:
        for name in set(os.listdir(run_dir) if os.path.isdir(run_dir) else ()) - before:
            try:
                st = json.loads(open(os.path.join(run_dir, name)).read())
            except (OSError, ValueError):
                continue
            pid = st["pid"] if st["version"] != "starting" else None
        time.sleep(0.05)
    assert pid is not None, p.stderr.read() if p.poll() is not None else "no server state"
    p.send_signal(signal.SIGTERM)
    code = p.wait(timeout=60)
    err = p.stderr.read()
    assert code == 143 and "interrupted (SIGTERM)" in err and "Traceback" not in err, err
    assert not _alive(pid) and set(os.listdir(run_dir)) - before == set(), err
