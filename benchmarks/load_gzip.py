"""The gzip case of `nox -s bench_load` (benchmarks/load.py, case influx-gzip): the client CPU of
a gzip'd load into InfluxDB (devops 100 hosts x 3 hours, 2 workers x 10,000 rows, one server
started here), tsbench's beside TSBS's when --tsbs-bin names its built binaries
(tsbs_generate_data and tsbs_load_influx; TSBS's own file of the same rows), in alternating
rounds: tsbench gzip'd, TSBS gzip'd, then each plain (the difference, over the MB loaded, is
each loader's compressor in place). Prints the medians of the load phase's and the whole
process's client CPU seconds and rows/s, and tsbench's compressor in isolation: CPU ms per MB
and the size ratio at each gzip_level, beside zlib's (the compressor before ISA-L)."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
import zlib

from benchmarks import record
from tsbench import databases
from tsbench.data.batches import BatchReader
from tsbench.databases.shared.http import ISAL_LEVEL, Gzip, GzipOption

LOAD_ARGS = ["-w", "2", "-b", "10000"]
SAMPLE_BYTES = 60_000_000          # the compressor's figures: the file's first batches up to this size


def run(path: str, d: str, runs: int, tsbs_bin: str | None) -> None:
    """The side-by-side rounds on one InfluxDB started here, then the compressor's figures."""
    tsbs_path = _tsbs_data(tsbs_bin, d) if tsbs_bin else None
    mb = {"tsbench": os.path.getsize(path) / 1e6, "tsbs": tsbs_path and os.path.getsize(tsbs_path) / 1e6}
    server = databases.server_class("influx")(name=f"bench-load-gzip-{os.getpid()}", instance_dir=d + "/influx")
    rounds = []
    with server:
        for _ in range(runs):
            r = {(who, gz): _one(who, gz, path if who == "tsbench" else tsbs_path, server.url, d, tsbs_bin)
                 for gz in (True, False) for who in ("tsbench", "tsbs") if who == "tsbench" or tsbs_bin}
            rounds.append(r)
    print(f"gzip'd loads into InfluxDB, {LOAD_ARGS[1]} workers x {LOAD_ARGS[3]} rows, {runs} alternating rounds, "
          f"medians; tsbench: --no-verify --no-compact; whole: the process's user + system CPU s")
    print(f"{'loader':>12} {'gzip':>5} {'MB':>7} {'rows/s':>9} {'load CPU s':>11} {'whole CPU s':>12} "
          f"{'gzip ms/MB in load':>19}")
    for who in ("tsbench", "tsbs"):
        if who == "tsbench" or tsbs_bin:
            _print_loader(who, rounds, mb[who])
    if tsbs_bin:
        for key in ("load", "whole"):
            ratios = sorted(r["tsbench", True][key] / r["tsbs", True]["whole"] for r in rounds)
            print(f"{'':>12} tsbench's {key} CPU s over TSBS's whole process's (gzip'd), round by round: "
                  f"median x{statistics.median(ratios):.2f} (x{ratios[0]:.2f} to x{ratios[-1]:.2f})")
    _compressor(path)


def _print_loader(who: str, rounds: list[dict], mb: float) -> None:
    med = {gz: {k: statistics.median(r[who, gz][k] for r in rounds if r[who, gz][k] is not None)
                if who == "tsbench" or k != "load" else None for k in ("rows_per_s", "load", "whole")}
           for gz in (True, False)}
    in_load = statistics.median((r[who, True]["whole"] - r[who, False]["whole"]) / mb * 1e3 for r in rounds)
    for gz in (True, False):
        m = med[gz]
        load = f"{m['load']:.2f}" if m["load"] is not None else "-"
        print(f"{who:>12} {'yes' if gz else 'no':>5} {mb:>7,.0f} {m['rows_per_s']:>9,.0f} {load:>11} "
              f"{m['whole']:>12.2f} {f'{in_load:.2f}' if gz else '':>19}")
    record.figure(f"influx-gzip {who}: whole-process client CPU", med[True]["whole"], "s")
    record.figure(f"influx-gzip {who}: load rate", med[True]["rows_per_s"], "rows/s")
    if med[True]["load"] is not None:
        record.figure(f"influx-gzip {who}: load-phase client CPU", med[True]["load"], "s")


