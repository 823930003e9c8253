"""Shared HTTP layer of the targets that speak HTTP: the write path (phase 2:
one aiohttp session per target, server push-back mapped to Retryable, other
refusals to Fatal with the server's own words) and the timed query request
(phase 4: on the lean keep-alive pool of http_pool, answers read by httptools:
connections opened before the timer, the time to the first and last byte of the
body, a connection opened during a request timed apart), and the gzip option of
the targets that post text bodies (GzipOption, Gzip: each batch compressed in the
load worker that sends it, by ISA-L's deflate in C)."""

from __future__ import annotations

import asyncio
import inspect
import socket
import urllib.parse
from dataclasses import dataclass

import aiohttp
import yarl
from isal import isal_zlib
from pydantic import BaseModel, Field, model_validator

from tsbench.core import bounds
from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.databases.shared.http_pool import KeepAlivePool, TransportError

PUSHBACK_STATUS = frozenset({429, 502, 503, 504})
GZIP_LEVEL = 6             # zlib's default level, and Go's: what TSBS's loaders send (ISA-L's 2 here)
ISAL_LEVEL = {1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 2, 7: 3, 8: 3, 9: 3}   # gzip_level -> ISA-L's level (it has 0-3)
UNJOIN_BYTES = 1 << 16     # bodies this big go after the headers in writes of their own (_Unjoined)
SEND_BUFFER = 4 << 20      # bytes asked of SO_SNDBUF (Linux doubles it; capped by net.core.wmem_max)
KEEPALIVE_S = 300.0        # idle keep-alive connections kept this long (aiohttp's default: 15 s)
# what a query asks besides its own headers: an answer as the server has it (identity), as TSBS's
# query runners ask; asking gzip, as aiohttp did, has the server compress every answer on the
# loopback (VictoriaMetrics: a quarter of a small query's latency, benchmarks/queries.py). A body
# a server compresses anyway is still inflated (gzip, deflate: http_exchange.py)
QUERY_HEADERS = {"Accept": "*/*", "Accept-Encoding": "identity"}


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


class PushTimeoutOption(BaseModel):
    """-O timeout=SECONDS: how long a write request may take before it counts as push-back;
    mixed into the options of targets that only push (no read-back of their own)."""

    timeout: float = Field(300.0, gt=0, le=bounds.MAX_SECONDS,
                           description="seconds per request before it counts as push-back")


class GzipOption(BaseModel):
    """-O gzip=true: request bodies gzip'd (Content-Encoding: gzip) at -O gzip_level=N, 1 to 9
    on zlib's scale, deflated by ISA-L at its level 1 for 1-3, 2 for 4-6, 3 for 7-9 (ISAL_LEVEL);
    mixed into the options of targets whose server takes them."""

    gzip: bool = Field(False, description="true: request bodies gzip'd (Content-Encoding: gzip)")
    gzip_level: int = Field(GZIP_LEVEL, ge=1, le=9,
                            description="the gzip level on zlib's scale, deflated by ISA-L at its level 1 (for 1-3), "
                                        "2 (4-6, the default: 0.5-1 ms of CPU per MB, 5.5x smaller) "
                                        "or 3 (7-9: twice the CPU, a little smaller); needs gzip=true")

    @model_validator(mode="after")
    def _level_needs_gzip(self):
        if "gzip_level" in self.model_fields_set and "gzip" not in self.model_fields_set:
            raise ValueError("gzip_level needs gzip=true")
        return self


def gzip_member(data, gzip_level: int) -> bytes:
    """data as one gzip member (mtime 0), gzip_level on zlib's 1-9 scale, deflated by ISA-L at the
    level ISAL_LEVEL maps it to: the one compressor of every target's request bodies."""
    return isal_zlib.compress(data, ISAL_LEVEL[gzip_level], wbits=31)


class Gzip:
    """A target's request bodies as its gzip option says: body(data) gzip'd at the ISA-L level
    of the option's (a whole gzip member, mtime 0) or as it is; headers with Content-Encoding:
    gzip if so."""

    def __init__(self, options: GzipOption, headers: dict[str, str] | None = None):
        self.level = options.gzip_level if options.gzip else None
        self.headers = dict(headers or {})
        if self.level is not None:
            self.headers["Content-Encoding"] = "gzip"

    async def body(self, data):
        """data as it goes on the wire: gzip'd by ISA-L in the event loop's thread. At 0.5-1 ms of
        CPU per MB a 10,000-row batch holds the loop 0.2-0.5 ms, and the hop to a pool thread
        (asyncio.to_thread, as with zlib) added 25-50% to the compressor's CPU."""
        if self.level is None:
            return data
        return gzip_member(data, self.level)


@dataclass
class Timed:
    """One request as the transport saw it: status, body, seconds to the body's first and
    last byte (connection set-up excluded) and the seconds spent opening a connection
    (None: reused). A query's latency is not this: the executor's timer measures it
    (execute/timer.py), and takes ttfb and connect_s from here."""

    status: int
    body: bytes
    ttfb: float | None         # None: not seen (a client library answering whole)
    seconds: float | None      # None: not seen (a client library)
    connect_s: float | None


