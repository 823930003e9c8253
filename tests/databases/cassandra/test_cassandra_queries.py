"""Cassandra's CQL dialects (phases 3-4) without a server: the partitions a plan
reads (from a hand-made partition index), the CQL it states, and its client work
(finish) on hand-made driver rows, for both layouts (schema=series: raw values
aggregated on the client; schema=wide: per-partition GROUP BY merged on the
client). The answers against the reference on a real server are the contract
suite's (`pytest tests/contract/test_contract.py -k cassandra`)."""

from __future__ import annotations

import pytest

from tsbench.core.model import Column, Table, Tables
from tsbench.databases.cassandra.dialects.base import CqlPlan, int_filter, parse_tags
from tsbench.databases.cassandra.dialects.series import CqlSeries
from tsbench.databases.cassandra.dialects.wide import CqlWide
from tsbench.queries.base import DAY, HOUR, MINUTE, QuerySpec
from tsbench.queries.catalog import CATALOG

T0 = 1451606400 * 10**9                      # 2016-01-01T00:00:00Z
MS = 10**6
CPU = Table("cpu", ("hostname", "region"), (Column("u", "float"), Column("k", "int")))
TABLES = Tables((CPU,), T0, T0 + 2 * DAY, 0, 0)
HOSTS = {"h0": "eu", "h1": "us", "h,2=x": "eu"}           # a value with a comma and an '='


def _series_index() -> list[list[tuple]]:
    ids = [f"cpu,hostname={h},region={r}#{f}#{d}" for h, r in HOSTS.items() for f in ("u", "k")
           for d in ("2016-01-01", "2016-01-02")]
    ids.append("cpu,region=eu#u#2016-01-01")             # a series whose hostname is null
    return [[(i,) for i in ids if "#u#" in i], [(i,) for i in ids if "#k#" in i]]


def _wide_index() -> list[list[tuple]]:
    from cassandra.util import Date

    rows = [(f"hostname={h},region={r}", Date(d)) for h, r in HOSTS.items() for d in ("2016-01-01", "2016-01-02")]
    return [rows + [("region=eu", "2016-01-01")]]


def series() -> CqlSeries:
    return CqlSeries("ks", TABLES, _series_index())


def wide() -> CqlWide:
    return CqlWide("ks", TABLES, _wide_index())


def agg(agg="max", fields=("u",), types=("float",), hosts=("h0", "h1"), start=T0, end=T0 + HOUR,
        bucket=MINUTE, group_by=(), **kw) -> dict:
    return {"shape": "aggregate", "measurement": "cpu", "agg": agg, "fields": list(fields), "types": list(types),
            "tag": "hostname" if hosts is not None else None, "tag_values": list(hosts) if hosts is not None else None,
            "start": start, "end": end, "bucket": bucket, "group_by": list(group_by), **kw}


def render(d, p: dict, type_="max-cpu-1") -> CqlPlan:
    return d.render(QuerySpec(1, type_, p))


# ---- the partition index --------------------------------------------------------------------------

def test_tags_parse_with_commas_and_equals_in_values():
    assert parse_tags("hostname=h,2=x,region=eu", ("hostname", "region")) == (("hostname", "h,2=x"), ("region", "eu"))
    assert parse_tags("region=eu", ("hostname", "region")) == (("region", "eu"),)
    assert parse_tags("", ("hostname",)) == ()


def test_index_queries_name_the_partition_keys():
    assert CqlSeries.index_queries("ks", TABLES) == ['SELECT DISTINCT series_id FROM "ks".series_double',
                                                     'SELECT DISTINCT series_id FROM "ks".series_bigint']
    assert CqlWide.index_queries("ks", TABLES) == ['SELECT DISTINCT "series", "day" FROM "ks"."cpu"']


def test_a_dialect_without_its_index_reports_support_but_does_not_render():
    assert "max-cpu-1" in CqlSeries("ks").query_types()
    with pytest.raises(RuntimeError, match="index"):
        CqlSeries("ks").render(QuerySpec(1, "max-cpu-1", agg()))


def test_every_catalog_type_runs_on_both_schemas():
    for cls in (CqlSeries, CqlWide):
        assert cls.support() == {n: None for n in CATALOG}


# ---- schema=series ---------------------------------------------------------------------------------

