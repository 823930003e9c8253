"""The datasets and drawn queries the query tests share (phases 1, 3 and 5): a small
DevOps CSV file with every catalog type that fits it, and a small iot file with TSBS's
thirteen iot types plus probes that make the threshold types non-trivial. The unit
tests run them on DuckDB, tests/databases/postgres on PostgreSQL."""

from __future__ import annotations

from tsbench import queries
from tsbench.data.datafile import DataFile, open_datafile
from tsbench.queries.base import QuerySpec
from tsbench.queries.iot import IOT_TYPES

from conftest import run_cli

DEVOPS_END = "2016-01-01T03:00:00Z"
TSBS_IOT = ("last-loc", "single-last-loc", "low-fuel", "high-load", "stationary-trucks", "long-driving-sessions",
            "long-daily-sessions", "avg-vs-projected-fuel-consumption", "avg-daily-driving-duration",
            "avg-daily-driving-session", "avg-load", "daily-activity", "breakdown-frequency")
IOT_PER_TYPE = 3


def devops_csv(tmp_path_factory) -> DataFile:
    d = tmp_path_factory.mktemp("q")
    run_cli("generate", "-q", "--scale", "40", "--end", DEVOPS_END, "--seed", "5", "--format", "csv",
            "-o", str(d / "d.csv"))
    return open_datafile(d / "d.csv")


def devops_specs(devops: DataFile) -> list[QuerySpec]:
    """Two queries of every catalog type that fits the dataset."""
    ctx = queries.context(devops.dataset)
    names = [n for n, qt in queries.CATALOG.items() if qt.applies(ctx) is None]
    return queries.generate(devops.dataset, names, 2, 11)


def iot_csv(tmp_path_factory) -> DataFile:
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


def iot_specs(iot: DataFile) -> list[QuerySpec]:
    """IOT_PER_TYPE queries of each iot type, then the probes."""
    drawn = queries.generate(iot.dataset, list(IOT_TYPES), IOT_PER_TYPE, 11)
    return drawn + _probes(drawn)


def assert_all_valid(res, specs, types: tuple[str, ...] | None = None) -> None:
    """Every answer equal to the reference, none unsupported, no query failed (and, given
    types, every one of them checked)."""
    bad = [v for v in res.validation if not v["ok"]]
    assert not bad, "\n".join(f"{v['type']}: {v['diff']}" for v in bad[:3])
    assert len(res.validation) == len(specs) and not res.unsupported
    errors = [r["error"] for r in res.records if r["status"] != "ok"]
    assert not errors, errors[:3]
    if types is not None:
        assert {v["type"] for v in res.validation} == set(types)
