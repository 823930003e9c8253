"""MongoDB's query language (phases 3-5): the catalog's shapes as aggregation
pipelines over the documents of documents.py (one collection per measurement).

aggregate  `$match` (time window, tag `$in`, a field comparison), `$group` by
           {t: the time floored to the bucket (epoch ms minus its remainder),
           g0..: the group tags} with `$max`/`$min`/`$avg`/`$sum` per field and
           the count of its values, then `$sort`/`$limit` for the newest-first
           types. A field a record lacks is missing, which the accumulators skip
           as SQL skips NULL; sums of groups without a value are NULL as in SQL
           (their count is 0). With neither buckets nor groups SQL answers one
           row even over no record: so does read().
rows       `$match`, `$sort` by time, `$limit`, `$project` of time, tags, fields.
last       `$sort` by time descending, `$group` by the tags with `$first` of the
           time and every field (the newest record's values, missing ones null).

Layout bucket (documents.py: a document per series and hour, its events in an
array): the same stages after three that bring each event back to the point
document's form: `$match` of the buckets whose hour overlaps the window
(`hour` from the window's start floored to its hour, before its end) and of
the tag filter, `$unwind` of the events, and `$replaceRoot` with `$mergeObjects`
of the bucket's tags and the event ({time, tags, fields}). The stand-in has
these (not `$replaceWith`, MongoDB 4.2+'s spelling of the same), MongoDB has
since 3.6. `last` reads every bucket (no window), as the point pipeline reads
every document. The stand-in's `$unwind` copies the whole document per array
element (its UnwindStage clones deeply), so a bucket of n events costs it n
copies of n events: its bucket queries are slow, a property of the stand-in.

Times are BSON datetimes (ms): a bucket must be a whole number of milliseconds.
The iot types (their own shapes) are not rendered."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Callable

from bson import json_util

from tsbench.core.errors import Unsupported
from tsbench.databases.mongodb.documents import EVENTS, HOUR, TAGS, TIME
from tsbench.queries.catalog import CATALOG, TSBS_DEVOPS
from tsbench.queries.dialect import Dialect
from tsbench.queries.shapes import columns

MS = 1_000_000
HOUR_NS = 3600 * 10**9
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
ACCUMULATORS = {"max": "$max", "min": "$min", "mean": "$avg", "sum": "$sum"}
COMPARE = {">": "$gt", ">=": "$gte", "<": "$lt", "<=": "$lte", "=": "$eq"}


@dataclass(frozen=True)
class MqlQuery:
    """A rendered query: the pipeline run on a collection, and how its documents become
    canonical rows (after the timed pass)."""

    collection: str
    pipeline: list
    reader: Callable[[list[dict]], list[tuple]] = field(repr=False, compare=False)

    def read(self, docs: list[dict]) -> list[tuple]:
        return self.reader(docs)

    @property
    def text(self) -> str:
        """The aggregate command as sent, its BSON pipeline in relaxed extended JSON."""
        pipeline = json_util.dumps(self.pipeline, json_options=json_util.RELAXED_JSON_OPTIONS)
        return f"db.{self.collection}.aggregate({pipeline})"

    def __str__(self) -> str:
        return self.text


def _date(ns: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=ns // 1000)


def _ns(t: dt.datetime | None) -> int | None:
    """A BSON datetime (aware) as epoch ns."""
    return None if t is None else (t - EPOCH) // dt.timedelta(milliseconds=1) * MS


def _match(p: dict) -> dict:
    if p["start"] % MS or p["end"] % MS:
        raise Unsupported("mql: a time window finer than a millisecond (BSON datetimes hold ms)")
    m: dict = {TIME: {"$gte": _date(p["start"]), "$lt": _date(p["end"])}}
    if p.get("tag_values") is not None:
        m[f"{TAGS}.{p['tag']}"] = {"$in": list(p["tag_values"])}
    vf = p.get("value_filter")
    if vf:
        m[vf["field"]] = {COMPARE[vf["op"]]: float(vf["value"])}
    return m


def _unbucket(p: dict | None) -> list:
    """The bucket layout's first stages: the buckets of the window's hours and the tag
    filter (p None: every bucket), then one document per event as the point layout has it."""
    pre: list = []
    if p is not None:
        m: dict = {HOUR: {"$gte": _date(p["start"] // HOUR_NS * HOUR_NS), "$lt": _date(p["end"])}}
        if p.get("tag_values") is not None:
            m[f"{TAGS}.{p['tag']}"] = {"$in": list(p["tag_values"])}
        pre.append({"$match": m})
    return pre + [{"$unwind": f"${EVENTS}"},
                  {"$replaceRoot": {"newRoot": {"$mergeObjects": [{TAGS: f"${TAGS}"}, f"${EVENTS}"]}}}]


def _value(kind: str, v):
    if v is None:
        return None
    return int(v) if kind == "int" else float(v)


def _mod_floor(ms: dict, width_ms: int) -> dict:
    """A bucket's start in epoch ms: the time minus its remainder (tsbench's form)."""
    return {"$subtract": [ms, {"$mod": [ms, width_ms]}]}


def _aggregate(p: dict, bucket: bool = False, floor: Callable[[dict, int], dict] = _mod_floor) -> MqlQuery:
    has_time, group, values = columns(p)
    agg, fields = p["agg"], p["fields"]
    kinds = [v.kind for v in values]
    limit = int(p["limit"]) if p.get("limit") else None
    desc = p.get("order") == "desc"
    if limit and not desc:
        raise Unsupported("mql: LIMIT without ORDER BY time DESC has no defined answer")
    key: dict = {}
    if has_time:
        if p["bucket"] % MS:
            raise Unsupported("mql: a bucket finer than a millisecond (BSON datetimes hold ms)")
        ms = {"$toLong": f"${TIME}"}
        key["t"] = floor(ms, p["bucket"] // MS)
    for j, g in enumerate(group):
        key[f"g{j}"] = f"${TAGS}.{g}"
    acc: dict = {"_id": key or None}
    for j, f in enumerate(fields):
        acc[f"n{j}"] = {"$sum": {"$cond": [{"$gt": [f"${f}", None]}, 1, 0]}}
        if agg != "count":
            acc[f"v{j}"] = {ACCUMULATORS[agg]: f"${f}"}
    match = _match(p)
    pipeline: list = [*(_unbucket(p) if bucket else ()), {"$match": match}, {"$group": acc}]
    if desc:
        pipeline.append({"$sort": {"_id.t": -1}})
    if limit:
        pipeline.append({"$limit": limit})

    def cell(d: dict, j: int):
        n = d.get(f"n{j}") or 0
        if agg == "count":
            return int(n)
        return _value(kinds[j], d.get(f"v{j}")) if n else None

    def read(docs: list[dict]) -> list[tuple]:
        if not has_time and not group and not docs:
            return [tuple(0 if agg == "count" else None for _ in fields)]
        rows = []
        for d in docs:
            k = d["_id"] or {}
            rows.append(((k["t"] * MS,) if has_time else ()) + tuple(k.get(f"g{j}") for j in range(len(group)))
                        + tuple(cell(d, j) for j in range(len(fields))))
        return rows
    return MqlQuery(p["measurement"], pipeline, read)


def _rows(p: dict, bucket: bool = False) -> MqlQuery:
    _, tags, values = columns(p)
    kinds = [v.kind for v in values]
    match = _match(p)
    pipeline: list = [*(_unbucket(p) if bucket else ()), {"$match": match}, {"$sort": {TIME: 1}}]
    if p.get("limit"):
        pipeline.append({"$limit": int(p["limit"])})
    pipeline.append({"$project": {"_id": 0, TIME: 1, **{f"{TAGS}.{g}": 1 for g in tags},
                                  **{f: 1 for f in p["fields"]}}})

    def read(docs: list[dict]) -> list[tuple]:
        return [(_ns(d[TIME]), *((d.get(TAGS) or {}).get(g) for g in tags),
                 *(_value(k, d.get(f)) for k, f in zip(kinds, p["fields"]))) for d in docs]
    return MqlQuery(p["measurement"], pipeline, read)


def _last(p: dict, bucket: bool = False) -> MqlQuery:
    _, group, values = columns(p)
    kinds = [v.kind for v in values]
    firsts = {f"v{j}": {"$first": f"${f}"} for j, f in enumerate(p["fields"])}
    pipeline = [*(_unbucket(None) if bucket else ()), {"$sort": {TIME: -1}},
                {"$group": {"_id": {f"g{j}": f"${TAGS}.{g}" for j, g in enumerate(group)},
                            "t": {"$first": f"${TIME}"}, **firsts}}]

    def read(docs: list[dict]) -> list[tuple]:
        return [(_ns(d["t"]), *(d["_id"].get(f"g{j}") for j in range(len(group))),
                 *(_value(k, d.get(f"v{j}")) for j, k in enumerate(kinds))) for d in docs]
    return MqlQuery(p["measurement"], pipeline, read)


# ---- other forms of the devops questions (benchmarks/dialects.py times them) ------------------

def _divide_floor(ms: dict, width_ms: int) -> dict:
    """A bucket's start by $floor of a $divide (double math, exact for epoch ms) times the width."""
    return {"$toLong": {"$multiply": [{"$floor": {"$divide": [ms, width_ms]}}, width_ms]}}


