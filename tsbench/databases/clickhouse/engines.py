"""The two ways to reach ClickHouse (phases 2-5), one small class each with the
same calls (open, reserve, command, arrow, insert, close): in-process through chdb
(the engine as a library, on a data dir) and a ClickHouse server over HTTP
through clickhouse-connect. Both are blocking; the target runs them in worker
threads. An answer is ClickHouse's ArrowStream bytes, an insert an Arrow table.

chdb hosts one engine per process, bound to one data dir: any number of
connections to that dir may be open at once (one per thread in flight), and a
different dir opens only after every connection to the first was closed."""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import fcntl
import logging
import os
import pathlib
import re
import threading
import urllib.parse

import pyarrow as pa

from tsbench.core import secrets
from tsbench.core.errors import Fatal, Retryable, UserError

# ClickHouse error codes that are push-back, not refusal: retry the same batch later
PUSHBACK_CODES = frozenset({
    159,    # TIMEOUT_EXCEEDED
    202,    # TOO_MANY_SIMULTANEOUS_QUERIES
    203,    # NO_FREE_CONNECTION
    209,    # SOCKET_TIMEOUT
    210,    # NETWORK_ERROR
    241,    # MEMORY_LIMIT_EXCEEDED
    252,    # TOO_MANY_PARTS
})
PUSHBACK_STATUS = re.compile(r"\bHTTP status (429|502|503|504)\b")
_CODE = re.compile(r"\b[Cc]ode: (\d+)\b")


def one_line(exc: BaseException) -> str:
    """An engine's or driver's error as one line of its own words (no stack trace)."""
    text = str(exc).split("Stack trace")[0]
    return " ".join(x.strip() for x in text.strip().splitlines() if x.strip())[:600] or type(exc).__name__


def error_code(exc: BaseException) -> int | None:
    """ClickHouse's error code: the driver's attribute, else the "Code: N" of the message."""
    code = getattr(exc, "code", None)
    if isinstance(code, int) or (isinstance(code, str) and code.isdigit()):
        return int(code)
    m = _CODE.search(str(exc))
    return int(m.group(1)) if m else None


def refusal(what: str, exc: BaseException, network: bool = False) -> Exception:
    """Retryable for push-back (an overload code, a lost connection), else Fatal; both in one line."""
    msg = f"{what}: {one_line(exc)}"
    code = error_code(exc)
    if code in PUSHBACK_CODES or PUSHBACK_STATUS.search(str(exc)) or (network and code is None):
        return Retryable(msg)
    return Fatal(msg)


_OPEN_DIRS: collections.Counter = collections.Counter()    # data dir -> chdb connections this process holds


def held_elsewhere(path: pathlib.Path) -> bool:
    """Whether another process runs chdb on this data dir (it holds the flock on its status
    file). Asked only of a dir this process has not opened: its own engine holds that lock too."""
    try:
        fd = os.open(path / "status", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)                 # closing drops the lock taken for the test


def arrow_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