class HttpClient:
    def __init__(self, base_url: str, what: str, limit: int = 64, timeout: float = 300.0,
                 pushback_words: tuple[str, ...] = ()):
        self.base = base_url.rstrip("/")
        self.what = what
        self.pushback_words = pushback_words
        self._limit = limit
        self._timeout = timeout
        self.session: aiohttp.ClientSession | None = None
        self.queries: KeepAlivePool | None = None       # the timed requests' connections
        self._targets: dict[str, str] = {}              # path -> request target, as aiohttp's URL spells it
        self._headers: dict[tuple, dict] = {}           # the caller's headers -> all a query sends
        self._auth = _basic_auth(self.base)

    async def open(self, probe_path: str | None = None) -> None:
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._limit, force_close=False, keepalive_timeout=KEEPALIVE_S,
                                           **_SOCKET_FACTORY),
            timeout=aiohttp.ClientTimeout(total=self._timeout, sock_connect=10),
            skip_auto_headers=("User-Agent",), auto_decompress=True)
        self.queries = KeepAlivePool(self.base, limit=self._limit, timeout=self._timeout)
        if probe_path is not None:
            try:
                async with self.session.get(self.base + probe_path) as r:
                    await r.read()
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                await self.close()
                raise UserError(f"{self.what}: cannot reach {self.base}: {_reason(exc)}") from None

    async def close(self) -> None:
        if self.queries is not None:
            self.queries.close()
            self.queries = None
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
        except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, ConnectionError) as exc:
            raise Retryable(f"{self.what}: {_reason(exc)}") from None
        return batch_answer(self.what, status, body, self.pushback_words)

    async def warm(self, n: int, path: str) -> None:
        """Open n keep-alive connections of the timed requests (n concurrent GETs of a cheap
        path), before timing."""
        try:
            await self.queries.warm(n, "GET", self._target(path, None), self._query_headers(None, None))
        except TransportError as exc:
            raise Fatal(f"{self.what}: GET {path}: {exc}") from None

    async def timed_post(self, path: str, data, headers: dict | None = None) -> Timed:
        return await self.timed("POST", path, data=data, headers=headers)

    async def timed(self, method: str, path: str, data=None, headers: dict | None = None,
                    params: dict | None = None) -> Timed:
        """Send a query (timed_post: POST) and time it: to the first byte of the body (some
        servers send the headers before the query has run) and to its last byte. A connection
        opened on the way is timed apart (connect_s) and not counted. Transport errors are Fatal."""
        body, content_type = _wire_form(data)
        try:
            r = await self.queries.send(method, self._target(path, params),
                                        self._query_headers(headers, content_type), body)
        except TransportError as exc:
            raise Fatal(f"{self.what}: {path}: {exc}") from None
        return Timed(r.status, r.body, r.ttfb, r.seconds, r.connect_s)

    def _target(self, path: str, params: dict | None) -> str:
        """The request target of base + path (+ params), encoded as aiohttp's URL (yarl) does."""
        if params:
            return yarl.URL(self.base + path).extend_query(params).raw_path_qs
        target = self._targets.get(path)
        if target is None:
            target = self._targets[path] = yarl.URL(self.base + path).raw_path_qs
        return target

    def _query_headers(self, headers: dict | None, content_type: str | None) -> dict:
        """QUERY_HEADERS, the URL's credentials, the body's Content-Type and the caller's
        headers (theirs win, whatever their case), merged once per set."""
        key = (tuple(headers.items()) if headers else (), content_type)
        merged = self._headers.get(key)
        if merged is None:
            given = {k.lower() for k in headers or ()}
            base = {**QUERY_HEADERS, **self._auth, **({"Content-Type": content_type} if content_type else {})}
            merged = {**{k: v for k, v in base.items() if k.lower() not in given}, **(headers or {})}
            if len(self._headers) > 256:
                self._headers.clear()
            self._headers[key] = merged
        return merged

    async def request(self, method: str, path: str, data=None, headers: dict | None = None,
                      params: dict | None = None) -> tuple[int, bytes]:
        """One request, any status back (the caller judges it); no answer at all is Fatal."""
        try:
            async with self.session.request(method, self.base + path, data=data, headers=headers,
                                            params=params) as r:
                return r.status, await r.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
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


def _wire_form(data) -> tuple[bytes, str | None]:
    """A query's body as bytes and the Content-Type aiohttp would give it: a dict as a
    urlencoded form, a str as UTF-8 text, bytes as they are (octet-stream)."""
    if data is None:
        return b"", None
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data), "application/octet-stream"
    if isinstance(data, str):
        return data.encode("utf-8"), "text/plain; charset=utf-8"
    return urllib.parse.urlencode(data, doseq=True).encode(), "application/x-www-form-urlencoded"


def _basic_auth(url: str) -> dict[str, str]:
    """Authorization: Basic from credentials in the URL (as aiohttp sends them), else nothing."""
    auth = aiohttp.BasicAuth.from_url(yarl.URL(url))
    return {"Authorization": auth.encode()} if auth else {}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    s = str(exc) or type(exc).__name__
    return s
