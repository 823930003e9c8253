"""VictoriaMetrics queries (phases 3-5) against a real server: a devops dataset (40 hosts,
3 h) loaded with the real loader, 2-3 drawn queries of every supported devops and
relational type, each answer compared with the reference engine's; the flux sums (and
every value filter the renderer knows) on a synthetic 2-day dataset; cut buckets and
newest-first limits past the data; wrong renderings caught by compare; unsupported types
and server errors.

VictoriaMetrics keeps a float as a decimal of about 12 significant digits, so float
answers compare within a relative 1e-11 (integers and times exactly)."""

from __future__ import annotations

import asyncio
import os

import pytest

from tsbench.core.errors import Fatal, Unsupported
from tsbench.data.datafile import open_datafile
from tsbench.databases.victoriametrics.dialect import MetricsQL, VMQuery, VMRequest
from tsbench.databases.victoriametrics.target import VictoriaMetricsTarget
from tsbench.execute.timer import timed_query
from tsbench.load.run import LoadOptions, load
from tsbench.queries import generate
from tsbench.queries.base import HOUR, MINUTE, QuerySpec
from tsbench.queries.catalog import CATALOG
from tsbench.queries.compare import compare, tolerance
from tsbench.queries.reference import Reference

from conftest import local_server, run_cli

REL_TOL = 1e-11
SEED = 7
COUNT = {"read-all": 2}                # queries per type; 3 unless named here
QUERY_TYPES = VictoriaMetricsTarget.query_types          # derived from the MetricsQL dialect
DEVOPS_TYPES = sorted(t for t in QUERY_TYPES if CATALOG[t].family in ("devops", "relational"))
FLUX_TYPES = sorted(t for t in QUERY_TYPES if CATALOG[t].family == "flux")


@pytest.fixture(scope="module")
def vm():
    # TSBENCH_TEST_VM_VERSION=1.115.0 runs the suite against a release built with Go
    with local_server("victoriametrics", version=os.environ.get("TSBENCH_TEST_VM_VERSION", "apt")) as server:
        yield server


def run(coro):
    return asyncio.run(coro)


async def _open(vm, cls=VictoriaMetricsTarget) -> VictoriaMetricsTarget:
    t = cls(vm.url)
    await t.open()
    return t


def _load(vm, path):
    """The real loader; the datasets use distinct metric names, so each reuses the store."""
    df = open_datafile(path)

    async def go():
        t = await _open(vm)
        try:
            res = await load(t, df, LoadOptions(progress=False, if_exists="reuse"))
            assert res.verified
        finally:
            await t.close()

    run(go())
    return df.dataset


@pytest.fixture(scope="module")
def devops(vm, tmp_path_factory):
    path = tmp_path_factory.mktemp("devops") / "devops.lp"
    run_cli("generate", "-q", "-u", "devops", "--scale", "40", "--end", "2016-01-01T03:00:00Z", "-o", str(path))
    ds = _load(vm, path)
    return ds, Reference(ds)


@pytest.fixture(scope="module")
def synthetic(vm, tmp_path_factory):
    # flux/ingen shape: m0.v0 with tag0 (x tag1), two days at a coarse 10 min interval
    path = tmp_path_factory.mktemp("synthetic") / "synthetic.lp"
    run_cli("generate", "-q", "-u", "synthetic", "-P", "tags=10,4", "--interval", "10m",
            "--end", "2016-01-03T00:00:00Z", "-o", str(path))
    ds = _load(vm, path)
    return ds, Reference(ds)


def check(vm, ref, specs, cls=VictoriaMetricsTarget) -> list[str]:
    """Run every spec; the failures, each with its query and the diff."""
    failures = []

    async def go():
        t = await _open(vm, cls)
        try:
            for spec in specs:
                native = t.render(spec)
                ans = await timed_query(t, native)
                exp = ref.expected(spec)
                assert ans.nbytes > 0 or not native.requests
                assert ans.seconds >= 0 and (ans.ttfb is None or ans.ttfb <= ans.seconds)
                m = compare(spec.params, exp, t.answer_rows(native, ans), tolerance(spec, REL_TOL, ref))
                if m is not None:
                    failures.append(f"{spec.type} #{spec.id}:\n{native.text}\n{m.diff()}")
        finally:
            await t.close()

    run(go())
    return failures


@pytest.mark.parametrize("qtype", DEVOPS_TYPES)
def test_devops_and_relational_queries_match_the_reference(vm, devops, qtype):
    ds, ref = devops
    specs = generate(ds, [qtype], COUNT.get(qtype, 3), SEED)
    assert sum(len(ref.expected(s)) for s in specs) > 0           # not a vacuous pass
    failures = check(vm, ref, specs)
    assert not failures, "\n\n".join(failures)


