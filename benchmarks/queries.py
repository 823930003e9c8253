"""Benchmark of phase 4 (`nox -s bench_queries`): TSBS's single-groupby-1-1-1 on a
local InfluxDB 1.8 holding 6 hours of devops at 100 hosts, 1 worker: median and
p99 latency and queries/s, next to the server's own mean query time (InfluxDB's
queryExecutor statistics: queryDurationNs / queriesExecuted) and the floor (the
same requests from a bare http.client loop, in the same run), so the client's
share shows; then queries/s at 4 workers. Figures come from here, never from
timed tests."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

from benchmarks import record


class _Floor:
    """The same requests sent by a bare blocking HTTP client (http.client, one keep-alive
    connection, body read, nothing parsed): the floor any client has."""

    def __init__(self, url: str):
        import http.client

        u = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port)
        self.headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept-Encoding": "identity"}

    def latencies(self, bodies: list[bytes]) -> list[float]:
        """Seconds of each request, send -> last byte read."""
        import time

        out = []
        for b in bodies:
            t = time.perf_counter()
            self.conn.request("POST", "/query?epoch=ns", body=b, headers=self.headers)
            self.conn.getresponse().read()
            out.append(time.perf_counter() - t)
        return out

    def close(self) -> None:
        self.conn.close()


def _influx_query_stats(url: str) -> tuple[int, int]:
    """(queriesExecuted, queryDurationNs) of InfluxDB's queryExecutor module."""
    body = urllib.parse.urlencode({"q": "SHOW STATS FOR 'queryExecutor'"}).encode()
    with urllib.request.urlopen(url + "/query", data=body, timeout=30) as r:
        res = json.load(r)["results"][0]["series"][0]
    row = dict(zip(res["columns"], res["values"][0]))
    return int(row.get("queriesExecuted", 0)), int(row.get("queryDurationNs", 0))


async def _execute(target, specs, workers: int, burn_in: int):
    """tsbench's execute of the specs (no validation)."""
    from tsbench.execute.run import ExecOptions, execute

    return await execute(target, specs, ExecOptions(workers=workers, burn_in=burn_in, cache="none",
                                                    validate=False, progress=False))


async def _interleaved(url: str, target, specs, bodies: list[bytes], a) -> tuple[list[float], list[dict], float]:
    """The floor's and tsbench's 1-worker latencies (s), in alternating blocks of a.block
    queries, so that both meet the same load of a shared machine; and tsbench's measured seconds."""
    floor, lat, records, seconds = _Floor(url), [], [], 0.0
    try:
        for k in range(0, len(specs), a.block):
            lat += floor.latencies(bodies[k:k + a.block])
            res = await _execute(target, specs[k:k + a.block], 1, a.burn_in if k == 0 else 0)
            records += res.records
            seconds += res.seconds
    finally:
        floor.close()
    return lat, records, seconds


async def _one_run(url: str, target, specs, bodies: list[bytes], a) -> dict:
    """One run: the floor and tsbench at 1 worker interleaved (with InfluxDB's own time per
    query), then tsbench at 4 workers."""
    import numpy as np

    n0, t0 = _influx_query_stats(url)
    floor, records, seconds = await _interleaved(url, target, specs, bodies, a)
    n1, t1 = _influx_query_stats(url)
    four = (await _execute(target, specs, 4, a.burn_in)).stats()[-1]
    ms = np.array([r["latency"] for r in records if r["status"] == "ok"]) * 1e3
    p50, fl = float(np.median(ms)), float(np.median(floor)) * 1e3
    return {"p50": p50, "p99": float(np.percentile(ms, 99)), "mean": float(ms.mean()), "qps1": len(ms) / seconds,
            "server": (t1 - t0) / max(n1 - n0, 1) / 1e6, "floor": fl, "ratio": p50 / fl, "qps4": four["qps"]}


COLUMNS = (("p50", "p50 ms", ".3f"), ("p99", "p99 ms", ".3f"), ("mean", "mean ms", ".3f"), ("qps1", "q/s", ".0f"),
           ("server", "server mean ms", ".3f"), ("floor", "floor p50 ms", ".3f"),
           ("ratio", "p50 / floor", ".2f"), ("qps4", "q/s 4 workers", ".0f"))


def _row(label: str, r: dict) -> str:
    return f"{label:>6} " + " ".join(f"{r[k]:>{len(h)}{f}}" for k, h, f in COLUMNS)


def _medians(rows: list[dict]) -> dict:
    import statistics

    return {k: statistics.median(r[k] for r in rows) for k, _, _ in COLUMNS}


async def _data(a):
    """The data file (generated once into the data dir) and the drawn queries."""
    from tsbench.data.datafile import open_datafile
    from tsbench.experiments import session

    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"devops{a.scale}-6h.lp")
    if not os.path.exists(path + ".manifest.json"):
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(a.scale), "--seed", "123",
                        "--end", "2016-01-01T06:00:00Z", "-j", "2", "-o", path], check=True)
    df = open_datafile(path)
    return df, session.draw(df.dataset, [a.type], a.count, 123, allow_empty=True)     # never empty: no reference


async def _run(a) -> None:
    from tsbench.experiments import session
    from tsbench.load.run import LoadOptions

    df, specs = await _data(a)
    async with session.open_target(session.Reach("influx"), announce=False) as c:
        await session.load(c, df, LoadOptions(progress=False, workers=2, compact=True))
        print(f"{a.type}: InfluxDB {await c.target.version()}, devops {a.scale} hosts x 6 h, {a.count} queries, "
              f"{a.burn_in} burn-in, warm cache; 1 worker unless said")
        print(f"{'run':>6} " + " ".join(h for _, h, _ in COLUMNS))
        bodies = [c.target._body("influxql", c.target.render(s).text) for s in specs]
        rows = []
        for run in range(a.runs):
            rows.append(await _one_run(c.target.url, c.target, specs, bodies, a))
            print(_row(str(run + 1), rows[-1]), flush=True)
        print(_row("median", _medians(rows)))
        med = _medians(rows)
        for k, head, _ in COLUMNS:
            record.figure(f"{a.type}: {head.replace(' ms', '').replace(' q/s', '')}", med[k],
                          "ms" if head.endswith("ms") else "queries/s" if "q/s" in head else "x")
    print("server mean: InfluxDB's own queryDurationNs per query (the floor's and tsbench's 1-worker queries, "
          "burn-in included); floor p50: the same "
          "requests from a bare blocking http.client on one keep-alive connection, send -> last byte read, "
          f"nothing parsed, in blocks of {a.block} queries alternating with tsbench's; p50 / floor: tsbench's 1-worker p50 over it (goal <= 1.15)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--type", default="single-groupby-1-1-1")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--burn-in", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--block", type=int, default=200, help="queries per block: floor and tsbench alternate")
    ap.add_argument("--data-dir", default=None)
    record.arguments(ap)
    a = ap.parse_args()
    record.start("queries", a)
    asyncio.run(_run(a))
    record.finish()


if __name__ == "__main__":
    main()
