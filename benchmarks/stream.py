"""Benchmark of `stream` (`nox -s bench_stream`): DevOps-100 into the null HTTP sink,
streamed (generated on the fly by the C core, 4 writers x 10,000 rows, as fast as
answered, 1,080 points per series = 972,000 rows) beside `load` of the same rows from
a file (the harness over HTTP, 4 workers): rows/s and rows per client CPU second (per
core), medians over runs. Then one open-loop stream of --minutes at --rate rows/s: the
stream process's PSS (the sink apart) after 10 s and at the end, MB.

With --inch PATH (an inch binary built beside the project), tsbench's stream beside
inch: the same points (--tags series x --points points, one field, --batch rows, --writers
concurrent writers) into one local InfluxDB that tsbench starts (and stops by its pid at
the end), in alternating rounds (tsbench, inch, ...). Each round: the whole process's CPU
seconds (user + system of the child and anything it waited for, from the children's
rusage), the stream's own client CPU as tsbench reports it, points/s as each tool reports
it, and the ratio tsbench/inch; then medians. Also tsbench's start-up CPU alone: the
process's CPU when its timed part (the first write) begins, from a run whose module
tsbench.stream.run is wrapped on import. The children write bytecode caches (as an
installed package has them; one warm-up run of each tool first). Last, the generator alone
(in process) with and without --churn 0.1/60s, in alternating rounds: CPU ns a DevOps row.
Figures come from here, never from timed tests."""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

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


# ---- beside inch (--inch) ----------------------------------------------------------------------

# run as `python -c`: tsbench's command line, with the process's CPU printed when the timed part
# of the stream (its first write) begins; the module is wrapped as it is imported, so the
# imports come in the order they come in without the probe
STARTUP_PROBE = r"""
import importlib.machinery, resource, runpy, sys

class Watch:
    def find_spec(self, name, path, target=None):
        if name != "tsbench.stream.run":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            timed = module._timed

            async def first_write(*args, **kwargs):
                r = resource.getrusage(resource.RUSAGE_SELF)
                print(f"STARTUP-CPU {r.ru_utime + r.ru_stime:.4f}", file=sys.stderr, flush=True)
                return await timed(*args, **kwargs)
            module._timed = first_write
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Watch())
sys.argv = ["tsbench", *sys.argv[1:]]
runpy.run_module("tsbench", run_name="__main__", alter_sys=True)
"""


