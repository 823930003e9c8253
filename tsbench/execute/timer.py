"""Phase 4 (and the stream's queries): the one query timer.

A latency is measured here and nowhere else. The timer reads the clock when it calls
the target's query() (which sends the query and reads the answer to its last byte),
when query() returns, and when the target's finish() has done the client work the user
waits for (the rows a client computes from the answer, e.g. merging several
responses); latency = the whole, less the connection set-up (connect_s: what the HTTP
transport reported, or what the target's open_query_connection() took, timed here);
client_s = finish()'s part. No target reads a clock on its query path
(tests/unit/test_query_timer.py); the HTTP transport (databases/shared/http_pool.py)
reports the durations of its own events, the time to the first byte and connect_s."""

from __future__ import annotations

import time
from typing import Any

from tsbench.queries.base import Answer


async def timed_query(target, native: Any) -> Answer:
    """Run one rendered query on target: its Answer with seconds (the latency, from the
    call to the last byte plus the client work, connection set-up excluded) and, where
    finish() computed the rows, those rows and client_s (finish()'s seconds)."""
    c0 = time.perf_counter()
    opened = await target.open_query_connection()
    t0 = time.perf_counter()
    ans = await target.query(native)
    t1 = time.perf_counter()
    rows = target.finish(native, ans)
    t2 = time.perf_counter()
    if rows is not None:
        ans.rows, ans.client_s = rows, t2 - t1
    ans.seconds = t2 - t0 - (ans.connect_s or 0.0)      # the HTTP pool's own connection set-up, if any
    if opened:
        ans.connect_s = t0 - c0
    return ans
