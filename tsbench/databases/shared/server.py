"""Servers tsbench runs itself (phase 2 onwards): the shared lifecycle.

A Server subclass says how to install its binaries, write its config and
command line, and tell when it is ready; this module does the rest: free
ports on 127.0.0.1, a data dir and log file per instance, start in its own
session, wait for readiness with a timeout (reporting the log's last lines
if the process dies), stop by pid (SIGTERM, then SIGKILL), restart, and a
state file so `tsbench servers list|stop` work across commands."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, ClassVar

from tsbench.core import homedir
from tsbench.core.errors import ServerError, UserError

READY_TIMEOUT = 60.0
STOPPED_GRACE_S = 5.0   # seconds a server found stopped (SIGSTOP) gets to shut down once continued


def home() -> pathlib.Path:
    """Where tsbench keeps installed binaries and server instances ($TSBENCH_HOME), made
    and checked once per process: not a directory or not writable is one UserError."""
    root = homedir.root()
    if root not in _homes_ok:
        import tempfile

        what = "TSBENCH_HOME" if os.environ.get("TSBENCH_HOME") else "tsbench's home (set TSBENCH_HOME)"
        if os.path.exists(root) and not os.path.isdir(root):
            raise UserError(f"{what}: {root} is not a directory")
        try:
            os.makedirs(root, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".probe-", dir=root)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise UserError(f"{what}: {root} is not a writable directory ({exc.strerror or exc})") from None
        _homes_ok.add(root)
    return pathlib.Path(root)


_homes_ok: set[str] = set()


def say(msg: str) -> None:
    """Progress of long work (installs, starts) on stderr."""
    print(f"tsbench: {msg}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_port_free(port: int, what: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise UserError(f"{what}: port {port} on 127.0.0.1 is in use; pick another or leave it unset") from None


def allocated_bytes(path: str | os.PathLike) -> int:
    """Disk blocks actually allocated under path (like `du`), not file sizes:
    sparse files (InfluxDB's TSM) count what they use."""
    total, seen = 0, set()
    p = pathlib.Path(path)
    if p.is_file():
        return p.stat().st_blocks * 512
    for root, _dirs, files in os.walk(p):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except FileNotFoundError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


def run_logged(cmd: list[str], what: str, log: pathlib.Path, env: dict | None = None,
               cwd: str | None = None, timeout: float = 1800) -> None:
    """Run an install step; on failure raise with the step's last output lines."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(cmd)}\n".encode())
        out.flush()
        try:
            p = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd, timeout=timeout)
        except FileNotFoundError:
            raise ServerError(f"{what}: {cmd[0]} is not installed") from None
        except subprocess.TimeoutExpired:
            raise ServerError(f"{what}: timed out after {timeout:.0f} s (log: {log})") from None
    if p.returncode != 0:
        raise ServerError(f"{what} failed: {log_tail(log)} (log: {log})")


def log_tail(log: pathlib.Path, lines: int = 3) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except FileNotFoundError:
        return "(no log)"
    return " | ".join(line.strip() for line in text[-lines:]) or "(empty log)"


def bool_option(kind: str, name: str, v) -> bool:
    """A server option that is a flag; command-line options arrive as text."""
    if isinstance(v, bool):
        return v
    word = str(v).strip().lower()
    if word in ("true", "yes", "on", "1"):
        return True
    if word in ("false", "no", "off", "0"):
        return False
    raise UserError(f"server {kind}: option {name}: expected true or false, got {v!r}")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie child of ours is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pid_start_time(pid: int) -> str | None:
    """The kernel's start time of a pid: with the pid, it names one process (pids are reused)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class State:
    """One running instance, as written to its state file."""

    kind: str
    name: str
    pid: int
    pid_start: str | None
    ports: dict[str, int]
    url: str
    datadir: str
    log: str
    version: str
    started: float
    extra: dict = field(default_factory=dict)


class Server:
    """A database server tsbench can install and run locally. Subclasses set the
    class data and implement binary(), install_steps(), command(), ready()."""

    kind: ClassVar[str]                      # registry name: "influx", "postgres", ...
    port_names: ClassVar[tuple[str, ...]] = ("http",)
    url_scheme: ClassVar[str] = "http"       # url = scheme://127.0.0.1:<first port>
    ready_timeout: ClassVar[float] = READY_TIMEOUT
    stop_timeout: ClassVar[float] = 30.0
    stop_signal: ClassVar[int] = signal.SIGTERM   # the server's own "shut down now" signal
    restart_keeps_data: ClassVar[bool] = True     # False: data in memory only (no cold-cache restart)
    # the server options of further releases `servers install --all` installs (what the tests start)
    also_installed: ClassVar[tuple[dict, ...]] = ()

    def __init__(self, name: str | None = None, instance_dir: str | os.PathLike | None = None,
                 ports: dict[str, int] | None = None, options: dict | None = None):
        self.name = name or self.kind
        self.dir = pathlib.Path(instance_dir) if instance_dir else home() / "servers" / self.name
        self.requested_ports = dict(ports or {})
        self.options = dict(options or {})
        self.proc: subprocess.Popen | None = None
        self.state: State | None = None
        self.restarting = False         # restart() under way: the old process's end is no death
        self._lock = threading.RLock()  # stop() waits for a restart() in another thread to end

    # ---- to implement -------------------------------------------------------------------
    def binary(self) -> pathlib.Path | None:
        """The server executable if installed, else None."""
        raise NotImplementedError

    def install(self) -> None:
        """Install from a registry (say what is being installed); raise ServerError on failure."""
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def prepare(self, datadir: pathlib.Path, ports: dict[str, int]) -> None:
        """Write config files, init the data dir (called before every start)."""

    def command(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        raise NotImplementedError

    def ready(self, ports: dict[str, int]) -> bool:
        """True once the server answers; called every 0.1 s until ready_timeout."""
        raise NotImplementedError

    def popen_kwargs(self) -> dict:
        """Extra subprocess.Popen arguments (user/group for servers that refuse root)."""
        return {}

    # ---- shared lifecycle ---------------------------------------------------------------
    @property
    def state_file(self) -> pathlib.Path:
        return home() / "run" / f"{self.name}.json"

    @property
    def datadir(self) -> pathlib.Path:
        return self.dir / "data"

    @property
    def logfile(self) -> pathlib.Path:
        return self.dir / "server.log"

    def ensure_installed(self) -> pathlib.Path:
        b = self.binary()
        if b is None:
            self.install()
            b = self.binary()
            if b is None:
                raise ServerError(f"{self.kind}: install finished but no server binary was found")
        return b

    def url_for(self, ports: dict[str, int]) -> str:
        return f"{self.url_scheme}://127.0.0.1:{ports[self.port_names[0]]}"

    def _pick_ports(self) -> dict[str, int]:
        unknown = set(self.requested_ports) - set(self.port_names)
        if unknown:
            raise UserError(f"{self.kind}: unknown port name {sorted(unknown)[0]!r} "
                            f"(this server has {', '.join(self.port_names)})")
        ports = {}
        for n in self.port_names:
            if n in self.requested_ports:
                check_port_free(self.requested_ports[n], f"{self.kind} {n} port")
                ports[n] = self.requested_ports[n]
            else:
                p = free_port()
                while p in ports.values():
                    p = free_port()
                ports[n] = p
        return ports

    def start(self, fresh: bool = True) -> State:
        """Install if needed, then start with its own config, data dir, ports and log."""
        self._spawn(self._fresh_ports(fresh))
        self._until_ready(time.sleep)
        return self.state

    async def astart(self, fresh: bool = True) -> State:
        """start() for an event loop: waiting for readiness yields, so a signal's
        cancellation reaches it (the caller's cleanup then stops the spawned process)."""
        import asyncio

        self._spawn(self._fresh_ports(fresh))
        await self._until_ready_async(asyncio.sleep)
        return self.state

    def _fresh_ports(self, fresh: bool) -> dict[str, int]:
        existing = load_state(self.name)
        if existing and pid_alive(existing.pid):
            raise UserError(f"server {self.name!r} is already running (pid {existing.pid}, {existing.url}); "
                            f"stop it first: python -m tsbench servers stop {self.name}")
        self.ensure_installed()
        if fresh and self.datadir.exists():
            shutil.rmtree(self.datadir)
        self.datadir.mkdir(parents=True, exist_ok=True)
        return self._pick_ports()

    def _spawn(self, ports: dict[str, int]) -> None:
        """Start the process; its state is recorded at once (servers list/stop know it while it starts)."""
        self.prepare(self.datadir, ports)
        cmd = self.command(self.datadir, ports)
        self.logfile.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.logfile, "ab")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, cwd=str(self.dir), **self.popen_kwargs())
        finally:
            log.close()
        self.state = State(self.kind, self.name, self.proc.pid, pid_start_time(self.proc.pid), ports,
                           self.url_for(ports), str(self.datadir), str(self.logfile), "starting", time.time(),
                           self.extra_state())
        save_state(self.state)

    def extra_state(self) -> dict:
        return {}

    def _ready_now(self, deadline: float) -> bool:
        """One readiness check: True when ready; raises if the process died or time is up."""
        if self.proc.poll() is not None:
            raise ServerError(f"{self.kind} exited with code {self.proc.returncode} while starting: "
                              f"{log_tail(self.logfile)} (log: {self.logfile})")
        try:
            if self.ready(self.state.ports):
                self.state.version = self.version()
                save_state(self.state)
                return True
        except Exception:   # not up yet: refused, reset, half-started
            pass
        if time.monotonic() > deadline:
            raise ServerError(f"{self.kind} was not ready after {self.ready_timeout:.0f} s: "
                              f"{log_tail(self.logfile)} (log: {self.logfile})")
        return False

    def _until_ready(self, sleep) -> None:
        deadline = time.monotonic() + self.ready_timeout
        try:
            while not self._ready_now(deadline):
                sleep(0.1)
        except BaseException:          # not ready, died, or interrupted: stopped, then re-raised (nothing hidden)
            self.stop()
            raise

    async def _until_ready_async(self, sleep) -> None:
        deadline = time.monotonic() + self.ready_timeout
        try:
            while not self._ready_now(deadline):
                await sleep(0.1)
        except BaseException:          # a cancellation (signal) too: stopped, then re-raised (nothing hidden)
            self.stop()
            raise

    def _terminate(self, pid: int) -> None:
        """The server's stop signal, then SIGKILL after stop_timeout; a server found stopped
        (SIGSTOP: already faulted, its clean shutdown can wait on its own children for good)
        gets STOPPED_GRACE_S once continued."""
        grace = STOPPED_GRACE_S if _tree_stopped(pid) else self.stop_timeout
        try:
            os.kill(pid, self.stop_signal)
            _signal_tree(pid, signal.SIGCONT)   # a stopped (SIGSTOP) server acts on it only once continued
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        try:
            while time.monotonic() < deadline:
                if self.proc is not None and self.proc.pid == pid:
                    if self.proc.poll() is not None:
                        return
                elif not pid_alive(pid):
                    return
                time.sleep(0.05)
        except KeyboardInterrupt:      # a second signal while stopping: stop at once, then go on out
            _kill(pid, self.proc)
            raise
        _kill(pid, self.proc)

    def stop(self) -> None:
        """SIGTERM to the recorded pid (SIGKILL after stop_timeout); never by name. A
        restart() under way in another thread (a cold-cache pass whose cell failed) is
        waited for (bounded by its ready_timeout), so the process it starts is the one
        stopped, never left behind."""
        with self._lock:
            st = self.state or load_state(self.name)
            if st is None:
                return
            if pid_alive(st.pid) and (st.pid_start is None or pid_start_time(st.pid) == st.pid_start):
                self._terminate(st.pid)
            remove_state(st.name)
            self.state = None
            self.proc = None

    def restart(self) -> State:
        """Stop and start again on the same data dir and ports (for cold-cache runs)."""
        st = self.state or load_state(self.name)
        if st is None:
            raise UserError(f"server {self.name!r} is not running")
        with self._lock:
            self.restarting = True      # read by exit_report() from the watchdog, beside this thread
            try:
                self.stop()
                self._spawn(dict(st.ports))
                self._until_ready(time.sleep)
            finally:
                self.restarting = False
            return self.state

    def exit_report(self) -> str | None:
        """None while the process runs; once it has ended, how (exit status or signal) and
        the last lines of its log. None during restart(): that end is asked for."""
        if self.restarting:
            return None
        if self.proc is not None:
            code = self.proc.poll()
            if code is None:
                return None
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
        elif self.state is not None and not pid_alive(self.state.pid):
            how = "exited"
        else:
            return None
        return f"{self.kind} (pid {self.state.pid if self.state else '?'}) {how}: " \
               f"{log_tail(self.logfile)} (log: {self.logfile})"

    def pids(self) -> list[int]:
        st = self.state or load_state(self.name)
        return [st.pid] if st and pid_alive(st.pid) else []

    @property
    def url(self) -> str:
        st = self.state or load_state(self.name)
        if st is None:
            raise UserError(f"server {self.name!r} is not running")
        return st.url

    def __enter__(self) -> "Server":
        if self.state is None:
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _tree_stopped(pid: int) -> bool:
    """Whether the server or a process under it is stopped (SIGSTOP)."""
    import psutil

    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
        return any(p.status() == psutil.STATUS_STOPPED for p in procs)
    except psutil.Error:                # gone meanwhile: nothing stopped to wait for
        return False


