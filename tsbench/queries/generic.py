"""The generic query family (phase 3): query types drawn from any dataset's schema
(a generated use case, a custom YAML schema, later an imported file), each an
existing shape (queries/shapes.py: aggregate, rows, last), so every dialect that
implements the shape renders it and the reference engine answers it.

Every parameter comes from the schema, the time range and the entity tag values
of the DatasetContext, and from the generator of (seed, type, index):

* the measurement: one drawn among those with a numeric field and a series tag;
* the series tag: the measurement's entity tag with the most distinct values
  (ties: the first), K of its (non-null) values drawn for the series; the newest
  row is taken per series tag where each entity has a value of its own, else
  per every tag of the measurement (series_key);
* the fields: N distinct numeric fields drawn, in the schema's order;
* the window: a quarter of the dataset's span, a whole number of buckets, its
  start drawn on a bucket boundary; the bucket the shortest of BUCKETS at least
  the sampling interval and a WINDOW_BUCKETS-th of the window;
* the group tag: one drawn among the measurement's entity tags with 2 or more
  distinct values;
* the threshold (generic-above-p90): the 90th percentile of the per-bucket
  maxima of the field over the window, asked of the reference engine (an
  aggregate max query, answered and cached like every other): every bucket
  whose maximum reaches it (a tenth of the buckets at least) has a row at or
  above it, so the answer is never empty when the window holds a value.

A type that cannot apply to a schema (no numeric field, no tag with several
values, fewer than its series) says why in applies(). Only the entity tags' values
are known before a database is asked (DatasetContext.entity_tags): a tag a
measurement has of its own (devops' diskio serial) is never chosen. Entity values
are looked at for the first SCAN_ENTITIES entities only. Imported data
(DatasetContext.tag_values, queries/storedview.py) knows every tag's values, per
measurement and sorted: any tag of a measurement can be its series or group tag,
and its series are told apart by all its tags."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:      # numpy's generator is only named in annotations (a target's dialects start without numpy)
    import numpy as np

from tsbench.queries.base import MINUTE, DatasetContext, QuerySpec, QueryType, draw_window
from tsbench.queries.catalog import read_rows, register

SECOND = 10**9
BUCKETS = (SECOND, 10 * SECOND, MINUTE, 5 * MINUTE, 10 * MINUTE, 30 * MINUTE, 60 * MINUTE, 6 * 60 * MINUTE,
           24 * 60 * MINUTE, 7 * 24 * 60 * MINUTE)
WINDOW_BUCKETS = 120      # at most this many buckets in a window (a longer window takes a wider bucket)
SCAN_ENTITIES = 4096      # entity values looked at to find a tag's distinct values
QUANTILE = 0.9            # the threshold's percentile among the window's bucket maxima
NUMERIC = ("float", "int")


# ---- what a schema offers ------------------------------------------------------------------

def numeric_fields(ctx: DatasetContext, m: str) -> list[str]:
    return [f.name for f in ctx.table(m).fields if f.type in NUMERIC]


def distinct_values(ctx: DatasetContext, tag: str, m: str | None = None) -> list[str]:
    """A tag's distinct non-null values: in measurement m where the context knows every tag's
    (imported data), else the entity tag's, in entity order (the first SCAN_ENTITIES entities);
    found once per context."""
    if ctx.tag_values is not None and m is not None:
        return ctx.tag_values(m, tag)           # kept by the context's TagValues
    key = ("generic-distinct", tag)
    if key not in ctx.memo:
        vals = ctx.entity_tags[tag]
        ctx.memo[key] = list(dict.fromkeys(v for v in (vals[i] for i in range(min(len(vals), SCAN_ENTITIES)))
                                           if v is not None))
    return ctx.memo[key]


def series_tag(ctx: DatasetContext, m: str) -> str | None:
    """The measurement's entity tag with the most distinct values (None: it has none with a value)."""
    best, most = None, 0
    for tag in ctx.table(m).tags:
        n = len(distinct_values(ctx, tag, m)) if tag in ctx.entity_tags else 0
        if n > most:
            best, most = tag, n
    return best


