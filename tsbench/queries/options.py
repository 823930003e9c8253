"""Phase 3's options, declared once (core/options.py): `QueriesSettings` is an experiment
file's queries: section; `tsbench queries generate` takes its count and seed (its types
and family are its own: a comma-separated list, one family)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from tsbench.core import bounds
from tsbench.core.options import Cli, PhaseOptions
from tsbench.queries import FAMILIES

Family = Literal[FAMILIES]      # the catalog's families (queries/catalog.py)


class QueriesSettings(PhaseOptions):
    """The queries phase: what to draw, how many of each type, from which seed."""

    types: Annotated[list[str], Cli(command=False)] = Field([], description="Query types to draw (see: queries list).")
    families: Annotated[list[Family], Cli(command=False)] = Field(
        [], description="Without types: every type of these families that fits the dataset.")
    count: Annotated[int, Cli("-n")] = Field(10, ge=1, le=bounds.MAX_QUERIES_PER_TYPE, description="Queries per type.")
    seed: int = Field(1, ge=0, le=bounds.MAX_SEED, description="Same seed, same queries.")
