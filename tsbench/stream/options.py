"""The stream phase's options, declared once (core/options.py): `StreamSettings` is an
experiment file's stream: section, `StreamCommand` adds what only `tsbench stream` takes
(and what it shares with load: load/options.py's Writes). Where the command line's default
differs from the file's it is the field's Cli default (writers, duration, query_rate)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from tsbench.core.clusteraddress import ClusterAddress
from tsbench.core import bounds
from tsbench.core.errors import UserError
from tsbench.core.options import Cli, repeat_field
from tsbench.load.options import Batches, Writes


class StreamSettings(Batches):
    """The stream phase: tsbench stream's options (README, stream); the queries: section's
    types run while writing when queries is true."""

    writers: Annotated[int, Cli("-w", default=4)] = Field(8, ge=1, le=bounds.MAX_WORKERS,
                                                          description="Concurrent writers, each owning a share of "
                                                                      "the entities.")
    start: Annotated[Literal["dataset", "now"], Cli(command=False)] = Field(
        "dataset", description="The first timestamp: the dataset's start, or the current time.")
    rate: float | None = Field(None, gt=0, le=bounds.MAX_RATE,
                               description="Points (rows) per second of all writers together, open loop: batches go "
                                           "on a schedule and latency counts from it. [default: as fast as answered]")
    delay: float = Field(0.0, ge=0, le=bounds.MAX_SECONDS, description="Seconds a writer waits after each answer "
                                                                       "(closed loop).")
    target_latency: float | None = Field(None, gt=0, le=bounds.MAX_SECONDS,
                                         description="Seconds: the closed loop's delay adapts (AIMD) to keep write "
                                                     "latency about here.")
    duration: Annotated[float | None, Cli(default=None)] = Field(60.0, gt=0, le=bounds.MAX_SECONDS,
                                                                 description="Seconds to stream.")
    points_per_series: int | None = Field(None, ge=1, le=bounds.MAX_COUNT, description="Points per series, then stop.")
    time: str | None = Field(None, description="Spread each series' points_per_series points over this span (inch's "
                                               "-time), e.g. 1h: the interval is the span over the points.")
    churn: Annotated[str | None, Cli(metavar="FRACTION/INTERVAL")] = Field(
        None, description="Series churn, as pods come and go: every INTERVAL of data time that FRACTION of the "
                          "series is replaced by new ones (new tag values), e.g. 0.1/60s.")
    max_errors: int = Field(0, ge=0, le=bounds.MAX_COUNT,
                            description="Refused batches tolerated (dropped and counted); one more stops the run.")
    queries: Annotated[bool, Cli(command=False)] = Field(
        False, description="Run the queries: section's types while writing.")
    query_rate: Annotated[float, Cli(default=None)] = Field(1.0, gt=0, le=bounds.MAX_RATE,
                                                            description="Queries per second, open loop. [default: 1]")
    query_ratio: Annotated[str | None, Cli(name="--ratio", metavar="write:W,query:Q")] = Field(
        None, description="Instead of --query-rate: Q queries fall due with every W write batches answered "
                          "(iot-benchmark's operation mix), e.g. write:9,query:1.")
    query_workers: int = Field(2, ge=1, le=bounds.MAX_WORKERS, description="Queries in flight at most.")
    query_window: float = Field(300.0, gt=0, le=bounds.MAX_SECONDS,
                                description="Seconds: a moved query covers at most this freshest window.")
    freshness: bool = Field(False, description="Probe how long after a write's answer a count sees it (p50/p99; data "
                                               "without faults).")
    freshness_every: float = Field(1.0, gt=0, le=bounds.MAX_SECONDS,
                                   description="Seconds between freshness probes at least.")
    cluster: Annotated[ClusterAddress, Cli(metavar="ADDRESS")] = Field(
        None, description="Stream from a Dask cluster, one client slot per worker, each with --writers writers over "
                          "its group of the entities and its share of --rate: local:N (N <= 256) or tcp://HOST:PORT "
                          "(not with queries or freshness).")
    repeat: int = repeat_field("a new stream into an empty database (a fresh local server, or by URL the tables "
                               "dropped and made again)")

    @model_validator(mode="after")
    def _consistent(self):
        if self.duration is None and self.points_per_series is None:
            raise ValueError("give duration (seconds) or points_per_series (or both: the first reached)")
        if self.rate is not None and (self.delay or self.target_latency):
            raise ValueError("rate (open loop) and delay or target_latency (closed loop) do not go together")
        if self.time is not None:
            self.interval()
        if self.query_ratio is not None and not self.queries:
            raise ValueError("query_ratio mixes in the queries section's types: set queries: true")
        if self.cluster and (self.queries or self.freshness):
            raise ValueError("queries and freshness run from one client; not with cluster")
        try:
            self.ratio()
            self.churn_rule()
        except UserError as exc:
            raise ValueError(str(exc).replace("--ratio", "query_ratio").replace("--churn", "churn")) from None
        return self

    def interval(self) -> str | None:
        """The dataset interval that time gives (None: the dataset's own)."""
        if self.time is None:
            return None
        if self.points_per_series is None:
            raise ValueError("time spreads points_per_series points over a span: give points_per_series")
        try:
            return spread_interval(self.time, self.points_per_series, "time")
        except UserError as exc:
            raise ValueError(str(exc)) from None

    def churn_rule(self):
        """churn as a Churn (stream/churn.py), or None."""
        from tsbench.stream.churn import parse_churn

        return parse_churn(self.churn) if self.churn is not None else None

    def ratio(self) -> tuple[int, int] | None:
        """query_ratio as (write batches, queries), or None."""
        from tsbench.stream.mixed import parse_ratio

        return parse_ratio(self.query_ratio) if self.query_ratio is not None else None


class StreamCommand(StreamSettings, Writes):
    """tsbench stream's options: the stream: section's and the command line's own."""

    report_url: str | None = Field(None, description="Push the per-second figures here as line protocol while the "
                                                     "run goes, e.g. http://127.0.0.1:8086/write?db=stats (InfluxDB "
                                                     "1.x).")
    metrics_port: int | None = Field(None, ge=0, le=65535, description="Serve the per-second figures for Prometheus "
                                                                       "at http://127.0.0.1:PORT/metrics (0: a free "
                                                                       "port).")


def spread_interval(time_span: str, points_per_series: int, what: str) -> str:
    """inch's -time: the interval that spreads points_per_series points over the span (in ns)."""
    from tsbench.core.timeutil import parse_duration

    step = parse_duration(time_span, what) // points_per_series
    if step < 1:
        raise UserError(f"{what}: {time_span} is shorter than one nanosecond per point ({points_per_series} points "
                        f"per series)")
    return f"{step}ns"
