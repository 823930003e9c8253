"""Phase 2: load a data file into a target and prove nothing was lost.

N asyncio workers keep N batches in flight (optionally in several processes,
each with its own workers over a byte range of the file). A push-back from
the server (Retryable) is retried after a jittered exponential backoff; a
Fatal stops the load with the server's own words. A sampler records rows,
values and bytes acknowledged every second. After the timed part: verify the
target's count against the generated count, compact (untimed) and measure
disk bytes. A target that loads by remote-write gets its request bodies built
before the timed part, once per data file and batch size (data/bodies.py)."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import socket
import sys
import time
from dataclasses import dataclass, field

from tsbench.core import aiorun
from tsbench.core.errors import Fatal, LoadError, Retryable, UserError
from tsbench.core.model import Tables
from tsbench.core.options import options_fields
from tsbench.core.watch import Stalled, bounded, watchdog
from tsbench.data import bodies
from tsbench.data.batches import BatchReader, byte_ranges, csv_layout
from tsbench.data.datafile import DataFile
from tsbench.databases.shared.backoff import BackoffRule
from tsbench.databases.shared.server import allocated_bytes
from tsbench.databases.shared.spread import make_target, target_options
from tsbench.databases.shared.target import Target
from tsbench.load.measures import N_COUNTERS, CpuSpent, batches_answered, count_settled, counter_totals
from tsbench.load.options import LoadCommand
from tsbench.load.pump import first_error, pump
from tsbench.load.verify import check

COMPACT_STALLS = 15          # compaction may take this many --stall-timeout bounds (30 min at the default)


@dataclass
@options_fields(LoadCommand, rename={"stall_timeout": "stall_seconds"})
class LoadOptions(BackoffRule):
    """A load's options: LoadCommand's fields (load/options.py), stall_timeout as stall_seconds."""

    progress: bool = True

    def check(self) -> None:
        if self.workers < 1:
            raise UserError(f"--workers: must be at least 1, got {self.workers}")
        if self.batch_size < 1:
            raise UserError(f"--batch-size: must be at least 1 row, got {self.batch_size}")
        if self.processes < 1:
            raise UserError(f"--processes: must be at least 1, got {self.processes}")
        if self.cluster and self.processes > 1:
            raise UserError("--processes: with --cluster each Dask worker is one client process; "
                            "start more workers instead")
        if self.stall_seconds <= 0:
            raise UserError(f"--stall-timeout: must be positive seconds, got {self.stall_seconds:g}")


@dataclass
class LoadResult:
    target: str
    url: str | None
    rows: int = 0
    values: int = 0
    bytes: int = 0
    batches: int = 0
    seconds: float = 0.0
    client_cpu_seconds: float = 0.0
    server_cpu_seconds: float | None = None
    backoffs: int = 0
    backoff_seconds: float = 0.0
    expected: int = 0
    counted: int | None = None
    count_unit: str = "rows"
    verified: bool | None = None
    value_checks: list = field(default_factory=list)  # verify.Verdict.values: per table, field and kind
    compact_seconds: float | None = None
    disk: dict = field(default_factory=dict)        # every figure by name, in bytes
    datadir_bytes: int | None = None                 # allocated blocks of the local server's data dir
    own_disk_bytes: int | None = None                # the database's own size figure (its own_disk_figure)
    timeline: list = field(default_factory=list)
    clients: list = field(default_factory=list)      # --cluster: each slot's worker, host and figures
    counted_by_slots: int | None = None              # --cluster into a target whose count is local
    bodies: dict = field(default_factory=dict)      # request bodies built before the timed part (untimed)
    status: str = "ok"
    reason: str = ""

    def rate(self, amount: float) -> float | None:
        """amount per second of the timed load (None before it ran)."""
        return round(amount / self.seconds, 1) if self.seconds else None

    def summary(self) -> dict:
        s = self.seconds or float("nan")
        return {
            "target": self.target, "url": self.url, "status": self.status, "reason": self.reason,
            "rows": self.rows, "values": self.values, "bytes": self.bytes, "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "rows_per_s": self.rate(self.rows),
            "values_per_s": self.rate(self.values),
            "mb_per_s": round(self.bytes / s / 1e6, 2) if self.seconds else None,
            "client_cpu_seconds": round(self.client_cpu_seconds, 3),
            "client_cpu_s_per_mb": round(self.client_cpu_seconds / (self.bytes / 1e6), 4) if self.bytes else None,
            "server_cpu_seconds": None if self.server_cpu_seconds is None else round(self.server_cpu_seconds, 3),
            "backoffs": self.backoffs, "backoff_seconds": round(self.backoff_seconds, 3),
            "verify": {"unit": self.count_unit, "expected": self.expected, "counted": self.counted,
                       "ok": self.verified, "values": self.value_checks},
            "compact_seconds": None if self.compact_seconds is None else round(self.compact_seconds, 3),
            "disk": self.disk, "timeline": self.timeline,
            "bodies": self.bodies,
            "clients": len(self.clients) or 1,
            "client_hosts": sorted({c["host"] for c in self.clients}) or [socket.gethostname()],
            "client_slots": self.clients,
        }


# ---- one process: workers over a batch iterator ---------------------------------------------

def _child(target_cls, url, options, df_path, fmt, compression, tables, rng_, opts, counters, slot, errq,
           bodies_path=None):
    """A load process: its own target connection and workers over one byte range (of the
    pre-built bodies' companion, if any)."""
    asyncio.events._set_running_loop(None)   # forked from inside the parent's running loop

    async def go():
        t = make_target(target_cls, url, options)
        await t.open()
        try:
            await t.attach(tables)
            await pump(t, batch_reader(bodies_path, df_path, fmt, compression, tables, opts.batch_size, rng_),
                       opts, counters, slot)
        finally:
            await t.close()
    try:
        aiorun.run(go())
    except BaseException as exc:       # reported to the parent in one line
        e = first_error(exc)
        errq.put(str(e) or type(e).__name__)
        os._exit(1)
    os._exit(0)


def batch_reader(bodies_path, df_path, fmt: str, compression: str, tables: Tables, batch_rows: int,
                 byte_range: tuple[int, int] | None = None):
    """The batches a load process sends: the pre-built bodies' (bodies_path) or the data file's."""
    if bodies_path is not None:
        return bodies.BodyReader(bodies_path, byte_range)
    layout = csv_layout(tables) if fmt == "csv" else None
    return BatchReader(df_path, fmt, batch_rows, compression, layout, byte_range)


# ---- the phase ------------------------------------------------------------------------------

class _Sampler:
    """Every second: cumulative rows, values, bytes and backoffs, and the rates."""

    def __init__(self, counters, processes: int, total_rows: int, label: str, show: bool):
        self.c, self.p = counters, processes
        self.timeline: list[dict] = []
        self.t0 = time.perf_counter()
        self.bar = None
        if show and sys.stderr.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                                TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), transient=True)
            self.bar.start()
            self.task = self.bar.add_task(label, total=max(total_rows, 1), rate="")

    def totals(self) -> list[int]:
        return counter_totals(self.c, self.p)

    def sample(self) -> None:
        t = time.perf_counter() - self.t0
        rows, values, nbytes, batches, backoffs, _ = self.totals()
        prev = self.timeline[-1] if self.timeline else {"t": 0.0, "rows": 0, "values": 0, "bytes": 0}
        dt = max(t - prev["t"], 1e-9)
        rec = {"t": round(t, 3), "rows": rows, "values": values, "bytes": nbytes, "batches": batches,
               "backoffs": backoffs, "rows_per_s": round((rows - prev["rows"]) / dt, 1),
               "values_per_s": round((values - prev["values"]) / dt, 1),
               "mb_per_s": round((nbytes - prev["bytes"]) / dt / 1e6, 3)}
        self.timeline.append(rec)
        if self.bar is not None:
            self.bar.update(self.task, completed=rows,
                            rate=f"{rec['rows_per_s']:,.0f} rows/s {rec['mb_per_s']:,.1f} MB/s")

    async def run(self) -> None:
        while True:
            await asyncio.sleep(1.0 - ((time.perf_counter() - self.t0) % 1.0))
            self.sample()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


