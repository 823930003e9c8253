"""Phase 1 with several processes: the C merge (ts_merge) through its wrapper,
with golden bytes, and the process count picked from the work."""

import json

import numpy as np
import pytest

from tsbench.data import generate as gen
from tsbench.data.native import MERGE_DONE, MERGE_FULL, MERGE_NEED, Fill, Merger, Simulator

from conftest import dataset, lift_process_plan, run_cli


def _src(data: bytes, marks: list[int], first_epoch: int, last: bool):
    """A buffer as a fill with marks leaves it."""
    return data, np.array(marks, np.int64), Fill(len(data), 0, 0, first_epoch, len(marks), 0, last)


# source 0: epochs 0, 1 in one buffer, epoch 2 in the next; source 1: epoch 1 cut
# across its two buffers ("b1" then "x."), an empty epoch 2 segment, then epoch 3
SOURCES = [
    [_src(b"a0.a1.", [3, 6], 0, False), _src(b"a2.", [3], 2, True)],
    [_src(b"b0.b1", [3, 5], 0, False), _src(b"x.b3.", [2, 2, 5], 1, True)],
]
GOLDEN = b"a0.b0.a1.b1x.a2.b3."


def _merge(sources, cap: int, min_ref: int = 1 << 15, max_pieces: int = 1024) -> tuple[bytes, list[int]]:
    """Run a Merger over hand-made buffers: the bytes and the order of its requests."""
    m = Merger(len(sources), cap, min_ref, max_pieces)
    pending, out, asked = [list(s) for s in sources], [], []
    while True:
        rc, pieces = m.merge()
        assert len(pieces) <= max_pieces and all(len(p) for p in pieces)
        out.extend(bytes(p) for p in pieces)     # before the next feed, as generate writes them
        if rc == MERGE_DONE:
            return b"".join(out), asked
        assert rc in (MERGE_FULL, MERGE_NEED)
        if rc == MERGE_NEED:
            asked.append(m.turn)
            m.feed(m.turn, *pending[m.turn].pop(0))


@pytest.mark.parametrize("cap", [1, 2, 5, 1 << 16])
@pytest.mark.parametrize("min_ref", [1, 3, 1 << 15])      # every segment referenced, the long ones, none
@pytest.mark.parametrize("max_pieces", [1, 2, 1024])
def test_merge_interleaves_epoch_by_epoch(cap, min_ref, max_pieces):
    out, asked = _merge(SOURCES, cap, min_ref, max_pieces)
    assert out == GOLDEN
    assert asked == [0, 1, 0, 1]


def test_merge_hands_long_segments_out_where_they_are_and_copies_short_ones():
    m = Merger(2, 64, min_ref=3)
    m.feed(0, *SOURCES[0][0])
    m.feed(1, *SOURCES[1][0])
    rc, pieces = m.merge()       # a0. b0. a1., then source 0's buffer is used up
    assert rc == MERGE_NEED and m.turn == 0
    assert [bytes(p) for p in pieces] == [b"a0.", b"b0.", b"a1."]
    assert [p.obj for p in pieces] == [SOURCES[0][0][0], SOURCES[1][0][0], SOURCES[0][0][0]]   # not copied
    m.feed(0, *SOURCES[0][1])
    rc, pieces = m.merge()       # b1 (2 bytes: copied), then source 1's buffer is used up
    assert rc == MERGE_NEED and m.turn == 1
    assert [bytes(p) for p in pieces] == [b"b1"] and isinstance(pieces[0].obj, bytearray)   # the merger's buffer


def test_merge_joins_a_sources_consecutive_segments_in_one_piece():
    m = Merger(1, 64, min_ref=1)
    m.feed(0, *_src(b"a0.a1.a2.", [3, 6, 9], 0, True))
    rc, pieces = m.merge()
    assert rc == MERGE_DONE and [bytes(p) for p in pieces] == [b"a0.a1.a2."]


def test_merge_of_one_source_is_its_bytes():
    out, _ = _merge([[_src(b"a0.a1.", [3, 6], 0, True)]], 4)
    assert out == b"a0.a1."


