"""Reports of nothing and of broken results (issue 35, items 4 and 10): `report` on a run
folder whose cells or queries table is missing or empty, whose tables or manifest are
corrupt, truncated or of another shape, is one line naming the file and what is wrong,
exit 2 (not an empty page, not an internal error); an experiment of no phase is refused."""

from __future__ import annotations

import json
import pathlib
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import assert_one_line, call

END = "2016-01-01T00:10:00Z"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> pathlib.Path:
    """A real run folder: one DuckDB cell that loaded and ran queries."""
    from tsbench.experiments.experiment import load_experiment
    from tsbench.experiments.runner import Runner

    d = tmp_path_factory.mktemp("report-input")
    (d / "exp.yaml").write_text(f"name: rep\ndatasets:\n  d: {{scale: 1, end: \"{END}\"}}\n"
                                "targets:\n  a: {target: duckdb}\nphases: [generate, load, queries, execute]\n"
                                "queries: {types: [max-cpu-1], count: 1}\n")
    return Runner(load_experiment(str(d / "exp.yaml")), d / "results", quiet=True).run()


def _table(p: pathlib.Path):
    return pq.read_table(p).to_pandas()


def _write(p: pathlib.Path, frame) -> None:
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), p)


def _manifest(change):
    def edit(d: pathlib.Path) -> None:
        m = json.loads((d / "manifest.json").read_text())
        (d / "manifest.json").write_text(json.dumps(change(m)))
    return edit


def _frame(name: str, change):
    def edit(d: pathlib.Path) -> None:
        _write(d / f"{name}.parquet", change(_table(d / f"{name}.parquet")))
    return edit


def _bytes(name: str, change):
    def edit(d: pathlib.Path) -> None:
        p = d / f"{name}.parquet"
        p.write_bytes(change(p.read_bytes()))
    return edit


CASES = {
    "no cells table": (lambda d: (d / "cells.parquet").unlink(), "cells.parquet: missing"),
    "no queries table": (lambda d: (d / "queries.parquet").unlink(), "queries.parquet: missing"),
    "cells table of no column": (lambda d: pq.write_table(pa.table({}), d / "cells.parquet"), "no cells"),
    "cells table of no row": (_frame("cells", lambda f: f.iloc[0:0]), "no cells"),
    "queries ran but none recorded": (_frame("queries", lambda f: f.iloc[0:0]), "queries.parquet: no queries"),
    "queries table of no column": (lambda d: pq.write_table(pa.table({}), d / "queries.parquet"),
                                   "queries.parquet: no queries"),
    "truncated queries": (_bytes("queries", lambda b: b[: len(b) // 2]), "queries.parquet: not a readable"),
    "garbage queries": (_bytes("queries", lambda b: b"\0garbage" * 40), "queries.parquet: not a readable"),
    "empty queries file": (_bytes("queries", lambda b: b""), "queries.parquet: not a readable"),
    "truncated cells": (_bytes("cells", lambda b: b[:-9]), "cells.parquet: not a readable"),
    "cells without status": (_frame("cells", lambda f: f.drop(columns=["status"])), "no column status"),
    "cells without target_name": (_frame("cells", lambda f: f.drop(columns=["target_name"])),
                                  "no column target_name"),
    "rows_per_s as text": (_frame("cells", lambda f: f.assign(rows_per_s="fast")), "column rows_per_s"),
    "disk_bytes as text": (_frame("cells", lambda f: f.assign(disk_bytes="big")), "column disk_bytes"),
    "status as numbers": (_frame("cells", lambda f: f.assign(status=1)), "column status"),
    "knobs not JSON": (_frame("cells", lambda f: f.assign(knobs="{oops")), "column knobs"),
    "unsupported not a list": (_frame("cells", lambda f: f.assign(unsupported='{"a": 1}')), "column unsupported"),
    "queries without latency": (_frame("queries", lambda f: f.drop(columns=["latency"])), "no column latency"),
    "latency as text": (_frame("queries", lambda f: f.assign(latency="slow")), "column latency"),
    "queries of an unknown cell": (_frame("queries", lambda f: f.assign(cell=99)), "queries.parquet: rows of cells"),
    "resources without role": (_frame("resources", lambda f: f.drop(columns=["role"])), "no column role"),
    "load with t as text": (_frame("load", lambda f: f.assign(t="x")), "load.parquet: column t"),
    "noisy as numbers": (_frame("cells", lambda f: f.assign(noisy=1.0)), "cells.parquet: column noisy"),
    "trials without phase": (lambda d: pq.write_table(pa.table({"cell": [0], "trial": [0]}), d / "trials.parquet"),
                             "trials.parquet: no column phase"),
    "trials of an unknown cell": (lambda d: pq.write_table(pa.table({"cell": [99], "phase": ["load"], "trial": [0]}),
                                                           d / "trials.parquet"), "trials.parquet: rows of cells"),
    "manifest a list": (_manifest(lambda m: [m]), "manifest.json: not a run manifest"),
    "manifest without experiment": (_manifest(lambda m: {k: v for k, v in m.items() if k != "experiment"}),
                                    "manifest.json: not a run manifest: experiment"),
    "manifest run_id a number": (_manifest(lambda m: {**m, "run_id": 7}), "run_id"),
    "manifest host a string": (_manifest(lambda m: {**m, "host": "box"}), "host"),
    "manifest memory as text": (_manifest(lambda m: {**m, "host": {"memory_bytes": "lots"}}), "host.memory_bytes"),
    "manifest config a list": (_manifest(lambda m: {**m, "config": []}), "config"),
    "manifest status as text": (_manifest(lambda m: {**m, "status": {"ok": "many"}}), "status.ok"),
    "manifest ceiling of numbers": (_manifest(lambda m: {**m, "harness_ceiling": {"x": 1}}), "harness_ceiling.x"),
}


def test_the_run_folder_reports(capsys, run_dir, tmp_path):
    d = shutil.copytree(run_dir, tmp_path / "run")
    code, err = call(capsys, "report", str(d), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    assert "max-cpu-1" in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("case", CASES)
def test_a_report_of_nothing_or_of_broken_results_is_one_line(capsys, run_dir, tmp_path, case):
    edit, needle = CASES[case]
    d = shutil.copytree(run_dir, tmp_path / "run")
    edit(d)
    code, err = call(capsys, "report", str(d), "-o", str(tmp_path / "r.html"))
    assert_one_line(code, err, needle)
    assert not (tmp_path / "r.html").exists()


def test_an_experiment_of_no_phase_is_refused(capsys, tmp_path):
    f = tmp_path / "exp.yaml"
    f.write_text(f"name: none\ndatasets:\n  d: {{scale: 1, end: \"{END}\"}}\ntargets:\n  a: {{target: duckdb}}\n"
                 "phases: []\n")
    assert_one_line(*call(capsys, "run", str(f), "--results", str(tmp_path / "res"), "-q"), ":6: phases:")
    assert not (tmp_path / "res").exists()
