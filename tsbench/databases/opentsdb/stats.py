"""What OpenTSDB holds of a measurement, value by value in aggregate (phase 2, value
verification: load.py's stats()): one /api/query per measurement over the dataset's
window whose sub-queries ask each field's metric, series by series (aggregator
`none`), for its `0all-count`, `0all-sum`, `0all-min` and `0all-max`; the series
are merged here. Series: the distinct tag sets with a point in any of the
measurement's metrics.

What is exact (observed on 2.4.1): points keep their value (an int64 as is, a
double as is: raw points of 2^63-1 and of 4.901989101717371 came back unchanged),
but downsampling computes in doubles: the `0all-sum` of 2^53, 1 and 1 is 2^53
and the `0all-max` of 2^63-1 is 9.223372036854776E18. So counts, floats' minima
and maxima, and integers' minima and maxima within 2^53 are exact (stats.exact_int
refuses one beyond); an integer field's sum is not, once a series' running sum
passes 2^53 (the target's value_checks say so), and it is only rounded to an int."""

from __future__ import annotations

from ...model import Table
from .points import metric

AGGS = ("count", "sum", "min", "max")


def body(t: Table, lo_ms: int, hi_ms: int) -> dict:
    """The request: per field, its four whole-window downsamples, series by series."""
    subs = [{"metric": metric(t.name, f), "aggregator": "none", "downsample": f"0all-{agg}"}
            for f in t.field_names for agg in AGGS]
    return {"start": lo_ms, "end": hi_ms, "msResolution": True, "showQuery": True, "queries": subs}


def read(t: Table, answer: list, merge) -> int:
    """The series of the answer into merge (stats.FieldMerge); the distinct tag sets."""
    parts: dict[tuple, dict[str, float]] = {}         # (field, tag set) -> {agg: value}
    for s in answer:
        k = s["query"]["index"]
        field, agg = t.field_names[k // len(AGGS)], AGGS[k % len(AGGS)]
        values = list(s["dps"].values())
        if values:
            parts.setdefault((field, frozenset(s["tags"].items())), {})[agg] = values[0]
    for (field, _), p in parts.items():
        merge.add(field, p.get("count", 0), p.get("sum"), p.get("min"), p.get("max"))
    return len({tags for (_, tags), p in parts.items() if p.get("count")})
