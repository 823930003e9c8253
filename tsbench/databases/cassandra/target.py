"""Cassandra as a target: loads (phase 2) and runs CQL plans (phase 4).

Load: the INSERTs of each layout (schema.py) are prepared once, at create() or
attach(); each batch is split by measurement in the C core (native.split_csv),
each part rendered by C templates (schema.py) into statements of a CQL BATCH
message: the prepared id and the bound values in the protocol's binary form,
one statement per line. The bytes are cut into chunks of `batch_rows`
statements using the render's `ends` array (slices, no Python per row) and
each chunk sent as one unlogged BATCH (driver.BoundBatch), `concurrency` of
them in flight per worker, through cassandra-driver's own connection pool (its
futures bridged into asyncio; nothing blocks the event loop).

Why prepared statements bound in C: the server skips parsing every INSERT
(CQL text cost it 17.4 CPU s per million INSERTs on a warm 5.0.9, prepared
11.5), and binding them in C avoids the driver's per-value Python (binding a
million in the driver took 8.2 client CPU s, a client at 71% of the server;
README, "load").

Grouping by partition, without Python per row: schema=series renders a part
field by field (a template per field), so consecutive statements are one field
of the part's hosts in time order, and a chunk of 1000 touches about as many
partitions as the batch has hosts, not 1000 (a batch over 1000 partitions
applied 2-3 times slower than one over 10-100). schema=wide has one statement
per line; a chunk spans the hosts of its epochs. Rows are not sorted by
series: that would be a per-row sort. An unlogged batch over several
partitions is split by the coordinator into one mutation per partition (all
local on one node); the local server's yaml raises the batch size thresholds
and silences the cross-partition warning.

Push-back is Retryable (OverloadedException, WriteTimeout, Unavailable, a
client timeout, a closed connection, NoHostAvailable for up to a minute, as
while the server starts or restarts); the loader retries the whole batch,
which re-inserts the same primary keys: CQL inserts are upserts, so a retry
never doubles a value. A refused statement (InvalidRequest, SyntaxException,
ServerError) is Fatal with the server's words.

stats() (value verification): per partition, for both schemas (stats.py).
count(): values, exactly, for both schemas (the count unit is the class's):
`SELECT count(*)` of the series tables, or the sum of `count("<field>")` (the
non-null values) of each wide table, over slices of the token ring (each
slice bounded: about COUNT_SLICE_VALUES values), a few in flight; a slice
pushed back (a timeout, or a replica's ReadFailure, as on a busy machine) is
read again a few times (driver.Session.rows), then fails with the server's
words, all within the load's stall bound.
compact(): nodetool flush + compact over JMX (server.nodetool), untimed; the
JMX port is the `jmx_port` option, else the local server tsbench started at
this URL; with neither it is skipped, saying why. disk_bytes(): nodetool
tablestats' "Space used (live)" of the keyspace's tables, else (no JMX)
system_views.disk_usage (whole MiB).

Queries: the dialects (dialects/series.py, dialects/wide.py, on dialects/base.py) render a plan
(statements with `?` markers and a finish() that computes the canonical rows on
the client); see dialects/base.py's docstring for the
contract this class keeps (the partition index read in attach(), statements
prepared in prepare(), run concurrently, finish() timed as client work).

Options: CassandraOptions below (each field says what it means)."""

from __future__ import annotations

import asyncio
import math
import warnings
from typing import Literal
from urllib.parse import urlsplit

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tsbench.core import bounds
from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import STAT_KINDS, Batch, Table, Tables, TableStats
from tsbench.core.secrets import mask
from tsbench.data import native
from tsbench.data.batches import csv_layout
from tsbench.databases.cassandra import driver, stats
from tsbench.databases.cassandra.dialects.series import CqlSeries
from tsbench.databases.cassandra.dialects.wide import CqlWide
from tsbench.databases.cassandra.schema import (
    SERIES_TABLES,
    check_fields,
    ident,
    insert_cql,
    keyspace_ddl,
    partition_key,
    table_columns,
    table_ddl,
    template_ops,
)
from tsbench.databases.cassandra.server import nodetool
from tsbench.databases.shared import printable
from tsbench.databases.shared.server import local_state, say
from tsbench.databases.shared.stats import FieldMerge
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer

