"""tsbench run's options (all phases), declared once (core/options.py); the phases' own
come from the experiment file, whose sections are the phases' models."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tsbench.core.options import Cli, PhaseOptions


class RunCommand(PhaseOptions):
    """How tsbench run runs an experiment file, and where its results go."""

    dry_run: bool = Field(False, description="Print the cells and stop.")
    results: str = Field("results", description="Where results/<experiment>/<run-id>/ goes.")
    no_report: bool = Field(False, description="Skip the HTML report (write it later with `tsbench report`).")
    redact: bool = Field(False, description="Replace the tag values of imported datasets (your own data) by stable "
                                            "hashes in the results, messages and report.")
    overrides: Annotated[list[str], Cli(name="--set", multiple=True, metavar="KEY.PATH=VALUE")] = Field(
        [], description="Change one setting of the file (VALUE in YAML; repeatable; kept in the manifest), e.g. "
                        "--set datasets.devops100.end=2016-01-01T03:00:00Z --set matrix.target=[influx,duckdb].")
