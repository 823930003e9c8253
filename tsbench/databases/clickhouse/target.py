"""ClickHouse as a load target (phase 2): one MergeTree table per measurement
in a database of its own, ordered by (tags, time), tags LowCardinality, time
DateTime64(9, 'UTC'), the field codec an option. Each batch is split by
measurement in the C core, parsed into Arrow by pyarrow's CSV reader and
inserted with one INSERT per table (ArrowStream); never row by row.

Where it runs is the URL's scheme: `chdb:DIR` is the engine in-process (chdb,
a data dir; `--server local` makes a fresh one in tsbench's instance dir),
`http[s]://[user[:password]@]host[:port]` a ClickHouse server someone runs
(clickhouse-connect). Queries (phases 3-5): rendered by dialect.py, run here
in a worker thread.

Protocols: `chdb:DIR` (what tsbench runs itself) has no wire protocol to choose: the
engine is a library in tsbench's process and a query's answer is handed over in
memory (ArrowStream bytes). A server by URL is reached over HTTP by clickhouse-connect,
ClickHouse's own Python client (Arrow answers), not the shared HTTP pool; ClickHouse's
native TCP protocol (port 9000, clickhouse-driver) is not offered and was not measured:
tsbench starts no ClickHouse server to measure it on."""

from __future__ import annotations

import asyncio
import pathlib
import shutil
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import Batch, Table, Tables, TableStats
from tsbench.databases.clickhouse.dialect import ClickHouseSpelling, ClickHouseSql, bq, decode
from tsbench.databases.clickhouse.engines import Chdb, HttpServer
from tsbench.databases.shared import printable
from tsbench.databases.shared.arrow_csv import CsvToArrow
from tsbench.databases.shared.server import allocated_bytes
from tsbench.databases.shared.sqlstats import EXACT, fields_sql, series_sql, table_stats
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer, lit
from tsbench.queries.sql import Sql

SQL_TYPES = {"float": "Float64", "int": "Int64"}
# codec option -> CODEC of (time, int fields, float fields); lz4 is ClickHouse's default (no clause)
CODECS = {
    "lz4": ("", "", ""),
    "zstd": ("ZSTD(1)", "ZSTD(1)", "ZSTD(1)"),
    "gorilla": ("DoubleDelta, ZSTD(1)", "Delta, ZSTD(1)", "Gorilla, ZSTD(1)"),
}
# nullable tags in the sorting key; a retried batch's tables already written are dropped as duplicates
TABLE_SETTINGS = "allow_nullable_key = 1, non_replicated_deduplication_window = 100"
# query settings of every connection: SQL's meaning where ClickHouse's default differs (CAST keeps NULL)
SESSION = {"cast_keep_nullable": 1}


class ClickHouseOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    database: str = Field("tsbench", description="the database of the tables (one of its own)")
    codec: Literal["lz4", "zstd", "gorilla"] = Field(
        "lz4", description="field and time compression (CODECS): lz4 (ClickHouse's default), zstd (ZSTD(1) on every "
                           "time and field column) or gorilla (time DoubleDelta, int fields Delta, float fields "
                           "Gorilla, each then ZSTD(1))")
    threads: int | None = Field(None, ge=1, description="max_threads of each query (unset: ClickHouse's)")


