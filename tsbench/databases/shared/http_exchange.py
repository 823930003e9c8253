"""Phase 4 (execute): one timed request's answer, read by httptools (llhttp) from the
bytes of a keep-alive connection: its status, its body, the instant of the body's
first byte and whether the connection can carry the next request. The framing is
llhttp's (Content-Length, chunked, 1xx interim answers, 204/304 without a body);
this module adds only what llhttp leaves to its caller: an answer to HEAD has no
body, a body framed by neither length nor chunks ends with the connection, and a
gzip or deflate body is inflated (the query client asks for them as aiohttp did).
The request's own bytes are written here too (request_bytes)."""

from __future__ import annotations

import asyncio
import time
import zlib

import httptools


class BadResponse(Exception):
    """No whole answer came: the server's bytes are not an HTTP/1.x response, or the
    connection ended before the answer's end (the reason, in a few words)."""


class Unanswered(BadResponse):
    """The connection closed before any byte of the answer came."""


class Exchange:
    """One request's answer, fed the connection's bytes (feed) until done, a future
    resolved with this exchange (status, body, first, keep_alive) or failed with BadResponse."""

    __slots__ = ("parser", "done", "head_only", "status", "chunks", "body", "first", "encoding", "framed",
                 "keep_alive", "received")

    def __init__(self, done: asyncio.Future, head_only: bool = False):
        self.parser = httptools.HttpResponseParser(self)
        self.done = done
        self.head_only = head_only          # a HEAD request: the answer's headers are all of it
        self.status = 0
        self.chunks: list[bytes] = []
        self.body = b""
        self.first: float | None = None     # perf_counter() at the body's first byte
        self.encoding = b""                 # Content-Encoding, lower case
        self.framed = False                 # Content-Length or Transfer-Encoding said where the body ends
        self.keep_alive = False
        self.received = False               # any byte of the answer came

    def feed(self, data: bytes) -> None:
        """The connection's next bytes, parsed; a malformed answer fails the exchange."""
        self.received = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.fail(BadResponse(f"HTTP {self.status}: the server switched protocols"))
        except httptools.HttpParserError as exc:
            if not self.done.done():
                self.fail(BadResponse(f"not an HTTP/1.1 response: {exc}"))

    def ended(self, exc: BaseException | None) -> None:
        """The connection closed: the end of a body framed by nothing, else a cut answer."""
        if self.done.done():
            return
        if self.status and not self.framed and not self.head_only:
            self.keep_alive = False
            self._finish()
            return
        kind = BadResponse if self.received else Unanswered
        why = "the server closed the connection " + ("before the answer's end" if self.received else "without answering")
        self.fail(kind(f"{why}: {exc}" if exc else why))

    def fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)

    # ---- llhttp's callbacks -----------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-encoding":
            self.encoding = value.strip().lower()
        elif name == b"content-length" or name == b"transfer-encoding":
            self.framed = True

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        if self.head_only and self.status >= 200:
            self.keep_alive = self.framed and self.parser.should_keep_alive()
            self._finish()

    def on_body(self, body: bytes) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        if self.status < 200:               # an interim answer (100 Continue): the real one follows
            self.status, self.encoding, self.framed = 0, b"", False
            return
        self.keep_alive = self.parser.should_keep_alive()
        self._finish()

    def _finish(self) -> None:
        if self.done.done():
            return
        body = b"".join(self.chunks)
        if self.encoding and self.encoding != b"identity":
            try:
                body = inflate(self.encoding, body)
            except (zlib.error, ValueError) as exc:
                self.fail(BadResponse(f"HTTP {self.status}: a {self.encoding.decode('latin-1')} body that does "
                                      f"not inflate: {exc}"))
                return
        self.body = body
        self.done.set_result(self)


def inflate(encoding: bytes, body: bytes) -> bytes:
    """A body as the server meant it: gzip, or deflate (zlib-wrapped, or raw as some servers send)."""
    if encoding in (b"gzip", b"x-gzip"):
        return zlib.decompress(body, wbits=31)
    if encoding == b"deflate":
        try:
            return zlib.decompress(body)
        except zlib.error:
            return zlib.decompress(body, wbits=-15)
    raise ValueError(f"Content-Encoding {encoding.decode('latin-1')!r} was not asked for")


def request_bytes(method: str, target: str, host: str, headers: dict, body: bytes) -> bytes:
    """An HTTP/1.1 request: the request line, Host, the given headers and Content-Length
    (when there is a body, or the method sends one), then the body. A line break inside
    a header or the target is refused (ValueError): it would forge another header."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError("a line break inside a header or the request target")
    lines += ["", ""]
    return "\r\n".join(lines).encode("utf-8") + body