def _child_env() -> dict:
    """The children's environment: bytecode caches written (an installed package has them)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _timed_child(cmd: list[str]) -> tuple[float, str, str]:
    """Run cmd to its end: its CPU seconds (user + system, its own and its waited-for
    children's), stdout and stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=_child_env())
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return cpu, p.stdout, p.stderr


def _tsbench_args(url: str, a, json_out: str) -> list[str]:
    return ["stream", "-t", "influx", "-s", url, "-u", "synthetic", "-P", f"tags={a.tags}",
            "--points-per-series", str(a.points), "-w", str(a.writers), "-b", str(a.batch),
            "--if-exists", "drop", "-q", "--json", json_out]


def _tsbench_round(url: str, a, d: str) -> dict:
    cpu, _, _ = _timed_child([sys.executable, "-m", "tsbench", *_tsbench_args(url, a, f"{d}/inch-side.json")])
    s = json.load(open(f"{d}/inch-side.json"))
    if not s["verify"]["ok"]:
        raise SystemExit(f"tsbench stream: count not verified: {s['verify']}")
    return {"cpu": cpu, "stream_cpu": s["client_cpu_seconds"], "points_per_s": s["rows_per_s"]}


def _startup_round(url: str, a, d: str) -> float:
    _, _, err = _timed_child([sys.executable, "-c", STARTUP_PROBE, *_tsbench_args(url, a, f"{d}/inch-probe.json")])
    return float(re.search(r"STARTUP-CPU ([0-9.]+)", err).group(1))


def _drop(url: str, db: str) -> None:
    body = urllib.parse.urlencode({"q": f'DROP DATABASE "{db}"'}).encode()
    urllib.request.urlopen(url + "/query", body, timeout=60).read()


def _inch_round(inch: str, url: str, a) -> dict:
    _drop(url, "stress")                        # each round on an empty database, as tsbench's (--if-exists drop)
    cpu, out, err = _timed_child([inch, "-host", url, "-t", a.tags, "-p", str(a.points), "-f", "1",
                                  "-b", str(a.batch), "-c", str(a.writers), "-v"])
    rates = re.findall(r"Total throughput: ([0-9.]+) pt/sec", out + err)
    errors = re.findall(r"Errors: ([0-9]+)", out + err)
    if not rates or not errors or errors[-1] != "0":
        raise SystemExit(f"inch: no throughput, or errors, in its output: {(out + err)[-2000:]}")
    return {"cpu": cpu, "points_per_s": float(rates[-1])}


def _beside_inch(a, d: str) -> None:
    from tsbench import databases

    series = 1
    for n in a.tags.split(","):
        series *= int(n)
    print(f"\ntsbench stream beside inch into InfluxDB: {series:,} series x {a.points:,} points "
          f"({series * a.points:,} points, one field), {a.writers} writers x {a.batch:,} points; "
          f"{a.rounds} alternating rounds, medians; CPU s = user + system of the whole process")
    srv = databases.server_class("influx")(name=f"bench-stream-influx-{os.getpid()}", instance_dir=f"{d}/influx")
    with srv:
        url = srv.url
        _tsbench_round(url, a, d), _inch_round(a.inch, url, a)            # warm-up: bytecode caches, page cache
        rounds = [(_tsbench_round(url, a, d), _inch_round(a.inch, url, a), _startup_round(url, a, d))
                  for _ in range(a.rounds)]
    shutil.rmtree(f"{d}/influx", ignore_errors=True)      # the server's data, once it is stopped
    _print_beside(rounds)


def _print_beside(rounds: list) -> None:
    print(f"{'round':>6} {'tsbench CPU s':>13} {'stream CPU s':>12} {'start-up CPU s':>14} {'inch CPU s':>10} "
          f"{'ratio':>6} {'tsbench pt/s':>12} {'inch pt/s':>10}")
    for i, (t, n, up) in enumerate(rounds, 1):
        print(f"{i:>6} {t['cpu']:>13.3f} {t['stream_cpu']:>12.3f} {up:>14.3f} {n['cpu']:>10.3f} "
              f"{t['cpu'] / n['cpu']:>6.2f} {t['points_per_s']:>12,.0f} {n['points_per_s']:>10,.0f}")
    med = {"tsbench whole-process CPU": (statistics.median(t["cpu"] for t, _, _ in rounds), "CPU s"),
           "tsbench stream CPU": (statistics.median(t["stream_cpu"] for t, _, _ in rounds), "CPU s"),
           "tsbench start-up CPU (to the first write)": (statistics.median(up for _, _, up in rounds), "CPU s"),
           "inch whole-process CPU": (statistics.median(n["cpu"] for _, n, _ in rounds), "CPU s"),
           "whole-process CPU ratio tsbench/inch": (statistics.median(t["cpu"] / n["cpu"] for t, n, _ in rounds), "x"),
           "tsbench points/s": (statistics.median(t["points_per_s"] for t, _, _ in rounds), "points/s"),
           "inch points/s": (statistics.median(n["points_per_s"] for _, n, _ in rounds), "points/s")}
    for name, (value, unit) in med.items():
        print(f"  median {name}: {value:,.3f} {unit}" if unit != "points/s" else f"  median {name}: {value:,.0f} {unit}")
        record.figure(f"beside inch: {name}", value, unit)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3, help="Runs of the null-sink figures (0: skip them).")
    ap.add_argument("--minutes", type=float, default=10.0, help="Length of the memory run (0: skip it).")
    ap.add_argument("--rate", type=int, default=100_000, help="rows/s of the memory run")
    ap.add_argument("--data-dir", default=None, help="Keep the generated file here between runs.")
    ap.add_argument("--inch", metavar="PATH", default=None, help="An inch binary: tsbench's stream beside it.")
    ap.add_argument("--rounds", type=int, default=5, help="Alternating rounds beside inch.")
    ap.add_argument("--tags", default="10,10,10", help="Beside inch: tag cardinalities (inch's -t).")
    ap.add_argument("--points", type=int, default=1000, help="Beside inch: points per series (inch's -p).")
    ap.add_argument("--batch", type=int, default=5000, help="Beside inch: points per write (inch's -b).")
    ap.add_argument("--writers", type=int, default=1, help="Beside inch: concurrent writers (inch's -c).")
    ap.add_argument("--churn-rounds", type=int, default=3,
                    help="Alternating rounds of the generator alone with and without --churn 0.1/60s (0: skip).")
    record.arguments(ap)
    a = ap.parse_args()
    record.start("stream", a)
    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    if a.runs:
        _null_sink(a, d)
    if a.minutes:
        _memory(a.minutes, a.rate, d)
    if a.inch:
        _beside_inch(a, d)
    if a.churn_rounds:
        _churn(a.churn_rounds)
    record.finish()


def _generated(churn: str | None) -> tuple[float, int, int]:
    """DevOps-100 over 1,200 epochs made by one BatchSource in batches of 1,000 rows, in
    process (no HTTP): CPU seconds, rows, series created."""
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.stream.churn import parse_churn
    from tsbench.stream.source import BatchSource

    ds = resolve(DatasetSpec(use_case="devops", scale=100, seed=123))
    src = BatchSource(ds, "influx", 0, ds.entities, 1200, 1000, churn and parse_churn(churn))
    cpu, rows, created = time.process_time(), 0, 0
    while (b := src.next()) is not None:
        rows, created = rows + b.rows, created + src.created
    return time.process_time() - cpu, rows, created


def _churn(rounds: int) -> None:
    """The generator's cost a row with and without churn (tag text renewed in the cache), in
    alternating rounds; medians."""
    got: dict = {None: [], "0.1/60s": []}
    for _ in range(rounds):
        for churn in got:
            got[churn].append(_generated(churn))
    for churn, runs in got.items():
        ns = statistics.median(cpu / rows * 1e9 for cpu, rows, _ in runs)
        print(f"generator, churn {churn or 'none':>8}: {ns:6.0f} ns a DevOps row (CPU), {runs[0][2]:,} series created, "
              f"{rounds} alternating rounds")
        record.figure(f"generator with churn {churn or 'none'}: CPU a row", ns, "ns")


def _null_sink(a, d: str) -> None:
    print(f"devops 100 hosts x {POINTS} points per series (972,000 rows) into the null HTTP sink, 4 x 10,000 rows; "
          f"medians of {a.runs}")
    for label, fn in (("load (file)", _load), ("stream (generated)", _stream)):
        runs = [fn(d) for _ in range(a.runs)]
        print(f"{label:>20}: {statistics.median(r[0] for r in runs):>10,.0f} rows/s "
              f"{statistics.median(r[1] for r in runs):>10,.0f} rows per client CPU s")
        record.figure(f"{label}: rate", statistics.median(r[0] for r in runs), "rows/s")
        record.figure(f"{label}: rows per client CPU second", statistics.median(r[1] for r in runs), "rows/CPU s")


if __name__ == "__main__":
    main()
