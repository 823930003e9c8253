"""DuckDB as a load target (phase 2): one table per measurement (time, tags,
fields). Each batch is split by measurement in the C core, parsed into Arrow
by pyarrow's CSV reader and appended with one INSERT ... SELECT per table;
never row by row. The database is a file: `--server local` uses a fresh file
in tsbench's instance dir, a URL `duckdb:PATH` (or a plain path) names one.
Queries (phases 3-5): the reference SQL (dialect.py), run here in a worker
thread on a cursor of the loading connection (one per worker, made before timing)."""

from __future__ import annotations

import asyncio
import pathlib
import threading

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import Batch, Table, Tables, TableStats
from tsbench.databases.duckdb.dialect import DIALECTS
from tsbench.databases.shared.arrow_csv import CsvToArrow
from tsbench.databases.shared.server import allocated_bytes
from tsbench.databases.shared.sqlstats import EXACT, fields_sql, series_sql, table_stats
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer, RowSet, q

SQL_TYPES = {"float": "DOUBLE", "int": "BIGINT"}


class DuckDBOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threads: int | None = Field(None, description="DuckDB's own thread count (unset: its own choice)")


class DuckDBTarget(Target):
    name = "duckdb"
    needs_url = True
    url_example = "duckdb:PATH"
    format = "csv"
    count_unit = "rows"
    server_kind = None
    engine_library = "duckdb"
    multiprocess = False
    options_model = DuckDBOptions
    own_disk_figure = "duckdb_database_size"
    dialects = DIALECTS
    value_checks = EXACT

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        path = (url or "").removeprefix("duckdb:")
        if not path:
            raise UserError("target duckdb: needs a database file: --server duckdb:PATH (or --server local)")
        self.path = pathlib.Path(path)
        self.con: duckdb.DuckDBPyConnection | None = None
        self._local = threading.local()
        self._qcursors: list = []          # query cursors, one per concurrent query
        self._qfree: list = []

    @classmethod
    def local_url(cls, instance_dir) -> str:
        d = pathlib.Path(instance_dir)
        d.mkdir(parents=True, exist_ok=True)
        for f in d.glob("tsbench.duckdb*"):
            f.unlink()
        return f"duckdb:{d / 'tsbench.duckdb'}"

    async def open(self) -> None:
        if not self.path.parent.is_dir():
            raise UserError(f"target duckdb: directory {self.path.parent} does not exist")
        try:
            self.con = duckdb.connect(str(self.path))
        except duckdb.Error as exc:
            raise UserError(f"target duckdb: cannot open {self.path}: {exc}") from None
        self.con.execute("SET TimeZone = 'UTC'")
        if self.options.threads:
            self.con.execute(f"SET threads = {int(self.options.threads)}")

    async def close(self) -> None:
        for cur in self._qcursors:
            cur.close()
        self._qcursors, self._qfree = [], []
        if self.con is not None:
            self.con.close()
            self.con = None

    def _existing(self) -> set[str]:
        return {r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}

    async def create(self, tables: Tables, if_exists: str) -> None:
        existing = self._existing()
        self._arrow = CsvToArrow(tables, "us", "duckdb")
        for t in tables:
            if t.name in existing:
                n = self.con.execute(f"SELECT count(*) FROM {q(t.name)}").fetchone()[0]
                if if_exists == "abort" and n:
                    raise exists_error("duckdb", f"table {t.name!r} in {self.path} ({n:,} rows)")
                if if_exists == "drop":
                    self.con.execute(f"DROP TABLE {q(t.name)}")
            cols = ["time TIMESTAMPTZ"] + [f"{q(k)} VARCHAR" for k in t.tags] + \
                   [f"{q(f.name)} {SQL_TYPES[f.type]}" for f in t.fields]
            self.con.execute(f"CREATE TABLE IF NOT EXISTS {q(t.name)} ({', '.join(cols)})")

    def _append(self, data: memoryview) -> None:
        cur = getattr(self._local, "cur", None)
        if cur is None:
            cur = self._local.cur = self.con.cursor()
        cur.execute("BEGIN")                 # one commit (one WAL flush) per batch
        try:
            for t, arrow in self._arrow.parts(data):
                try:
                    cur.register("batch_in", arrow)
                    cur.execute(f"INSERT INTO {q(t.name)} SELECT * FROM batch_in")
                    cur.unregister("batch_in")
                except duckdb.Error as exc:
                    raise Fatal(f"duckdb: table {t.name}: {exc}") from None
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    async def write(self, batch: Batch) -> None:
        await asyncio.to_thread(self._append, batch.data)

    async def count(self, tables: Tables) -> int:
        return sum(self.con.execute(f"SELECT count(*) FROM {q(t.name)}").fetchone()[0] for t in tables)

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        row = self.con.execute(fields_sql(q(table.name), table, q)).fetchone()     # an integer sum: HUGEINT
        series = self.con.execute(series_sql(q(table.name), [q(k) for k in table.tags])).fetchone()[0]
        return table_stats(table, series, row)

    async def compact(self) -> None:
        self.con.execute("CHECKPOINT")

    async def disk_bytes(self) -> dict[str, int]:
        size = sum(r[0] or 0 for r in self.con.execute(
            "SELECT total_blocks * block_size FROM pragma_database_size()").fetchall())
        files = [f for f in (self.path, self.path.with_name(self.path.name + ".wal")) if f.exists()]
        return {"duckdb_database_size": int(size), "duckdb_file_bytes": sum(allocated_bytes(f) for f in files)}

    async def version(self) -> str:
        return duckdb.__version__

    # ---- phases 3-5: queries ------------------------------------------------------------------
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
