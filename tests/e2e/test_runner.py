"""The experiment runner end to end on real servers: every cell's row in the
parquet tables (cells, load, queries, resources) and the manifest, a failing
cell (a target pointed at a fault server) recorded with the server's words
while the run goes on, --dry-run, the HTML report of the run and the analysis
notebook executed on it."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from tsbench.experiments.experiment import load_experiment
from tsbench.experiments.runner import Runner

from conftest import run_cli, run_notebook
from faultserver import FaultServer
from resultsdoc import undocumented

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


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run")
    with FaultServer() as fs:
        fs.always = "fatal"
        f = tmp / "e.yaml"
        f.write_text(EXP.format(url=fs.url))
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TSBENCH_REFERENCE_CACHE", str(tmp / "answers"))      # empty: the engine is built
            return Runner(load_experiment(f), tmp / "results", quiet=True).run()


def test_run_records_every_cell(small_run):
    out = small_run
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
    assert len(queries) == 16 and {"cell", "type", "latency", "status", "valid", "start"} <= set(queries[0])
    assert all(q["valid"] is True for q in queries) and min(q["start"] for q in queries) == 0.0
    m = json.loads((out / "manifest.json").read_text())
    assert m["status"] == {"ok": 4, "failed": 1, "interrupted": 0}
    assert m["host"]["cores"] and m["datasets"]["d10"]["rows"] == 32_400 and m["config"]["name"] == "small"
    assert m["servers"]["pg"] and m["servers"]["duck"]
    ref = m["reference"]["d10"]
    assert list(m["reference"]) == ["d10"] and ref["built"] and ref["build_seconds"] > 0     # one, shared
    # computed once for the 4 cells: 3 distinct queries (max-cpu-8 of 10 hosts draws the same twice)
    assert ref["misses"] == 3 and ref["hits"] == 0
    assert all(v["rows_per_s"] > 0 for v in m["harness_ceiling"].values()) and len(m["harness_ceiling"]) == 2


def test_the_results_page_names_every_column_and_manifest_key(small_run):
    assert not undocumented(small_run), "docs/results.md does not name these"


def test_resources_sampled_per_role_and_phase(small_run):
    res = pq.read_table(small_run / "resources.parquet").to_pylist()
    assert {"cell", "phase", "elapsed_s", "role", "cpu_s", "cpu_percent", "pss_bytes", "read_bytes",
            "write_bytes", "datadir_bytes"} <= set(res[0])
    pg = [r for r in res if r["cell"] == 1]
    server = [r for r in pg if r["role"] == "server"]
    # postgres is a postmaster and its children; its data dir grows while it loads
    assert server and max(r["processes"] for r in server) > 1 and all(r["pss_bytes"] > 0 for r in server)
    assert {"start", "load", "execute"} <= {r["phase"] for r in pg}
    assert server[-1]["datadir_bytes"] > server[0]["datadir_bytes"] > 0
    assert server[-1]["cpu_s"] > server[0]["cpu_s"]
    cells = {c["cell"]: c for c in pq.read_table(small_run / "cells.parquet").to_pylist()}
    assert cells[1]["server_pss_peak_bytes"] == max(r["pss_bytes"] for r in server)
    # PostgreSQL's shared buffers: counted once in PSS, once per backend in summed RSS
    assert cells[1]["server_rss_sum_peak_bytes"] == max(r["rss_sum_bytes"] for r in server)
    assert all(r["rss_sum_bytes"] > r["pss_bytes"] for r in server)
    assert cells[0]["server_pss_peak_bytes"] is None and cells[0]["client_pss_peak_bytes"] > 0
    duck = [r for r in res if r["cell"] == 0]
    # in-process DuckDB: no server role; its data dir is the database file's folder
    assert {r["role"] for r in duck} == {"client"} and duck[-1]["datadir_bytes"] > 0


def test_report_html(small_run):
    p = run_cli("report", str(small_run), "--static")          # the static page, kept for notebooks
    html = (small_run / "report.html").read_text()
    assert len(re.findall(r"<img src='data:image/png;base64,", html)) == 5
    assert "unable to parse" in html and "<span class='failed'>failed</span>" in html
    assert "<td class='ok'>valid 4/4 (4 non-empty)</td>" in html    # max-cpu-8 and lastpoint, 2 cells x 2 queries
    assert "<th>server peak PSS MiB</th><th>server peak RSS summed MiB</th><th>client peak PSS MiB</th>" in html
    summary = p.stderr.decode()
    assert re.search(r"^ +1 pg +workers=1 +ok ", summary, re.M) and "4/4 (4)" in summary


def test_notebook_runs_on_the_results(small_run):
    nb = run_notebook(small_run)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 5
    assert any("small" in o.get("text", "") for o in outputs)


def test_dry_run_prints_the_cells(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(EXP.format(url="http://127.0.0.1:1"))
    p = run_cli("run", str(f), "--dry-run")
    lines = p.stdout.decode().splitlines()
    assert len(lines) == 5 and lines[0].startswith("cell 0: d10 -> duck (duckdb)")
    assert "5 cells" in p.stderr.decode()


def test_a_cell_that_raises_is_recorded_and_the_run_goes_on(tmp_path, monkeypatch):
    """A database refusing mid-cell (Fatal outside the timed load, here in the count)
    and a bug of ours (KeyError) each fail their cell only."""
    from tsbench.core.errors import Fatal
    from tsbench.databases.duckdb.target import DuckDBTarget

    calls = []

    async def count(self, tables):
        calls.append(1)
        if len(calls) == 1:
            raise Fatal("duckdb: the server's own words")
        if len(calls) == 2:
            raise KeyError("oops")
        return sum(self.con.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0] for t in tables)

    monkeypatch.setattr(DuckDBTarget, "count", count)
    f = tmp_path / "e.yaml"
    f.write_text("name: raises\ndatasets: {d: {use_case: cpu-only, scale: 2, end: '2016-01-01T00:10:00Z'}}\n"
                 "targets: {duck: {target: duckdb}}\nphases: [generate, load]\nmatrix: {load.workers: [1, 2, 3]}\n")
    out = Runner(load_experiment(f), tmp_path / "r", quiet=True).run()
    cells = pq.read_table(out / "cells.parquet").to_pylist()
    assert [c["status"] for c in cells] == ["failed", "failed", "ok"]
    assert cells[0]["reason"] == "duckdb: the server's own words"
    assert cells[1]["reason"] == "internal error: KeyError: 'oops'" and cells[2]["verified"]


def test_query_phases_run_only_in_the_query_cells(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text("name: qc\ndatasets: {d: {use_case: cpu-only, scale: 2, end: '2016-01-01T01:00:00Z'}}\n"
                 "targets: {duck: {target: duckdb}}\nqueries: {types: [max-cpu-1], count: 2}\n"
                 "matrix: {load.workers: [1, 2]}\nquery_cells: [{load.workers: 2}]\n")
    out = Runner(load_experiment(f), tmp_path / "r", quiet=True).run()
    cells = pq.read_table(out / "cells.parquet").to_pylist()
    assert [(c["workers"], c["status"], c["verified"], c["queries_run"]) for c in cells] == \
        [(1, "ok", True, None), (2, "ok", True, 2)]
    assert {q["cell"] for q in pq.read_table(out / "queries.parquet").to_pylist()} == {1}


def test_no_report_then_report_command(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text("name: nr\ndatasets: {d: {use_case: cpu-only, scale: 2, end: '2016-01-01T00:10:00Z'}}\n"
                 "targets: {duck: {target: duckdb}}\nphases: [generate, load]\n")
    p = run_cli("run", str(f), "--results", str(tmp_path / "r"), "--no-report", "-q")
    run = next((tmp_path / "r" / "nr").glob("2*"))
    assert not (run / "report.html").exists() and f"results: {run}" in p.stderr.decode()
    assert re.search(r"^ +0 duck +ok +[\d,]+ ", p.stderr.decode(), re.M)       # the summary table
    run_cli("report", str(run), "-o", str(tmp_path / "x.html"))
    assert "<h1>nr <small>run" in (tmp_path / "x.html").read_text()
    bad = run_cli("report", str(tmp_path), check=False)
    assert bad.returncode != 0 and "not a run folder" in bad.stderr.decode()


def test_report_marks_types_computed_on_the_client():
    import pandas as pd

    from tsbench.experiments.report import latency_table

    cells = pd.DataFrame({"cell": [0, 1], "target_name": ["influx", "pg"], "target": ["influx", "postgres"]})
    q = pd.DataFrame({"cell": [0, 0, 1, 1], "type": ["low-fuel", "lastpoint", "low-fuel", "lastpoint"],
                      "status": ["ok"] * 4, "latency": [0.01, 0.02, 0.03, 0.04],
                      "client_s": [0.002, None, None, None]})
    html = latency_table(cells, q)
    assert html.count(" *</td>") == 1 and "computes this answer on the client" in html
    assert "* the target" not in latency_table(cells, q.assign(client_s=None))


ONE_DUCK = ("name: {name}\ndatasets: {{d: {{use_case: cpu-only, scale: 2, end: '2016-01-01T00:10:00Z'}}}}\n"
            "targets: {{duck: {{target: duckdb}}}}\nphases: {phases}\n"
            "queries: {{types: [lastpoint, single-groupby-1-1-1], count: 2}}\n")


def test_a_query_error_fails_the_cell(tmp_path, monkeypatch):
    """A cell is ok only if every query answered: one refused query fails it, with the server's words."""
    from tsbench.core.errors import Fatal
    from tsbench.databases.duckdb.target import DuckDBTarget

    real = DuckDBTarget.query

    async def query(self, native):
        if "GROUP BY" in str(native):
            raise Fatal("duckdb: refused for the test")
        return await real(self, native)

    monkeypatch.setattr(DuckDBTarget, "query", query)
    f = tmp_path / "e.yaml"
    f.write_text(ONE_DUCK.format(name="qerr", phases="[generate, load, queries, execute, validate]"))
    out = Runner(load_experiment(f), tmp_path / "r", quiet=True).run()
    (cell,) = pq.read_table(out / "cells.parquet").to_pylist()
    assert cell["status"] == "failed" and cell["query_errors"] == 2, cell
    assert cell["reason"] == "2 of 4 queries failed; first: duckdb: refused for the test"


