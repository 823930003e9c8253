"""Benchmark of the import's reading of line protocol (`nox -s bench_import`): lines per CPU
second (process CPU time: user + system, every thread) scanning devops line protocol that tsbench
generates, in alternating rounds of the C scan alone (native.LpScanner over the chunks), the whole
schema scan (tsbench.data.lpscan.scan_file: reading, C, numpy), the whole import
(tsbench.data.lpimport.import_file: the file read once into its schema and one Parquet file per
measurement) and the floor under the import: reading the file and taking its sha256 alone.
Peak RSS (VmHWM of a fresh process) of the schema scan over the file read once and three times
in a row (many times the chunk size), and of the import over the file and a file of three
copies of it: bounded memory keeps each pair close. The issue's goal is 2M lines per CPU
second for the whole import. Figures come from here, never from timed tests."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import record

GOAL = 2_000_000


def c_scan_only(path: str, chunk_bytes: int) -> tuple[int, float]:
    """Lines and CPU seconds of the C scan over the file's chunks, no schema."""
    from tsbench.data import lpscan, native
    scanner = native.LpScanner(1 << 15, 1 << 19, 1 << 19)
    t0, lines = time.process_time(), 0
    with open(path, "rb") as f:
        for buf, length in lpscan.chunks(f, chunk_bytes):
            start = 0
            while start < length:
                b = scanner.scan(buf, start, length, lines + 1, "ns")
                start += b.used
                lines += b.lines
    return lines, time.process_time() - t0


def read_and_hash(path: str, chunk_bytes: int) -> tuple[int, float]:
    """Lines and CPU seconds of reading the file in chunks and taking its sha256, as the
    import does (its import.json names the source's sha256): a floor of the import's cost."""
    import hashlib
    t0, sha, lines = time.process_time(), hashlib.sha256(), 0
    buf = bytearray(chunk_bytes)
    with open(path, "rb") as f, memoryview(buf) as view:
        while n := f.readinto(view):
            sha.update(view[:n])
    cpu = time.process_time() - t0
    with open(path, "rb") as f:          # the lines counted outside the timing
        lines = sum(block.count(b"\n") for block in iter(lambda: f.read(chunk_bytes), b""))
    return lines, cpu


def whole_scan(path: str, chunk_bytes: int) -> tuple[int, float]:
    from tsbench.data import lpscan
    t0 = time.process_time()
    schema = lpscan.scan_file(path, "ns", chunk_bytes=chunk_bytes)
    return schema["counts"]["lines"], time.process_time() - t0


def whole_import(path: str, chunk_bytes: int) -> tuple[int, float]:
    """Lines and CPU seconds of the whole import into a fresh folder (removed after)."""
    import shutil

    from tsbench.data import lpimport
    out = tempfile.mkdtemp(prefix="tsbench-import-out-")
    try:
        t0 = time.process_time()
        manifest = lpimport.import_file(path, os.path.join(out, "d"), "ns", chunk_bytes=chunk_bytes)
        return manifest["source"]["lines"], time.process_time() - t0
    finally:
        shutil.rmtree(out)


class Repeated:
    """A binary file read `times` times in a row (a larger input without the disk space)."""

    def __init__(self, path: str, times: int):
        self.path, self.left, self.f = path, times, None

    def readinto(self, view) -> int:
        while self.left:
            self.f = self.f or open(self.path, "rb")
            n = self.f.readinto(view)
            if n:
                return n
            self.f.close()
            self.f, self.left = None, self.left - 1
        return 0