def series_key(ctx: DatasetContext, m: str) -> list[str]:
    """The tags that tell the measurement's series apart: the series tag where each entity has
    a value of its own (devops' hostname), else every tag of the measurement (synthetic's
    tag0 x tag1, and any imported measurement)."""
    if ctx.tag_values is not None:
        return list(ctx.table(m).tags)
    tag = series_tag(ctx, m)
    if len(distinct_values(ctx, tag)) == min(len(ctx.entity_tags[tag]), SCAN_ENTITIES):
        return [tag]
    return list(ctx.table(m).tags)


def group_tags(ctx: DatasetContext, m: str) -> list[str]:
    """The measurement's entity tags with several distinct values."""
    return [t for t in ctx.table(m).tags if t in ctx.entity_tags and len(distinct_values(ctx, t, m)) >= 2]


def measurements(ctx: DatasetContext, series: int = 1, grouped: bool = False) -> list[str]:
    """The measurements a generic type can read: a numeric field, a series tag with at least
    `series` values, and (grouped) a tag with several values."""
    out = []
    for t in ctx.tables.tables:
        tag = series_tag(ctx, t.name)
        if numeric_fields(ctx, t.name) and tag and len(distinct_values(ctx, tag, t.name)) >= series and \
                (not grouped or group_tags(ctx, t.name)):
            out.append(t.name)
    return out


