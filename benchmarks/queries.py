"""Benchmark of phase 4 (`nox -s bench_queries`): the query client's share of a latency,
per database whose queries go over HTTP. On each local server (started by tsbench and
loaded with 6 hours of devops at 100 hosts) one query type (TSBS's
single-groupby-1-1-1 by default), 1 worker: tsbench's median and p99 latency and
queries/s next to the floor, the exact same requests (the bytes tsbench's HTTP pool
writes: method, target, headers, body, recorded in an untimed pass) sent by a bare
blocking client (one keep-alive socket, http.client's response reader, the body read
whole, nothing inflated or parsed), in alternating blocks of the same run so both meet
the same load of a shared machine, each after an untimed pass over its block (and the floor's requests asking for a gzip'd answer, as
tsbench's pool did before: what the server's compression of answers costs); p50 / floor is tsbench's p50 over the floor's (goal
<= 1.15). Then queries/s at 4 workers. On InfluxDB the server's own mean query time
too (its queryExecutor statistics). Figures come from here, never from timed tests."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

from benchmarks import record

HTTP_TARGETS = ("influx", "victoriametrics", "questdb", "elasticsearch", "opentsdb")
# options a database is run with here: its queries on the shared HTTP pool
POOL_OPTIONS = {"elasticsearch": {"client": "http"}}
GZIP_ASKED = b"\r\nAccept-Encoding: gzip, deflate\r\n"       # what the pool asked before (aiohttp's default)


class _Floor:
    """The recorded requests written on one keep-alive socket, each answer read whole by
    http.client's response reader (status line, headers, Content-Length or chunks): the
    floor any client has."""

    def __init__(self, url: str):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=300)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def latencies(self, queries: list[list[bytes]]) -> list[float]:
        """Seconds of each query (its requests in turn), send -> last byte read."""
        import http.client
        import time

        out = []
        for requests in queries:
            t = time.perf_counter()
            for raw in requests:
                self.sock.sendall(raw)
                r = http.client.HTTPResponse(self.sock)
                r.begin()
                r.read()
            out.append(time.perf_counter() - t)
        return out

    def close(self) -> None:
        self.sock.close()


class _Recorder:
    """Records the bytes of every request the target's query() sends through its HTTP pool."""

    def __init__(self, target):
        from tsbench.databases.shared.http_exchange import request_bytes

        self.queries: list[list[bytes]] = []
        pool, query = target.http.queries, target.query
        send = pool.send

        async def recording_send(method, path, headers, body=b""):
            if self.queries:
                self.queries[-1].append(request_bytes(method, path, pool.host_header, headers, body))
            return await send(method, path, headers, body)

        async def recording_query(native):
            self.queries.append([])
            return await query(native)

        pool.send, target.query = recording_send, recording_query
        self.undo = lambda: (vars(pool).pop("send"), vars(target).pop("query"))


def _influx_query_stats(url: str) -> tuple[int, int]:
    """(queriesExecuted, queryDurationNs) of InfluxDB's queryExecutor module."""
    body = urllib.parse.urlencode({"q": "SHOW STATS FOR 'queryExecutor'"}).encode()
    with urllib.request.urlopen(url + "/query", data=body, timeout=30) as r:
        res = json.load(r)["results"][0]["series"][0]
    row = dict(zip(res["columns"], res["values"][0]))
    return int(row.get("queriesExecuted", 0)), int(row.get("queryDurationNs", 0))


async def _execute(target, specs, workers: int, burn_in: int, cache: str = "none"):
    """tsbench's execute of the specs (no validation); cache="warm": an untimed pass over them first."""
    from tsbench.execute.run import ExecOptions, execute

    return await execute(target, specs, ExecOptions(workers=workers, burn_in=burn_in, cache=cache,
                                                    validate=False, progress=False))


def _asking_gzip(request: bytes) -> bytes:
    """The request asking for a gzip'd answer instead of an identity one."""
    head, sep, body = request.partition(b"\r\n\r\n")
    lines = [ln for ln in head.split(b"\r\n") if not ln.lower().startswith(b"accept-encoding:")]
    return b"\r\n".join(lines) + GZIP_ASKED[:-2] + sep + body


