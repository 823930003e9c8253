"""Sample counts in PromQL (phase 2: the count that verifies a load): the expressions
and time slices; target.py sends them. A series is named as Telegraf's Prometheus output
names it: `__name__` = measurement_field, the tags as labels."""

from __future__ import annotations

import itertools
import re

from tsbench.core.model import Table


def metric_regex(t: Table, field: str | None = None) -> str:
    """The metric names of table t's fields (or of one), as one RE2 alternation inside a PromQL string."""
    return "|".join(re.sub(r"([\\.+*?()|\[\]{}^$\"])", r"\\\\\1", f"{t.name}_{f}")
                    for f in ([field] if field else t.field_names))


def slices(lo_ms: int, hi_ms: int, n: int) -> list[tuple[int, int]]:
    """[lo, hi) in at most n nearly equal slices of at least 2 ms (count_expr's window of
    b-1-a ms must not be empty: PromQL refuses a zero range)."""
    n = max(1, min(n, (hi_ms - lo_ms) // 2))
    cuts = [lo_ms + (hi_ms - lo_ms) * i // n for i in range(n + 1)]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def count_expr(names: str, a_ms: int, b_ms: int) -> tuple[str, int]:
    """sum(count_over_time(...)) over the samples of the metrics in [a, b) ms (b - a >= 2),
    and its evaluation time (whole seconds). Prometheus 2.x closes a range window at both
    ends, [t-d, t] (MetricsQL and Prometheus 3 leave out t-d), so t-o = b-1 and d = b-1-a
    give exactly [a, b-1]; `offset o` takes the window back from a whole second."""
    t_s = -(-(b_ms - 1) // 1000)
    off = t_s * 1000 - (b_ms - 1)
    sel = f'{{__name__=~"{names}"}}[{b_ms - 1 - a_ms}ms]' + (f" offset {off}ms" if off else "")
    return f"sum(count_over_time({sel}))", t_s
