"""InfluxDB queries (phases 4-5) against a real InfluxDB 1.8 with Flux on: every
supported query type, rendered as InfluxQL and as Flux, answers what the
reference engine expects on a devops dataset (40 hosts, 3 h) and, for the
flux family, on a synthetic one (tag0 x tag1 = 10 x 10 over 2 days at 10 min);
a wrong rendering is caught by compare(); unsupported types, bad queries and
a custom shape added by a dialect subclass."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter

import pytest

from tsbench.core.errors import Fatal, Unsupported
from tsbench.data.datafile import open_datafile
from tsbench.databases.influx.dialects.flux import Flux
from tsbench.databases.influx.dialects.influxql import InfluxQL
from tsbench.databases.influx.dialects.literals import parse_rfc3339
from tsbench.databases.influx.target import InfluxQuery, InfluxTarget
from tsbench.execute.timer import timed_query
from tsbench.queries import generate, query_type
from tsbench.queries.base import QuerySpec
from tsbench.queries.compare import compare, tolerance
from tsbench.queries.reference import Reference

from conftest import load_into, local_server, run_cli

SEED = 7
COUNT = {"influxql": 3, "flux": 2}      # Flux in 1.8 is slow (seconds for cpu-max-all-32-24)
LANGS = ("influxql", "flux")


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def server():
    with local_server("influx", flux=True) as s:
        yield s


def _loaded(server, tmp_path_factory, db: str, *gen_args: str):
    """Generate a data file with the real command line, load it with the real loader."""
    path = tmp_path_factory.mktemp(db) / f"{db}.lp"
    run_cli("generate", "-q", "--format", "influx", "-o", str(path), *gen_args)
    df = open_datafile(path)
    load_into("influx", server.url, df, {"database": db}, compact=False)
    return df.dataset, Reference(df.dataset)


@pytest.fixture(scope="module")
def devops(server, tmp_path_factory):
    return _loaded(server, tmp_path_factory, "qdevops", "-u", "devops", "--scale", "40",
                   "--end", "2016-01-01T03:00:00Z")


@pytest.fixture(scope="module")
def synthetic(server, tmp_path_factory):
    # 2 days at 10 min: the flux types read m0.v0 grouped by tag0 over windows of days.
    # (--end rather than -P points=288: open_datafile cannot reopen a points= file, whose
    # manifest carries an end that synthetic then refuses beside points)
    return _loaded(server, tmp_path_factory, "qsynth", "-u", "synthetic", "-P", "tags=10,10",
                   "--end", "2016-01-03T00:00:00Z", "--interval", "10m")


async def _run_all(url: str, db: str, lang: str, specs, ref: Reference, cls=InfluxTarget):
    """(mismatch reports, answers with rows, seconds) of running every spec and comparing."""
    t = cls(url, {"database": db, "query_language": lang})
    await t.open()
    bad, nonempty, t0 = [], Counter(), time.perf_counter()
    try:
        for spec in specs:
            native = t.render(spec)
            assert isinstance(native, InfluxQuery) and native.language == lang and native.params is spec.params
            ans = await timed_query(t, native)
            assert ans.nbytes > 0 and 0 <= ans.ttfb <= ans.seconds and ans.raw
            exp = ref.expected(spec)
            mm = compare(spec.params, exp, t.answer_rows(native, ans), tolerance(spec, 0.0, ref))
            if mm is not None:
                bad.append(f"--- {spec.type} #{spec.id} ({lang}):\n{native.text}\n{mm.diff()}")
            if exp:
                nonempty[spec.type] += 1
    finally:
        await t.close()
    return bad, nonempty, time.perf_counter() - t0


def _types(lang: str, family_flux: bool) -> list[str]:
    types = InfluxTarget.dialects[lang].query_types()
    return sorted(t for t in types if query_type(t).family != "iot"          # iot: tests/databases/influx/test_influx_iot_queries.py
                  and (query_type(t).family == "flux") == family_flux)


@pytest.mark.parametrize("lang", LANGS)
def test_devops_every_type_matches_reference(server, devops, lang):
    ds, ref = devops
    types = _types(lang, family_flux=False)
    assert len(types) >= 29
    specs = generate(ds, types, COUNT[lang], SEED)
    bad, nonempty, secs = run(_run_all(server.url, "qdevops", lang, specs, ref))
    print(f"\n{lang}: {len(specs)} queries of {len(types)} types in {secs:.2f} s, {len(bad)} mismatches")
    assert not bad, "\n".join(bad)
    # compare() passing on empty answers proves little: nearly every type has rows
    empty_types = [t for t in types if not nonempty[t]]
    assert set(empty_types) <= {"high-cpu-1"}, empty_types


@pytest.mark.parametrize("lang", LANGS)
def test_synthetic_flux_sums_match_reference(server, synthetic, lang):
    ds, ref = synthetic
    types = _types(lang, family_flux=True)
    assert types == sorted(f"flux-sum-{by}{d}d" for by in ("", "by-tag-") for d in (1, 4, 12))
    specs = generate(ds, types, COUNT[lang], SEED)
    bad, nonempty, secs = run(_run_all(server.url, "qsynth", lang, specs, ref))
    print(f"\n{lang}: {len(specs)} flux-family queries in {secs:.2f} s, {len(bad)} mismatches")
    assert not bad, "\n".join(bad)
    assert all(nonempty[t] == COUNT[lang] for t in types), nonempty
    by_tag = [s for s in specs if "by-tag" in s.type]
    assert all(len(ref.expected(s)) == 10 for s in by_tag)        # one sum per tag0 value


class MaxAsMin(InfluxTarget):
    """Test-only: renders max as min."""

    def render(self, spec):
        n = super().render(spec)
        return dataclasses.replace(n, text=n.text.replace("max(", "min(").replace("fn: max", "fn: min"))


class DropsAHost(InfluxTarget):
    """Test-only: forgets the first host of the filter (but normalizes with the true params)."""

    def render(self, spec):
        p = dict(spec.params)
        p["tag_values"] = p["tag_values"][1:]
        return dataclasses.replace(super().render(QuerySpec(spec.id, spec.type, p)), params=spec.params)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("cls", [MaxAsMin, DropsAHost])
def test_wrong_rendering_is_caught(server, devops, lang, cls):
    ds, ref = devops
    specs = generate(ds, ["max-cpu-8", "cpu-max-all-8"], 2, SEED)
    bad, _, _ = run(_run_all(server.url, "qdevops", lang, specs, ref, cls=cls))
    assert len(bad) == len(specs), bad          # every one of them differs
    bad, _, _ = run(_run_all(server.url, "qdevops", lang, specs, ref))
    assert not bad


def test_unsupported_type_raises():
    for lang in LANGS:
        t = InfluxTarget("http://127.0.0.1:1", {"query_language": lang})
        if lang == "flux":              # the iot types have InfluxQL renderers only
            assert "last-loc" not in t.query_types
            with pytest.raises(Unsupported, match="last-loc"):
                t.render(QuerySpec(0, "last-loc", {"shape": "custom", "type": "last-loc"}))
        with pytest.raises(Unsupported, match="nosuchtype"):
            t.render(QuerySpec(0, "nosuchtype", {"shape": "custom", "type": "nosuchtype"}))
    # a shape a renderer cannot spell is Unsupported too (Flux: a value filter on another field)
    p = {"shape": "aggregate", "measurement": "cpu", "agg": "max", "fields": ["usage_user"], "types": ["float"],
         "tag": None, "tag_values": None, "start": 0, "end": 10**9, "bucket": None, "group_by": [],
         "value_filter": {"field": "usage_system", "op": ">", "value": 1.0}}
    with pytest.raises(Unsupported):
        Flux("db").aggregate(p)
    with pytest.raises(Unsupported, match="usage_system|other than"):
        InfluxTarget("http://127.0.0.1:1", {"query_language": "flux"}).render(QuerySpec(0, "max-cpu-1", p))


def test_declared_query_types():
    """Listable without a server: every devops, flux, relational and generic type in both
    languages, and the iot types in InfluxQL."""
    from tsbench.queries.catalog import CATALOG

    want = {n for n, qt in CATALOG.items() if qt.family in ("devops", "flux", "relational", "generic")}
    iot = {n for n, qt in CATALOG.items() if qt.family == "iot"}
    assert len(iot) == 13
    assert list(InfluxTarget.dialects) == ["influxql", "flux"]      # InfluxQL the default
    assert InfluxTarget.query_types == InfluxQL.query_types() == want | iot
    assert Flux.query_types() == want
    assert all(Flux.support()[n] for n in iot)                       # each with its reason
    caps = InfluxTarget.capabilities()
    assert caps["query_types"] == sorted(want | iot)
    assert caps["dialects"] == {"influxql": sorted(want | iot), "flux": sorted(want)}
    assert InfluxTarget("http://x", {"query_language": "flux"}).query_types == Flux.query_types()
    assert InfluxTarget("http://x").query_types == InfluxQL.query_types()


def test_rendering_spelled_as_documented():
    m = 60 * 10**9
    p = {"shape": "aggregate", "measurement": "cpu", "agg": "max", "fields": ["usage_user"], "types": ["float"],
         "tag": "hostname", "tag_values": ["host_1", "host_7"], "start": 1451606400 * 10**9,
         "end": 1451606400 * 10**9 + 60 * m, "bucket": m, "group_by": [], "order": "desc", "limit": 5}
    spec = QuerySpec(0, "max-cpu-2", p)
    assert InfluxQL().render(spec) == (
        'SELECT max("usage_user") FROM "cpu" WHERE time >= 1451606400000000000 AND time < 1451610000000000000 '
        'AND ("hostname" = \'host_1\' OR "hostname" = \'host_7\') GROUP BY time(1m) fill(none) '
        'ORDER BY time DESC LIMIT 5')
    f = Flux("db").render(spec)
    assert f.startswith('from(bucket: "db")')
    assert "range(start: 2016-01-01T00:00:00Z, stop: 2016-01-01T00:59:59.999999999Z)" in f
    assert 'aggregateWindow(every: 1m, fn: max, timeSrc: "_start", createEmpty: false)' in f
    assert parse_rfc3339("2016-01-01T00:59:59.999999999Z") == p["end"] - 1


def test_custom_shape_hook(server, devops):
    """Another module adds a type: a catalog entry of a custom shape of its own, and a dialect
    subclass with its InfluxQL and its row parser; the target speaking that dialect runs it."""
    from tsbench.queries.base import QueryType
    from tsbench.queries.catalog import CATALOG

    calls = []

    def rows(p, results):
        calls.append(results)
        return [(s["tags"]["hostname"], s["values"][0][1]) for r in results for s in r["series"]]

    class HostsQL(InfluxQL):
        custom = {**InfluxQL.custom, "test-hosts": lambda d, p: f'SELECT count("usage_user") FROM "cpu" WHERE '
                  f'time >= {p["start"]} AND time < {p["end"]} GROUP BY "hostname"'}
        custom_rows = {**InfluxQL.custom_rows, "test-hosts": rows}

    class HostsTarget(InfluxTarget):
        dialects = {**InfluxTarget.dialects, "influxql": HostsQL}

    assert "test-hosts" not in HostsTarget.query_types          # not a catalog type yet
    CATALOG["test-hosts"] = QueryType("test-hosts", "test", "count(usage_user) per host", {"cpu": ("usage_user",)},
                                      lambda rng, ctx: {}, "test-hosts")
    try:
        t = HostsTarget(server.url, {"database": "qdevops"})
        assert "test-hosts" in t.query_types and "test-hosts" in HostsTarget.query_types
        assert "test-hosts" not in HostsTarget.dialects["flux"].query_types()
        assert "test-hosts" not in InfluxTarget.query_types         # only the target speaking HostsQL runs it
        ds, _ = devops

        async def go():
            await t.open()
            try:
                native = t.render(QuerySpec(0, "test-hosts", {"shape": "custom", "type": "test-hosts",
                                                              "start": ds.start_ns, "end": ds.end_ns}))
                return t.answer_rows(native, await timed_query(t, native))
            finally:
                await t.close()

        rows = run(go())
        assert len(rows) == 40 and {n for _, n in rows} == {3 * 360} and len(calls) == 1
    finally:
        CATALOG.pop("test-hosts")
    assert "test-hosts" not in HostsTarget.query_types


@pytest.mark.parametrize("lang,text,words", [
    ("influxql", "SELECT max(usage_user FROM cpu", "error parsing query"),
    ("influxql", "SELECT usage_user FROM cpu GROUP BY time(1m)", "GROUP BY requires at least one aggregate"),
    ("flux", 'from(bucket: "qdevops") |> range(start: 2016-01-01T00:00:00Z', "expected RPAREN"),
    ("flux", 'from(bucket: "nosuchdb") |> range(start: 2016-01-01T00:00:00Z)', "no database"),
])
def test_server_errors_are_fatal_with_its_words(server, devops, lang, text, words):
    async def go():
        t = InfluxTarget(server.url, {"database": "qdevops", "query_language": lang})
        await t.open()
        try:
            with pytest.raises(Fatal) as e:
                native = InfluxQuery(lang, text, "max-cpu-1", {"shape": "aggregate"})
                t.answer_rows(native, await timed_query(t, native))     # a statement's error comes in a 200 answer
            return str(e.value)
        finally:
            await t.close()

    msg = run(go())
    assert words in msg and server.url in msg, msg
