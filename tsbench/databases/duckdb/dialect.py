"""DuckDB's queries (phases 3-5): the reference engine's own SQL (the shared
SQL dialect with the reference spelling), run in a worker thread on a cursor of
the loading connection (one per worker, made before timing); the rows come back
as the driver returns them."""

from __future__ import annotations

import asyncio

import duckdb

from tsbench.core.errors import Fatal
from tsbench.queries.base import Answer, RowSet
from tsbench.queries.sql import Sql


class DuckDBQueries:
    """The query half of DuckDBTarget: its dialect and query()."""

    dialects = {"sql": Sql}

    async def prepare(self, workers: int) -> None:
        """One cursor per worker, made before timing (a query takes a free one)."""
        while len(self._qcursors) < workers:
            cur = self.con.cursor()
            self._qcursors.append(cur)
            self._qfree.append(cur)

    async def query(self, native: str) -> Answer:
        """Run a query on a free cursor in a worker thread, to the rows fetched;
        in-process, so no wire: bytes and the first byte are not measured (None)."""
        cur = self._qfree.pop() if self._qfree else None
        if cur is None:
            await self.prepare(len(self._qcursors) + 1)
            cur = self._qfree.pop()
        running = asyncio.ensure_future(asyncio.to_thread(lambda: cur.execute(native).fetchall()))
        try:
            rows = await asyncio.shield(running)
            names = [d[0] for d in cur.description or ()]
        except asyncio.CancelledError:           # Ctrl-C, a timeout: the query stops before its cursor is free
            cur.interrupt()
            await asyncio.wait([running])
            if not running.cancelled():
                running.exception()              # the interrupted query's error is no news
            raise
        except duckdb.Error as exc:
            raise Fatal(f"duckdb: {exc}") from None
        finally:
            if running.done():
                self._qfree.append(cur)
        return Answer(RowSet(names, rows), None, None)
