"""Acceptance of the load phase on real servers, through the command line as a
user runs it: `load --target T --server local --generate ...` installs (if
needed) and starts the server, loads, verifies the count, prints rates and
disk bytes, and stops the server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tsbench.databases.shared.server import pid_alive

GEN = {"devops": "use_case=devops,scale=10,end=2016-01-01T02:00:00Z,seed=9",
       "cpu-only": "use_case=cpu-only,scale=10,end=2016-01-01T02:00:00Z,seed=9"}
EXPECT = {"devops": (64_800, 727_200), "cpu-only": (7_200, 72_000)}
CASES = [("influx", []), ("postgres", ["-O", "index=btree"]), ("postgres", ["-O", "index=brin", "-O", "tags=inline"]),
         ("victoriametrics", []), ("duckdb", [])]
DISK = {"influx": "influx_shard_disk_bytes", "postgres": "pg_total_relation_size",
        "victoriametrics": "vm_data_size_bytes", "duckdb": "duckdb_file_bytes"}


@pytest.mark.parametrize("uc", ["devops", "cpu-only"])
@pytest.mark.parametrize("target,extra", CASES, ids=[" ".join([t, *e]) for t, e in CASES])
def test_load_local_server_end_to_end(tshome, tmp_path, target, extra, uc):
    out = tmp_path / "summary.json"
    args = ["load", "-t", target, "--server", "local", "--generate", GEN[uc], "-w", "3", "-b", "2500",
            "--json", str(out), *extra]
    if uc == "cpu-only":
        args.append("--no-compact")
    p = subprocess.run([sys.executable, "-m", "tsbench", *args], capture_output=True,
                       env={**os.environ, "TSBENCH_HOME": tshome})
    err = p.stderr.decode()
    assert p.returncode == 0, err
    rows, values = EXPECT[uc]
    s = json.loads(out.read_text())
    assert s["status"] == "ok" and (s["rows"], s["values"]) == (rows, values)
    assert s["verify"]["ok"] and s["verify"]["counted"] == (rows if s["verify"]["unit"] == "rows" else values)
    assert s["rows_per_s"] > 0 and s["backoffs"] == 0 and s["timeline"][-1]["rows"] == rows
    assert s["disk"][DISK[target]] > 0
    assert f"loaded {rows:,} rows, {values:,} values" in err and "disk: " in err
    if target != "duckdb":                      # a server was started, and is stopped again
        pid = int(re.search(r"started \S+ \S+ \(pid (\d+)\)", err).group(1))
        assert f"stopped {target} (pid {pid})" in err and not pid_alive(pid)
        assert s["disk"]["datadir_allocated_bytes"] > 0 and s["server_cpu_seconds"] is not None
        # cpu-only is 7,200 rows: a server can spend less than one clock tick (10 ms) on it
        assert s["server_cpu_seconds"] > 0 or (uc == "cpu-only" and s["server_cpu_seconds"] == 0)
    if uc == "devops":
        assert s["compact_seconds"] is not None
