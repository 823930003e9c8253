"""Series selectors and sample counts in PromQL and MetricsQL (phase 2: create's
emptiness check and drop, and the count and stats that verify a load): the
expressions and time slices; shared/promapi.py sends them. A series is named as
Telegraf's Prometheus output names it: `__name__` = measurement_field, the tags
as labels."""

from __future__ import annotations

import itertools

from tsbench.core.model import Table
from tsbench.databases.shared.promql import regex_quote

NOCACHE_LABEL = "tsbench_nocache"

_nonce = itertools.count(1)


def selector(name_regex: str) -> str:
    """A series selector the server cannot answer from its tag-filters cache: that cache
    (VictoriaMetrics') can hold a stale answer for seconds after new series arrive (seen on
    1.79: an empty store's answer to {__name__=~".+"} outlived a load, so a drop deleted
    nothing), so each selector carries a never-matching negative filter of its own."""
    return f'{{__name__=~"{name_regex}",{NOCACHE_LABEL}!="{next(_nonce)}"}}'


def plain_selector(name_regex: str) -> str:
    """A series selector of the metrics name_regex matches."""
    return f'{{__name__=~"{name_regex}"}}'


def metric_regex(t: Table, fields=None, spell=str) -> str:
    """The metric names of table t's fields (or of those named), as the server spells them
    (spell), as one RE2 alternation inside a double-quoted string."""
    return "|".join(regex_quote(spell(f"{t.name}_{f}")) for f in (t.field_names if fields is None else fields))


def slices(lo_ms: int, hi_ms: int, n: int, min_ms: int = 1) -> list[tuple[int, int]]:
    """[lo, hi) in at most n nearly equal slices of whole milliseconds, each at least
    min_ms wide (a closed window's range, one less than its width, may not be empty)."""
    n = max(1, min(n, (hi_ms - lo_ms) // min_ms))
    cuts = [lo_ms + (hi_ms - lo_ms) * i // n for i in range(n + 1)]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def count_expr(series: str, a_ms: int, b_ms: int, closed: bool = False) -> tuple[str, int]:
    """A query and its evaluation time (whole seconds) counting the samples of the series
    selector in [a, b) ms."""
    return window_expr("sum", "count_over_time", series, a_ms, b_ms, closed)


def window_expr(agg: str, rollup: str, series: str, a_ms: int, b_ms: int, closed: bool = False) -> tuple[str, int]:
    """agg(rollup(series[window])) over the samples in [a, b) ms, and its evaluation time
    (whole seconds). A range window [d] at t covers (t-d, t] (MetricsQL, Prometheus 3) or
    [t-d, t] (closed: Prometheus 2); `offset o` shifts it back by o, so t-o = b-1 and
    d = b-a (closed: b-1-a) give exactly [a, b-1]."""
    t_s = -(-(b_ms - 1) // 1000)
    off = t_s * 1000 - (b_ms - 1)
    return f"{agg}({rollup}({series}[{b_ms - a_ms - closed}ms]{f' offset {off}ms' if off else ''}))", t_s
