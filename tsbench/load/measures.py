"""What the writing phases measure alike (phase 2 `load`, its --cluster slots, and
`stream`): the writers' counters (one row of N_COUNTERS per process or slot, as the
pump adds to them), the CPU seconds spent by the client and the servers, and the
count taken again until it settles. Load and stream both import it; it imports no
phase."""

from __future__ import annotations

import asyncio
import resource
import time

from tsbench.core.model import Tables
from tsbench.databases.shared.target import Target

# the writers' counters, one row per process or slot, in this order
COUNTERS = ("rows", "values", "bytes", "batches", "backoffs", "backoff_us")
N_COUNTERS = len(COUNTERS)


def counter_totals(counters, rows: int) -> list[int]:
    """Each counter summed over the first `rows` rows (processes or slots)."""
    return [sum(counters[i * N_COUNTERS + k] for i in range(rows)) for k in range(N_COUNTERS)]


def batches_answered(counters, rows: int):
    """A function giving the batches the server answered so far, acknowledged or pushed
    back (the stall measure)."""
    def count() -> int:
        return sum(counters[k * N_COUNTERS + 3] + counters[k * N_COUNTERS + 4] for k in range(rows))
    return count


def _cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cpu_of(pids: list[int]) -> float | None:
    """CPU seconds of server processes and their children (None without pids), those of the
    children that ended and were reaped included (in their parent's children_* times): a
    server's tree loses no CPU when a worker or backend process ends between two readings."""
    if not pids:
        return None
    import psutil

    total = 0.0
    for pid in pids:
        try:
            p = psutil.Process(pid)
            for q in [p] + p.children(recursive=True):
                t = q.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
        except psutil.NoSuchProcess:
            pass
    return total


class CpuSpent:
    """CPU seconds from now on (load's and stream's timed parts): this process's and its
    reaped children's, and the server processes' (None without their pids)."""

    def __init__(self, server_pids: list[int] | None):
        self.pids = server_pids
        self.client0, self.server0 = _cpu_self() + _cpu_children(), _cpu_of(server_pids)

    def into(self, res) -> None:
        """Set res.client_cpu_seconds and res.server_cpu_seconds to the seconds spent since."""
        res.client_cpu_seconds = _cpu_self() + _cpu_children() - self.client0
        if self.server0 is not None:
            res.server_cpu_seconds = _cpu_of(self.pids) - self.server0


async def count_settled(target: Target, tables: Tables, expected: int) -> int:
    """The count, taken again (after a flush) while it falls short, for up to the target's
    settle_seconds: some stores make acknowledged data searchable a moment later."""
    deadline = time.monotonic() + type(target).settle_seconds
    counted = await target.count(tables)
    while counted < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        await target.flush()
        counted = await target.count(tables)
    return counted
