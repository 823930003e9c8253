"""What an Elasticsearch/OpenSearch index holds, value by value in aggregate (phase 2,
value verification: target.py's stats()). One search per index over the dataset's
window: a `stats` aggregation per float field (count, min and max exact; the sum a
double with the server's compensated summation), and for the integer fields one
`scripted_metric` in Painless that keeps count, min and max as Java longs per shard
and the sum as two long sums, of each value's high 32 bits (v >> 32) and of its low
32 bits (v & 0xFFFFFFFF), which no shard of under 2^31 documents can overflow; the
`stats` of a `long` field are doubles, rounded beyond 2^53, and one long sum
overflows at a few million documents of 2^40 (DevOps' disk totals). The shards' states come
back as they are and are added here exactly. Series: a `composite` aggregation over
every tag (`missing_bucket`: a null tag is a value of its own), page by page."""

from __future__ import annotations

from tsbench.core.model import Table
from tsbench.databases.elasticsearch.dialect import window

SERIES_PAGE = 1000
INT_INIT = ("int k = params.f.size(); state.n = new long[k]; state.hs = new long[k]; state.ls = new long[k]; "
            "state.lo = new long[k]; state.hi = new long[k]; for (int i = 0; i < k; i++) { "
            "state.lo[i] = Long.MAX_VALUE; state.hi[i] = Long.MIN_VALUE; }")
INT_MAP = ("long[] n = state.n; long[] hs = state.hs; long[] ls = state.ls; long[] lo = state.lo; "
           "long[] hi = state.hi; for (int i = 0; i < n.length; i++) { def d = doc[params.f[i]]; "
           "for (int j = 0; j < d.size(); j++) { long v = d.get(j); n[i] += 1; hs[i] += v >> 32; "
           "ls[i] += v & 0xFFFFFFFFL; if (v < lo[i]) { lo[i] = v; } if (v > hi[i]) { hi[i] = v; } } }")
INT_COMBINE = "return ['n': state.n, 'hs': state.hs, 'ls': state.ls, 'lo': state.lo, 'hi': state.hi];"
INT_REDUCE = "return states;"


def fields_body(t: Table, start_ns: int, end_ns: int) -> dict:
    """The search of t's field figures over [start_ns, end_ns)."""
    aggs: dict = {f"f{j}": {"stats": {"field": f.name}} for j, f in enumerate(t.fields) if f.type == "float"}
    ints = [f.name for f in t.fields if f.type == "int"]
    if ints:
        aggs["ints"] = {"scripted_metric": {"params": {"f": ints}, "init_script": INT_INIT, "map_script": INT_MAP,
                                            "combine_script": INT_COMBINE, "reduce_script": INT_REDUCE}}
    return {"size": 0, "track_total_hits": True, "query": window(start_ns, end_ns), "aggs": aggs}


def read_fields(t: Table, doc: dict, merge) -> None:
    """The answer of fields_body() into merge (stats.FieldMerge)."""
    aggs = doc.get("aggregations") or {}
    for j, f in enumerate(t.fields):
        if f.type == "float":
            s = aggs[f"f{j}"]
            merge.add(f.name, s["count"], s["sum"], s["min"], s["max"])
    ints = [f.name for f in t.fields if f.type == "int"]
    for shard in (aggs.get("ints") or {}).get("value") or ():
        if shard is None:            # a shard without documents
            continue
        for i, name in enumerate(ints):
            total = (shard["hs"][i] << 32) + shard["ls"][i]
            merge.add(name, shard["n"][i], total, shard["lo"][i], shard["hi"][i])


def series_body(t: Table, start_ns: int, end_ns: int, after: dict | None) -> dict:
    """One page of t's distinct tag sets with a document in the window."""
    sources = [{f"t{i}": {"terms": {"field": tag, "missing_bucket": True}}} for i, tag in enumerate(t.tags)]
    comp: dict = {"size": SERIES_PAGE, "sources": sources}
    if after is not None:
        comp["after"] = after
    return {"size": 0, "query": window(start_ns, end_ns), "aggs": {"series": {"composite": comp}}}


def read_series(doc: dict) -> tuple[int, dict | None]:
    """(tag sets on this page, the key to ask the next page after, or None at the end)."""
    comp = (doc.get("aggregations") or {}).get("series") or {}
    buckets = comp.get("buckets") or []
    return len(buckets), (comp.get("after_key") if len(buckets) == SERIES_PAGE else None)
