"""Benchmark of phase 2 (`nox -s bench_load`): devops 100 hosts, loaded by
`python -m tsbench load` into the null target (the harness ceiling; null-csv: the
CSV file of the JVM databases' cases), the null HTTP sink, and local InfluxDB and
VictoriaMetrics servers (2 workers x 10,000 rows, the first 6 hours = 1,944,000
rows), OpenSearch (both seed templates; the default one also through opensearch-py,
client=library), Cassandra (both schemas) and the MongoDB stand-in
(mongo-java-server), OpenTSDB, QuestDB, ClickHouse (in-process chDB) and IoTDB
with 2 and 4 workers on the first 3 hours (972,000 rows). The influx-gzip case
(load_gzip.py): gzip'd loads into InfluxDB, tsbench's client CPU beside TSBS's
(--tsbs-bin: the directory of its built binaries) in alternating rounds, and the
compressor's CPU per MB at each level.
Prints rows/s, client and server CPU seconds and their ratio, and client CPU seconds per MB
of data (uncompressed), medians over runs. The null-http cases (null-http-gzip: -O
gzip=true) post to one sink started here, and beside each go the wire's floor in the same
run (bench_floor.py: the same batches cut in advance, posted by a bare aiohttp client and
by blocking http.client threads, the same workers and gzip level; and the blocking client
again cutting them in the timed part, as the load must), run in rounds (the load, then
each floor), and tsbench's client CPU seconds over each floor's, round by round (median and
range), and its rows/s over the fastest pre-cut floor's. Figures come from here, never
from timed tests."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

import psutil

from benchmarks import load_gzip, record
from tsbench import databases
from tsbench.databases.shared.http import GZIP_LEVEL

CASES = {
    # name: (target, data file key, extra load args); the file in the target's format (csv for null-csv)
    "null": ("null", "day", []),
    "null-csv": ("null", "3h", ["-w", "2", "-b", "10000"]),
    "null-http": ("null-http", "day", ["-w", "2"]),
    "null-http-gzip": ("null-http", "day", ["-w", "2", "-O", "gzip=true"]),
    "influx": ("influx", "6h", ["-w", "2", "-b", "10000"]),
    "victoriametrics": ("victoriametrics", "6h", ["-w", "2", "-b", "10000"]),
    "influx-gzip": ("influx", "3h", []),        # load_gzip.py: its own rounds, beside TSBS's with --tsbs-bin
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
FLOOR_OF = {"null-http": None, "null-http-gzip": GZIP_LEVEL}    # cases beside the floor: their gzip level
FLOOR_CLIENTS = (("aiohttp", False), ("blocking", False), ("blocking", True))   # (client, cut in the timing)
ENDS = {"day": "2016-01-02T00:00:00Z", "6h": "2016-01-01T06:00:00Z", "3h": "2016-01-01T03:00:00Z"}


def _generate(d: str, key: str, scale: int, fmt: str) -> str:
    path = os.path.join(d, f"devops{scale}-{key}.{'csv' if fmt == 'csv' else 'lp'}")
    if not os.path.exists(path + ".manifest.json"):
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(scale), "--seed", "123",
                        "--end", ENDS[key], "-j", "2", "--format", fmt, "-o", path], check=True)
    return path


def _run(path: str, target: str, extra: list[str], d: str, sink=None) -> dict:
    """One load (into the shared sink if given, its CPU seconds as the server's)."""
    out = os.path.join(d, "summary.json")
    where = ["-s", sink.url] if sink is not None else []
    cpu0 = _cpu_of(sink)
    p = subprocess.run([sys.executable, "-m", "tsbench", "load", path, "-t", target, "-q", "--json", out,
                        *where, *extra], capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"load into {target} failed: {p.stderr.decode().strip()}")
    s = json.load(open(out))
    if sink is not None:
        s["server_cpu_seconds"] = _cpu_of(sink) - cpu0
    return s


def _cpu_of(sink) -> float:
    if sink is None:
        return 0.0
    t = psutil.Process(sink.pids()[0]).cpu_times()
    return t.user + t.system


def _floor(path: str, sink, extra: list[str], level: int | None, client: str, live: bool) -> dict:
    """One floor run (bench_floor.py in a subprocess) with the load's workers and batch size,
    in the load summary's keys."""
    w = extra[extra.index("-w") + 1] if "-w" in extra else "4"
    b = extra[extra.index("-b") + 1] if "-b" in extra else "10000"
    cpu0 = _cpu_of(sink)
    p = subprocess.run([sys.executable, "-m", "benchmarks.floor", path, sink.url, "--workers", w,
                        "--batch-size", b, "--client", client, *(["--gzip-level", str(level)] if level else []),
                        *(["--cut-live"] if live else [])],
                       capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"floor ({client}) failed: {p.stderr.decode().strip()}")
    f = json.loads(p.stdout)
    if f["sink_rows"] != f["rows"]:
        raise SystemExit(f"floor ({client}): the sink counted {f['sink_rows']:,} rows of {f['rows']:,}")
    s = f["seconds"]
    return {**f, "rows_per_s": f["rows"] / s, "values_per_s": f["values"] / s, "mb_per_s": f["bytes"] / s / 1e6,
            "client_cpu_s_per_mb": f["client_cpu_seconds"] / (f["bytes"] / 1e6), "backoffs": 0,
            "server_cpu_seconds": _cpu_of(sink) - cpu0}


def _line(name: str, runs: list[dict]) -> dict:
    """Print one case's medians; return them."""
    med = {k: statistics.median(r[k] for r in runs) for k in
           ("seconds", "rows_per_s", "values_per_s", "mb_per_s", "client_cpu_seconds", "client_cpu_s_per_mb",
            "backoffs")}
    scpu = [r["server_cpu_seconds"] for r in runs if r["server_cpu_seconds"] is not None]
    server = statistics.median(scpu) if scpu else float("nan")
    ratio = f"{med['client_cpu_seconds'] / server:.0%}" if scpu and server > 0 else "-"
    print(f"{name:>20} {runs[0]['rows']:>10,} {med['seconds']:>8.2f} {med['rows_per_s']:>11,.0f} "
          f"{med['values_per_s']:>12,.0f} {med['mb_per_s']:>7,.0f} {med['client_cpu_seconds']:>12.2f} "
          f"{med['client_cpu_s_per_mb']:>9.4f} {server:>12.2f} {ratio:>13} {med['backoffs']:>8.0f}")
    record.figure(f"{name}: load rate", med["rows_per_s"], "rows/s")
    record.figure(f"{name}: client CPU", med["client_cpu_seconds"], "s")
    if scpu:
        record.figure(f"{name}: server CPU", server, "s")
    return med


def _beside_floor(name: str, path: str, d: str, sink, extra: list[str], runs: int) -> None:
    """A null-http case with its floors in the same rounds (load, then each floor client,
    round after round, so a drift of the machine's speed falls on both), then tsbench's
    client CPU seconds over each floor's, as the median and range of the rounds' ratios."""
    rounds = [(_run(path, "null-http", extra, d, sink),
               {fc: _floor(path, sink, extra, FLOOR_OF[name], *fc) for fc in FLOOR_CLIENTS}) for _ in range(runs)]
    load = _line(name, [r for r, _ in rounds])
    floors = {(c, live): _line(f"floor-{c}{'+cut' if live else ''}", [f[(c, live)] for _, f in rounds])
              for c, live in FLOOR_CLIENTS}
    pre = [f["rows_per_s"] for (_, live), f in floors.items() if not live]
    for c, live in FLOOR_CLIENTS:
        ratios = sorted(r["client_cpu_seconds"] / f[(c, live)]["client_cpu_seconds"] for r, f in rounds)
        print(f"{'':>20} {name} client CPU s over floor-{c}{'+cut' if live else ''}'s, round by round: "
              f"median x{statistics.median(ratios):.2f} (x{ratios[0]:.2f} to x{ratios[-1]:.2f})")
    print(f"{'':>20} {name} rows/s over the fastest pre-cut floor's: x{load['rows_per_s'] / max(pre):.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--data-dir", default=None, help="Keep the generated files here between runs.")
    ap.add_argument("--tsbs-bin", default=None, help="influx-gzip: TSBS's built binaries here, run beside tsbench.")
    record.arguments(ap)
    a = ap.parse_args()
    record.start("load", a)
    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    print(f"devops {a.scale} hosts, seed 123; {a.runs} runs each, medians; CPU s = user + system during the "
          f"timed load; CPU s/MB: client CPU s per MB of data (uncompressed)")
    print(f"{'case':>20} {'rows':>10} {'seconds':>8} {'rows/s':>11} {'values/s':>12} {'MB/s':>7} "
          f"{'client CPU s':>12} {'CPU s/MB':>9} {'server CPU s':>12} {'client/server':>13} {'backoffs':>8}")
    names = a.cases.split(",")
    sink = databases.server_class("null-http")(name=f"bench-load-sink-{os.getpid()}", instance_dir=d + "/sink") \
        if any(n in FLOOR_OF for n in names) else None
    with sink or contextlib.nullcontext():
        for name in names:
            _case(name, a, d, sink if name in FLOOR_OF else None)
    record.finish()


def _case(name: str, a, d: str, sink) -> None:
    target, key, extra = CASES[name]
    fmt = "csv" if name == "null-csv" or databases.target_class(target).format == "csv" else "influx"
    path = _generate(d, key, a.scale, fmt)
    if name == "influx-gzip":
        return load_gzip.run(path, d, a.runs, a.tsbs_bin)
    if sink is not None:
        return _beside_floor(name, path, d, sink, extra, a.runs)
    _line(name, [_run(path, target, extra, d, sink) for _ in range(a.runs)])


if __name__ == "__main__":
    main()
