"""Phase 1: a simulator's per-entity memory (tsbench.data.simmemory) in memory or in a
file past its budget, with the same bytes either way (golden sha256 of the
in-memory path), and no file left behind."""

import hashlib
import os

import numpy as np
import pytest
from click.testing import CliRunner

from tsbench.commands.cli import cli
from tsbench.data import simmemory
from tsbench.data.native import Simulator, ffi, lib

from conftest import dataset, generate_bytes, lift_process_plan

CASES = {"devops": dict(use_case="devops", scale=40, end="2016-01-01T00:20:00Z", seed=7),
         "iot": dict(use_case="iot", scale=60, end="2016-01-01T00:30:00Z", seed=7)}   # iot: late entries


def _fill_all(sim: Simulator, fmt: str, size: int) -> bytes:
    """Every record, in fills of `size` bytes (at least a record's bound: 0 for the smallest)."""
    buf, out = bytearray(max(size, sim.record_bound(fmt))), []
    while True:
        r = sim.fill(fmt, buf)
        out.append(bytes(buf[: r.bytes]))
        if r.done:
            return b"".join(out)


def _sim(case: str, budget, cache):
    ds = dataset(**CASES[case])
    return Simulator(ds.compiled, 7, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs, budget, cache)


@pytest.fixture
def spy_drops(monkeypatch):
    """Hand pages back a page at a time, and record the ranges handed back."""
    dropped = []
    real = simmemory.InFile._drop
    monkeypatch.setattr(simmemory, "RELEASE_STEP", simmemory.PAGE)
    monkeypatch.setattr(simmemory.InFile, "_drop", lambda self, a, b, last: (dropped.append((a, b)),
                                                                              real(self, a, b, last)))
    return dropped


@pytest.mark.parametrize("fmt", ["influx", "csv"])
@pytest.mark.parametrize("case", list(CASES))
def test_state_in_a_file_gives_the_bytes_of_state_in_memory(tmp_path, spy_drops, case, fmt):
    """A budget of 0 puts everything in a file, its pages handed back behind the cursor
    after every small fill; the cache of tag parts on or off: the same bytes."""
    memory = _sim(case, simmemory.Budget(1 << 30), fmt)
    want = _fill_all(memory, fmt, 1 << 22)
    assert not memory.memory.in_file
    assert hashlib.sha256(want).hexdigest() == GOLDEN[case, fmt]
    spilled = _sim(case, simmemory.Budget(0, str(tmp_path)), fmt)
    assert _fill_all(spilled, fmt, 0) == want
    assert spilled.memory.in_file
    assert len(spy_drops) >= dataset(**CASES[case]).epochs        # pages went back during every epoch
    assert _fill_all(_sim(case, simmemory.Budget(0, str(tmp_path)), None), fmt, 0) == want   # no cache
    other = "csv" if fmt == "influx" else "influx"
    assert _fill_all(_sim(case, simmemory.Budget(0, str(tmp_path)), other), fmt, 0) == want   # another's cache
    assert os.listdir(tmp_path) == []      # the file never had a name


GOLDEN = {   # sha256 of the whole output, made by the code before the state could be in a file
    ("devops", "influx"): "4999f7a824ad3a87ecb4ba13f7098508df89c180647f3f43727a084759f3f64a",
    ("devops", "csv"): "e117def1011e9d13ea0f65a0c9a75da3472bd8b559ff943d6561c4492cef1f47",
    ("iot", "influx"): "98ffd970f9201542c1ef1835ed4a8a76db4a1919b33abd4009aceacfa97a827f",
    ("iot", "csv"): "dabc4f781a42d90491a8a0fa34e77ea954d08c164e24783d5704b952d6272fbc",
}


def test_columns_come_from_a_state_in_a_file(tmp_path):
    ds = dataset(**CASES["iot"])
    cols = []
    for budget in (simmemory.Budget(1 << 30), simmemory.Budget(0, str(tmp_path))):
        sim = Simulator(ds.compiled, 7, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs, budget, None)
        _, c = sim.fill_columns(100_000, 8)
        cols.append(c)
    assert cols[0].keys() == cols[1].keys() and len(cols[0]["time"]) > 1000
    for name in cols[0]:
        np.testing.assert_array_equal(cols[0][name], cols[1][name])   # NaN where NaN


