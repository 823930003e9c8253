"""Stream: the writers, the per-second ticker and the end (phase 2's other way in). Each
writer owns a share of the entities and a BatchSource; it sends a batch when its Pacer
says, through the load's backoff rule (write_with_backoff: Retryable push-back is retried
after a jittered exponential pause, for at most give_up_after seconds). A refusal (Fatal,
or push-back past that bound) is an error: the batch is dropped and counted, and the run
stops once the errors exceed max_errors. The run ends after `duration` seconds, or when
every writer has sent its `points_per_series` epochs; then the count is verified against
the points answered (not when a refused batch may sit in the database in part)."""

from __future__ import annotations

import asyncio
import importlib
import random
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tsbench.core.bounds import check_time
from tsbench.core.errors import Fatal, LoadError, UserError
from tsbench.core.model import Tables
from tsbench.core.options import build, options_fields
from tsbench.core.timeutil import format_time
from tsbench.core.watch import Stalled, bounded, watchdog
from tsbench.data.datafile import tables_of
from tsbench.data.dataset import Dataset
from tsbench.databases.shared.backoff import BackoffRule, write_with_backoff
from tsbench.databases.shared.target import Target
from tsbench.load.measures import CpuSpent, count_settled
from tsbench.load.pump import first_error
from tsbench.stream.options import StreamCommand
from tsbench.stream.churn import churn_of, parse_churn
from tsbench.stream.pace import Pacer
from tsbench.stream.source import BatchSource
from tsbench.stream.stats import Stats

if TYPE_CHECKING:      # what a run asks for only (queries, freshness, sinks) is imported when it does
    from tsbench.stream.fresh import Freshness
    from tsbench.stream.mixed import Queries

MAX_TIME_NS = 2 ** 62                    # a run without points_per_series ends by its duration, well before


class StreamError(UserError):
    """A stream that stopped on errors or failed its count; the figures so far in .result."""


@dataclass
@options_fields(StreamCommand, rename={"stall_timeout": "stall_seconds"}, skip=("start", "time"))
class StreamOptions(BackoffRule):
    """A stream's options: StreamCommand's fields (stream/options.py), stall_timeout as
    stall_seconds; queries and query_ratio as the run takes them (not the file's)."""

    duration: float | None = None        # seconds (none: points_per_series ends the run)
    progress: bool = True
    queries: list | None = None          # QuerySpecs run while writing (mixed.py)
    query_ratio: tuple[int, int] | None = None  # (write batches, queries): queries due by the writes instead

    def check(self) -> None:
        if self.duration is None and self.points_per_series is None:
            raise UserError("stream: give --duration SECONDS or --points-per-series N (or both: the first reached)")
        if self.rate is not None and (self.delay or self.target_latency):
            raise UserError("stream: --rate (open loop) and --delay or --target-latency (closed loop) "
                            "do not go together")
        if self.target_latency is not None and not self.target_latency > 0:
            raise UserError(f"--target-latency: must be positive, got {self.target_latency:g}")
        for name, v in (("--writers", self.writers), ("--batch-size", self.batch_size)):
            if v < 1:
                raise UserError(f"{name}: must be at least 1, got {v}")
        for name, v in (("--rate", self.rate), ("--duration", self.duration)):
            if v is not None and not v > 0:
                raise UserError(f"{name}: must be positive, got {v:g}")
        if self.delay < 0 or self.max_errors < 0:
            raise UserError("--delay and --max-errors: must not be negative")
        if self.report_url is not None:
            from tsbench.stream.report import check_url

            check_url(self.report_url)
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise UserError(f"--metrics-port: a TCP port (0: a free one), got {self.metrics_port}")
        if not self.freshness_every > 0:
            raise UserError(f"--freshness-every: must be positive, got {self.freshness_every:g}")
        if self.queries is not None and not (self.query_rate > 0 and self.query_window > 0 and self.query_workers >= 1):
            raise UserError("--query-rate and --query-window: must be positive; --query-workers: at least 1")
        if self.query_ratio is not None and self.queries is None:
            raise UserError("--ratio: the queries to mix in come from --queries (a queries file)")
        if self.cluster:
            self._check_cluster()
        if self.churn is not None:
            parse_churn(self.churn)

    def _check_cluster(self) -> None:
        """What runs from one client only is refused with --cluster, by name."""
        from tsbench.core.clusteraddress import parse

        parse(self.cluster)
        one = [name for name, on in (("--queries", self.queries is not None), ("--freshness", self.freshness),
                                     ("--report-url", self.report_url), ("--metrics-port", self.metrics_port is not None))
               if on]
        if one:
            raise UserError(f"stream --cluster: {', '.join(one)} run from one client; not with --cluster")


