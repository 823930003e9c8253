"""Recording a self-benchmark's figures (beside the five phases: it measures them): a
benchmark run with `--record DIR`, or with TSBENCH_RECORD=DIR in its environment, writes
the figures it printed to one small JSON file in DIR, with the command line, the git
commit, the date and the machine's facts. The docs' figures page is generated from the
files in docs/figures/ (docs/gen_pages.py).

A benchmark calls `arguments(parser)` before parsing, `start(name, args)` after, `figure()`
wherever it prints a figure, and `finish()` at its end. Without --record they do nothing."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import shlex
import subprocess
import sys

from tsbench.core.hostfacts import host_facts

ROOT = pathlib.Path(__file__).resolve().parents[1]
ENV = "TSBENCH_RECORD"
_current: dict | None = None


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--record", metavar="DIR", default=os.environ.get(ENV) or None,
                        help=f"Also write the figures to a JSON file in DIR (e.g. docs/figures; or set {ENV}).")
    parser.add_argument("--notes", default="", help="A note kept with the recorded figures (e.g. a busy machine).")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def start(benchmark: str, args: argparse.Namespace) -> None:
    """Begin a record for this run if --record was given: `benchmark` is its module's name
    under benchmarks/ (the command line is `python -m benchmarks.<benchmark> ...`)."""
    global _current
    if not args.record:
        _current = None
        return
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    _current = {
        "benchmark": benchmark,
        "command": shlex.join(["python", "-m", f"benchmarks.{benchmark}", *sys.argv[1:]]),
        "commit": _git("rev-parse", "--short=12", "HEAD") or "unknown",
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "date": now.isoformat().replace("+00:00", "Z"),
        "host": host_facts(),
        "notes": args.notes,
        "figures": [],
        "_dir": args.record,
    }


def figure(name: str, value: float, unit: str) -> None:
    """One figure as printed (a median, a ratio...), with its unit."""
    if _current is not None:
        v = round(float(value), 4)
        _current["figures"].append({"name": name, "value": int(v) if v.is_integer() else v, "unit": unit})


def finish() -> pathlib.Path | None:
    """Write the record (if one was started): DIR/<benchmark>-<date>.json; say where."""
    global _current
    if _current is None:
        return None
    rec, _current = _current, None
    folder = pathlib.Path(rec.pop("_dir"))
    folder.mkdir(parents=True, exist_ok=True)
    stamp = rec["date"].replace("-", "").replace(":", "")
    path = folder / f"{rec['benchmark']}-{stamp}.json"
    path.write_text(json.dumps(rec, indent=1) + "\n")
    print(f"figures recorded in {path}")
    return path