def test_series_plan_reads_the_chosen_hosts_days_and_field():
    plan = render(series(), agg(hosts=("h0", "h,2=x", None), start=T0 + DAY - HOUR, end=T0 + DAY + HOUR))
    ids = sorted(p[0] for _, p in plan.statements)
    assert ids == sorted(f"cpu,hostname={h},region=eu#u#{d}" for h in ("h0", "h,2=x")
                         for d in ("2016-01-01", "2016-01-02"))
    assert plan.templates == {'SELECT timestamp_ns, value FROM "ks".series_double '
                              'WHERE series_id = ? AND timestamp_ns >= ? AND timestamp_ns < ?'}
    assert all(p[1:] == (T0 + DAY - HOUR, T0 + DAY + HOUR) for _, p in plan.statements)
    assert plan.client and "series_double" in plan.text
    assert render(series(), agg(hosts=("nope",))).statements == ()
    assert render(series(), agg(hosts=("nope",))).finish([]) == []


def test_series_aggregates_per_bucket_and_group_on_the_client():
    p = agg(agg="max", fields=("u", "k"), types=("float", "int"), hosts=("h0", "h1"))
    plan = render(series(), p, "single-groupby-5-1-1")
    rows = {"u": {"h0": [(T0 + 1, 1.5), (T0 + 2, 3.0), (T0 + 2 * MINUTE, 7.0)], "h1": [(T0 + 5, 2.0)]},
            "k": {"h0": [(T0 + 1, 4), (T0 + 70 * 10**9, 9)], "h1": []}}
    results = [rows[c[0].split("#")[1]][c[0].split("hostname=")[1].split(",")[0]] for _, c in plan.statements]
    got = plan.finish(results)
    assert sorted(got) == [(T0, 3.0, 4), (T0 + MINUTE, None, 9), (T0 + 2 * MINUTE, 7.0, None)]
    assert isinstance(sorted(got)[1][2], int)              # int fields stay int


def test_series_mean_sum_and_group_by():
    p = agg(agg="mean", hosts=None, bucket=HOUR, group_by=("region",))
    plan = render(series(), p, "groupby")
    vals = {"h0": [(T0, 1.0), (T0 + 1, 2.0)], "h1": [(T0, 10.0)], "h,2=x": [(T0 + 3, 6.0)]}
    res = [vals.get(c[0].split("hostname=")[1].split(",region")[0], []) if "hostname=" in c[0] else [(T0, 100.0)]
           for _, c in plan.statements]
    assert sorted(plan.finish(res)) == [(T0, "eu", (1 + 2 + 6 + 100) / 4), (T0, "us", 10.0)]
    p = agg(agg="sum", hosts=None, bucket=None, value_filter={"field": "u", "op": ">", "value": 1.5})
    plan = render(series(), p, "flux-sum-1d")
    assert plan.finish([[(T0, 1.0), (T0 + 1, 2.0)]] + [[] for _ in plan.statements[1:]]) == [(2.0,)]


def test_series_limit_keeps_the_newest_buckets():
    p = agg(hosts=None, order="desc", limit=2)
    plan = render(series(), p, "groupby-orderby-limit")
    res = [[(T0 + i * MINUTE, float(i)) for i in range(5)]] + [[] for _ in plan.statements[1:]]
    assert plan.finish(res) == [(T0 + 4 * MINUTE, 4.0), (T0 + 3 * MINUTE, 3.0)]


def test_series_filter_on_another_field_joins_the_records_first():
    p = agg(agg="sum", hosts=("h0", "h1"), bucket=None, group_by=("region",),
            value_filter={"field": "k", "op": ">", "value": 1})
    plan = render(series(), p, "flux-sum-1d")
    data = {("h0", "u"): [(T0, 1.0), (T0 + 1, 2.0), (T0 + 2, 4.0)], ("h0", "k"): [(T0, 5), (T0 + 1, 1), (T0 + 3, 9)],
            ("h1", "u"): [(T0, 10.0)], ("h1", "k"): [(T0, 2)]}
    res = [data.get((sid.split("hostname=")[1].split(",region")[0], sid.split("#")[1]), [])
           for _, (sid, *_r) in plan.statements]
    assert sorted(plan.finish(res)) == [("eu", 1.0), ("us", 10.0)]


def _rows_params(**kw) -> dict:
    p = {"shape": "rows", "measurement": "cpu", "fields": ["u", "k"], "types": ["float", "int"], "tag": None,
         "tag_values": None, "start": T0, "end": T0 + HOUR, "value_filter": None, "tags_out": ["hostname"]}
    p.update(kw)
    return p