def stream_options(decl, queries: list | None, progress: bool = True) -> StreamOptions:
    """An experiment's stream section (StreamSettings) as options; the table is made anew."""
    settings = decl.model_dump(exclude={"start", "time", "queries", "query_ratio"})
    return build(StreamOptions, settings, if_exists="drop", progress=progress, queries=queries,
                 query_ratio=decl.ratio())


@dataclass
class StreamResult:
    target: str
    url: str | None
    writers: int = 0
    seconds: float = 0.0
    rows: int = 0
    values: int = 0
    bytes: int = 0
    batches: int = 0
    errors: int = 0
    backoffs: int = 0
    first_error: str = ""
    client_cpu_seconds: float = 0.0
    server_cpu_seconds: float | None = None
    latency_ms: dict = field(default_factory=dict)   # p50, p90, p99, p999, max of every answered batch
    count_unit: str = "rows"
    expected: int = 0
    counted: int | None = None
    verified: bool | None = None
    verify_note: str = ""
    report_note: str = ""                            # pushes to --report-url that failed, if any
    table: list = field(default_factory=list)        # per second and writer (stats.py)
    query_table: list = field(default_factory=list)  # per second and query type (mixed.py)
    freshness_table: list = field(default_factory=list)  # per second: the probes' figures (fresh.py)
    freshness: dict = field(default_factory=dict)    # the freshness probe's totals
    clients: list = field(default_factory=list)      # --cluster: each slot's worker, host and figures
    queries: dict = field(default_factory=dict)      # queries run while writing: count, errors, latency, unsupported
    status: str = "ok"
    reason: str = ""

    def seconds_rows(self) -> list[dict]:
        """The per-second table: a row per second and writer (op write), per second and
        query type (op query), per second of freshness probes (op freshness)."""
        return ([{"op": "write", **r} for r in self.table] + [{"op": "query", **r} for r in self.query_table]
                + [{"op": "freshness", **r} for r in self.freshness_table])

    def summary(self) -> dict:
        s = self.seconds or float("nan")
        return {"target": self.target, "url": self.url, "status": self.status, "reason": self.reason,
                "writers": self.writers, "seconds": round(self.seconds, 3), "rows": self.rows, "values": self.values,
                "bytes": self.bytes, "batches": self.batches,
                "rows_per_s": round(self.rows / s, 1) if self.seconds else None,
                "values_per_s": round(self.values / s, 1) if self.seconds else None,
                "errors": self.errors, "backoffs": self.backoffs, "first_error": self.first_error,
                "client_cpu_seconds": round(self.client_cpu_seconds, 3),
                "server_cpu_seconds": None if self.server_cpu_seconds is None else round(self.server_cpu_seconds, 3),
                "latency_ms": self.latency_ms,
                "verify": {"unit": self.count_unit, "expected": self.expected, "counted": self.counted,
                           "ok": self.verified, "note": self.verify_note}, "report_note": self.report_note,
                "queries": self.queries, "freshness": self.freshness,
                "clients": len(self.clients) or 1,
                "client_hosts": sorted({c["host"] for c in self.clients}) or [socket.gethostname()],
                "client_slots": self.clients}


