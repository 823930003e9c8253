"""What runs on a Dask worker for `stream --cluster` (phase 2's other way in): one client
slot streams its exact share of the entities (group i of N, split again among its
writers), generated on the fly by the C core as a lone `stream` makes it, with the same
writers, pacing and per-second rows (HdrHistogram per writer and second). Every second
of its clock it puts a short line on the run's Dask queue (rows, answers, errors) for
the driver's progress and stall watch, and it looks at the run's stop event twice a
second. It returns its per-second table and totals as plain data."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import psutil

CHECK_S = 0.5


@dataclass
class StreamSlotJob:
    slot: int
    target: str
    url: str | None
    options: dict
    spec: object                 # DatasetSpec of the stream's dataset
    entities: tuple[int, int]    # this slot's share [lo, hi)
    opts: object                 # StreamOptions of this slot (its share of --rate, no cluster)
    live: str
    stop: str


def run_stream_slot(job: StreamSlotJob) -> dict:
    """The Dask task: {"slot", "error"} or the slot's table and totals."""
    from distributed import Event, Queue

    live, stop = Queue(job.live), Event(job.stop)
    try:
        return asyncio.run(_run(job, live, stop))
    except BaseException as exc:          # sent back as the slot's cause, in one line
        from tsbench.load.pump import first_error

        e = first_error(exc)
        return {"slot": job.slot, "error": str(e) or type(e).__name__}


def _writer_shares(lo: int, hi: int, writers: int) -> list[tuple[int, int]]:
    n = min(writers, hi - lo)
    return [(lo + w * (hi - lo) // n, lo + (w + 1) * (hi - lo) // n) for w in range(n)]


async def _run(job: StreamSlotJob, live, stop) -> dict:
    from tsbench import databases
    from tsbench.data.datafile import tables_of
    from tsbench.data.dataset import resolve
    from tsbench.databases.shared.spread import make_target
    from tsbench.stream.churn import churn_of
    from tsbench.stream.run import StreamResult, Writers, epochs_of, stop_after
    from tsbench.stream.source import BatchSource
    from tsbench.stream.stats import Stats

    ds, opts = resolve(job.spec), job.opts
    t = make_target(databases.target_class(job.target), job.url, job.options)
    await t.open()
    try:
        await t.attach(tables_of(ds, 0, 0))
        shares = _writer_shares(*job.entities, opts.writers)
        epochs = epochs_of(ds, opts)
        churn = churn_of(ds, opts.churn)
        sources = [BatchSource(ds, type(t).format, lo, hi, epochs, opts.batch_size, churn) for lo, hi in shares]
        stats = Stats(len(shares), [(hi - lo) * len(ds.schema.series) for lo, hi in shares])
        res = StreamResult(type(t).name, t.url, len(shares))
        me = psutil.Process()
        cpu0, wall0, t0 = sum(me.cpu_times()[:2]), time.time(), time.perf_counter()
        run = Writers(t, sources, stats, opts, res, t0)
        side = [asyncio.create_task(_tick(job, stats, t0, live)), asyncio.create_task(_watch(run, stop))]
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(run.all())
                if opts.duration is not None:
                    tg.create_task(stop_after(run.stop, opts.duration))
        finally:
            for task in side:
                task.cancel()
        seconds = time.perf_counter() - t0
        stats.roll(stats.next_second)
        if side[1].done() and not side[1].cancelled() and side[1].result():
            return {"slot": job.slot, "error": "stopped"}
        return {"slot": job.slot, "t0": wall0, "seconds": seconds, "table": stats.table, "writers": len(shares),
                "errors": stats.errors, "backoffs": stats.backoffs, "first_error": res.first_error,
                "failure": run.failure[0] if run.failure else None, "epoch": max(s.epoch for s in sources),
                "cpu_seconds": sum(me.cpu_times()[:2]) - cpu0}
    finally:
        await t.close()


async def _tick(job: StreamSlotJob, stats, t0: float, live) -> None:
    """Every second of this slot: the second's rows, and the answers so far, to the driver."""
    while True:
        await asyncio.sleep(max(0.0, t0 + stats.next_second + 1 - time.perf_counter()))
        rows = stats.roll(stats.next_second)
        await asyncio.to_thread(live.put, {"slot": job.slot, "rows": sum(r["rows"] for r in rows),
                                           "answers": stats.answers, "errors": stats.errors})


async def _watch(run, stop) -> bool:
    """True once the driver set the stop event (the writers are told to stop)."""
    while not run.stop.is_set():
        await asyncio.sleep(CHECK_S)
        if await asyncio.to_thread(stop.is_set):
            run.stop.set()
            return True
    return False
