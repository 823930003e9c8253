"""--repeat N on the load, execute and stream commands (issue 38, trials), on in-process
DuckDB: N load trials, each into an empty database (with the default --if-exists abort, a
trial finding the last one's table would fail), N measured passes over the same queries, or
N new streams; the summary prints each trial's main figure and the median, --json has a
`trials` list."""

from __future__ import annotations

import json
import re
import statistics

import pytest

from tsbench.commands import cli

END = "2016-01-01T00:10:00Z"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from tsbench import queries
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import generate

    d = tmp_path_factory.mktemp("repeat")
    ds = resolve(DatasetSpec(use_case="cpu-only", scale=2, end=END))
    generate(ds, "csv", str(d / "data.csv"), show_progress=False)
    queries.write_queries(d / "q.jsonl", ds, 2, queries.generate(ds, ["lastpoint", "single-groupby-1-1-1"], 2, 1))
    return d


def _main(capsys, *argv: str) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        cli.main(list(argv))
    err = capsys.readouterr().err
    assert ei.value.code in (0, None), err
    return err


def test_load_repeat_loads_each_trial_into_an_empty_database(capsys, files, tmp_path):
    err = _main(capsys, "load", str(files / "data.csv"), "-t", "duckdb", "--repeat", "2",
                "--json", str(tmp_path / "s.json"))
    s = json.loads((tmp_path / "s.json").read_text())
    trials = s["trials"]
    assert [(t["phase"], t["trial"], t["status"]) for t in trials] == [("load", 0, "ok"), ("load", 1, "ok")]
    assert all(t["verified"] and t["counted"] == t["expected"] == 120 for t in trials)     # not 240
    assert s["rows_per_s"] == trials[-1]["rows_per_s"]          # the summary is the last trial's
    for t in trials:
        assert re.search(rf"^  load trial {t['trial'] + 1}/2: {t['rows_per_s']:,.0f} rows/s$", err, re.M), err
    median = statistics.median(t["rows_per_s"] for t in trials)
    assert f"  median over 2 trials: {median:,.0f} rows/s" in err


def test_execute_repeat_is_that_many_measured_passes(capsys, files, tmp_path):
    err = _main(capsys, "execute", str(files / "q.jsonl"), "-t", "duckdb", "--load", str(files / "data.csv"),
                "--repeat", "2", "--json", str(tmp_path / "e.json"))
    s = json.loads((tmp_path / "e.json").read_text())
    trials = s["trials"]
    assert [(t["phase"], t["trial"], t["status"], t["queries_run"]) for t in trials] == \
        [("execute", 0, "ok", 4), ("execute", 1, "ok", 4)]
    assert all(t["validated"] == 4 and 0 < t["query_p50_ms"] <= t["query_p90_ms"] for t in trials)
    assert [sum(r["trial"] == k for r in s["records"]) for k in (0, 1)] == [4, 4]
    assert re.search(r"^  execute trial 2/2: [\d.]+ ms p50$", err, re.M), err
    median = statistics.median(t["query_p50_ms"] for t in trials)
    assert f"  median over 2 trials: {median:,.2f} ms p50" in err


def test_stream_repeat_is_that_many_new_streams(capsys, tmp_path):
    import pyarrow.parquet as pq

    err = _main(capsys, "stream", "-t", "duckdb", "-u", "cpu-only", "--scale", "2", "--points-per-series", "20",
                "--repeat", "2", "--json", str(tmp_path / "s.json"), "--seconds", str(tmp_path / "s.parquet"))
    trials = json.loads((tmp_path / "s.json").read_text())["trials"]
    assert [(t["phase"], t["trial"], t["status"]) for t in trials] == [("stream", 0, "ok"), ("stream", 1, "ok")]
    assert all(t["verified"] and t["counted"] == t["expected"] == 2 * 20 for t in trials)     # each one stream's
    assert {r["trial"] for r in pq.read_table(tmp_path / "s.parquet").to_pylist()} == {0, 1}
    assert "  median over 2 trials: " in err


def test_load_repeat_by_url_drops_what_the_trial_before_loaded(capsys, files, tmp_path):
    """By URL (a DuckDB file) nothing starts anew: the second trial drops the first one's
    table (with --if-exists abort given, which the first trial keeps)."""
    from conftest import target_url

    with target_url("duckdb") as url:
        _main(capsys, "load", str(files / "data.csv"), "-t", "duckdb", "-s", url, "--repeat", "2", "-q",
              "--json", str(tmp_path / "s.json"))
        trials = json.loads((tmp_path / "s.json").read_text())["trials"]
        assert [(t["trial"], t["status"], t["counted"]) for t in trials] == [(0, "ok", 120), (1, "ok", 120)]
        capsys.readouterr()
        with pytest.raises(SystemExit) as ei:         # the first trial keeps the --if-exists given
            cli.main(["load", str(files / "data.csv"), "-t", "duckdb", "-s", url, "--repeat", "2", "-q"])
        assert ei.value.code == 2 and "already exists and holds data" in capsys.readouterr().err