def bucket_of(ctx: DatasetContext) -> int:
    """The bucket width of the dataset's windows (module docstring)."""
    need = max(ctx.interval_ns, _width(ctx) // WINDOW_BUCKETS)
    return next((b for b in BUCKETS if b >= need), BUCKETS[-1])


def _width(ctx: DatasetContext) -> int:
    return max((ctx.end_ns - ctx.start_ns) // 4, 1)


def window_of(rng: np.random.Generator, ctx: DatasetContext) -> tuple[int, int, int]:
    """(start, end, bucket): a quarter of the span in whole buckets, its start on a bucket boundary."""
    bucket = bucket_of(ctx)
    start, end = draw_window(rng, ctx, max(bucket, _width(ctx) // bucket * bucket), bucket)
    return start, end, bucket


def _pick(rng, items: list, n: int) -> list:
    """n distinct items drawn, in their given order."""
    idx = rng.choice(len(items), size=min(n, len(items)), replace=False)
    return [items[i] for i in sorted(int(i) for i in idx)]


def _types(ctx: DatasetContext, m: str, fields: list[str]) -> list[str]:
    by = {f.name: f.type for f in ctx.table(m).fields}
    return [by[f] for f in fields]


# ---- drawing -------------------------------------------------------------------------------

def _draw_measurement(rng, ctx: DatasetContext, series: int = 1, grouped: bool = False) -> str:
    ms = measurements(ctx, series, grouped)
    return ms[int(rng.integers(0, len(ms)))]


def _aggregate(rng, ctx: DatasetContext, agg: str, nfields: int, series: int) -> dict:
    m = _draw_measurement(rng, ctx, series)
    fields = _pick(rng, numeric_fields(ctx, m), nfields)
    tag = series_tag(ctx, m)
    start, end, bucket = window_of(rng, ctx)
    return {"shape": "aggregate", "measurement": m, "agg": agg, "fields": fields, "types": _types(ctx, m, fields),
            "tag": tag, "tag_values": _pick(rng, distinct_values(ctx, tag, m), series), "start": start, "end": end,
            "bucket": bucket, "group_by": []}


def _group_by(rng, ctx: DatasetContext, agg: str) -> dict:
    m = _draw_measurement(rng, ctx, grouped=True)
    fields = _pick(rng, numeric_fields(ctx, m), 1)
    tags = group_tags(ctx, m)
    start, end, _ = window_of(rng, ctx)
    return {"shape": "aggregate", "measurement": m, "agg": agg, "fields": fields, "types": _types(ctx, m, fields),
            "tag": None, "tag_values": None, "start": start, "end": end, "bucket": None,
            "group_by": [tags[int(rng.integers(0, len(tags)))]]}


def _last(rng, ctx: DatasetContext) -> dict:
    m = _draw_measurement(rng, ctx)
    fields = numeric_fields(ctx, m)
    return {"shape": "last", "measurement": m, "fields": fields, "types": _types(ctx, m, fields),
            "group_by": series_key(ctx, m)}


def _above(rng, ctx: DatasetContext) -> dict:
    """Rows of one field at or above the QUANTILE of its bucket maxima over a window, all series."""
    m = _draw_measurement(rng, ctx)
    fields = _pick(rng, numeric_fields(ctx, m), 1)
    start, end, bucket = window_of(rng, ctx)
    maxima = {"shape": "aggregate", "measurement": m, "agg": "max", "fields": fields,
              "types": _types(ctx, m, fields), "tag": None, "tag_values": None, "start": start, "end": end,
              "bucket": bucket, "group_by": []}
    values = sorted(r[-1] for r in ctx.reference().expected(QuerySpec(-1, "generic-above-p90", maxima))
                    if r[-1] is not None)
    threshold = float(values[int(QUANTILE * (len(values) - 1))]) if values else 0.0
    return {"shape": "rows", "measurement": m, "fields": fields, "types": _types(ctx, m, fields), "tag": None,
            "tag_values": None, "start": start, "end": end,
            "value_filter": {"field": fields[0], "op": ">=", "value": threshold}, "tags_out": [series_tag(ctx, m)]}


def _scan_table(rng, ctx: DatasetContext):
    return ctx.table(_draw_measurement(rng, ctx))


# ---- the types -----------------------------------------------------------------------------

@dataclass(frozen=True)
class GenericType(QueryType):
    """A generic type: it applies where the schema offers what it draws from."""

    series: int = 1                 # series (values of the series tag) it needs
    grouped: bool = False           # whether it needs a tag with several values
    reference: bool = False         # whether drawing asks the reference engine

    def applies(self, ctx: DatasetContext) -> str | None:
        if self.reference and ctx.reference is None:
            return f"query type {self.name} draws its threshold from the reference engine, which is not at hand"
        if measurements(ctx, self.series, self.grouped):
            return None
        what = "a tag with several values" if self.grouped else \
            f"an entity tag with {self.series} distinct value(s)"
        return (f"query type {self.name} needs a measurement with a numeric field and {what}, which the "
                f"dataset ({ctx.use_case}) lacks")


def _generic(name: str, doc: str, make, shape: str, **kw) -> None:
    register(GenericType(name, "generic", doc, {}, make, shape, **kw))


# aggregates: (agg, fields N, series K); N and K are at most (a schema with fewer takes all it has of fields)
AGGREGATES = (("max", 1, 1), ("mean", 4, 1), ("min", 1, 4), ("sum", 4, 4), ("count", 4, 4))
for agg, n, k in AGGREGATES:
    _generic(f"generic-{agg}-{'n' if n > 1 else 1}-{k}",
             f"{agg} of {'up to ' if n > 1 else ''}{n} numeric field(s) of {k} series (values of the series tag) "
             f"per bucket over a quarter of the data's span", partial(_aggregate, agg=agg, nfields=n, series=k),
             "aggregate", series=k)
_generic("generic-groupby-tag", "mean of 1 numeric field per value of a tag with several values, over a quarter "
         "of the data's span", partial(_group_by, agg="mean"), "aggregate", grouped=True)
_generic("generic-lastpoint", "the newest row (every numeric field) of each series (per the tags that tell "
         "series apart)", _last, "last")
_generic("generic-above-p90", "rows of 1 numeric field at or above the 90th percentile of its bucket maxima, "
         "all series, over a quarter of the data's span", _above, "rows", reference=True)
_generic("generic-scan", "every row of a measurement (the relational family's read-all, on a drawn measurement)",
         partial(read_rows, part="all", pick=_scan_table), "rows")

ROWS_FILTERED = ("generic-above-p90",)        # the generic types that filter rows on a field's value