def start_now(interval: str | None) -> str:
    """`--start now`: the current time, down to the interval (10 s by default), RFC 3339."""
    from tsbench.core.timeutil import format_time, parse_duration

    step = parse_duration(interval, "--interval") if interval else 10 * 10**9
    return format_time(time.time_ns() // step * step)


def epochs_of(ds: Dataset, opts: StreamOptions) -> int:
    """The epochs a writer may send: --points-per-series, else up to MAX_TIME_NS (the
    duration ends the run well before); their times must be int64 nanoseconds."""
    if opts.points_per_series is not None:
        check_time(ds.start_ns + (opts.points_per_series + ds.schema.faults.max_lateness) * ds.interval_ns,
                   "--points-per-series")
        return opts.points_per_series
    if ds.start_ns >= MAX_TIME_NS:
        raise UserError(f"--start: a stream by --duration writes up to {format_time(MAX_TIME_NS)}; start before it")
    return (MAX_TIME_NS - ds.start_ns) // ds.interval_ns


async def stream(target: Target, ds: Dataset, opts: StreamOptions, server_pids: list[int] | None = None) -> StreamResult:
    """Create the tables, stream, verify. Raises StreamError (the figures in exc.result)."""
    opts.check()
    cls = type(target)
    cls.refuse_verify(opts.verify)
    if opts.freshness:
        from tsbench.stream.fresh import check_probe

        check_probe(cls, ds)
    fmt = cls.format
    writers = min(opts.writers, ds.entities)          # a writer owns at least one entity
    shares = [ds.group_range(w, writers) for w in range(writers)]
    tables = tables_of(ds, 0, 0)
    epochs = epochs_of(ds, opts)
    churn = churn_of(ds, opts.churn)
    sources = [BatchSource(ds, fmt, lo, hi, epochs, opts.batch_size, churn) for lo, hi in shares]
    stats = Stats(writers, [(hi - lo) * len(ds.schema.series) for lo, hi in shares])
    res = StreamResult(cls.name, target.url, writers, count_unit=cls.count_unit)
    await bounded(f"create in {cls.name}", opts.stall_seconds, target.create(tables, opts.if_exists))

    async def timed() -> int:
        await _timed(target, ds, sources, stats, opts, res, server_pids)
        return max(s.epoch for s in sources)
    return await timed_then_verified(timed(), target, ds, tables, opts, res)


async def timed_then_verified(timed, target, ds: Dataset, tables: Tables, opts: StreamOptions,
                              res: StreamResult) -> StreamResult:
    """The timed part (awaited: the furthest epoch a writer reached), then the count unless a
    refused batch may sit in the database in part; a StreamError carries res."""
    try:
        epoch = await timed
        if res.errors == 0 and opts.verify:
            await verify_count(target, ds, tables, epoch, opts, res)
        elif opts.verify:
            res.verify_note = f"not checked: {res.errors} refused batches may be in the database in part"
    except StreamError as exc:
        res.status, res.reason = "failed", str(exc)
        exc.result = res
        raise
    return res


class Writers:
    """The writers of one run and what they share: the stop, the stats, the first failure."""

    def __init__(self, target, sources, stats: Stats, opts: StreamOptions, res: StreamResult, t0: float):
        self.target, self.sources, self.stats, self.opts, self.res, self.t0 = target, sources, stats, opts, res, t0
        self.stop = asyncio.Event()
        self.failure: list[str] = []
        self.probe: Freshness | None = None
        self.listeners: list = []         # called with (writer, its rows answered, time) at each answered batch

    async def all(self) -> None:
        try:
            async with asyncio.TaskGroup() as tg:
                for w in range(len(self.sources)):
                    tg.create_task(self.one(w))
        finally:
            self.stop.set()                               # the duration's timer ends with them

    async def one(self, w: int) -> None:
        opts, stats, src, rng = self.opts, self.stats, self.sources[w], random.Random(w)
        pacer = Pacer(self.t0, opts.rate, len(self.sources), w, opts.batch_size, opts.delay, opts.target_latency)
        while not self.stop.is_set():
            b = src.next()
            if b is None:
                return
            now = time.perf_counter()
            due = pacer.due(now)
            if due > now and await _stopped_within(self.stop, due - now):
                return
            if due <= now and await self._yielded():
                return
            start = due if opts.rate else time.perf_counter()
            try:
                await write_with_backoff(self.target, b, opts, rng, lambda _pause: stats.backoff(w))
            except (Fatal, LoadError) as exc:
                self.refused(w, exc)
                pacer.sent(b.rows, time.perf_counter())
                continue
            done = time.perf_counter()
            stats.answered(w, done - start, b.rows, b.values, b.nbytes, src.created)
            for listener in self.listeners:
                listener(w, stats.rows_total[w], done)
            pacer.sent(b.rows, done, done - start)
            if not opts.rate:
                stats.delay(w, pacer.delay)

    async def _yielded(self) -> bool:
        """A batch due at once (behind the schedule, or as fast as answered): the event loop
        runs first, so the duration's timer, the ticker and a signal's cancellation are
        served even when the target's write never suspends (null); past the duration (its
        own clock, not only the timer) the writer stops. True: stop."""
        await asyncio.sleep(0)
        if self.opts.duration is not None and time.perf_counter() - self.t0 >= self.opts.duration:
            self.stop.set()
        return self.stop.is_set()

    def refused(self, w: int, exc: BaseException) -> None:
        """A refused batch: dropped and counted; past max_errors the run stops."""
        self.stats.error(w)
        self.res.first_error = self.res.first_error or str(exc)
        if self.probe is not None:
            self.probe.stop_probing("stopped at the first refused batch: the epochs after it are incomplete")
        if self.stats.errors > self.opts.max_errors and not self.failure:
            self.failure.append(f"stopped after {self.stats.errors} refused batches (--max-errors "
                                f"{self.opts.max_errors}); the first: {self.res.first_error}")
            self.stop.set()


async def _timed(target, ds: Dataset, sources, stats: Stats, opts: StreamOptions, res: StreamResult,
                 server_pids) -> None:
    _import_asked(opts)
    t0 = time.perf_counter()
    cpu = CpuSpent(server_pids)
    run = Writers(target, sources, stats, opts, res, t0)
    mixed = _mixed(target, ds, sources, opts, t0)
    if mixed is not None:
        from tsbench.stream.mixed import RatioClock

        stats.also_roll.append(mixed.stats.roll)
        if isinstance(mixed.clock, RatioClock):
            run.listeners.append(mixed.clock.answered)
    probe = _probe(target, ds, stats, opts) if opts.freshness else None
    if probe is not None:
        stats.also_roll.append(probe.stats.roll)
        run.probe = probe
        run.listeners.append(probe.acked)
    lines = opts.progress and not _live_table(opts)          # (asked before a live table holds stderr)
    sinks = await _open_sinks(opts, res.target)
    ticker = asyncio.create_task(_tick(stats, t0, lines, res.target, sinks))
    try:
        async with watchdog(f"stream into {res.target}", progress=lambda: stats.answers,
                            stall_seconds=opts.stall_seconds):
            async with asyncio.TaskGroup() as tg:
                tg.create_task(run.all())
                if mixed is not None:
                    tg.create_task(mixed.run(run.stop))
                if probe is not None:
                    tg.create_task(probe.run(run.stop))
                if opts.duration is not None:
                    tg.create_task(stop_after(run.stop, opts.duration))
    except BaseException as exc:
        e = first_error(exc)
        if isinstance(e, (Stalled, StreamError)) or e is exc:
            raise
        raise e from None
    finally:
        ticker.cancel()
        res.seconds = time.perf_counter() - t0
        cpu.into(res)
        last = stats.roll(stats.next_second)              # the last, partial second
        _totals(stats, res)
        if mixed is not None:
            _query_totals(mixed, res)
        if probe is not None:
            res.freshness, res.freshness_table = probe.summary(), probe.stats.table
        for sink in sinks:
            sink.push(last)
        res.report_note = "; ".join(filter(None, [await sink.close() for sink in sinks]))
    if run.failure:
        raise StreamError(f"stream into {res.target}: {run.failure[0]}")


def _import_asked(opts: StreamOptions) -> None:
    """The modules of what the run asks for (queries, freshness probes, --report-url,
    --metrics-port, a live table), imported before its clock starts; a plain stream
    starts without them."""
    asked = {"mixed": opts.queries, "fresh": opts.freshness, "report": opts.report_url,
             "metrics": opts.metrics_port is not None, "live": _live_table(opts)}
    for module in (m for m, on in asked.items() if on):
        importlib.import_module(f"tsbench.stream.{module}")


def _mixed(target, ds: Dataset, sources, opts: StreamOptions, t0: float) -> Queries | None:
    if not opts.queries:
        return None
    from tsbench.stream.mixed import Queries, RateClock, RatioClock

    def frontier() -> int:
        return ds.start_ns + min(s.epoch for s in sources) * ds.interval_ns
    clock = RatioClock(*opts.query_ratio) if opts.query_ratio else RateClock(t0, opts.query_rate)
    return Queries(target, list(opts.queries), clock, opts.query_workers, opts.query_window, ds.start_ns, frontier)


def _probe(target, ds: Dataset, stats: Stats, opts: StreamOptions) -> Freshness:
    from tsbench.stream.fresh import Freshness

    return Freshness(target, ds, tables_of(ds, 0, 0), stats.series_per_epoch, opts.freshness_every,
                     opts.stall_seconds)


def _query_totals(mixed: Queries, res: StreamResult) -> None:
    t = mixed.stats.table
    h = mixed.stats.total
    res.query_table = t
    res.queries = {"pace": mixed.clock.pace, "count": sum(r["queries"] for r in t), "errors": sum(r["errors"] for r in t),
                   "first_error": mixed.first_error, "unsupported": mixed.unsupported,
                   "latency_ms": {"p50": h.get_value_at_percentile(50) / 1e3, "p99": h.get_value_at_percentile(99) / 1e3,
                                  "max": h.get_max_value() / 1e3} if h.get_total_count() else {},
                   "types": sorted({r["type"] for r in t})}


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
        return True
    except TimeoutError:
        return False


async def stop_after(stop: asyncio.Event, seconds: float) -> None:
    await _stopped_within(stop, seconds)
    stop.set()


async def _open_sinks(opts: StreamOptions, target: str) -> list:
    """Where the per-second rows go while the run goes: --report-url, --metrics-port, the
    live table on a terminal."""
    sinks, metrics = [], None
    if opts.report_url:
        from tsbench.stream.report import LineReport

        sinks.append(LineReport(opts.report_url, target))
    if opts.metrics_port is not None:
        from tsbench.stream.metrics import MetricsEndpoint

        metrics = MetricsEndpoint(opts.metrics_port, target)
        sinks.append(metrics)
    if _live_table(opts):
        from tsbench.stream.live import LiveTable

        sinks.append(LiveTable(target))                  # last: it holds the terminal from its start
    for i, sink in enumerate(sinks):
        try:
            await sink.open()
        except BaseException:          # re-raised at once: only the sinks already open are closed first
            for opened in sinks[:i]:
                await opened.close()
            raise
        if sink is metrics and opts.progress:
            print(f"tsbench: metrics at http://127.0.0.1:{sink.port}/metrics", file=sys.stderr, flush=True)
    return sinks


def _live_table(opts: StreamOptions) -> bool:
    """Whether the run's figures go to a live table (progress on a terminal) instead of lines."""
    return opts.progress and sys.stderr.isatty()


async def _tick(stats: Stats, t0: float, show: bool, what: str, sinks: list) -> None:
    """Every second: close the second's rows; push them to the sinks; a line of figures on stderr."""
    while True:
        await asyncio.sleep(max(0.0, t0 + stats.next_second + 1 - time.perf_counter()))
        rows = stats.roll(stats.next_second)
        for sink in sinks:
            sink.push(rows)
        if show:
            n = sum(r["rows"] for r in rows)
            p99 = max((r["p99_ms"] for r in rows if r["p99_ms"] is not None), default=None)
            print(f"stream {what} {stats.next_second:>4} s: {n:>10,} rows/s  p99 (slowest writer) "
                  f"{'-' if p99 is None else f'{p99:,.1f} ms'}  errors {stats.errors}  backoffs {stats.backoffs}  "
                  f"series {sum(r['series'] for r in rows):,}", file=sys.stderr, flush=True)


def _totals(stats: Stats, res: StreamResult) -> None:
    t = stats.table
    res.rows, res.values = sum(r["rows"] for r in t), sum(r["values"] for r in t)
    res.bytes, res.batches = sum(r["bytes"] for r in t), sum(r["batches"] for r in t)
    res.errors, res.backoffs = stats.errors, stats.backoffs
    h = stats.total
    if h.get_total_count():
        res.latency_ms = {f"p{k}": h.get_value_at_percentile(v) / 1e3
                          for k, v in (("50", 50), ("90", 90), ("99", 99), ("999", 99.9))}
        res.latency_ms["max"] = h.get_max_value() / 1e3
    res.table = t


async def verify_count(target, ds: Dataset, tables: Tables, epoch: int, opts: StreamOptions,
                       res: StreamResult) -> None:
    """The count over the epochs written (up to `epoch`, the furthest a writer reached),
    against the points answered."""
    reached = epoch + 1 + ds.schema.faults.max_lateness
    end = min(ds.start_ns + reached * ds.interval_ns, MAX_TIME_NS)
    written = Tables(tables.tables, ds.start_ns, end, res.rows, res.values)
    res.expected = res.rows if res.count_unit == "rows" else res.values
    await bounded(f"flush of {res.target}", opts.stall_seconds, target.flush())
    res.counted = await bounded(f"count in {res.target}", opts.stall_seconds + type(target).settle_seconds,
                                count_settled(target, written, res.expected))
    res.verified = res.counted == res.expected
    if not res.verified:
        raise StreamError(f"verify failed: {res.target} holds {res.counted:,} {res.count_unit}, "
                          f"the writers had {res.expected:,} answered")
