"""The C core through its Python wrappers: golden values, buffers, and the
stale-build check."""

import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tsbench
from tsbench.data import native
from tsbench.data.native import Simulator, lib

from conftest import dataset

ROOT = pathlib.Path(tsbench.__file__).resolve().parent.parent


def _all(sim, fmt, size=1 << 16, marks=None):
    buf = bytearray(size)
    out, fills = [], []
    while True:
        r = sim.fill(fmt, buf, marks)
        out.append(bytes(buf[: r.bytes]))
        fills.append(r)
        if r.done:
            return b"".join(out), fills


def test_golden_first_lines():
    """Pinned output: a change here changes every published dataset; bump the
    golden values only on purpose (and say so in the change log)."""
    ds = dataset(use_case="devops", scale=2, end="2016-01-01T00:01:00Z", seed=123)
    sim = Simulator(ds.compiled, 123, 0, 2, ds.start_ns, ds.interval_ns, ds.epochs)
    text, _ = _all(sim, "influx")
    first = text.splitlines()[0].decode()
    assert first == GOLDEN_FIRST
    assert hashlib.sha256(text).hexdigest() == GOLDEN_SHA


GOLDEN_FIRST = (
    "cpu,hostname=host_0,region=ap-northeast-1,datacenter=ap-northeast-1a,rack=71,os=Ubuntu15.10,arch=x86,"
    "team=LON,service=18,service_version=1,service_environment=staging usage_user=80.75742495539757,"
    "usage_system=44.09147985007269,usage_idle=30.33030084564866,usage_nice=2.2082537689586457,"
    "usage_iowait=98.82063215345245,usage_irq=94.54332440666037,usage_softirq=4.99455999130628,"
    "usage_steal=27.28793615736698,usage_guest=15.402113647372929,usage_guest_nice=83.47102935665731 "
    "1451606400000000000")
GOLDEN_SHA = "1e3c09a251f846a3acfd688d084222e599a8e9b3fd3e148d272d3b5e9afa5e58"


def test_golden_devops_integer_cpu_fields():
    """Pinned output of --param cpu_fields=integer (TSBS's shape): the cpu fields are the same
    walk as the float default's first line, truncated and written as integers; the other
    measurements are unchanged."""
    ds = dataset(use_case="devops", scale=2, end="2016-01-01T00:01:00Z", seed=123, params={"cpu_fields": "integer"})
    sim = Simulator(ds.compiled, 123, 0, 2, ds.start_ns, ds.interval_ns, ds.epochs)
    text, _ = _all(sim, "influx")
    lines = text.decode().splitlines()
    assert lines[0] == GOLDEN_INT_FIRST
    assert hashlib.sha256(text).hexdigest() == GOLDEN_INT_SHA
    floats, _ = _all(Simulator(dataset(use_case="devops", scale=2, end="2016-01-01T00:01:00Z", seed=123).compiled,
                               123, 0, 2, ds.start_ns, ds.interval_ns, ds.epochs), "influx")
    assert re.sub(rb"(usage_\w+)=(\d+)(\.\d*)?", rb"\1=\2i", floats) == text     # the same walk, truncated


GOLDEN_INT_FIRST = (
    "cpu,hostname=host_0,region=ap-northeast-1,datacenter=ap-northeast-1a,rack=71,os=Ubuntu15.10,arch=x86,"
    "team=LON,service=18,service_version=1,service_environment=staging usage_user=80i,usage_system=44i,"
    "usage_idle=30i,usage_nice=2i,usage_iowait=98i,usage_irq=94i,usage_softirq=4i,usage_steal=27i,usage_guest=15i,"
    "usage_guest_nice=83i 1451606400000000000")
GOLDEN_INT_SHA = "98d75da821d14c2f6378d0929d05ec7ceaefed6fa2533c5cad3f8e19e9ee5ba6"


def test_golden_iot_with_faults():
    """Pinned output of the fault path, with the iot defaults and with every setting changed."""
    faults = {"group_size": "3", "group_late": "0.2", "missing": "0.05", "late": "0.4", "null_tag": "0.2",
              "max_delay": "4"}
    for params, sha in (({}, GOLDEN_IOT_SHA), (faults, GOLDEN_IOT_FAULTS_SHA)):
        ds = dataset(use_case="iot", scale=4, end="2016-01-01T01:00:00Z", seed=11, params=params)
        sim = Simulator(ds.compiled, 11, 0, 4, ds.start_ns, ds.interval_ns, ds.epochs)
        assert hashlib.sha256(_all(sim, "influx", 1 << 22)[0]).hexdigest() == sha, params


GOLDEN_IOT_SHA = "833757d2dc1e85a3d9166fd1896a9e511b5d702d518a25561696fb9f32dbba75"
GOLDEN_IOT_FAULTS_SHA = "63a17d06640aefaa1c7a71201bffea987fad53f435310a52ded915afd8533265"


def test_fault_struct_follows_the_declaration():
    """ts_faults in the cdef has the fields of schema.FAULT_SETTINGS: same names, order and types."""
    from tsbench.data.schema import FAULT_SETTINGS

    ctype = {int: "int32_t", float: "double"}
    fields = [(name, f.type.cname) for name, f in native.ffi.typeof("ts_faults").fields]
    assert fields == [(s.name, ctype[s.type]) for s in FAULT_SETTINGS]


