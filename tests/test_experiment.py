"""Experiment files: the pydantic model, matrix expansion with exclusions and
repetitions, the JSON Schema, and one-line errors naming file, line and field."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from tsbench.errors import UserError
from tsbench.experiment import cells, describe_cell, load_experiment

from conftest import run_cli

GOOD = """\
name: small
datasets:
  d10: {use_case: devops, scale: 10, end: "2016-01-01T02:00:00Z", seed: 123}
  c10: {use_case: cpu-only, scale: 10, end: "2016-01-01T02:00:00Z"}
targets:
  influx: {target: influx}
  pg-btree: {target: postgres, options: {index: btree}}
  pg-brin: {target: postgres, options: {index: brin}}
matrix:
  load.workers: [1, 2]
  target.options.tags: [table, inline]
exclude:
  - {target: influx, target.options.tags: inline}
repetitions: 2
"""


def _write(tmp_path, text: str):
    f = tmp_path / "e.yaml"
    f.write_text(text)
    return f


def test_matrix_expansion(tmp_path):
    exp = load_experiment(_write(tmp_path, GOOD))
    cs = cells(exp)
    # 2 workers x 2 tags x 2 datasets x 3 targets, minus influx x inline (2 x 2), times 2 repetitions
    assert len(cs) == (2 * 2 * 2 * 3 - 2 * 2) * 2
    assert all(not (c["target_name"] == "influx" and c["target"]["options"].get("tags") == "inline") for c in cs)
    brin = [c for c in cs if c["target_name"] == "pg-brin"]
    assert {c["target"]["options"]["index"] for c in brin} == {"brin"}            # declared options kept
    assert {c["target"]["options"]["tags"] for c in brin} == {"table", "inline"}   # and the knob set
    assert {c["load"]["workers"] for c in cs} == {1, 2} and all(c["load"]["batch_size"] == 10_000 for c in cs)
    assert {c["repetition"] for c in cs} == {0, 1} and [c["id"] for c in cs] == list(range(len(cs)))
    assert cs[0]["dataset"]["seed"] == 123 and "d10 -> influx (influx)" in describe_cell(cs[0])


def test_schema_command_prints_the_json_schema():
    s = json.loads(run_cli("schema").stdout)
    assert {"name", "datasets", "targets", "matrix", "exclude", "repetitions"} <= set(s["properties"])
    assert s["additionalProperties"] is False


@pytest.mark.parametrize("text,pattern", [
    (GOOD.replace("repetitions: 2", "repetitons: 2"),
     r"e\.yaml:14: repetitons: unknown key \(allowed: name, description, datasets"),
    (GOOD.replace("seed: 123", "seed: many"), r"e\.yaml:3: datasets\.d10\.seed: Input should be a valid integer"),
    (GOOD.replace("target: influx}", "target: influxx}"),
     r"e\.yaml:6: targets\.influx\.target: unknown target 'influxx' \(one of .*influx"),
    (GOOD.replace("load.workers: [1, 2]", "load.workers: []"), r"e\.yaml:\d+: matrix: .*no values"),
    (GOOD.replace("load.workers: [1, 2]", "load.wrkers: [1, 2]"), r"e\.yaml:10: matrix\.load\.wrkers: unknown knob"),
    (GOOD.replace("repetitions: 2", "  - {load.workers: 1}\n  - {load.workers: 2}\nrepetitions: 2"),
     r"no cells left"),
    (GOOD.replace("options: {index: btree}}", "options: {index: btree}, colour: red}"),
     r"e\.yaml:7: targets\.pg-btree\.colour: unknown key \(allowed: target, server, options"),
    ("name: x\ndatasets: {}\ntargets: {a: {target: duckdb}}\n", r"e\.yaml:2: datasets: .*at least one"),
    ("name: [unclosed\n", r"e\.yaml:\d+: not valid YAML"),
])
def test_bad_files_give_one_line(tmp_path, text, pattern):
    f = _write(tmp_path, text)
    with pytest.raises(UserError) as ei:
        cells(load_experiment(f))
    msg = str(ei.value)
    assert "\n" not in msg and re.search(pattern, msg), msg


SHIPPED = {"devops100": 12, "batch-workers": 24, "cardinality": 6, "pg-vs-influx": 6, "flux": 4}


@pytest.mark.parametrize("name,n", sorted(SHIPPED.items()))
def test_shipped_experiments_are_valid(name, n):
    """Each shipped experiment loads, every dataset resolves, every target takes its
    options, and --dry-run lists its cells (running them is the README's job)."""
    from tsbench import targets
    from tsbench.dataset import DatasetSpec, resolve

    path = pathlib.Path(__file__).resolve().parent.parent / "experiments" / f"{name}.yaml"
    exp = load_experiment(path)
    assert exp.name == name and len(cells(exp)) == n
    for d in exp.datasets.values():
        assert resolve(DatasetSpec(**d.model_dump())).epochs > 0
    for t in exp.targets.values():
        targets.get(t.target).parse_options(t.options)
    out = run_cli("run", str(path), "--dry-run")
    assert len(out.stdout.decode().splitlines()) == n


def test_schema_file_is_found_beside_the_experiment(tmp_path):
    (tmp_path / "s.yaml").write_text("name: s\nmeasurements:\n  - name: m\n    fields: [{name: v}]\n")
    f = _write(tmp_path, "name: x\ndatasets: {c: {use_case: custom, schema_file: s.yaml}}\n"
                         "targets: {a: {target: duckdb}}\n")
    assert load_experiment(f).datasets["c"].schema_file == str(tmp_path / "s.yaml")
    f = _write(tmp_path, "name: x\ndatasets: {c: {use_case: custom, schema_file: t.yaml}}\n"
                         "targets: {a: {target: duckdb}}\n")
    with pytest.raises(UserError, match=r"e\.yaml:2: datasets\.c\.schema_file: no such file"):
        load_experiment(f)


def test_query_cells_pick_where_the_query_phases_run(tmp_path):
    f = _write(tmp_path, GOOD.replace("repetitions: 2", "query_cells:\n  - {load.workers: 2, target: influx}\n"
                                                       "  - {target: pg-btree, load.workers: 1}"))
    cs = cells(load_experiment(f))
    here = {(c["target_name"], c["knobs"]["load.workers"]) for c in cs if c["queries_here"]}
    assert here == {("influx", 2), ("pg-btree", 1)} and len(cs) == 20
    assert sum(c["queries_here"] for c in cs) == 2 + 4          # x 2 datasets (x 2 tag layouts for pg)
    assert describe_cell(next(c for c in cs if not c["queries_here"])).endswith("(no query phases here)")
    f = _write(tmp_path, GOOD.replace("repetitions: 2", "query_cells: [{load.wrkers: 2}]"))
    with pytest.raises(UserError, match=r"e\.yaml:14: query_cells\[0\]\.load\.wrkers: unknown knob"):
        load_experiment(f)