def _filter_variants(p: dict) -> list[dict]:
    """The flux params with every aggregate and filter the renderer handles, per bucket and
    over the window, at thresholds that split the data and on its clamps (0 and 100)."""
    out = []
    for agg, ops in (("sum", (">", ">=", "<", "<=")), ("mean", (">", ">=", "<", "<=")),
                     ("count", (">", ">=", "<", "<=")), ("max", (">", ">=")), ("min", ("<", "<="))):
        for op in ops:
            for x in (50.0, 0.0, 100.0):
                for bucket, group in ((None, ["tag0"]), (HOUR, []), (HOUR, ["tag0", "tag1"])):
                    out.append({**p, "agg": agg, "bucket": bucket, "group_by": group,
                                "value_filter": {"field": "v0", "op": op, "value": x}})
    return out


def _missing_functions(vm) -> set[str]:
    async def go():
        t = await _open(vm)
        try:
            return t.missing_functions
        finally:
            await t.close()

    return run(go())


def test_flux_sums_match_the_reference(vm, synthetic):
    ds, ref = synthetic
    specs = generate(ds, FLUX_TYPES, 3, SEED)
    assert all(ref.expected(s) for s in specs)
    missing = _missing_functions(vm)
    if missing:
        # Debian's 1.79.5 has no sum_gt_over_time: no exact sum of v0 > 0, so it is refused
        assert missing == {"sum_gt_over_time", "sum_le_over_time", "sum_eq_over_time"}
        t = VictoriaMetricsTarget(vm.url)
        t.missing_functions = missing
        for s in specs:
            with pytest.raises(Unsupported, match="sum_gt_over_time"):
                t.render(s)
        return
    failures = check(vm, ref, specs)
    assert not failures, "\n\n".join(failures)


def test_value_filters_match_the_reference(vm, synthetic):
    ds, ref = synthetic
    base = generate(ds, ["flux-sum-1d"], 1, SEED)[0]
    specs = [QuerySpec(i, base.type, p) for i, p in enumerate(_filter_variants(base.params))]
    # the clamps are in the data, so >= vs > and < vs <= differ somewhere
    zeros = ref.con.execute("SELECT count(*) FILTER (v0 = 0), count(*) FILTER (v0 = 100) FROM m0").fetchone()
    assert zeros[0] > 0 and zeros[1] > 0, zeros
    t = VictoriaMetricsTarget(vm.url)
    t.missing_functions = _missing_functions(vm)
    lacks = bool(t.missing_functions)
    runnable = []
    for s in specs:
        try:
            t.render(s)
            runnable.append(s)
        except Unsupported:
            assert lacks and s.params["agg"] in ("sum", "mean"), s
    assert len(runnable) == (len(specs) if not lacks else sum(s.params["agg"] not in ("sum", "mean") for s in specs))
    failures = check(vm, ref, runnable)
    assert not failures, f"{len(failures)} of {len(runnable)} differ:\n\n" + "\n\n".join(failures[:5])


def test_cut_buckets_and_limits_past_the_data(vm, devops):
    """Windows that cut their first and last bucket, and newest-first limits whose newest
    buckets are empty (the target walks back in growing chunks)."""
    ds, ref = devops
    s0 = ds.start_ns
    specs = []
    for i, base in enumerate(generate(ds, ["max-cpu-4", "double-groupby-5", "groupby-orderby-limit"], 1, SEED)):
        p = dict(base.params)
        specs.append(QuerySpec(10 * i, base.type, {**p, "start": p["start"] + 5 * 10**9,
                                                    "end": p["end"] - 30 * 10**9 + 123 * 10**6}))
    lim = generate(ds, ["groupby-orderby-limit"], 1, SEED)[0].params
    for j, (end, limit, group) in enumerate(((ds.end_ns + 2 * HOUR, 5, []), (ds.end_ns + 7 * HOUR + 30 * 10**9, 40, []),
                                             (s0 + 3 * MINUTE + 10**9, 5, []), (ds.end_ns + HOUR, 7, ["hostname"]))):
        specs.append(QuerySpec(100 + j, "groupby-orderby-limit",
                               {**lim, "end": end, "limit": limit, "group_by": group,
                                "tag": "hostname" if group else None,
                                "tag_values": ["host_3"] if group else None}))
    specs.append(QuerySpec(200, "max-cpu-1", {**specs[0].params, "start": s0 + HOUR, "end": s0 + HOUR + 20 * 10**9}))
    assert all(ref.expected(s) for s in specs)
    failures = check(vm, ref, specs)
    assert not failures, "\n\n".join(failures)


