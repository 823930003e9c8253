"""What runs on a Dask worker (phase 2 with --cluster). make_share generates the slot's
exact share of a dataset (group i of N, as `generate --group i --groups N` writes it)
into the worker's local directory, untimed: no data file crosses the network. run_slot
loads its share (that file, or a byte range of a data file every worker sees, cut at
records) into the target with its own asyncio writers, the same pump as `load`. Every second, on the worker's clock, it
samples its cumulative counters, puts them on the run's Dask queue (the driver's live
progress and stall watch) and looks at the run's stop event (set on Ctrl-C or when
another slot failed). It returns its figures as plain data: its timeline, CPU
seconds, when its first batch went out; or the one-line cause it stopped."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from dataclasses import dataclass

import psutil

from tsbench.core.model import Tables

CHECK_S = 0.5            # how often a slot looks at the stop event


@dataclass
class SlotJob:
    slot: int
    target: str                 # registry name
    url: str | None
    options: dict
    tables: Tables
    path: str                   # the data file, at a path every worker sees, or the share make_share made
    fmt: str
    byte_range: tuple[int, int] | None   # None: the whole file
    opts: object                # LoadOptions
    live: str                   # name of the run's Dask queue
    stop: str                   # name of the run's Dask event


@dataclass
class ShareJob:
    slot: int
    groups: int
    spec: object                # DatasetSpec
    fmt: str


def make_share(job: ShareJob) -> dict:
    """The Dask task: group `slot` of `groups` written to a fresh directory of the
    worker's; {"slot", "path", "rows", "values", "sha256"}."""
    from distributed import get_worker

    from tsbench.data.dataset import resolve
    from tsbench.data.generate import generate_file

    d = tempfile.mkdtemp(prefix="tsbench-share-", dir=get_worker().local_directory)
    path = os.path.join(d, f"share{job.slot}.{job.fmt}")
    try:
        m = generate_file(resolve(job.spec), job.fmt, path, "none", job.slot, job.groups, 1, False)
    except BaseException:               # re-raised: only the half-written share is removed first
        shutil.rmtree(d, ignore_errors=True)
        raise
    return {"slot": job.slot, "path": path, "rows": m["rows"], "values": m["values"], "sha256": m["sha256"]}


def remove_shares(paths: list[str]) -> None:
    """On each worker: the share directories of these paths that are there."""
    for p in paths:
        if os.path.basename(os.path.dirname(p)).startswith("tsbench-share-"):
            shutil.rmtree(os.path.dirname(p), ignore_errors=True)


class Stopped(Exception):
    """The driver set the stop event."""


def run_slot(job: SlotJob) -> dict:
    """The Dask task: {"slot", "error" or the figures}."""
    from distributed import Event, Queue

    live, stop = Queue(job.live), Event(job.stop)     # bound to this worker's client, used from threads
    try:
        return asyncio.run(_run(job, live, stop))
    except Stopped:
        return {"slot": job.slot, "error": "stopped"}
    except BaseException as exc:          # sent back as the slot's cause, in one line
        from tsbench.load.pump import first_error

        e = first_error(exc)
        return {"slot": job.slot, "error": str(e) or type(e).__name__}


async def _run(job: SlotJob, live, stop) -> dict:
    from tsbench import databases
    from tsbench.data.batches import BatchReader, csv_layout
    from tsbench.databases.shared.spread import make_target
    from tsbench.load.measures import N_COUNTERS
    from tsbench.load.pump import pump

    t = make_target(databases.target_class(job.target), job.url, job.options)
    await t.open()
    try:
        await t.attach(job.tables)
        layout = csv_layout(job.tables) if job.fmt == "csv" else None
        batches = _Batches(BatchReader(job.path, job.fmt, job.opts.batch_size, "none", layout, job.byte_range))
        counters = [0] * N_COUNTERS
        me = psutil.Process()
        cpu0, t0 = sum(me.cpu_times()[:2]), time.time()
        samples = [[t0] + counters]
        await until_done_or_stopped(pump(t, batches, job.opts, counters, 0),
                                     _watch(job, counters, samples, live, stop))
        samples.append([time.time()] + counters)
        cpu = sum(me.cpu_times()[:2]) - cpu0
        counted = await t.count(job.tables) if type(t).count_is_local else None
        return {"slot": job.slot, "samples": samples, "cpu_seconds": cpu, "first_batch_time": batches.first,
                "totals": counters, "counted": counted}
    finally:
        await t.close()


class _Batches:
    """The reader's batches, noting when the first one was handed to a writer."""

    def __init__(self, reader):
        self.reader, self.first = reader, None

    def __iter__(self):
        for b in self.reader:
            if self.first is None:
                self.first = time.time()
            yield b


async def until_done_or_stopped(work, watch) -> None:
    """Run the pump beside the watch: the pump's end ends the watch; the watch's Stopped
    (or error) cancels the pump."""
    pump, watcher = asyncio.create_task(work), asyncio.create_task(watch)
    done, _ = await asyncio.wait({pump, watcher}, return_when=asyncio.FIRST_COMPLETED)
    first, other = (pump, watcher) if pump in done else (watcher, pump)
    other.cancel()
    await asyncio.gather(other, return_exceptions=True)
    first.result()


async def _watch(job: SlotJob, counters, samples, live, stop) -> None:
    """Per second of the worker's clock: a sample, sent to the driver; every CHECK_S:
    the stop event."""
    next_sample, next_check = samples[0][0] + 1.0, time.time() + CHECK_S
    while True:
        await asyncio.sleep(max(0.0, min(next_sample, next_check) - time.time()))
        now = time.time()
        if now >= next_check:
            next_check = now + CHECK_S
            if await asyncio.to_thread(stop.is_set):
                raise Stopped
        if now >= next_sample:
            samples.append([now] + list(counters))
            next_sample += 1.0
            await asyncio.to_thread(live.put, {"slot": job.slot, "totals": list(counters)})
