"""Phase 4's options, declared once (core/options.py): `ExecuteSettings` is an experiment
file's execute: section, `ExecuteCommand` adds what only `tsbench execute` takes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from tsbench.core.clusteraddress import ClusterAddress
from tsbench.core import bounds
from tsbench.core.options import Cli, Stalls, repeat_field


class ExecuteSettings(Stalls):
    """The execute phase: tsbench execute's options; an experiment's execute: section."""

    workers: Annotated[int, Cli("-w")] = Field(1, ge=1, le=bounds.MAX_WORKERS, description="Queries in flight at once.")
    count: Annotated[int | None, Cli("-n")] = Field(None, ge=1, le=bounds.MAX_QUERIES,
                                                    description="Measured queries (default: the file once).")
    burn_in: int = Field(0, ge=0, le=bounds.MAX_QUERIES, description="Queries run first and not counted.")
    cache: Literal["warm", "cold", "cold-query"] = Field(
        "warm", description="warm: a first pass is discarded; cold: restart the server and drop the page cache "
                            "before each pass over the queries; cold-query: before every query.")
    query_timeout: float = Field(60.0, gt=0, le=bounds.MAX_SECONDS,
                                 description="Seconds a query may take; past it the query is recorded as an error.")
    cluster: Annotated[ClusterAddress, Cli(metavar="ADDRESS")] = Field(
        None, description="Run the measured queries from a Dask cluster, one client slot per worker with --workers "
                          "each, all at once (warm cache only): local:N (N <= 256) or tcp://HOST:PORT.")
    repeat: int = repeat_field("a new measured pass over the same queries on the same database")

    @model_validator(mode="after")
    def _warm_on_a_cluster(self):
        if self.cluster and self.cache != "warm":
            raise ValueError(f"cache {self.cache} restarts the server between the driver's passes; not with cluster")
        return self


class ExecuteCommand(ExecuteSettings):
    """tsbench execute's options: the execute: section's and the command line's own."""

    duration: float | None = Field(None, gt=0, le=bounds.MAX_SECONDS, description="Or: seconds of measured queries.")
    rate: float | None = Field(None, gt=0, le=bounds.MAX_RATE,
                               description="Fixed rate in queries/s; latency from the scheduled time.")
    check_answers: Annotated[bool, Cli(flag="--no-validate")] = Field(
        True, description="Do not check answers against the reference engine.")
    print_responses: bool = Field(False, description="After the timed pass, print each executed query once: its text "
                                                     "in the target's dialect, the server's answer and the canonical "
                                                     "rows (cut at --max-rows, saying how many more).")
    max_rows: int = Field(20, ge=0, le=bounds.MAX_COUNT, description="Rows of each answer --print-responses shows.")
