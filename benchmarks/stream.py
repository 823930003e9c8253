"""Benchmark of `stream` (`nox -s bench_stream`): DevOps-100 into the null HTTP sink,
streamed (generated on the fly by the C core, 4 writers x 10,000 rows, as fast as
answered, 1,080 points per series = 972,000 rows) beside `load` of the same rows from
a file (the harness over HTTP, 4 workers): rows/s and rows per client CPU second (per
core), medians over runs. Then one open-loop stream of --minutes at --rate rows/s: the
stream process's PSS (the sink apart) after 10 s and at the end, MB. Figures come from
here, never from timed tests."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

from benchmarks import record

POINTS = 1080                      # 3 hours at 10 s
END = "2016-01-01T03:00:00Z"


def _tsbench(*args: str) -> None:
    p = subprocess.run([sys.executable, "-m", "tsbench", *args], capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"tsbench {args[0]} failed: {p.stderr.decode().strip()}")


def _figures(summary: str) -> tuple[float, float]:
    s = json.load(open(summary))
    return s["rows_per_s"], s["rows"] / s["client_cpu_seconds"]


def _load(d: str) -> tuple[float, float]:
    data = os.path.join(d, "devops100-3h.lp")
    if not os.path.exists(data + ".manifest.json"):
        _tsbench("generate", "-q", "--scale", "100", "--seed", "123", "--end", END, "-o", data)
    _tsbench("load", data, "-t", "null-http", "-w", "4", "-b", "10000", "-q", "--json", f"{d}/load.json")
    return _figures(f"{d}/load.json")


def _stream(d: str) -> tuple[float, float]:
    _tsbench("stream", "-t", "null-http", "--scale", "100", "--seed", "123", "-w", "4", "-b", "10000",
             "--points-per-series", str(POINTS), "-q", "--json", f"{d}/stream.json")
    return _figures(f"{d}/stream.json")


def _pss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_full_info().pss / 1e6


def _memory(minutes: float, rate: int, d: str) -> None:
    cmd = [sys.executable, "-m", "tsbench", "stream", "-t", "null-http", "--scale", "100", "-w", "4",
           "--rate", str(rate), "--duration", str(minutes * 60), "-q", "--json", f"{d}/long.json"]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    time.sleep(10)
    first = _pss_mb(p.pid)
    time.sleep(max(0.0, minutes * 60 - 12))
    last = _pss_mb(p.pid)
    _, err = p.communicate(timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"tsbench stream failed: {err.decode().strip()}")
    s = json.load(open(f"{d}/long.json"))
    print(f"open loop {rate:,} rows/s for {minutes:g} min: {s['rows']:,} rows at {s['rows_per_s']:,.0f} rows/s, "
          f"write p99 {s['latency_ms'].get('p99', float('nan')):.2f} ms; stream process PSS {first:,.1f} MB "
          f"after 10 s, {last:,.1f} MB at the end")
    record.figure(f"long stream at {rate:,} rows/s: rate reached", s["rows_per_s"], "rows/s")
    record.figure(f"long stream at {rate:,} rows/s: process PSS at the end", last, "MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--minutes", type=float, default=10.0, help="Length of the memory run (0: skip it).")
    ap.add_argument("--rate", type=int, default=100_000, help="rows/s of the memory run")
    ap.add_argument("--data-dir", default=None, help="Keep the generated file here between runs.")
    record.arguments(ap)
    a = ap.parse_args()
    record.start("stream", a)
    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    print(f"devops 100 hosts x {POINTS} points per series (972,000 rows) into the null HTTP sink, 4 x 10,000 rows; "
          f"medians of {a.runs}")
    for label, fn in (("load (file)", _load), ("stream (generated)", _stream)):
        runs = [fn(d) for _ in range(a.runs)]
        print(f"{label:>20}: {statistics.median(r[0] for r in runs):>10,.0f} rows/s "
              f"{statistics.median(r[1] for r in runs):>10,.0f} rows per client CPU s")
        record.figure(f"{label}: rate", statistics.median(r[0] for r in runs), "rows/s")
        record.figure(f"{label}: rows per client CPU second", statistics.median(r[1] for r in runs), "rows/CPU s")
    if a.minutes:
        _memory(a.minutes, a.rate, d)
    record.finish()


if __name__ == "__main__":
    main()
