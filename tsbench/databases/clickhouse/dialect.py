"""ClickHouse's queries (phases 3-5): the shared SQL dialect spelled for
ClickHouse (backquoted names, time as DateTime64(9) read with
toUnixTimestamp64Nano, buckets by toStartOfInterval), run in a worker thread;
the answer is ClickHouse's ArrowStream bytes, decoded to canonical rows after
the timed pass."""

from __future__ import annotations

import asyncio
import re

import pyarrow as pa

from tsbench.core.errors import Fatal
from tsbench.databases.shared import printable
from tsbench.queries.base import Answer, SqlSpelling
from tsbench.queries.sql import Sql


def bq(name: str) -> str:
    """A ClickHouse identifier in backquotes."""
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


class ClickHouseSpelling(SqlSpelling):
    """The reference SQL as ClickHouse runs it on one table per measurement in a database."""

    name = "clickhouse"

    def __init__(self, database: str):
        self.database = database

    def quote(self, name: str) -> str:
        return bq(name)

    def table(self, measurement: str) -> str:
        return f"{bq(self.database)}.{bq(measurement)} AS m"

    def tag(self, measurement: str, tag: str) -> str:
        return f"m.{bq(tag)}"

    def field(self, name: str) -> str:
        return f"m.{bq(name)}"

    def time_ns(self) -> str:
        return "toUnixTimestamp64Nano(m.time)"

    def bucket_ns(self, width_ns: int) -> str:
        """Epoch-aligned buckets of any width, exact to the nanosecond."""
        return f"toUnixTimestamp64Nano(toStartOfInterval(m.time, INTERVAL {int(width_ns)} NANOSECOND))"

    def ts(self, ns: int) -> str:
        return f"fromUnixTimestamp64Nano({int(ns)}, 'UTC')"


class ClickHouseSql(Sql):
    """The shared SQL dialect, with one ClickHouse difference made good: its lag()/lead()
    give the column type's default (0, false) beyond the partition where SQL gives NULL,
    so the shifted column is made Nullable first (the iot types test for that NULL)."""

    SHIFT = re.compile(r"\b(lag|lead)\((\w+)\) OVER\b")

    def render_custom(self, shape: str, p: dict) -> str:
        return self.SHIFT.sub(r"\1(toNullable(\2)) OVER", super().render_custom(shape, p))


def decode(raw: bytes) -> list[tuple]:
    """ArrowStream bytes as rows of Python values (time columns are epoch-ns integers)."""
    if not raw:
        return []
    t = pa.ipc.open_stream(raw).read_all()
    return list(zip(*(c.to_pylist() for c in t.columns)))


class ClickHouseQueries:
    """The query half of ClickHouseTarget: its dialect and query()."""

    dialects = {"sql": ClickHouseSql}

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
