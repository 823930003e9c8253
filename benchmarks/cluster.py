"""Benchmark of `load --cluster` (`nox -s bench_cluster`): DevOps-100 over one day
(7,776,000 rows, one data file every worker reads its byte range of) into the null
target (client-side work only: each slot discards its batches after reading and
cutting them), from one Dask client slot (local:1) and from two (local:2), 4 writers x
10,000 rows per slot; rows/s over the driver's timed part (submit to the last slot's
answer), the ratio, and each slot's start to first batch (Dask's per-task overhead),
medians over runs. Figures come from here, never from timed tests."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from benchmarks import record

END = "2016-01-02T00:00:00Z"


def _tsbench(*args: str) -> None:
    p = subprocess.run([sys.executable, "-m", "tsbench", *args], capture_output=True)
    if p.returncode != 0:
        raise SystemExit(f"tsbench {args[0]} failed: {p.stderr.decode().strip()}")


def _run(data: str, cluster: str, d: str) -> tuple[float, float, float]:
    """rows/s, client CPU s, the slowest slot's start to first batch (s)."""
    _tsbench("load", data, "-t", "null", "--cluster", cluster, "-w", "4", "-b", "10000", "-q", "--json", f"{d}/c.json")
    s = json.load(open(f"{d}/c.json"))
    if not s["verify"]["ok"]:
        raise SystemExit(f"load --cluster {cluster}: counted {s['verify']['counted']} of {s['verify']['expected']}")
    return s["rows_per_s"], s["client_cpu_seconds"], max(c["start_to_first_batch_s"] for c in s["client_slots"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--data-dir", default=None, help="Keep the generated file here between runs.")
    record.arguments(ap)
    a = ap.parse_args()
    record.start("cluster", a)
    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    data = os.path.join(d, "devops100-1d.lp")
    if not os.path.exists(data + ".manifest.json"):
        _tsbench("generate", "-q", "--scale", "100", "--seed", "123", "--end", END, "-o", data)
    print(f"devops 100 hosts x 1 day (7,776,000 rows) into the null target, 4 x 10,000 rows per slot; "
          f"medians of {a.runs}")
    rates = {}
    for cluster in ("local:1", "local:2"):
        runs = [_run(data, cluster, d) for _ in range(a.runs)]
        rates[cluster] = statistics.median(r[0] for r in runs)
        print(f"{cluster:>8}: {rates[cluster]:>12,.0f} rows/s  client CPU {statistics.median(r[1] for r in runs):.2f} s"
              f"  start to first batch {statistics.median(r[2] for r in runs):.3f} s (max {max(r[2] for r in runs):.3f} s)")
        record.figure(f"{cluster}: load rate", rates[cluster], "rows/s")
    print(f"local:2 / local:1: {rates['local:2'] / rates['local:1']:.2f}x")
    record.figure("local:2 over local:1", rates["local:2"] / rates["local:1"], "x")
    record.finish()


if __name__ == "__main__":
    main()
