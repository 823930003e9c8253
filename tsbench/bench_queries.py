"""Benchmark of phase 4 (`nox -s bench_queries`): TSBS's single-groupby-1-1-1 on a
local InfluxDB 1.8 holding 6 hours of devops at 100 hosts, 1 worker: median and
p99 latency and queries/s, next to the server's own mean query time (InfluxDB's
queryExecutor statistics: queryDurationNs / queriesExecuted), so the client's
share shows. Figures come from here, never from timed tests."""

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


def _raw_floor(url: str, bodies: list[bytes]) -> float:
    """Median ms of the same requests sent by a bare blocking HTTP client (http.client,
    one keep-alive connection, body read, nothing parsed): the floor any client has."""
    import http.client
    import statistics
    import time

    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port)
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept-Encoding": "identity"}
    lat = []
    for b in bodies:
        t = time.perf_counter()
        conn.request("POST", "/query?epoch=ns", body=b, headers=headers)
        conn.getresponse().read()
        lat.append(time.perf_counter() - t)
    conn.close()
    return statistics.median(lat) * 1e3


def _influx_query_stats(url: str) -> tuple[int, int]:
    """(queriesExecuted, queryDurationNs) of InfluxDB's queryExecutor module."""
    body = urllib.parse.urlencode({"q": "SHOW STATS FOR 'queryExecutor'"}).encode()
    with urllib.request.urlopen(url + "/query", data=body, timeout=30) as r:
        res = json.load(r)["results"][0]["series"][0]
    row = dict(zip(res["columns"], res["values"][0]))
    return int(row.get("queriesExecuted", 0)), int(row.get("queryDurationNs", 0))


async def _run(a) -> None:
    from . import session
    from .datafile import open_datafile
    from .execute import ExecOptions, execute
    from .load import LoadOptions

    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"devops{a.scale}-6h.lp")
    if not os.path.exists(path + ".manifest.json"):
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(a.scale), "--seed", "123",
                        "--end", "2016-01-01T06:00:00Z", "-j", "2", "-o", path], check=True)
    df = open_datafile(path)
    specs = session.draw(df.dataset, [a.type], a.count, 123, allow_empty=True)     # never empty: no reference
    async with session.open_target(session.Reach("influx"), announce=False) as c:
        await session.load(c, df, LoadOptions(progress=False, workers=2, compact=True))
        url = c.target.url
        print(f"{a.type}: InfluxDB {await c.target.version()}, devops {a.scale} hosts x 6 h, {a.count} queries, "
              f"1 worker, {a.burn_in} burn-in, warm cache")
        print(f"{'run':>4} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8} {'q/s':>8} {'server mean ms':>15} "
              f"{'raw HTTP p50 ms':>16} {'tsbench over raw':>17}")
        bodies = [c.target._body("influxql", c.target.render(s).text) for s in specs]
        for run in range(a.runs):
            n0, t0 = _influx_query_stats(url)
            res = await execute(c.target, specs, ExecOptions(workers=1, burn_in=a.burn_in, cache="none",
                                                             validate=False, progress=False))
            n1, t1 = _influx_query_stats(url)
            st = res.stats()[-1]
            server_ms = (t1 - t0) / max(n1 - n0, 1) / 1e6
            floor = _raw_floor(url, bodies)
            print(f"{run + 1:>4} {st['p50_ms']:>8.3f} {st['p99_ms']:>8.3f} {st['mean_ms']:>8.3f} {st['qps']:>8.0f} "
                  f"{server_ms:>15.3f} {floor:>16.3f} {st['p50_ms'] - floor:>17.3f}")
    print("server mean: InfluxDB's own queryDurationNs per query (burn-in included); raw HTTP p50: the same "
          "requests from a bare blocking http.client, nothing parsed; tsbench over raw: p50 - raw HTTP p50")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--type", default="single-groupby-1-1-1")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--burn-in", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data-dir", default=None)
    asyncio.run(_run(ap.parse_args()))


if __name__ == "__main__":
    main()
