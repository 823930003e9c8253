"""Experiment files: the pydantic model, matrix expansion into typed cells with
exclusions and trials (repeat), every cell checked before anything runs, the JSON
Schema, and one-line errors naming file, line, field and value."""

from __future__ import annotations

import ast
import json
import pathlib
import re

import pytest

from tsbench.core.errors import UserError
from tsbench.experiments import experiment
from tsbench.experiments.experiment import Cell, cells, describe_cell, load_experiment

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
  target.options.database: [one, two]
exclude:
  - {target: influx, target.options.database: two}
repeat: 2
"""


def _write(tmp_path, text: str):
    f = tmp_path / "e.yaml"
    f.write_text(text)
    return f


def test_matrix_expansion(tmp_path):
    exp = load_experiment(_write(tmp_path, GOOD))
    cs = cells(exp)
    # 2 workers x 2 databases x 2 datasets x 3 targets, minus influx x two (2 x 2); repeat: trials in each cell
    assert len(cs) == 2 * 2 * 2 * 3 - 2 * 2
    assert all(isinstance(c, Cell) for c in cs) and exp.cells == cs
    assert all(not (c.target_name == "influx" and c.target.options["database"] == "two") for c in cs)
    brin = [c for c in cs if c.target_name == "pg-brin"]
    assert {c.target.options["index"] for c in brin} == {"brin"}            # declared options kept
    assert {c.target.options["database"] for c in brin} == {"one", "two"}   # and the knob set
    assert {c.load.workers for c in cs} == {1, 2} and all(c.load.batch_size == 10_000 for c in cs)
    assert {(c.load.repeat, c.execute.repeat, c.stream.repeat) for c in cs} == {(2, 2, 2)}
    assert [c.id for c in cs] == list(range(len(cs)))
    assert cs[0].dataset.seed == 123 and "d10 -> influx (influx)" in describe_cell(cs[0])
    assert cs[0].dataset.model_dump()["use_case"] == "devops" and cs[0].execute.cache == "warm"
    assert cs[0].target is not cs[1].target          # each cell its own settings


def test_schema_command_prints_the_json_schema():
    s = json.loads(run_cli("schema").stdout)
    assert {"name", "datasets", "targets", "matrix", "exclude", "repeat"} <= set(s["properties"])
    assert s["additionalProperties"] is False


@pytest.mark.parametrize("text,pattern", [
    (GOOD.replace("repeat: 2", "repaet: 2"),
     r"e\.yaml:14: repaet: unknown key \(allowed: name, description, datasets"),
    (GOOD.replace("seed: 123", "seed: many"), r"e\.yaml:3: datasets\.d10\.seed: Input should be a valid integer"),
    (GOOD.replace("target: influx}", "target: influxx}"),
     r"e\.yaml:6: targets\.influx\.target: unknown target 'influxx' \(one of .*influx"),
    (GOOD.replace("load.workers: [1, 2]", "load.workers: []"), r"e\.yaml:\d+: matrix: .*no values"),
    (GOOD.replace("load.workers: [1, 2]", "load.wrkers: [1, 2]"), r"e\.yaml:10: matrix\.load\.wrkers: unknown knob"),
    (GOOD.replace("repeat: 2", "  - {load.workers: 1}\n  - {load.workers: 2}\nrepeat: 2"),
     r"no cells left"),
    (GOOD.replace("options: {index: btree}}", "options: {index: btree}, colour: red}"),
     r"e\.yaml:7: targets\.pg-btree\.colour: unknown key \(allowed: target, server, options"),
    ("name: x\ndatasets: {}\ntargets: {a: {target: duckdb}}\n", r"e\.yaml:2: datasets: .*at least one"),
    ("name: [unclosed\n", r"e\.yaml:\d+: not valid YAML"),
    (GOOD.replace("database: [one, two]", "tags: [table, inline]"),     # influx has no tags option
     r"e\.yaml:11: matrix\.target\.options\.tags: 'table': target influx: option tags: Extra inputs are not"),
])
def test_bad_files_give_one_line(tmp_path, text, pattern):
    f = _write(tmp_path, text)
    with pytest.raises(UserError) as ei:
        cells(load_experiment(f))
    msg = str(ei.value)
    assert "\n" not in msg and re.search(pattern, msg), msg


SHIPPED = {"devops100": 12, "batch-workers": 24, "cardinality": 6, "pg-vs-influx": 6, "flux": 4, "peers": 11,
           "seed-comparison": 21, "inch-cardinality": 9, "mixed": 15, "scale-out": 4, "trials": 2, "churn": 6}


@pytest.mark.parametrize("name,n", sorted(SHIPPED.items()))
def test_shipped_experiments_are_valid(name, n):
    """Each shipped experiment loads, every dataset resolves, every target takes its
    options, and --dry-run lists its cells (running them is the README's job)."""
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.databases import target_class

    path = pathlib.Path(__file__).resolve().parents[2] / "experiments" / f"{name}.yaml"
    exp = load_experiment(path)
    assert exp.name == name and len(cells(exp)) == n
    for d in exp.datasets.values():
        assert resolve(DatasetSpec(**d.generated_settings())).epochs > 0
    for t in exp.targets.values():
        target_class(t.target).parse_options(t.options)
    out = run_cli("run", str(path), "--dry-run")
    assert len(out.stdout.decode().splitlines()) == n


def test_schema_file_is_found_beside_the_experiment(tmp_path):
    (tmp_path / "s.yaml").write_text("name: s\nmeasurements:\n  - name: m\n    fields: [{name: v, evolution: constant}]\n")
    f = _write(tmp_path, "name: x\ndatasets: {c: {use_case: custom, schema_file: s.yaml}}\n"
                         "targets: {a: {target: duckdb}}\n")
    assert load_experiment(f).datasets["c"].schema_file == str(tmp_path / "s.yaml")
    f = _write(tmp_path, "name: x\ndatasets: {c: {use_case: custom, schema_file: t.yaml}}\n"
                         "targets: {a: {target: duckdb}}\n")
    with pytest.raises(UserError, match=r"e\.yaml:2: datasets\.c\.schema_file: no such file"):
        load_experiment(f)


def test_query_cells_pick_where_the_query_phases_run(tmp_path):
    f = _write(tmp_path, GOOD.replace("repeat: 2", "query_cells:\n  - {load.workers: 2, target: influx}\n"
                                                       "  - {target: pg-btree, load.workers: 1}"))
    cs = cells(load_experiment(f))
    here = {(c.target_name, c.knobs["load.workers"]) for c in cs if c.queries_here}
    assert here == {("influx", 2), ("pg-btree", 1)} and len(cs) == 20
    assert sum(c.queries_here for c in cs) == 2 + 4          # x 2 datasets (x 2 databases for pg)
    assert describe_cell(next(c for c in cs if not c.queries_here)).endswith("(no query phases here)")
    f = _write(tmp_path, GOOD.replace("repeat: 2", "query_cells: [{load.wrkers: 2}]"))
    with pytest.raises(UserError, match=r"e\.yaml:14: query_cells\[0\]\.load\.wrkers: unknown knob"):
        load_experiment(f)


BAD_CELLS = """\
name: bad
datasets:
  d: {use_case: devops, scale: 2, end: "2016-01-01T01:00:00Z"}
targets:
  vm: {target: victoriametrics}
  pg: {target: postgres, options: {index: brin}}
matrix:
  KNOB: [VALUES]
"""


@pytest.mark.parametrize("knob,values,pattern", [
    ("execute.cache", "warm, bogus", r"matrix\.execute\.cache: 'bogus': Input should be 'warm', 'cold' or 'cold-query'"),
    ("load.workers", "2, 0", r"matrix\.load\.workers: 0: Input should be greater than or equal to 1"),
    ("target.options.nosuch", "1", r"matrix\.target\.options\.nosuch: 1: target victoriametrics: option nosuch: "
                                   r"Extra inputs are not permitted \(options: "),
    ("target.server_options.nosuch", "1", r"matrix\.target\.server_options\.nosuch: 1: server victoriametrics: "
                                          r"unknown option 'nosuch' \(options: version\)"),
])
def test_bad_matrix_values_fail_the_dry_run_in_one_line(tmp_path, knob, values, pattern):
    """A matrix value the cell's settings, its target or its local server refuse stops
    `run --dry-run` (nothing runs) with one line naming the file, the matrix key's line
    and the value."""
    f = _write(tmp_path, BAD_CELLS.replace("KNOB", knob).replace("VALUES", values))
    p = run_cli("run", str(f), "--dry-run", check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and p.stdout == b"", err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert re.fullmatch(rf"tsbench: error: {re.escape(str(f))}:8: {pattern}.*\n", err), err


@pytest.mark.parametrize("target,pattern", [
    ("{target: postgres, options: {index: bogus}}",
     r"e\.yaml:6: targets\.pg\.options\.index: 'bogus': target postgres: option index: Input should be"),
    ("{target: postgres, server_options: {durable: maybe}}",
     r"e\.yaml:6: targets\.pg\.server_options\.durable: 'maybe': server postgres: option durable: expected true"),
    ("\n    target: postgres\n    options:\n      index: brin\n      colour: red",
     r"e\.yaml:10: targets\.pg\.options\.colour: 'red': target postgres: option colour: Extra inputs"),
])
def test_declared_target_options_are_checked(tmp_path, target, pattern):
    """Declared options are checked by the target and the server too, blamed on the option's line."""
    f = _write(tmp_path, BAD_CELLS.replace("{target: postgres, options: {index: brin}}", target)
               .replace("KNOB: [VALUES]", "load.workers: [1]"))
    with pytest.raises(UserError) as ei:
        load_experiment(f)
    assert "\n" not in str(ei.value) and re.search(pattern, str(ei.value)), str(ei.value)


def test_server_options_of_a_remote_target_are_not_a_local_servers(tmp_path):
    """server: URL runs no server, so no server class judges server_options."""
    f = _write(tmp_path, BAD_CELLS.replace("{target: victoriametrics}",
                                           "{target: victoriametrics, server: 'http://127.0.0.1:1'}")
               .replace("KNOB: [VALUES]", "target: [vm]\n  target.server_options.nosuch: [1]"))
    cs = cells(load_experiment(f))
    assert [c.target.server_options for c in cs] == [{"nosuch": 1}]


def test_cells_of_an_experiment_built_in_code():
    exp = experiment.Experiment(name="x", datasets={"d": {"scale": 2}}, targets={"n": {"target": "null"}},
                                matrix={"load.workers": [1, 0]})
    with pytest.raises(UserError, match=r"^experiment x: matrix\.load\.workers: 0: Input should be greater"):
        cells(exp)


def test_functions_are_short():
    tree = ast.parse(pathlib.Path(experiment.__file__).read_text())
    long = {n.name: n.end_lineno - n.lineno + 1 for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno >= 60}
    assert not long, long


def test_duplicate_keys_are_refused_and_merge_keys_kept(tmp_path):
    dup = GOOD.replace("  pg-brin:", "  influx: {target: influx}\n  pg-brin:")
    with pytest.raises(UserError, match=r"e\.yaml:8: duplicate key 'influx' \(first at line 6"):
        load_experiment(_write(tmp_path, dup))
    merged = GOOD.replace("  influx: {target: influx}", "  influx: &t {target: influx}\n  other:\n    <<: *t\n"
                                                           "    server: local")
    assert "other" in load_experiment(_write(tmp_path, merged)).targets


def test_exclude_naming_nothing_is_an_error(tmp_path):
    for entry, pattern in (("{target: infux}", r"e\.yaml:13: exclude\[0\]\.target: 'infux' is not among"),
                           ("{dataset: d99}", r"exclude\[0\]\.dataset: 'd99'"),
                           ("{load.workers: 3}", r"exclude\[0\]\.load\.workers: 3 is not among its values"),
                           ("{load.batch_size: 5}", r"exclude\[0\]\.load\.batch_size: not a key of the matrix")):
        with pytest.raises(UserError, match=pattern):
            load_experiment(_write(tmp_path, GOOD.replace("{target: influx, target.options.database: two}",
                                                          entry)))


def test_dataset_values_are_checked_at_load(tmp_path):
    """A dataset generate would refuse fails when the file is read, not in its cell."""
    with pytest.raises(UserError, match=r"e\.yaml:\d+: matrix\.dataset\.scale: 0: --scale"):
        load_experiment(_write(tmp_path, GOOD.replace("repeat: 2", "repeat: 1")
                               .replace("  load.workers: [1, 2]", "  load.workers: [1, 2]\n  dataset.scale: [1, 0]")))
    with pytest.raises(UserError, match=r"e\.yaml:3: datasets\.d10: --end"):
        load_experiment(_write(tmp_path, GOOD.replace('end: "2016-01-01T02:00:00Z", seed', 'end: "2016-01-01", seed')))


@pytest.mark.parametrize("name", ["../../etc/evil", "..", ".", "a b", "x/y", ""])
def test_names_used_in_paths_are_checked(tmp_path, name):
    for old, new in (("name: small", f"name: '{name}'"), ("  d10:", f"  '{name}':"), ("  influx:", f"  '{name}':")):
        text = GOOD.replace(old, new).replace("{target: influx, target.options.database: two}", "{load.workers: 1}")
        with pytest.raises(UserError, match="is not a valid name"):
            load_experiment(_write(tmp_path, text))
    assert experiment.name_problem("devops100-2.v1_x") is None


def test_set_overrides_settings_before_the_checks(tmp_path):
    """`run --set` changes the file's data before it is checked (a matrix key keeps its dots, a
    timestamp stays text) and the manifest keeps the items; a bad item is one line."""
    path = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "devops100.yaml"
    exp = load_experiment(path, ("matrix.target=[duckdb]", "matrix.load.workers=[4]",
                                 "datasets.devops100.end=2016-01-01T03:00:00Z"))
    assert [c.target_name for c in cells(exp)] == ["duckdb"] and exp.matrix["load.workers"] == [4]
    assert exp.datasets["devops100"].end == "2016-01-01T03:00:00Z"
    assert exp._overrides[0] == "matrix.target=[duckdb]"
    for item, pattern in (("matrix.target", "expected KEY.PATH=VALUE"),
                          ("name.x=3", "name is not a mapping"),
                          ("matrix.target=[nope]", "'nope' is not declared under targets")):
        p = run_cli("run", str(path), "--dry-run", "--set", item, check=False)
        err = p.stderr.decode().strip()
        assert p.returncode == 2 and re.search(pattern, err) and "\n" not in err, err


REPEAT = """\
name: trials
datasets: {d: {use_case: cpu-only, scale: 2, end: "2016-01-01T00:10:00Z"}}
targets: {duck: {target: duckdb}}
"""


def test_repeat_is_each_phase_s_trials_top_level_the_default(tmp_path):
    """repeat: at the top level is every phase's trials unless its section says; default 1;
    a phase's trials are within the cell (no more cells); the commands' --repeat is the same field."""
    from tsbench.commands.fromodel import option_of
    from tsbench.core import bounds
    from tsbench.execute.options import ExecuteCommand
    from tsbench.load.options import LoadCommand
    from tsbench.stream.options import StreamCommand

    def trials(text):
        cs = cells(load_experiment(_write(tmp_path, REPEAT + text)))
        assert len(cs) == 1
        return cs[0].load.repeat, cs[0].execute.repeat, cs[0].stream.repeat
    assert trials("") == (1, 1, 1)
    assert trials("repeat: 3\n") == (3, 3, 3)
    assert trials("repeat: 3\nexecute: {repeat: 5}\nload: {workers: 2}\n") == (3, 5, 3)
    assert trials("load: {repeat: 2}\n") == (2, 1, 1)
    for model in (LoadCommand, ExecuteCommand, StreamCommand):
        decls, kw = option_of(model, "repeat")
        assert decls[0] == "--repeat" and kw["default"] == 1
        assert (kw["type"].min, kw["type"].max) == (1, bounds.MAX_REPEAT)
    for text, where in (("repeat: 0\n", r"e\.yaml:4: repeat: Input should be greater"),
                        (f"load: {{repeat: {bounds.MAX_REPEAT + 1}}}\n", r"e\.yaml:4: load\.repeat: Input should be less"),
                        ("execute: {repeat: two}\n", r"e\.yaml:4: execute\.repeat")):
        with pytest.raises(UserError, match=where):
            load_experiment(_write(tmp_path, REPEAT + text))


def test_repetitions_is_refused_pointing_at_repeat(tmp_path):
    with pytest.raises(UserError, match=r"^\S*e\.yaml:4: repetitions: replaced by repeat: N \(N trials of each "
                                        r"phase within one cell"):
        load_experiment(_write(tmp_path, REPEAT + "repetitions: 2\n"))


OWN = pathlib.Path(__file__).resolve().parents[2] / "experiments" / "own-data.yaml"
SAMPLE = pathlib.Path(__file__).resolve().parents[1] / "data" / "own" / "tsbs-devops.lp"


def test_own_data_runs_on_the_file_given_with_set_and_says_so_without_it():
    out = run_cli("run", str(OWN), "--dry-run", "--set", f"datasets.mine.file={SAMPLE}")
    assert len(out.stdout.decode().splitlines()) == 4
    p = run_cli("run", str(OWN), "--dry-run", check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and len(err.splitlines()) == 1, err
    assert "datasets.mine: file: no such file 'YOUR-FILE.lp'" in err and "--set datasets.NAME.file=PATH" in err


@pytest.mark.parametrize("extra,pattern", [
    ("    file: {f}\n    scale: 3\n", r"datasets\.d: scale: a dataset with file: holds the file's data; scale applies"),
    ("    use_case: iot\n    csv_tags: host\n", r"datasets\.d: csv_tags: applies to a dataset with file:"),
    ("    file: {f}\n    csv_tags: host\n", r"datasets\.d: csv_tags applies to CSV files; this file is read as line protocol \(give format csv"),
    ("    file: {f}\nphases: [stream]\n", r"e\.yaml:4: datasets\.d\.file: the stream phase generates its data"),
])
def test_a_file_dataset_takes_the_imports_settings_only(tmp_path, extra, pattern):
    f = _write(tmp_path, "name: e\ndatasets:\n  d:\n" + extra.format(f=SAMPLE) + "targets:\n  t: {target: 'null'}\n")
    with pytest.raises(UserError, match=pattern):
        cells(load_experiment(f))
