"""The writers' pump of phase 2, run by `load` (one process, several, or a --cluster
slot): N asyncio workers keeping N batches in flight, each batch sent through
write_with_backoff (databases/shared/backoff.py), and the per-slot counters
(measures.py) the progress, the stall watch and the totals read."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random

from tsbench.databases.shared.backoff import write_with_backoff
from tsbench.databases.shared.target import Target
from tsbench.load.measures import N_COUNTERS


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