COUNT_SLICE_VALUES = 100_000      # values one count statement reads, about
COUNT_CONCURRENCY = 4            # count statements in flight (a busy server times out a wide scan)
QUERY_CONCURRENCY = 64            # statements of one plan in flight at once
TOKEN_MIN, TOKEN_MAX = -(2 ** 63), 2 ** 63 - 1


with warnings.catch_warnings():      # the option is named `schema`, like BaseModel's deprecated schema()
    warnings.filterwarnings("ignore", message='Field name "schema"', category=UserWarning)

    class CassandraOptions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        schema: Literal["series", "wide"] = Field(
            "series", description="series: a table per value type, a partition per series, field and day (the "
                                  "seed's and TSBS's), aggregated on the client as they did; wide: a table per "
                                  "measurement, a partition per tag set and day, aggregated by the server's "
                                  "GROUP BY floor(time, 1m) (schema.py)")
        keyspace: str = Field("tsbench", pattern=r"^[A-Za-z0-9_]{1,48}$", description="the keyspace to load")
        replication_factor: int = Field(1, ge=1, le=bounds.MAX_WORKERS,
                                        description="the keyspace's replication factor")
        batch_rows: int = Field(1000, ge=1, le=65535,
                                description="INSERT statements (Cassandra rows) per unlogged batch")
        concurrency: int = Field(4, ge=1, le=bounds.MAX_WORKERS, description="batch statements in flight per worker")
        jmx_port: int | None = Field(None, ge=1, le=65535,
                                     description="the JMX port, for nodetool's flush and compaction (of a server "
                                                 "tsbench did not start); unset: the local server's")
        request_timeout: float = Field(60.0, gt=0, le=bounds.MAX_SECONDS, description="seconds, per statement")


def parse_url(url: str) -> list[tuple[str, int]]:
    """cassandra://host:port[,host2:port2] -> [(host, port), ...]. A user or password, a
    path or a query are refused in one line (the password never in it): tsbench connects
    without authentication, and the keyspace is an option."""
    parts = urlsplit(url)
    if parts.scheme != "cassandra" or not parts.netloc:
        raise UserError(f"target cassandra: {mask(url)}: not a cassandra://host:port[,host:port] URL")
    if "@" in parts.netloc:
        hosts = parts.netloc.rpartition("@")[2]
        raise UserError(f"target cassandra: cassandra://{hosts}: a user or password in the URL is not "
                        "supported (tsbench connects to Cassandra without authentication)")
    if parts.path.strip("/") or parts.query or parts.fragment:
        raise UserError(f"target cassandra: {mask(url)}: give only cassandra://host:port[,host:port] "
                        "(the keyspace is an option: -O keyspace=NAME)")
    out = []
    for hp in parts.netloc.split(","):
        host, _, port = hp.rpartition(":")
        if not host or not port.isdigit():
            host, port = hp, "9042"
        if not 0 < int(port) < 65536:
            raise UserError(f"target cassandra: {url}: port {port} is not a TCP port (1 to 65535)")
        out.append((host.strip("[]"), int(port)))
    return out


def rendered(templates: list, buf, off: int, n: int) -> tuple[bytes | memoryview, np.ndarray]:
    """A CSV part through each template in turn: the statements one after the other, and the
    end of every line's output in them (one statement per line and template, or nothing)."""
    outs = [native.render(t, buf, off, n) for t in templates]
    if len(outs) == 1:
        return outs[0]
    base = np.cumsum([0] + [len(o) for o, _ in outs[:-1]], dtype=np.uint64)
    return b"".join(o for o, _ in outs), np.concatenate([e + b for (_, e), b in zip(outs, base)])


def chunks(out, ends: np.ndarray, k: int) -> list[driver.BoundStatements]:
    """The rendered statements cut every k, each chunk one batch's statements (lines that
    rendered nothing, all null, are not statements)."""
    ends = ends[np.diff(ends, prepend=np.uint64(0)) > 0]
    view, res, a = memoryview(out), [], 0
    for i in range(0, len(ends), k):
        b = int(ends[min(i + k, len(ends)) - 1])
        res.append(driver.BoundStatements(view[a:b], min(k, len(ends) - i)))
        a = b
    return res


def token_slices(n: int) -> list[tuple[int, int]]:
    """n consecutive (lo, hi] slices covering the Murmur3 ring (no token is -2^63)."""
    step = (TOKEN_MAX - TOKEN_MIN) // n
    bounds = [TOKEN_MIN + i * step for i in range(n)] + [TOKEN_MAX]
    return list(zip(bounds[:-1], bounds[1:]))


