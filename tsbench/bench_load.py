"""Benchmark of phase 2 (`nox -s bench_load`): devops 100 hosts, loaded by
`python -m tsbench load` into the null target (the harness ceiling), the null
HTTP sink, and local InfluxDB and VictoriaMetrics servers (2 workers x 10,000
rows, the first 6 hours = 1,944,000 rows). Prints rows/s, client and server
CPU seconds, medians over runs. Figures come from here, never from timed tests."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CASES = {
    # name: (target, data file key, extra load args)
    "null": ("null", "day", []),
    "null-http": ("null-http", "day", ["-w", "2"]),
    "influx": ("influx", "6h", ["-w", "2", "-b", "10000"]),
    "victoriametrics": ("victoriametrics", "6h", ["-w", "2", "-b", "10000"]),
}
ENDS = {"day": "2016-01-02T00:00:00Z", "6h": "2016-01-01T06:00:00Z"}


def _generate(d: str, key: str, scale: int) -> str:
    path = os.path.join(d, f"devops{scale}-{key}.lp")
    if not os.path.exists(path + ".manifest.json"):
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(scale), "--seed", "123",
                        "--end", ENDS[key], "-j", "2", "-o", path], check=True)
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
    print(f"{'case':>16} {'rows':>10} {'seconds':>8} {'rows/s':>11} {'values/s':>12} {'MB/s':>7} "
          f"{'client CPU s':>12} {'server CPU s':>12} {'backoffs':>8}")
    for name in a.cases.split(","):
        target, key, extra = CASES[name]
        path = _generate(d, key, a.scale)
        runs = [_run(path, target, extra, d) for _ in range(a.runs)]
        med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
        scpu = [r["server_cpu_seconds"] for r in runs if r["server_cpu_seconds"] is not None]
        print(f"{name:>16} {runs[0]['rows']:>10,} {med('seconds'):>8.2f} {med('rows_per_s'):>11,.0f} "
              f"{med('values_per_s'):>12,.0f} {med('mb_per_s'):>7,.0f} {med('client_cpu_seconds'):>12.2f} "
              f"{(statistics.median(scpu) if scpu else float('nan')):>12.2f} {med('backoffs'):>8.0f}")


if __name__ == "__main__":
    main()
