"""Benchmark of phase 4 against phase 5 (`nox -s bench_validation`): does checking
the answers change the latencies? The devops family (4 queries a type) on devops
100 hosts x 12 h, on DuckDB and a local PostgreSQL, 4 workers, warm cache, run
alternately with and without validation: mean, median and p99 latency (ms) of
each and the ratio with / without. The checks run after the timed pass, so the
ratio should be noise (about 1). Figures come from here, never from timed tests."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile

from benchmarks import record


def _data(a, fmt: str) -> str:
    d = a.data_dir or tempfile.mkdtemp(prefix="tsbench-bench-")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"devops{a.scale}-12h.{fmt}")
    if not os.path.exists(path + ".manifest.json"):
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(a.scale), "--seed", "123",
                        "--end", "2016-01-01T12:00:00Z", "--format", fmt, "-o", path], check=True)
    return path


async def _target(a, name: str, ref) -> list[tuple]:
    """(validated, mean ms, p50 ms, p99 ms) of each run on one target."""
    from tsbench.data.datafile import open_datafile
    from tsbench.execute.run import ExecOptions
    from tsbench.experiments import session
    from tsbench.load.run import LoadOptions

    df = open_datafile(_data(a, "csv"))
    ds = df.dataset
    specs = session.draw(ds, session.select_types(ds, [], ["devops"]), a.count, 123, reference=ref)
    out = []
    async with session.open_target(session.Reach(name), announce=False) as c:
        await session.load(c, df, LoadOptions(progress=False, workers=2))
        for run in range(2 * a.runs):
            check = run % 2 == 1
            res = await session.run_queries(c, ds, specs, ExecOptions(workers=a.workers, progress=False,
                                                                        validate=check), ref if check else None)
            st = res.stats()[-1]
            assert not check or st["mismatches"] == 0, f"{name}: answers differ from the reference"
            out.append((check, st["mean_ms"], st["p50_ms"], st["p99_ms"]))
            print(f"{name:>10} {'with' if check else 'without':>8} {st['mean_ms']:>9.2f} {st['p50_ms']:>9.2f} "
                  f"{st['p99_ms']:>9.2f}", flush=True)
    return out


def _ratios(name: str, runs: list[tuple]) -> None:
    med = {k: [statistics.median(r[i] for r in runs if r[0] is k) for i in (1, 2, 3)] for k in (False, True)}
    print(f"{name:>10} {'ratio':>8} " + " ".join(f"{w / wo:>9.3f}" for w, wo in zip(med[True], med[False]))
          + "   (median of runs with / without validation)")
    for stat, w, wo in zip(("mean", "p50", "p99"), med[True], med[False]):
        record.figure(f"{name}: {stat} latency with validation over without", w / wo, "x")


async def _run(a) -> None:
    from tsbench.data.datafile import open_datafile
    from tsbench.experiments import session

    ds = open_datafile(_data(a, "csv")).dataset
    ref = session.reference(ds)
    print(f"devops {a.scale} hosts x 12 h, devops family x {a.count} queries, {a.workers} workers, warm cache, "
          f"{a.runs} runs each way, alternating")
    print(f"{'target':>10} {'checks':>8} {'mean ms':>9} {'p50 ms':>9} {'p99 ms':>9}")
    for name in a.targets:
        _ratios(name, await _target(a, name, ref))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--count", type=int, default=4, help="queries of each devops type")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--targets", nargs="+", default=["duckdb", "postgres"])
    ap.add_argument("--data-dir", default=None)
    record.arguments(ap)
    a = ap.parse_args()
    record.start("validation", a)
    asyncio.run(_run(a))
    record.finish()


if __name__ == "__main__":
    main()