class CassandraTarget(Target):
    name = "cassandra"
    needs_url = True
    url_example = "cassandra://HOST:9042"
    format = "csv"
    server_kind = "cassandra"
    count_unit = "values"          # both schemas: the unit is the class's, whatever the options
    options_model = CassandraOptions
    own_disk_figure = "cassandra_space_used_live"
    dialects = {"cql": CqlSeries, "cql-wide": CqlWide}
    value_checks = {k: None for k in STAT_KINDS}     # stats.py: per partition, integer sums as varint

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.contacts = parse_url(self.url)
        self.ks = self.options.keyspace
        self.db: driver.Session | None = None
        self._layout = None
        self._templates: list = []
        self._tables: Tables | None = None
        self._dialect = None
        self._cql: set[str] = set()          # statement texts the rendered plans use
        self._prepared: dict[str, object] = {}
        self._index_stale = True

    # ---- connect ------------------------------------------------------------------------
    async def open(self) -> None:
        self.db = await driver.connect(self.contacts, self.options.request_timeout, f"target cassandra: {self.url}")
        self._prepared = {}

    async def close(self) -> None:
        if self.db is not None:
            db, self.db = self.db, None
            await db.close()

    async def version(self) -> str:
        """The server's release and the client's: "5.0.9 (client cassandra-driver 3.30.1)"."""
        import cassandra

        rows = await self.db.rows("SELECT release_version FROM system.local")
        return f"{rows[0][0]} (client cassandra-driver {cassandra.__version__})" if rows else ""

    # ---- create -------------------------------------------------------------------------
    async def _existing(self) -> set[str]:
        rows = await self.db.rows("SELECT table_name FROM system_schema.tables WHERE keyspace_name = %s", (self.ks,))
        return {r[0] for r in rows}

    async def _holds_data(self, table: str) -> bool:
        return bool(await self.db.rows(f"SELECT * FROM {ident(self.ks)}.{ident(table)} LIMIT 1", fetch_all=False))

    async def _columns(self, table: str) -> dict[str, str]:
        rows = await self.db.rows("SELECT column_name, type FROM system_schema.columns WHERE keyspace_name = %s "
                                  "AND table_name = %s", (self.ks, table))
        return {r[0]: r[1] for r in rows}

    async def create(self, tables: Tables, if_exists: str) -> None:
        check_fields(self.options.schema, tables)
        want = table_columns(self.options.schema, tables)
        await self.db.run(keyspace_ddl(self.ks, self.options.replication_factor))
        existing = await self._existing() & set(want)
        if if_exists == "abort":
            for name in sorted(existing):
                if await self._holds_data(name):
                    raise exists_error("cassandra", f"table {name!r} in keyspace {self.ks!r}")
        if if_exists == "drop":
            for name in sorted(existing):
                await self.db.run(f"DROP TABLE IF EXISTS {ident(self.ks)}.{ident(name)}")
            existing = set()
        for name in sorted(existing):
            have = await self._columns(name)
            if have != want[name]:
                raise UserError(f"target cassandra: table {name!r} in keyspace {self.ks!r} exists with other "
                                f"columns ({', '.join(have)}; this load needs {', '.join(want[name])}); "
                                f"use --if-exists drop to replace it")
        for name, cols in want.items():
            await self.db.run(table_ddl(self.ks, self.options.schema, name, cols))
        await self._bind(tables)
        self._index_stale = True

    async def _bind(self, tables: Tables) -> None:
        """Each measurement's INSERTs prepared, and the templates binding them."""
        self._tables = tables
        self._layout = csv_layout(tables)
        self._templates = []
        for t in tables:
            ids = [(await self._statement(cql)).query_id for cql in insert_cql(self.options.schema, self.ks, t)]
            self._templates.append([native.Template(ops) for ops in template_ops(self.options.schema, t, ids)])

    async def attach(self, tables: Tables) -> None:
        check_fields(self.options.schema, tables)
        await self._bind(tables)
        await self._read_index()

    # ---- write --------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        if self._layout is None:
            raise Fatal("cassandra: write() before create() or attach()")
        self._index_stale = True
        buf, parts = native.split_csv(self._layout, batch.data)
        todo: list[driver.BoundStatements] = []
        for i, part in enumerate(parts):
            if part is not None:
                off, n, _rows, _values = part
                todo += chunks(*rendered(self._templates[i], buf, off, n), self.options.batch_rows)
        await self.db.write_all(todo, self.options.concurrency)

    # ---- verify, compact, measure ---------------------------------------------------------
    def _count_tables(self, tables: Tables) -> list[str]:
        return list(table_columns(self.options.schema, tables))

    def _count_statements(self, tables: Tables, existing: set[str]) -> list[str]:
        """count(*) of the series tables, or count(field)... of each wide table (the non-null
        values), over n slices of the token ring, n from the values expected."""
        n = max(1, math.ceil(tables.values / COUNT_SLICE_VALUES))
        pk = ", ".join(ident(c) for c in partition_key(self.options.schema))
        if self.options.schema == "series":
            what = {t: "count(*)" for t in self._count_tables(tables)}
        else:
            what = {t.name: ", ".join(f"count({ident(f)})" for f in t.field_names) for t in tables if t.fields}
        return [f"SELECT {cols} FROM {ident(self.ks)}.{ident(t)} WHERE token({pk}) > {lo} AND token({pk}) <= {hi}"
                for t, cols in what.items() if t in existing for lo, hi in token_slices(n)]

    async def _series_partitions(self, names: set[str]) -> list[str]:
        """Count statements, one per series partition of these measurements (from the
        partitions' ids: `<measurement>,...` or `<measurement>#...`)."""
        out = []
        for table in SERIES_TABLES.values():
            qual = f"{ident(self.ks)}.{table}"
            for (sid,) in await self.db.rows(f"SELECT DISTINCT series_id FROM {qual}"):
                if sid.split("#", 1)[0].split(",", 1)[0] in names:
                    out.append(f"SELECT count(*) FROM {qual} WHERE series_id = '{sid.replace(chr(39), chr(39) * 2)}'")
        return out

    async def count(self, tables: Tables) -> int:
        """Values, exactly: counts over token-ring slices of every table, each slice about
        COUNT_SLICE_VALUES values, COUNT_CONCURRENCY at once. schema=series asked for some
        of the measurements only (verify counts table by table): per partition of theirs."""
        names = {t.name for t in tables}
        if self.options.schema == "series" and self._tables is not None and names < {t.name for t in self._tables}:
            stmts = await self._series_partitions(names)
        else:
            stmts = self._count_statements(tables, await self._existing())
        sem = asyncio.Semaphore(COUNT_CONCURRENCY)

        async def one(cql: str) -> int:
            async with sem:
                return sum((await self.db.rows(cql))[0])
        return sum(await asyncio.gather(*(one(s) for s in stmts)))

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """Per field count, sum, min and max, and the distinct series, over the dataset's
        window: one statement per partition of the measurement (stats.py), COUNT_CONCURRENCY
        at once, each bounded by request_timeout and retried as counts are."""
        merge = FieldMerge(table, f"target cassandra: {self.url}")
        if self.options.schema == "series":
            series = await self._series_stats(table, tables, merge)
        else:
            series = await self._wide_stats(table, tables, merge)
        return merge.stats(len(series))

    async def _series_stats(self, table: Table, tables: Tables, merge: FieldMerge) -> set[str]:
        types = {f.name: f.type for f in table.fields}
        todo = []
        for typ, cql in stats.series_partitions(self.ks):
            for (sid,) in await self.db.rows(cql):
                head, field, _ = stats.series_key(sid)
                if head.split(",", 1)[0] == table.name and types.get(field) == typ:
                    todo.append((head, field, stats.series_statement(self.ks, typ),
                                 (sid, tables.start_ns, tables.end_ns)))
        series = set()
        for (head, field, _, _), row in zip(todo, await self._each([(c, p) for _, _, c, p in todo])):
            if row[0]:
                series.add(head)
                merge.add(field, *row)
        return series

    async def _wide_stats(self, table: Table, tables: Tables, merge: FieldMerge) -> set[str]:
        if table.name not in await self._existing():
            return set()
        keys = [tuple(r) for r in await self.db.rows(stats.wide_partitions(self.ks, table))]
        window = stats.wide_window(tables.start_ns, tables.end_ns)
        cql = stats.wide_statement(self.ks, table)
        series = set()
        for key, row in zip(keys, await self._each([(cql, key + window) for key in keys])):
            if row[0]:
                series.add(key[0])
            for j, f in enumerate(table.fields):
                merge.add(f.name, *row[1 + 4 * j: 5 + 4 * j])
        return series

    async def _each(self, todo: list[tuple[str, tuple]]) -> list[tuple]:
        """The one row of each (cql, params), prepared once per text, COUNT_CONCURRENCY at once."""
        sem = asyncio.Semaphore(COUNT_CONCURRENCY)

        async def one(cql: str, params: tuple) -> tuple:
            ps = await self._statement(cql)
            async with sem:
                return tuple((await self.db.rows(ps, params))[0])
        return list(await asyncio.gather(*(one(c, p) for c, p in todo)))

    def _jmx(self) -> tuple[str, int] | None:
        """(host, JMX port) for nodetool: the option, else the local server's at this URL."""
        host = self.contacts[0][0]
        if self.options.jmx_port:
            return host, self.options.jmx_port
        st = local_state("cassandra", self.url)
        return ("127.0.0.1", st.ports["jmx"]) if st is not None and "jmx" in st.ports else None

    async def compact(self) -> None:
        """nodetool flush, then a major compaction of the keyspace (blocks until done)."""
        jmx = self._jmx()
        if jmx is None:
            say(f"cassandra: no JMX port known for {self.url} (option jmx_port): flush and compaction skipped")
            return
        for args in (["flush", self.ks], ["compact", self.ks]):
            await asyncio.to_thread(nodetool, *jmx, args)

    async def disk_bytes(self) -> dict[str, int]:
        names = set(self._count_tables(self._tables)) if self._tables else await self._existing()
        jmx = self._jmx()
        if jmx is not None:
            text = await asyncio.to_thread(nodetool, *jmx, ["tablestats", "-F", "json", self.ks])
            live = driver.tablestats_live(text, self.ks, names)
        else:
            rows = await self.db.rows("SELECT table_name, mebibytes FROM system_views.disk_usage "
                                      "WHERE keyspace_name = %s", (self.ks,))
            live = sum(r[1] << 20 for r in rows if r[0] in names)
        return {self.own_disk_figure: live}

    # ---- queries ------------------------------------------------------------------------
    def dialect_name(self) -> str:
        return "cql-wide" if self.options.schema == "wide" else "cql"

    def dialect(self):
        if self._dialect is not None:
            return self._dialect
        return self.dialects[self.dialect_name()](self.ks)

    async def _read_index(self) -> None:
        """The partitions that exist (dialects/base.py's index statements, every page), untimed."""
        cls = self.dialects[self.dialect_name()]
        stmts = cls.index_queries(self.ks, self._tables)
        index = [await self.db.rows(cql) for cql in stmts]
        self._dialect = cls(self.ks, self._tables, index=index)
        self._index_stale = False

    def render(self, spec, form: str = "tsbench"):
        plan = super().render(spec, form)
        self._cql.update(plan.templates)
        return plan

    async def prepare(self, workers: int) -> None:
        """The partition index again if a load ran since, and every statement the rendered
        plans use prepared (untimed)."""
        if self._index_stale and self._tables is not None:
            await self._read_index()
        for cql in sorted(self._cql - set(self._prepared)):
            self._prepared[cql] = await self.db.prepare(cql)

    async def _statement(self, cql: str):
        ps = self._prepared.get(cql)
        if ps is None:
            ps = self._prepared[cql] = await self.db.prepare(cql)
        return ps

    async def query(self, plan) -> Answer:
        """Every statement of the plan at once (QUERY_CONCURRENCY in flight), each read to
        its last page."""
        bound = [(await self._statement(cql)).bind(params) for cql, params in plan.statements]
        return Answer(await self.db.read_all(bound, QUERY_CONCURRENCY), None, None)

    def finish(self, plan, answer: Answer) -> list[tuple]:
        """plan.finish() on the statements' rows: client work (client_s)."""
        return plan.finish(answer.raw)

    def answer_lines(self, plan, answer, max_rows: int) -> list[str]:
        """Each statement's rows as the server sent them, under the statement and its
        parameters, with the column names its prepared form declares."""
        def one(i: int, max_rows: int) -> list[str]:
            cql, params = plan.statements[i]
            names = [c[2] for c in self._prepared[cql].result_metadata or ()]
            return [f"{cql};  -- params {params!r}", *printable.table_lines(names, answer.raw[i], max_rows)]
        return printable.responses_lines(range(len(answer.raw)), max_rows, one, "statement")

