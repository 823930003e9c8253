"""What runs on a Dask worker for `execute --cluster` (phase 4): one client slot opens
its own connection to the target, renders the queries, runs the burn-in and warm passes
unrecorded, says it is ready and waits for the run's go (so every slot measures at
once), then runs its share of the measured queries (slot i of N: queries i, i + N, ...)
with its own --workers, as a lone `execute` does. Its answers become canonical rows and
digests after its pass (untimed); it returns its records and each distinct answer's rows
once, which the driver checks against the reference engine."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import psutil

from tsbench.cluster.slot import Stopped, until_done_or_stopped

CHECK_S = 0.5
GO_POLL_S = 0.02


@dataclass
class QuerySlotJob:
    slot: int
    slots: int
    target: str
    url: str | None
    options: dict
    tables: object               # Tables
    specs: list                  # QuerySpecs
    opts: object                 # ExecOptions of this slot (its share of --rate, no validation, no cluster)
    live: str
    stop: str
    go: str                      # Dask event: every slot is ready


def run_query_slot(job: QuerySlotJob) -> dict:
    """The Dask task: {"slot", "error"} or the slot's records and distinct answers."""
    from distributed import Event, Queue

    live, stop, go = Queue(job.live), Event(job.stop), Event(job.go)
    try:
        return asyncio.run(_run(job, live, stop, go))
    except Stopped:
        return {"slot": job.slot, "error": "stopped"}
    except BaseException as exc:          # sent back as the slot's cause, in one line
        from tsbench.load.pump import first_error

        e = first_error(exc)
        return {"slot": job.slot, "error": str(e) or type(e).__name__}


async def _run(job: QuerySlotJob, live, stop, go) -> dict:
    from tsbench import databases
    from tsbench.databases.shared.spread import make_target
    from tsbench.execute.run import Execution

    t = make_target(databases.target_class(job.target), job.url, job.options)
    await t.open()
    try:
        await t.attach(job.tables)
        ex = Execution(t, job.opts, None)
        ex.share, ex.kept_rows = (job.slot, job.slots), {}
        if ex.render(job.specs):
            await t.prepare(job.opts.workers)
            await ex.warm_up()
        await asyncio.to_thread(live.put, {"slot": job.slot, "ready": True, "answered": ex.answered})
        if not await _go(go, stop, job.opts.stall_seconds):
            return {"slot": job.slot, "error": "stopped"}
        me = psutil.Process()
        cpu0, start = sum(me.cpu_times()[:2]), time.time()
        if ex.runnable:
            await until_done_or_stopped(ex.measured(None), _watch(job, ex, live, stop))
        return {"slot": job.slot, "start": start, "end": time.time(), "records": ex.res.records,
                "answers": ex.kept_rows, "unsupported": ex.res.unsupported, "check_seconds": ex.res.check_seconds,
                "cpu_seconds": sum(me.cpu_times()[:2]) - cpu0}
    finally:
        await t.close()


async def _go(go, stop, bound: float) -> bool:
    """Wait for the driver's go (True), its stop (False), bounded."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if await asyncio.to_thread(go.is_set):
            return True
        if await asyncio.to_thread(stop.is_set):
            return False
        await asyncio.sleep(GO_POLL_S)
    raise TimeoutError(f"no go from the driver within {bound:g} s (--stall-timeout)")


async def _watch(job: QuerySlotJob, ex, live, stop) -> None:
    """Every CHECK_S: the answers so far to the driver (its stall watch), and the stop event."""
    while True:
        await asyncio.sleep(CHECK_S)
        await asyncio.to_thread(live.put, {"slot": job.slot, "answered": ex.answered})
        if await asyncio.to_thread(stop.is_set):
            raise Stopped
