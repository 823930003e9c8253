"""Stream: when each writer sends its next batch. Open loop (a rate): the writers share
the rate, each batch is due when the writer's rows before it, at the writer's share of
the rate, have had their time, whatever the answers so far; a batch's latency counts
from its due time, so a slow answer delays the count of every batch behind it (no
coordinated omission). Closed loop: the next batch goes `delay` seconds after the
last answer (0: at once), its latency counted from its sending. With a target latency
the delay adapts (AIMD on the writer's pace): an answer slower than the target doubles
the delay (at least STEP_S), a faster one takes STEP_S off it, so the writers settle
where the latency is about the target; the delay is recorded every second."""

from __future__ import annotations

STEP_S = 0.001                           # the delay's additive step under a target latency


class Pacer:
    """Due times (perf_counter seconds) of one writer's batches."""

    def __init__(self, t0: float, rate: float | None, writers: int, writer: int, batch_rows: int,
                 delay: float = 0.0, target_latency: float | None = None):
        self.rate = rate / writers if rate else None      # rows/s of this writer
        self.delay = delay
        self.target = target_latency
        # writers start a fraction of a batch apart, so the rate is even, not in bursts
        self.t0 = t0 + (writer * batch_rows / rate if rate else 0.0)
        self.rows = 0                                      # rows this writer sent before the next batch
        self.last_answer = t0

    def due(self, now: float) -> float:
        """When the next batch is due: open loop, on the schedule (maybe past); closed, after the delay."""
        if self.rate:
            return self.t0 + self.rows / self.rate
        return max(now, self.last_answer + self.delay)

    def sent(self, rows: int, answered_at: float, latency: float | None = None) -> None:
        self.rows += rows
        self.last_answer = answered_at
        if self.target is not None and latency is not None:
            if latency > self.target:
                self.delay = max(STEP_S, 2 * self.delay)
            else:
                self.delay = max(0.0, self.delay - STEP_S)