class ClickHouseTarget(Target):
    name = "clickhouse"
    needs_url = True
    url_example = "chdb:DIR (in-process) or --server http://HOST:8123"
    format = "csv"
    count_unit = "rows"
    value_checks = EXACT
    server_kind = None                  # chdb in-process by default; a server only by URL
    engine_library = "chdb"
    multiprocess = False                # chdb: one engine per process, one process per data dir
    options_model = ClickHouseOptions
    own_disk_figure = "clickhouse_bytes_on_disk"
    dialects = {"sql": ClickHouseSql}

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        settings = {**SESSION, **({"max_threads": self.options.threads} if self.options.threads else {})}
        u = self.url or ""
        if u.startswith("chdb:") and u.removeprefix("chdb:"):
            self.engine, self.in_process = Chdb(pathlib.Path(u.removeprefix("chdb:")).absolute(), settings), True
        elif u.startswith(("http://", "https://")):
            self.engine, self.in_process = HttpServer(u, settings), False
        else:
            raise UserError("target clickhouse: --server must be local, chdb:DIR (in-process) or "
                            "http[s]://host:port (a ClickHouse server)")
        self._tables: list = []

    @classmethod
    def local_url(cls, instance_dir) -> str:
        d = pathlib.Path(instance_dir) / "chdb"
        shutil.rmtree(d, ignore_errors=True)
        d.parent.mkdir(parents=True, exist_ok=True)
        return f"chdb:{d}"

    def _name(self, table: str) -> str:
        return f"{bq(self.options.database)}.{bq(table)}"

    async def open(self) -> None:
        await asyncio.to_thread(self.engine.open)

    async def close(self) -> None:
        await asyncio.to_thread(self.engine.close)

    def _rows(self, sql: str) -> list[tuple]:
        return decode(self.engine.arrow(sql))

    def _ddl(self, t) -> str:
        tc, ic, fc = CODECS[self.options.codec]

        def col(name: str, typ: str, codec: str) -> str:
            return f"{bq(name)} {typ}" + (f" CODEC({codec})" if codec else "")
        cols = [col("time", "DateTime64(9, 'UTC')", tc)] + \
               [f"{bq(k)} LowCardinality(Nullable(String))" for k in t.tags] + \
               [col(f.name, f"Nullable({SQL_TYPES[f.type]})", ic if f.type == "int" else fc) for f in t.fields]
        order = ", ".join([*(bq(k) for k in t.tags), "time"])
        return (f"CREATE TABLE IF NOT EXISTS {self._name(t.name)} ({', '.join(cols)}) "
                f"ENGINE = MergeTree ORDER BY ({order}) SETTINGS {TABLE_SETTINGS}")

    def _create(self, tables: Tables, if_exists: str) -> None:
        db = self.options.database
        self.engine.command(f"CREATE DATABASE IF NOT EXISTS {bq(db)}")
        existing = {r[0] for r in self._rows(f"SELECT name FROM system.tables WHERE database = {lit(db)}")}
        for t in tables:
            if t.name in existing:
                n = self._rows(f"SELECT count() FROM {self._name(t.name)}")[0][0]
                if if_exists == "abort" and n:
                    raise exists_error("clickhouse", f"table {db}.{t.name} ({n:,} rows)")
                if if_exists == "drop":
                    self.engine.command(f"DROP TABLE {self._name(t.name)} SYNC")
            self.engine.command(self._ddl(t))

    async def create(self, tables: Tables, if_exists: str) -> None:
        await asyncio.to_thread(self._create, tables, if_exists)
        await self.attach(tables)

    async def attach(self, tables: Tables) -> None:
        """Bind the layout: the CSV split and each table's Arrow conversion."""
        self._tables = list(tables)
        self._arrow = CsvToArrow(tables, "ns", "clickhouse")

    def _append(self, data: memoryview) -> None:
        for t, arrow in self._arrow.parts(data):
            self.engine.insert(self._name(t.name), arrow)

    async def write(self, batch: Batch) -> None:
        await asyncio.to_thread(self._append, batch.data)

    async def count(self, tables: Tables) -> int:
        return sum(await asyncio.gather(*(asyncio.to_thread(
            lambda n=t.name: self._rows(f"SELECT count() FROM {self._name(n)}")[0][0]) for t in tables)))

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        name = self._name(table.name)
        # an Int64 sum wraps around: summed as Int128, read back as text
        row = (await asyncio.to_thread(self._rows, fields_sql(name, table, bq, "toString(sum(toInt128({})))")))[0]
        series = (await asyncio.to_thread(self._rows, series_sql(name, [bq(k) for k in table.tags])))[0][0]
        return table_stats(table, series, row)

    async def compact(self) -> None:
        """Untimed: merge each table's parts into one (OPTIMIZE ... FINAL), before the disk figures."""
        for t in self._tables:
            await asyncio.to_thread(self.engine.command, f"OPTIMIZE TABLE {self._name(t.name)} FINAL")

    async def disk_bytes(self) -> dict[str, int]:
        names = ", ".join(lit(t.name) for t in self._tables) or "''"
        on_disk, packed, unpacked = (await asyncio.to_thread(self._rows, (
            "SELECT sum(bytes_on_disk), sum(data_compressed_bytes), sum(data_uncompressed_bytes) FROM system.parts "
            f"WHERE active AND database = {lit(self.options.database)} AND table IN ({names})")))[0]
        out = {"clickhouse_bytes_on_disk": int(on_disk), "clickhouse_compressed_bytes": int(packed),
               "clickhouse_uncompressed_bytes": int(unpacked)}
        if self.in_process:
            out["chdb_dir_bytes"] = allocated_bytes(self.engine.path)
        return out

    async def version(self) -> str:
        return (await asyncio.to_thread(self._rows, "SELECT version()"))[0][0]

    # ---- phases 3-5: queries ------------------------------------------------------------------
    def dialect(self) -> Sql:
        return ClickHouseSql(ClickHouseSpelling(self.options.database))

    async def prepare(self, workers: int) -> None:
        """The connections `workers` concurrent queries use, opened before timing."""
        await asyncio.to_thread(self.engine.reserve, workers)

    async def query(self, native: str) -> Answer:
        """Run a query in a worker thread, to the answer's last byte. In-process (chdb) no
        wire: bytes not measured; over HTTP the answer's bytes; the time to the first byte
        is not seen (the driver hands the body over whole)."""
        raw = await asyncio.to_thread(self.engine.arrow, native)       # Fatal/Retryable in the server's words
        return Answer(raw, None if self.in_process else len(raw), None)

    def canonical(self, native: str, answer: Answer) -> list[tuple]:
        try:
            return decode(answer.raw)
        except pa.ArrowException as exc:
            raise Fatal(f"clickhouse: unreadable answer: {exc}") from None

    def answer_lines(self, native: str, answer: Answer, max_rows: int) -> list[str]:
        """The ArrowStream answer as a table: its column names and rows."""
        if not answer.raw:
            return ["(empty body: no rows)"]
        try:
            return printable.arrow_lines(pa.ipc.open_stream(answer.raw).read_all(), max_rows)
        except pa.ArrowException as exc:
            return [f"(unreadable ArrowStream answer, {len(answer.raw)} bytes: {exc})"]
