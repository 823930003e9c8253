"""Fault injection on real servers tsbench starts (phases 2 and 4): for each local
server kind (the MongoDB stand-in included), SIGKILL and SIGSTOP of the server in
the middle of a load and of an execute (the slow-starting JVM servers: SIGKILL
mid-load) fail within seconds with the exit status and the log's last lines (or the
stall bound), and no process of the server survives (a server found stopped is
killed after a short grace, not its whole stop_timeout). The signals are sent from
inside the client's own calls (the Nth write or query), so they land mid-phase
every time. Run with `pytest -m faults`."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import psutil
import pytest

from tsbench import session
from tsbench.dataset import DatasetSpec, resolve
from tsbench.datafile import open_datafile
from tsbench.errors import ServerError
from tsbench.execute import ExecOptions
from tsbench.generate import generate
from tsbench.load import LoadOptions
from tsbench.watch import Stalled

pytestmark = pytest.mark.faults

KINDS = ("influx", "postgres", "victoriametrics", "mongodb")
DATASET = {"use_case": "cpu-only", "scale": 10, "end": "2016-01-01T01:00:00Z", "seed": 4}


@pytest.fixture(scope="module")
def datafiles(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    ds = resolve(DatasetSpec(**DATASET))
    out = {}
    for fmt in ("influx", "csv"):
        generate(ds, fmt, str(d / f"cpu.{fmt}"), show_progress=False)
        out[fmt] = open_datafile(d / f"cpu.{fmt}")
    return out


def _inject(obj, method: str, nth: int, fault) -> None:
    """obj.method calls fault() just before its nth call goes out."""
    orig, calls = getattr(obj, method), [0]

    async def wrapped(*args, **kw):
        calls[0] += 1
        if calls[0] == nth:
            fault()
        return await orig(*args, **kw)
    setattr(obj, method, wrapped)


def _tree(pid: int) -> list[int]:
    """The server's process and every process under it."""
    root = psutil.Process(pid)
    return [pid] + [c.pid for c in root.children(recursive=True)]


def _gone(pids: list[int]) -> bool:
    """None of pids runs any more (zombies aside)."""
    def running(p: int) -> bool:
        try:
            return psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    return not any(running(p) for p in pids)


async def _faulted(target: str, phase: str, sig: str, df) -> tuple[list[int], BaseException, float]:
    """Start the server, inject the fault in the phase; (the server's pids, the error, seconds from
    the fault to the error)."""
    # the stall bound is what finds a SIGSTOP; a SIGKILL is found by the process's end, so its
    # cases give a slow first write (a JVM server on a loaded machine) more than 2 s
    stall = 2 if sig == "SIGSTOP" else 15
    opts = LoadOptions(workers=1, batch_size=200, if_exists="drop", stall_seconds=stall, progress=False)
    at: list[float] = []
    reach = session.Reach(target, "local", name=f"fault-{target}-{phase}-{sig}")
    async with session.open_target(reach, announce=False) as conn:
        pid = conn.server.state.pid

        pids = _tree(pid)

        def fault():                    # SIGKILL: the main process; SIGSTOP: all of it (PostgreSQL's backends too)
            at.append(time.monotonic())
            pids.extend(p for p in _tree(pid) if p not in pids)
            for p in pids[:1] if sig == "SIGKILL" else pids:
                os.kill(p, getattr(signal, sig))
        try:
            if phase == "load":
                _inject(conn.target, "write", 5, fault)
                await session.load(conn, df, opts)
            else:
                await session.load(conn, df, LoadOptions(if_exists="drop", progress=False))
                specs = session.draw(df.dataset, ["lastpoint", "single-groupby-1-1-1"], 4, 1, allow_empty=True)
                _inject(conn.target, "query", 3, fault)
                await session.run_queries(conn, df.dataset, specs, ExecOptions(
                    cache="none", validate=False, query_timeout=1, stall_seconds=stall, progress=False))
        except ServerError as exc:
            assert at, f"{target} {phase}: failed before the {sig}: {exc}"
            return pids, exc, time.monotonic() - at[0]
    raise AssertionError(f"{target} {phase}: the {sig} went unnoticed")


# the JVM servers are slow to start: a SIGKILL mid-load only
JVM_CASES = [("elasticsearch", "load", "SIGKILL"), ("cassandra", "load", "SIGKILL"), ("opentsdb", "load", "SIGKILL"),
             ("iotdb", "load", "SIGKILL"),      # ConfigNode and DataNode share the one JVM killed
             ("questdb", "load", "SIGKILL")]
CASES = [(t, p, s) for t in KINDS for p in ("load", "execute") for s in ("SIGKILL", "SIGSTOP")] + JVM_CASES


@pytest.mark.parametrize("target,phase,sig", CASES)
def test_server_fault_fails_the_phase_within_seconds(target, phase, sig, datafiles):
    from tsbench import databases

    df = datafiles[databases.target_class(target).format]
    pids, err, seconds = asyncio.run(_faulted(target, phase, sig, df))
    pid = pids[0]
    msg = str(err)
    if sig == "SIGKILL":
        assert "killed by SIGKILL" in msg and f"pid {pid}" in msg and "(log: " in msg, msg
        assert not isinstance(err, Stalled) and seconds < 5, (seconds, msg)
    else:
        assert isinstance(err, Stalled) and ("no progress for 2 s" in msg or "no answer within 2 s" in msg), msg
        assert seconds < 20, (seconds, msg)
    assert "\n" not in msg
    deadline = time.monotonic() + 10
    while not _gone(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pids), f"a process of {target} (pids {pids}) survived"



def test_a_server_found_stopped_gets_a_short_grace_then_sigkill():
    """A stopped (SIGSTOP) server that does not end once continued is killed after
    STOPPED_GRACE_S, not after its stop_timeout; the process is gone."""
    import subprocess
    import sys

    from tsbench.databases import server as srv

    class Stubborn(srv.Server):
        kind = "stubborn"
        stop_timeout = 120.0

    proc = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                             "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(1, flush=True); time.sleep(120)"],
                            stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"1\n"                     # SIGTERM ignored from here on
    s = Stubborn(instance_dir="/nonexistent")
    s.proc = proc
    os.kill(proc.pid, signal.SIGSTOP)
    import psutil

    until = time.monotonic() + 10          # SIGSTOP lands asynchronously: on a busy machine, later
    while psutil.Process(proc.pid).status() != psutil.STATUS_STOPPED and time.monotonic() < until:
        time.sleep(0.01)
    t0 = time.monotonic()
    s._terminate(proc.pid)
    took = time.monotonic() - t0
    assert proc.poll() == -signal.SIGKILL and srv.STOPPED_GRACE_S <= took < srv.STOPPED_GRACE_S + 3, took
