"""Benchmark of phase 2 (`nox -s bench_remote_write`): devops 100 hosts x 3 hours (2016-01-01
00:00 to 03:00), 2 workers x 10,000 rows, loaded into VictoriaMetrics by influx line protocol
(/write), into VictoriaMetrics by Prometheus remote-write (-O protocol=remote-write, to
/api/v1/write) and into Prometheus by remote-write, in alternating rounds (the three cases in
turn, again and again) so all meet the same load of a shared machine. Remote-write's bodies
(the C core's WriteRequests, snappy by cramjam) are built before the timed load, once per data
file and batch size (data/bodies.py), as line protocol's batches are the generated file: the
client CPU is the posting's in both. Prints each case's medians (rows/s, client and server CPU
s, client CPU per row) and each remote-write case's client CPU over line protocol's, round by
round (the goal: within 2x); then the body's cost alone (the untimed build): the encoder's
and snappy's CPU ns per row."""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time

from benchmarks import record
from benchmarks.load import _generate, _run
from tsbench import databases
from tsbench.data.batches import BatchReader
from tsbench.databases.shared.remote_write import RemoteWriteBody

# (name, target, options): line protocol's case first, the others' ratios are over it
CASES = (("victoriametrics line", "victoriametrics", ["-O", "protocol=line"]),
         ("victoriametrics remote-write", "victoriametrics", ["-O", "protocol=remote-write"]),
         ("prometheus remote-write", "prometheus", []))
LINE = CASES[0][0]
# reuse: VictoriaMetrics takes the same samples again into one store (a drop here failed its own
# check once: series still listed after /api/v1/admin/tsdb/delete_series); Prometheus gets a
# fresh server each round (it refuses a sample again at the same time with another value)
LOAD_ARGS = ["-w", "2", "-b", "10000", "--if-exists", "reuse", "--no-verify", "--no-compact"]
SAMPLE_ROWS = 1_000_000            # the body's cost alone: the file's first batches up to this many rows


def _server(kind: str, d: str, k: int):
    return databases.server_class(kind)(name=f"bench-rw-{kind}-{os.getpid()}-{k}", instance_dir=f"{d}/{kind}-{k}")


def _rounds(path: str, d: str, runs: int) -> list[dict]:
    rounds = []
    with _server("victoriametrics", d, 0) as vm:
        for k in range(runs):
            rounds.append({})
            for name, target, options in CASES:
                with contextlib.ExitStack() as fresh:
                    server = vm if target == "victoriametrics" else fresh.enter_context(_server(target, d, k))
                    rounds[-1][name] = _run(path, target, [*LOAD_ARGS, *options], d, server)
    return rounds


def _print(rounds: list[dict]) -> None:
    print(f"{'case':>28} {'rows':>10} {'rows/s':>10} {'client CPU s':>12} {'CPU us/row':>10} {'server CPU s':>12}")
    for name, _, _ in CASES:
        med = {k: statistics.median(r[name][k] for r in rounds)
               for k in ("rows_per_s", "client_cpu_seconds", "server_cpu_seconds")}
        rows = rounds[0][name]["rows"]
        print(f"{name:>28} {rows:>10,} {med['rows_per_s']:>10,.0f} {med['client_cpu_seconds']:>12.2f} "
              f"{med['client_cpu_seconds'] / rows * 1e6:>10.2f} {med['server_cpu_seconds']:>12.2f}")
        record.figure(f"{name}: load rate", med["rows_per_s"], "rows/s")
        record.figure(f"{name}: client CPU", med["client_cpu_seconds"], "s")
        record.figure(f"{name}: server CPU", med["server_cpu_seconds"], "s")
    for b in (r[name]["bodies"] for r in rounds for name, _, _ in CASES[1:] if r[name]["bodies"].get("built")):
        print(f"the remote-write bodies, built once before the first remote-write load (untimed; every later load, "
              f"Prometheus' too, reused them): {b['cpu_seconds']:.2f} client CPU s, "
              f"{b['cpu_seconds'] / rounds[0][LINE]['rows'] * 1e6:.2f} us/row, {b['bytes']:,} bytes")
        record.figure("remote-write bodies' build (untimed): client CPU", b["cpu_seconds"], "s")
    for name, _, _ in CASES[1:]:
        ratios = sorted(r[name]["client_cpu_seconds"] / r[LINE]["client_cpu_seconds"] for r in rounds)
        print(f"{name}'s client CPU over {LINE}'s, round by round: median x{statistics.median(ratios):.2f} "
              f"(x{ratios[0]:.2f} to x{ratios[-1]:.2f}; the goal: at most x2)")
        record.figure(f"{name} / line: client CPU", statistics.median(ratios), "x")


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
    print(f"devops {a.scale} hosts x 3 h, {LOAD_ARGS[1]} workers x {LOAD_ARGS[3]} rows, "
          f"{a.runs} alternating rounds, medians; CPU s = user + system of the load phase (client), of the server")
    _print(_rounds(path, d, a.runs))
    _body_alone(path)
    record.finish()


if __name__ == "__main__":
    main()
