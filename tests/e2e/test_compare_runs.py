"""`python -m tsbench compare` as a user runs it (issue 38, item 3): on two synthetic run
folders whose queries take twice as long in the second, the text table names them slower
and ends with the count of verdicts, --fail-on slower exits 1; a run of another dataset
is refused in one line, exit 2."""

from __future__ import annotations

import json

from conftest import run_cli
from runfolders import CELLS, TYPES, write_run

LATENCY_ROWS = len(CELLS) * 4 * (len(TYPES) + 1)     # four latency figures a query type and for all
PER_TRIAL_ROWS = len(CELLS) * 5


def test_compare_in_a_process(tmp_path):
    base, slow = write_run(tmp_path / "base", 1), write_run(tmp_path / "slow", 2, slow=2.0)
    p = run_cli("compare", str(base), str(slow), "--fail-on", "slower", "--json", str(tmp_path / "c.json"),
                check=False)
    out = p.stdout.decode().splitlines()
    assert p.returncode == 1, p.stderr.decode()
    assert out[:2] == [f"BASE  {base}", f"OTHER {slow}"]
    assert out[3].split() == ["target", "settings", "figure", "type", "base", "other", "ratio", "[95%", "CI]",
                              "p", "verdict"]
    slower = [ln for ln in out if ln.endswith(" slower")]
    assert len(slower) == LATENCY_ROWS + len(CELLS)                   # every latency figure, and qps
    assert out[-1] == (f"{LATENCY_ROWS + PER_TRIAL_ROWS} figures: {PER_TRIAL_ROWS - len(CELLS)} no difference, "
                       f"{LATENCY_ROWS + len(CELLS)} slower, 0 faster")
    assert json.loads((tmp_path / "c.json").read_text())["comparisons"][0]["counts"]["slower"] == len(slower)

    other = write_run(tmp_path / "other", 3, datasets={"d": {"spec": {"scale": 99}, "sha256": "cd" * 32}})
    p = run_cli("compare", str(base), str(other), check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and p.stdout == b"" and err.count("\n") == 1, err
    assert err.startswith(f"tsbench: error: {other} is not comparable with {base}: dataset d: spec"), err


def test_a_real_run_compared_with_itself_is_no_difference_and_names_its_c_build(tmp_path, capsys):
    from tsbench.data.native import build_id
    from tsbench.experiments.experiment import load_experiment
    from tsbench.experiments.runner import Runner

    from conftest import call

    (tmp_path / "exp.yaml").write_text("name: cmp\ndatasets:\n  d: {scale: 1, end: \"2016-01-01T00:10:00Z\"}\n"
                                       "targets:\n  a: {target: duckdb}\nphases: [generate, load, queries, execute]\n"
                                       "queries: {types: [max-cpu-1, lastpoint], count: 3}\n")
    run = Runner(load_experiment(str(tmp_path / "exp.yaml")), tmp_path / "results", quiet=True).run()
    assert json.loads((run / "manifest.json").read_text())["c_core"] == build_id()
    capsys.readouterr()
    code, _ = call(capsys, "compare", str(run), str(run), "--json", str(tmp_path / "c.json"))
    rows = json.loads((tmp_path / "c.json").read_text())["comparisons"][0]["rows"]
    assert code == 0
    assert {r["type"] for r in rows} == {"", "max-cpu-1", "lastpoint", "all"}
    assert {r["verdict"] for r in rows if r["type"]} == {"no difference"}                 # latencies: tested
    assert {r["verdict"] for r in rows if not r["type"]} == {"too few trials"}           # one trial a figure
    assert all(r["ratio"] == 1 for r in rows)
