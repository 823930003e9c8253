"""Series selectors and sample counts in MetricsQL (phase 2: create's emptiness
check and drop, and the count that verifies a load): the PromQL expressions
and time slices; target.py sends them."""

from __future__ import annotations

import itertools

from tsbench.core.model import Table
from tsbench.databases.victoriametrics.dialect import regex_quote

NOCACHE_LABEL = "tsbench_nocache"

_nonce = itertools.count(1)


def selector(name_regex: str) -> str:
    """A series selector the server cannot answer from its tag-filters cache: that cache
    can hold a stale answer for seconds after new series arrive (seen on 1.79: an empty
    store's answer to {__name__=~".+"} outlived a load, so a drop deleted nothing), so
    each selector carries a never-matching negative filter of its own."""
    return f'{{__name__=~"{name_regex}",{NOCACHE_LABEL}!="{next(_nonce)}"}}'


def metric_regex(t: Table) -> str:
    """The metric names of table t's fields, as one RE2 alternation."""
    return "|".join(regex_quote(f"{t.name}_{f}") for f in t.field_names)


def slices(lo_ms: int, hi_ms: int, n: int) -> list[tuple[int, int]]:
    """[lo, hi) in n nearly equal slices of whole milliseconds."""
    n = max(1, min(n, hi_ms - lo_ms))
    cuts = [lo_ms + (hi_ms - lo_ms) * i // n for i in range(n + 1)]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def count_expr(series: str, a_ms: int, b_ms: int) -> tuple[str, int]:
    """A query and its evaluation time (whole seconds) counting the samples of the series
    selector in [a, b) ms."""
    return window_expr("sum", "count_over_time", series, a_ms, b_ms)


def window_expr(agg: str, rollup: str, series: str, a_ms: int, b_ms: int) -> tuple[str, int]:
    """agg(rollup(series[window])) over the samples in [a, b) ms, and its evaluation time
    (whole seconds). A range window [d] at t covers (t-d, t]; `offset o` shifts it to
    (t-o-d, t-o], so t-o = b-1 and d = b-a give exactly [a, b-1]."""
    t_s = -(-(b_ms - 1) // 1000)
    off = t_s * 1000 - (b_ms - 1)
    return f"{agg}({rollup}({series}[{b_ms - a_ms}ms]{f' offset {off}ms' if off else ''}))", t_s