async def load(target: Target, df: DataFile, opts: LoadOptions, datadir: str | None = None,
               server_pids: list[int] | None = None) -> LoadResult:
    """Create, load (timed), verify, compact and measure. Raises LoadError on failure
    (the partial result is in exc.result). With --cluster the caller runs
    tsbench/cluster/loading.py's load instead: the same steps, its slots as the feeder."""
    if opts.cluster:
        raise ValueError("load.run.load() loads from this machine: --cluster goes to tsbench.cluster.loading.load()")
    res = new_result(target, df, opts)
    with failing(res):
        tables = await created_and_timed(target, df, opts, res, server_pids, Processes(target, df, opts))
        await settled(target, df, tables, opts, res, datadir)
    return res


def new_result(target: Target, df: DataFile, opts: LoadOptions) -> LoadResult:
    """The options and the target's fit to the data checked; the load's empty result."""
    opts.check()
    cls = type(target)
    _check_fit(cls, df, opts)
    return LoadResult(cls.name, target.url, count_unit=cls.count_unit)


@contextlib.contextmanager
def failing(res: LoadResult):
    """A LoadError, or a Fatal or Retryable (create, count or compact refused), leaves the
    block as one LoadError that carries the partial result."""
    try:
        yield
    except (LoadError, Fatal, Retryable) as exc:
        err = exc if isinstance(exc, LoadError) else LoadError(str(exc))
        res.status, res.reason = "failed", str(err)
        err.result = res
        raise err from None


