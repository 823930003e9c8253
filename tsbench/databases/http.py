"""Shared HTTP write path for targets that take batches over HTTP (phase 2):
one aiohttp session per target, server push-back mapped to Retryable, other
refusals to Fatal with the server's own words."""

from __future__ import annotations

import asyncio

import aiohttp

from ..errors import UserError
from ..errors import Fatal, Retryable

PUSHBACK_STATUS = frozenset({429, 502, 503, 504})


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
            connector=aiohttp.TCPConnector(limit=self._limit, force_close=False),
            timeout=aiohttp.ClientTimeout(total=self._timeout, sock_connect=10),
            skip_auto_headers=("User-Agent",), auto_decompress=True)
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
            async with self.session.post(self.base + path, data=data, params=params, headers=headers) as r:
                body = await r.read()
                status = r.status
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, asyncio.TimeoutError,
                ConnectionError) as exc:
            raise Retryable(f"{self.what}: {_reason(exc)}") from None
        if status < 300:
            return body
        text = body.decode("utf-8", "replace").strip()
        msg = f"{self.what}: HTTP {status}: {text[:500] or '(empty body)'}"
        if status in PUSHBACK_STATUS or any(w in text for w in self.pushback_words):
            raise Retryable(msg)
        raise Fatal(msg)

    async def get(self, path: str, params: dict | None = None) -> tuple[int, bytes]:
        try:
            async with self.session.get(self.base + path, params=params) as r:
                return r.status, await r.read()
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise Fatal(f"{self.what}: {_reason(exc)}") from None

    async def get_ok(self, path: str, params: dict | None = None) -> bytes:
        status, body = await self.get(path, params)
        if status >= 300:
            raise Fatal(f"{self.what}: GET {path}: HTTP {status}: {body.decode('utf-8', 'replace').strip()[:500]}")
        return body


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    s = str(exc) or type(exc).__name__
    return s