def test_trials_load_from_an_empty_database_and_execute_on_the_last(tmp_path):
    """load.repeat 2 and execute.repeat 2: two load trials, each from an empty database
    and verified, then two measured passes on the second; every row says its trial; the
    cells row holds the medians (stats.cell_columns) and the trials each phase ran."""
    import statistics

    f = tmp_path / "e.yaml"
    f.write_text(ONE_DUCK.format(name="trials", phases="[generate, load, verify, queries, execute, validate]")
                 + "load: {repeat: 2}\nexecute: {repeat: 2}\n")
    out = Runner(load_experiment(f), tmp_path / "r", quiet=True).run()
    trials = pq.read_table(out / "trials.parquet").to_pylist()
    assert [(t["cell"], t["phase"], t["trial"], t["status"]) for t in trials] == \
        [(0, "load", 0, "ok"), (0, "load", 1, "ok"), (0, "execute", 0, "ok"), (0, "execute", 1, "ok")]
    load, execute = trials[:2], trials[2:]
    assert all(t["verified"] and t["counted"] == t["expected"] == 120 and t["rows_per_s"] > 0 for t in load)
    assert all(t["queries_run"] == 4 and t["validated"] == 4 and t["mismatches"] == 0 for t in execute)
    assert all(0 < t["query_p50_ms"] <= t["query_p90_ms"] <= t["query_p99_ms"] and t["query_mean_ms"] > 0
               and t["qps"] > 0 for t in execute)
    verify = pq.read_table(out / "verify.parquet").to_pylist()
    assert [(r["trial"], r["expected"], r["difference"]) for r in verify if r["kind"] is None] == \
        [(0, 120, 0), (1, 120, 0)]                        # each trial's table holds the file once, not twice
    res = pq.read_table(out / "resources.parquet").to_pylist()
    starts = [r for r in res if r["phase"] == "start"]
    assert [r["trial"] for r in starts] == [0, 1]         # a fresh target (and monitor) per load trial
    loaded = max(r["datadir_bytes"] for r in res if r["trial"] == 0 and r["phase"] == "load")
    assert starts[1]["datadir_bytes"] < loaded            # the second trial's database starts empty
    assert {r["trial"] for r in res if r["phase"] == "execute"} == {0, 1}
    assert sorted({r["trial"] for r in pq.read_table(out / "load.parquet").to_pylist()}) == [0, 1]
    queries = pq.read_table(out / "queries.parquet").to_pylist()
    assert [sum(q["trial"] == k for q in queries) for k in (0, 1)] == [4, 4]
    assert {(q["type"], q["id"]) for q in queries if q["trial"] == 0} == \
        {(q["type"], q["id"]) for q in queries if q["trial"] == 1}      # the same drawn queries
    (cell,) = pq.read_table(out / "cells.parquet").to_pylist()
    assert cell["status"] == "ok" and json.loads(cell["trials"]) == {"load": 2, "execute": 2}
    assert cell["rows_per_s"] == statistics.median(t["rows_per_s"] for t in load)
    for fig in ("query_p50_ms", "query_p90_ms", "query_mean_ms", "qps"):
        assert cell[fig] == statistics.median(t[fig] for t in execute), fig
    assert not undocumented(out), "docs/results.md does not name these"


