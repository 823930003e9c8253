"""The Prometheus query API's shared layer without a server: the PromQL dialect
(tsbench/databases/prometheus/dialect.py) on shared/promql.py's renderer, its windows
closed at both ends and its names as the remote-write encoder writes them
(shared/remote_write.series_name against the C core's own bytes), and the counts'
windows (shared/promcount.py) for either kind of window. VictoriaMetrics' MetricsQL on
the same renderer is checked against its server in tests/databases/victoriametrics."""

from __future__ import annotations

import pytest

from tsbench.core.errors import Unsupported
from tsbench.data import native
from tsbench.databases.prometheus.dialect import PromQL
from tsbench.databases.prometheus.target import _duration_ms
from tsbench.databases.shared.promcount import count_expr, slices
from tsbench.databases.shared.remote_write import series_name
from tsbench.databases.victoriametrics.dialect import MetricsQL
from tsbench.queries import CATALOG

from test_remote_write import decode

T0 = 1_451_606_400_000_000_000          # 2016-01-01 in ns
MIN = 60 * 10**9


def _params(**kw) -> dict:
    p = {"shape": "aggregate", "measurement": "cpu", "fields": ["usage_user"], "agg": "max", "start": T0, "end": T0 + 10 * MIN,
         "bucket": MIN, "group_by": [], "tag": "hostname", "tag_values": ["host_1"], "types": ["float"]}
    return p | kw


def test_promql_windows_are_closed_one_ms_shorter_than_metricsqls():
    """A bucket of 60 s ending at t-o = b-1: PromQL [59999ms] covers [b-60000, b-1] in a closed
    window; MetricsQL's [60s] covers the same in its left-open one."""
    prom = PromQL().aggregate(_params()).requests
    vm = MetricsQL().aggregate(_params()).requests
    assert len(prom) == len(vm) == 1
    assert "[59999ms] offset 1ms" in prom[0].query and "[60s] offset 1ms" in vm[0].query
    assert prom[0].form() == {"query": prom[0].query, "start": str(T0 // 10**9 + 60),
                              "end": str(T0 // 10**9 + 600), "step": "60s"}        # no nocache=1
    rows = PromQL().rows(_params(shape="rows", fields=["usage_user", "usage_system"],
                                 types=["float", "float"], bucket=None)).requests[0]
    assert rows.query == '{__name__=~"cpu_usage_user|cpu_usage_system",hostname="host_1"}[599999ms] offset 1ms'


def test_promql_labels_each_field_and_joins_them_with_or():
    q = PromQL().aggregate(_params(fields=["usage_user", "usage_system"], types=["float", "float"], agg="mean",
                                   group_by=["hostname"]))
    text = q.requests[0].query
    assert text.count('label_replace(') == 2 and ") or label_replace(" in text, text
    assert '"tsbench_field", "0", "tsbench_field", ".*")' in text and "union(" not in text
    assert "sum by (hostname)(sum_over_time(" in text and "keep_metric_names" not in text


def test_promql_spells_names_as_the_encoder_writes_them():
    """A measurement and field with bytes a name may not hold: the dialect's selector names the
    series the C encoder wrote (read back from its WriteRequest)."""
    line = "m.x-1,tag\\ é=v f\\ g=1 1000000\n".encode()
    labels, _ = decode(bytes(native.RemoteWriteEncoder().encode(line).body))[0]
    written = dict(labels)
    assert written["__name__"] == series_name("m.x-1_f g") == "m_x_1_f_g"
    assert series_name("tag é", metric=False) == "tag___" in written and series_name("9a:b") == "_a:b"
    assert series_name("9a:b", metric=False) == "_a_b"
    q = PromQL().aggregate(_params(measurement="m.x-1", fields=["f g"], tag="tag é", tag_values=["v"], bucket=None))
    assert '{__name__="m_x_1_f_g",tag___="v"}' in q.requests[0].query
    assert q.names == ("m_x_1_f_g",)


def test_promql_exclusions_have_reasons_and_a_one_ms_window_is_refused():
    support = PromQL.support()
    for t in ("lastpoint", "generic-lastpoint", "high-cpu-1", "generic-above-p90", "flux-sum-1d"):
        assert support[t] and support[t].strip(), t
    assert {t for t, why in support.items() if why is None} >= {"single-groupby-1-1-1", "double-groupby-all",
                                                                "groupby-orderby-limit", "read-one"}
    assert set(support) == set(CATALOG)
    with pytest.raises(Unsupported, match="window of 1 ms"):
        PromQL().aggregate(_params(end=T0 + 10**6, bucket=None))


@pytest.mark.parametrize(("closed", "window"), [(False, "3600000ms"), (True, "3599999ms")])
def test_count_windows_cover_a_to_b_minus_1(closed, window):
    expr, t = count_expr("{x}", 1_451_606_400_000, 1_451_610_000_000, closed)
    assert t == 1_451_610_000 and expr == f"sum(count_over_time({{x}}[{window}] offset 1ms))"
    assert slices(0, 3, 5, min_ms=2) == [(0, 3)] and slices(0, 4, 5, min_ms=2) == [(0, 2), (2, 4)]


def test_durations_of_the_servers_flags():
    assert _duration_ms("2h") == 7_200_000 and _duration_ms("1d2h30m") == 95_400_000
    assert _duration_ms("500ms") == 500 and _duration_ms("") == 0 and _duration_ms("2x") == 0
