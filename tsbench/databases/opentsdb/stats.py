"""What OpenTSDB holds of a measurement, value by value in aggregate (phase 2, value
verification: target.py's stats()): one /api/query per field over the dataset's
window (a request's work bounded by one metric's points) whose sub-queries ask the
field's metric, series by series (aggregator `none`), for its `0all-count`,
`0all-sum`, `0all-min` and `0all-max`; the series are merged here. Series: the
distinct tag sets with a point in any of the measurement's metrics.

What is exact (observed on 2.4.1): points keep their value (an int64 as is, a
double as is: raw points of 2^63-1 and of 4.901989101717371 came back unchanged),
but downsampling computes in doubles: the `0all-sum` of 2^53, 1 and 1 is 2^53
and the `0all-max` of 2^63-1 is 9.223372036854776E18. So counts, floats' minima
and maxima, and integers' minima and maxima within 2^53 are exact (stats.exact_int
refuses one beyond); an integer field's sum is not, once a series' running sum
passes 2^53 (the target's value_checks say so), and it is only rounded to an int."""

from __future__ import annotations

from tsbench.core.model import Table
from tsbench.databases.opentsdb.points import metric

AGGS = ("count", "sum", "min", "max")


def body(t: Table, field: str, lo_ms: int, hi_ms: int) -> dict:
    """The request of one field: its four whole-window downsamples, series by series."""
    subs = [{"metric": metric(t.name, field), "aggregator": "none", "downsample": f"0all-{agg}"} for agg in AGGS]
    return {"start": lo_ms, "end": hi_ms, "msResolution": True, "showQuery": True, "queries": subs}


def read(field: str, answer: list, merge) -> set[frozenset]:
    """The series of a field's answer into merge (stats.FieldMerge); the tag sets with a point."""
    parts: dict[frozenset, dict[str, float]] = {}         # tag set -> {agg: value}
    for s in answer:
        values = list(s["dps"].values())
        if values:
            parts.setdefault(frozenset(s["tags"].items()), {})[AGGS[s["query"]["index"]]] = values[0]
    for p in parts.values():
        merge.add(field, p.get("count", 0), p.get("sum"), p.get("min"), p.get("max"))
    return {tags for tags, p in parts.items() if p.get("count")}
