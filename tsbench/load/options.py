"""Phase 2's options, declared once (core/options.py): `LoadSettings` is an experiment
file's load: section, `LoadCommand` adds what only `tsbench load` takes; `Writes` holds
what load and stream share on the command line; `DataFileCheck` is verify's, and load's too."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from tsbench.core.clusteraddress import ClusterAddress
from tsbench.core import bounds
from tsbench.core.options import Cli, PhaseOptions, Stalls, repeat_field
from tsbench.databases.shared.backoff import BackoffRule


class Batches(Stalls):
    """What every phase that writes batches has."""

    batch_size: Annotated[int, Cli("-b")] = Field(10_000, ge=1, le=bounds.MAX_BATCH_ROWS,
                                                  description="Rows (points) per batch.")


class Writes(PhaseOptions):
    """The command line's options of a phase that writes (load, stream)."""

    if_exists: Literal["abort", "reuse", "drop"] = Field("abort", description="When the database already holds data.")
    give_up_after: float = Field(BackoffRule.give_up_after, gt=0, le=bounds.MAX_SECONDS,
                                 description="Seconds of server push-back on one batch before it fails (load) or "
                                             "counts as refused (stream).")
    verify: Annotated[bool, Cli(flag="--no-verify")] = Field(True, description="Skip the count check at the end.")


class LoadSettings(Batches):
    """The load phase: tsbench load's options; an experiment's load: section."""

    workers: Annotated[int, Cli("-w")] = Field(4, ge=1, le=bounds.MAX_WORKERS, description="Batches in flight at once.")
    processes: Annotated[int, Cli("-j")] = Field(1, ge=1, le=bounds.MAX_PROCESSES,
                                                 description="Load processes, each with --workers workers over a "
                                                             "share of the file.")
    cluster: Annotated[ClusterAddress, Cli(metavar="ADDRESS")] = Field(
        None, description="Spread the load over a Dask cluster, one client slot per worker, each over its share of "
                          "DATAFILE (a path every worker sees): local:N (N worker processes here, N <= 256) or "
                          "tcp://HOST:PORT (a running Dask scheduler).")
    repeat: int = repeat_field("a load into an empty database (a fresh local server, or by URL the tables dropped "
                               "and made again)")


class LoadCommand(LoadSettings, Writes):
    """tsbench load's options: the load: section's and the command line's own."""

    compact: Annotated[bool, Cli(flag="--no-compact")] = Field(
        True, description="Skip compaction before measuring disk bytes.")


class DataFileCheck(PhaseOptions):
    """tsbench verify's options (and load's check of its data file)."""

    check_data: bool = Field(False, description="Check the data file's sha256 against its manifest first.")