def test_series_rows_join_fields_by_series_and_time_and_filter():
    p = _rows_params(fields=["k"], types=["int"], value_filter={"field": "u", "op": ">", "value": 90.0})
    plan = render(series(), p, "high-cpu-all")
    data = {("h0", "u"): [(T0, 95.0), (T0 + 10, 50.0)], ("h0", "k"): [(T0, 1), (T0 + 10, 2)],
            ("h1", "u"): [(T0, 99.0)], ("h1", "k"): [(T0 + 5, 3)], ("null", "u"): [(T0, 91.0)]}
    res = []
    for _, (sid, *_r) in plan.statements:
        host = sid.split("hostname=")[1].split(",region")[0] if "hostname=" in sid else "null"
        res.append(data.get((host, sid.split("#")[1]), []))
    assert sorted(plan.finish(res), key=repr) == sorted([(T0, "h0", 1), (T0, "h1", None), (T0, None, None)], key=repr)


def test_series_last_takes_the_newest_record_of_each_host():
    p = {"shape": "last", "measurement": "cpu", "fields": ["u", "k"], "types": ["float", "int"],
         "group_by": ["hostname"]}
    plan = render(series(), p, "lastpoint")
    p = dict(p, fields=["u"], types=["float"])             # k still read: it dates the record
    assert {sid.split("#")[1] for _, (sid,) in render(series(), p, "lastpoint").statements} == {"u", "k"}
    assert all(p[0].endswith("#2016-01-02") for _, p in plan.statements if "hostname=" in p[0])
    assert all("ORDER BY timestamp_ns DESC LIMIT 1" in c for c in plan.templates)
    newest = {("h0", "u"): (T0 + DAY + 9, 1.0), ("h0", "k"): (T0 + DAY + 5, 7), ("h1", "k"): (T0 + DAY, 8)}
    res = []
    for _, (sid,) in plan.statements:
        host = sid.split("hostname=")[1].split(",region")[0] if "hostname=" in sid else None
        r = newest.get((host, sid.split("#")[1]))
        res.append([r] if r else [])
    assert sorted(plan.finish(res), key=repr) == sorted([(T0 + DAY + 9, "h0", 1.0, None),
                                                         (T0 + DAY, "h1", None, 8)], key=repr)


# ---- schema=wide -----------------------------------------------------------------------------------

