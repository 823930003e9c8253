"""Apache IoTDB as a target: loads (phase 2) and runs tree-model SQL (phase 4).

Model: IoTDB's tree model (paths.py): a device per (measurement, tag set), its fields
aligned timeseries. The tree model is IoTDB's mature one; 2.0's table model (its SQL
dialect) is new in the 2.0.1-beta server tsbench runs, and lacks the window functions
and common table expressions the iot types would need there too.

Load: each batch is split by measurement in the C core (native.split_csv), each part
parsed into Arrow columns by pyarrow's CSV reader; rows are grouped by tag set with
numpy (the tag columns' dictionary codes folded into one device number, one lexsort
by device and time), the 8-byte big-endian field columns rearranged in one numpy scatter
so that each device's (fields x rows) values are one slice of one buffer, and each device's
rows become one aligned tablet: that slice, its times' slice, its nulls packed bitmaps,
serialized as the client's NumpyTablet would (tested) without its per-row Python checks;
the batch's tablets go in one `insert_aligned_tablets` RPC. No Python per row: Python
runs per device of a batch (a devops batch of 5,000 rows holds about 900 devices).
The schema is created by the server on first write (DOUBLE and INT64 columns).

The client (PyPI apache-iotdb) is synchronous thrift: every call runs on a daemon
thread (blocking.call: a call abandoned to the stall bound holds up neither the loop nor
the exit), one Session per concurrent worker (a pool), its socket timeout bounding each
call; a session dropped after an error is closed on a thread nobody waits for. A lost
connection or a refusal for want of memory is Retryable (a re-sent tablet overwrites its
own points: one value per timeseries and time); another refusal is Fatal with IoTDB's
status code and words.

stats() (value verification): one aggregation aligned by device per measurement (stats.py).
count(): values, exactly: per measurement `SELECT count(*) ... ALIGN BY DEVICE` (each
field's non-null points, per device), summed. flush(): FLUSH. compact() (untimed): FLUSH;
IoTDB 2.0 compacts in the background and has no statement to start or wait for it.
disk_bytes(): on a server tsbench runs, the DataNode's data dirs (its TsFiles:
iotdb_data_bytes) and its WAL (iotdb_wal_bytes); by URL, none.

Options: IotdbOptions below (each field says what it means)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from urllib.parse import unquote, urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field

from tsbench.core import bounds
from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.core.model import STAT_KINDS, Batch, Table, Tables, TableStats
from tsbench.databases.iotdb import stats
from tsbench.databases.iotdb.dialects.tree import IotdbQuery, IotdbTree, canonical
from tsbench.databases.iotdb.paths import database_path, device_path, measurement_path, node, quiet_client_logs
from tsbench.databases.shared import blocking, printable
from tsbench.databases.shared.arrow_csv import ARROW_TYPES, CsvToArrow
from tsbench.databases.shared.server import allocated_bytes, local_state
from tsbench.databases.shared.stats import FieldMerge
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer

# IoTDB status codes that mean "later" (TSStatusCode): write rejected for memory, system
# read-only for want of memory, too many concurrent queries / writes, time out
PUSH_BACK = {606, 607, 621, 701, 704, 712, 716}


class IotdbOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    database: str = Field("tsbench", description="the data goes under root.<database>")
    timeout: float = Field(300.0, gt=0, le=bounds.MAX_SECONDS,
                           description="seconds, each call (the socket's timeout)")
    fetch_size: int = Field(100_000, ge=1, le=bounds.MAX_BATCH_ROWS, description="rows per fetch of a query's answer")


def _parse_url(url: str) -> tuple[str, int, str, str]:
    u = urlsplit(url)
    if u.scheme != "iotdb" or not u.hostname:
        raise UserError(f"target iotdb: URL {url!r}: expected iotdb://[user[:password]@]HOST:PORT")
    try:
        port = u.port or 6667
    except ValueError:
        raise UserError(f"target iotdb: URL {url!r}: the port is not a number") from None
    return u.hostname, port, unquote(u.username or "root"), unquote(u.password or "root")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:1000] or type(exc).__name__


class IotdbTarget(Target):
    name = "iotdb"
    needs_url = True
    url_example = "iotdb://HOST:6667"
    format = "csv"
    count_unit = "values"
    server_kind = "iotdb"
    options_model = IotdbOptions
    own_disk_figure = "iotdb_data_bytes"
    dialects = {"iotdb": IotdbTree}
    value_checks = {k: None for k in STAT_KINDS}     # stats.py: integer sums in two exact halves

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.host, self.port, self._user, self._password = _parse_url(self.url)
        self.db = self.options.database
        database_path(self.db)                               # a bad name: one UserError now
        self.what = f"iotdb at {self.host}:{self.port}"
        self._free: list = []                                # idle Sessions
        self._all: list = []
        self._tables: Tables | None = None
        self._arrow: CsvToArrow | None = None
        self._unit = 1                                       # the server's time unit, in ns
        self._version = "?"
        self._paths: dict = {}                               # (measurement, tag values) -> device path

    # ---- connect ------------------------------------------------------------------------
    def _new_session(self):
        from iotdb.Session import Session

        quiet_client_logs()
        s = Session(self.host, self.port, self._user, self._password, fetch_size=self.options.fetch_size,
                    zone_id="UTC", enable_redirection=False,
                    connection_timeout_in_ms=int(self.options.timeout * 1000))
        s.open(False)
        return s

    async def _session(self):
        if self._free:
            return self._free.pop()
        s = await blocking.call(self._new_session)
        self._all.append(s)
        return s

    async def _call(self, fn, *args):
        """fn(session, *args) in a thread on a pooled session; the client's errors mapped."""
        s = None
        try:
            s = await self._session()
            out = await blocking.call(fn, s, *args)
        except BaseException as exc:
            self._drop(s)
            raise self._mapped(exc) from None
        self._free.append(s)
        return out

    def _drop(self, s) -> None:
        if s is None:
            return
        if s in self._all:
            self._all.remove(s)
        # a session dropped after an error (or a cancellation: the stall bound) is closed in a thread
        # nobody waits for: its close is an RPC, which a stopped server never answers, and the event
        # loop must not block on it. A failure says nothing new (the caller raises the error that
        # dropped it).
        threading.Thread(target=_close_quietly, args=(s,), daemon=True).start()

    def _mapped(self, exc: BaseException) -> BaseException:
        from iotdb.utils.exception import IoTDBConnectionException, StatementExecutionException
        from thrift.Thrift import TException

        if isinstance(exc, StatementExecutionException):
            code = getattr(getattr(exc, "status", None), "code", None) or _code(str(exc))
            if code in PUSH_BACK:
                return Retryable(f"{self.what}: {_one_line(exc)}")
            return Fatal(f"{self.what}: {_one_line(exc)}")
        if isinstance(exc, (IoTDBConnectionException, TException, OSError)):
            return Retryable(f"{self.what}: connection lost: {_one_line(exc)}")
        return exc

    async def open(self) -> None:
        try:
            s = await blocking.call(self._new_session)
        except Exception as exc:
            raise UserError(f"target iotdb: cannot reach an IoTDB server at {self.host}:{self.port}: "
                            f"{_one_line(exc)}") from None
        self._all.append(s)
        self._free.append(s)
        self._unit = {"ns": 1, "us": 1000, "ms": 10**6}.get(getattr(s, "_Session__time_precision", "ms"), 10**6)
        df = await self._query("SHOW VERSION")
        self._version = str(df.iloc[0, 0]) if len(df) else "?"

    async def close(self) -> None:
        for s in self._all:
            await blocking.call(s.close)
        self._all, self._free = [], []

    async def version(self) -> str:
        return self._version

    async def _query(self, sql: str):
        ms = int(self.options.timeout * 1000)
        return await self._call(lambda s: s.execute_query_statement(sql, ms).todf())

    async def _statement(self, sql: str) -> None:
        await self._call(lambda s: s.execute_non_query_statement(sql))

    # ---- schema -------------------------------------------------------------------------
    async def create(self, tables: Tables, if_exists: str) -> None:
        dbs = await self._query(f"SHOW DATABASES {database_path(self.db)}")
        if not len(dbs):
            await self._statement(f"CREATE DATABASE {database_path(self.db)}")
        for t in tables:
            n = await self._count_table(t)
            if n and if_exists == "abort":
                raise exists_error("iotdb", f"measurement {t.name!r} under {database_path(self.db)} ({n:,} values)")
            under = f"{measurement_path(self.db, t.name)}.**"
            if if_exists == "drop" and len(await self._query(f"SHOW TIMESERIES {under}")):
                await self._statement(f"DELETE TIMESERIES {under}")
        await self.attach(tables)

    async def attach(self, tables: Tables) -> None:
        for t in tables:
            strings = [f.name for f in t.fields if f.type not in ARROW_TYPES]
            if strings:
                raise UserError(f"target iotdb: measurement {t.name}: field {strings[0]!r} holds strings; "
                                f"tsbench loads numbers only into IoTDB (its TEXT tablets are packed per value)")
        self._tables = tables
        self._arrow = CsvToArrow(tables, "ns", "iotdb")

    # ---- load ---------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        tablets = self._tablets(batch.data)
        if tablets:
            await self._call(lambda s: s.insert_aligned_tablets(tablets))

    def _tablets(self, data) -> list:
        out = []
        for t, arrow in self._arrow.parts(data):
            out += device_tablets(self.db, t, arrow, self._unit, self._paths)
        return out

    # ---- verify -------------------------------------------------------------------------
    async def _count_table(self, t) -> int:
        df = await self._query(f"SELECT count(*) FROM {measurement_path(self.db, t.name)}.** ALIGN BY DEVICE")
        cols = [c for c in df.columns if str(c).startswith("count(")]
        return int(df[cols].fillna(0).to_numpy().sum()) if cols and len(df) else 0

    async def count(self, tables: Tables) -> int:
        return sum([await self._count_table(t) for t in tables])

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """Per field count, sum, min and max, and the devices holding values, over the
        dataset's window: one aggregation aligned by device (stats.py)."""
        lo, hi = tables.start_ns // self._unit, -(-tables.end_ns // self._unit)
        merge = FieldMerge(table, self.what)
        series = stats.read(table, await self._query(stats.sql(self.db, table, lo, hi)), merge, self.what)
        return merge.stats(series)

    async def flush(self) -> None:
        await self._statement("FLUSH")

    async def compact(self) -> None:
        await self._statement("FLUSH")

    async def disk_bytes(self) -> dict[str, int]:
        st = local_state("iotdb", self.url)
        if st is None:
            return {}
        sizes = {}
        for key, d in (("iotdb_data_bytes", "data_dir"), ("iotdb_wal_bytes", "wal_dir")):
            if st.extra.get(d):
                sizes[key] = await asyncio.to_thread(allocated_bytes, st.extra[d])
        return sizes

    # ---- queries ------------------------------------------------------------------------
    def dialect(self) -> IotdbTree:
        return IotdbTree(self.db, {t.name: t for t in self._tables} if self._tables else {}, self._unit)

    async def prepare(self, workers: int) -> None:
        while len(self._all) < workers:
            s = await blocking.call(self._new_session)
            self._all.append(s)
            self._free.append(s)

    async def query(self, q: IotdbQuery) -> Answer:
        """The SQL, sent and read to the driver's whole answer (a DataFrame)."""
        if q.sql is None:
            return Answer(None, None, None)
        return Answer(await self._query(q.sql), None, None)

    def finish(self, q: IotdbQuery, answer) -> list[tuple] | None:
        """The last shape's rows computed from the DataFrame (client_s); none without a
        statement (the query matches no time series)."""
        if not q.client:
            return None
        return canonical(q, answer.raw) if answer.raw is not None else []

    def canonical(self, q: IotdbQuery, answer) -> list[tuple]:
        return canonical(q, answer.raw)

    def answer_lines(self, q: IotdbQuery, answer, max_rows: int) -> list[str]:
        """The driver's result set (a DataFrame) as a table: its column names and rows."""
        df = answer.raw
        if df is None:
            return ["(no statement sent: the query matches no time series)"]
        rows = list(df.head(max_rows).itertuples(index=False, name=None))
        return printable.table_lines([str(c) for c in df.columns], rows, max_rows, len(df))

    async def drop_caches(self) -> str | None:
        return "IoTDB has no statement to drop its caches; restart the server (server: local) for a cold cache"


