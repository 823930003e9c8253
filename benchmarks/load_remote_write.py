"""Benchmark of phase 2 (`nox -s bench_remote_write`): VictoriaMetrics (started here) loaded by
influx line protocol (/write) and by Prometheus remote-write (-O protocol=remote-write: the C
core's WriteRequests, snappy by cramjam, to /api/v1/write), devops 100 hosts x 3 hours,
2 workers x 10,000 rows, in alternating rounds (line, remote-write, line, ...) so both meet the
same load of a shared machine. Prints each protocol's medians (rows/s, client and server CPU s)
and remote-write's client CPU per row over line protocol's, round by round (the goal: within
2x); then the body's cost alone: the encoder's and snappy's CPU ns per row."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from benchmarks import record
from benchmarks.load import _generate, _run
from tsbench import databases
from tsbench.data.batches import BatchReader
from tsbench.databases.shared.remote_write import RemoteWriteBody

PROTOCOLS = ("line", "remote-write")
# reuse: the same samples again into one store (a drop here failed its own check once: series
# still listed after /api/v1/admin/tsdb/delete_series)
LOAD_ARGS = ["-w", "2", "-b", "10000", "--if-exists", "reuse", "--no-verify", "--no-compact"]
SAMPLE_ROWS = 1_000_000            # the body's cost alone: the file's first batches up to this many rows


def _rounds(path: str, d: str, runs: int) -> list[dict]:
    server = databases.server_class("victoriametrics")(name=f"bench-rw-{os.getpid()}", instance_dir=d + "/vm")
    with server:
        return [{p: _run(path, "victoriametrics", [*LOAD_ARGS, "-O", f"protocol={p}"], d, server)
                 for p in PROTOCOLS} for _ in range(runs)]


def _print(rounds: list[dict]) -> None:
    print(f"{'protocol':>13} {'rows':>10} {'rows/s':>10} {'client CPU s':>12} {'CPU us/row':>10} {'server CPU s':>12}")
    for p in PROTOCOLS:
        med = {k: statistics.median(r[p][k] for r in rounds)
               for k in ("rows_per_s", "client_cpu_seconds", "server_cpu_seconds")}
        rows = rounds[0][p]["rows"]
        print(f"{p:>13} {rows:>10,} {med['rows_per_s']:>10,.0f} {med['client_cpu_seconds']:>12.2f} "
              f"{med['client_cpu_seconds'] / rows * 1e6:>10.2f} {med['server_cpu_seconds']:>12.2f}")
        record.figure(f"victoriametrics {p}: load rate", med["rows_per_s"], "rows/s")
        record.figure(f"victoriametrics {p}: client CPU", med["client_cpu_seconds"], "s")
        record.figure(f"victoriametrics {p}: server CPU", med["server_cpu_seconds"], "s")
    ratios = sorted(r["remote-write"]["client_cpu_seconds"] / r["line"]["client_cpu_seconds"] for r in rounds)
    print(f"remote-write's client CPU over line protocol's, round by round: median x{statistics.median(ratios):.2f} "
          f"(x{ratios[0]:.2f} to x{ratios[-1]:.2f}; the goal: at most x2)")
    record.figure("victoriametrics remote-write / line: client CPU", statistics.median(ratios), "x")


def _body_alone(path: str) -> None:
    """The encoder (scan and WriteRequest, in C) and snappy over the file's first batches: CPU ns per row."""
    batches, rows = [], 0
    for b in BatchReader(path, "influx", 10_000):
        batches.append(bytes(b.data))
        rows += b.rows
        if rows >= SAMPLE_ROWS:
            break
    rw = RemoteWriteBody()
    t = time.process_time()
    bodies = [bytes(rw.encoder.encode(b).body) for b in batches]
    enc = time.process_time() - t
    t = time.process_time()
    wire = sum(len(rw.body(b)) for b in batches)
    both = time.process_time() - t
    plain = sum(map(len, batches))
    print(f"the body alone, {rows:,} rows: encoder {enc / rows * 1e9:.0f} ns/row, encoder + snappy "
          f"{both / rows * 1e9:.0f} ns/row; bytes: line protocol {plain:,}, WriteRequest "
          f"{sum(map(len, bodies)):,}, snappy'd {wire:,}")
    record.figure("remote-write body: encoder + snappy CPU per row", both / rows * 1e9, "ns")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data-dir", default=None, help="Keep the generated file here between runs.")
    record.arguments(ap)
    a = ap.parse_args()
    record.start("load_remote_write", a)
    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    path = _generate(d, "3h", a.scale, "influx")
    print(f"VictoriaMetrics, devops {a.scale} hosts x 3 h, {LOAD_ARGS[1]} workers x {LOAD_ARGS[3]} rows, "
          f"{a.runs} alternating rounds, medians; CPU s = user + system of the load phase (client), of the server")
    _print(_rounds(path, d, a.runs))
    _body_alone(path)
    record.finish()


if __name__ == "__main__":
    main()
