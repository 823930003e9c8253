"""PostgreSQL as a load target (phase 2): one wide table per measurement
(time timestamptz, tags, fields as double precision / bigint / text), loaded
with COPY. Queries (phases 3-5): rendered by dialect.py, run here on a pool of
autocommit connections, one per query in flight.

Each batch is split by measurement in the C core (native.split_csv); each
part goes to the server as one `COPY ... FROM STDIN (FORMAT csv)` fed with a
view of the split buffer: no Python per row. Every worker has its own
connection (a free list, opened lazily); a batch is one transaction, so a
retried batch never doubles rows.

Options: PostgresOptions below (each field says what it means; TimescaleDB in timescale.py).

Tag sets (tags "table"): a batch is COPYed into per-connection TEMP staging
tables; then its new tag sets go into `tags` and the rows into the measurement
tables by INSERT ... SELECT joining `tags`. A tag set's identity is its `key`,
ROW(tags...)::text, which keeps NULL (nothing) apart from '' ("") and makes
NULL tags equal (iot has null tags), like a UNIQUE NULLS NOT DISTINCT on the
tag columns, but a plain text equality, so the join is a hash join rather than
the nested loop that `IS NOT DISTINCT FROM` forces. Concurrency: new keys are
inserted in one statement per batch, sorted by key, skipping keys already
committed, with ON CONFLICT (key) DO NOTHING for the rest: two writers adding
the same new tag set wait on each other in key order only, so they cannot
deadlock, and the loser sees the winner's row once it commits (read committed,
a fresh snapshot per statement). A row that finds no tag set fails the batch.

Several load processes: create() runs in the parent only; the other
processes bind to the same tables with attach()."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.core.model import Batch, Table, Tables, TableStats
from tsbench.data import native
from tsbench.databases.postgres import timescale
from tsbench.databases.postgres.dialect import TAGS, PostgresSpelling, PostgresSql
from tsbench.databases.shared.sqlstats import EXACT, fields_sql, series_sql, table_stats
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer, RowSet, lit, q
from tsbench.queries.sql import Sql

SQL_TYPES = {"float": "double precision", "int": "bigint", "string": "text"}
# SQLSTATEs of push-back: connection trouble (08), serialization failure and
# deadlock (40), too many connections (53300), lock not available (55P03),
# shutdown and startup (57P01-57P03).
RETRY_STATES = ("08", "40", "53300", "55P03", "57P01", "57P02", "57P03")


def one_line(exc: BaseException) -> str:
    """A driver error as one line of its own words."""
    return "; ".join(x.strip() for x in str(exc).strip().splitlines() if x.strip()) or type(exc).__name__


class PostgresOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    database: str = Field("tsbench", description="the database to load; created if missing by connecting to "
                                                 "the URL's database (the server's maintenance db)")
    schema_name: str = Field("public", description="schema of the tables")
    tags: Literal["table", "inline"] = Field(
        "table", description="table (TSBS-style): a `tags` table holds one row and an id per distinct set of the "
                             "tags every measurement shares (the entity's: hostname, region, ... / name, fleet, "
                             "...); measurement tables hold time, tags_id, their own extra tags, fields. inline: "
                             "every tag is a text column of each measurement table. (Measurements that share no "
                             "leading tags are loaded inline.)")
    index: Literal["btree", "brin", "none"] = Field(
        "btree", description="the index on time; with tags table there is also a btree on (tags_id, time) "
                             "unless index is none")
    password: SecretStr | None = Field(
        None, description="the password to connect with, over the URL's; unset: the URL's, else libpq's "
                          "(PGPASSWORD, ~/.pgpass). Better: `password_env: VAR` (tsbench/core/secrets.py)")
    timescaledb: bool = Field(False, description="true: TimescaleDB (timescale.py; a server with the extension, "
                                                 "given by URL): every measurement table a hypertable on time, "
                                                 "chunks of chunk_interval")
    chunk_interval: str = Field("1 day", description="the hypertables' chunk interval (with timescaledb)")
    compress: bool = Field(False, description="true: compress the chunks (segmented by tag set) before the disk "
                                              "figures (with timescaledb)")
    compress_after: str | None = Field(None, description='e.g. "7 days": also a compression policy (needs compress)')

    @model_validator(mode="after")
    def _timescale_only(self):
        given = [n for n in ("chunk_interval", "compress", "compress_after")
                 if getattr(self, n) != type(self).model_fields[n].default]
        if given and not self.timescaledb:
            raise ValueError(f"{', '.join(given)}: only with timescaledb=true")
        if self.compress_after and not self.compress:
            raise ValueError("compress_after needs compress=true")
        for name in ("chunk_interval", "compress_after"):
            value = getattr(self, name)
            if value is not None and not timescale.is_interval(value):
                raise ValueError(f"{name} {value!r} is not an interval such as '1 day' or '6 hours'")
        return self


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, psycopg.InterfaceError):
        return True
    if isinstance(exc, psycopg.Error):
        st = exc.sqlstate
        if st is None:
            return isinstance(exc, psycopg.OperationalError)
        return st.startswith(RETRY_STATES)
    return isinstance(exc, (ConnectionError, TimeoutError))


@dataclass(frozen=True)
class _Plan:
    """How one measurement is written: its columns and SQL."""

    table: Table
    entity: tuple[str, ...]        # tags kept in the tags table (empty: all inline)
    schema: str

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def qname(self) -> str:
        return f"{q(self.schema)}.{q(self.name)}"

    @property
    def extra(self) -> tuple[str, ...]:
        return self.table.tags[len(self.entity):]

    def columns(self) -> list[tuple[str, str]]:
        """The measurement table's columns: (name, SQL type)."""
        cols = [("time", "timestamptz")]
        if self.entity:
            cols.append(("tags_id", "integer"))
        cols += [(k, "text") for k in self.extra]
        cols += [(f.name, SQL_TYPES[f.type]) for f in self.table.fields]
        return cols

    def csv_columns(self) -> str:
        """The columns of a split CSV part, in order: time, every tag, fields."""
        return ", ".join(q(c) for c in ("time", *self.table.tags, *self.table.field_names))

    def stage_ddl(self) -> str:
        cols = ["time timestamptz"] + [f"{q(k)} text" for k in self.table.tags] + \
               [f"{q(f.name)} {SQL_TYPES[f.type]}" for f in self.table.fields]
        return f"CREATE TEMP TABLE IF NOT EXISTS pg_temp.{q(self.name)} ({', '.join(cols)}) ON COMMIT DELETE ROWS"

    def copy_sql(self) -> str:
        dest = f"pg_temp.{q(self.name)}" if self.entity else self.qname
        return f"COPY {dest} ({self.csv_columns()}) FROM STDIN (FORMAT csv)"

    def insert_sql(self) -> str:
        names = ["time", "tags_id", *self.extra, *self.table.field_names]
        vals = ["s.time", "t.id"] + [f"s.{q(c)}" for c in (*self.extra, *self.table.field_names)]
        key = "ROW(" + ", ".join(f"s.{q(k)}" for k in self.entity) + ")::text"
        return (f"INSERT INTO {self.qname} ({', '.join(q(c) for c in names)}) SELECT {', '.join(vals)} "
                f"FROM pg_temp.{q(self.name)} s JOIN {q(self.schema)}.{TAGS} t ON t.key = {key}")


