"""`nox -s bench` (benchmarks.generate), the generator's benchmark: its figures are set against
the same rounds (the one-process split's rest is each round's command less that round's
fill), a time the summary rounds to 0 s gives no ratio instead of a crash, and a whole
run at a tiny scale prints every part. The figures themselves come from benchmark runs,
never from these tests."""

from __future__ import annotations

import subprocess
import sys

from benchmarks import generate as bench


class _Args:
    format = "influx"


def test_rest_is_each_rounds_command_less_its_fill(capsys):
    # the medians of the command (2.0) and of the fill (0.9) are from different rounds;
    # each round's own rest is 0.1, 0.1 and 2.5 CPU s
    splits = [(0.4, 0.9), (0.5, 1.9), (0.2, 0.5)]
    one = [{"cpu": 1.0}, {"cpu": 2.0}, {"cpu": 3.0}]
    bench.print_phases(_Args(), 1000, splits, one)
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines["rest"].split()[1] == "0.10"
    assert "rounds 0.10-2.50 CPU s" in lines["rest"]
    assert lines["fill"].split()[1] == "0.90"
    assert lines["format"].split()[1] == "0.50"     # the median of 0.5, 1.4 and 0.3
    assert lines["command"].split()[1] == "2.00"


def test_spread_skips_a_time_rounded_to_zero():
    assert bench._spread([(2.0, 1.0), (3.0, 1.0), (1.0, 0.0)], "x") == "2.50x (2.00-3.00)"
    assert bench._spread([(1.0, 0.0)]).startswith("n/a")


def test_a_tiny_run_prints_every_part():
    out = subprocess.run([sys.executable, "-m", "benchmarks.generate", "--scale", "2", "--end", "2016-01-01T00:20:00Z",
                          "--runs", "2"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for part in ("-j2 against -j1", "the machine's ceiling for -j2", "simulate", "format", "fill", "rest",
                 "command"):
        assert part in out.stdout, part
    assert "Traceback" not in out.stderr


def test_a_recorded_run_writes_its_figures_with_command_commit_and_host(tmp_path):
    import json
    import os

    from benchmarks.record import ROOT

    out = subprocess.run([sys.executable, "-m", "benchmarks.generate", "--scale", "2", "--end", "2016-01-01T00:20:00Z",
                          "--runs", "1", "--no-ceiling", "--notes", "a test run"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "TSBENCH_RECORD": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    (path,) = tmp_path.glob("generate-*.json")
    rec = json.loads(path.read_text())
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    assert rec["command"] == "python -m benchmarks.generate --scale 2 --end 2016-01-01T00:20:00Z --runs 1 " \
                             "--no-ceiling --notes 'a test run'"
    assert rec["commit"] == head.strip() and rec["notes"] == "a test run" and rec["date"].endswith("Z")
    assert rec["host"]["cores"] == os.cpu_count() and rec["host"]["memory_bytes"] > 0
    figures = {f["name"]: f for f in rec["figures"]}
    assert figures["-j1: rows per second of the whole command"]["unit"] == "rows/s"
    assert figures["-j1: rows per second of the whole command"]["value"] > 0
    assert all(set(f) == {"name", "value", "unit"} and f["unit"] for f in rec["figures"])
    assert f"figures recorded in {path}" in out.stdout
