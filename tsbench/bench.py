"""Benchmark of phase 1 (`nox -s bench`): times `python -m tsbench generate`
as a whole command and prints rows/s, values/s, MB/s, CPU seconds and peak RSS
for 1 and 2 processes, then where one process's time goes: making the values
(the C core's simulation alone, ts_sim_simulate), formatting them (a fill into
one reused buffer, less that), and the rest of the command (start-up, writing,
manifest). Figures come from a benchmark, never from timed tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import psutil


def measure(args: list[str]) -> dict:
    """Run one command; sample the memory of its whole process tree every 100 ms:
    the largest RSS of one process, and the sum of PSS (shared pages once)."""
    t0 = time.perf_counter()
    proc = psutil.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_total = peak_one = 0
    while proc.poll() is None:
        try:
            procs = [proc] + proc.children(recursive=True)
            rss, pss = [], []
            for p in procs:
                try:
                    mi = p.memory_full_info()
                    rss.append(mi.rss)
                    pss.append(mi.pss)
                except psutil.NoSuchProcess:
                    pass
            peak_total, peak_one = max(peak_total, sum(pss)), max(peak_one, max(rss, default=0))
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.1)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode()
    if proc.returncode != 0:
        raise SystemExit(f"benchmark command failed: {err}")
    gen = re.search(r" in ([0-9.]+) s \(.*?(?:, (\d+) processes)?\)", err)   # the summary: after start-up
    state = re.search(r"state in a file of ([0-9,]+) MB", err)        # the summary says where the state was
    return {"wall": wall, "peak_total": peak_total, "peak_one": peak_one, "state_file_mb": state[1] if state else None,
            "gen": float(gen[1]) if gen else None, "used": int(gen[2] or 1) if gen else None}


def _timed(work) -> float:
    """CPU seconds of work in this process (steadier than wall time on a shared machine)."""
    t0 = time.process_time()
    work()
    return time.process_time() - t0


def _simulate_all(sim) -> None:
    while not sim.simulate(1 << 20).done:
        pass


def _fill_all(sim, fmt: str, buf) -> None:
    while not sim.fill(fmt, buf).done:
        pass


def phases(a, rows: int, command_cpu: float) -> None:
    """The one-process split of CPU seconds: simulate, format, rest of the command (medians of a.runs)."""
    from .dataset import DatasetSpec, resolve
    from .generate import BUF_BYTES
    from .native import Simulator

    ds = resolve(DatasetSpec(use_case="devops", scale=a.scale, end=a.end, seed=123))
    new = lambda: Simulator(ds.compiled, 123, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs, cache=a.format)
    sim_s = statistics.median(_timed(lambda: _simulate_all(new())) for _ in range(a.runs))
    buf = bytearray(max(BUF_BYTES, 2 * new().record_bound(a.format)))
    fill_s = statistics.median(_timed(lambda: _fill_all(new(), a.format, buf)) for _ in range(a.runs))
    print(f"one process, where the CPU time goes (medians of {a.runs}; fill = simulate + format):")
    for name, sec, what in (("simulate", sim_s, "the values alone (ts_sim_simulate)"),
                            ("format", fill_s - sim_s, f"{a.format} text from them"),
                            ("fill", fill_s, "ts_sim_fill into one reused buffer"),
                            ("rest", command_cpu - fill_s, "start-up, writing, manifest"),
                            ("command", command_cpu, "the whole generate command")):
        rate = f"{rows / sec:>12,.0f} rows/s" if sec > 0 else ""
        print(f"{name:>9} {sec:>8.2f} CPU s {rate}  {what}")


def compile_bytecode() -> None:
    """Write tsbench's bytecode first, as installing a package does: where
    PYTHONDONTWRITEBYTECODE is set, every timed command would compile its modules again."""
    import compileall

    import tsbench

    compileall.compile_dir(os.path.dirname(tsbench.__file__), quiet=2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=100)
    ap.add_argument("--end", default="2016-01-02T00:00:00Z")
    ap.add_argument("--format", default="influx")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--processes", default="1,2")
    ap.add_argument("--no-phases", action="store_true", help="skip the one-process split")
    a = ap.parse_args()
    compile_bytecode()
    with tempfile.TemporaryDirectory() as d:
        # the manifest of one real run gives the row and value counts
        probe = os.path.join(d, "probe")
        subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--scale", str(a.scale), "--end", a.end,
                        "--seed", "123", "--format", a.format, "-o", probe], check=True)
        m = json.load(open(probe + ".manifest.json"))
        os.unlink(probe)
    rows, values, nbytes = m["rows"], m["values"], m["bytes"]
    print(f"devops-like workload: {a.scale} entities, {m['spec']['epochs']} epochs, {a.format}: "
          f"{rows:,} rows, {values:,} values, {nbytes / 1e6:,.0f} MB; {a.runs} runs each, medians")
    print(f"{'processes':>9} {'seconds':>8} {'gen s':>7} {'rows/s':>12} {'values/s':>13} {'MB/s':>8} {'CPU s':>7} "
          f"{'RSS max proc':>13} {'PSS all procs':>14}")
    cpus, walls, gens = {}, {}, {}
    for p in [int(x) for x in a.processes.split(",")]:
        cmd = [sys.executable, "-m", "tsbench", "generate", "--scale", str(a.scale), "--end", a.end,
               "--seed", "123", "--format", a.format, "-o", "/dev/null", "--processes", str(p)]
        runs = []
        for _ in range(a.runs):
            before = os.times()
            r = measure(cmd)
            after = os.times()
            r["cpu"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
            runs.append(r)
        wall = walls[p] = statistics.median(r["wall"] for r in runs)
        gen = gens[p] = statistics.median(r["gen"] for r in runs)
        cpu = cpus[p] = statistics.median(r["cpu"] for r in runs)
        used = f"{p} ({runs[0]['used']})" if runs[0]["used"] != p else str(p)
        print(f"{used:>9} {wall:>8.2f} {gen:>7.2f} {rows / wall:>12,.0f} {values / wall:>13,.0f} "
              f"{nbytes / wall / 1e6:>8,.0f} {cpu:>7.2f} {max(r['peak_one'] for r in runs) / 2**20:>10.1f} MB "
              f"{max(r['peak_total'] for r in runs) / 2**20:>11.1f} MB")
    print("seconds: median wall time of the whole command, interpreter start-up and imports included")
    print("  (tsbench's bytecode compiled beforehand, as an install does);")
    print("gen s: the generation alone (the command's own figure, after start-up and imports);")
    print("CPU s: user + system of all its processes; N (M): -j N asked, M processes used.")
    for p in (p for p in walls if p > 1 and 1 in walls):
        print(f"-j{p} against -j1: {walls[1] / walls[p]:.2f}x the whole command, "
              f"{gens[1] / gens[p]:.2f}x the generation alone (goal: 1.8x at -j2 on 2 cores)")
    if not a.no_phases and 1 in cpus:
        phases(a, rows, cpus[1])


if __name__ == "__main__":
    main()
