"""The experiment runner end to end on real servers: every cell's row in the
parquet tables, a failing cell (a target pointed at a fault server) recorded
with the server's words while the run goes on, and --dry-run."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from tsbench.experiment import load_experiment
from tsbench.runner import Runner

from conftest import run_cli
from faultserver import FaultServer

EXP = """\
name: small
datasets:
  d10: {{use_case: devops, scale: 10, end: "2016-01-01T01:00:00Z", seed: 3}}
targets:
  duck: {{target: duckdb}}
  pg: {{target: postgres, options: {{index: brin}}}}
  broken: {{target: null-http, server: "{url}"}}
queries: {{types: [max-cpu-8, lastpoint], count: 2}}
matrix:
  load.workers: [1, 2]
exclude:
  - {{target: broken, load.workers: 2}}
"""


def test_run_records_every_cell(tmp_path):
    with FaultServer() as fs:
        fs.always = "fatal"
        f = tmp_path / "e.yaml"
        f.write_text(EXP.format(url=fs.url))
        out = Runner(load_experiment(f), tmp_path / "results", quiet=True).run()
    cells = pq.read_table(out / "cells.parquet").to_pylist()
    assert [c["cell"] for c in cells] == [0, 1, 2, 3, 4]
    by = {(c["target_name"], c["workers"]): c for c in cells}
    broken = by["broken", 1]
    assert broken["status"] == "failed" and "unable to parse" in broken["reason"]
    for key in [("duck", 1), ("pg", 1), ("duck", 2), ("pg", 2)]:
        c = by[key]
        assert c["status"] == "ok", c["reason"]
        assert c["verified"] and c["rows"] == 10 * 360 * 9 and c["rows_per_s"] > 0
        assert c["validated"] == 4 and c["mismatches"] == 0 and c["queries_run"] == 4
    load = pq.read_table(out / "load.parquet").to_pylist()
    assert {r["cell"] for r in load} >= {0, 1, 3, 4} and all("rows_per_s" in r for r in load)
    queries = pq.read_table(out / "queries.parquet").to_pylist()
    assert len(queries) == 16 and {"cell", "type", "latency", "status"} <= set(queries[0])
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == {"ok": 4, "failed": 1, "interrupted": 0}
    assert m["host"]["cores"] and m["datasets"]["d10"]["rows"] == 32_400 and m["config"]["name"] == "small"


def test_dry_run_prints_the_cells(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(EXP.format(url="http://127.0.0.1:1"))
    p = run_cli("run", str(f), "--dry-run")
    lines = p.stdout.decode().splitlines()
    assert len(lines) == 5 and lines[0].startswith("cell 0: d10 -> duck (duckdb)")
    assert "5 cells" in p.stderr.decode()
