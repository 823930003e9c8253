"""The MetricsQL dialect (phase 3 render, phase 5 read back): what it shares with
PromQL is shared/promql.py's PromRenderer (the basic shapes as requests to
/api/v1/query and /api/v1/query_range, the reading of their JSON answers); here
MetricsQL's own: one selector grouped by __name__ for several fields
(keep_metric_names), filters on raw samples (count_gt_over_time and its kin), the
last shape (tlast_over_time), label_set and union, names written as they are, and
the other forms benchmarks/dialects.py measures. target.py sends the requests (phase 4)."""

from __future__ import annotations

import dataclasses
import math
import re

from tsbench.core.errors import ServerLacks
from tsbench.databases.shared.promql import (  # noqa: F401 (AnswerRows, FAR_FUTURE_S, regex_quote: the target's)
    FAR_FUTURE_S,
    FIELD_LABEL,
    ROWS_WHERE,
    AnswerRows,
    PromQuery,
    PromRenderer,
    PromRequest,
    _dur,
    _metric_names,
    _num,
    _plain_agg,
    regex_quote,
)
from tsbench.queries.generic import ROWS_FILTERED

VMRequest = PromRequest             # the names VictoriaMetrics' target and tests use
VMQuery = PromQuery
# last: a window back to 1970-01-02 from 2100; 1.79 answers nothing when the window reaches 0
LAST_LOOKBEHIND_S = FAR_FUTURE_S - 86_400
OPTIONAL_FUNCTIONS = ("sum_gt_over_time", "sum_le_over_time", "sum_eq_over_time")   # not in 1.79.5

_ROWS_WHERE = ROWS_WHERE.format(lang="MetricsQL")