class _NaiveWindow(MetricsQL):
    """Prometheus' usual bucket: the window (b, b+w] at the bucket end, one sample off."""

    def _eval_point(self, end_ms):
        return -(-end_ms // 1000), 0


class _NextBucket(MetricsQL):
    """The window of the next minute labelled as this one."""

    def _eval_point(self, end_ms):
        t, o = super()._eval_point(end_ms)
        return t + 60, o


def _speaking(dialect: type[MetricsQL]) -> type[VictoriaMetricsTarget]:
    """The target with a (wrong) MetricsQL dialect of the test's."""
    return type(f"VictoriaMetrics{dialect.__name__}", (VictoriaMetricsTarget,), {"dialects": {"metricsql": dialect}})


@pytest.mark.parametrize("dialect", [_NaiveWindow, _NextBucket])
def test_wrong_renderings_are_caught(vm, devops, dialect):
    ds, ref = devops
    specs = generate(ds, ["max-cpu-1", "single-groupby-5-8-1", "read-one"], 2, SEED)
    failures = check(vm, ref, specs, _speaking(dialect))
    assert len(failures) == len(specs), "\n\n".join(failures)
    assert check(vm, ref, specs) == []


def test_unsupported_types_raise(devops):
    ds, _ = devops
    t = VictoriaMetricsTarget("http://127.0.0.1:1")
    for spec in generate(ds, ["high-cpu-1", "high-cpu-all"], 1, SEED):
        with pytest.raises(Unsupported, match="raw samples"):
            t.render(spec)
    with pytest.raises(Unsupported, match="not run .*does not implement the last-loc shape"):
        t.render(QuerySpec(0, "last-loc", {"shape": "custom", "type": "last-loc"}))
    p = generate(ds, ["max-cpu-1"], 1, SEED)[0].params
    with pytest.raises(Unsupported, match="no exact MetricsQL form"):
        t.render(QuerySpec(0, "max-cpu-1", {**p, "value_filter": {"field": "usage_user", "op": "<", "value": 5.0}}))
    with pytest.raises(Unsupported, match="other than the one aggregated"):
        t.render(QuerySpec(0, "max-cpu-1", {**p, "value_filter": {"field": "usage_idle", "op": ">", "value": 5.0}}))
    caps = VictoriaMetricsTarget.capabilities()["query_types"]
    assert set(caps) <= set(CATALOG) and "high-cpu-1" not in caps and "lastpoint" in caps
    # derived from the dialect: every type but the filtered row types (two devops, one generic)
    # and the iot types, whose custom shapes MetricsQL does not implement
    not_run = {n: why for n, why in MetricsQL.support().items() if why is not None}
    iot = {n for n, qt in CATALOG.items() if qt.family == "iot"}
    filtered = {"high-cpu-1", "high-cpu-all", "generic-above-p90"}
    assert iot and set(not_run) == filtered | iot
    assert all("raw samples" in not_run[n] for n in filtered)
    assert all(not_run[n] == f"metricsql does not implement the {n} shape" for n in iot)
    assert set(caps) == set(CATALOG) - set(not_run)


def test_server_errors_are_fatal_with_the_servers_words(vm):
    bad = VMQuery("aggregate", (VMRequest("/api/v1/query", "max_over_time(cpu_usage_user[1m]", 1451606460),),
                  False, (), ("float",))

    async def go():
        t = await _open(vm)
        try:
            with pytest.raises(Fatal) as e:
                await timed_query(t, bad)
            return str(e.value)
        finally:
            await t.close()

    msg = run(go())
    assert vm.url in msg and "HTTP 4" in msg and "max_over_time" in msg and len(msg) < 1500, msg


def test_several_fields_are_one_selector_and_one_answer_decoded_after_the_pass(devops):
    """A max over five fields is one request over one selector grouped by __name__ (not a
    union of five), and laying its series side by side is decoding (not client work in the
    latency); a merge of several requests still is client work."""
    ds, _ = devops
    t = VictoriaMetricsTarget("http://127.0.0.1:1")
    for spec in generate(ds, ["single-groupby-5-1-12", "cpu-max-all-8"], 2, SEED):
        q = t.render(spec)
        assert all("union(" not in r.query and "keep_metric_names" in r.query for r in q.requests), q.text
        assert len(q.kinds) > 1 and (q.client == (len(q.requests) > 1)), q.text
