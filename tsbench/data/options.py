"""Phase 1's options, declared once (core/options.py): `DatasetSettings` is the data a
dataset holds (an experiment file's datasets: entry; generate's and stream's dataset
options; DatasetSpec's fields), `GenerateCommand` adds where and how generate writes it.
A dataset's numbers are checked by resolve() (dataset.py) for every way in; the command
line checks their bounds at once too (Cli bounds), to show them in --help."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from tsbench.core import bounds
from tsbench.core.options import Cli, PhaseOptions


class DatasetSettings(PhaseOptions):
    """The data: use case, scale, time range, seed and the use case's parameters."""

    use_case: Annotated[str, Cli("-u")] = Field("devops", description="devops, cpu-only, cpu-single, iot, synthetic "
                                                                      "or custom.")
    scale: Annotated[int | None, Cli(bounds=(1, bounds.MAX_ENTITIES))] = Field(
        None, description="Entities: hosts (devops), trucks (iot), hosts/entities (custom). [default: 1]")
    start: str = Field("2016-01-01T00:00:00Z", description="First timestamp (RFC 3339); stream also takes now (the "
                                                           "current time, to the interval).")
    end: str | None = Field(None, description="End of the time range, exclusive (RFC 3339). [default: start + 1 day]")
    interval: str | None = Field(None, description="Time between a series' points (epochs), e.g. 10s, 1m, 100ms. "
                                                   "[default: 10s]")
    seed: Annotated[int, Cli(bounds=(0, bounds.MAX_SEED))] = Field(1, description="Same seed, same bytes.")
    params: Annotated[dict[str, Any], Cli("-P", name="--param", multiple=True, metavar="KEY=VALUE")] = Field(
        {}, description="Use-case parameter, repeatable: iot missing=0.1 late=0.3 ...; synthetic tags=10,10,10 "
                        "fields=1 points=100 | shards=12 points_per_shard=250 (tags and fields: inch's -t and -f).")
    schema_file: Annotated[str | None, Cli(name="--schema")] = Field(
        None, description="YAML schema file of the custom use case.")


class ImportSettings(PhaseOptions):
    """How a file of your own data is read: `tsbench import`'s options, and an experiment
    file's datasets: entry with file: (data/importing.py)."""

    format: Literal["influx", "csv"] | None = Field(
        None, description="The file's format: influx (line protocol) or csv. [default: from the extension: .csv is "
                          "csv, anything else line protocol]")
    precision: Literal["ns", "us", "ms", "s"] = Field("ns", description="Line protocol: the unit of the file's "
                                                                        "timestamps.")
    csv_time: str = Field("time", description="CSV: the time column.")
    csv_time_unit: Literal["ns", "us", "ms", "s", "rfc3339"] = Field(
        "ns", description="CSV: the time column's unit (integers), or rfc3339 (2016-01-01T00:00:00Z).")
    csv_tags: str = Field("", description="CSV: the tag columns, comma-separated; every other column is a field.")
    csv_measurement: str | None = Field(None, description="CSV: the measurement's name. [default: the file's name]")
    csv_types: str | None = Field(None, description="CSV: field types, e.g. usage=float,count=integer (float, "
                                                    "integer, unsigned, string, boolean); a field not named takes "
                                                    "its type from the first rows.")


class GenerateCommand(DatasetSettings):
    """tsbench generate's options: the dataset's, and where and how it is written."""

    format: str = Field("influx", description="influx (line protocol) or csv (measurement,time,tags...,fields...).")
    output: Annotated[str, Cli("-o", output=True)] = Field(
        "-", description="Data file, or - for stdout. A manifest FILE.manifest.json is written next to a file.")
    compress: str | None = Field(None, description="none, gzip or zstd. [default: from the suffix .gz / .zst]")
    group: int | None = Field(None, ge=0, le=bounds.MAX_GROUPS - 1, description="Write only group I (0-based) of "
                                                                              "--groups.")
    groups: int = Field(1, ge=1, le=bounds.MAX_GROUPS, description="Split the entities exactly into N groups; "
                                                                  "without --group, write N files F.g0 ... F.gN-1.")
    processes: Annotated[int, Cli("-j")] = Field(1, ge=1, le=bounds.MAX_PROCESSES,
                                                 description="Generate in N processes (same bytes as one).")