def _label(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return "".join(c if c.isalnum() or c == "_" else "\\" + c for c in name)


class MetricsQL(PromRenderer):
    """The basic shapes in MetricsQL; missing_functions: the optional functions
    (OPTIONAL_FUNCTIONS) the server's release lacks, probed by the target at open().

    A mean is sum by (g)(sum_over_time) / sum by (g)(count_over_time), exact for any
    grouping. benchmarks/dialects.py measured it at 1.4-1.8x TSBS's avg(avg_over_time(...))
    by (g) on the double-groupby types (the 2x issue 37 saw on double-groupby-1 is this
    form, not the step or the rollup cache: TSBS's text at tsbench's evaluation points and
    the cache left on are no faster on the other types); computing both rollups in one pass
    (aggr_over_time, summed per group and divided on the client) was no faster either. The
    average of per-series averages is kept out: it is the mean of the group's samples only
    where each group is a single series (devops' hostname happens to name one), not for
    groups of several series with unequal sample counts."""

    name = "metricsql"
    language = "MetricsQL"
    server = "VictoriaMetrics"
    excluded = {"high-cpu-all": _ROWS_WHERE, "high-cpu-1": _ROWS_WHERE, **dict.fromkeys(ROWS_FILTERED, _ROWS_WHERE)}
    one_selector = True         # several fields' max/min/sum/count by one selector (off: a union, one per field)
    nocache = True

    def __init__(self, missing_functions=frozenset()):
        self.missing_functions = frozenset(missing_functions)

    def label(self, name: str) -> str:
        return _label(name)

    def labelled(self, expr: str, value: str) -> str:
        return f'label_set({expr}, "{FIELD_LABEL}", "{value}")'

    def union(self, parts: list[str]) -> str:
        return f"union({', '.join(parts)})"

    def _agg_by_name(self, p: dict, d_ms: int, o_ms: int) -> str:
        """Every field's max, min, sum or count in one expression over one selector of all the
        fields' metrics, grouped by __name__ too (kept through the rollup: keep_metric_names):
        TSBS's form, one index search and one pass instead of a union of one per field."""
        win = (f"{self.series(p, None, _metric_names(p))}[{_dur(d_ms)}]" + (f" offset {_dur(o_ms)}" if o_ms else ""))
        by = ", ".join(["__name__", *(_label(g) for g in p.get("group_by") or [])])
        outer, rollup = ("sum", "count") if p["agg"] == "count" else (p["agg"], p["agg"])
        return f"{outer} by ({by})({rollup}_over_time({win}) keep_metric_names)"

    def filtered_rollup(self, agg: str, op: str, x: float, by: str, win: str) -> str:
        """count_gt_over_time and its kin: raw-sample filters."""
        # raw-sample filters: v >= x is v > prev(x) and v < x is v <= prev(x) for doubles
        below = _num(math.nextafter(x, -math.inf))
        cmp, thr = {">": ("gt", _num(x)), ">=": ("gt", below), "<=": ("le", _num(x)),
                    "<": ("le", below), "=": ("eq", _num(x))}[op]
        count = f"sum{by}(count_{cmp}_over_time({win}, {thr}))"
        if agg == "count":
            return f"{count} > 0"
        fn = f"sum_{cmp}_over_time"
        if fn in self.missing_functions:
            raise ServerLacks(f"metricsql: {agg} of the values {op} {x!r} needs {fn}, which "
                              f"this server's MetricsQL lacks (newer releases have it, e.g. 1.115.0)")
        total = f"sum{by}({fn}({win}, {thr}))"
        if agg == "sum":        # a bucket whose samples all fail the filter has no row, not a sum of 0
            return f"({total}) and ({count} > 0)"
        return f"({total}) / ({count})"        # mean: 0/0 = NaN, which VM leaves out of the answer

    # last: per series and field the newest sample and its time (tlast_over_time) over all
    # time; a series' newest row is at the newest of its fields' times, and a field whose
    # newest sample is older was null in that row.
    def last(self, p: dict) -> VMQuery:
        win = f"[{LAST_LOOKBEHIND_S}s]"
        parts = []
        for i, f in enumerate(p["fields"]):
            sel = self.series(p, f)
            parts.append(f'label_set(tlast_over_time({sel}{win}), "{FIELD_LABEL}", "t{i}")')
            parts.append(f'label_set(last_over_time({sel}{win}), "{FIELD_LABEL}", "v{i}")')
        req = VMRequest("/api/v1/query", f"union({', '.join(parts)})", FAR_FUTURE_S)
        return VMQuery("last", (req,), True, tuple(p["group_by"]), tuple(p["types"]))


# ---- other forms of the same questions (benchmarks/dialects.py measures them) ------------------

class _AvgOfAvg(MetricsQL):
    """A mean as TSBS states it: the average of each series' avg_over_time. The mean of the
    group's samples only where every group is one series (devops: hostname names the series)."""

    def plain_agg(self, agg: str, by: str, win: str) -> str:
        return f"avg{by}(avg_over_time({win}))" if agg == "mean" else _plain_agg(agg, by, win)


class _UnionPerField(MetricsQL):
    """Several fields' aggregates as a union of one expression per field (tsbench's form
    before the one selector grouped by __name__)."""

    one_selector = False


class _TsbsText(_AvgOfAvg):
    """TSBS's expressions: `agg(agg_over_time(sel[w])) by (__name__, group)`, evaluated at
    tsbench's points (a bucket of TSBS's own grid is (t - w, t], not [t - w, t))."""

    def plain_agg(self, agg: str, by: str, win: str) -> str:
        if agg not in ("max", "min", "mean"):
            return _plain_agg(agg, by, win)
        groups = by[len(" by ("):-1].split(", ") if by else []
        fn = "avg" if agg == "mean" else agg
        return f"{fn}({fn}_over_time({win})) by ({', '.join(['__name__', *groups])})"


class _OnePassMean(MetricsQL):
    """A mean's sum and count in one pass over the samples: aggr_over_time of both rollups,
    summed per group and rollup (label `rollup`); the client divides (mean_parts)."""

    def plain_agg(self, agg: str, by: str, win: str) -> str:
        if agg != "mean":
            return _plain_agg(agg, by, win)
        groups = by[len(" by ("):-1].split(", ") if by else []
        return (f"sum by ({', '.join([*groups, 'rollup'])})"
                f"(aggr_over_time((\"sum_over_time\", \"count_over_time\"), {win}))")

    def aggregate(self, p: dict) -> VMQuery:
        q = super().aggregate(p)
        return dataclasses.replace(q, mean_parts=True) if p["agg"] == "mean" and not p.get("value_filter") else q


def _with(cls):
    def render(d: MetricsQL, p: dict) -> VMQuery:
        return cls(d.missing_functions).aggregate(p)
    return render


def _cached(d: MetricsQL, p: dict) -> VMQuery:
    """tsbench's requests without nocache=1: VictoriaMetrics' rollup result cache may answer
    a query it has seen (every round after the first, here): what TSBS's requests get."""
    q = d.aggregate(p)
    return dataclasses.replace(q, requests=tuple(dataclasses.replace(r, nocache=False) for r in q.requests))


_BUCKETED = ("single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-1-8-1", "single-groupby-5-1-1",
             "single-groupby-5-1-12", "single-groupby-5-8-1", "cpu-max-all-1", "cpu-max-all-8")
_MEAN_OF_SERIES = ("the faster avg(avg_over_time) (TSBS's form, avg-of-avg) averages per-series averages: the "
                   "mean of the samples only where every group is one series, as devops' hostname groups are; "
                   "tsbench's sum/count is exact for any grouping (MetricsQL's docstring)")
MetricsQL.form_reasons = {t: _MEAN_OF_SERIES for t in ("double-groupby-1", "double-groupby-5", "double-groupby-all")}
MetricsQL.forms = {
    **{t: {"tsbs-text": _with(_TsbsText), "rollup-cache": _cached,
           **({"union-per-field": _with(_UnionPerField)} if t.startswith(("single-groupby-5", "cpu-max-all")) else {})}
       for t in _BUCKETED},
    **{t: {"one-pass-sum-count": _with(_OnePassMean), "avg-of-avg": _with(_AvgOfAvg), "tsbs-text": _with(_TsbsText), "rollup-cache": _cached}
       for t in ("double-groupby-1", "double-groupby-5", "double-groupby-all")},
}
