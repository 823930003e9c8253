"""The resource monitor (load, queries and execute phases of a run): a thread that
samples, every second, the server's processes and the client's own, and the
data directory, into rows of the `resources` table; and feeds the machine's noise
meter (noise.py) the CPU of those processes, so that what other processes used is known.

One row per sample and role ("server": the server's process and its children;
"client": this process and its children other than the server's):
elapsed_s since the cell started, the phase, cpu_s (cumulative user+system CPU
seconds of the role's live processes), cpu_percent over the last interval (100 =
one core), pss_bytes (the proportional set size summed over the role's processes:
shared pages counted once, unlike summed RSS), read_bytes and write_bytes (cumulative block I/O, None
where the kernel does not let us read it) and datadir_bytes (allocated bytes of
the data directory, the same on both roles' rows of one sample), other_cpu_percent (the CPU
other processes than these used over the last interval, 100 = one core, the same on both rows)."""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

import psutil

from tsbench.databases.shared.server import allocated_bytes
from tsbench.experiments.noise import NoiseMeter


class ResourceMonitor:
    def __init__(self, server_pids: Callable[[], list[int]] | None = None, datadir: str | None = None,
                 interval: float = 1.0, labels: dict | None = None, noise: NoiseMeter | None = None):
        self.server_pids = server_pids or (lambda: [])
        self.datadir, self.interval = datadir, interval
        self.labels = dict(labels or {})
        self._phase = "start"
        self._lock = threading.Lock()
        self.rows: list[dict] = []
        self._procs: dict[int, psutil.Process] = {}
        self._prev: dict[str, tuple[float, float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = time.monotonic()
        self._noise = noise or NoiseMeter()      # shared by the monitors of one cell's trials

    @property
    def phase(self) -> str:
        return self._phase

    @phase.setter
    def phase(self, name: str) -> None:
        """Enter a phase: the samples from now on carry its name, the first one taken at once."""
        self._phase = name
        if self._thread is not None:
            self.sample()

    # ---- lifecycle -------------------------------------------------------------------------------------
    def __enter__(self) -> "ResourceMonitor":
        self._t0 = time.monotonic()
        self._noise.start()
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="tsbench-monitor", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.sample()
        self._noise.end()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    # ---- sampling --------------------------------------------------------------------------------------
    def _proc(self, pid: int) -> psutil.Process | None:
        p = self._procs.get(pid)
        try:
            if p is None or not p.is_running():
                p = self._procs[pid] = psutil.Process(pid)
            return p
        except psutil.Error:
            self._procs.pop(pid, None)
            return None

    def _tree(self, pids: list[int]) -> list[psutil.Process]:
        out: dict[int, psutil.Process] = {}
        for pid in pids:
            p = self._proc(pid)
            if p is None:
                continue
            out[p.pid] = p
            try:
                out.update({c.pid: c for c in p.children(recursive=True)})
            except psutil.Error:
                pass
        return list(out.values())

    def sample(self) -> None:
        with self._lock:
            self._sample()

    def _sample(self) -> None:
        now, wall = time.monotonic(), time.time()
        server = self._tree(self.server_pids())
        mine = {p.pid for p in server}
        client = [p for p in self._tree([os.getpid()]) if p.pid not in mine]
        disk = None
        if self.datadir and os.path.exists(self.datadir):
            try:
                disk = allocated_bytes(self.datadir)
            except OSError:
                disk = None
        proc_cpu: dict[tuple[int, float], float] = {}
        rows = []
        for role, procs in (("server", server), ("client", client)):
            if not procs:
                continue
            cpu = pss = rss = 0.0
            rd = wr = 0
            io_ok = True
            for p in procs:
                try:
                    with p.oneshot():
                        t = p.cpu_times()
                        cpu += t.user + t.system
                        proc_cpu[(p.pid, p.create_time())] = t.user + t.system
                        mem = p.memory_full_info()
                        pss += mem.pss
                        rss += mem.rss
                        if io_ok:
                            try:
                                io = p.io_counters()
                                rd += io.read_bytes
                                wr += io.write_bytes
                            except (psutil.AccessDenied, AttributeError):
                                io_ok = False
                except psutil.Error:
                    continue
            prev = self._prev.get(role)
            pct = None
            if prev is not None and now > prev[0]:
                pct = max(0.0, (cpu - prev[1]) / (now - prev[0]) * 100.0)
            self._prev[role] = (now, cpu)
            rows.append({**self.labels, "phase": self._phase, "elapsed_s": round(now - self._t0, 3),
                              "role": role, "processes": len(procs), "cpu_s": round(cpu, 3),
                              "cpu_percent": None if pct is None else round(pct, 1), "pss_bytes": int(pss),
                              "rss_sum_bytes": int(rss),
                              "read_bytes": rd if io_ok else None, "write_bytes": wr if io_ok else None,
                              "datadir_bytes": disk})
        other = self._noise.sample(proc_cpu, wall)
        self.rows.extend({**r, "other_cpu_percent": other} for r in rows)

    def peaks(self) -> dict:
        """Peak PSS of the server (server_pss_peak_bytes) and of the client
        (client_pss_peak_bytes) over the samples so far, summed RSS beside them
        (*_rss_sum_peak_bytes, shared pages once per process), and the data dir's largest size."""
        out = {}
        for role in ("server", "client"):
            for k in ("pss", "rss_sum"):
                got = [r[f"{k}_bytes"] for r in self.rows if r["role"] == role]
                out[f"{role}_{k}_peak_bytes"] = max(got) if got else None
        disk = [r["datadir_bytes"] for r in self.rows if r["datadir_bytes"] is not None]
        out["datadir_peak_bytes"] = max(disk) if disk else None
        return out

    def noise(self) -> dict:
        """The machine's noise over the monitor's span: the load average and CPU steal before
        and after, other processes' CPU share, and the busy verdict (noise.py; docs/results.md)."""
        with self._lock:
            return self._noise.figures()
