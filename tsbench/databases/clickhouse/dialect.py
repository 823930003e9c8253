"""ClickHouse's queries (phase 3 render; target.py runs them in phase 4): the
shared SQL dialect spelled for ClickHouse (backquoted names, time as
DateTime64(9) read with toUnixTimestamp64Nano, buckets by toStartOfInterval);
the answer is ClickHouse's ArrowStream bytes, decoded here to canonical rows
after the timed pass."""

from __future__ import annotations

import re

import pyarrow as pa

from tsbench.queries.base import SqlSpelling
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
