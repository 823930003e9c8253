"""Fault injection on real servers tsbench starts (phases 2 and 4): for every
server-backed target (the MongoDB stand-in included; the null-http sink aside),
SIGSTOP and SIGKILL of its server while connecting (SIGSTOP: the open's probes),
in the middle of a load, just as an execute starts (before its first query: the
/ping and other probes of prepare()) and in the middle of an execute. A SIGKILL
fails the phase within KILL_BOUND_S with the exit status and the log's last lines,
and no process of the server survives; a SIGSTOP fails it with the stall bound's
error within its stall bound (STALL_S) + MARGIN_S (docs/reliability.md lists the figures). The
signals are sent from inside the client's own calls (the Nth write or query), so
they land mid-phase every time.

The JVM servers take 10-25 s to start, so the cases of a target share one server:
a SIGSTOP case continues it (SIGCONT) and the next case goes on with it; a SIGKILL
case ends it and the next case starts another (two starts a target). Run with
`pytest -m faults`; `-s` prints each case's seconds from the fault to the error."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import psutil
import pytest

from tsbench import databases
from tsbench.core.errors import ServerError
from tsbench.core.watch import Stalled
from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.execute.run import ExecOptions
from tsbench.experiments import session
from tsbench.load.connect import connect
from tsbench.load.run import LoadOptions

pytestmark = pytest.mark.faults

KINDS = ("influx", "postgres", "victoriametrics", "mongodb", "questdb", "elasticsearch", "cassandra", "opentsdb",
         "iotdb", "prometheus")
# in this order on each target: the SIGSTOP cases first (each continues the server), then the SIGKILLs
FAULTS = [("connect", "SIGSTOP"), ("load", "SIGSTOP"), ("start", "SIGSTOP"), ("execute", "SIGSTOP"),
          ("load", "SIGKILL"), ("execute", "SIGKILL")]
CASES = [(t, p, s) for t in KINDS for p, s in FAULTS]
# the stall bound (--stall-timeout) of the SIGSTOP cases: the JVM servers' first writes (their
# schema made as they come) can take a few seconds on a loaded machine
STALL_S = {"elasticsearch": 5.0, "cassandra": 5.0, "opentsdb": 5.0, "iotdb": 5.0, "questdb": 5.0}
FAST_STALL_S = 2.0
MARGIN_S = 5.0         # what a SIGSTOP's error may take beyond it on a loaded 2-core machine
KILL_BOUND_S = 5.0     # a SIGKILL is found by the process's end (the watchdog looks every 0.2 s)
# a SIGKILL case's stall bound: longer than a JVM server's slow first write on a loaded machine
KILL_STALL_S = 15.0
DATASET = {"use_case": "cpu-only", "scale": 10, "end": "2016-01-01T01:00:00Z", "seed": 4}
TYPES = ("lastpoint", "single-groupby-1-1-1", "single-groupby-1-1-12")   # those a target runs, 4 of each
SEEN: dict[tuple[str, str, str], float] = {}                             # the measured seconds, for the summary


@pytest.fixture(scope="module")
def datafiles(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults")
    ds = resolve(DatasetSpec(**DATASET))
    out = {}
    for fmt in ("influx", "csv"):
        generate(ds, fmt, str(d / f"cpu.{fmt}"), show_progress=False)
        out[fmt] = open_datafile(d / f"cpu.{fmt}")
    return out


class Host:
    """One server of a target's kind, shared by the target's cases; started again when a case killed it."""

    def __init__(self, target: str):
        self.target = target
        self.kind = databases.local_kind(databases.target_class(target), "local")
        self.srv = None
        self.loaded = False             # the server holds the whole data file (an execute case loaded it)

    def server(self):
        """The running server: started (again) if need be; one just continued answers first."""
        if self.srv is None or self.srv.exit_report() is not None:
            self.stop()
            self.srv = databases.server_class(self.kind)(name=f"fault-{self.target}")
            self.srv.start()
            self.loaded = False
        deadline = time.monotonic() + self.srv.ready_timeout
        while not _ready(self.srv) and time.monotonic() < deadline:
            time.sleep(0.2)
        return self.srv

    def stop(self) -> None:
        if self.srv is not None:
            self.srv.stop()
            self.srv = None


@pytest.fixture(scope="module")
def hosts():
    started: dict[str, Host] = {}
    yield lambda target: started.setdefault(target, Host(target))
    for h in started.values():
        h.stop()
    if SEEN:
        print("\nseconds from the fault to the error:")
        for (t, p, s), secs in SEEN.items():
            print(f"  {t:16} {p:8} {s:8} {secs:6.2f}")


def _ready(srv) -> bool:
    try:
        return bool(srv.ready(srv.state.ports))
    except Exception:
        return False


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


def _signal(pids: list[int], sig: int) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def _states(pids: list[int]) -> set[str]:
    """The states of those of pids still running."""
    out = set()
    for p in pids:
        try:
            out.add(psutil.Process(p).status())
        except psutil.NoSuchProcess:
            pass
    return out


def _listeners(ports: dict[str, int]) -> dict[int, int | None]:
    """port -> the pid listening on it (a case a stopped server seemed to answer names who did)."""
    wanted = set(ports.values())
    return {c.laddr.port: c.pid for c in psutil.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN and c.laddr.port in wanted}


def _until(cond, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)


def _gone(pids: list[int]) -> bool:
    """None of pids runs any more (zombies aside)."""
    def running(p: int) -> bool:
        try:
            return psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    return not any(running(p) for p in pids)


async def _phase(conn, host: Host, phase: str, df, stall: float, fault) -> None:
    """Run the phase on an open connection, the fault injected where the phase says; an
    execute loads the data file first unless the server holds it (the answers are not checked)."""
    if phase == "load":
        host.loaded = False
        _inject(conn.target, "write", 5, fault)
        await session.load(conn, df, LoadOptions(workers=1, batch_size=200, if_exists="drop",
                                                 stall_seconds=stall, progress=False))
        return
    if not host.loaded:
        await session.load(conn, df, LoadOptions(if_exists="drop", progress=False))
        host.loaded = True
    types = [t for t in TYPES if t in type(conn.target).query_types]
    specs = session.draw(df.dataset, types, 20, 1, allow_empty=True)   # queries left after the fault: a
    # server killed under a live connection (PostgreSQL: its backend outlives the postmaster for a moment)
    # must meet a query after it, however fast the queries are
    if phase == "start":            # before execute's first step: attach, prepare's probes, the first query
        _inject(conn.target, "attach", 1, fault)
    else:
        _inject(conn.target, "query", 3, fault)
    await session.run_queries(conn, df.dataset, specs, ExecOptions(
        cache="none", validate=False, query_timeout=1, stall_seconds=stall, progress=False))


async def _faulted(host: Host, target: str, phase: str, sig: str, df) -> tuple[list[int], BaseException, float]:
    """Inject the fault in the phase on the running server; (the server's pids, the error,
    seconds from the fault to the phase's error). A stopped server is continued before the
    end, so that the next case finds it running (and no client thread waits on it)."""
    srv = host.srv
    stall = STALL_S.get(target, FAST_STALL_S) if sig == "SIGSTOP" else KILL_STALL_S
    at: list[float] = []
    pid = srv.state.pid
    pids = _tree(pid)

    def fault():                    # SIGKILL: the main process; SIGSTOP: all of it (PostgreSQL's backends too)
        at.append(time.monotonic())
        pids.extend(p for p in _tree(pid) if p not in pids)
        _signal(pids[:1] if sig == "SIGKILL" else pids, getattr(signal, sig))
        if sig == "SIGSTOP":        # the stop has taken hold before the client goes on
            _until(lambda: _states(pids) <= {psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE}, 2.0)

    def failed(exc: BaseException):
        seconds = time.monotonic() - at[0] if at else None
        assert at, f"{target} {phase}: failed before the {sig}: {exc}"
        if sig == "SIGSTOP":        # continued at once: closing the connections need not wait for its bound
            _signal(pids, signal.SIGCONT)
        return pids, exc, seconds
    try:
        if phase == "connect":
            fault()
            try:
                async with connect(target, srv.url, stall_seconds=stall):
                    pass
            except ServerError as exc:
                return failed(exc)
        else:
            async with connect(target, srv.url, stall_seconds=stall) as conn:
                conn.server = srv           # its end watched as that of a server tsbench started for the phase
                try:
                    await _phase(conn, host, phase, df, stall, fault)
                except ServerError as exc:
                    return failed(exc)
    finally:
        if sig == "SIGSTOP":
            _signal(pids, signal.SIGCONT)
    raise AssertionError(f"{target} {phase}: the {sig} went unnoticed (the server's processes: "
                         f"{_states(pids)}; listening on its ports: {_listeners(srv.state.ports)})")


@pytest.mark.parametrize("target,phase,sig", CASES)
def test_server_fault_fails_the_phase_within_its_bound(target, phase, sig, datafiles, hosts):
    host = hosts(target)
    host.server()
    df = datafiles[databases.target_class(target).format]
    pids, err, seconds = asyncio.run(_faulted(host, target, phase, sig, df))
    SEEN[target, phase, sig] = seconds
    msg = str(err)
    assert "\n" not in msg
    if sig == "SIGKILL":
        assert "killed by SIGKILL" in msg and f"pid {pids[0]}" in msg and "(log: " in msg, msg
        assert not isinstance(err, Stalled) and seconds < KILL_BOUND_S, (seconds, msg)
        host.stop()                 # as the end of a phase on server: local does
        _until(lambda: _gone(pids), 10.0)
        assert _gone(pids), f"a process of {target} (pids {pids}) survived"
    else:
        stall = STALL_S.get(target, FAST_STALL_S)
        assert isinstance(err, Stalled) and f"{stall:g} s" in msg, msg
        assert seconds < stall + MARGIN_S, (seconds, msg)



def test_a_server_found_stopped_gets_a_short_grace_then_sigkill():
    """A stopped (SIGSTOP) server that does not end once continued is killed after
    STOPPED_GRACE_S, not after its stop_timeout; the process is gone."""
    import subprocess
    import sys

    from tsbench.databases.shared import server as srv

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


def test_a_client_error_after_the_server_died_names_the_death(datafiles, tmp_path):
    """Issue 35 item 10: a SIGKILLed IoTDB mid-load ended as "internal error" (its thrift
    client raised what no target maps). Whatever a client raises once its server has ended,
    the phase's error is the server's end: its exit status and the log's last lines. The
    server here is a real process that only sleeps (the fault is what matters), the target
    the null sink."""
    import subprocess
    import sys

    from tsbench.databases.null.target import NullTarget
    from tsbench.databases.shared import server as srv
    from tsbench.load.connect import Connection

    class Sleeper(srv.Server):
        kind = "sleeper"

    (tmp_path / "server.log").write_text("starting\nlast words of the server\n")
    s = Sleeper(instance_dir=tmp_path)
    s.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    s.state = srv.State("sleeper", "sleeper", s.proc.pid, None, {}, "null://", str(tmp_path), str(s.logfile),
                        "0", time.time(), {})
    target = NullTarget()

    def fault():                    # the server dies, then the client fails as no target expects
        os.kill(s.proc.pid, signal.SIGKILL)
        s.proc.wait(10)
        raise RuntimeError("read 0 bytes from a closed transport")
    _inject(target, "write", 3, fault)
    conn = Connection(target, s, None)
    try:
        with pytest.raises(ServerError) as info:
            asyncio.run(session.load(conn, datafiles["influx"], LoadOptions(
                workers=1, batch_size=200, if_exists="drop", progress=False)))
    finally:
        s.proc.kill()
        s.proc.wait()
    msg = str(info.value)
    assert f"sleeper (pid {s.proc.pid}) was killed by SIGKILL" in msg and "last words of the server" in msg, msg


def test_an_abandoned_blocking_call_holds_up_nothing():
    """A synchronous driver's call that the stall bound abandoned (IoTDB's thrift read from
    a stopped server, up to its 300 s socket timeout) holds up neither the event loop nor
    the end of asyncio.run (asyncio.to_thread's would: the default executor is waited for);
    its error, and a later call's answer, still arrive."""
    from tsbench.databases.shared import blocking

    async def main():
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(blocking.call(time.sleep, 30), 0.2)
        with pytest.raises(ZeroDivisionError):
            await blocking.call(divmod, 1, 0)
        return await blocking.call(sum, [1, 2, 3])

    t0 = time.monotonic()
    assert asyncio.run(main()) == 6
    assert time.monotonic() - t0 < 5
