"""Benchmark of phase 1 (`nox -s bench`): times `python -m tsbench generate`
as a whole command and prints rows/s, values/s, MB/s, CPU seconds and peak RSS
for 1 and 2 processes in alternating rounds, each round also timing the machine's own
two-process ceiling and where one process's time goes (making the values: the C core's
simulation alone, ts_sim_simulate; formatting them: a fill into one reused buffer, less
that; the rest of the command: start-up, writing, manifest), so that every figure is set
against the minute it ran in. Figures come from a benchmark, never from timed tests.
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
import threading
import time

import psutil

from benchmarks import record


def _sample_memory(proc: psutil.Popen, peaks: dict, done: threading.Event) -> None:
    """Every 100 ms until `done`: the largest RSS of one process of the tree, and the
    largest sum of PSS (shared pages once)."""
    while not done.is_set():
        rss, pss = [], []
        try:
            procs = [proc] + proc.children(recursive=True)
        except psutil.NoSuchProcess:     # the command ended between two samples: nothing to add
            procs = []
        for p in procs:
            try:
                mi = p.memory_full_info()
            except psutil.NoSuchProcess:  # a worker ended between listing and reading: nothing to add
                continue
            rss.append(mi.rss)
            pss.append(mi.pss)
        peaks["total"], peaks["one"] = max(peaks["total"], sum(pss)), max(peaks["one"], max(rss, default=0))
        done.wait(0.1)


def measure(args: list[str], memory: bool = True) -> dict:
    """Run one command: its wall seconds (to the moment it exits: this thread blocks in
    wait) and, when `memory`, the peak memory of its process tree, sampled in a thread
    (reading smaps costs CPU: the timed runs of main() sample nothing)."""
    t0 = time.perf_counter()
    proc = psutil.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks, done = {"total": 0, "one": 0}, threading.Event()
    sampler = threading.Thread(target=_sample_memory, args=(proc, peaks, done), daemon=True)
    if memory:
        sampler.start()
    err = proc.stderr.read().decode()     # to its end: the command has closed it
    proc.wait()
    wall = time.perf_counter() - t0
    done.set()
    if memory:
        sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"benchmark command failed: {err}")
    gen = re.search(r" in ([0-9.]+) s \(.*?(?:, (\d+) processes)?\)", err)   # the summary: after start-up
    state = re.search(r"state in a file of ([0-9,]+) MB", err)        # the summary says where the state was
    return {"wall": wall, "peak_total": peaks["total"], "peak_one": peaks["one"],
            "state_file_mb": state[1] if state else None,
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


def phase_round(a) -> tuple[float, float]:
    """One round of the one-process split, in this process: CPU seconds to simulate the
    whole dataset (ts_sim_simulate) and to fill it into one reused buffer (simulate +
    format). Timed in the rounds of the commands, so each figure has the minute of the
    command it is set against."""
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import BUF_BYTES
    from tsbench.data.native import Simulator

    ds = resolve(DatasetSpec(use_case="devops", scale=a.scale, end=a.end, seed=123))
    new = lambda: Simulator(ds.compiled, 123, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs, cache=a.format)
    buf = bytearray(max(BUF_BYTES, 2 * new().record_bound(a.format)))
    return _timed(lambda: _simulate_all(new())), _timed(lambda: _fill_all(new(), a.format, buf))


def print_phases(a, rows: int, splits: list[tuple[float, float]], one: list[dict]) -> None:
    """Where one process's CPU time goes: medians over the rounds, the rest of the command
    from each round's command less that round's fill (the same minute of the machine)."""
    sim, fill = [x[0] for x in splits], sorted(x[1] for x in splits)
    rest = sorted(r["cpu"] - f for r, (_, f) in zip(one, splits))
    fmt = [x[1] - x[0] for x in splits]
    print(f"one process, where the CPU time goes (medians of the same {len(splits)} rounds; fill = simulate + "
          f"format; rest = each round's -j1 command less its fill):")
    for name, sec, what in (("simulate", statistics.median(sim), "the values alone (ts_sim_simulate)"),
                            ("format", statistics.median(fmt), f"{a.format} text from them"),
                            ("fill", statistics.median(fill), f"ts_sim_fill into one reused buffer "
                                                              f"(rounds {fill[0]:.2f}-{fill[-1]:.2f} CPU s)"),
                            ("rest", statistics.median(rest), f"start-up, writing, manifest "
                                                              f"(rounds {rest[0]:.2f}-{rest[-1]:.2f} CPU s)"),
                            ("command", statistics.median(r["cpu"] for r in one), "the whole generate command")):
        rate = f"{rows / sec:>12,.0f} rows/s" if sec > 0 and name != "rest" else f"{'':>19}"
        print(f"{name:>9} {sec:>8.2f} CPU s {rate}  {what}")
        record.figure(f"one process: {name} ({what.split(' (')[0]})", sec, "CPU s")


def _fill_slice(a, lo: int, hi: int) -> None:
    """(A child of ceiling_round) fill entities [lo, hi) into one reused buffer; print the wall seconds."""
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import BUF_BYTES
    from tsbench.data.native import Simulator

    ds = resolve(DatasetSpec(use_case="devops", scale=a.scale, end=a.end, seed=123))
    sim = Simulator(ds.compiled, 123, lo, hi, ds.start_ns, ds.interval_ns, ds.epochs, cache=a.format)
    buf = bytearray(max(BUF_BYTES, 2 * sim.record_bound(a.format)))
    t0 = time.perf_counter()
    _fill_all(sim, a.format, buf)
    print(f"{time.perf_counter() - t0:.4f}")


def ceiling_round(a) -> tuple[float, float]:
    """One round of the machine's own ceiling for -j2: each half of the hosts filled alone,
    one after the other, then both halves in two processes at once (no merge, no hand-offs,
    no start-up timed). Returns the two wall times: (alone, together)."""
    half = [(0, a.scale // 2), (a.scale // 2, a.scale)]
    child = lambda lo, hi: subprocess.Popen([sys.executable, "-m", "benchmarks.generate", "--scale", str(a.scale),
                                             "--end", a.end, "--format", a.format, "--fill-slice", str(lo),
                                             str(hi)], stdout=subprocess.PIPE)
    seconds = lambda procs: [float(p.communicate()[0]) for p in procs]
    return sum(seconds([child(*h)])[0] for h in half), max(seconds([child(*h) for h in half]))


def print_ceiling(ceilings: list[tuple[float, float]], two: list[dict]) -> None:
    """The machine's ceiling, and -j2's generation against it, each from the same rounds."""
    alone, together = [c[0] for c in ceilings], [c[1] for c in ceilings]
    print(f"the machine's ceiling for -j2 (medians of the same {len(ceilings)} rounds): the two halves' fills one "
          f"after the other {statistics.median(alone):.2f} s, side by side in two processes "
          f"{statistics.median(together):.2f} s: {_spread(ceilings, 'x')}, where two full cores would give 2x")
    if two[0]["used"] != 2:
        return                  # -j2 ran one process: nothing of two to set against the ceiling
    share = _spread([(c[1], r["gen"]) for c, r in zip(ceilings, two)])
    print(f"  -j2's generation against the two halves side by side in the same round (their fills alone, "
          f"no merge, no writes): {share} of their speed")


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
    ap.add_argument("--no-ceiling", action="store_true", help="skip the machine's two-process ceiling")
    ap.add_argument("--fill-slice", nargs=2, type=int, help=argparse.SUPPRESS)
    record.arguments(ap)
    a = ap.parse_args()
    if a.fill_slice:
        return _fill_slice(a, *a.fill_slice)
    record.start("generate", a)
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
    print(f"{'processes':>9} {'seconds':>8} {'best':>6} {'gen s':>7} {'rows/s':>12} {'values/s':>13} {'MB/s':>8} {'CPU s':>7} "
          f"{'RSS max proc':>13} {'PSS all procs':>14}")
    cmds = {p: [sys.executable, "-m", "tsbench", "generate", "--scale", str(a.scale), "--end", a.end,
                "--seed", "123", "--format", a.format, "-o", "/dev/null", "--processes", str(p)]
            for p in [int(x) for x in a.processes.split(",")]}
    extras = {}
    if not a.no_ceiling and 2 in cmds:
        extras["ceiling"] = lambda: ceiling_round(a)
    if not a.no_phases and 1 in cmds:
        extras["phases"] = lambda: phase_round(a)
    results, more = timed_rounds(cmds, a.runs, extras)
    for p, runs in results.items():
        print_row(p, runs, measure(cmds[p]), m)
    print("seconds: median wall time of the whole command, interpreter start-up and imports included")
    print("  (tsbench's bytecode compiled beforehand, as an install does); best: the fastest run;")
    print("gen s: the generation alone (the command's own figure, after start-up and imports);")
    print("CPU s: user + system of all its processes; N (M): -j N asked, M processes used;")
    print("RSS, PSS: one more run, its process tree sampled every 100 ms (the timed runs are not sampled).")
    print_ratios(results)
    if "ceiling" in more:
        print_ceiling(more["ceiling"], results[2])
    if "phases" in more:
        print_phases(a, rows, more["phases"], results[1])
    record.finish()


def timed_rounds(cmds: dict[int, list[str]], rounds: int, extras: dict) -> tuple[dict[int, list[dict]], dict]:
    """Each command once a round, in turn (-j1, -j2, -j1, ...), then each of `extras`
    (name: a callable timing something else), so that a drift of the machine's speed falls
    on all alike; CPU seconds of each run from this process's children's times. Returns
    the runs, and each extra's results in round order."""
    out: dict[int, list[dict]] = {p: [] for p in cmds}
    more: dict[str, list] = {name: [] for name in extras}
    for _ in range(rounds):
        for p, cmd in cmds.items():
            before = os.times()
            r = measure(cmd, memory=False)
            after = os.times()
            r["cpu"] = (after.children_user - before.children_user) + (after.children_system - before.children_system)
            out[p].append(r)
        for name, timed in extras.items():
            more[name].append(timed())
    return out, more


