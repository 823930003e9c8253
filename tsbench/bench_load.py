"""Benchmark of phase 2 (`nox -s bench_load`): devops 100 hosts, loaded by
`python -m tsbench load` into the null target (the harness ceiling; null-csv: the
CSV file of the JVM databases' cases), the null HTTP sink, and local InfluxDB and
VictoriaMetrics servers (2 workers x 10,000 rows, the first 6 hours = 1,944,000
rows), OpenSearch (both seed templates; the default one also through opensearch-py,
client=library), Cassandra (both schemas) and the MongoDB stand-in
(mongo-java-server), OpenTSDB, QuestDB, ClickHouse (in-process chDB) and IoTDB
with 2 and 4 workers on the first 3 hours (972,000 rows).
Prints rows/s, client and server CPU seconds and their ratio, medians over runs. Figures come from here, never from timed tests."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from . import databases

CASES = {
    # name: (target, data file key, extra load args); the file in the target's format (csv for null-csv)
    "null": ("null", "day", []),
    "null-csv": ("null", "3h", ["-w", "2", "-b", "10000"]),
    "null-http": ("null-http", "day", ["-w", "2"]),
    "influx": ("influx", "6h", ["-w", "2", "-b", "10000"]),
    "victoriametrics": ("victoriametrics", "6h", ["-w", "2", "-b", "10000"]),
}
for _w in (2, 4):
    CASES[f"opensearch-w{_w}"] = ("elasticsearch", "3h", ["-w", str(_w), "-b", "10000"])
    CASES[f"opensearch-lib-w{_w}"] = ("elasticsearch", "3h", ["-w", str(_w), "-b", "10000", "-O", "client=library"])
    CASES[f"opensearch-agg-w{_w}"] = ("elasticsearch", "3h", ["-w", str(_w), "-b", "10000", "-O", "template=aggregation"])
    CASES[f"cassandra-w{_w}"] = ("cassandra", "3h", ["-w", str(_w), "-b", "10000"])
    CASES[f"cassandra-wide-w{_w}"] = ("cassandra", "3h", ["-w", str(_w), "-b", "10000", "-O", "schema=wide"])
    CASES[f"mongodb-w{_w}"] = ("mongodb", "3h", ["-w", str(_w), "-b", "10000"])
    CASES[f"mongodb-bucket-w{_w}"] = ("mongodb", "3h", ["-w", str(_w), "-b", "10000", "-O", "layout=bucket"])
    CASES[f"opentsdb-w{_w}"] = ("opentsdb", "3h", ["-w", str(_w), "-b", "10000"])
    for _t in ("questdb", "clickhouse", "iotdb"):
        CASES[f"{_t}-w{_w}"] = (_t, "3h", ["-w", str(_w), "-b", "10000"])
ENDS = {"day": "2016-01-02T00:00:00Z", "6h": "2016-01-01T06:00:00Z", "3h": "2016-01-01T03:00:00Z"}


def _generate(d: str, key: str, scale: int, fmt: str) -> str:
    path = os.path.join(d, f"devops{scale}-{key}.{'csv' if fmt == 'csv' else 'lp'}")
    if not os.path.exists(path + ".manifest.json"):
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(scale), "--seed", "123",
                        "--end", ENDS[key], "-j", "2", "--format", fmt, "-o", path], check=True)
    return path


def _run(path: str, target: str, extra: list[str], d: str) -> dict:
    out = os.path.join(d, "summary.json")
    p = subprocess.run([sys.executable, "-m", "tsbench", "load", path, "-t", target, "-q", "--json", out, *extra],
                       capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"load into {target} failed: {p.stderr.decode().strip()}")
    return json.load(open(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--data-dir", default=None, help="Keep the generated files here between runs.")
    a = ap.parse_args()
    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    print(f"devops {a.scale} hosts, seed 123; {a.runs} runs each, medians; CPU s = user + system during the "
          f"timed load")
    print(f"{'case':>20} {'rows':>10} {'seconds':>8} {'rows/s':>11} {'values/s':>12} {'MB/s':>7} "
          f"{'client CPU s':>12} {'server CPU s':>12} {'client/server':>13} {'backoffs':>8}")
    for name in a.cases.split(","):
        target, key, extra = CASES[name]
        fmt = "csv" if name == "null-csv" or databases.target_class(target).format == "csv" else "influx"
        path = _generate(d, key, a.scale, fmt)
        runs = [_run(path, target, extra, d) for _ in range(a.runs)]
        med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
        scpu = [r["server_cpu_seconds"] for r in runs if r["server_cpu_seconds"] is not None]
        server = statistics.median(scpu) if scpu else float("nan")
        ratio = f"{med('client_cpu_seconds') / server:.0%}" if scpu and server > 0 else "-"
        print(f"{name:>20} {runs[0]['rows']:>10,} {med('seconds'):>8.2f} {med('rows_per_s'):>11,.0f} "
              f"{med('values_per_s'):>12,.0f} {med('mb_per_s'):>7,.0f} {med('client_cpu_seconds'):>12.2f} "
              f"{server:>12.2f} {ratio:>13} {med('backoffs'):>8.0f}")


if __name__ == "__main__":
    main()
