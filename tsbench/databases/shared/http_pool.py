"""Phase 4 (execute): the keep-alive connections of timed query requests to one HTTP
server, as asyncio protocols (http_exchange reads each answer with httptools). A
request takes an idle connection, or opens one (timed apart: connect_s) up to the
pool's limit, or waits for one; it is timed from the write to the last byte (and the
body's first byte), bounded by the pool's timeout; its connection goes back idle
when the answer allows keep-alive. A connection the server closed while idle is
dropped, and a request that meets one closing as it is sent goes again once on a
fresh connection (the lost time counted with connect_s, not in the latency). https
URLs go over asyncio's TLS with the default verifying context."""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
import urllib.parse
from dataclasses import dataclass

from tsbench.databases.shared.http_exchange import BadResponse, Exchange, Unanswered, request_bytes

CONNECT_TIMEOUT_S = 10.0       # opening a connection (aiohttp's sock_connect, as the write path has)


class TransportError(Exception):
    """A request without a whole answer: the reason, in a few words (no secrets)."""


@dataclass
class Reply:
    """A timed request's answer: status, body, seconds from the write to the body's first
    byte (the last when there is no body) and to its last byte, and the seconds spent
    opening a connection for it (None: an open one was reused)."""

    status: int
    body: bytes
    ttfb: float
    seconds: float
    connect_s: float | None


class Connection(asyncio.Protocol):
    """One keep-alive connection: exchange() writes a request and awaits its answer."""

    def __init__(self, pool: KeepAlivePool):
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.open = False
        self.used = False               # carried a request before: the server may have closed it meanwhile

    def connection_made(self, transport) -> None:
        self.transport, self.open = transport, True

    def data_received(self, data: bytes) -> None:
        ex = self.exchange
        if ex is None or ex.done.done():
            self.close()                # bytes nobody asked for: the connection's state is unknown
            return
        ex.feed(data)

    def connection_lost(self, exc) -> None:
        self.open = False
        self.pool.lost(self)
        if self.exchange is not None:
            self.exchange.ended(exc)

    def close(self) -> None:
        """Close at once (unsent bytes dropped): after an answer that ends keep-alive, or a fault."""
        if self.transport is not None and self.open:
            self.transport.abort()
        self.open = False

    async def send(self, request: bytes, head_only: bool, timeout: float) -> Exchange:
        """Write the request, await the whole answer (at most timeout seconds)."""
        loop = asyncio.get_running_loop()
        ex = self.exchange = Exchange(loop.create_future(), head_only)
        timer = loop.call_later(timeout, ex.fail, asyncio.TimeoutError())
        try:
            self.transport.write(request)
            return await ex.done
        finally:
            timer.cancel()
            self.exchange = None


