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


# ---- the generic family (tsbench/queries/generic.py) -----------------------------------------

GENERIC_DEVOPS = dict(use_case="devops", scale=4, end="2016-01-01T01:00:00Z", seed=9)
# a schema of its own: an entity tag per site, a zone tag of two values, a tag the measurement has of its
# own (serial: never chosen), float and int fields, and a second measurement
GENERIC_SCHEMA = """
name: plant
scale: 5
interval: 10s
tags:
  site: "site_{entity:02}"
  zone: {choice: [north, south]}
measurements:
  - name: pump
    tags:
      serial: "{int:0..9}-{choice:a|b}"
    fields:
      - {name: level, type: float, evolution: clamped_walk, step: {uniform: [-1, 1]}, min: 0, max: 100,
         initial: {uniform: [0, 100]}, decimals: 2}
      - {name: starts, type: int, evolution: monotonic_walk, step: {constant: 2}}
      - {name: flow, type: float, evolution: fresh, step: {normal: [50, 10]}, initial: draw}
  - name: motor
    fields:
      - {name: rpm, type: int, evolution: clamped_walk, step: {normal: [0, 30]}, min: 0, max: 3000,
         initial: {uniform: [500, 2500]}}
"""
GENERIC_CUSTOM_END = "2016-01-01T00:40:00Z"


def generic_types() -> list[str]:
    return [n for n, qt in queries.CATALOG.items() if qt.family == "generic"]


def generic_schema(d) -> str:
    path = d / "plant.yaml"
    path.write_text(GENERIC_SCHEMA)
    return str(path)


def generic_files(tmp_path_factory, fmt: str = "csv") -> dict[str, DataFile]:
    """{"devops": ..., "custom": ...}: two small files (format fmt) the generic family draws on."""
    d = tmp_path_factory.mktemp("generic")
    dv = GENERIC_DEVOPS
    run_cli("generate", "-q", "--scale", str(dv["scale"]), "--end", dv["end"], "--seed", str(dv["seed"]),
            "--format", fmt, "-o", str(d / f"devops.{fmt}"))
    run_cli("generate", "-q", "-u", "custom", "--schema", generic_schema(d), "--end", GENERIC_CUSTOM_END,
            "--seed", "4", "--format", fmt, "-o", str(d / f"custom.{fmt}"))
    return {"devops": open_datafile(d / f"devops.{fmt}"), "custom": open_datafile(d / f"custom.{fmt}")}


def generic_specs(df: DataFile, reference, count: int = 3) -> list[QuerySpec]:
    """`count` queries of every generic type that fits the file's dataset."""
    ctx = queries.context(df.dataset)
    names = [n for n in generic_types() if queries.CATALOG[n].applies(ctx) is None]
    return queries.generate(df.dataset, names, count, 21, reference=reference)
