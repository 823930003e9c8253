"""The local server's life in the shared database layer (databases/shared/server.py and
core/watch.py), on the null HTTP sink: a restart keeps the ports and changes the process,
is never reported as the server's death, a stop during a restart in another thread leaves
no process, and a death shown after the failed requests still fails the phase."""

from __future__ import annotations

import asyncio
import os

import pytest


def test_a_restart_is_not_reported_as_the_server_s_death(tmp_path):
    """A cold-cache pass restarts the server in a thread while the watchdog asks
    exit_report() every 0.2 s: the old process's end must never read as a death."""
    import threading

    from tsbench.databases.null.server import NullHttpServer

    srv = NullHttpServer(name=f"test-restart-watch-{os.getpid()}", instance_dir=tmp_path / "sink")
    looks, deaths, done = [0], [], threading.Event()

    def watch():
        while not done.is_set():
            looks[0] += 1
            if (r := srv.exit_report()) is not None:
                deaths.append(r)
    with srv:
        t = threading.Thread(target=watch)
        t.start()
        try:
            for _ in range(5):
                srv.restart()
        finally:
            done.set()
            t.join()
    assert looks[0] > 100 and not deaths, deaths[:1]


def test_a_stop_during_a_restart_in_another_thread_leaves_no_process(tmp_path, monkeypatch):
    """A cell that fails while its cold-cache restart runs in a thread stops the server
    from the event loop's thread: the process the restart then starts is the one stopped."""
    import threading
    import time

    from tsbench.databases.null.server import NullHttpServer
    from tsbench.databases.shared.server import pid_alive

    srv = NullHttpServer(name=f"test-restart-stop-{os.getpid()}", instance_dir=tmp_path / "sink")
    in_gap, spawned = threading.Event(), []
    real_spawn = srv._spawn

    def slow_spawn(ports):              # the old process gone, the new one not yet started
        in_gap.set()
        time.sleep(0.5)
        real_spawn(ports)
        spawned.append(srv.state.pid)
    with srv:
        monkeypatch.setattr(srv, "_spawn", slow_spawn)
        t = threading.Thread(target=srv.restart)
        t.start()
        assert in_gap.wait(30)
        srv.stop()
        t.join(60)
        assert spawned and not pid_alive(spawned[0])      # before the with block's own stop


def test_server_restart_keeps_ports_and_changes_pid(tmp_path):
    from tsbench.databases.null.server import NullHttpServer
    from tsbench.databases.shared.server import load_state, pid_alive

    srv = NullHttpServer(name=f"test-restart-{os.getpid()}", instance_dir=tmp_path / "sink")
    with srv:
        first = srv.state
        again = srv.restart()
        assert again.ports == first.ports and again.pid != first.pid
        assert not pid_alive(first.pid) and pid_alive(again.pid)
        assert load_state(srv.name).pid == again.pid and srv.pids() == [again.pid]
    assert load_state(srv.name) is None and not pid_alive(again.pid)


def test_a_death_shown_after_the_failed_requests_still_fails_the_phase(tmp_path):
    """A killed server's sockets close before its process is reaped: the requests fail
    first and its end shows a moment later. settle() waits for it, so the phase fails with
    the server's end rather than ending "with errors" (a race CI once lost)."""
    import signal
    import time

    from tsbench.core.errors import ServerError
    from tsbench.core.watch import settle, watchdog
    from tsbench.databases.null.server import NullHttpServer

    srv = NullHttpServer(name=f"test-settle-{os.getpid()}", instance_dir=tmp_path / "sink")
    real_report, killed = srv.exit_report, []
    srv.exit_report = lambda: real_report() if killed and time.monotonic() > killed[0] + 0.3 else None

    async def phase():
        async with watchdog("queries", srv):
            os.kill(srv.state.pid, signal.SIGKILL)
            killed.append(time.monotonic())
            await settle(srv)
    with srv:
        with pytest.raises(ServerError, match="killed by SIGKILL"):
            asyncio.run(phase())
