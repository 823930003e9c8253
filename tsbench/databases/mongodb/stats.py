"""What a MongoDB collection holds, value by value in aggregate (phase 2, value
verification: load.py's stats()), as two aggregation pipelines per measurement over
the dataset's window: one `$group` of every field's count, sum, min and max, and one
of the distinct `tags` sub-documents. The layouts' documents (documents.py): point
and timeseries hold a record per document, bucket an `events` array per series and
hour (unwound first). Only what both MongoDB and the local stand-in
(mongo-java-server 1.47) evaluate: no `$type` (the stand-in lacks it; a value is
counted when `$ifNull` does not give the marker string), `$sum`, `$min`, `$max`,
`$toDouble`, `$unwind`, `$count`.

Integer sums: MongoDB adds int64s as longs and turns the sum into a double when it
overflows; the stand-in wraps it (2^62 + 2^62 + 5 gave -9223372036854775803,
observed). So each integer field is summed twice, as longs and as doubles: a long
answer is the exact sum modulo 2^64, and the double sum (off by at most its float
summation bound, far below 2^63) says which multiple of 2^64 to add back. A
double answer (MongoDB's overflow) is taken only where it is exact (stats.exact_int)."""

from __future__ import annotations

import datetime as dt

from ...model import Table
from .documents import EVENTS, TAGS, TIME

ABSENT = "tsbench:absent"     # what $ifNull gives for a null or missing field: no number equals it
WRAP = 2 ** 64
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _ms_time(ns: int) -> dt.datetime:
    """An epoch-ns instant floored to its millisecond, as a BSON datetime holds it."""
    return EPOCH + dt.timedelta(milliseconds=ns // 10**6)


def _records(layout: str, start_ns: int, end_ns: int) -> tuple[list[dict], str]:
    """The stages that leave one document per record in the window, and the prefix of a
    record's field paths."""
    within = {"$gte": _ms_time(start_ns), "$lt": _ms_time(end_ns + 10**6 - 1)}     # times kept in ms
    if layout == "bucket":
        return [{"$unwind": f"${EVENTS}"}, {"$match": {f"{EVENTS}.{TIME}": within}}], f"{EVENTS}."
    return [{"$match": {TIME: within}}], ""


def fields_pipeline(t: Table, layout: str, start_ns: int, end_ns: int) -> list[dict]:
    """One group of every field's figures: n<j>, s<j> (as stored), d<j> (doubles, int
    fields), lo<j>, hi<j>."""
    stages, pre = _records(layout, start_ns, end_ns)
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


def series_pipeline(t: Table, layout: str, start_ns: int, end_ns: int) -> list[dict]:
    """The number of distinct tag sets with a record in the window."""
    stages, _ = _records(layout, start_ns, end_ns)
    return stages + [{"$group": {"_id": f"${TAGS}"}}, {"$count": "n"}]


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
