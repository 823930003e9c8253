"""DuckDB's queries (phases 3-5): the reference engine's own SQL (the shared
SQL dialect with the reference spelling), run on a cursor of the loading
connection in a worker thread; the rows come back as the driver returns them."""

from __future__ import annotations

import asyncio
import time

import duckdb

from ...errors import Fatal
from ...queries.base import Answer
from ...queries.sql import Sql


class DuckDBQueries:
    """The query half of DuckDBTarget: its dialect and query()."""

    dialects = {"sql": Sql}

    def _run(self, text: str) -> list[tuple]:
        cur = getattr(self._local, "qcur", None)
        if cur is None:
            cur = self._local.qcur = self.con.cursor()
        return cur.execute(text).fetchall()

    async def query(self, native: str) -> Answer:
        t0 = time.perf_counter()
        try:
            rows = await asyncio.to_thread(self._run, native)
        except duckdb.Error as exc:
            raise Fatal(f"duckdb: {exc}") from None
        return Answer(rows, None, None, time.perf_counter() - t0, raw=native)     # in-process: no wire
