"""Stream: queries while writing (--queries). The query specs of a queries file are moved
onto the freshest data: a spec with a time range gets the window that ends at the
writers' frontier (the oldest of the epochs they generate next, to the minute), as long
as the spec's own window but at most --query-window, a whole number of its buckets. They
run in turn from --query-workers workers, each due either on the clock (--query-rate,
open loop) or by the writes (--ratio write:W,query:Q, iot-benchmark's operation mix: Q
queries fall due with every W batches answered, at that batch's answer); a query's
latency counts from its due time, rendered before the timer (execute/timer.py, the
executor's: the target's finish() inside it). Answers are not checked: the
data moves under them; the point is their latency under load, per type and second. A refused
query is counted per type and does not stop the run."""

from __future__ import annotations

import asyncio
import re
import time

from tsbench.core.errors import Fatal, Retryable, Unsupported, UserError
from tsbench.execute.timer import timed_query
from tsbench.queries.base import QuerySpec
from tsbench.stream.stats import HIGHEST_US, LOWEST_US, histogram

MINUTE_NS = 60 * 10**9


def fresh(spec: QuerySpec, frontier_ns: int, floor_ns: int, window_ns: int) -> QuerySpec:
    """The spec moved onto [end - window, end), end = the frontier to the minute."""
    p = spec.params
    if "start" not in p or "end" not in p:
        return spec
    step = int(p.get("bucket") or MINUTE_NS)
    span = min(int(p["end"]) - int(p["start"]), window_ns)
    span = max(step, span // step * step)
    end = max(frontier_ns // MINUTE_NS * MINUTE_NS, floor_ns + span)
    return QuerySpec(spec.id, spec.type, {**p, "start": end - span, "end": end})


def parse_ratio(text: str) -> tuple[int, int]:
    """`write:9,query:1` as (9, 1): write batches to queries."""
    m = re.fullmatch(r"\s*write\s*:\s*(\d+)\s*,\s*query\s*:\s*(\d+)\s*", text or "")
    if not m or int(m[1]) < 1 or int(m[2]) < 1:
        raise UserError(f"--ratio: give write:W,query:Q with whole numbers of at least 1 "
                        f"(write batches to queries), e.g. write:9,query:1; got {text!r}")
    return int(m[1]), int(m[2])


class RateClock:
    """Query k is due at t0 + k / rate (open loop)."""

    def __init__(self, t0: float, rate: float):
        self.t0, self.rate = t0, rate
        self.pace = f"{rate:g} queries/s"

    async def due(self, k: int, stop: asyncio.Event) -> float | None:
        """Its due time, once reached; None when the run stops first."""
        due = self.t0 + k / self.rate
        wait = due - time.perf_counter()
        if wait > 0:
            try:
                await asyncio.wait_for(stop.wait(), wait)
                return None
            except TimeoutError:
                pass
        return due


class RatioClock:
    """Query k is due when the write batch that brings the batches answered to (k + 1) x
    writes / queries is answered, at that answer's time; writers call answered()."""

    POLL_S = 0.1                   # a waiting worker looks at the run's stop this often

    def __init__(self, writes: int, queries: int):
        self.writes, self.queries = writes, queries
        self.pace = f"write:{writes},query:{queries}"
        self.batches = 0
        self.due_at: dict[int, float] = {}
        self._next = 0             # the next query not yet due
        self._wake = asyncio.Event()

    def answered(self, _writer: int, _rows: int, done: float) -> None:
        self.batches += 1
        while -(-(self._next + 1) * self.writes // self.queries) <= self.batches:     # ceil, in integers
            self.due_at[self._next] = done
            self._next += 1
        self._wake.set()
        self._wake = asyncio.Event()

    async def due(self, k: int, stop: asyncio.Event) -> float | None:
        while k not in self.due_at:
            if stop.is_set():
                return None
            try:
                await asyncio.wait_for(self._wake.wait(), self.POLL_S)
            except TimeoutError:
                pass
        return self.due_at.pop(k)


class QueryStats:
    """Per second and query type: latency histogram, count, refusals."""

    def __init__(self):
        self.now: dict[str, list] = {}        # type -> [histogram, count, errors]
        self.table: list[dict] = []
        self.total = histogram()

    def _cell(self, qtype: str) -> list:
        if qtype not in self.now:
            self.now[qtype] = [histogram(), 0, 0]
        return self.now[qtype]

    def answered(self, qtype: str, seconds: float) -> None:
        c = self._cell(qtype)
        c[0].record_value(max(LOWEST_US, min(HIGHEST_US, round(seconds * 1e6))))
        c[1] += 1

    def error(self, qtype: str) -> None:
        self._cell(qtype)[2] += 1

    def roll(self, second: int) -> None:
        for qtype, (h, n, errors) in self.now.items():
            if not (n or errors):
                continue
            self.table.append({"second": second, "type": qtype, "queries": n, "errors": errors,
                               "p50_ms": h.get_value_at_percentile(50) / 1e3 if n else None,
                               "p99_ms": h.get_value_at_percentile(99) / 1e3 if n else None,
                               "max_ms": h.get_max_value() / 1e3 if n else None,
                               "latency_hdr": h.encode().decode() if n else ""})
            self.total.add(h)
            h.reset()
            self.now[qtype] = [h, 0, 0]


class Queries:
    """The query workers of one stream run."""

    def __init__(self, target, specs: list[QuerySpec], clock: RateClock | RatioClock, workers: int, window_s: float,
                 floor_ns: int, frontier):
        self.target, self.specs, self.clock, self.workers = target, specs, clock, workers
        self.window_ns, self.floor_ns, self.frontier = int(window_s * 1e9), floor_ns, frontier
        self.stats = QueryStats()
        self.unsupported: dict[str, str] = {}
        self.first_error = ""
        self._next = 0                        # the next query's number: its due time and spec

    def runnable(self) -> bool:
        """Keep the specs the target renders (the others' types recorded with the reason)."""
        keep = []
        for s in self.specs:
            try:
                self.target.render(s)
                keep.append(s)
            except Unsupported as exc:
                self.unsupported.setdefault(s.type, str(exc))
        self.specs = keep
        return bool(keep)

    async def run(self, stop: asyncio.Event) -> None:
        if not self.runnable():
            return
        await self.target.prepare(self.workers)
        async with asyncio.TaskGroup() as tg:
            for _ in range(self.workers):
                tg.create_task(self._worker(stop))

    async def _worker(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            k = self._next
            self._next += 1
            due = await self.clock.due(k, stop)
            if due is None:
                return
            await self._one(self.specs[k % len(self.specs)], due)

    async def _one(self, spec: QuerySpec, due: float) -> None:
        try:
            native = self.target.render(fresh(spec, self.frontier(), self.floor_ns, self.window_ns))
        except Unsupported as exc:          # a moved window it cannot say: counted as refused
            self.stats.error(spec.type)
            self.first_error = self.first_error or str(exc)
            return
        queued = time.perf_counter() - due
        try:
            ans = await timed_query(self.target, native)
        except (Fatal, Retryable) as exc:
            self.stats.error(spec.type)
            self.first_error = self.first_error or str(exc)
            return
        self.stats.answered(spec.type, queued + ans.seconds)