def _signal_tree(pid: int, sig: int) -> None:
    """sig to the server and every process under it (PostgreSQL's backends leave its group)."""
    import psutil

    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        return
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass


def _kill(pid: int, proc: subprocess.Popen | None) -> None:
    """SIGKILL to the server and its children, and reap (bounded): the fast way out."""
    _signal_tree(pid, signal.SIGKILL)
    if proc is not None and proc.pid == pid:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            pass


def save_state(st: State) -> None:
    f = home() / "run" / f"{st.name}.json"
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f".{f.name}.tmp")
    tmp.write_text(json.dumps(asdict(st), indent=2) + "\n")
    os.replace(tmp, f)                         # readers never see half a state file


def load_state(name: str) -> State | None:
    f = home() / "run" / f"{name}.json"
    try:
        return State(**json.loads(f.read_text()))
    except FileNotFoundError:
        return None


def remove_state(name: str) -> None:
    (home() / "run" / f"{name}.json").unlink(missing_ok=True)


def all_states() -> list[State]:
    d = home() / "run"
    return [s for f in sorted(d.glob("*.json")) if (s := load_state(f.stem))] if d.exists() else []


def local_state(kind: str, url: str) -> State | None:
    """The state of the server of this kind tsbench runs at url (its version, ports, data
    dirs), or None: a server it did not start."""
    return next((st for st in all_states() if st.kind == kind and st.url == url), None)


def http_ok(url: str, expect: Callable[[int], bool] = lambda s: s < 300, timeout: float = 2.0) -> bool:
    """One blocking GET for readiness checks."""
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return expect(r.status)
    except Exception:
        return False
