"""The slots' figures put together (phase 2 with --cluster): each slot's samples moved
onto the driver's clock (the offsets Dask measured), then one per-second timeline of
the run whose last line holds exactly the sums of the slots' totals."""

from __future__ import annotations

import bisect
import math

FIELDS = ("rows", "values", "bytes", "batches", "backoffs")   # the first counters of a sample, after its time


def on_driver_clock(samples: list[list[float]], shift: float) -> list[list[float]]:
    """Samples [time, counters...] with time moved by shift seconds."""
    return [[s[0] + shift] + list(s[1:]) for s in samples]


def shift_of(worker_offset: float, driver_offset: float) -> float:
    """Seconds to add to a worker's clock for the driver's. Both offsets are the
    scheduler's clock minus the machine's."""
    return worker_offset - driver_offset


def merged_timeline(slots: list[list[list[float]]], t0: float) -> list[dict]:
    """Per second from t0 (and at the last sample): the sum over slots of each slot's
    cumulative counters as of its last sample at or before that moment, with the rates
    of the second, in the shape of load's own timeline."""
    end = max(s[-1][0] for s in slots)
    marks = [t0 + k for k in range(1, math.ceil(end - t0))] + [max(end, t0)]
    times = [[s[0] for s in samples] for samples in slots]
    out: list[dict] = []
    prev = {"t": 0.0, "rows": 0, "values": 0, "bytes": 0}
    for m in marks:
        total = [0] * len(FIELDS)
        for samples, ts in zip(slots, times):
            i = bisect.bisect_right(ts, m) - 1
            if i >= 0:
                total = [a + b for a, b in zip(total, samples[i][1: 1 + len(FIELDS)])]
        rec = dict(zip(FIELDS, total), t=round(m - t0, 3))
        dt = max(rec["t"] - prev["t"], 1e-9)
        rec.update(rows_per_s=round((rec["rows"] - prev["rows"]) / dt, 1),
                   values_per_s=round((rec["values"] - prev["values"]) / dt, 1),
                   mb_per_s=round((rec["bytes"] - prev["bytes"]) / dt / 1e6, 3))
        out.append(rec)
        prev = rec
    return out
