"""The Elasticsearch/OpenSearch query DSL dialect (phases 3 and 5): what the contract
suite does not show. Without a server: the rendered requests (the seed's max-cpu-8
body), the reading of answers into canonical rows (an int max stays an int, a sum or a
max over no values is NULL as in SQL, empty buckets are absent), the paging of rows
(ties at a page boundary, the result window) and of composite aggregations, and the
iot types' client-side tests. With a real OpenSearch started by tsbench: every type
of a devops and an iot dataset with pages of a few hits or buckets, so that every page
boundary falls inside an instant or a group, equal to the reference."""

from __future__ import annotations

import asyncio
import json

import pytest

from tsbench.core.errors import Fatal, Unsupported
from tsbench.databases.elasticsearch import dialect as dsl
from tsbench.databases.elasticsearch.dialect import EsDsl, EsQuery, hit_ns, interval, rfc3339
from tsbench.execute.timer import timed_query
from tsbench.queries.base import HOUR, MINUTE, QuerySpec
from tsbench.queries.catalog import CATALOG
from tsbench.queries.compare import compare, tolerance

T0 = 1451606400 * 10**9                      # 2016-01-01T00:00:00Z
HOSTS = [f"host_{i}" for i in range(8)]


def render(type_: str, params: dict) -> EsQuery:
    return EsDsl().render(QuerySpec(1, type_, params))


def body(q: EsQuery, k: int = 0) -> dict:
    return json.loads(q.requests[k][1])


def agg_params(agg="max", fields=("usage_user",), types=("float",), bucket=MINUTE, group_by=(), **kw) -> dict:
    return {"shape": "aggregate", "measurement": "cpu", "agg": agg, "fields": list(fields), "types": list(types),
            "tag": "hostname", "tag_values": HOSTS, "start": T0, "end": T0 + HOUR, "bucket": bucket,
            "group_by": list(group_by), **kw}


def rows_params(**kw) -> dict:
    return {"shape": "rows", "measurement": "cpu", "fields": ["usage_user", "n"], "types": ["float", "int"],
            "tag": None, "tag_values": None, "start": T0, "end": T0 + HOUR, "value_filter": None,
            "tags_out": ["hostname"], **kw}


def hit(t_ns: int, host: str | None, u: float | None = 1.0, n: int | None = 1) -> dict:
    ms, sub = divmod(t_ns, 10**6)
    f = {"time": [f"{ms}.{sub:06d}" if sub else str(ms)]}
    f.update({k: [v] for k, v in (("hostname", host), ("usage_user", u), ("n", n)) if v is not None})
    return {"fields": f}


def page(*hits: dict) -> dict:
    return {"hits": {"hits": list(hits)}}


# ---- rendering ------------------------------------------------------------------------------------

def test_max_cpu_8_is_a_date_histogram_with_a_max_under_a_bool_filter():
    q = render("max-cpu-8", agg_params())
    assert not q.client and len(q.requests) == 1 and q.requests[0][0] == "/cpu/_search"
    b = body(q)
    assert b["size"] == 0 and b["track_total_hits"] is False
    assert b["query"] == {"bool": {"filter": [
        {"range": {"time": {"gte": "2016-01-01T00:00:00.000000000Z", "lt": "2016-01-01T01:00:00.000000000Z",
                            "format": "strict_date_optional_time_nanos"}}},
        {"terms": {"hostname": HOSTS}}]}}
    assert b["aggs"] == {"b": {"date_histogram": {"field": "time", "fixed_interval": "1m", "min_doc_count": 1},
                               "aggs": {"v0": {"max": {"field": "usage_user"}}}}}
    assert "POST /cpu/_search\n{" in q.text and q.next([{"aggregations": {}}]) is None