def test_wide_aggregate_groups_on_the_server_per_partition():
    plan = render(wide(), agg(agg="mean", start=T0 + 5 * MS + 7, end=T0 + HOUR), "groupby")
    assert [p[:2] for _, p in plan.statements] == [("hostname=h0,region=eu", "2016-01-01"),
                                                   ("hostname=h1,region=us", "2016-01-01")]
    (cql,) = plan.templates
    assert cql == ('SELECT toUnixTimestamp(floor("time", 60000ms)), sum("u"), count("u"), count(*) FROM "ks"."cpu" '
                   'WHERE "series" = ? AND "day" = ? AND ("time", "ns") >= (?, ?) AND ("time", "ns") < (?, ?) '
                   'GROUP BY "series", "day", floor("time", 60000ms)')
    assert plan.statements[0][1][2:] == ((T0 + 5 * MS) // MS, 7, (T0 + HOUR) // MS, 0)
    ms0 = T0 // MS
    res = [[(ms0, 3.0, 2, 2), (ms0 + 60000, 0.0, 0, 1)], [(ms0, 6.0, 1, 1)]]
    assert plan.finish(res) == [(T0, 3.0)]                   # a bucket of null values only has no mean


def test_wide_merges_max_of_maxes_and_keeps_ints():
    p = agg(agg="max", fields=("u", "k"), types=("float", "int"), hosts=("h0", "h1"))
    plan = render(wide(), p, "single-groupby-5-1-1")
    ms0 = T0 // MS
    res = [[(ms0, 1.0, 5, 3), (ms0 + 60000, None, 2, 1)], [(ms0, 4.0, 1, 1)]]
    got = plan.finish(res)
    assert got == [(T0, 4.0, 5), (T0 + MINUTE, None, 2)] and isinstance(got[1][2], int)


def test_wide_bucketless_empty_slices_are_absent():
    p = agg(agg="sum", hosts=None, bucket=None, group_by=("hostname",),
            value_filter={"field": "u", "op": ">", "value": 0.0})
    plan = render(wide(), p, "flux-sum-by-tag-1d")
    assert all(c.endswith('AND "u" > ? ALLOW FILTERING') and "GROUP BY" not in c for c in plan.templates)
    res = [[(0.0, 0, 0)] for _ in plan.statements]
    res[0] = [(2.5, 2, 2)]
    assert plan.finish(res) == [("h0", 2.5)]


def test_wide_filters_on_an_int_field_with_an_integer_bound():
    assert int_filter(">", 90.5) == (">", 90) and int_filter(">=", 90.5) == (">=", 91)
    assert int_filter("<", 90.5) == ("<", 91) and int_filter("<=", 90.5) == ("<=", 90)
    assert int_filter("=", 90.0) == ("=", 90) and int_filter("=", 90.5) is None
    plan = render(wide(), _rows_params(value_filter={"field": "k", "op": "=", "value": 0.5}), "read-all")
    assert plan.statements == () and plan.finish([]) == []
    plan = render(wide(), _rows_params(value_filter={"field": "k", "op": ">", "value": 2.5}), "read-all")
    assert all(p[-1] == 2 for _, p in plan.statements)


def test_wide_rows_take_exact_times_and_tags_from_the_partition():
    plan = render(wide(), _rows_params(), "read-all")
    ms0 = T0 // MS
    res = [[] for _ in plan.statements]
    res[0] = [(ms0 + 1, 999_999, 1.0, 2)]
    res[-1] = [(ms0, 5, None, 3)]
    tags = [p[0] for _, p in plan.statements]
    assert tags[-1] == "region=eu"
    assert plan.finish(res) == [(T0 + 5, None, None, 3), (T0 + MS + 999_999, "h0", 1.0, 2)]


def test_wide_last_reads_the_newest_day_of_each_series():
    p = {"shape": "last", "measurement": "cpu", "fields": ["u"], "types": ["float"], "group_by": ["region"]}
    plan = render(wide(), p, "lastpoint")
    assert all(c.endswith('ORDER BY "time" DESC, "ns" DESC LIMIT 1') for c in plan.templates)
    days = {p[0]: p[1] for _, p in plan.statements}
    assert days == {"hostname=h0,region=eu": "2016-01-02", "hostname=h1,region=us": "2016-01-02",
                    "hostname=h,2=x,region=eu": "2016-01-02", "region=eu": "2016-01-01"}
    ms1 = (T0 + DAY) // MS
    res = [[(ms1, 1, 1.0)], [(ms1, 2, 2.0)], [(ms1, 3, None)], [(ms1 - 5, 0, 4.0)]]
    order = [p[0] for _, p in plan.statements]
    res = [dict(zip(["hostname=h0,region=eu", "hostname=h1,region=us", "hostname=h,2=x,region=eu", "region=eu"],
                    res))[s] for s in order]
    assert sorted(plan.finish(res)) == [(T0 + DAY + 2, "us", 2.0), (T0 + DAY + 3, "eu", None)]


# ---- iot: a basic shape and client work on its rows ---------------------------------------------

IOT_TABLES = Tables((Table("readings", ("name", "fleet", "driver"), (Column("velocity", "float"),)),), T0,
                    T0 + DAY, 0, 0)


def _iot(cls, p: dict) -> CqlPlan:
    idx = [[("name=a,fleet=f,driver=x", "2016-01-01"), ("name=b,fleet=f", "2016-01-01"),
            ("fleet=f,driver=y", "2016-01-01")]]
    if cls is CqlSeries:
        idx = [[(f"readings,{s}#velocity#{d}",) for s, d in idx[0]]]
    return cls("ks", IOT_TABLES, idx).render(QuerySpec(1, p["type"], p))


@pytest.mark.parametrize("cls", [CqlSeries, CqlWide])
def test_iot_types_leave_out_rows_whose_named_tags_are_null(cls):
    p = {"shape": "custom", "type": "stationary-trucks", "fleet": "f", "start": T0, "end": T0 + 600 * 10**9,
         "velocity_below": 1.0}
    plan = _iot(cls, p)
    assert len(plan.statements) == 1 and "name=a" in plan.statements[0][1][0]


@pytest.mark.parametrize("cls", [CqlSeries, CqlWide])
def test_driving_sessions_run_from_a_change_to_driving_to_the_next_change(cls):
    p = {"shape": "custom", "type": "avg-daily-driving-session", "start": T0, "end": T0 + DAY, "velocity_above": 5.0}
    plan = _iot(cls, p)
    ten = 600 * 10**9
    speeds = [9.0, 1.0, 9.0, 8.0, 1.0, 9.0]            # sessions: bucket 2 to 4 (the last one never ends)
    if cls is CqlSeries:
        rows = [(T0 + i * ten, v) for i, v in enumerate(speeds)]
    else:
        rows = [((T0 + i * ten) // MS, v, 1, 1) for i, v in enumerate(speeds)]
    res = [rows if "name=a" in params[0] else [] for _, params in plan.statements]
    assert plan.finish(res) == [(T0, "a", 20.0)]