async def created_and_timed(target: Target, df: DataFile, opts: LoadOptions, res: LoadResult,
                            server_pids: list[int] | None, feeder) -> Tables:
    """The tables created, then the timed part with `feeder` writing the batches; returns the tables."""
    tables: Tables = df.tables()
    res.expected = df.rows if type(target).count_unit == "rows" else df.values
    await bounded(f"create in {res.target}", opts.stall_seconds, target.create(tables, opts.if_exists))
    await _timed(df.rows, tables, opts, res, server_pids, feeder)
    return tables


def _check_fit(cls: type[Target], df: DataFile, opts: LoadOptions) -> None:
    if opts.processes > 1 and not cls.multiprocess:
        raise UserError(f"--processes: target {cls.name} loads from one process only")
    if opts.cluster and not (cls.multiprocess or cls.count_is_local):
        raise UserError(f"--cluster: target {cls.name} loads from one process only")
    if opts.cluster and df.compression != "none":
        raise UserError("--cluster needs an uncompressed data file (each worker reads its byte range)")
    cls.refuse_verify(opts.verify)
    if not cls.accepts(df.format):
        raise UserError(f"target {cls.name} loads {cls.format} data; {df.path} is {df.format} "
                        f"(generate it with --format {cls.format})")


class Processes:
    """The timed part's writers without --cluster: workers in this process, or in
    --processes forked ones, each over its byte range (a feeder: parts, feed, into)."""

    def __init__(self, target: Target, df: DataFile, opts: LoadOptions):
        self.target, self.df, self.opts = target, df, opts
        self.parts = opts.processes            # rows of the load's counters
        self.bodies, self.built = None, {}
        if target.remote_write is not None:
            self._prebuild(target.remote_write)

    def _prebuild(self, encoder) -> None:
        """Untimed: a remote-write target's bodies, built once per data file and batch size
        (data/bodies.py); what it cost goes into the result beside the timed figures."""
        t, cpu = time.perf_counter(), time.process_time()
        self.bodies, built = bodies.prebuilt(self.df, self.opts.batch_size, encoder)
        self.built = {"format": bodies.BODY_FORMAT, "file": str(self.bodies), "built": built,
                      "seconds": round(time.perf_counter() - t, 3), "cpu_seconds": round(time.process_time() - cpu, 3),
                      "bytes": self.bodies.stat().st_size}

    async def feed(self, tables: Tables, counters) -> None:
        """Every batch written and acknowledged; counters follow them live."""
        df, opts = self.df, self.opts
        if opts.processes == 1:
            reader = batch_reader(self.bodies, df.path, df.format, df.compression, tables, opts.batch_size)
            await pump(self.target, reader, opts, counters, 0)
        else:
            await _load_processes(self.target, df, tables, opts, counters, self.bodies)

    def into(self, res: LoadResult) -> None:
        """The sampler's figures are the whole load's; the bodies' build (untimed) beside them."""
        res.bodies = self.built


