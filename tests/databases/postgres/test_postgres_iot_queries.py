"""The iot query family's answers on PostgreSQL, tags in a table and inline, equal to the
reference engine's: the dataset and drawn queries of tests/unit/test_iot_queries.py (20
trucks, two days at 46 s, NULL tags and fields; every type drawn, plus the threshold
variants that make the empty types find something)."""

from __future__ import annotations

import pytest

from tsbench import queries
from tsbench.data.datafile import open_datafile
from tsbench.queries.base import QuerySpec
from tsbench.queries.iot import IOT_TYPES
from tsbench.queries.reference import Reference

from conftest import execute_on, load_into, local_server, run_cli

TSBS_IOT = ("last-loc", "single-last-loc", "low-fuel", "high-load", "stationary-trucks", "long-driving-sessions",
            "long-daily-sessions", "avg-vs-projected-fuel-consumption", "avg-daily-driving-duration",
            "avg-daily-driving-session", "avg-load", "daily-activity", "breakdown-frequency")
PER_TYPE = 3


@pytest.fixture(scope="module")
def iot(tmp_path_factory):
    d = tmp_path_factory.mktemp("iotq")
    run_cli("generate", "-q", "-u", "iot", "--scale", "20", "--end", "2016-01-03T00:00:00Z", "--interval", "46s",
            "--seed", "3", "--format", "csv", "-o", str(d / "iot.csv"))
    return open_datafile(d / "iot.csv")


def _probes(specs: list[QuerySpec]) -> list[QuerySpec]:
    """Drawn queries again (window and fleet kept) with other thresholds. In this
    model a truck's velocity (a clamped walk of +-10 a tick) almost never stays
    under 1 for 10 minutes, so stationary-trucks as drawn is empty; with 40 it
    finds some. Trucks drive (mean velocity > 1) in nearly every 10 minutes, so
    the long-session counts sit at the maximum; with 40 they spread, and the
    minimum counts (14, 62) equal some truck's count here, so > and >= differ."""
    loose = {"stationary-trucks": {"velocity_below": 40.0},
             "long-driving-sessions": {"velocity_above": 40.0, "min_periods": 14},
             "long-daily-sessions": {"velocity_above": 40.0, "min_periods": 62}}
    return [QuerySpec(len(specs) + i, s.type, {**s.params, **loose[s.type]})
            for i, s in enumerate(x for x in specs if x.type in loose)]


@pytest.fixture(scope="module")
def specs(iot):
    drawn = queries.generate(iot.dataset, list(IOT_TYPES), PER_TYPE, 11)
    return drawn + _probes(drawn)


@pytest.fixture(scope="module")
def reference(iot):
    return Reference(iot.dataset)


def _assert_all_valid(res, specs):
    bad = [v for v in res.validation if not v["ok"]]
    assert not bad, "\n".join(f"{v['type']}: {v['diff']}" for v in bad[:3])
    assert len(res.validation) == len(specs) and not res.unsupported
    errors = [r["error"] for r in res.records if r["status"] != "ok"]
    assert not errors, errors[:3]
    assert {v["type"] for v in res.validation} == set(TSBS_IOT)


@pytest.fixture(scope="module")
def pg():
    with local_server("postgres") as srv:
        yield srv


@pytest.mark.parametrize("tags", ["table", "inline"])
def test_postgres_answers_equal_the_reference(pg, iot, specs, reference, tags):
    opts = {"tags": tags, "database": f"iot_{tags}"}
    load_into("postgres", pg.url, iot, opts)
    res = execute_on("postgres", pg.url, iot, specs, reference, opts, workers=3)
    _assert_all_valid(res, specs)
