"""The shared transport (phase 4): a connection a driver-based target opens on the query
path, timed apart as the HTTP pool times its own (connect_s), so that the executor's
timer (execute/timer.py) leaves it out of the latency and no target reads a clock."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def timed_connect(opening: Awaitable[T]) -> tuple[T, float]:
    """The connection `opening` gives, and the seconds it took (connect_s)."""
    t0 = time.perf_counter()
    conn = await opening
    return conn, time.perf_counter() - t0
