"""PostgreSQL's queries (phases 3-5): the shared SQL dialect spelled for
tsbench's layout (entity tags read through the tag-set table's join, time math
in exact numerics; TimescaleDB's time_bucket with -O timescaledb=true), run on
a pool of autocommit connections, one per query in flight."""

from __future__ import annotations

import psycopg

from tsbench.core.errors import Fatal
from tsbench.databases.postgres import timescale
from tsbench.databases.shared.connecting import timed_connect
from tsbench.queries.base import Answer, RowSet, SqlSpelling, q
from tsbench.queries.sql import Sql

TAGS = "tags"          # the tag-set table


def one_line(exc: BaseException) -> str:
    """A driver error as one line of its own words."""
    return "; ".join(x.strip() for x in str(exc).strip().splitlines() if x.strip()) or type(exc).__name__


class PostgresSpelling(SqlSpelling):
    """The reference SQL as PostgreSQL runs it on tsbench's layout: with a tag-set
    table, entity tags are read through a join; time math in exact numerics."""

    name = "postgres"

    def __init__(self, schema: str, entity: tuple[str, ...], time_bucket: bool = False):
        self.schema, self.entity, self.time_bucket = schema, entity, time_bucket

    def table(self, measurement: str) -> str:
        base = f"{q(self.schema)}.{q(measurement)} m"
        return base + (f" JOIN {q(self.schema)}.{TAGS} t ON m.tags_id = t.id" if self.entity else "")

    def tag(self, measurement: str, tag: str) -> str:
        return f"t.{q(tag)}" if tag in self.entity else f"m.{q(tag)}"

    def time_ns(self) -> str:
        return "(extract(epoch from m.time) * 1000000000)::bigint"

    def bucket_ns(self, width_ns: int) -> str:
        if self.time_bucket:             # TimescaleDB's own bucketing (timescale.py)
            return timescale.bucket_ns("m.time", width_ns)
        w = int(width_ns)
        return f"({self.time_ns()} / {w}) * {w}"


class PostgresQueries:
    """The query half of PostgresTarget: its dialect (which needs the layout that
    create() or attach() bound) and query()."""

    dialects = {"sql": Sql}

    def dialect(self) -> Sql:
        if self._plans is None:
            raise Fatal("postgres: render() before create() or attach()")
        entity = self._plans[0].entity if self._plans else ()
        return Sql(PostgresSpelling(self.schema, entity, self.options.timescaledb))

    async def prepare(self, workers: int) -> None:
        """One autocommit connection per worker, opened before timing."""
        while len(self._qall_conns) < workers:
            self._qfree.append(await self._query_conn())

    async def _query_conn(self) -> psycopg.AsyncConnection:
        try:
            conn = await self._connect(self.options.database)
        except psycopg.Error as exc:
            raise Fatal(f"postgres: {one_line(exc)}") from None
        self._qall_conns.append(conn)
        return conn

    async def query(self, native: str) -> Answer:
        """Run a query on a free connection (one opened here is timed apart by the shared
        transport, connect_s), to the last row received. The time to the first byte is
        not measured (None): libpq hands over a result whole, and single-row mode would
        add per-row client work to the latency."""
        connect_s = None
        if self._qfree:
            conn = self._qfree.pop()
        else:
            conn, connect_s = await timed_connect(self._query_conn())
        try:
            cur = await conn.execute(native)
            rows = await cur.fetchall()
            names = [c.name for c in cur.description or ()]
        except psycopg.Error as exc:
            raise Fatal(f"postgres: {one_line(exc)}") from None
        finally:
            if not conn.closed:
                self._qfree.append(conn)
        # libpq does not say how many bytes a result took on the wire: bytes not measured (None)
        return Answer(RowSet(names, rows), None, None, connect_s=connect_s)