def _floor_divide(d: Mql, p: dict) -> MqlQuery:
    return _aggregate(p, d.bucket, _divide_floor)


def _last_max_document(d: Mql, p: dict) -> MqlQuery:
    """lastpoint without a sort: per group, $max of a document whose first field is the time
    (documents compare field by field, so the newest record's wins)."""
    _, group, values = columns(p)
    kinds = [v.kind for v in values]
    newest = {"t": f"${TIME}", **{f"v{j}": f"${f}" for j, f in enumerate(p["fields"])}}
    pipeline = [*(_unbucket(None) if d.bucket else ()),
                {"$group": {"_id": {f"g{j}": f"${TAGS}.{g}" for j, g in enumerate(group)}, "r": {"$max": newest}}}]

    def read(docs: list[dict]) -> list[tuple]:
        return [(_ns(x["r"]["t"]), *(x["_id"].get(f"g{j}") for j in range(len(group))),
                 *(_value(k, x["r"].get(f"v{j}")) for j, k in enumerate(kinds))) for x in docs]
    return MqlQuery(p["measurement"], pipeline, read)


class Mql(Dialect):
    """Other forms (benchmarks/dialects.py, `nox -s bench_dialects`): buckets by $floor of a
    $divide against tsbench's $subtract of the $mod ($dateTrunc, MongoDB 5.0's, is not in
    the stand-in); lastpoint by $max of a time-first document against $sort + $first.
    Recorded on the stand-in (10 hosts x 6 h, busy machine): floor-divide at 0.82-1.1x of
    tsbench's with no consistent sign, max-document 1.16x faster on lastpoint. tsbench's
    $mod is kept (form_reasons): integer math, exact for any epoch, where $divide is
    double math."""

    name = "mql"

    def __init__(self, layout: str = "point"):
        self.bucket = layout == "bucket"         # point and timeseries query the same documents

    def aggregate(self, p: dict) -> MqlQuery:
        return _aggregate(p, self.bucket)

    def rows(self, p: dict) -> MqlQuery:
        return _rows(p, self.bucket)

    def last(self, p: dict) -> MqlQuery:
        return _last(p, self.bucket)


Mql.form_reasons = {t: "$subtract of the $mod is exact integer math on the epoch ms, $floor of a $divide is "
                       "double math; measured 0.82-1.1x of tsbench's on the stand-in with no consistent sign"
                    for t in TSBS_DEVOPS if CATALOG[t].shape == "aggregate"}
Mql.forms = {name: ({"max-document": _last_max_document} if name == "lastpoint" else {"floor-divide": _floor_divide})
             for name in TSBS_DEVOPS if CATALOG[name].shape in ("aggregate", "last")}
