"""The official Python clients as the Elasticsearch target's transport (phases 2 and
4, target option client=library): one job, send a request through the library that
fits the server found at open() and give back its status and body bytes.

Which library: `opensearch-py` (AsyncOpenSearch) for OpenSearch and Elasticsearch 7
(every `elasticsearch` client from 7.14 on refuses servers without the
X-Elastic-Product header, its product check: OpenSearch and Elasticsearch before
7.14); `elasticsearch` (AsyncElasticsearch, the 8.x/9.x package) for Elasticsearch 8
and later, its requests marked compatible-with the server's major version (a 9.x
package would otherwise ask an 8.x server for version 9).

Bodies stay bytes both ways: the request bodies are the C-rendered bulk NDJSON and the
dialect's JSON, passed through the library's serializer untouched, and the answers
come back as the raw body (a serializer that does not parse), so target.py reads them
as it reads aiohttp's. The libraries' own retries are off (the loader retries).
The calls target.py makes of its HttpClient (post, timed_post, warm) are here too, with
the same errors: push-back (429, 502-504, es_rejected_execution_exception) and a
lost connection during a bulk are Retryable, other refusals Fatal with the server's
words; a library refusing the server is a one-line UserError naming the fix.
timed_post() reads no clock (the executor times send -> body read by the library):
no time to first byte (None), and a connection the library opens on the way is inside
the latency (prepare() warms the pool first)."""

from __future__ import annotations

import asyncio
import json
import warnings

from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.databases.shared.http import Timed, batch_answer

TIMEOUT_S = 300.0
POOL = 64
INSTALL = "pip install opensearch-py 'elasticsearch>=8,<10'"


class _Down(Exception):
    """The request did not get an answer (connection refused, reset, timed out)."""


def _ignore_server_warnings(category: type[Warning]) -> None:
    """The libraries turn a server's Warning headers (deprecations, e.g. reading a
    finished task from the system index .tasks) into Python warnings printed amid the
    progress; they are ignored, as client=http ignores the headers."""
    warnings.filterwarnings("ignore", category=category)


class _Raw:
    """A serializer of both libraries that leaves bodies as they are: bytes out, bytes in."""

    mimetype = "application/json"

    def dumps(self, data):
        return data

    def loads(self, data, *args):
        return data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)


class LibraryClient:
    """A library client behind the calls target.py makes (request, post, timed_post, warm)."""

    name = ""            # e.g. "opensearch-py 3.2.0"

    def __init__(self, url: str, what: str, pushback_words: tuple[str, ...]):
        self.url, self.what, self.pushback_words = url, what, pushback_words

    async def send(self, method: str, path: str, body: bytes | None, headers: dict,
                   params: dict | None = None) -> tuple[int, bytes]:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def request(self, method: str, path: str, body: bytes | None, headers: dict) -> tuple[int, bytes]:
        """Any status back with its body; a request without an answer is Fatal."""
        try:
            return await self.send(method, path, body, headers)
        except _Down as exc:
            raise Fatal(f"{self.what}: {method} {path}: {exc}") from None

    async def post(self, path: str, data, params: dict | None = None, headers: dict | None = None) -> bytes:
        """POST a batch (HttpClient.post's contract): 2xx the body, push-back Retryable, else Fatal."""
        try:
            status, body = await self.send("POST", path, bytes(data), headers or {}, params)
        except _Down as exc:
            raise Retryable(f"{self.what}: {exc}") from None
        return batch_answer(self.what, status, body, self.pushback_words)

    async def timed_post(self, path: str, data, headers: dict | None = None) -> Timed:
        """POST a query (HttpClient.timed_post's contract): the library's answer; the executor
        times it (no transport event seen: ttfb and connect_s None, seconds None)."""
        status, body = await self.request("POST", path, data, headers or {})
        return Timed(status, body, None, None, None)

    async def warm(self, n: int, path: str) -> None:
        """Open n pooled connections (n concurrent GETs), before timing."""
        await asyncio.gather(*(self.request("GET", path, None, {}) for _ in range(n)))


