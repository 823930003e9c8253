"""The driver's side of `stream --cluster` (phase 2's other way in): one slot per Dask
worker streams its group of the entities (cluster/stream_slot.py), with its share of
--rate; the driver creates the tables, prints a line a second from the slots' live
counts, watches for a stall, a slot's failure or its worker leaving (as drive.Slots does
for a load), then merges the per-second tables on its clock (each slot's seconds moved
by its start on the driver's clock, rounded to the second; histograms stay per writer and
second, so they merge by adding) and verifies the count once."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
import uuid

from tsbench.cluster.drive import Slots, maybe_cluster, one_process_refused
from tsbench.cluster.stream_slot import StreamSlotJob, run_stream_slot
from tsbench.core.errors import UserError
from tsbench.core.watch import bounded, watchdog
from tsbench.data.datafile import tables_of
from tsbench.databases.shared.spread import target_options
from tsbench.load.measures import CpuSpent
from tsbench.stream.run import StreamError, StreamResult, timed_then_verified
from tsbench.stream.stats import merged


async def stream(target, ds, opts, server_pids: list[int] | None = None) -> StreamResult:
    """Create the tables, stream from every slot, verify. Raises StreamError (figures in exc.result)."""
    opts.check()
    cls = type(target)
    one_process_refused(cls)
    tables = tables_of(ds, 0, 0)
    res = StreamResult(cls.name, target.url, 0, count_unit=cls.count_unit)
    async with maybe_cluster(opts.cluster, cls.name) as cluster:
        if ds.entities < cluster.slots:
            raise UserError(f"stream --cluster: {ds.entities} entities for {cluster.slots} client slots; "
                            "each slot needs one at least (fewer workers, or a larger --scale)")
        await bounded(f"create in {cls.name}", opts.stall_seconds, target.create(tables, opts.if_exists))
        return await timed_then_verified(_timed(cluster, target, ds, opts, res, server_pids), target, ds, tables,
                                         opts, res)


def _jobs(cluster, target, ds, opts) -> list[StreamSlotJob]:
    token = uuid.uuid4().hex[:12]
    jobs = []
    for i in range(cluster.slots):
        lo, hi = ds.group_range(i, cluster.slots)
        mine = dataclasses.replace(opts, cluster=None, progress=False,
                                   rate=opts.rate * (hi - lo) / ds.entities if opts.rate else None)
        jobs.append(StreamSlotJob(i, type(target).name, target.url, target_options(target), ds.spec, (lo, hi),
                                  mine, f"tsbench-live-{token}", f"tsbench-stop-{token}"))
    return jobs


class _Live:
    """The slots' live lines: answers for the stall watch, rows for a line a second."""

    def __init__(self, slots: int):
        self.answers, self.errors, self.rows = [0] * slots, [0] * slots, 0

    def take(self, i: int, msg: dict) -> None:
        self.answers[i], self.errors[i] = msg["answers"], msg["errors"]
        self.rows += msg["rows"]


async def _timed(cluster, target, ds, opts, res: StreamResult, server_pids) -> int:
    """Every slot streams; their figures merged into res. Returns the furthest epoch reached."""
    jobs = _jobs(cluster, target, ds, opts)
    live = _Live(len(jobs))
    cpu = CpuSpent(server_pids)
    t0, wall0 = time.perf_counter(), time.time()
    ticker = asyncio.create_task(_print_seconds(live, t0, res.target, opts.progress))
    try:
        async with watchdog(f"stream into {res.target}", progress=lambda: sum(live.answers),
                            stall_seconds=opts.stall_seconds):
            results = await Slots(cluster, run_stream_slot, jobs, jobs[0].live.removeprefix("tsbench-live-"),
                                  live.take).run()
    finally:
        ticker.cancel()
        res.seconds = time.perf_counter() - t0
        cpu.into(res)
    _merge(cluster, results, wall0, res)
    failed = next((r["failure"] for r in results if r["failure"]), None)
    if failed:
        raise StreamError(f"stream into {res.target}: {failed}")
    return max(r["epoch"] for r in results)


def _merge(cluster, results: list[dict], wall0: float, res: StreamResult) -> None:
    """The slots' per-second rows on the driver's seconds (writers numbered across slots,
    a slot column added), the totals, the latency of every batch from the added histograms."""
    rows, clients, first = [], [], 0
    for r, addr in zip(results, cluster.workers):
        start = r["t0"] + cluster.shift(addr) - wall0            # the slot's start on the driver's clock
        for row in r["table"]:
            rows.append({**row, "second": row["second"] + round(start), "writer": first + row["writer"],
                         "slot": r["slot"]})
        first += r["writers"]
        f = cluster.workers[addr]
        clients.append({"slot": r["slot"], "worker": addr, "host": f["hostname"], "writers": r["writers"],
                        "rows": sum(x["rows"] for x in r["table"]), "seconds": round(r["seconds"], 3),
                        "cpu_seconds": round(r["cpu_seconds"], 3), "start_s": round(start, 3),
                        "clock_offset_s": round(cluster.shift(addr), 6),
                        **{k: f[k] for k in ("cpu_model", "cores", "memory_bytes", "tsbench", "build")}})
    rows.sort(key=lambda x: (x["second"], x["writer"]))
    res.table, res.clients, res.writers = rows, clients, first
    res.client_cpu_seconds += sum(r["cpu_seconds"] for r in results)
    for k in ("rows", "values", "bytes", "batches"):
        setattr(res, k, sum(x[k] for x in rows))
    res.errors, res.backoffs = sum(r["errors"] for r in results), sum(r["backoffs"] for r in results)
    res.first_error = next((r["first_error"] for r in results if r["first_error"]), "")
    h = merged([x["latency_hdr"] for x in rows if x["latency_hdr"]])
    if h.get_total_count():
        res.latency_ms = {f"p{k}": h.get_value_at_percentile(v) / 1e3
                          for k, v in (("50", 50), ("90", 90), ("99", 99), ("999", 99.9))}
        res.latency_ms["max"] = h.get_max_value() / 1e3


async def _print_seconds(live: _Live, t0: float, what: str, show: bool) -> None:
    """A line a second on stderr: the rows the slots said they had answered since the last."""
    seen, k = 0, 1
    while show:
        await asyncio.sleep(max(0.0, t0 + k - time.perf_counter()))
        print(f"stream {what} {k:>4} s: {live.rows - seen:>10,} rows/s (all slots)  errors {sum(live.errors)}",
              file=sys.stderr, flush=True)
        seen, k = live.rows, k + 1
