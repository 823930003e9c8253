"""The machine's noise a cell records (tsbench/experiments/noise.py, through the resource
monitor): other processes' CPU share during the cell, the load average and CPU steal
before and after, and the busy verdict with its reason."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil
import pytest

from tsbench.experiments import noise
from tsbench.experiments.monitor import ResourceMonitor

SPIN_S = 6.0  # each spinner ends on its own after this, whatever happens to the test

# Starts the spinners and exits at once, so they are orphans: no longer in this
# process's tree, other processes to the monitor. Prints their pids.
ORPHANS = """
import subprocess, sys
spin = "import time\\nend = time.monotonic() + %s\\nwhile time.monotonic() < end: pass"
quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
ps = [subprocess.Popen([sys.executable, "-c", spin], **quiet) for _ in range(int(sys.argv[1]))]
print(" ".join(str(p.pid) for p in ps))
""" % SPIN_S


@pytest.fixture
def spinners():
    """As many CPU-bound processes outside this process's tree as the machine has cores (at most 16)."""
    count = min(psutil.cpu_count() or 1, 16)
    out = subprocess.run([sys.executable, "-c", ORPHANS, str(count)], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    pids = [int(p) for p in out.split()]
    try:
        yield pids
    finally:
        for pid in pids:
            try:
                psutil.Process(pid).kill()
            except psutil.Error:
                pass


def test_other_processes_spinning_make_the_cell_busy(spinners):
    time.sleep(0.5)  # the spinners past their interpreter's start
    with ResourceMonitor(interval=0.25) as mon:
        time.sleep(1.0)
    got = mon.noise()
    # The spinners keep every core busy (the machine's other users only add to it), so
    # other processes used near all of the machine's CPU; the rule's bound is far below.
    assert got["other_cpu_share"] > 2 * noise.BUSY_OTHER_CPU_SHARE, got
    assert got["other_cpu_share"] <= 1.05, got
    assert got["busy"] is True
    assert "other processes" in got["busy_reason"], got
    for key in ("load_avg_1m_before", "load_avg_1m_after", "steal_pct_before", "steal_pct_after", "steal_pct"):
        assert isinstance(got[key], float) and got[key] >= 0, (key, got)
    json.dumps(got)  # plain values, for the cells table
    shares = [r["other_cpu_percent"] for r in mon.rows if r["other_cpu_percent"] is not None]
    assert shares and max(shares) > 100 * noise.BUSY_OTHER_CPU_SHARE * (psutil.cpu_count() or 1)


def _machine_cpu_s() -> tuple[float, float]:
    t = psutil.cpu_times()
    busy = t.user + t.nice + t.system + t.irq + t.softirq
    return busy, busy + t.idle + t.iowait + t.steal


def test_the_cells_own_processes_are_not_other(spinners):
    """The spinners declared as the server's processes, and a child of this process spinning,
    are the cell's own work: other processes' CPU is the machine's busy CPU less theirs."""
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.monotonic() + %s\n"
                              "while time.monotonic() < end: pass" % SPIN_S])
    try:
        time.sleep(0.5)
        busy0, total0 = _machine_cpu_s()
        with ResourceMonitor(lambda: spinners, interval=0.25) as mon:
            time.sleep(1.0)
        busy1, total1 = _machine_cpu_s()
    finally:
        child.kill()
        child.wait(10)
    own_s = 0.0
    for role in ("server", "client"):
        rows = [r for r in mon.rows if r["role"] == role]
        own_s += rows[-1]["cpu_s"] - rows[0]["cpu_s"]
    assert own_s > 0.5 * (total1 - total0) / (psutil.cpu_count() or 1)  # at least half a core
    # Counting the cell's processes as other would put the share near 1 on any machine.
    assert mon.noise()["other_cpu_share"] <= (busy1 - busy0 - own_s) / (total1 - total0) + 0.08


@pytest.mark.parametrize("other_share, steal, busy, words", [
    (0.0, 0.0, False, None),
    (noise.BUSY_OTHER_CPU_SHARE * 0.9, noise.BUSY_STEAL_PCT * 0.9, False, None),
    (noise.BUSY_OTHER_CPU_SHARE * 1.5, 0.0, True, "other processes used 15% of the machine's CPU"),
    (0.0, noise.BUSY_STEAL_PCT + 2, True, "CPU steal 7.0%"),
    (0.5, noise.BUSY_STEAL_PCT + 2, True, "other processes used 50% of the machine's CPU"),
    (None, None, False, None),
])
def test_the_busy_rule_on_given_numbers(other_share, steal, busy, words):
    got, reason = noise.busy_verdict(other_share, steal)
    assert got is busy
    if words is None:
        assert reason is None
    else:
        assert words in reason
    if other_share == 0.5:
        assert "steal" in reason  # both causes named


def test_a_cell_too_short_to_measure_is_not_called_busy():
    mon = ResourceMonitor()
    got = mon.noise()
    assert got["other_cpu_share"] is None and got["busy"] is False and got["busy_reason"] is None


def test_one_meter_spans_a_cells_trials_and_not_the_gap_between_them(monkeypatch):
    """The monitors of a cell's trials share its meter: the intervals of both spans count,
    the time between them (a trial's server stopped, the next one started) does not."""
    readings = iter([(0.0, 0.0, 10.0), (1.0, 0.0, 20.0),          # span 1: others busy 1 s of 10
                     (50.0, 0.0, 30.0), (51.0, 0.0, 40.0)])       # the gap: 49 s busy; span 2: 1 s of 10
    monkeypatch.setattr(noise, "_machine_cpu", lambda: next(readings))
    meter = noise.NoiseMeter()
    for _ in range(2):
        meter.start()
        meter.sample({}, 0.0)
        meter.sample({}, 1.0)
        meter.end()
    got = meter.figures()
    assert got["other_cpu_share"] == 0.1, got        # 2 s of 20, not 51 of 30
    assert got["busy"] is False
