"""YAML aliases that expand beyond a small bound (issue 35, item 8): a "billion laughs"
experiment, schema or --set value is refused at once, one line naming the file, exit 2;
aliases used as YAML means them (a shared block of settings) still load."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tsbench.experiments.experiment import load_experiment

from conftest import assert_one_line, call


def laughs(levels: int = 9) -> str:
    """Nested aliases, each level ten of the one before: 10**levels strings."""
    out = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    out += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(out) + "\n"


EXPERIMENT = """\
name: laughs
datasets:
  d: {scale: 1, end: "2016-01-01T00:10:00Z"}
targets:
  a: {target: duckdb}
"""


def test_a_billion_laughs_experiment_is_refused_at_once(tmp_path):
    f = tmp_path / "exp.yaml"
    f.write_text(EXPERIMENT + "x-anchors:\n" + "".join("  " + ln + "\n" for ln in laughs().splitlines()))
    # in a subprocess with a timeout: the expansion it refuses took minutes
    p = subprocess.run([sys.executable, "-m", "tsbench", "run", str(f), "--dry-run"], capture_output=True,
                       text=True, timeout=60)
    assert_one_line(p.returncode, p.stderr, f"{f}: its aliases")


@pytest.mark.parametrize("where", ["schema", "set"])
def test_a_billion_laughs_elsewhere_is_refused(capsys, tmp_path, where):
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT)
    if where == "schema":
        schema = tmp_path / "s.yaml"
        schema.write_text(laughs(7))
        code, err = call(capsys, "generate", "--use-case", "custom", "--schema", str(schema), "-o", "/dev/null")
        assert_one_line(code, err, f"{schema}: its aliases")
    else:
        code, err = call(capsys, "run", str(exp), "--dry-run", "--set",
                         "description=" + "{" + laughs(7).replace("\n", ", ") + "}")
        assert_one_line(code, err, "--set description: its aliases")


def test_a_recursive_alias_is_refused(capsys, tmp_path):
    f = tmp_path / "exp.yaml"
    f.write_text(EXPERIMENT + "x: &x [1, *x]\n")
    assert_one_line(*call(capsys, "run", str(f), "--dry-run"), f"{f}: its aliases")


def test_aliases_within_the_bound_load(tmp_path):
    f = tmp_path / "exp.yaml"
    f.write_text(EXPERIMENT.replace("  a: {target: duckdb}\n", "  a: &t {target: duckdb}\n  b: *t\n"))
    assert [c.target_name for c in load_experiment(str(f)).cells] == ["a", "b"]