def test_a_failed_trial_fails_the_cell_and_skips_the_rest(tmp_path, monkeypatch):
    from tsbench.core.errors import Fatal
    from tsbench.databases.duckdb.target import DuckDBTarget

    real, calls = DuckDBTarget.count, []

    async def count(self, tables):
        calls.append(1)
        if len(calls) == 2:
            raise Fatal("duckdb: the server's own words")
        return await real(self, tables)

    monkeypatch.setattr(DuckDBTarget, "count", count)
    f = tmp_path / "e.yaml"
    f.write_text(ONE_DUCK.format(name="fails", phases="[generate, load, queries, execute]") + "repeat: 3\n")
    out = Runner(load_experiment(f), tmp_path / "r", quiet=True).run()
    (cell,) = pq.read_table(out / "cells.parquet").to_pylist()
    assert cell["status"] == "failed" and cell["reason"] == "load trial 2/3: duckdb: the server's own words"
    trials = pq.read_table(out / "trials.parquet").to_pylist()
    assert [(t["phase"], t["trial"], t["status"], t["reason"]) for t in trials] == \
        [("load", 0, "ok", ""), ("load", 1, "failed", "duckdb: the server's own words")]
    assert len(calls) == 2 and pq.read_table(out / "queries.parquet").num_rows == 0


