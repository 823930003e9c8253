"""DuckDB's queries (phase 3 render; target.py runs them in phase 4): the reference
engine's own SQL, the shared SQL dialect with the reference spelling, unchanged;
the rows come back as the driver returns them."""

from __future__ import annotations

from tsbench.queries.sql import Sql

DIALECTS = {"sql": Sql}
