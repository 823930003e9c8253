"""QuestDB as a target: loads (phase 2) and runs queries (phase 4).

Tables: create() makes one WAL table per measurement before the load, so every
column has its type (tags SYMBOL, float fields DOUBLE, int fields LONG, string
fields VARCHAR) and the designated timestamp `time` (TIMESTAMP, microseconds),
`PARTITION BY DAY` (option partition_by) `WAL`. QuestDB has no databases: the
tables are the server's, named as the measurements.

Load: each batch is influx line protocol already, which QuestDB ingests
natively: it is POSTed as it is (no parsing, no Python per row) to QuestDB's
ILP-over-HTTP endpoint `/write?precision=n` (the dataset's times are ns) by the
shared HttpClient (gzip'd with -O gzip=true, http.GzipOption: QuestDB inflates a
Content-Encoding: gzip body). The `questdb` client (PyPI, `from questdb import Sender`)
speaks the same ILP over HTTP, but takes rows or DataFrames only: handing it a
pre-built batch would mean parsing the line protocol back into columns first.
A request is one transaction; QuestDB answers once the rows are in the table's
write-ahead log. Refusals (400: a line it cannot parse, a type clash) are Fatal
with QuestDB's words; 5xx and lost connections are Retryable.

Visibility: WAL rows reach the table asynchronously. flush() waits (bounded by
the option wal_timeout) until the writer of each loaded table has applied what its
sequencer holds (`wal_tables()`: writerTxn == sequencerTxn), so count() is exact
afterwards; the error names the shortfall in transactions and rows. A table the
server suspended (a failed apply) is Fatal with its error at once.

count(): `SELECT count() FROM t` per measurement. compact() (untimed): flush,
`ALTER TABLE t SQUASH PARTITIONS` (out-of-order writes split partitions), flush
(the squash goes through the WAL too), `VACUUM TABLE t`; on a server tsbench runs,
it then closes the load's connections (an ILP connection holds its WAL writers)
and waits until QuestDB has closed the tables' idle writers, which cuts their
column files (preallocated in 16 MB pages) to size, purged the applied WAL
segments (server.py sets those timers to half a second) and deleted the partition
versions the squash replaced (a VACUUM run before the squash was applied leaves
them: VACUUM again every 2 s while any is left): the settled form. disk_bytes(): on a
server tsbench runs, the blocks allocated under the tables' directories
(table_dirs_allocated_bytes, its own figure); by URL, `table_storage()`'s
diskSize (file sizes, preallocated pages included while a writer is open).

Queries (sql.py): with -O protocol=http (the default) the rendered SQL is sent as GET
/exec?query=... on the shared HTTP pool, timed to the last byte of the JSON answer, whose
`dataset` becomes the canonical rows afterwards; with protocol=pgwire it goes over
QuestDB's PostgreSQL wire protocol, results in text or binary (pgwire.py), timed to the last
row received, the rows decoded afterwards. Both give the same rows (tested); which is
faster is measured by `python -m benchmarks.protocols`. HTTP stays the default: it is
the path the figures so far were made on, and what QuestDB's web console and REST
clients use; TSBS's QuestDB query runner speaks PostgreSQL wire."""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import time
from typing import Literal

from pydantic import ConfigDict, Field, SecretStr

from tsbench.core import bounds
from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.core.model import Batch, Table, Tables, TableStats
from tsbench.databases.questdb import pgwire
from tsbench.databases.questdb.dialect import QuestSql
from tsbench.databases.shared import printable
from tsbench.databases.shared.http import Gzip, GzipOption, HttpClient
from tsbench.databases.shared.server import allocated_bytes, local_state
from tsbench.databases.shared.sqlstats import EXACT, fields_sql, series_sql, table_stats
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer, lit, q

SQL_TYPES = {"float": "DOUBLE", "int": "LONG", "string": "VARCHAR"}
ILP_HEADERS = {"Content-Type": "text/plain; charset=utf-8"}
POLL_S = 0.05
SETTLE_POLL_S = 0.2
SETTLE_TIMEOUT = 60.0
VACUUM_EVERY_S = 2.0                 # VACUUM again while replaced partition versions remain