def test_small_buffers_give_the_same_bytes():
    ds = dataset(use_case="iot", scale=5, end="2016-01-01T01:00:00Z", seed=3)
    mk = lambda: Simulator(ds.compiled, 3, 0, 5, ds.start_ns, ds.interval_ns, ds.epochs)
    big, _ = _all(mk(), "influx", 1 << 22)
    bound = mk().record_bound("influx")
    small, fills = _all(mk(), "influx", bound + 100)
    assert small == big and len(fills) > 100


@pytest.mark.parametrize("fmt,size", [("influx", 1 << 22), ("csv", 0)])
def test_fill_rows_makes_batches_of_exactly_max_rows_of_the_same_bytes(fmt, size):
    ds = dataset(use_case="iot", scale=5, end="2016-01-01T01:00:00Z", seed=3)   # late records too
    mk = lambda: Simulator(ds.compiled, 3, 0, 5, ds.start_ns, ds.interval_ns, ds.epochs)
    whole, fills = _all(mk(), fmt, 1 << 22)
    sim = mk()
    buf = bytearray(size or sim.record_bound(fmt) + 100)      # 0: room for one record, refilled
    out, rows, values = [], [], 0
    while True:
        r = sim.fill_rows(fmt, buf, 7)
        out.append(bytes(buf[: r.bytes]))
        rows.append(r.rows)
        values += r.values
        if r.done:
            break
    assert b"".join(out) == whole
    assert sum(rows) == sum(f.rows for f in fills) and values == sum(f.values for f in fills)
    if size:
        assert set(rows[:-1]) == {7} and 0 < rows[-1] <= 7
    with pytest.raises(RuntimeError, match="bad argument"):
        sim.fill_rows(fmt, buf, 0)


def test_simulate_counts_the_records_a_fill_writes_and_moves_on_like_one():
    """The bench-only ts_sim_simulate: pinned counts, and the records after it are the fill's."""
    ds = dataset(use_case="iot", scale=5, end="2016-01-01T01:00:00Z", seed=3)   # late records too
    mk = lambda: Simulator(ds.compiled, 3, 0, 5, ds.start_ns, ds.interval_ns, ds.epochs)
    whole, fills = _all(mk(), "influx", 1 << 22)
    r = mk().simulate(1 << 40)
    assert (r.bytes, r.rows, r.values, r.epoch, r.done) == (0, 3232, 25597, 370, True)
    assert r.rows == sum(f.rows for f in fills) and r.values == sum(f.values for f in fills)
    sim = mk()
    part = sim.simulate(1000)
    assert part.rows == 1000 and not part.done
    rest, _ = _all(sim, "influx", 1 << 22)
    assert rest == b"".join(whole.splitlines(keepends=True)[1000:])
    with pytest.raises(RuntimeError, match="bad argument"):
        sim.simulate(0)


def test_epoch_marks_cut_the_output_at_epochs():
    ds = dataset(use_case="devops", scale=2, end="2016-01-01T00:05:00Z", seed=3)
    sim = Simulator(ds.compiled, 3, 0, 2, ds.start_ns, ds.interval_ns, ds.epochs)
    marks = np.zeros(4, np.int64)
    buf = bytearray(1 << 20)
    seen = []
    while True:
        r = sim.fill("influx", buf, marks)
        start = 0
        for i in range(r.n_marks):
            seg = bytes(buf[start: marks[i]])
            start = int(marks[i])
            stamps = {ln.rsplit(b" ", 1)[1] for ln in seg.splitlines()}
            assert len(stamps) == 1   # one epoch per segment
            seen.append((r.first_epoch + i, stamps.pop()))
        assert start == r.bytes
        if r.done:
            break
    assert [e for e, _ in seen] == list(range(30))


def test_buffer_too_small_is_an_error():
    ds = dataset(use_case="devops", scale=1, end="2016-01-01T00:01:00Z")
    sim = Simulator(ds.compiled, 1, 0, 1, ds.start_ns, ds.interval_ns, ds.epochs)
    with pytest.raises(RuntimeError, match="too small"):
        sim.fill("influx", bytearray(100))


def test_stale_build_is_reported_in_one_line(tmp_path):
    pkg = tmp_path / "tsbench"
    shutil.copytree(ROOT / "tsbench", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "csrc", tmp_path / "csrc")
    with open(tmp_path / "csrc" / "sim.c", "a") as f:
        f.write("\n/* an edit after the build */\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", "import tsbench.data.native"], capture_output=True, env=env, cwd=tmp_path)
    assert p.returncode != 0
    last = p.stderr.decode().strip().splitlines()[-1]
    assert "stale" in last and "pip install -e ." in last
    p = subprocess.run([sys.executable, "-m", "tsbench", "generate"], capture_output=True, env=env, cwd=tmp_path)
    assert p.returncode != 0 and p.stderr.decode().count("\n") == 1 and b"stale" in p.stderr


def test_api_version_matches():
    assert lib.ts_api_version() == native.API_VERSION == 11


def test_build_id_is_the_hash_of_the_sources():
    from tsbench.core import buildid
    from tsbench.data import _ffi_build

    built = native.build_id()
    assert built == buildid.source_hash(ROOT / "csrc") == _ffi_build.source_hash()
    assert len(built) == 16 and built != buildid.source_hash(ROOT / "tests")    # it hashes what it is given
