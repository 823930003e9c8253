"""`tsbench compare` (issue 38, item 3) on synthetic run folders of known distributions:
runs of the same distributions show no difference; latencies twice as long are slower
(and --fail-on slower exits 1); a difference under the threshold is none; cells match by
target and settings, not by id; a run before trials is one trial; runs of another
dataset, queries, C build or machine are refused in one line unless --allow-different;
the JSON and Markdown outputs parse."""

from __future__ import annotations

import json

import pytest

from tsbench.experiments import compareout
from tsbench.experiments.comparable import differences
from tsbench.experiments.compare import Row, compare_runs, holm

from conftest import assert_one_line, call
from runfolders import CELLS, TYPES, manifest, write_run

PER_TRIAL = 5               # the synthetic runs' per-trial figures a cell: rows, values, disk, client CPU, qps
FIGURES = len(CELLS) * (PER_TRIAL + 4 * (len(TYPES) + 1))      # and four latency figures a type and for all


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    return {"base": write_run(d / "base", 1), "same": write_run(d / "same", 2, first_cell=10),
            "slow": write_run(d / "slow", 3, slow=2.0),
            "old": write_run(d / "old", 5, trials=1, one_trial_tables=True),
            "busy": write_run(d / "busy", 6, busy=True),
            "other data": write_run(d / "other data", 7, datasets={"d": {"spec": {"scale": 99}, "sha256": "cd" * 32}})}


def _verdicts(comparison, figure=None) -> set[str]:
    return {r.verdict for r in comparison.rows if figure is None or r.figure == figure}


def test_runs_of_the_same_distributions_show_no_difference(runs):
    (c,) = compare_runs(str(runs["base"]), [str(runs["same"])])     # other cell ids: matched by target, settings
    assert len(c.rows) == FIGURES and _verdicts(c) == {"no difference"}
    assert compareout.count_line(c) == f"{FIGURES} figures: {FIGURES} no difference, 0 slower, 0 faster"
    assert c.warnings == [] and c.differences == []


def test_latencies_twice_as_long_are_slower(runs, capsys):
    (c,) = compare_runs(str(runs["base"]), [str(runs["slow"])])
    for r in c.rows:
        if r.figure.startswith("query_") or r.figure == "qps":
            assert r.verdict == "slower" and r.p < 0.05, r
            assert r.ci_low <= r.ratio <= r.ci_high
            low, high = (0.4, 0.6) if r.figure == "qps" else (1.6, 2.5)     # half the queries/s, twice the time
            assert low < r.ratio < high, r
        else:
            assert r.verdict == "no difference", r
    assert call(capsys, "compare", str(runs["base"]), str(runs["slow"]), "--fail-on", "slower")[0] == 1
    assert call(capsys, "compare", str(runs["base"]), str(runs["slow"]))[0] == 0
    assert call(capsys, "compare", str(runs["base"]), str(runs["same"]), "--fail-on", "slower")[0] == 0


def test_a_difference_under_the_threshold_is_none(runs):
    (c,) = compare_runs(str(runs["base"]), [str(runs["slow"])], threshold_pct=200)    # twice: 100% more
    assert _verdicts(c) == {"no difference"}
    (c,) = compare_runs(str(runs["base"]), [str(runs["slow"])], threshold_pct=30)
    assert _verdicts(c, "query_mean_ms") == {"slower"}


def test_a_run_before_trials_is_one_trial_and_its_latencies_are_tested(runs):
    (c,) = compare_runs(str(runs["base"]), [str(runs["old"])])
    assert _verdicts(c, "rows_per_s") == _verdicts(c, "qps") == {"too few trials"}
    assert _verdicts(c, "query_p50_ms") == {"no difference"}
    assert compareout.count_line(c).endswith(f", {len(CELLS) * PER_TRIAL} too few trials")


def test_a_busy_cell_is_a_warning(runs):
    (c,) = compare_runs(str(runs["base"]), [str(runs["busy"])])
    assert c.warnings[0] == "warning: OTHER cell 0 (a workers=1) ran on a busy machine: load average 3.5 on 2 cores"
    assert len(c.warnings) == len(CELLS)


def test_another_dataset_is_refused_in_one_line(runs, capsys):
    code, err = call(capsys, "compare", str(runs["base"]), str(runs["other data"]))
    assert_one_line(code, err, "is not comparable with")
    assert "dataset d: spec" in err and "sha256 abababababab.. vs cdcdcdcdcdcd.." in err
    assert "--allow-different" in err


def test_allowed_differences_head_the_output(runs, capsys):
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        from tsbench.commands import cli
        cli.main(["compare", str(runs["base"]), str(runs["other data"]), "--allow-different"])
    out = capsys.readouterr().out.splitlines()
    assert ei.value.code == 0
    assert out[0].startswith("BASE ") and out[1].startswith("OTHER ")
    assert out[2].startswith("differs: dataset d: spec {\"scale\":10,\"use_case\":\"devops\"} vs {\"scale\":99}")
    assert out[-1] == f"{FIGURES} figures: {FIGURES} no difference, 0 slower, 0 faster"


def test_what_differs_between_manifests():
    base = manifest("r1")
    assert differences(base, manifest("r2")) == []
    other = manifest("r2", c_core="ffff0000ffff0000", host={**base["host"], "memory_bytes": 1, "kernel": "7"},
                     config={"queries": {**base["config"]["queries"], "count": 20}})
    assert differences(base, other) == ["queries: count 10 vs 20", "C build: c_core 29c657ed409bb604 vs ffff0000ffff0000",
                                        f"machine: memory_bytes {8 * 2**30} vs 1"]


def test_json_and_markdown_outputs_parse(runs, capsys, tmp_path):
    js, md = tmp_path / "c.json", tmp_path / "c.md"
    code, _ = call(capsys, "compare", str(runs["base"]), str(runs["slow"]), str(runs["same"]),
                   "--json", str(js), "--markdown", str(md))
    assert code == 0
    got = json.loads(js.read_text())
    assert [c["other"] for c in got["comparisons"]] == [str(runs["slow"]), str(runs["same"])]
    slow = got["comparisons"][0]
    assert len(slow["rows"]) == FIGURES and slow["counts"]["slower"] == sum(r["verdict"] == "slower" for r in slow["rows"])
    assert {"target", "settings", "figure", "type", "base", "other", "ratio", "ci_low", "ci_high", "p",
            "verdict"} <= set(slow["rows"][0])
    table = [ln for ln in md.read_text().splitlines() if ln.startswith("|")]
    assert len(table) == 2 * (FIGURES + 2)                       # each comparison: head, rule, a row a figure
    assert {ln.count(" | ") for ln in table if not ln.startswith("|--")} == {8}


def test_holm_counts_a_shared_test_once():
    def row(figure, type_, p):
        return Row("a", "", figure, type_, 1.0, 1.0, 1.0, 1.0, 1.0,
                   "mann-whitney" if type_ else "bootstrap", 3, 3, p_raw=p)
    rows = [row("rows_per_s", "", 0.01), row("qps", "", 0.04),
            *(row(f, "lastpoint", 0.03) for f in ("query_p50_ms", "query_p99_ms"))]
    holm(rows)
    assert [round(r.p, 6) for r in rows] == [0.03, 0.06, 0.06, 0.06]      # three tests: 0.01*3, max(0.03*2, 0.04)