async def _recorded(target, specs) -> list[list[bytes]]:
    """The requests of each query, in the order execute() sends them (an untimed pass)."""
    rec = _Recorder(target)
    try:
        await _execute(target, specs, 1, 0)
    finally:
        rec.undo()
    if len(rec.queries) != len(specs):
        raise SystemExit(f"{target.name}: {len(rec.queries)} queries sent for {len(specs)} drawn")
    return rec.queries


async def _interleaved(target, specs, requests, a) -> tuple[list[float], list[float], list[dict], float, list]:
    """The floor's (as recorded, and asking for a gzip'd answer) and tsbench's 1-worker
    latencies (s), in alternating blocks of a.block queries, so that all meet the same load
    of a shared machine, each side's timed pass after an untimed one over the same block (a
    server caching by query text, as QuestDB does its compiled queries, would favour whoever
    came second); tsbench's measured seconds; each block's p50 over the floor's."""
    import statistics

    floor, lat, gz, records, seconds, ratios = _Floor(target.url), [], [], [], 0.0, []
    gzipped = [[_asking_gzip(r) for r in q] for q in requests]
    try:
        for k in range(0, len(specs), a.block):
            floor.latencies(requests[k:k + a.block])                # untimed: the server's caches warm
            block = floor.latencies(requests[k:k + a.block])
            gz += floor.latencies(gzipped[k:k + a.block])
            res = await _execute(target, specs[k:k + a.block], 1, a.burn_in if k == 0 else 0, "warm")
            ours = [r["latency"] for r in res.records if r["status"] == "ok"]
            ratios.append(statistics.median(ours) / statistics.median(block) if ours else float("nan"))
            lat += block
            records += res.records
            seconds += res.seconds
    finally:
        floor.close()
    return lat, gz, records, seconds, ratios


async def _one_run(target, specs, requests, a) -> dict:
    """One run: the floor and tsbench at 1 worker interleaved (on InfluxDB with its own time
    per query), then tsbench at 4 workers."""
    import numpy as np

    influx = target.name == "influx"
    n0, t0 = _influx_query_stats(target.url) if influx else (0, 0)
    floor, gz, records, seconds, ratios = await _interleaved(target, specs, requests, a)
    n1, t1 = _influx_query_stats(target.url) if influx else (1, float("nan"))
    four = (await _execute(target, specs, 4, a.burn_in)).stats()[-1]
    ms = np.array([r["latency"] for r in records if r["status"] == "ok"]) * 1e3
    p50, fl = float(np.median(ms)), float(np.median(floor)) * 1e3
    return {"p50": p50, "p99": float(np.percentile(ms, 99)), "qps1": len(ms) / seconds,
            "server": (t1 - t0) / max(n1 - n0, 1) / 1e6, "floor": fl, "gzip": float(np.median(gz)) * 1e3,
            "ratio": p50 / fl, "blocks": float(np.median(ratios)), "qps4": four["qps"]}


COLUMNS = (("p50", "p50 ms", ".3f"), ("p99", "p99 ms", ".3f"), ("qps1", "q/s", ".0f"),
           ("server", "server mean ms", ".3f"), ("floor", "floor p50 ms", ".3f"), ("gzip", "gzip floor ms", ".3f"),
           ("ratio", "p50 / floor", ".2f"), ("blocks", "block ratios", ".2f"), ("qps4", "q/s 4 workers", ".0f"))


def _row(label: str, r: dict) -> str:
    return f"{label:>22} " + " ".join(f"{r[k]:>{len(h)}{f}}" for k, h, f in COLUMNS)


def _medians(rows: list[dict]) -> dict:
    import statistics

    return {k: statistics.median(r[k] for r in rows) for k, _, _ in COLUMNS}


def _datafile(a, fmt: str):
    """The data file in the target's format (generated once into the data dir)."""
    from tsbench.data.datafile import open_datafile

    path = os.path.join(a.data_dir, f"devops{a.scale}-6h." + ("lp" if fmt == "influx" else fmt))
    if not os.path.exists(path + ".manifest.json"):
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(a.scale), "--seed", "123",
                        "--end", "2016-01-01T06:00:00Z", "--format", fmt, "-j", "2", "-o", path], check=True)
    return open_datafile(path)


