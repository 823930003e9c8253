"""Benchmark of memory (`nox -s bench_memory`): the peak PSS of a whole
`generate` command's process tree (phase 1) at growing scales, 1 and 2
processes (the simulators' state beyond its budget lives in a file: the rows say
how large), and the reference engine of phase 5 (build seconds, PSS it adds,
and the same answers read back from its disk cache). PSS counts a page shared
by n processes 1/n in each; summed RSS would count it n times. Figures come
from here, never from timed tests."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import psutil

from benchmarks import record
from benchmarks.generate import measure

SCALES = {100: ("2016-01-02T00:00:00Z", "1 day"), 10_000: ("2016-01-01T00:10:00Z", "10 min"),
          100_000: ("2016-01-01T00:01:00Z", "1 min"),
          1_000_000: ("2016-01-01T00:00:20Z", "20 s")}   # hosts: the end (from 2016-01-01), the span
REFERENCE_TYPES = ["max-cpu-1", "max-cpu-8", "single-groupby-1-1-1", "double-groupby-all", "lastpoint"]


def generator(processes: list[int]) -> None:
    print("generate, devops, influx, to /dev/null: peak PSS of the process tree (largest RSS of one process)")
    for scale, (end, span) in SCALES.items():
        for p in processes:
            r = measure([sys.executable, "-m", "tsbench", "generate", "--scale", str(scale), "--end", end,
                         "--seed", "123", "-o", "/dev/null", "-j", str(p)])
            where = f"state in a file of {r['state_file_mb']} MB" if r["state_file_mb"] else "state in memory"
            print(f"  {scale:>9,} hosts x {span:<6} -j{p} ({r['used']} used): {r['peak_total'] / 2**20:7.1f} MiB PSS"
                  f" ({r['peak_one'] / 2**20:.1f} MiB RSS)  {r['wall']:.1f} s  {where}", flush=True)
            record.figure(f"generate {scale:,} hosts x {span}, -j{p}: peak PSS of the process tree",
                          r["peak_total"] / 2**20, "MiB")


def _reference_child(end: str, cache: str) -> None:
    """In a fresh process: draw the queries and answer them all, saying build time and PSS."""
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.experiments import session

    os.environ["TSBENCH_REFERENCE_CACHE"] = cache
    me = psutil.Process()
    pss0, t0 = me.memory_full_info().pss, time.perf_counter()
    ds = resolve(DatasetSpec(use_case="devops", scale=100, end=end, seed=123))
    ref = session.reference(ds, say=lambda m: None)
    specs = session.draw(ds, REFERENCE_TYPES, 5, 123, reference=ref)
    for s in specs:
        ref.expected(s)
    s = ref.summary()
    print(f"    {time.perf_counter() - t0:6.1f} s for {len(specs)} answers; engine built: {s['built']} "
          f"({s['build_seconds']:.1f} s, {s['pss_added_bytes'] / 2**20:,.0f} MiB PSS added); "
          f"cache hits {s['hits']}, misses {s['misses']}; process PSS at the end "
          f"{(me.memory_full_info().pss - pss0) / 2**20:,.0f} MiB over its start")


def reference(end: str) -> None:
    print(f"reference engine, devops 100 hosts to {end}, {len(REFERENCE_TYPES)} types x 5 queries:")
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty cache", "filled cache"):
            print(f"  {label}:", flush=True)
            subprocess.run([sys.executable, "-m", "benchmarks.memory", "--reference-child", end, cache], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--processes", default="1,2")
    ap.add_argument("--reference-end", default="2016-01-02T00:00:00Z")
    ap.add_argument("--reference-child", nargs=2, help=argparse.SUPPRESS)
    record.arguments(ap)
    a = ap.parse_args()
    if a.reference_child:
        return _reference_child(*a.reference_child)
    record.start("memory", a)
    generator([int(p) for p in a.processes.split(",")])
    reference(a.reference_end)
    record.finish()


if __name__ == "__main__":
    main()
