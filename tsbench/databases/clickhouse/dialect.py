"""ClickHouse's queries (phase 3 render; target.py runs them in phase 4): the
shared SQL dialect spelled for ClickHouse (backquoted names, time as
DateTime64(9) read with toUnixTimestamp64Nano, buckets by toStartOfInterval);
the answer is ClickHouse's ArrowStream bytes, decoded here to canonical rows
after the timed pass.

Forms (benchmarks/dialects.py, `nox -s bench_dialects`; docs/databases/clickhouse.md):
buckets by toStartOfInterval in nanoseconds (tsbench's), intDiv of the epoch
nanoseconds, or toStartOfMinute/toStartOfHour (TSBS's); lastpoint as DISTINCT ON
(tsbench's), argMax of the row's tuple by time per group, or LIMIT 1 BY.
Recorded (chDB, 20 hosts x 12 h, 10 rounds, busy machine): tsbench's form within
1.06x of the fastest on every type; argMax 1.6x slower on lastpoint."""

from __future__ import annotations

import re

import pyarrow as pa

from tsbench.queries.base import SqlSpelling
from tsbench.queries.catalog import CATALOG, TSBS_DEVOPS
from tsbench.queries.shapes import sql
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


TRUNC = {60 * 10**9: "toStartOfMinute", 3600 * 10**9: "toStartOfHour", 86400 * 10**9: "toStartOfDay"}


class IntDiv(ClickHouseSpelling):
    """Buckets by integer math on the epoch nanoseconds."""

    def bucket_ns(self, width_ns: int) -> str:
        w = int(width_ns)
        return f"intDiv(toUnixTimestamp64Nano(m.time), {w}) * {w}"


class StartOf(ClickHouseSpelling):
    """Buckets by toStartOfMinute/Hour/Day (TSBS's), where the width is one of those."""

    def bucket_ns(self, width_ns: int) -> str:
        fn = TRUNC.get(int(width_ns))
        return f"toInt64(toUnixTimestamp({fn}(m.time))) * 1000000000" if fn else super().bucket_ns(width_ns)


def _spelled(spelling: type[ClickHouseSpelling]):
    return lambda d, p: sql(p, spelling(d.spelling.database))


def _last_arg_max(d: Sql, p: dict) -> str:
    """The newest row per group as argMax of the row's tuple by time (one row's values)."""
    s, m = d.spelling, p["measurement"]
    g = [s.tag(m, x) for x in p["group_by"]]
    cells = ["m.time"] + [s.field(f) for f in p["fields"]]
    inner = (f"SELECT {', '.join(g)}, argMax(tuple({', '.join(cells)}), m.time) AS r FROM {s.table(m)} "
             f"GROUP BY {', '.join(g)}")
    sel = ["toUnixTimestamp64Nano(r.1) AS t", *(bq(x) for x in p["group_by"]),
           *(f"r.{i + 1}" for i in range(1, len(cells)))]
    return f"SELECT {', '.join(sel)} FROM ({inner})"


def _last_limit_by(d: Sql, p: dict) -> str:
    s, m = d.spelling, p["measurement"]
    g = [s.tag(m, x) for x in p["group_by"]]
    sel = [f"{s.time_ns()} AS t", *g, *(s.field(f) for f in p["fields"])]
    return (f"SELECT {', '.join(sel)} FROM {s.table(m)} ORDER BY {', '.join(g)}, m.time DESC "
            f"LIMIT 1 BY {', '.join(g)}")


ClickHouseSql.forms = {
    name: ({"intDiv": _spelled(IntDiv), "toStartOf": _spelled(StartOf)} if qt.shape == "aggregate"
           else {"argMax": _last_arg_max, "limit-1-by": _last_limit_by})
    for name, qt in ((n, CATALOG[n]) for n in TSBS_DEVOPS) if qt.shape in ("aggregate", "last")}


def decode(raw: bytes) -> list[tuple]:
    """ArrowStream bytes as rows of Python values (time columns are epoch-ns integers)."""
    if not raw:
        return []
    t = pa.ipc.open_stream(raw).read_all()
    return list(zip(*(c.to_pylist() for c in t.columns)))