class QuestDbOptions(GzipOption):
    model_config = ConfigDict(extra="forbid")
    partition_by: Literal["HOUR", "DAY", "WEEK", "MONTH", "YEAR"] = Field(
        "DAY", description="the tables' PARTITION BY")
    wal_timeout: float = Field(300.0, gt=0, le=bounds.MAX_SECONDS,
                               description="seconds flush() waits for the WAL to be applied")
    protocol: Literal["http", "pgwire"] = Field(
        "http", description="how queries go: http: GET /exec on the shared HTTP pool (JSON answers); pgwire: "
                            "QuestDB's PostgreSQL wire protocol through psycopg (pg_results)")
    pg_results: Literal["text", "binary"] = Field(
        "text", description="protocol=pgwire: the results' format (text: the simple query protocol; binary: "
                            "the extended protocol)")
    pg_port: int = Field(8812, ge=1, le=65535, description="the PostgreSQL wire port of a server reached by URL "
                                                            "(protocol=pgwire; a server tsbench runs: its own)")
    pg_user: str = Field("admin", description="the PostgreSQL wire user (protocol=pgwire)")
    pg_password: SecretStr = Field(SecretStr("quest"), description="the PostgreSQL wire password "
                                                                   "(protocol=pgwire; QuestDB's default: quest)")
    index: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,126}$",
                              description="a tag column made `SYMBOL INDEX` in every table that has it, e.g. "
                                          "hostname (TSBS's QuestDB query runner adds that index before its "
                                          "queries); none by default")


def one_line(text: str) -> str:
    return " ".join(text.split()) or "(empty)"


def columns(t: Table) -> list[tuple[str, str]]:
    """A measurement's table columns: (name, QuestDB type), the designated timestamp last.
    QuestDB's names are case-insensitive: two names that differ in case only are refused."""
    cols = [(k, "SYMBOL") for k in t.tags] + [(f.name, SQL_TYPES[f.type]) for f in t.fields] + [("time", "TIMESTAMP")]
    seen: dict[str, str] = {}
    for c, _ in cols:
        if c.lower() in seen:
            raise UserError(f"target questdb: measurement {t.name}: columns {seen[c.lower()]!r} and {c!r} are one "
                            f"column in QuestDB (names are case-insensitive; `time` is the timestamp)")
        seen[c.lower()] = c
    return cols


