"""The writers' pump of phase 2, shared by `load` (one process, several, or a --cluster
slot) and `stream`: batches sent with a jittered exponential backoff while the server
pushes back (Retryable), N asyncio workers keeping N batches in flight, and the
per-slot counters the progress, the stall watch and the totals read."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import time
from dataclasses import dataclass

from tsbench.core.errors import LoadError, Retryable
from tsbench.core.options import default_of
from tsbench.databases.shared.target import Target
from tsbench.load.options import Writes

# shared counters, one row per process or slot: rows, values, bytes, batches, backoffs, backoff_us
N_COUNTERS = 6


@dataclass
class BackoffRule:
    """How long to wait between tries of a pushed-back batch, and for how long at most
    (LoadOptions and StreamOptions are one)."""

    backoff_base: float = 0.05      # seconds, doubled per consecutive push-back of a batch
    backoff_cap: float = 5.0
    give_up_after: float = default_of(Writes, "give_up_after")   # seconds of push-back on one batch before failing


async def write_with_backoff(target: Target, b, opts: BackoffRule, rng: random.Random, backed_off) -> None:
    """target.write(b), again after a jittered exponential backoff (opts.backoff_base doubled
    per push-back, at most opts.backoff_cap) while the server pushes back (Retryable), for at
    most opts.give_up_after seconds; backed_off(pause) hears of each pause. Load and stream
    share it."""
    attempt, first = 0, None
    while True:
        try:
            await target.write(b)
            return
        except Retryable as exc:
            now = time.monotonic()
            first = first or now
            if now - first > opts.give_up_after:
                raise LoadError(f"gave up after {now - first:.0f} s of push-back on one batch: {exc}") from None
            pause = rng.uniform(0, min(opts.backoff_cap, opts.backoff_base * (2 ** attempt)))
            attempt += 1
            backed_off(pause)
            await asyncio.sleep(pause)


async def pump(target: Target, batches, opts, counters, slot: int) -> None:
    """Keep opts.workers batches in flight until the iterator is exhausted (opts: LoadOptions)."""
    base = slot * N_COUNTERS
    queue: asyncio.Queue = asyncio.Queue(maxsize=opts.workers)
    rng = random.Random(slot)

    def backed_off(pause: float) -> None:
        counters[base + 4] += 1
        counters[base + 5] += int(pause * 1e6)

    async def send(b) -> None:
        await write_with_backoff(target, b, opts, rng, backed_off)
        counters[base + 0] += b.rows
        counters[base + 1] += b.values
        counters[base + 2] += b.nbytes
        counters[base + 3] += 1

    async def worker() -> None:
        while True:
            b = await queue.get()
            if b is None:
                return
            await send(b)

    async def producer() -> None:
        for b in batches:
            await queue.put(b)
        for _ in range(opts.workers):
            await queue.put(None)

    with frozen_gc():
        await all_of([producer(), *(worker() for _ in range(opts.workers))])


async def all_of(coros) -> None:
    """Run the coroutines as tasks until every one has ended; the first error cancels the
    rest and is raised. Unlike a TaskGroup, which passes on only the first cancellation,
    each cancellation of the caller reaches every task: the stall watchdog's repeated one
    (watch.RECANCEL_S) interrupts a client whose own cancellation handler waits on a stopped
    server (psycopg's cancel request: 5 s, then 5 s more)."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:             # after an error (or a cancellation): the others too
            t.cancel()


@contextlib.contextmanager
def frozen_gc():
    """The objects alive before the pump (modules, the target, the dataset) set aside from
    the collector while it runs (gc.freeze): the requests' garbage is collected as before,
    but a full collection no longer walks the whole heap again and again."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def first_error(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc
