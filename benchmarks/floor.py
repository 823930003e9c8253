"""The wire's floor of phase 2 (bench_load's floor cases): the least client work that
posts a data file's batches to the null HTTP sink, to measure `load -t null-http`
against. The batches are cut by the C core (BatchReader, the same rows per batch as the
load) and copied into memory before the clock starts; then N workers post them as they
are (or gzip'd by zlib at a level) over keep-alive connections, and nothing else: no
counters, no backoff, no progress. Two clients: aiohttp (N tasks on one event loop, as
the load) and blocking http.client (N threads). With --cut-live the batches are cut in the
timed part instead, as the load cuts them (views of the memory-mapped file): the floor of a
client that must read and count its file too.

    python -m benchmarks.floor FILE URL --workers 2 --batch-size 10000 [--gzip-level 6]
        [--client aiohttp|blocking] [--cut-live]

prints one JSON line: rows, values, bytes (uncompressed), wire_bytes, seconds, client_cpu_seconds,
and the sink's own row count."""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import threading
import time
import urllib.parse
import urllib.request
import zlib
from types import SimpleNamespace

import aiohttp

from tsbench.data.batches import BatchReader
from tsbench.data.datafile import open_datafile
from tsbench.load.measures import CpuSpent


def cut(path: str, batch_size: int, live: bool = False):
    """The data file's batches as (data, rows, values): copied into memory now (untimed), or
    (live) an iterator that cuts them from the mapped file as they are taken."""
    df = open_datafile(path)
    batches = ((b.data, b.rows, b.values) for b in BatchReader(df.path, df.format, batch_size, df.compression))
    return batches if live else [(bytes(d), r, v) for d, r, v in batches]


class Poster:
    """What every client shares: the batches to take in turn, the body of each, the wire bytes."""

    def __init__(self, batches, level: int | None):
        self._next = iter(batches).__next__
        self._lock = threading.Lock()            # a generator is taken from one thread at a time
        self.rows = self.values = self.bytes = 0
        self.level = level
        self.headers = {"Content-Type": "text/plain; charset=utf-8"}
        if level:
            self.headers["Content-Encoding"] = "gzip"
        self.wire_bytes = 0

    def take(self) -> bytes | None:
        """The next batch's data, None when all are taken."""
        with self._lock:
            try:
                data, rows, values = self._next()
            except StopIteration:
                return None
            self.rows, self.values, self.bytes = self.rows + rows, self.values + values, self.bytes + len(data)
        return data

    def body(self, data: bytes) -> bytes:
        body = zlib.compress(data, self.level, wbits=31) if self.level else data
        with self._lock:
            self.wire_bytes += len(body)
        return body


def refused(status: int, answer: bytes) -> None:
    if status >= 300:
        raise SystemExit(f"floor: the sink answered HTTP {status}: {answer[:200]!r}")


async def post_aiohttp(url: str, p: Poster, workers: int) -> None:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=workers)) as s:
        async def worker() -> None:
            for data in iter(p.take, None):
                async with s.post(url + "/write", data=p.body(data), headers=p.headers) as r:
                    refused(r.status, await r.read())
        await asyncio.gather(*(worker() for _ in range(workers)))


def post_blocking(url: str, p: Poster, workers: int) -> None:
    u = urllib.parse.urlsplit(url)

    def worker() -> None:
        conn = http.client.HTTPConnection(u.hostname, u.port)
        try:
            for data in iter(p.take, None):
                conn.request("POST", "/write", body=p.body(data), headers=p.headers)
                r = conn.getresponse()
                refused(r.status, r.read())
        finally:
            conn.close()
    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _sink(url: str, path: str, method: str = "GET") -> dict:
    with urllib.request.urlopen(urllib.request.Request(url + path, data=b"" if method == "POST" else None)) as r:
        body = r.read()
    return json.loads(body) if body else {}


def measure(path: str, url: str, workers: int, batch_size: int, level: int | None, client: str,
            live: bool = False) -> dict:
    """Cut (untimed unless live), reset the sink, post every batch (timed: wall and CPU
    seconds), count."""
    p = Poster(cut(path, batch_size, live), level)
    _sink(url, "/reset", "POST")
    t0, spent = time.perf_counter(), CpuSpent(None)
    if client == "aiohttp":
        asyncio.run(post_aiohttp(url, p, workers))
    else:
        post_blocking(url, p, workers)
    seconds, cpu = time.perf_counter() - t0, SimpleNamespace()
    spent.into(cpu)
    return {"client": client + ("+cut" if live else ""), "rows": p.rows, "values": p.values, "bytes": p.bytes,
            "wire_bytes": p.wire_bytes, "seconds": seconds, "client_cpu_seconds": cpu.client_cpu_seconds,
            "sink_rows": _sink(url, "/count")["rows"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("url")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=10_000)
    ap.add_argument("--gzip-level", type=int, default=None)
    ap.add_argument("--client", choices=("aiohttp", "blocking"), default="aiohttp")
    ap.add_argument("--cut-live", action="store_true", help="Cut the batches in the timed part, as the load does.")
    a = ap.parse_args()
    print(json.dumps(measure(a.file, a.url.rstrip("/"), a.workers, a.batch_size, a.gzip_level, a.client,
                             a.cut_live)))


if __name__ == "__main__":
    main()