async def _timed(rows: int, tables: Tables, opts: LoadOptions, res: LoadResult, server_pids: list[int] | None,
                 feeder) -> None:
    """The timed part: every batch acknowledged, with the per-second timeline and CPU seconds."""
    counters = mp.RawArray("q", N_COUNTERS * feeder.parts)
    sampler = _Sampler(counters, feeder.parts, rows, f"load {res.target}", opts.progress)
    cpu = CpuSpent(server_pids)
    ticker = asyncio.create_task(sampler.run())
    answered = batches_answered(counters, feeder.parts)
    try:
        async with watchdog(f"load into {res.target}", progress=answered, stall_seconds=opts.stall_seconds):
            await feeder.feed(tables, counters)
    except Stalled:
        raise
    except BaseException as exc:
        e = first_error(exc)
        if isinstance(e, (Fatal, Retryable, LoadError)):
            raise LoadError(f"load into {res.target} failed: {e}") from None
        raise e from None
    finally:
        ticker.cancel()
        res.seconds = time.perf_counter() - sampler.t0
        cpu.into(res)
        sampler.sample()
        sampler.close()
        res.timeline = sampler.timeline
        res.rows, res.values, res.bytes, res.batches, res.backoffs, us = sampler.totals()
        res.backoff_seconds = us / 1e6
        feeder.into(res)


async def settled(target: Target, df: DataFile, tables: Tables, opts: LoadOptions, res: LoadResult,
                  datadir: str | None) -> None:
    """Untimed: flush, verify the count and then the values (verify.check, as `tsbench
    verify`), compact, and measure the disk figures; each step bounded (compaction by
    COMPACT_STALLS stall bounds)."""
    what, bound = f"{res.target}", opts.stall_seconds
    await bounded(f"flush of {what}", bound, target.flush())
    if opts.verify:
        res.counted = res.counted_by_slots if res.counted_by_slots is not None else \
            await bounded(f"count in {what}", bound + type(target).settle_seconds,
                          count_settled(target, tables, res.expected))
        res.verified = res.counted == res.expected
        if not res.verified:
            raise LoadError(f"verify failed: {res.target} holds {res.counted:,} {res.count_unit}, "
                            f"the data file has {res.expected:,}")
        if type(target).keeps_data:
            verdict = await bounded(f"value check in {what}", bound, check(target, df, tables, counts=False))
            res.verified, res.value_checks = verdict.ok, verdict.values
            if not verdict.ok:
                raise LoadError(f"verify failed in {res.target}: {verdict.first_difference()}")
    if opts.compact:
        t = time.perf_counter()
        await bounded(f"compaction of {what}", COMPACT_STALLS * bound, target.compact())
        res.compact_seconds = time.perf_counter() - t
    res.disk = await bounded(f"disk figures of {what}", bound, target.disk_bytes())
    res.own_disk_bytes = res.disk.get(type(target).own_disk_figure) if type(target).own_disk_figure else None
    if datadir:
        res.datadir_bytes = res.disk["datadir_allocated_bytes"] = allocated_bytes(datadir)


async def _load_processes(target: Target, df: DataFile, tables: Tables, opts: LoadOptions, counters,
                          bodies_path=None) -> None:
    if df.compression != "none" and bodies_path is None:
        raise UserError("--processes > 1 needs an uncompressed data file")
    ctx = mp.get_context("fork")
    errq = ctx.SimpleQueue()
    procs = []
    ranges = bodies.record_ranges(bodies_path, opts.processes) if bodies_path else byte_ranges(df.path, opts.processes)
    for slot, rng_ in enumerate(ranges):
        member = getattr(type(target), "member", type(target))        # a spread is made again in the child
        p = ctx.Process(target=_child, args=(member, target.url, target_options(target), df.path, df.format,
                                             df.compression, tables, rng_, opts, counters, slot, errq,
                                             bodies_path))
        p.start()
        procs.append(p)
    try:
        while any(p.is_alive() for p in procs):
            await asyncio.sleep(0.05)
            if any(p.exitcode not in (None, 0) for p in procs):
                break
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join()
    if any(p.exitcode != 0 for p in procs):
        msg = errq.get() if not errq.empty() else f"a load process exited with code {procs[0].exitcode}"
        raise LoadError(msg)