def _tags_insert_sql(schema: str, entity: tuple[str, ...], names: list[str]) -> str:
    cols = ", ".join(q(k) for k in entity)
    union = " UNION ALL ".join(f"SELECT {cols} FROM pg_temp.{q(n)}" for n in names)
    tags = f"{q(schema)}.{TAGS}"
    kcols = ", ".join("k." + q(k) for k in entity)
    return (f"INSERT INTO {tags} (key, {cols}) SELECT k.key, {kcols} FROM "
            f"(SELECT ROW({cols})::text AS key, {cols} FROM (SELECT DISTINCT {cols} FROM ({union}) a) d) k "
            f"WHERE NOT EXISTS (SELECT 1 FROM {tags} t WHERE t.key = k.key) "
            f"ORDER BY k.key ON CONFLICT (key) DO NOTHING")


class _Session:
    """One writer's connection and the staging tables it has made."""

    __slots__ = ("conn", "staged")

    def __init__(self, conn: psycopg.AsyncConnection):
        self.conn = conn
        self.staged: set[str] = set()


class PostgresTarget(Target):
    name = "postgres"
    needs_url = True
    url_example = "postgresql://USER@HOST:PORT/DB"
    format = "csv"
    count_unit = "rows"
    value_checks = EXACT
    server_kind = "postgres"
    options_model = PostgresOptions
    own_disk_figure = "pg_total_relation_size"
    dialects = {"sql": PostgresSql}

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        try:
            self._params = conninfo_to_dict(self.url)
            if self.options.password is not None:
                self._params["password"] = self.options.password.get_secret_value()
        except psycopg.ProgrammingError as exc:
            raise UserError(f"target postgres: {self.shown_url}: not a PostgreSQL URL ({one_line(exc)})") from None
        self.schema = self.options.schema_name
        self.admin: psycopg.AsyncConnection | None = None
        self._free: list[_Session] = []
        self._all: list[_Session] = []
        self._qfree: list[psycopg.AsyncConnection] = []       # query connections, one per concurrent query
        self._qall_conns: list[psycopg.AsyncConnection] = []
        self._plans: list[_Plan] | None = None
        self._layout = None
        self._tags_sql: dict[tuple[int, ...], str] = {}
        self._timescale_version: str | None = None

    @property
    def shown_url(self) -> str:
        """The URL without its password."""
        return re.sub(r"(://[^/@:]*):[^/@]*@", r"\1:***@", self.url or "")

    def _conninfo(self, dbname: str) -> str:
        return make_conninfo("", **{**self._params, "dbname": dbname})

    async def _connect(self, dbname: str, timeout: int = 10) -> psycopg.AsyncConnection:
        return await psycopg.AsyncConnection.connect(self._conninfo(dbname), autocommit=True,
                                                     connect_timeout=timeout)

    # ---- connect ------------------------------------------------------------------------
    async def open(self) -> None:
        db = self.options.database
        try:
            self.admin = await self._connect(db)
            return
        except psycopg.Error as exc:
            first = exc
        maint = self._params.get("dbname") or "postgres"
        try:
            c = await self._connect(maint if maint != db else "postgres")
        except psycopg.Error as exc:
            raise UserError(f"target postgres: cannot reach {self.shown_url}: {one_line(exc)}") from None
        try:
            row = await (await c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (db,))).fetchone()
            if row is not None:      # it exists, yet we could not connect to it
                raise UserError(f"target postgres: cannot connect to database {db!r} at {self.shown_url}: "
                                f"{one_line(first)}")
            try:
                await c.execute(f"CREATE DATABASE {q(db)}")
            except psycopg.errors.DuplicateDatabase:
                pass                 # another process made it meanwhile
            except psycopg.Error as exc:
                raise UserError(f"target postgres: cannot create database {db!r} at {self.shown_url}: "
                                f"{one_line(exc)}") from None
        finally:
            await c.close()
        try:
            self.admin = await self._connect(db)
        except psycopg.Error as exc:
            raise UserError(f"target postgres: cannot reach {self.shown_url}: {one_line(exc)}") from None

    async def close(self) -> None:
        for s in self._all:
            await s.conn.close()
        for c in self._qall_conns:
            await c.close()
        self._all, self._free, self._qall_conns, self._qfree = [], [], [], []
        if self.admin is not None:
            await self.admin.close()
            self.admin = None

    async def _q1(self, sql: str, params=None):
        cur = await self.admin.execute(sql, params)
        return await cur.fetchone()

    async def _qall(self, sql: str, params=None) -> list:
        cur = await self.admin.execute(sql, params)
        return await cur.fetchall()

    # ---- create -------------------------------------------------------------------------
    def _bind(self, plans: list[_Plan]) -> None:
        self._plans = plans
        self._layout = native.CsvLayout([(p.name, len(p.table.tags)) for p in plans])
        self._tags_sql = {}

    def _plans_for(self, tables: Tables) -> list[_Plan]:
        entity: tuple[str, ...] = ()
        if self.options.tags == "table" and tables.tables:
            first = tables.tables[0].tags
            n = min(len(t.tags) for t in tables)
            while n and any(t.tags[:n] != first[:n] for t in tables):
                n -= 1
            entity = first[:n]
        return [_Plan(t, entity, self.schema) for t in tables]

    async def _columns(self, table: str) -> list[str]:
        rows = await self._qall("SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 "
                                "AND NOT attisdropped ORDER BY attnum", (f"{q(self.schema)}.{q(table)}",))
        return [r[0] for r in rows]

    async def _has_rows(self, table: str) -> bool:
        return (await self._q1(f"SELECT EXISTS (SELECT 1 FROM {q(self.schema)}.{q(table)})"))[0]

    async def create(self, tables: Tables, if_exists: str) -> None:
        plans = self._plans_for(tables)
        entity = plans[0].entity if plans else ()
        if entity and TAGS in {p.name for p in plans}:
            raise UserError(f"target postgres: a measurement is named {TAGS!r}, the name of the tag-set table; "
                            f"load it with -O tags=inline")
        for s in self._all:          # staging tables of an earlier create() may have other columns
            await s.conn.close()
        self._all, self._free = [], []
        if self.options.timescaledb:
            self._timescale_version = await timescale.ensure_extension(self.admin, self.shown_url)
        await self.admin.execute(f"CREATE SCHEMA IF NOT EXISTS {q(self.schema)}")
        existing = {r[0] for r in await self._qall(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (self.schema,))}
        where = f"database {self.options.database!r}" + (f" schema {self.schema!r}" if self.schema != "public" else "")
        if if_exists == "abort":
            for p in plans:
                if p.name in existing and await self._has_rows(p.name):
                    raise exists_error("postgres", f"table {p.name!r} in {where}")
        if if_exists == "drop":
            for name in [p.name for p in plans] + ([TAGS] if entity else []):
                await self.admin.execute(f"DROP TABLE IF EXISTS {q(self.schema)}.{q(name)} CASCADE")
            existing = set()
        want = {p.name: [c for c, _ in p.columns()] for p in plans}
        if entity:
            want[TAGS] = ["id", "key", *entity]
        for name, cols in want.items():
            if name in existing and (have := await self._columns(name)) != cols:
                raise UserError(f"target postgres: table {name!r} in {where} exists with other columns "
                                f"({', '.join(have)}; this load needs {', '.join(cols)}); "
                                f"use --if-exists drop to replace it")
        async with self.admin.transaction():
            if entity:
                cols = ", ".join(f"{q(k)} text" for k in entity)
                await self.admin.execute(
                    f"CREATE TABLE IF NOT EXISTS {q(self.schema)}.{TAGS} (id integer GENERATED ALWAYS AS IDENTITY "
                    f"PRIMARY KEY, key text NOT NULL UNIQUE, {cols})")
            for p in plans:
                cols = ", ".join(f"{q(c)} {t}" for c, t in p.columns())
                await self.admin.execute(f"CREATE TABLE IF NOT EXISTS {p.qname} ({cols})")
                if self.options.timescaledb:
                    await self._hypertable(p)
                await self._indexes(p)
        self._bind(plans)

    async def _indexes(self, p: _Plan) -> None:
        kind = self.options.index
        if kind == "none":
            return
        await self.admin.execute(f"CREATE INDEX IF NOT EXISTS {q(f'{p.name}_time_{kind}')} ON {p.qname} "
                                 f"USING {kind} (time)")
        if p.entity:
            await self.admin.execute(f"CREATE INDEX IF NOT EXISTS {q(f'{p.name}_tags_id_time')} ON {p.qname} "
                                     f"(tags_id, time)")

    async def _hypertable(self, p: _Plan) -> None:
        o = self.options
        await self.admin.execute(timescale.hypertable_sql(p.qname, o.chunk_interval))
        if o.compress:
            for sql in timescale.compression_sql(p.qname, timescale.segment_columns(p.entity, p.extra),
                                                 o.compress_after):
                await self.admin.execute(sql)

    async def attach(self, tables: Tables) -> None:
        self._bind(self._plans_for(tables))

    # ---- write --------------------------------------------------------------------------
    async def _session(self) -> _Session:
        if self._free:
            return self._free.pop()
        try:
            conn = await self._connect(self.options.database)
        except psycopg.Error as exc:
            if _retryable(exc):
                raise Retryable(f"postgres: connect: {one_line(exc)}") from None
            raise Fatal(f"postgres: connect: {one_line(exc)}") from None
        s = _Session(conn)
        self._all.append(s)
        return s

    def _discard(self, s: _Session) -> None:
        if s in self._all:
            self._all.remove(s)

    async def write(self, batch: Batch) -> None:
        if self._plans is None:
            raise Fatal("postgres: write() before create() or attach()")
        buf, parts = native.split_csv(self._layout, batch.data)
        view = memoryview(buf)
        todo = [(i, p) for i, p in enumerate(parts) if p is not None]
        if not todo:
            return
        s = await self._session()
        where = "batch"
        try:
            conn = s.conn
            staged = [self._plans[i] for i, _ in todo if self._plans[i].entity]
            for p in staged:
                if p.name not in s.staged:
                    await conn.execute(p.stage_ddl())
                    s.staged.add(p.name)
            async with conn.transaction(), conn.cursor() as cur:
                for i, (off, n, _rows, _vals) in todo:
                    where = f"table {self._plans[i].name}"
                    async with cur.copy(self._plans[i].copy_sql()) as cp:
                        await cp.write(view[off: off + n])
                if staged:
                    where = f"table {TAGS}"
                    await cur.execute(self._tags_insert(tuple(i for i, _ in todo if self._plans[i].entity)))
                    for i, (_off, _n, rows, _vals) in todo:
                        p = self._plans[i]
                        if not p.entity:
                            continue
                        where = f"table {p.name}"
                        await cur.execute(p.insert_sql())
                        if cur.rowcount != rows:
                            raise Fatal(f"postgres: table {p.name}: {rows} rows staged but {cur.rowcount} "
                                        f"found their tag set in {TAGS}")
        except psycopg.Error as exc:
            if s.conn.broken or s.conn.closed:
                self._discard(s)
                await s.conn.close()
                s = None
            if _retryable(exc):
                raise Retryable(f"postgres: {where}: {one_line(exc)}") from None
            raise Fatal(f"postgres: {where}: {one_line(exc)}") from None
        except Fatal:
            raise                    # raised inside the transaction: rolled back, the connection is fine
        except BaseException:
            s = None                 # cancelled mid-statement: never reuse it (close() closes it)
            raise
        finally:
            if s is not None:
                self._free.append(s)

    def _tags_insert(self, idx: tuple[int, ...]) -> str:
        sql = self._tags_sql.get(idx)
        if sql is None:
            p0 = self._plans[idx[0]]
            sql = self._tags_sql[idx] = _tags_insert_sql(self.schema, p0.entity, [self._plans[i].name for i in idx])
        return sql

    # ---- verify, compact, measure ---------------------------------------------------------
    async def count(self, tables: Tables) -> int:
        total = 0
        for t in tables:
            total += (await self._q1(f"SELECT count(*) FROM {q(self.schema)}.{q(t.name)}"))[0]
        return total

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        p = next(p for p in self._plans if p.name == table.name)
        row = await self._q1(fields_sql(p.qname, table, q))           # an integer sum: numeric
        tag_sets = (["tags_id"] if p.entity else []) + [q(k) for k in p.extra]   # a tags_id is one entity tag set
        return table_stats(table, (await self._q1(series_sql(p.qname, tag_sets)))[0], row)

    def _relations(self) -> list[str]:
        plans = self._plans or []
        names = [p.qname for p in plans]
        if any(p.entity for p in plans):
            names.append(f"{q(self.schema)}.{TAGS}")
        return names

    async def compact(self) -> None:
        if self.options.compress:
            for p in self._plans or []:
                await self.admin.execute(timescale.compress_chunks_sql(p.qname))
        for rel in self._relations():
            await self.admin.execute(f"VACUUM (ANALYZE) {rel}")
        try:
            await self.admin.execute("CHECKPOINT")
        except psycopg.errors.InsufficientPrivilege:
            pass                     # not a superuser (nor pg_checkpoint): the server checkpoints on its own

    async def disk_bytes(self) -> dict[str, int]:
        rels = self._relations()
        total = 0
        hyper = {p.qname for p in self._plans or []} if self.options.timescaledb else set()
        for rel in rels:
            sql = timescale.size_sql(rel) if rel in hyper else f"SELECT pg_total_relation_size({lit(rel)}::regclass)"
            total += (await self._q1(sql))[0] or 0
        db = (await self._q1("SELECT pg_database_size(current_database())"))[0]
        return {"pg_total_relation_size": int(total), "pg_database_size": int(db)}

    async def version(self) -> str:
        if self.admin is None:
            return ""
        v = (await self._q1("SHOW server_version"))[0].split()[0]
        return v + (f" timescaledb {self._timescale_version}" if self._timescale_version else "")

    # ---- phases 3-5: queries ------------------------------------------------------------------
    def dialect(self) -> Sql:
        if self._plans is None:
            raise Fatal("postgres: render() before create() or attach()")
        entity = self._plans[0].entity if self._plans else ()
        return PostgresSql(PostgresSpelling(self.schema, entity, self.options.timescaledb,
                                            indexed=self.options.index != "none"))

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

    async def open_query_connection(self) -> bool:
        """A connection for the next query when none is free (the executor times it apart)."""
        if self._qfree:
            return False
        self._qfree.append(await self._query_conn())
        return True

    async def query(self, native: str) -> Answer:
        """Run a query on a free connection (open_query_connection() made sure of one), to
        the last row received. The time to the first byte is not measured (None): libpq
        hands over a result whole, and single-row mode would add per-row client work to
        the latency."""
        conn = self._qfree.pop() if self._qfree else await self._query_conn()
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
        return Answer(RowSet(names, rows), None, None)
