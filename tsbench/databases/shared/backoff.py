"""A write retried while the server pushes back (phase 2, and stream's writers): the
target protocol's Retryable (target.py) answered by a jittered exponential backoff,
for a bounded time. The load's pump, the stream's writers and a spread's per-server
parts (spread.py) all write through it."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

from tsbench.core.errors import LoadError, Retryable
from tsbench.databases.shared.target import Target


@dataclass
class BackoffRule:
    """How long to wait between tries of a pushed-back batch, and for how long at most
    (LoadOptions and StreamOptions are one)."""

    backoff_base: float = 0.05      # seconds, doubled per consecutive push-back of a batch
    backoff_cap: float = 5.0
    give_up_after: float = 300.0    # seconds of push-back on one batch before failing; --give-up-after's default


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