def test_the_c_core_wants_its_memory_once_and_large_enough():
    ds = dataset(**CASES["devops"])
    sim = lib.ts_sim_new(ffi.NULL, 0, 0, 1, 0, 1, 1, ffi.NULL, 0)
    assert sim == ffi.NULL
    wrapped = Simulator(ds.compiled, 7, 0, 3, ds.start_ns, ds.interval_ns, ds.epochs)
    raw = wrapped._sim
    res = ffi.new("ts_fill_result *")
    buf = ffi.new("char[]", 1 << 16)
    assert lib.ts_sim_fill(raw, 0, buf, 1 << 16, ffi.NULL, 0, res) == -1     # no memory yet
    need = lib.ts_sim_state_bytes(raw, 0)
    assert need > lib.ts_sim_state_bytes(raw, -1) > 0                        # the cache of tag parts costs
    mem = ffi.new("uint64_t[]", need // 8 + 1)
    assert lib.ts_sim_set_memory(raw, mem, need - 1, 0) == -3               # too small
    assert lib.ts_sim_set_memory(raw, mem, need, 2) == -1                   # no such format
    assert lib.ts_sim_set_memory(raw, mem, need, 0) == 0
    assert lib.ts_sim_set_memory(raw, mem, need, 0) == -1                   # once
    parts = ffi.new("uint64_t[]", 21)
    assert lib.ts_sim_state_behind(raw, parts, 6) == -1
    assert lib.ts_sim_state_behind(raw, parts, 7) == 7 and parts[1] == 0    # nothing behind before a fill
    assert lib.ts_sim_fill(raw, 0, buf, 1 << 16, ffi.NULL, 0, res) == 0 and not res.done
    assert lib.ts_sim_state_behind(raw, parts, 7) == 7 and parts[3 * 1 + 1] < parts[3 * 1 + 2]   # within an epoch
    while not res.done:
        assert lib.ts_sim_fill(raw, 0, buf, 1 << 16, ffi.NULL, 0, res) == 0
    assert lib.ts_sim_state_behind(raw, parts, 7) == 7
    assert all(parts[3 * i + 1] == parts[3 * i + 2] for i in range(6))     # done: all of it behind
    wrapped._mem = mem                                                      # kept until the simulator goes


@pytest.mark.parametrize("processes", [1, 2])
def test_generate_with_its_state_in_a_file_writes_the_same_bytes_and_says_so(tmp_path, monkeypatch, processes):
    """The command with TSBENCH_STATE_BUDGET=0, in one process and in two (forced), against
    the default budget; the file is in tmp/ of tsbench's home and gone after."""
    args = ["--use-case", "iot", "--scale", "9", "--end", "2016-01-01T03:00:00Z", "--seed", "5"]
    want = generate_bytes(tmp_path, *args, name="memory")
    monkeypatch.setenv("TSBENCH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TSBENCH_STATE_BUDGET", "0")
    lift_process_plan(monkeypatch)
    out = tmp_path / "file.lp"
    r = CliRunner().invoke(cli, ["generate", "-o", str(out), *args, "--processes", str(processes)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == want
    assert "state in a file of" in r.output and str(tmp_path / "home" / "tmp") in r.output
    assert os.listdir(tmp_path / "home" / "tmp") == []


def test_a_budget_that_is_not_a_number_is_refused(tmp_path):
    from conftest import run_cli

    p = run_cli("generate", "--scale", "1", "--end", "2016-01-01T00:01:00Z", "-o", str(tmp_path / "x"),
                check=False, env={"TSBENCH_STATE_BUDGET": "lots"})
    assert p.returncode != 0 and b"TSBENCH_STATE_BUDGET" in p.stderr


def test_a_folder_that_cannot_hold_the_file_is_one_line(tmp_path):
    from tsbench.core.errors import UserError

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    sim = _sim("devops", simmemory.Budget(0, str(blocker / "tmp")), "influx")
    with pytest.raises(UserError, match="needs a file under .*not-a-folder"):
        sim.fill("influx", bytearray(1 << 20))


def test_without_o_tmpfile_the_file_loses_its_name_at_once(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    sim = _sim("iot", simmemory.Budget(0, str(tmp_path)), "influx")
    sim.fill("influx", bytearray(1 << 20))
    assert sim.memory.in_file and os.listdir(tmp_path) == []


def test_ctrl_c_leaves_no_file(tmp_path):
    """generate interrupted while its state is in a file: nothing left in tmp/."""
    import signal
    import subprocess
    import sys
    import time

    home = tmp_path / "home"
    env = {**os.environ, "TSBENCH_HOME": str(home), "TSBENCH_STATE_BUDGET": "0"}
    p = subprocess.Popen([sys.executable, "-m", "tsbench", "generate", "--scale", "2000", "-o", os.devnull],
                         env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (home / "tmp").exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)            # the folder appears when the state's file is made
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)
    assert p.returncode != 0        # interrupted, not finished
    assert os.listdir(home / "tmp") == []


def test_the_state_folder_s_filesystem_is_named(tmp_path):
    """The manifest names the state file's filesystem: tmpfs would keep it in memory all the same."""
    import os

    from tsbench.data.simmemory import filesystem

    assert filesystem(str(tmp_path)) not in ("", None)
    if os.path.ismount("/dev/shm"):
        assert filesystem("/dev/shm/x") == "tmpfs"