def test_group_by_and_limits_are_composites_paged_by_after_key(monkeypatch):
    q = render("double-groupby-1", agg_params(agg="mean", bucket=HOUR, group_by=["hostname"], tag_values=None))
    comp = body(q)["aggs"]["c"]["composite"]
    assert q.client and comp["size"] == dsl.PAGE
    assert comp["sources"] == [{"t": {"date_histogram": {"field": "time", "fixed_interval": "1h"}}},
                               {"g0": {"terms": {"field": "hostname", "missing_bucket": True}}}]
    lim = render("groupby-orderby-limit", agg_params(tag_values=None, order="desc", limit=5))
    comp = body(lim)["aggs"]["c"]["composite"]
    assert not lim.client and comp["size"] == 5             # the newest 5 non-empty buckets: one page
    assert comp["sources"][0]["t"]["date_histogram"]["order"] == "desc"

    monkeypatch.setattr(dsl, "PAGE", 2)
    q = render("double-groupby-1", agg_params(agg="mean", bucket=HOUR, group_by=["hostname"], tag_values=None))
    b = {"key": {"t": T0 // 10**6, "g0": "h"}, "doc_count": 1, "v0": {"value": 1.5}}
    full = {"aggregations": {"c": {"after_key": {"t": 1, "g0": "x"}, "buckets": [b, b]}}}
    path, nxt = q.next([full])
    assert path == "/cpu/_search" and json.loads(nxt)["aggs"]["c"]["composite"]["after"] == {"t": 1, "g0": "x"}
    assert q.next([full, {"aggregations": {"c": {"after_key": {"t": 2}, "buckets": [b]}}}]) is None
    assert q.read([full]) == [(T0, "h", 1.5), (T0, "h", 1.5)]


def test_value_filters_windows_and_intervals():
    q = render("flux-sum-1d", {**agg_params(agg="sum", fields=["v0"], measurement="m0", bucket=None, tag=None,
                                            tag_values=None), "value_filter": {"field": "v0", "op": ">", "value": 0}})
    b = body(q)
    assert b["query"]["bool"]["filter"][1] == {"range": {"v0": {"gt": 0.0}}} and not q.client
    assert b["aggs"] == {"v0": {"sum": {"field": "v0"}}, "n0": {"value_count": {"field": "v0"}}}
    assert dsl.compare({"field": "f", "op": "=", "value": 3}) == {"term": {"f": 3.0}}
    assert body(render("max-cpu-1", agg_params(tag_values=[None])))["query"]["bool"]["filter"][1] == \
        {"match_none": {}}                                  # tag IN (NULL) matches no row
    assert [interval(x) for x in (HOUR, 10 * MINUTE, 20 * 10**9, 250 * 10**6)] == ["1h", "10m", "20s", "250ms"]
    with pytest.raises(Unsupported):
        interval(1500)
    assert rfc3339(T0 + 123456789) == "2016-01-01T00:00:00.123456789Z"
    assert hit_ns("1451606420123.456789") == 1451606420123456789 and hit_ns("1451606410000") == 1451606410 * 10**9
    with pytest.raises(Unsupported, match="LIMIT"):
        render("groupby-orderby-limit", agg_params(limit=5))


def test_every_catalog_type_runs():
    assert EsDsl.excluded == {} and EsDsl.query_types() == frozenset(CATALOG)


# ---- reading answers ------------------------------------------------------------------------------

def test_int_max_stays_int_mean_is_float_count_is_int():
    doc = {"aggregations": {"b": {"buckets": [{"key": T0 // 10**6, "doc_count": 3, "v0": {"value": 7.0}}]}}}
    got = render("max-cpu-1", agg_params(fields=["n"], types=["int"])).read([doc])
    assert got == [(T0, 7)] and type(got[0][1]) is int
    got = render("max-cpu-1", agg_params(agg="mean", fields=["n"], types=["int"])).read([doc])
    assert type(got[0][1]) is float
    got = render("max-cpu-1", agg_params(agg="count", fields=["n"], types=["int"])).read([doc])
    assert got == [(T0, 7)] and type(got[0][1]) is int


def test_no_values_are_null_as_in_sql_and_empty_buckets_are_absent():
    p = agg_params(agg="sum", fields=["usage_user"], bucket=None)
    none = {"aggregations": {"v0": {"value": 0.0}, "n0": {"value": 0}}}    # the server's sum of nothing: 0
    assert dsl._aggregate(p).read([none]) == [(None,)]
    count = dsl._aggregate(agg_params(agg="count", bucket=None))
    assert count.read([{"aggregations": {"v0": {"value": 0}}}]) == [(0,)]     # SQL's count of nothing: 0
    mx = dsl._aggregate(agg_params(bucket=None))
    assert mx.read([{"aggregations": {"v0": {"value": None}}}]) == [(None,)]
    # a bucket whose rows have no value: a NULL row, which compare() drops like a missing one
    hist = dsl._aggregate(agg_params())
    doc = {"aggregations": {"b": {"buckets": [{"key": T0 // 10**6, "doc_count": 2, "v0": {"value": None}},
                                              {"key": T0 // 10**6 + 60_000, "doc_count": 1, "v0": {"value": 2.5}}]}}}
    got = hist.read([doc])
    assert got == [(T0, None), (T0 + MINUTE, 2.5)]
    assert compare(agg_params(), [(T0 + MINUTE, 2.5)], got) is None


def test_cut_answers_are_fatal():
    q = dsl._aggregate(agg_params())
    with pytest.raises(Fatal, match="shard failure"):
        q.read([{"_shards": {"failures": [{"reason": "boom"}]}}])
    with pytest.raises(Fatal, match="timed out"):
        q.read([{"timed_out": True}])


# ---- paging rows ----------------------------------------------------------------------------------

def test_rows_page_by_time_and_skip_what_was_read_at_the_boundary(monkeypatch):
    monkeypatch.setattr(dsl, "PAGE", 3)
    q = render("read-all", rows_params())
    first = body(q)
    assert q.client and first["size"] == 3 and first["sort"] == [{"time": {"order": "asc"}}]
    assert first["_source"] is False and first["docvalue_fields"][0] == {"field": "time", "format": "epoch_millis"}
    assert q.requests[0][0] == "/cpu/_search?preference=tsbench"
    t1, t2 = T0 + 10**9, T0 + 2 * 10**9
    p1 = page(hit(T0, "a"), hit(t1, "a"), hit(t1, "b"))          # full; two rows read at t1
    path, nxt = q.next([p1])
    b = json.loads(nxt)
    assert b["from"] == 2 and b["size"] == 3
    assert b["query"]["bool"]["filter"][0]["range"]["time"]["gte"] == rfc3339(t1)
    p2 = page(hit(t1, "c"), hit(t1, None, None, None), hit(t1, "d"))   # all at t1: skip 5 next
    assert json.loads(q.next([p1, p2])[1])["from"] == 5
    p3 = page(hit(t2, "a"))                                         # short: the last page
    assert q.next([p1, p2, p3]) is None
    rows = q.read([p1, p2, p3])
    assert len(rows) == 7 and rows[4] == (t1, None, None, None) and rows[0] == (T0, "a", 1.0, 1)
    assert type(rows[0][3]) is int and type(rows[0][2]) is float


def test_rows_more_than_the_result_window_at_one_instant_is_fatal(monkeypatch):
    monkeypatch.setattr(dsl, "PAGE", 2)
    q = EsDsl(result_window=3).render(QuerySpec(1, "read-all", rows_params()))
    p1, p2 = page(hit(T0, "a"), hit(T0, "b")), page(hit(T0, "c"))
    assert json.loads(q.next([p1])[1])["size"] == 1              # from 2 + size 1 = the window
    with pytest.raises(Fatal, match="more than 3 rows at one instant"):
        q.next([p1, p2])


def test_rows_with_a_limit(monkeypatch):
    q = render("read-one", rows_params(limit=4))
    assert not q.client and body(q)["size"] == 4
    monkeypatch.setattr(dsl, "PAGE", 3)
    q = render("read-one", rows_params(limit=4))
    p1 = page(hit(T0, "a"), hit(T0, "b"), hit(T0 + 1, "a"))
    assert q.client and json.loads(q.next([p1])[1])["size"] == 1
    p2 = page(hit(T0 + 2, "a"))
    assert q.next([p1, p2]) is None and len(q.read([p1, p2])) == 4


# ---- last and iot -------------------------------------------------------------------------------

def test_lastpoint_reads_the_newest_hit_of_each_group():
    p = {"shape": "last", "measurement": "cpu", "fields": ["usage_user", "n"], "types": ["float", "int"],
         "group_by": ["hostname"]}
    q = render("lastpoint", p)
    top = body(q)["aggs"]["c"]["aggs"]["top"]["top_hits"]
    assert top["size"] == 1 and top["sort"] == [{"time": {"order": "desc"}}]
    doc = {"aggregations": {"c": {"buckets": [
        {"key": {"g0": "a"}, "top": {"hits": {"hits": [hit(T0 + 5, "a", 2.0, None)]}}},
        {"key": {"g0": None}, "top": {"hits": {"hits": [hit(T0, None, 3.0, 4)]}}}]}}}
    assert q.read([doc]) == [(T0 + 5, "a", 2.0, None), (T0, None, 3.0, 4)]


def test_low_fuel_and_high_load_test_the_newest_row_and_a_null_fails():
    def bucket(name, **fields):
        h = {"fields": {"time": [str(T0 // 10**6)], **{k: [v] for k, v in fields.items() if v is not None}}}
        return {"key": {"name": name, "driver": "d"}, "top": {"hits": {"hits": [h]}}}
    low = EsDsl().render(QuerySpec(1, "low-fuel", {"shape": "custom", "type": "low-fuel", "fleet": "East",
                                                   "fuel_below": 0.1}))
    assert body(low)["query"] == {"bool": {"filter": [{"term": {"fleet": "East"}}]}}
    doc = {"aggregations": {"c": {"buckets": [bucket("a", fuel_state=0.05), bucket("b", fuel_state=0.5),
                                              bucket("c", fuel_state=None)]}}}
    assert low.read([doc]) == [(T0, "a", "d", 0.05)]
    high = EsDsl().render(QuerySpec(1, "high-load", {"shape": "custom", "type": "high-load", "fleet": "East",
                                                     "load_above": 0.9}))
    doc = {"aggregations": {"c": {"buckets": [bucket("a", current_load=95.0, load_capacity=100.0),
                                              bucket("b", current_load=90.0, load_capacity=100.0),
                                              bucket("c", current_load=None, load_capacity=100.0)]}}}
    assert high.read([doc]) == [(T0, "a", "d", 95.0, 100.0)]


# ---- against a real OpenSearch: pages of a few hits or buckets ------------------------------------

SMALL_PAGE = 7              # < the hosts (and trucks) per instant: page boundaries inside instants and groups


@pytest.fixture(scope="module")
def opensearch_with_data(tmp_path_factory):
    """A local OpenSearch with a devops (32 hosts, 20 min) and an iot (10 trucks, 4 h)
    dataset loaded by the real loader; their reference engines."""
    from tsbench.data.datafile import open_datafile
    from tsbench.queries.reference import Reference

    from conftest import load_into, local_server, run_cli

    d = tmp_path_factory.mktemp("es-queries")
    data = {}
    with local_server("opensearch") as srv:
        for uc, scale, end in (("devops", 32, "2016-01-01T00:20:00Z"), ("iot", 10, "2016-01-01T04:00:00Z")):
            path = d / f"{uc}.csv"
            run_cli("generate", "-q", "-u", uc, "--scale", str(scale), "--end", end, "--seed", "3",
                    "--format", "csv", "-o", str(path))
            df = open_datafile(path)
            load_into("elasticsearch", srv.url, df)
            data[uc] = (df.dataset, Reference(df.dataset))
        yield srv.url, data


def _types(family: tuple[str, ...]) -> list[str]:
    return sorted(t for t, qt in CATALOG.items() if qt.family in family)


@pytest.mark.parametrize("uc,family", [("devops", ("devops", "relational")), ("iot", ("iot",))])
def test_small_pages_give_the_reference_answer(opensearch_with_data, monkeypatch, uc, family):
    from tsbench.databases.elasticsearch.target import ElasticsearchTarget
    from tsbench.queries import generate

    url, data = opensearch_with_data
    ds, ref = data[uc]
    monkeypatch.setattr(dsl, "PAGE", SMALL_PAGE)
    monkeypatch.setattr(dsl, "HISTOGRAM_MAX", 5)          # bucketed aggregates as paged composites too
    specs = generate(ds, _types(family), 2, 11)
    failures, pages = [], 0

    async def go():
        nonlocal pages
        t = ElasticsearchTarget(url)
        await t.open()
        try:
            for spec in specs:
                native = t.render(spec)
                ans = await timed_query(t, native)
                pages += len(ans.raw) - 1
                m = compare(spec.params, ref.expected(spec), t.answer_rows(native, ans), tolerance(spec, 0.0, ref))
                if m is not None:
                    failures.append(f"{spec.type} #{spec.id}:\n{native.text}\n{m.diff()}")
        finally:
            await t.close()
    asyncio.run(go())
    assert not failures, "\n\n".join(failures)
    assert pages > len(specs)                             # the answers did come in many pages