class QuestDbTarget(Target):
    name = "questdb"
    needs_url = True
    url_example = "http://HOST:9000"
    format = "influx"
    count_unit = "rows"
    server_kind = "questdb"
    options_model = QuestDbOptions
    own_disk_figure = "table_dirs_allocated_bytes"
    value_checks = EXACT
    dialects = {"questdb": QuestSql}

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"questdb at {self.url}"
        self._gzip = Gzip(self.options, ILP_HEADERS)
        self.http: HttpClient | None = None
        self.pg: pgwire.PgWire | None = None        # protocol=pgwire: the query connections
        self._tables: Tables | None = None

    # ---- connect ------------------------------------------------------------------------
    async def open(self) -> None:
        self.http = HttpClient(self.url, self.what)
        await self.http.open(probe_path="/exec?query=select%201")
        status, body = await self.http.get("/exec", {"query": "select 1"})
        if status != 200 or b"dataset" not in body:
            await self.close()
            raise UserError(f"target questdb: {self.url}/exec answered HTTP {status}: is this a QuestDB server?")
        if self.options.protocol == "pgwire":
            self.pg = pgwire.PgWire(self.what, pgwire.conninfo(self.url, self.options),
                                    self.options.pg_results == "binary")

    async def close(self) -> None:
        if self.pg is not None:
            await self.pg.close()
            self.pg = None
        if self.http is not None:
            await self.http.close()
            self.http = None

    async def sql(self, query: str) -> dict:
        """Run one statement on /exec; its JSON answer. An error is Fatal with QuestDB's words."""
        status, body = await self.http.get("/exec", {"query": query})
        try:
            doc = json.loads(body)
        except ValueError:
            doc = {"error": body.decode("utf-8", "replace")}
        if status >= 300 or "error" in doc:
            raise Fatal(f"{self.what}: {one_line(str(doc.get('error', status)))} (in: {query[:200]})")
        return doc

    async def _rows(self, query: str) -> list[list]:
        return (await self.sql(query))["dataset"]

    # ---- create -------------------------------------------------------------------------
    async def _existing(self) -> dict[str, str]:
        """The server's tables: name -> directory name."""
        return {r[0]: r[1] for r in await self._rows("SELECT table_name, directoryName FROM tables()")}

    async def _columns(self, table: str) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in await self._rows(f"SELECT \"column\", type FROM table_columns({lit(table)})")]

    async def create(self, tables: Tables, if_exists: str) -> None:
        wanted = {t.name: columns(t) for t in tables}          # names checked before anything changes
        await self.flush()                                    # rows still in a WAL count as data
        existing = await self._existing()
        if if_exists == "abort":
            for t in tables:
                if t.name in existing and await self._count(t.name):
                    raise exists_error("questdb", f"table {t.name!r}")
        if if_exists == "drop":
            for t in tables:
                if t.name in existing:
                    await self.sql(f"DROP TABLE IF EXISTS {q(t.name)}")
            existing = {}
        for t in tables:
            want = wanted[t.name]
            if t.name in existing and sorted(have := await self._columns(t.name)) != sorted(want):
                raise UserError(f"target questdb: table {t.name!r} exists with other columns "
                                f"({', '.join(f'{c} {ty}' for c, ty in have)}; this load needs "
                                f"{', '.join(f'{c} {ty}' for c, ty in want)}); use --if-exists drop to replace it")
            cols = ", ".join(f"{q(c)} {ty}{' INDEX' if c == self.options.index else ''}" for c, ty in want)
            await self.sql(f"CREATE TABLE IF NOT EXISTS {q(t.name)} ({cols}) TIMESTAMP(\"time\") "
                           f"PARTITION BY {self.options.partition_by} WAL")
        self._tables = tables

    async def attach(self, tables: Tables) -> None:
        self._tables = tables

    # ---- load ---------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        try:
            await self.http.post("/write", await self._gzip.body(batch.data), params={"precision": "n"},
                                 headers=self._gzip.headers)
        except (Fatal, Retryable) as exc:        # QuestDB's JSON error spans lines
            raise type(exc)(one_line(str(exc))) from None

    async def flush(self) -> None:
        """Wait until the writer of each of the tables (before create() or attach(): of every
        WAL table) has applied all its sequencer holds."""
        deadline = time.monotonic() + self.options.wal_timeout
        ours = {t.name for t in self._tables} if self._tables else None
        while True:
            behind = []
            for name, suspended, writer, seq, error in await self._rows(
                    "SELECT name, suspended, writerTxn, sequencerTxn, errorMessage FROM wal_tables()"):
                if ours is not None and name not in ours:
                    continue
                if suspended:
                    raise Fatal(f"{self.what}: table {name!r} is suspended, its WAL not applied: "
                                f"{one_line(error or '(no error message; see the server log)')}")
                if writer < seq:
                    behind.append((name, seq - writer, seq))
            if not behind:
                return
            if time.monotonic() > deadline:
                name, lag, seq = behind[0]
                raise Fatal(f"{self.what}: after {self.options.wal_timeout:g} s, {lag} of {seq} WAL transactions "
                            f"of table {name!r} not applied ({await self._count(name):,} rows visible)")
            await asyncio.sleep(POLL_S)

    # ---- verify -------------------------------------------------------------------------
    async def _count(self, table: str) -> int:
        return int((await self._rows(f"SELECT count() FROM {q(table)}"))[0][0])

    async def count(self, tables: Tables) -> int:
        existing = await self._existing()
        return sum([await self._count(t.name) for t in tables if t.name in existing])

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        row = (await self._rows(fields_sql(q(table.name), table, q)))[0]
        series = (await self._rows(series_sql(q(table.name), [q(k) for k in table.tags])))[0][0]
        return table_stats(table, series, row)

    async def compact(self) -> None:
        await self.flush()
        names = [t.name for t in self._tables or ()]
        existing = await self._existing()
        for name in names:
            if name in existing:
                await self.sql(f"ALTER TABLE {q(name)} SQUASH PARTITIONS")
        await self.flush()                   # on a WAL table the squash is applied asynchronously
        await self._vacuum(names, existing)
        if local_state("questdb", self.url) is not None:
            await self.http.close()          # an ILP connection keeps its WAL writers until it closes
            await self.open()
            await self._settle_files({n: existing[n] for n in names if n in existing})

    async def _vacuum(self, names, existing) -> None:
        for name in names:
            if name in existing:
                await self.sql(f"VACUUM TABLE {q(name)}")
        await self.flush()

    async def _settle_files(self, dirs: dict[str, str]) -> None:
        """On a server tsbench runs (idle writers closed after 0.5 s, see server.py), the load's
        connections closed: wait until the tables' writers are closed (their column files cut
        to size), their applied WAL segments purged (no wal* dir left) and the partition
        versions a squash replaced deleted (VACUUM again while any is left), bounded by
        SETTLE_TIMEOUT."""
        root = pathlib.Path(local_state("questdb", self.url).extra["db_root"])
        deadline = time.monotonic() + SETTLE_TIMEOUT
        next_vacuum = time.monotonic() + VACUUM_EVERY_S
        while True:
            writers = await self._open_writers()
            busy = {n for n in dirs if writers is None or n in writers}
            wal = [d for d in dirs.values() if any((root / d).glob("wal*"))]
            stale = [n for n, d in dirs.items() if await self._stale_partitions(n, root / d)]
            if not busy and not wal and not stale:
                return
            if time.monotonic() > deadline:
                raise Fatal(f"{self.what}: after {SETTLE_TIMEOUT:g} s, tables still have open writers "
                            f"({', '.join(sorted(busy)) or 'none'}), WAL segments ({', '.join(wal) or 'none'}) "
                            f"or replaced partition versions ({', '.join(stale) or 'none'})")
            if stale and time.monotonic() > next_vacuum:
                await self._vacuum(stale, dirs)
                next_vacuum = time.monotonic() + VACUUM_EVERY_S
            await asyncio.sleep(SETTLE_POLL_S)

    async def _open_writers(self) -> set[str] | None:
        """The tables whose writers the pool holds; None while that is unknowable: when a
        writer is being released, QuestDB 9 can fail the query with a NullPointerException
        on the entry's table token. Every table then counts as busy and is polled again, so
        the caller's deadline still bounds the wait."""
        try:
            return {r[0] for r in await self._rows("SELECT table_name FROM writer_pool()")}
        except Fatal as exc:
            if "TableToken" not in str(exc) or "is null" not in str(exc):
                raise
            return None

    async def _stale_partitions(self, name: str, tdir: pathlib.Path) -> int:
        """How many partition directories (`2016-01-01.30`, `2016-01-01T134920-000001.67`) the
        table holds beyond the partitions it lists."""
        on_disk = [p for p in tdir.iterdir() if p.is_dir() and p.name[:1].isdigit()]
        listed = await self._rows(f"SELECT count() FROM table_partitions({lit(name)})")
        return max(0, len(on_disk) - int(listed[0][0]))

    async def disk_bytes(self) -> dict[str, int]:
        names = [t.name for t in self._tables or ()]
        existing = await self._existing()
        rows = await self._rows("SELECT tableName, diskSize FROM table_storage()")
        out = {"table_storage_disk_size": int(sum(r[1] for r in rows if r[0] in names))}
        st = local_state("questdb", self.url)
        if st is not None and st.extra.get("db_root"):
            root = st.extra["db_root"]
            dirs = [f"{root}/{existing[n]}" for n in names if n in existing]
            out[self.own_disk_figure] = sum([await asyncio.to_thread(allocated_bytes, d) for d in dirs])
        return out

    async def version(self) -> str:
        text = str((await self._rows("SELECT build()"))[0][0])
        m = re.search(r"QuestDB\s+(\S+?),?\s", text)
        return m.group(1) if m else text[:100]

    # ---- queries ------------------------------------------------------------------------
    async def prepare(self, workers: int) -> None:
        """One keep-alive connection (or PostgreSQL wire connection) per worker, opened before timing."""
        if self.pg is not None:
            await self.pg.prepare(workers)
            return
        await self.http.warm(workers, "/exec?query=select%201")

    async def open_query_connection(self) -> bool:
        """protocol=pgwire: a connection for the next query when none is free (timed apart)."""
        if self.pg is None or self.pg.free:
            return False
        await self.pg.connect()
        return True

    async def query(self, native: str) -> Answer:
        if self.pg is not None:
            return Answer(await self.pg.query(native), None, None)
        t = await self.http.timed("GET", "/exec", params={"query": native})
        if t.status != 200:
            try:
                words = json.loads(t.body).get("error")
            except (ValueError, AttributeError):
                words = None
            raise Fatal(f"{self.what}: HTTP {t.status}: {one_line(str(words or t.body.decode('utf-8', 'replace')))}")
        return Answer(t.body, len(t.body), t.ttfb, connect_s=t.connect_s)

    def canonical(self, native: str, answer) -> list[tuple]:
        if isinstance(answer.raw, pgwire.PgResult):
            return answer.raw.rows()
        try:
            return [tuple(r) for r in json.loads(answer.raw)["dataset"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise Fatal(f"{self.what}: unreadable /exec answer ({exc})") from None

    def answer_lines(self, native: str, answer, max_rows: int) -> list[str]:
        """protocol=pgwire: the result's columns and rows; an /exec answer: its JSON body."""
        if isinstance(answer.raw, pgwire.PgResult):
            pg = answer.raw
            return printable.table_lines(pg.names(), pg.rows()[:max_rows], max_rows, pg.result.ntuples)
        return super().answer_lines(native, answer, max_rows)