def test_merge_rejects_marks_beyond_the_buffer():
    m = Merger(1, 64)
    data, marks, fill = _src(b"a0.", [3], 0, True)
    m.feed(0, data, np.array([9], np.int64), fill)
    with pytest.raises(RuntimeError, match="merge: bad argument"):
        m.merge()


def test_merge_rejects_a_fill_larger_than_its_buffers():
    data, marks, fill = _src(b"a0.a1.", [3, 6], 0, True)
    with pytest.raises(ValueError, match="does not match"):
        Merger(1, 64).feed(0, data, marks[:1], fill)


def _fills(sim, size: int):
    buf_marks = []
    while True:
        buf, marks = bytearray(size), np.zeros(7, np.int64)   # few marks: many hand-offs
        r = sim.fill("influx", buf, marks)
        buf_marks.append((buf, marks, r))
        if r.done:
            return buf_marks


@pytest.mark.parametrize("use_case,scale", [("devops", 3), ("iot", 4)])
def test_merge_of_simulator_slices_equals_one_simulator(use_case, scale):
    """iot: late records are emitted epochs after their own, in the emitting epoch."""
    ds = dataset(use_case=use_case, scale=scale, end="2016-01-01T00:30:00Z", seed=7,
                 **({"params": {"late": "0.5"}} if use_case == "iot" else {}))
    mk = lambda lo, hi: Simulator(ds.compiled, 7, lo, hi, ds.start_ns, ds.interval_ns, ds.epochs)
    whole = b"".join(bytes(b[: r.bytes]) for b, _, r in _fills(mk(0, scale), 1 << 20))
    bound = mk(0, 1).record_bound("influx")
    sources = [_fills(mk(i, i + 1), bound + 50) for i in range(scale)]
    out, asked = _merge(sources, 1000)
    assert out == whole
    assert len(asked) > 3 * scale


def test_plan_picks_one_process_for_little_work():
    ds = dataset(use_case="cpu-single", scale=2, interval="1s", end="2016-01-03T00:00:00Z")
    assert gen.plan_processes(ds, 0, 2, 2, cpus=8) == 1
    assert gen.plan_processes(ds, 0, 2, 4, cpus=8) == 1


def test_plan_keeps_the_processes_asked_for_large_work():
    ds = dataset(use_case="devops", scale=100)
    assert gen.plan_processes(ds, 0, 100, 2, cpus=8) == 2
    assert gen.plan_processes(ds, 0, 100, 4, cpus=8) == 4
    assert gen.plan_processes(ds, 0, 100, 4, cpus=2) == 2       # no more than the processors
    assert gen.plan_processes(ds, 0, 100, 1, cpus=8) == 1
    few = dataset(use_case="devops", scale=3, interval="1s", end="2016-01-03T00:00:00Z")   # 4.7M rows
    assert gen.plan_processes(few, 0, 3, 8, cpus=8) == 3       # no more than the entities


def test_plan_keeps_one_process_when_an_epochs_share_would_not_fit_a_slot():
    wide = dataset(use_case="devops", scale=40_000, end="2016-01-01T00:01:00Z")   # 6 epochs of 40,000 hosts
    per_host = gen.epoch_bytes(wide, "influx", 0)
    assert 3_000 < per_host < 5_000                       # nine lines of one host
    assert gen.plan_processes(wide, 0, 40_000, 2, cpus=2) == 2      # 2.16M rows: enough work
    assert gen.plan_merge(wide, "influx", 0, 40_000, 2) == 1        # 20,000 hosts' lines: ~80 MB a share
    narrow = dataset(use_case="devops", scale=100, end="2016-01-02T00:00:00Z")
    assert gen.plan_merge(narrow, "influx", 0, 100, 2) == 2         # 50 hosts' lines: ~190 kB
    assert gen.plan_merge(narrow, "influx", 0, 100, 1) == 1


