"""The iot query types (queries/iot.py) in InfluxQL (databases/influx/iot.py)
against a real InfluxDB 1.8: the iot dataset of test_iot_queries.py (20 trucks,
two days at 46 s, NULL tags and fields), written in the influx format with the
real command line and loaded with the real loader; drawn queries of every type
plus the threshold variants answer what the reference engine expects, and a
wrong rendering is caught."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter

import pytest

from tsbench import queries
from tsbench.data.datafile import open_datafile
from tsbench.databases.influx.dialects.flux import Flux
from tsbench.databases.influx.dialects.influxql import InfluxQL
from tsbench.databases.influx.dialects.iot import IOT
from tsbench.databases.influx.target import InfluxTarget
from tsbench.execute.timer import timed_query
from tsbench.queries.base import QuerySpec
from tsbench.queries.compare import compare, tolerance
from tsbench.queries.iot import IOT_TYPES
from tsbench.queries.reference import Reference

from conftest import load_into, local_server, run_cli

DB = "qiot"
PER_TYPE = 3
LOOSE = {"stationary-trucks": {"velocity_below": 40.0},
         "long-driving-sessions": {"velocity_above": 40.0, "min_periods": 14},
         "long-daily-sessions": {"velocity_above": 40.0, "min_periods": 62},
         "low-fuel": {"fuel_below": 0.5},
         "high-load": {"load_above": 0.5},
         "daily-activity": {"status_below": 2.0},
         "avg-vs-projected-fuel-consumption": {"velocity_above": 50.0},
         "avg-daily-driving-duration": {"velocity_above": 40.0},
         "avg-daily-driving-session": {"velocity_above": 40.0}}


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def server():
    with local_server("influx") as s:
        yield s


@pytest.fixture(scope="module")
def iot(server, tmp_path_factory):
    path = tmp_path_factory.mktemp("iotlp") / "iot.lp"
    run_cli("generate", "-q", "-u", "iot", "--scale", "20", "--end", "2016-01-03T00:00:00Z", "--interval", "46s",
            "--seed", "3", "--format", "influx", "-o", str(path))
    df = open_datafile(path)
    load_into("influx", server.url, df, {"database": DB}, compact=False)
    return df.dataset, Reference(df.dataset)


@pytest.fixture(scope="module")
def specs(iot):
    ds, _ = iot
    drawn = queries.generate(ds, list(IOT_TYPES), PER_TYPE, 11)
    probes = [QuerySpec(len(drawn) + i, s.type, {**s.params, **LOOSE[s.type]})
              for i, s in enumerate(x for x in drawn if x.type in LOOSE)]
    return drawn + probes


async def _run_all(url, specs, ref, cls=InfluxTarget):
    t = cls(url, {"database": DB})
    await t.open()
    bad, nonempty, t0 = [], Counter(), time.perf_counter()
    try:
        for spec in specs:
            native = t.render(spec)
            ans = await timed_query(t, native)
            exp = ref.expected(spec)
            mm = compare(spec.params, exp, t.answer_rows(native, ans), tolerance(spec, 0.0, ref))
            if mm is not None:
                bad.append(f"--- {spec.type} #{spec.id}:\n{native.text}\n{mm.diff()}")
            if exp:
                nonempty[spec.type] += 1
    finally:
        await t.close()
    return bad, nonempty, time.perf_counter() - t0


def test_every_iot_type_is_declared():
    assert set(IOT) == set(IOT_TYPES) == set(InfluxQL.custom) == set(InfluxQL.custom_rows)
    assert set(IOT_TYPES) <= InfluxQL.query_types() and set(IOT_TYPES) <= InfluxTarget.query_types
    assert not set(IOT_TYPES) & Flux.query_types()


def test_iot_answers_equal_the_reference(server, iot, specs):
    _, ref = iot
    bad, nonempty, secs = run(_run_all(server.url, specs, ref))
    print(f"\ninfluxql: {len(specs)} iot queries of {len(IOT_TYPES)} types in {secs:.2f} s, {len(bad)} mismatches")
    assert not bad, "\n".join(bad[:5])
    assert {s.type for s in specs} == set(IOT_TYPES)
    assert all(nonempty[t] for t in IOT_TYPES), nonempty       # no type passes on empty answers only
    # a newest row with a NULL (absent) field is answered as such, not skipped for an older row
    assert any(None in row for s in specs if s.type == "last-loc" for row in ref.expected(s))


class Wrong(InfluxTarget):
    """Test-only: the oldest row instead of the newest, max instead of mean, counts of zero
    statuses instead of non-zero ones, no fleet filter."""

    def render(self, spec):
        n = super().render(spec)
        text = (n.text.replace("ORDER BY time DESC", "ORDER BY time ASC").replace("mean(", "max(")
                .replace("!= 0", "= 0").replace("sum(", "max(").replace("AND \"fleet\" = ", "AND \"fleet\" != "))
        return dataclasses.replace(n, text=text)


def test_wrong_rendering_is_caught(server, iot, specs):
    _, ref = iot
    types = ("last-loc", "low-fuel", "stationary-trucks", "long-driving-sessions", "avg-vs-projected-fuel-consumption",
             "avg-daily-driving-session", "avg-load", "daily-activity", "breakdown-frequency")
    chosen = [s for s in specs if s.type in types and ref.expected(s)]
    chosen = [next(s for s in chosen if s.type == t) for t in types]
    bad, _, _ = run(_run_all(server.url, chosen, ref, cls=Wrong))
    assert len(bad) == len(chosen), bad
    bad, _, _ = run(_run_all(server.url, chosen, ref))
    assert not bad