class OpenSearchPy(LibraryClient):
    def __init__(self, url: str, what: str, pushback_words: tuple[str, ...]):
        super().__init__(url, what, pushback_words)
        import opensearchpy

        self.name = f"opensearch-py {opensearchpy.__versionstr__}"
        _ignore_server_warnings(opensearchpy.OpenSearchWarning)
        self._errors = opensearchpy.TransportError
        self.client = opensearchpy.AsyncOpenSearch(
            [url], serializer=_Raw(), max_retries=0, retry_on_timeout=False, retry_on_status=(),
            timeout=TIMEOUT_S, pool_maxsize=POOL)

    async def send(self, method, path, body, headers, params=None):
        """The transport gives a success's body only: any 2xx is reported as 200."""
        try:
            data = await self.client.transport.perform_request(method, path, params=params, body=body,
                                                               headers=headers)
        except self._errors as exc:
            if not isinstance(exc.status_code, int):          # "N/A", "TIMEOUT": no answer
                raise _Down(f"{exc.error}: {exc.info}") from None
            info = exc.info
            body = json.dumps(info).encode() if isinstance(info, dict) else str(info or exc.error).encode()
            return exc.status_code, body
        return 200, data if isinstance(data, bytes) else b""

    async def close(self) -> None:
        await self.client.close()


class ElasticsearchPy(LibraryClient):
    def __init__(self, url: str, what: str, pushback_words: tuple[str, ...], major: int):
        super().__init__(url, what, pushback_words)
        import elasticsearch

        self.name = f"elasticsearch {elasticsearch.__versionstr__}"
        _ignore_server_warnings(elasticsearch.ElasticsearchWarning)
        self._lib = elasticsearch
        self._major = major
        raw = _Raw()
        self.client = elasticsearch.AsyncElasticsearch(
            url, serializers={"application/json": raw, "application/x-ndjson": raw}, max_retries=0,
            retry_on_timeout=False, retry_on_status=(), request_timeout=TIMEOUT_S, connections_per_node=POOL)

    def _compat(self, headers: dict) -> dict:
        """Content-Type and Accept as the server's major version's compatible media type."""
        ct = headers.get("Content-Type", "application/json")
        mark = f"; compatible-with={self._major}"
        return {"Content-Type": ct.replace("application/", "application/vnd.elasticsearch+") + mark,
                "Accept": f"application/vnd.elasticsearch+json{mark}"}

    async def send(self, method, path, body, headers, params=None):
        lib = self._lib
        try:
            resp = await self.client.perform_request(method, path, params=params, body=body,
                                                     headers=self._compat(headers))
        except lib.UnsupportedProductError:
            raise UserError(f"target elasticsearch: the {self.name} client refuses the server at {self.url} "
                            f"(its product check: no X-Elastic-Product: Elasticsearch header); use client: "
                            f"http") from None
        except lib.ApiError as exc:
            return exc.meta.status, exc.body if isinstance(exc.body, bytes) else str(exc.body).encode()
        except lib.TransportError as exc:
            raise _Down(str(exc) or type(exc).__name__) from None
        return resp.meta.status, resp.body if isinstance(resp.body, bytes) else b""

    async def close(self) -> None:
        await self.client.close()


async def connect(url: str, distribution: str, number: str, what: str,
                  pushback_words: tuple[str, ...]) -> LibraryClient:
    """The library client for this server, its product check passed (a GET / through it)."""
    major = int(number.split(".")[0])
    try:
        if distribution == "elasticsearch" and major >= 8:
            lib: LibraryClient = ElasticsearchPy(url, what, pushback_words, major)
        else:
            lib = OpenSearchPy(url, what, pushback_words)
    except ImportError as exc:
        raise UserError(f"target elasticsearch: client library needs {exc.name}: {INSTALL} "
                        f"(or use client: http)") from None
    try:
        status, body = await lib.request("GET", "/", None, {})
    except BaseException:               # the library's pool closed, then re-raised: nothing hidden
        await lib.close()
        raise
    if status != 200:
        await lib.close()
        raise Fatal(f"{what}: GET / through {lib.name}: HTTP {status}: {body[:300]!r}")
    return lib
