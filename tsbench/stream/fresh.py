"""Stream: the freshness probe (--freshness): how long after a write is acknowledged a
query sees it. Every --freshness-every seconds the probe watches the next epoch the
writers have not all acknowledged yet; the moment the last writer's batch holding the
rest of that epoch is answered is its acknowledgement. From then the probe counts that
one epoch's window ([t, t + interval)) with the target's count, again and again (a pause
of POLL_S between answers), until the count holds every point of the epoch (known
exactly: each series has one point per epoch, so only data without faults is probed).
The figure is the time from the acknowledgement to the sending of the first count that
saw all of it; its resolution is one poll (POLL_S plus a count's answer time). A count
not full within the bound is counted as unseen; probing stops at the first refused batch
(the epochs after it are incomplete for good)."""

from __future__ import annotations

import asyncio
import time

from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.core.model import Tables
from tsbench.data.dataset import Dataset
from tsbench.data.schema import Faults
from tsbench.stream.mixed import QueryStats

POLL_S = 0.01
KIND = "freshness"


def check_probe(cls, ds: Dataset) -> None:
    """The probe needs a target that keeps the data and points whose count per epoch is known."""
    if not cls.keeps_data:
        raise UserError(f"--freshness: {cls.name} keeps no data for a query to see")
    if ds.schema.faults != Faults():
        raise UserError("--freshness: the dataset has missing or late points (faults), so the points of an "
                        "epoch are not known; probe a use case without faults (e.g. iot with -P missing=0 ...)")


class Freshness:
    """The probe of one stream run; writers report each answer through acked()."""

    def __init__(self, target, ds: Dataset, tables: Tables, rows_per_epoch: list[int], every_s: float,
                 bound_s: float):
        self.target, self.ds, self.tables, self.every_s, self.bound_s = target, ds, tables, every_s, bound_s
        self.rows_per_epoch = rows_per_epoch                 # per writer
        self.epochs_done = [0] * len(rows_per_epoch)         # per writer: its epochs wholly answered
        writers_rows, entities = sum(rows_per_epoch), ds.entities
        self.expected = writers_rows if type(target).count_unit == "rows" else entities * ds.schema.values_per_epoch
        self.watch: int | None = None                        # the epoch awaiting its acknowledgement
        self.acked_at = 0.0
        self.ready = asyncio.Event()
        self.stats = QueryStats()
        self.probes = self.unseen = self.failed = 0
        self.note = ""

    def acked(self, w: int, rows_total: int, t: float) -> None:
        """Writer w has rows_total rows answered, in order, at perf_counter time t."""
        self.epochs_done[w] = rows_total // self.rows_per_epoch[w]
        if self.watch is not None and not self.ready.is_set() and min(self.epochs_done) > self.watch:
            self.acked_at = t
            self.ready.set()

    def stop_probing(self, why: str) -> None:
        self.note = self.note or why

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set() and not self.note:
            began = time.perf_counter()
            self.watch = min(self.epochs_done)
            self.ready.clear()
            if not await _first(self.ready, stop):
                return
            await self._probe(self.watch, self.acked_at, stop)
            await _first(stop, timeout=max(0.0, began + self.every_s - time.perf_counter()))

    async def _probe(self, epoch: int, acked_at: float, stop: asyncio.Event) -> None:
        ds = self.ds
        lo = ds.start_ns + epoch * ds.interval_ns
        window = Tables(self.tables.tables, lo, lo + ds.interval_ns, sum(self.rows_per_epoch), self.expected)
        self.probes += 1
        while time.perf_counter() - acked_at < self.bound_s:
            sent = time.perf_counter()
            try:
                n = await self.target.count(window)
            except (Fatal, Retryable) as exc:
                self.failed += 1
                self.stats.error(KIND)
                self.stop_probing(f"a count failed: {exc}")
                return
            if n >= self.expected:
                self.stats.answered(KIND, max(0.0, sent - acked_at))
                return
            if await _first(stop, timeout=POLL_S):
                self.probes -= 1                             # the run ended first: not a probe
                return
        self.unseen += 1
        self.stats.error(KIND)

    def summary(self) -> dict:
        h = self.stats.total
        seen = h.get_total_count()
        lat = {"p50": h.get_value_at_percentile(50) / 1e3, "p99": h.get_value_at_percentile(99) / 1e3,
               "max": h.get_max_value() / 1e3} if seen else {}
        return {"probes": self.probes, "seen": seen, "unseen": self.unseen, "failed": self.failed,
                "bound_s": self.bound_s, "latency_ms": lat, "note": self.note}


async def _first(event: asyncio.Event, stop: asyncio.Event | None = None, timeout: float | None = None) -> bool:
    """Wait until `event` is set (True), `stop` is set or the timeout passes (False)."""
    waits = [asyncio.ensure_future(event.wait())]
    if stop is not None:
        waits.append(asyncio.ensure_future(stop.wait()))
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
    return event.is_set() and (stop is None or not stop.is_set())
