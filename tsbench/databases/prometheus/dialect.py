"""The PromQL dialect (phase 3 render, phase 5 read back): plain PromQL as Prometheus
2.42 runs it, on shared/promql.py's PromRenderer (the basic shapes as requests to
/api/v1/query and /api/v1/query_range, and their answers read back), with what
PromQL lacks of MetricsQL excluded, each with its reason.

The series are named as remote-write named them (shared/remote_write.py: names
sanitized as the C encoder does). Prometheus 2's range windows are closed at both
ends ([t-d, t]), so a window of n ms is [n-1ms]. One expression per field, each
labelled with label_replace and joined with `or` (PromQL has no label_set or
union; `or` keeps both, their labels differ)."""

from __future__ import annotations

from tsbench.databases.shared.promql import FIELD_LABEL, ROWS_WHERE, PromRenderer
from tsbench.databases.shared.remote_write import series_name
from tsbench.queries.catalog import CATALOG
from tsbench.queries.generic import ROWS_FILTERED

_ROWS_WHERE = ROWS_WHERE.format(lang="PromQL")
_LAST = ("the newest row needs each field's newest sample with its own time: PromQL's timestamp() of "
         "last_over_time gives the evaluation time, and its instant selector looks back 5 minutes only "
         "(MetricsQL has tlast_over_time)")
_FILTERED = ("an aggregate of the samples above a threshold needs a filter on raw samples in a range "
             "(MetricsQL's count_gt_over_time, sum_gt_over_time); PromQL filters only evaluated points")


class PromQL(PromRenderer):
    """The basic shapes in PromQL (Prometheus 2.42)."""

    name = "promql"
    language = "PromQL"
    server = "Prometheus"
    closed_windows = True
    excluded = {"high-cpu-all": _ROWS_WHERE, "high-cpu-1": _ROWS_WHERE, **dict.fromkeys(ROWS_FILTERED, _ROWS_WHERE),
                **{n: _LAST for n, qt in CATALOG.items() if qt.shape == "last"},
                **{n: _FILTERED for n in CATALOG if n.startswith("flux-sum")}}     # sums of the values > 0

    def metric(self, name: str) -> str:
        return series_name(name)

    def label(self, name: str) -> str:
        return series_name(name, metric=False)

    def labelled(self, expr: str, value: str) -> str:
        return f'label_replace({expr}, "{FIELD_LABEL}", "{value}", "{FIELD_LABEL}", ".*")'

    def union(self, parts: list[str]) -> str:
        return " or ".join(parts)