def _peak_kib() -> int:
    """This process's peak RSS in KiB: VmHWM (ru_maxrss would keep the forking parent's peak
    across exec, and the parent has run the rounds)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def _child_peak(path: str, times: int, chunk_bytes: int) -> None:
    from tsbench.data import lpscan
    schema = lpscan.scan_stream(Repeated(path, times), "ns", chunk_bytes=chunk_bytes)
    print(schema["counts"]["lines"], _peak_kib())


def _child_import_peak(path: str, chunk_bytes: int) -> None:
    lines, _ = whole_import(path, chunk_bytes)
    print(lines, _peak_kib())


def peak_rss(path: str, times: int, chunk_bytes: int, what: str = "scan") -> tuple[int, float]:
    """(lines, peak RSS in MiB) of a fresh process scanning the file `times` times over (what:
    scan), or importing path (what: import)."""
    child = ["--child", path, str(times), str(chunk_bytes)] if what == "scan" else \
        ["--child-import", path, str(chunk_bytes)]
    out = subprocess.run([sys.executable, "-m", "benchmarks.import_lp", *child],
                         capture_output=True, text=True, timeout=3600, check=True).stdout.split()
    return int(out[0]), int(out[1]) / 1024


def tripled(path: str, where: str) -> str:
    """A file of three copies of path, in the folder where."""
    import shutil
    out = os.path.join(where, "three.lp")
    with open(out, "wb") as dst:
        for _ in range(3):
            with open(path, "rb") as src:
                shutil.copyfileobj(src, dst, 8 << 20)
    return out


def make_file(where: str, end: str) -> str:
    path = os.path.join(where, "devops.lp")
    subprocess.run([sys.executable, "-m", "tsbench", "generate", "-q", "--use-case", "devops", "--scale", "100",
                    "--end", end, "--seed", "123", "-o", path], check=True, timeout=3600)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--file", help="A line-protocol file to scan (default: devops, 100 hosts, generated).")
    ap.add_argument("--end", default="2016-01-01T02:00:00Z", help="End of the generated devops file.")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chunk-mb", type=int, default=8)
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--child-import", nargs=2, help=argparse.SUPPRESS)
    record.arguments(ap)
    args = ap.parse_args()
    if args.child:
        return _child_peak(args.child[0], int(args.child[1]), int(args.child[2]))
    if args.child_import:
        return _child_import_peak(args.child_import[0], int(args.child_import[1]))
    record.start("import_lp", args)
    chunk = args.chunk_mb << 20
    with tempfile.TemporaryDirectory(prefix="tsbench-import-") as tmp:
        path = args.file or make_file(tmp, args.end)
        size = os.path.getsize(path)
        print(f"{path}: {size / 1e6:,.0f} MB; chunks of {args.chunk_mb} MiB; {args.rounds} rounds (C alone, whole scan, "
              "whole import, reading and sha256 alone)")
        kinds = {"C scan alone": c_scan_only, "whole schema scan": whole_scan, "whole import to Parquet": whole_import,
                 "read and sha256 alone": read_and_hash}
        rates: dict[str, list[float]] = {label: [] for label in kinds}
        for _ in range(args.rounds):
            for label, fn in kinds.items():
                lines, cpu = fn(path, chunk)
                rates[label].append(lines / cpu)
        for label, r in rates.items():
            med = statistics.median(r)
            print(f"  {label:<23} {med:>12,.0f} lines per CPU s (median; rounds {', '.join(f'{x:,.0f}' for x in r)})")
            record.figure(f"import scan, devops line protocol: {label}", med, "lines per CPU s")
        c, whole, imported, hashed = (statistics.median(r) for r in rates.values())
        print(f"  the C scan is {whole / c:.0%} of the whole scan's CPU; reading and sha256 {imported / hashed:.0%} of the "
              f"import's; goal {GOAL:,} lines per CPU s for the whole import: {'met' if imported >= GOAL else 'not met'}")
        for times in (1, 3):
            lines, mib = peak_rss(path, times, chunk)
            print(f"  peak RSS (VmHWM) scanning {times} x the file ({times * size / 2**20:,.0f} MiB, "
                  f"{lines:,} lines): {mib:,.0f} MiB", flush=True)
            record.figure(f"import scan: peak RSS over {times} x the devops file", mib, "MiB")
        for times, src in ((1, path), (3, tripled(path, tmp))):
            lines, mib = peak_rss(src, 1, chunk, "import")
            print(f"  peak RSS (VmHWM) importing {times} x the file into Parquet ({lines:,} lines): {mib:,.0f} MiB",
                  flush=True)
            record.figure(f"import to Parquet: peak RSS over {times} x the devops file", mib, "MiB")
    record.finish()


if __name__ == "__main__":
    main()