class KeepAlivePool:
    """Keep-alive connections to the server of base_url (http or https), at most limit open."""

    def __init__(self, base_url: str, limit: int = 64, timeout: float = 300.0):
        u = urllib.parse.urlsplit(base_url)
        self.host = u.hostname or "localhost"
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.host_header = u.netloc.rpartition("@")[2]
        self.ssl = ssl.create_default_context() if u.scheme == "https" else None
        self.limit, self.timeout = limit, timeout
        self.idle: list[Connection] = []
        self.busy: set[Connection] = set()
        self.opening = 0
        self.waiters: collections.deque[asyncio.Future] = collections.deque()

    async def send(self, method: str, target: str, headers: dict, body: bytes = b"") -> Reply:
        """One request, timed; TransportError when no whole answer came (within the timeout)."""
        try:
            request = request_bytes(method, target, self.host_header, headers, body)
        except ValueError as exc:
            raise TransportError(str(exc)) from None
        conn, connect_s = await self._take(fresh=False)
        t0 = time.perf_counter()
        try:
            ex = await self._send_on(conn, request, method == "HEAD")
        except _Stale:
            lost = time.perf_counter() - t0
            conn, connect_s = await self._take(fresh=True)
            connect_s = (connect_s or 0.0) + lost
            t0 = time.perf_counter()
            ex = await self._send_on(conn, request, method == "HEAD")
        t2 = time.perf_counter()
        return Reply(ex.status, ex.body, (ex.first or t2) - t0, t2 - t0, connect_s)

    async def _send_on(self, conn: Connection, request: bytes, head_only: bool) -> Exchange:
        """The request on conn, which goes back idle after a keep-alive answer, else closes."""
        reused = conn.used
        conn.used = True
        try:
            ex = await conn.send(request, head_only, self.timeout)
        except BadResponse as exc:
            conn.close()
            self._drop(conn)
            if reused and isinstance(exc, Unanswered):
                raise _Stale() from None
            raise TransportError(str(exc)) from None
        except asyncio.TimeoutError:
            conn.close()
            self._drop(conn)
            raise TransportError(f"timed out after {self.timeout:g} s") from None
        except BaseException:               # cancelled mid-answer: the connection's state is unknown
            conn.close()
            self._drop(conn)
            raise
        self._give_back(conn, ex.keep_alive)
        return ex

    async def warm(self, n: int, method: str, target: str, headers: dict) -> None:
        """n connections open (n requests at once), before timing."""
        await asyncio.gather(*(self.send(method, target, headers) for _ in range(n)))

    # ---- the pool ---------------------------------------------------------------------------------
    async def _take(self, fresh: bool) -> tuple[Connection, float | None]:
        """An idle connection (unless fresh), else a new one (its opening timed), else the
        first given back (waiting at most the timeout)."""
        while True:
            while self.idle and not fresh:
                conn = self.idle.pop()
                if conn.open:
                    self.busy.add(conn)
                    return conn, None
            if len(self.busy) + len(self.idle) + self.opening < self.limit:
                t = time.perf_counter()
                conn = await self._connect()
                return conn, time.perf_counter() - t
            if fresh and self.idle:
                self.idle.pop(0).close()        # room for a fresh one
                continue
            await self._wait()

    async def _wait(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter, self.timeout)
        except asyncio.TimeoutError:
            raise TransportError(f"timed out after {self.timeout:g} s waiting for one of "
                                 f"{self.limit} connections") from None
        finally:
            if waiter in self.waiters:
                self.waiters.remove(waiter)

    async def _connect(self) -> Connection:
        self.opening += 1
        try:
            loop = asyncio.get_running_loop()
            _, conn = await asyncio.wait_for(
                loop.create_connection(lambda: Connection(self), self.host, self.port, ssl=self.ssl),
                CONNECT_TIMEOUT_S)
        except (OSError, asyncio.TimeoutError) as exc:
            why = "timed out" if isinstance(exc, asyncio.TimeoutError) else (exc.strerror or str(exc) or type(exc).__name__)
            raise TransportError(f"cannot connect to {self.host}:{self.port}: {why}") from None
        finally:
            self.opening -= 1
            self._wake()
        self.busy.add(conn)
        return conn

    def _give_back(self, conn: Connection, keep_alive: bool) -> None:
        self.busy.discard(conn)
        if keep_alive and conn.open:
            self.idle.append(conn)
        else:
            conn.close()
        self._wake()

    def _drop(self, conn: Connection) -> None:
        self.busy.discard(conn)
        self._wake()

    def lost(self, conn: Connection) -> None:
        """conn closed (by either side): no longer in the pool."""
        if conn in self.idle:
            self.idle.remove(conn)
        self._drop(conn)

    def _wake(self) -> None:
        """A waiting request may go on: a connection went idle, or there is room for one."""
        while self.waiters:
            w = self.waiters.popleft()
            if not w.done():
                w.set_result(None)
                return

    def close(self) -> None:
        for conn in [*self.idle, *self.busy]:
            conn.close()
        self.idle.clear()
        self.busy.clear()


class _Stale(Exception):
    """A reused connection closed without a byte of answer: the server had dropped it."""