class Chdb:
    """In-process: a pool of chdb connections to one data dir, one per thread in flight."""

    what = "chdb"

    def __init__(self, path: pathlib.Path, settings: dict):
        self.path, self.settings = path, settings
        self._free: list = []
        self._all: list = []
        self._lock = threading.Lock()

    def open(self) -> None:
        if not self.path.parent.is_dir():
            raise UserError(f"target clickhouse: directory {self.path.parent} does not exist")
        with self._conn():           # fails here, not mid-load, if another data dir is open in this process
            pass

    def _connect(self):
        import chdb

        if not _OPEN_DIRS[self.path] and held_elsewhere(self.path):
            raise UserError(f"target clickhouse: {self.path} is open in another process "
                            f"(chdb runs one process per data dir)")
        opts = "&".join(f"{k}={v}" for k, v in self.settings.items())
        try:
            c = chdb.connect(f"{self.path}?{opts}" if opts else str(self.path))
        except Exception as exc:                  # chdb raises RuntimeError with the engine's words
            raise UserError(f"target clickhouse: cannot open {self.path} in-process (chdb): {one_line(exc)}") from None
        with self._lock:
            self._all.append(c)
            _OPEN_DIRS[self.path] += 1
        return c

    @contextlib.contextmanager
    def _conn(self):
        with self._lock:
            c = self._free.pop() if self._free else None
        c = c or self._connect()
        try:
            yield c
        finally:
            with self._lock:
                self._free.append(c)

    def reserve(self, n: int) -> None:
        """At least n connections open (one per query in flight), made before a timed pass."""
        while len(self._all) < n:
            c = self._connect()
            with self._lock:
                self._free.append(c)

    def command(self, sql: str) -> None:
        self.arrow(sql)

    def arrow(self, sql: str) -> bytes:
        with self._conn() as c:
            try:
                return c.query(sql, "ArrowStream").bytes()
            except Exception as exc:
                raise refusal("chdb", exc) from None

    def insert(self, table: str, data: pa.Table) -> None:
        body = arrow_stream(data)
        with self._conn() as c:
            try:
                ins = c.send_insert(f"INSERT INTO {table}", "ArrowStream")
            except Exception as exc:
                raise refusal("chdb", exc) from None
            try:
                ins.append(body)
                ins.finish()
            except Exception as exc:
                with contextlib.suppress(Exception):
                    ins.cancel()
                raise refusal("chdb", exc) from None

    def close(self) -> None:
        """Close every connection: the engine shuts down with the last one, freeing its dir."""
        with self._lock:
            conns, self._all, self._free = self._all, [], []
            _OPEN_DIRS[self.path] -= len(conns)
        for c in conns:
            c.close()


class HttpServer:
    """A ClickHouse server by URL (http[s]://[user[:password]@]host[:port]): one
    clickhouse-connect client without a session, which is thread-safe."""

    what = "clickhouse"

    def __init__(self, url: str, settings: dict):
        self.url, self.settings = url, settings
        self.client = None

    def open(self) -> None:
        import clickhouse_connect

        logging.getLogger("clickhouse_connect").setLevel(logging.CRITICAL)   # its errors are raised to us: one line
        u = urllib.parse.urlsplit(self.url)
        secure = u.scheme == "https"
        try:
            self.client = clickhouse_connect.get_client(
                host=u.hostname or "localhost", port=u.port or (8443 if secure else 8123), secure=secure,
                username=urllib.parse.unquote(u.username or "default"),
                password=urllib.parse.unquote(u.password or ""), autogenerate_session_id=False,
                connect_timeout=10, send_receive_timeout=300, settings=self.settings)
        except Exception as exc:
            shown = secrets.mask(self.url)
            if error_code(exc) is not None:           # it answered: ClickHouse's words (a login refused, ...)
                raise UserError(f"target clickhouse: {shown}: {one_line(exc)}") from None
            raise UserError(f"target clickhouse: cannot reach {shown}: {_reason(exc)}") from None

    def reserve(self, n: int) -> None:
        """n keep-alive connections in the client's pool (n requests at once), before a timed pass."""
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            list(pool.map(lambda _: self.command("SELECT 1"), range(n)))

    def command(self, sql: str) -> None:
        self._call(self.client.command, sql)

    def arrow(self, sql: str) -> bytes:
        return self._call(self.client.raw_query, sql, fmt="ArrowStream")

    def insert(self, table: str, data: pa.Table) -> None:
        self._call(self.client.raw_insert, table, data.column_names, arrow_stream(data), fmt="ArrowStream")

    def _call(self, fn, *args, **kw):
        from clickhouse_connect.driver.exceptions import ClickHouseError, OperationalError

        try:
            return fn(*args, **kw)
        except OperationalError as exc:
            raise refusal("clickhouse", exc, network=True) from None
        except ClickHouseError as exc:
            raise refusal("clickhouse", exc) from None

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None


def _reason(exc: BaseException) -> str:
    """Why a server could not be reached, in a few words (the root cause, not the retry chatter)."""
    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    text = one_line(root)
    m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    return m.group(1).strip() if m else secrets.mask(text)[:200]