def test_plan_keeps_one_process_when_an_epochs_share_is_a_few_rows():
    two = dataset(use_case="cpu-single", scale=2, interval="1s", end="2016-01-13T12:00:00Z")   # 2.16M rows
    assert gen.plan_processes(two, 0, 2, 2, cpus=2) == 2            # enough rows
    assert gen.epoch_bytes(two, "influx", 0) < gen.MIN_SHARE_BYTES  # one row of one host a share
    assert gen.plan_merge(two, "influx", 0, 2, 2) == 1
    twenty = dataset(use_case="cpu-single", scale=20, interval="1s", end="2016-01-03T09:36:00Z")
    assert gen.plan_merge(twenty, "influx", 0, 20, 2) == 2          # ten hosts' rows: ~2 kB
    hosts = dataset(use_case="devops", scale=2, end="2016-01-27T16:00:00Z")
    assert gen.plan_merge(hosts, "influx", 0, 2, 2) == 2            # one host's nine lines: ~4 kB


def test_cli_runs_little_work_in_one_process_with_the_same_bytes(tmp_path):
    args = ["generate", "-q", "--use-case", "cpu-single", "--scale", "2", "--end", "2016-01-01T06:00:00Z"]
    run_cli(*args, "-j", "1", "-o", str(tmp_path / "a.lp"))
    run_cli(*args, "-j", "2", "-o", str(tmp_path / "b.lp"))
    assert (tmp_path / "a.lp").read_bytes() == (tmp_path / "b.lp").read_bytes()
    manifest = json.loads((tmp_path / "b.lp.manifest.json").read_text())
    assert manifest["timing"]["processes"] == 1


@pytest.mark.skipif(gen.usable_cpus() < 2, reason="-j 2 runs one process on one processor")
def test_the_summary_says_how_many_processes_ran():
    args = ["generate", "-u", "cpu-only", "--scale", "100", "--interval", "1s", "--end", "2016-01-01T06:00:00Z",
            "-o", "/dev/null"]                          # 2,160,000 rows: enough for two
    two = run_cli(*args, "-j", "2").stderr.decode()
    assert "2,160,000 rows" in two and "rows/s, 2 processes)" in two
    assert "processes" not in run_cli(*args, "-j", "1").stderr.decode()


def _read_fifo(path, out: list) -> None:
    with open(path, "rb") as f:
        out.append(f.read())


@pytest.mark.parametrize("processes", [2, 3])
def test_processes_write_the_bytes_of_one_whether_the_parent_simulates_or_only_writes(processes, tmp_path,
                                                                                     monkeypatch):
    """A regular file is hashed (a busy sink: every slice goes to a worker); a pipe is
    not (the parent simulates the first slice itself). Both give one process's bytes."""
    import os
    import threading

    ds = dataset(use_case="iot", scale=5, end="2016-01-01T02:00:00Z", seed=3, params={"late": "0.3"})
    lift_process_plan(monkeypatch)
    started, start = [], gen._start_workers
    monkeypatch.setattr(gen, "_start_workers", lambda ds, fmt, slices, *a: started.append(len(slices)) or
                        start(ds, fmt, slices, *a))
    gen.generate(ds, "influx", str(tmp_path / "one.lp"), processes=1, show_progress=False)
    one = (tmp_path / "one.lp").read_bytes()
    m = gen.generate(ds, "influx", str(tmp_path / "file.lp"), processes=processes, show_progress=False)[0]
    assert m["timing"]["processes"] == processes and (tmp_path / "file.lp").read_bytes() == one
    assert started == [processes]
    fifo, got = str(tmp_path / "fifo"), []
    os.mkfifo(fifo)
    reader = threading.Thread(target=_read_fifo, args=(fifo, got))
    reader.start()
    gen.generate(ds, "influx", fifo, processes=processes, show_progress=False)
    reader.join(timeout=60)
    assert got == [one] and started == [processes, processes - 1]


def test_pieces_are_written_whole_and_in_order_across_short_writes(monkeypatch):
    pieces = [b"abc", b"", b"defghij", b"k", bytearray(b"lmnopqrstu"), memoryview(b"vwxyz")]
    got = []

    def writev(fd, bufs):        # at most 4 bytes a call: short writes everywhere
        assert fd == 7 and 0 < len(bufs) <= 2
        data = b"".join(bytes(b) for b in bufs)[:4]
        got.append(data)
        return len(data)
    monkeypatch.setattr(gen, "IOV_MAX", 2)
    monkeypatch.setattr(gen.os, "writev", writev)
    gen._writev_all(7, list(pieces))
    assert b"".join(got) == b"abcdefghijklmnopqrstuvwxyz"
