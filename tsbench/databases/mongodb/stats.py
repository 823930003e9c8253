"""What a MongoDB collection holds, value by value in aggregate (phase 2, value
verification: target.py's stats()), as two aggregation pipelines per slice of the
dataset's window: one `$group` of every field's count, sum, min and max, and one of
the distinct `tags` sub-documents. The window is cut into slices of about
SLICE_ROWS records (whole milliseconds, none shared) so that each pipeline ends
within the per-operation timeout on a slow server (the in-memory stand-in took 12-46 s
for the nine tables of 194,400 DevOps records, 0.6-2.4 s per 10,000 records, on a
2-core machine at load 17-19); the slices' partials are merged in stats.FieldMerge, their tag
sets united. The layouts' documents (documents.py): point and timeseries hold a
record per document, bucket an `events` array per series and hour (the hours' buckets
matched, then unwound). Only what both MongoDB and the local stand-in
(mongo-java-server 1.47) evaluate: no `$type` (the stand-in lacks it; a value is
counted when `$ifNull` does not give the marker string), `$sum`, `$min`, `$max`,
`$toDouble`, `$unwind`.

Integer sums: MongoDB adds int64s as longs and turns the sum into a double when it
overflows; the stand-in wraps it (2^62 + 2^62 + 5 gave -9223372036854775803,
observed). So each integer field is summed twice, as longs and as doubles: a long
answer is the exact sum modulo 2^64, and the double sum (off by at most its float
summation bound, far below 2^63) says which multiple of 2^64 to add back. A
double answer (MongoDB's overflow) is taken only where it is exact (stats.exact_int)."""

from __future__ import annotations

import datetime as dt

from tsbench.core.model import Table
from tsbench.databases.mongodb.documents import EVENTS, HOUR, TAGS, TIME

SLICE_ROWS = 100_000         # records of one measurement a pipeline reads, about
MS = 10**6
HOUR_MS = 3_600_000
ABSENT = "tsbench:absent"     # what $ifNull gives for a null or missing field: no number equals it
WRAP = 2 ** 64
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _ms_time(ms: int) -> dt.datetime:
    return EPOCH + dt.timedelta(milliseconds=ms)


def slices(start_ns: int, end_ns: int, records: int) -> list[tuple[int, int]]:
    """[lo, hi) windows in whole ms covering the window of `records` records (times are
    kept in ms, floored: a record of [start_ns, end_ns) lies in [floor, ceil) ms)."""
    lo, hi = start_ns // MS, -(-end_ns // MS)
    n = max(1, min(-(-records // SLICE_ROWS), hi - lo))
    cuts = [lo + (hi - lo) * k // n for k in range(n + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


def _records(layout: str, lo_ms: int, hi_ms: int) -> tuple[list[dict], str]:
    """The stages that leave one document per record in [lo_ms, hi_ms), and the prefix
    of a record's field paths (bucket: the buckets of those hours first, then their events)."""
    within = {"$gte": _ms_time(lo_ms), "$lt": _ms_time(hi_ms)}
    if layout == "bucket":
        hours = {"$gte": _ms_time(lo_ms - lo_ms % HOUR_MS), "$lt": _ms_time(hi_ms)}
        return [{"$match": {HOUR: hours}}, {"$unwind": f"${EVENTS}"},
                {"$match": {f"{EVENTS}.{TIME}": within}}], f"{EVENTS}."
    return [{"$match": {TIME: within}}], ""


def fields_pipeline(t: Table, layout: str, lo_ms: int, hi_ms: int) -> list[dict]:
    """One group of every field's figures in [lo_ms, hi_ms): n<j>, s<j> (as stored), d<j>
    (doubles, int fields), lo<j>, hi<j>."""
    stages, pre = _records(layout, lo_ms, hi_ms)
    group: dict = {"_id": None}
    for j, f in enumerate(t.fields):
        path = f"${pre}{f.name}"
        group[f"n{j}"] = {"$sum": {"$cond": [{"$eq": [{"$ifNull": [path, ABSENT]}, ABSENT]}, 0, 1]}}
        group[f"s{j}"] = {"$sum": path}
        group[f"lo{j}"] = {"$min": path}
        group[f"hi{j}"] = {"$max": path}
        if f.type == "int":
            group[f"d{j}"] = {"$sum": {"$toDouble": path}}
    return stages + [{"$group": group}]


def series_pipeline(t: Table, layout: str, lo_ms: int, hi_ms: int) -> list[dict]:
    """The distinct tag sets with a record in [lo_ms, hi_ms)."""
    stages, _ = _records(layout, lo_ms, hi_ms)
    return stages + [{"$group": {"_id": f"${TAGS}"}}]


def tag_sets(docs: list[dict]) -> set[tuple]:
    """The answer of series_pipeline() as hashable tag sets."""
    return {tuple(sorted((d["_id"] or {}).items())) for d in docs}


def read_fields(t: Table, docs: list[dict], merge) -> None:
    """The answer of fields_pipeline() into merge (stats.FieldMerge); no document: no record."""
    for doc in docs:
        for j, f in enumerate(t.fields):
            total = doc[f"s{j}"]
            if f.type == "int" and isinstance(total, int) and doc[f"n{j}"]:
                total = unwrap(total, doc[f"d{j}"])
            merge.add(f.name, doc[f"n{j}"], total, doc[f"lo{j}"], doc[f"hi{j}"])


def unwrap(wrapped: int, approx: float) -> int:
    """The integer sum whose value modulo 2^64 is `wrapped` nearest the double sum `approx`."""
    return wrapped + round((approx - wrapped) / WRAP) * WRAP