def print_row(p: int, runs: list[dict], mem: dict, m: dict) -> None:
    rows, values, nbytes = m["rows"], m["values"], m["bytes"]
    wall, best = statistics.median(r["wall"] for r in runs), min(r["wall"] for r in runs)
    gen, cpu = statistics.median(r["gen"] for r in runs), statistics.median(r["cpu"] for r in runs)
    used = f"{p} ({runs[0]['used']})" if runs[0]["used"] != p else str(p)
    print(f"{used:>9} {wall:>8.2f} {best:>6.2f} {gen:>7.2f} {rows / wall:>12,.0f} {values / wall:>13,.0f} "
          f"{nbytes / wall / 1e6:>8,.0f} {cpu:>7.2f} {mem['peak_one'] / 2**20:>10.1f} MB "
          f"{mem['peak_total'] / 2**20:>11.1f} MB")
    record.figure(f"-j{p}: whole command, median wall time", wall, "s")
    record.figure(f"-j{p}: rows per second of the whole command", rows / wall, "rows/s")
    record.figure(f"-j{p}: CPU time, all processes", cpu, "s")
    record.figure(f"-j{p}: peak PSS of the process tree", mem["peak_total"] / 2**20, "MiB")


def print_ratios(results: dict[int, list[dict]]) -> None:
    """-jN against -j1: the median of the ratios of the runs of the same round."""
    for p in (p for p in results if p > 1 and 1 in results):
        pairs = list(zip(results[1], results[p]))
        whole = _spread([(one["wall"], many["wall"]) for one, many in pairs], "x")
        record.figure(f"-j{p} against -j1, whole command (median of the rounds' ratios)",
                      statistics.median(one["wall"] / many["wall"] for one, many in pairs), "x")
        gen = _spread([(one["gen"], many["gen"]) for one, many in pairs], "x")
        print(f"-j{p} against -j1 (median of the {len(pairs)} rounds' ratios, their range): "
              f"{whole} the whole command, {gen} the generation alone; goal 1.8x at -j2")
        one = statistics.median(r["wall"] - r["gen"] for r in results[1])
        print(f"  the rest of the -j1 command (start-up, imports, exit), which runs once however many processes: "
              f"{one:.2f} s; with the generation alone {p}x faster, the whole command could reach at most "
              f"{_whole_ratio(results[1], p, one):.2f}x")


def _spread(pairs: list[tuple[float, float]], unit: str = "") -> str:
    """The median of the ratios a / b of the pairs, and their range: "1.53x (1.12-2.10)".
    A pair whose b the command's summary rounded to 0 s has no ratio; "n/a" when none has."""
    ratios = sorted(a / b for a, b in pairs if b > 0)
    if not ratios:
        return "n/a (times below the summary's 0.01 s)"
    return f"{statistics.median(ratios):.2f}{unit} ({ratios[0]:.2f}-{ratios[-1]:.2f})"


def _whole_ratio(runs: list[dict], gen_ratio: float, rest: float) -> float:
    """Amdahl: the whole command's ratio when only its generation is `gen_ratio` times faster."""
    gen = statistics.median(r["gen"] for r in runs)
    return (rest + gen) / (rest + gen / gen_ratio) if rest + gen > 0 else 1.0


if __name__ == "__main__":
    main()