def test_the_verify_phase_recounts_every_table(tmp_path, monkeypatch):
    from tsbench.databases.duckdb.target import DuckDBTarget

    f = tmp_path / "e.yaml"
    f.write_text(ONE_DUCK.format(name="ver", phases="[generate, load, verify]"))
    out = Runner(load_experiment(f), tmp_path / "r", quiet=True).run()
    rows = pq.read_table(out / "verify.parquet").to_pylist()
    assert [(r["table"], r["difference"]) for r in rows if r["kind"] is None] == [("cpu", 0)] and \
        rows[0]["expected"] == 2 * 60
    assert {r["kind"] for r in rows[1:]} == {"count", "sum", "min", "max", "series"} and \
        {r["status"] for r in rows[1:]} == {"ok"}       # the values too (issue 35)
    assert not undocumented(out), "docs/results.md does not name these"      # the verify table's columns
    assert pq.read_table(out / "cells.parquet").to_pylist()[0]["status"] == "ok"

    real = DuckDBTarget.count

    async def short(self, tables):                # a table that lost a row after the load's own count
        n = await real(self, tables)
        return n - 1 if getattr(self, "_counted", False) else setattr(self, "_counted", True) or n

    monkeypatch.setattr(DuckDBTarget, "count", short)
    out = Runner(load_experiment(f), tmp_path / "r2", quiet=True).run()
    (cell,) = pq.read_table(out / "cells.parquet").to_pylist()
    assert cell["status"] == "failed" and cell["verified"], cell
    assert cell["reason"] == "verify: 1 of 1 tables differ; first: cpu holds 119 rows, the data file has 120"


def test_run_exits_1_when_a_cell_is_not_ok(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text("name: bad\ndatasets: {d: {use_case: cpu-only, scale: 2, end: '2016-01-01T00:10:00Z'}}\n"
                 "targets: {gone: {target: null-http, server: 'http://127.0.0.1:9'}}\nphases: [generate, load]\n")
    p = run_cli("run", str(f), "--results", str(tmp_path / "r"), "--no-report", check=False)
    err = p.stderr.decode()
    assert p.returncode == 1 and "1 of 1 cells not ok" in err and "Traceback" not in err, err


def test_connecting_is_bounded_by_the_cells_stall_timeout(tmp_path, monkeypatch):
    """A target whose connect never answers fails its cell within the experiment's
    stall_timeout (1 s here), not the 120 s default."""
    import asyncio
    import time

    from tsbench.databases.duckdb.target import DuckDBTarget

    async def open_never(self):
        await asyncio.sleep(3600)

    monkeypatch.setattr(DuckDBTarget, "open", open_never)
    f = tmp_path / "e.yaml"
    f.write_text("name: stall\ndatasets: {d: {use_case: cpu-only, scale: 2, end: '2016-01-01T00:10:00Z'}}\n"
                 "targets: {duck: {target: duckdb}}\nphases: [generate, load]\nload: {stall_timeout: 1}\n")
    t0 = time.monotonic()
    out = Runner(load_experiment(f), tmp_path / "r", quiet=True).run()
    cells = pq.read_table(out / "cells.parquet").to_pylist()
    assert time.monotonic() - t0 < 30
    assert cells[0]["status"] == "failed" and "1 s" in cells[0]["reason"], cells[0]["reason"]