async def _database(name: str, a) -> dict:
    """Load one database, record its requests, run the interleaved runs; the medians."""
    from tsbench.databases import target_class
    from tsbench.experiments import session
    from tsbench.load.run import LoadOptions

    df = _datafile(a, target_class(name).format)
    specs = session.draw(df.dataset, [a.type], a.count, 123, allow_empty=True)      # never empty: no reference
    reach = session.Reach(name, name=f"bench-queries-{name}", options={**POOL_OPTIONS.get(name, {}), **a.options.get(name, {})})
    async with session.open_target(reach, announce=False) as c:
        await session.load(c, df, LoadOptions(progress=False, workers=2, compact=True))
        requests = await _recorded(c.target, specs)
        print(f"{name} {await session.server_version(c)}: {a.type}, devops {a.scale} hosts x 6 h, {a.count} "
              f"queries ({sum(map(len, requests))} requests), {a.burn_in} burn-in, warm cache", flush=True)
        rows = []
        for run in range(a.runs):
            rows.append(await _one_run(c.target, specs, requests, a))
            print(_row(f"{name} {run + 1}", rows[-1]), flush=True)
    med = _medians(rows)
    print(_row(f"{name} median", med), flush=True)
    for k, head, _ in COLUMNS:
        if k != "server" or name == "influx":
            record.figure(f"{name} {a.type}: {head.replace(' ms', '').replace(' q/s', '')}", med[k],
                          "ms" if head.endswith("ms") else "queries/s" if "q/s" in head else "x")
    return med


async def _run(a) -> None:
    print(f"{'database run':>22} " + " ".join(h for _, h, _ in COLUMNS))
    summary = {name: await _database(name, a) for name in a.databases}
    print(f"\n{'database':>16} {'p50 / floor':>11} {'block ratios':>12} {'q/s 4 workers':>13}")
    for name, med in summary.items():
        print(f"{name:>16} {med['ratio']:>11.2f} {med['blocks']:>12.2f} {med['qps4']:>13.0f}")
    print("floor p50: the same requests (the bytes tsbench's pool wrote) from a bare blocking client on one "
          "keep-alive socket, send -> last byte read, nothing parsed, in blocks of "
          f"{a.block} queries alternating with tsbench's, each timed pass after an untimed one over the block; p50 / floor: tsbench's 1-worker p50 over it (goal <= 1.15); block ratios: the median over "
          "the blocks of each block's p50 over the floor's in the block before it (steadier on a busy machine); "
          "server mean (InfluxDB): its own queryDurationNs per query, burn-in included; gzip floor: the floor's "
          "requests asking for a compressed answer (Accept-Encoding: gzip, deflate), as tsbench's pool did before")


def _options(pairs: list[str]) -> dict[str, dict]:
    """--option DB:KEY=VALUE pairs as {db: {key: value}} (values as JSON where they parse)."""
    out: dict[str, dict] = {}
    for p in pairs:
        db, _, kv = p.partition(":")
        key, _, value = kv.partition("=")
        try:
            out.setdefault(db, {})[key] = json.loads(value)
        except ValueError:
            out.setdefault(db, {})[key] = value
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--databases", default="influx",
                    help=f"comma-separated databases whose queries go over HTTP: {','.join(HTTP_TARGETS)}")
    ap.add_argument("--option", action="append", default=[], metavar="DB:KEY=VALUE",
                    help="a target option for one database (e.g. elasticsearch:client=library)")
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--type", default="single-groupby-1-1-1")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--burn-in", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--block", type=int, default=200, help="queries per block: floor and tsbench alternate")
    ap.add_argument("--data-dir", default=None)
    record.arguments(ap)
    a = ap.parse_args()
    a.databases = [d.strip() for d in a.databases.split(",") if d.strip()]
    unknown = sorted(set(a.databases) - set(HTTP_TARGETS))
    if unknown:
        ap.error(f"--databases: not an HTTP target here: {', '.join(unknown)} (choose from {', '.join(HTTP_TARGETS)})")
    a.options = _options(a.option)
    a.data_dir = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(a.data_dir, exist_ok=True)
    record.start("queries", a)
    asyncio.run(_run(a))
    record.finish()


if __name__ == "__main__":
    main()
