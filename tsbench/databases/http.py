"""Shared HTTP layer of the targets that speak HTTP: the write path (phase 2:
one aiohttp session per target, server push-back mapped to Retryable, other
refusals to Fatal with the server's own words) and the timed query request
(phase 4: keep-alive connections opened before the timer, the time to the first
and last byte of the body, a connection opened during a request timed apart), and
the gzip option of the targets that post text bodies (GzipOption, Gzip: each batch
compressed in the load worker that sends it, by zlib in C)."""

from __future__ import annotations

import asyncio
import inspect
import socket
import time
import zlib
from dataclasses import dataclass

import aiohttp
from pydantic import BaseModel, Field, model_validator

from ..errors import UserError
from ..errors import Fatal, Retryable

PUSHBACK_STATUS = frozenset({429, 502, 503, 504})
GZIP_LEVEL = 6             # zlib's default level, and Go's: what TSBS's loaders send
UNJOIN_BYTES = 1 << 16     # bodies this big go after the headers in writes of their own (_Unjoined)
SEND_BUFFER = 4 << 20      # bytes asked of SO_SNDBUF (Linux doubles it; capped by net.core.wmem_max)
KEEPALIVE_S = 300.0        # idle keep-alive connections kept this long (aiohttp's default: 15 s)


def batch_answer(what: str, status: int, body: bytes, pushback_words: tuple[str, ...]) -> bytes:
    """The answer to a POSTed batch: a 2xx's body; push-back (PUSHBACK_STATUS, or one of
    pushback_words in the body) raises Retryable, any other status Fatal with the server's words."""
    if status < 300:
        return body
    text = body.decode("utf-8", "replace").strip()
    msg = f"{what}: HTTP {status}: {text[:500] or '(empty body)'}"
    if status in PUSHBACK_STATUS or any(w in text for w in pushback_words):
        raise Retryable(msg)
    raise Fatal(msg)


class _Unjoined(aiohttp.BytesPayload):
    """A batch's body sent in a write of its own after the request's headers. aiohttp joins
    the headers and the first piece of a body into one bytes object before Python 3.12.9
    (no safe writelines): a copy of every batch into fresh memory, the dearest step of
    the write path after the kernel's own copy."""

    async def write(self, writer) -> None:
        await self.write_with_length(writer, None)

    async def write_with_length(self, writer, content_length) -> None:
        await writer.write(b"")              # the buffered headers go alone
        data = self._value if content_length is None else self._value[:content_length]
        await writer.write(data)


def wire_body(data):
    """What HttpClient.post hands aiohttp: a big bytes-like body unjoined, anything else as it is."""
    if isinstance(data, (bytes, bytearray, memoryview)) and len(data) >= UNJOIN_BYTES:
        return _Unjoined(data)
    return data


class GzipOption(BaseModel):
    """-O gzip=true: request bodies gzip'd (Content-Encoding: gzip) at -O gzip_level=N,
    1 (fastest) to 9 (smallest); mixed into the options of targets whose server takes them."""

    gzip: bool = False
    gzip_level: int = Field(GZIP_LEVEL, ge=1, le=9)

    @model_validator(mode="after")
    def _level_needs_gzip(self):
        if "gzip_level" in self.model_fields_set and "gzip" not in self.model_fields_set:
            raise ValueError("gzip_level needs gzip=true")
        return self


class Gzip:
    """A target's request bodies as its gzip option says: body(data) gzip'd at the level (a
    whole gzip member, mtime 0) or as it is; headers with Content-Encoding: gzip if so."""

    def __init__(self, options: GzipOption, headers: dict[str, str] | None = None):
        self.level = options.gzip_level if options.gzip else None
        self.headers = dict(headers or {})
        if self.level is not None:
            self.headers["Content-Encoding"] = "gzip"

    async def body(self, data):
        """data as it goes on the wire: gzip'd in a thread of the event loop's pool (zlib lets
        go of the GIL while it deflates, so the workers' batches compress side by side)."""
        if self.level is None:
            return data
        return await asyncio.to_thread(zlib.compress, data, self.level, wbits=31)


@dataclass
class Timed:
    """One timed request: status, body, seconds to the body's first and last byte
    (connection set-up excluded) and the seconds spent opening a connection (None: reused)."""

    status: int
    body: bytes
    ttfb: float | None         # None: not seen (a client library answering whole)
    seconds: float
    connect_s: float | None