def _one(who: str, gz: bool, path: str, url: str, d: str, tsbs_bin: str | None) -> dict:
    """One load into the server; its rows/s, load-phase CPU s (tsbench's summary; None for TSBS)
    and the whole process's CPU s (the children's rusage over the run)."""
    cpu0 = _children_cpu()
    if who == "tsbench":
        out = os.path.join(d, "summary-gzip.json")
        p = subprocess.run([sys.executable, "-m", "tsbench", "load", path, "-t", "influx", "-s", url, "-q",
                            "--json", out, "--if-exists", "drop", "--no-verify", "--no-compact", *LOAD_ARGS,
                            *(["-O", "gzip=true"] if gz else [])], capture_output=True)
        _check(p, "tsbench load")
        s = json.load(open(out))
        return {"rows_per_s": s["rows_per_s"], "load": s["client_cpu_seconds"], "whole": _children_cpu() - cpu0}
    p = subprocess.run([os.path.join(tsbs_bin, "tsbs_load_influx"), "--file", path, "--urls", url,
                        "--workers", LOAD_ARGS[1], "--batch-size", LOAD_ARGS[3], f"--gzip={str(gz).lower()}"],
                       capture_output=True)
    _check(p, "tsbs_load_influx")
    line = next(x for x in p.stdout.decode().splitlines() if " rows in " in x)
    return {"rows_per_s": float(line.split("mean rate ")[1].split()[0]), "load": None,
            "whole": _children_cpu() - cpu0}


def _tsbs_data(tsbs_bin: str, d: str) -> str:
    """TSBS's devops file of the same hosts and hours (generated once into the data dir)."""
    path = os.path.join(d, "tsbs-devops100-3h.influx")
    if not os.path.exists(path):
        with open(path + ".part", "wb") as f:
            p = subprocess.run([os.path.join(tsbs_bin, "tsbs_generate_data"), "--use-case=devops", "--scale=100",
                                "--seed=123", "--timestamp-start=2016-01-01T00:00:00Z",
                                "--timestamp-end=2016-01-01T03:00:00Z", "--format=influx"],
                               stdout=f, stderr=subprocess.PIPE)
        _check(p, "tsbs_generate_data")
        os.replace(path + ".part", path)
    return path


def _compressor(path: str) -> None:
    """tsbench's compressor alone over the file's first 10,000-row batches: CPU ms per MB and
    compressed/plain size at each gzip_level, beside zlib's at the same level."""
    batches, size = [], 0
    for b in BatchReader(path, "influx", 10_000):
        batches.append(bytes(b.data))
        size += len(batches[-1])
        if size >= SAMPLE_BYTES:
            break
    mb = size / 1e6
    print(f"compressor alone, {len(batches)} batches of 10,000 rows ({mb:.0f} MB): CPU ms per MB (user + system), "
          f"compressed / plain")
    print(f"{'gzip_level':>10} {'ISA-L level':>11} {'ISA-L ms/MB':>11} {'ratio':>6} {'zlib ms/MB':>10} {'ratio':>6}")
    for level in range(1, 10):
        gz = Gzip(GzipOption(gzip=True, gzip_level=level))
        isal_ms, isal_out = _timed(lambda b: _sync(gz.body(b)), batches)
        zlib_ms, zlib_out = _timed(lambda b: zlib.compress(b, level, wbits=31), batches)
        print(f"{level:>10} {ISAL_LEVEL[level]:>11} {isal_ms / mb:>11.2f} {isal_out / size:>6.3f} "
              f"{zlib_ms / mb:>10.2f} {zlib_out / size:>6.3f}")
        record.figure(f"gzip level {level}: client CPU per MB", isal_ms / mb, "ms/MB")


def _timed(compress, batches: list[bytes]) -> tuple[float, int]:
    t = time.process_time()
    out = sum(len(compress(b)) for b in batches)
    return (time.process_time() - t) * 1e3, out


def _sync(coro):
    """The value of a coroutine that never waits (Gzip.body), without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("Gzip.body waited")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _check(p: subprocess.CompletedProcess, what: str) -> None:
    if p.returncode != 0:
        raise SystemExit(f"{what} failed: {p.stderr.decode().strip()[-2000:]}")