def _close_quietly(s) -> None:
    with contextlib.suppress(Exception):
        s.close()


def _code(text: str) -> int | None:
    head = text.split(":", 1)[0].strip()
    return int(head) if head.isdigit() else None


# ---- tablets: numpy columns, no Python per row ----------------------------------------------

def device_keys(arrow: pa.Table, tags) -> np.ndarray:
    """A device number per row: equal for rows of one tag set, a null tag apart from every
    value. The tags' dictionary codes are folded into one int64, compacted (np.unique)
    only when the next fold could overflow."""
    key, mult = np.zeros(arrow.num_rows, dtype=np.int64), 1
    for k in tags:
        enc = pc.dictionary_encode(arrow.column(k).combine_chunks())
        size = len(enc.dictionary) + 1                       # code 0: null
        if mult * size >= 1 << 62:
            key = np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)
            mult = int(key.max()) + 1
        key += (enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64) + 1) * mult
        mult *= size
    return key


def device_runs(key: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the rows ordered by device then time; where each device's run starts in that order;
    each run's length): one sort."""
    order = np.lexsort((times, key))
    k = key[order]
    starts = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1]))) if len(k) else np.zeros(0, np.int64)
    return order, starts, np.diff(np.append(starts, len(k)))


def device_major(block: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The (fields x rows) block rearranged so each run of rows is its own (fields x run)
    block, one after another: a device's values become one contiguous slice."""
    fields, rows = block.shape
    lo = np.repeat(starts, counts)
    n = np.repeat(counts, counts)
    dest = fields * lo + np.arange(fields)[:, None] * n + (np.arange(rows) - lo)
    out = np.empty(block.size, dtype=block.dtype)
    out[dest.reshape(-1)] = block.reshape(-1)
    return out


class Tablet:
    """One device's rows in IoTDB's tablet form, already serialized: what the client's
    insert_aligned_tablets reads of a tablet (the getters below), built from numpy blocks."""

    __slots__ = ("path", "names", "types", "times", "values", "rows")

    def __init__(self, path: str, names: list[str], types: list, times: bytes, values: bytes, rows: int):
        self.path, self.names, self.types, self.times, self.values, self.rows = \
            path, names, types, times, values, rows

    def get_insert_target_name(self) -> str:
        return self.path

    def get_measurements(self) -> list[str]:
        return self.names

    def get_data_types(self) -> list:
        return self.types

    def get_binary_timestamps(self) -> bytes:
        return self.times

    def get_binary_values(self) -> bytes:
        return self.values

    def get_row_number(self) -> int:
        return self.rows


def _bitmaps(null: np.ndarray) -> bytes:
    """The null bitmaps of one device's fields (null: fields x rows): per field a flag byte,
    then, if set, bit i of byte i // 8 (LSB first) marking row i null, rows // 8 + 1 bytes."""
    n, out = null.shape[1], []
    for col in null:
        if col.any():
            bits = np.packbits(col, bitorder="little").tobytes()
            out.append(b"\1" + bits + b"\0" * (n // 8 + 1 - len(bits)))
        else:
            out.append(b"\0")
    return b"".join(out)


def device_tablets(db: str, t, arrow: pa.Table, unit_ns: int, paths: dict) -> list[Tablet]:
    """The tablets of one measurement's rows: rows ordered by device and time once, each
    field an 8-byte big-endian column, rearranged so each device's values are one slice
    of one buffer; paths caches the device paths by tag values."""
    from iotdb.utils.IoTDBConstants import TSDataType

    times = arrow.column("time").combine_chunks().cast(pa.int64()).to_numpy()
    if unit_ns != 1:
        times = times // unit_ns
    key = device_keys(arrow, t.tags) if t.tags else np.zeros(arrow.num_rows, dtype=np.int64)
    order, starts, counts = device_runs(key, times)
    cols = [arrow.column(f.name).combine_chunks() for f in t.fields]
    block = np.stack([_column(c)[order].astype(">i8" if f.type == "int" else ">f8").view(np.uint64)
                      for c, f in zip(cols, t.fields)])
    null = np.stack([c.is_null().to_numpy(zero_copy_only=False)[order] for c in cols]) \
        if any(c.null_count for c in cols) else None
    values = device_major(block, starts, counts).tobytes()
    stamps = times[order].astype(">i8").tobytes()
    names = [node(f) for f in t.field_names]
    types = [TSDataType.INT64 if f.type == "int" else TSDataType.DOUBLE for f in t.fields]
    first = order[starts]
    tag_values = zip(*(arrow.column(k).take(first).to_pylist() for k in t.tags)) if t.tags else [()] * len(starts)
    width, out = 8 * len(cols), []
    for lo, n, tv in zip(starts.tolist(), counts.tolist(), tag_values):
        path = paths.get((t.name, tv))
        if path is None:
            path = paths[t.name, tv] = device_path(db, t.name, t.tags, tv)
        vals = values[width * lo: width * (lo + n)]
        if null is not None and null[:, lo:lo + n].any():
            vals += _bitmaps(null[:, lo:lo + n])
        out.append(Tablet(path, names, types, stamps[8 * lo: 8 * (lo + n)], vals, n))
    return out


def _column(c: pa.Array) -> np.ndarray:
    """A numeric column as numpy, its nulls as 0 (the bitmaps mark them)."""
    return (c.fill_null(0) if c.null_count else c).to_numpy(zero_copy_only=False)