def _connect_trace() -> aiohttp.TraceConfig:
    """Times a connection opened during a request into its trace context (a dict)."""
    tc = aiohttp.TraceConfig()

    async def start(session, ctx, params):
        if isinstance(ctx.trace_request_ctx, dict):
            ctx.trace_request_ctx["t0"] = time.perf_counter()

    async def end(session, ctx, params):
        if isinstance(ctx.trace_request_ctx, dict) and "t0" in ctx.trace_request_ctx:
            ctx.trace_request_ctx["connect_s"] = time.perf_counter() - ctx.trace_request_ctx.pop("t0")

    tc.on_connection_create_start.append(start)
    tc.on_connection_create_end.append(end)
    return tc


class HttpClient:
    def __init__(self, base_url: str, what: str, limit: int = 64, timeout: float = 300.0,
                 pushback_words: tuple[str, ...] = ()):
        self.base = base_url.rstrip("/")
        self.what = what
        self.pushback_words = pushback_words
        self._limit = limit
        self._timeout = timeout
        self.session: aiohttp.ClientSession | None = None

    async def open(self, probe_path: str | None = None) -> None:
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._limit, force_close=False, keepalive_timeout=KEEPALIVE_S,
                                           **_SOCKET_FACTORY),
            timeout=aiohttp.ClientTimeout(total=self._timeout, sock_connect=10),
            skip_auto_headers=("User-Agent",), auto_decompress=True, trace_configs=[_connect_trace()])
        if probe_path is not None:
            try:
                async with self.session.get(self.base + probe_path) as r:
                    await r.read()
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
                await self.close()
                raise UserError(f"{self.what}: cannot reach {self.base}: {_reason(exc)}") from None

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None

    async def post(self, path: str, data, params: dict | None = None, headers: dict | None = None) -> bytes:
        """POST a batch; 2xx returns the body, push-back raises Retryable, else Fatal."""
        try:
            async with self.session.post(self.base + path, data=wire_body(data), params=params,
                                         headers=headers) as r:
                body = await r.read()
                status = r.status
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, asyncio.TimeoutError,
                ConnectionError) as exc:
            raise Retryable(f"{self.what}: {_reason(exc)}") from None
        return batch_answer(self.what, status, body, self.pushback_words)

    async def warm(self, n: int, path: str) -> None:
        """Open n keep-alive connections (n concurrent GETs of a cheap path), before timing."""
        await asyncio.gather(*(self.get(path) for _ in range(n)))

    async def timed_post(self, path: str, data, headers: dict | None = None) -> Timed:
        return await self.timed("POST", path, data=data, headers=headers)

    async def timed(self, method: str, path: str, data=None, headers: dict | None = None,
                    params: dict | None = None) -> Timed:
        """Send a query (timed_post: POST) and time it: to the first byte of the body (some
        servers send the headers before the query has run) and to its last byte. A connection
        opened on the way is timed apart (connect_s) and not counted. Transport errors are Fatal."""
        ctx: dict = {}
        t0 = time.perf_counter()
        try:
            async with self.session.request(method, self.base + path, data=data, headers=headers, params=params,
                                            trace_request_ctx=ctx) as r:
                first = await r.content.readany()
                t1 = time.perf_counter()
                body = first + await r.content.read()
                status = r.status
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise Fatal(f"{self.what}: {path}: {_reason(exc)}") from None
        t2 = time.perf_counter()
        c = ctx.get("connect_s")
        return Timed(status, body, t1 - t0 - (c or 0.0), t2 - t0 - (c or 0.0), c)

    async def request(self, method: str, path: str, data=None, headers: dict | None = None,
                      params: dict | None = None) -> tuple[int, bytes]:
        """One request, any status back (the caller judges it); no answer at all is Fatal."""
        try:
            async with self.session.request(method, self.base + path, data=data, headers=headers,
                                            params=params) as r:
                return r.status, await r.read()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise Fatal(f"{self.what}: {method} {path}: {_reason(exc)}") from None

    async def get(self, path: str, params: dict | None = None) -> tuple[int, bytes]:
        return await self.request("GET", path, params=params)

    async def get_ok(self, path: str, params: dict | None = None) -> bytes:
        status, body = await self.get(path, params)
        if status >= 300:
            raise Fatal(f"{self.what}: GET {path}: HTTP {status}: {body.decode('utf-8', 'replace').strip()[:500]}")
        return body


def _big_send_buffer(addr_info) -> socket.socket:
    """A client socket whose send buffer holds a whole batch (SEND_BUFFER): the socket takes
    the body in one send(), and asyncio's transport has no rest to copy into its buffer."""
    family, type_, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=type_, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    return sock


# aiohttp 3.12+ lets the connector make its sockets; before, the kernel's own sizing
_SOCKET_FACTORY = {"socket_factory": _big_send_buffer} \
    if "socket_factory" in inspect.signature(aiohttp.TCPConnector).parameters else {}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    s = str(exc) or type(exc).__name__
    return s
