"""The timed query client (http_pool, http_exchange, HttpClient.timed) against a tiny
fake server, for what a real server rarely does: answers split byte by byte, chunked
and unframed bodies, a connection closed mid-answer or while idle, a server too slow.
Real servers' answers are the contract suite's (tests/contract/test_contract.py)."""

from __future__ import annotations

import asyncio
import gzip
import time

import pytest
import yarl

from tsbench.core.errors import Fatal
from tsbench.databases.shared.http import HttpClient


class FakeServer:
    """A server on 127.0.0.1 answering the n-th request with answer(request, n): the bytes
    to send (bytes, or a list of pieces sent one by one, pause seconds apart), None to
    close without answering; after an answer it keeps the connection unless close_after."""

    def __init__(self, answer, pause: float = 0.0, close_after: bool = False, tls=None):
        self.answer, self.pause, self.close_after, self.tls = answer, pause, close_after, tls
        self.requests: list[bytes] = []
        self.connections = 0
        self.server = None
        self.writers = []

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc):
        for w in self.writers:
            w.close()
        self.server.close()

    async def _serve(self, reader, writer):
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                out = self.answer(request, len(self.requests))
                if out is None:
                    break
                for piece in [out] if isinstance(out, bytes) else out:
                    writer.write(piece)
                    await writer.drain()
                    if self.pause:
                        await asyncio.sleep(self.pause)
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


