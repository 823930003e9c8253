"""The machine's noise during a cell (load, queries and execute phases of a run): the
1-minute load average and CPU steal before and after the cell, other processes' share of
the machine's CPU while it ran, and whether that made the machine busy. The resource
monitor feeds it at each sample; its figures go into the `cells` table (docs/results.md)."""

from __future__ import annotations

import os

import psutil

# The busy rule: a cell ran on a busy machine when, over the cell, processes other than
# the cell's own (tsbench and its children, the server and its children) used more than
# this share of the machine's CPU (0.10: a fifth of a core on 2 cores) ...
BUSY_OTHER_CPU_SHARE = 0.10
# ... or the hypervisor took more than this percent of the CPU time from the machine (steal).
BUSY_STEAL_PCT = 5.0
# The load average is recorded but not in the rule: the cell's own work raises it, and the
# previous cell's lingers in it for minutes.


def busy_verdict(other_cpu_share: float | None, steal_pct: float | None) -> tuple[bool, str | None]:
    """(busy, the reason in words) by the rule above; unknown figures (None) never make a cell busy."""
    reasons = []
    if other_cpu_share is not None and other_cpu_share > BUSY_OTHER_CPU_SHARE:
        reasons.append(f"other processes used {other_cpu_share:.0%} of the machine's CPU "
                       f"(above {BUSY_OTHER_CPU_SHARE:.0%})")
    if steal_pct is not None and steal_pct > BUSY_STEAL_PCT:
        reasons.append(f"CPU steal {steal_pct:.1f}% (above {BUSY_STEAL_PCT:.0f}%)")
    return bool(reasons), "; ".join(reasons) or None


def _machine_cpu() -> tuple[float, float, float]:
    """(busy, steal, total) CPU seconds of the whole machine since boot, summed over its cores.
    Busy is user, nice, system, irq and softirq (a guest's time is inside user and nice)."""
    t = psutil.cpu_times()
    busy = t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
    steal = getattr(t, "steal", 0.0)
    total = busy + t.idle + getattr(t, "iowait", 0.0) + steal
    return busy, steal, total


def _load_avg_1m() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def _pct(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 2) if whole > 0 else None


class NoiseMeter:
    """Reads the machine's CPU at each of the monitor's samples and keeps, per interval,
    the CPU others used (the machine's busy CPU minus the cell's own processes') and the steal."""

    def __init__(self):
        self.load_before: float | None = None
        self.load_after: float | None = None
        self._last: tuple[float, float, float] | None = None
        self._proc_cpu: dict[tuple[int, float], float] = {}
        self._wall: float | None = None
        self.intervals: list[tuple[float, float, float]] = []  # (other_s, steal_s, total_s)

    def start(self) -> None:
        """A span begins (a monitor enters): the load average of the first span is the one
        before; the time between two spans (a trial's server stopped, the next started) is
        not measured."""
        if self.load_before is None:
            self.load_before = _load_avg_1m()
        self._last, self._proc_cpu, self._wall = None, {}, None

    def end(self) -> None:
        self.load_after = _load_avg_1m()

    def sample(self, proc_cpu: dict[tuple[int, float], float], wall: float) -> float | None:
        """Take a reading. proc_cpu holds the CPU seconds of each of the cell's live processes by
        (pid, start time), read at wall-clock time `wall`. Returns other processes' CPU percent
        over the interval since the last reading (100 = one core), None at the first."""
        own = self._own_cpu_since_last(proc_cpu)
        self._proc_cpu, self._wall = proc_cpu, wall
        now = _machine_cpu()
        last, self._last = self._last, now
        if last is None:
            return None
        busy, steal, total = (a - b for a, b in zip(now, last))
        if total <= 0:
            return None
        other = max(0.0, busy - own)
        self.intervals.append((other, steal, total))
        return round(100.0 * other / total * (psutil.cpu_count() or 1), 1)

    def _own_cpu_since_last(self, proc_cpu: dict[tuple[int, float], float]) -> float:
        """The cell's processes' CPU since the last reading: the growth of those seen then, and
        all of those started since. A process that ended in between took its last CPU with it
        (it counts as other's), and so does one that joined the cell's tree from outside."""
        own = 0.0
        for key, cpu in proc_cpu.items():
            prev = self._proc_cpu.get(key)
            if prev is not None:
                own += max(0.0, cpu - prev)
            elif self._wall is not None and key[1] >= self._wall:
                own += cpu
        return own

    def figures(self) -> dict:
        """The cells table's columns (docs/results.md)."""
        other = sum(i[0] for i in self.intervals)
        steal = sum(i[1] for i in self.intervals)
        total = sum(i[2] for i in self.intervals)
        share = round(min(1.0, other / total), 4) if total > 0 else None
        steal_pct = _pct(steal, total)
        busy, reason = busy_verdict(share, steal_pct)
        first, last = (self.intervals[0], self.intervals[-1]) if self.intervals else (None, None)
        return {"load_avg_1m_before": self.load_before, "load_avg_1m_after": self.load_after,
                "steal_pct_before": first and _pct(first[1], first[2]),
                "steal_pct_after": last and _pct(last[1], last[2]),
                "steal_pct": steal_pct, "other_cpu_share": share, "busy": busy, "busy_reason": reason}
