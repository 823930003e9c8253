"""The stream command's start-up (issue 37 item 5: the whole process's CPU beside inch's):
what `python -m tsbench stream` imports before its first write, and its exit. Measured in
benchmarks/stream.py (--inch); here only what keeps the gain: no module the run does not
use is imported."""

from __future__ import annotations

import json
import subprocess
import sys

# what a plain stream into InfluxDB does not use: numpy and pyarrow (answers and query drawing
# only), the other phases' runners, and what --queries, --freshness, --metrics-port,
# --report-url or a terminal's live table bring
NOT_AT_START = ("numpy", "pyarrow", "pandas", "multiprocessing", "prometheus_client", "rich",
                "tsbench.execute.run", "tsbench.load.run", "tsbench.stream.mixed", "tsbench.stream.fresh",
                "tsbench.stream.live", "tsbench.stream.metrics", "tsbench.stream.report")

# the command line as a process runs it (stderr is no terminal), into the in-process null target;
# then the InfluxDB target's class, as `-t influx` looks it up; at the exit (after the command's
# own exit handlers): the modules imported
PROBE = """
import atexit, json, runpy, sys
atexit.register(lambda: print(json.dumps({"modules": sorted(sys.modules)})))
sys.argv = ["tsbench", "stream", "-t", "null", "-u", "synthetic", "-P", "tags=2,2", "--points-per-series", "3",
            "-w", "2", "-q"]
from tsbench import databases
databases.target_class("influx")
runpy.run_module("tsbench", run_name="__main__", alter_sys=True)
"""


def test_a_stream_starts_without_what_it_does_not_use():
    p = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert "tsbench.stream.run" in seen["modules"] and "tsbench.databases.influx.target" in seen["modules"]
    assert sorted(set(NOT_AT_START) & set(seen["modules"])) == []