def ok(body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


def chunked(pieces: list[bytes]) -> bytes:
    out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    for p in pieces:
        out += f"{len(p):x}\r\n".encode() + p + b"\r\n"
    return out + b"0\r\n\r\n"


def byte_by_byte(data: bytes) -> list[bytes]:
    return [data[i:i + 1] for i in range(len(data))]


async def client(url: str, timeout: float = 5.0) -> HttpClient:
    c = HttpClient(url, "fake", timeout=timeout)
    await c.open()
    return c


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


# ---- framing -------------------------------------------------------------------------------------

@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_an_answer_split_byte_by_byte_is_read_whole_and_timed(framing):
    body = b'{"results":[{"series":[]}]}'
    wire = ok(body) if framing == "length" else chunked([body[:5], body[5:], b"!"])
    want = body if framing == "length" else body + b"!"

    async def go():
        async with FakeServer(lambda r, n: byte_by_byte(wire), pause=0.0005) as s:
            c = await client(s.url)
            try:
                t1 = await c.timed_post("/query", b"q=x")
                t2 = await c.timed_post("/query", b"q=y")
            finally:
                await c.close()
            return s, t1, t2

    s, t1, t2 = run(go())
    assert (t1.status, t1.body) == (200, want) and t2.body == want
    assert 0.01 < t1.ttfb and t1.seconds - t1.ttfb > 0.005       # head and body came byte by byte, 0.5 ms apart
    assert s.connections == 1 and t2.connect_s is None           # kept alive
    assert t1.connect_s is not None and t1.connect_s > 0           # opened during the request: timed apart


def test_a_body_framed_by_nothing_ends_with_the_connection():
    async def go():
        async with FakeServer(lambda r, n: [b"HTTP/1.1 200 OK\r\n\r\n", b"abc", b"def"], close_after=True) as s:
            c = await client(s.url)
            try:
                return s, await c.timed("GET", "/a"), await c.timed("GET", "/b")
            finally:
                await c.close()

    s, t1, t2 = run(go())
    assert t1.body == b"abcdef" and t2.body == b"abcdef"
    assert s.connections == 2 and t2.connect_s is not None       # not kept: a new connection, timed apart


@pytest.mark.parametrize("wire,method,status", [
    (b"HTTP/1.1 204 No Content\r\n\r\n", "POST", 204),
    (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\n\r\n", "GET", 304),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD", 200),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", "GET", 204)])
def test_answers_without_a_body(wire, method, status):
    async def go():
        async with FakeServer(lambda r, n: wire) as s:
            c = await client(s.url)
            try:
                return s, [await c.timed(method, "/x") for _ in range(3)]
            finally:
                await c.close()

    s, ts = run(go())
    assert [(t.status, t.body) for t in ts] == [(status, b"")] * 3
    assert s.connections == 1                                    # the connection carries the next one


def test_gzip_and_deflate_bodies_are_inflated_and_errors_keep_their_body():
    import zlib

    answers = {1: ok(gzip.compress(b"x" * 1000), "Content-Encoding: gzip\r\n"),
               2: ok(zlib.compress(b"y" * 1000), "Content-Encoding: deflate\r\n"),
               3: b"HTTP/1.1 400 Bad Request\r\nContent-Length: 7\r\n\r\nno such"}

    async def go():
        async with FakeServer(lambda r, n: answers[n]) as s:
            c = await client(s.url)
            try:
                return s, [await c.timed("GET", "/x") for _ in range(3)]
            finally:
                await c.close()

    s, ts = run(go())
    assert ts[0].body == b"x" * 1000 and ts[1].body == b"y" * 1000
    assert (ts[2].status, ts[2].body) == (400, b"no such")
    assert b"Accept-Encoding: identity\r\n" in s.requests[0]       # asked for none: inflated all the same


def test_params_headers_and_bodies_go_as_aiohttp_sent_them():
    params = {"query": "select a, b from 'x' where c = 'd e' and f > 1; +%&"}

    async def go():
        async with FakeServer(lambda r, n: ok(b"{}")) as s:
            c = await client(s.url.replace("http://", "http://me:s%3Acret@"))
            try:
                await c.timed("GET", "/exec", params=params)
                await c.timed_post("/api/v1/query", {"query": "up", "time": "1"})
                await c.timed_post("/q", b"raw", headers={"content-type": "text/csv", "X-One": "1"})
            finally:
                await c.close()
            return s, s.url

    s, url = run(go())
    get, form, raw = s.requests
    assert get.startswith(f"GET {yarl.URL(url + '/exec').extend_query(params).raw_path_qs} HTTP/1.1\r\n".encode())
    assert b"Authorization: Basic bWU6czpjcmV0\r\n" in get       # me:s:cret from the URL
    assert b"Content-Length" not in get
    assert form.endswith(b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 15\r\n\r\n"
                         b"query=up&time=1")
    assert b"content-type: text/csv\r\n" in raw and b"octet-stream" not in raw and b"X-One: 1\r\n" in raw
    assert raw.endswith(b"Content-Length: 3\r\n\r\nraw")


# ---- faults --------------------------------------------------------------------------------------

def test_a_connection_closed_mid_body_is_fatal():
    async def go():
        async with FakeServer(lambda r, n: [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"],
                              close_after=True) as s:
            c = await client(s.url)
            try:
                with pytest.raises(Fatal, match=r"fake: /query: the server closed the connection before the "
                                                r"answer's end"):
                    await c.timed_post("/query", b"q")
            finally:
                await c.close()

    run(go())


def test_garbage_and_a_fresh_connection_closed_unanswered_are_fatal():
    async def go():
        async with FakeServer(lambda r, n: b"SSH-2.0-OpenSSH\r\n\r\n" if n == 1 else None) as s:
            c = await client(s.url)
            try:
                with pytest.raises(Fatal, match="not an HTTP/1.1 response"):
                    await c.timed("GET", "/x")
                with pytest.raises(Fatal, match="closed the connection without answering"):
                    await c.timed("GET", "/x")
            finally:
                await c.close()

    run(go())


def test_a_kept_connection_the_server_closed_is_opened_again():
    """Closed while idle (the client sees it), and closed as the next request goes (the
    request goes again once on a fresh connection): neither is an error."""
    async def go():
        async with FakeServer(lambda r, n: ok(b"1")) as s:
            c = await client(s.url)
            try:
                await c.warm(1, "/ping")
                for w in s.writers:
                    w.close()                                   # the server's idle timeout
                await asyncio.sleep(0.05)
                t1 = await c.timed("GET", "/a")
                s.answer = lambda r, n: None if n == 3 else ok(b"2")   # reads the next request, answers nothing
                t2 = await c.timed("GET", "/b")
            finally:
                await c.close()
            return s, t1, t2

    s, t1, t2 = run(go())
    assert (t1.body, t2.body) == (b"1", b"2")
    assert t1.connect_s is not None and t2.connect_s is not None
    assert s.connections == 3


def test_a_slow_server_is_bounded_by_the_timeout():
    async def go():
        async with FakeServer(lambda r, n: [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", b"a", b"b"],
                              pause=2.0) as s:
            c = await client(s.url, timeout=0.3)
            t = time.perf_counter()
            try:
                with pytest.raises(Fatal, match=r"fake: /slow: timed out after 0.3 s"):
                    await c.timed("GET", "/slow")
            finally:
                await c.close()
            return time.perf_counter() - t

    assert run(go()) < 1.5


def test_an_unreachable_server_is_fatal_with_the_reason():
    async def go():
        c = await client("http://127.0.0.1:9")
        try:
            with pytest.raises(Fatal, match=r"fake: GET /ping: cannot connect to 127.0.0.1:9: "):
                await c.warm(2, "/ping")
        finally:
            await c.close()

    run(go())


def test_warm_opens_a_connection_per_worker_and_the_workers_reuse_them():
    async def go():
        async with FakeServer(lambda r, n: ok(b"pong"), pause=0.01) as s:
            c = await client(s.url)
            try:
                await c.warm(4, "/ping")
                ts = await asyncio.gather(*(c.timed("GET", "/q") for _ in range(4)))
            finally:
                await c.close()
            return s, ts

    s, ts = run(go())
    assert s.connections == 4 and all(t.connect_s is None and t.body == b"pong" for t in ts)


def test_https_goes_over_tls_and_verifies_the_server(tmp_path, monkeypatch):
    """A self-signed certificate for 127.0.0.1: trusted (SSL_CERT_FILE), the answer comes;
    not trusted, the request is Fatal (verified, as aiohttp verifies)."""
    import shutil
    import ssl
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("no openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)

    async def go(trusted: bool):
        async with FakeServer(lambda r, n: chunked([b"secure", b"!"]), tls=tls) as s:
            if trusted:
                monkeypatch.setenv("SSL_CERT_FILE", str(cert))
            else:
                monkeypatch.delenv("SSL_CERT_FILE", raising=False)
            c = await client(s.url)
            try:
                return await c.timed("GET", "/x")
            finally:
                await c.close()

    assert run(go(True)).body == b"secure!"
    with pytest.raises(Fatal, match="fake: /x: cannot connect to 127.0.0.1:.*CERTIFICATE_VERIFY_FAILED"):
        run(go(False))


def test_requests_past_the_limit_wait_for_a_connection():
    async def go():
        async with FakeServer(lambda r, n: ok(b"k"), pause=0.02) as s:
            c = HttpClient(s.url, "fake", limit=2, timeout=5.0)
            await c.open()
            try:
                ts = await asyncio.gather(*(c.timed("GET", "/q") for _ in range(6)))
            finally:
                await c.close()
            return s, ts

    s, ts = run(go())
    assert s.connections == 2 and [t.body for t in ts] == [b"k"] * 6
    assert sum(t.connect_s is not None for t in ts) == 2
