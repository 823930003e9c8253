"""Sizes that cannot run are refused, never a crash or a hang (all phases, issue 35 items
7 and 9): the C core given entity counts or epochs whose sizes or times do not fit 64
bits returns an error that native.py raises as one UserError (golden text), where it
used to compute a wrapped size and write past its memory; an error while a fill holds
a buffer (the simulator's state file cannot be made) ends as one line, exit 2, where
it ended in SIGSEGV; `execute --count` of a trillion queries starts at once, its
memory does not grow with the count, and SIGINT ends it within seconds; `--workers`
at its bound answers at once. Crash cases run in a subprocess, so a segfault fails the
test instead of killing pytest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from tsbench.core.bounds import MAX_QUERIES, MAX_WORKERS

from conftest import run_cli

END = "2016-01-01T00:10:00Z"


def _python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


SIM = """\
    from tsbench.data import native
    from tsbench.data.dataset import DatasetSpec, resolve
    ds = resolve(DatasetSpec(use_case="devops", scale=1))
    try:
        sim = native.Simulator(ds.compiled, 1, 0, {hi}, {start}, 10, {epochs}, cache=None)
        sim.fill_rows("influx", bytearray(1 << 24), 50_000)
        print("filled")
    except Exception as exc:
        print(type(exc).__name__, exc)
"""


@pytest.mark.parametrize("hi, start, epochs, golden", [
    (2 ** 61, 0, 10, "UserError schema rejected by the C core: 2305843009213693952 entities over 10 epochs: "
                     "beyond what 64-bit sizes and times hold"),
    (2 ** 63 - 1, 0, 1, "UserError schema rejected by the C core: 9223372036854775807 entities over 1 epochs: "
                        "beyond what 64-bit sizes and times hold"),
    (10, 0, 2 ** 62, "UserError schema rejected by the C core: 10 entities over 4611686018427387904 epochs: "
                     "beyond what 64-bit sizes and times hold"),
    (10, 2 ** 63 - 100, 20, "UserError schema rejected by the C core: 10 entities over 20 epochs: "
                            "beyond what 64-bit sizes and times hold"),
])
def test_the_c_core_refuses_sizes_and_times_beyond_64_bits(hi, start, epochs, golden):
    """2^61 devops entities: every part of the state wraps to 0 bytes in 64 bits (the old
    core took a page for them and wrote past it)."""
    p = _python(SIM.format(hi=hi, start=start, epochs=epochs))
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert p.stdout.strip() == golden, p.stdout


def test_the_c_core_bounds_a_grouping_it_cannot_hold():
    p = _python("from tsbench.data import native; print(native.lib.ts_bson_groups_scratch(2 ** 63))")
    assert p.returncode == 0 and p.stdout.strip() == str(2 ** 64 - 1), (p.returncode, p.stdout, p.stderr)


def test_a_fill_that_fails_for_its_memory_is_one_line_not_a_crash(tmp_path):
    """The state goes to a file (budget 0) under a home whose tmp/ is a file: the error
    is raised while the fill holds the writer's buffer (it used to end in SIGSEGV at exit)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "tmp").write_text("not a folder")
    env = {"TSBENCH_HOME": str(home), "TSBENCH_STATE_BUDGET": "0"}
    for args in (("stream", "-t", "null", "--scale", "10", "--duration", "1", "-q"),
                 ("generate", "--scale", "10", "--end", END, "-q", "-o", str(tmp_path / "x.lp"))):
        p = run_cli(*args, check=False, env=env)
        err = p.stderr.decode()
        assert p.returncode == 2 and err.count("\n") == 1 and "simulator's state" in err, (p.returncode, err)


@pytest.fixture(scope="module")
def duck(tmp_path_factory):
    """A data file, a queries file and a DuckDB file holding the data."""
    d = tmp_path_factory.mktemp("duck")
    run_cli("generate", "--scale", "2", "--end", END, "--format", "csv", "-q", "-o", str(d / "d.csv"))
    run_cli("queries", "generate", str(d / "d.csv"), "-T", "lastpoint,max-cpu-1", "-n", "2", "-o", str(d / "q.jsonl"))
    run_cli("load", str(d / "d.csv"), "-t", "duckdb", "-s", f"duckdb:{d / 'db.duckdb'}", "-q")
    return d


def test_execute_of_a_trillion_queries_makes_them_as_it_goes_and_stops_on_sigint(duck):
    p = subprocess.Popen([sys.executable, "-m", "tsbench", "execute", str(duck / "q.jsonl"), "-t", "duckdb",
                          "-s", f"duckdb:{duck / 'db.duckdb'}", "--count", str(MAX_QUERIES), "--no-validate", "-q"],
                         stderr=subprocess.PIPE, text=True)
    try:
        proc, rss = psutil.Process(p.pid), []
        for _ in range(12):                       # 6 s: start-up, the warm pass and the measured one
            time.sleep(0.5)
            rss.append(proc.memory_info().rss)
        p.send_signal(signal.SIGINT)
        sent = time.monotonic()
        code = p.wait(timeout=15)
        took = time.monotonic() - sent
    finally:
        if p.poll() is None:
            p.kill()
        err = p.stderr.read()
        p.stderr.close()
    assert code == 130 and err.strip().endswith("tsbench: interrupted (SIGINT)") and "Traceback" not in err, err
    assert took < 15
    assert max(rss) < 600 << 20, [r >> 20 for r in rss]       # MiB: the old list of the count took all memory
    assert rss[-1] - rss[len(rss) // 2] < 150 << 20, [r >> 20 for r in rss]


def test_workers_at_their_bound_answer_at_once(duck):
    t0 = time.monotonic()
    p = run_cli("execute", str(duck / "q.jsonl"), "-t", "duckdb", "-s", f"duckdb:{duck / 'db.duckdb'}",
                "--count", "8", "--workers", str(MAX_WORKERS), "--no-validate", "-q", "--json", str(duck / "w.json"),
                check=False)
    assert p.returncode == 0, p.stderr.decode()
    assert time.monotonic() - t0 < 60
    p = run_cli("execute", str(duck / "q.jsonl"), "-t", "duckdb", "-s", f"duckdb:{duck / 'db.duckdb'}",
                "--workers", str(MAX_WORKERS + 1), check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1 and "--workers" in err and f"x<={MAX_WORKERS}" in err, err
