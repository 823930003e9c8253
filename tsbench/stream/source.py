"""Stream: the batches of one writer, generated on the fly by the C core into one
reusable buffer (no data file; the memory does not grow with the run's length). A
writer owns an exact share [lo, hi) of the entities (as `generate --group` splits
them), so its bytes are the bytes `generate` writes for that share; each batch is
exactly batch_rows whole records (the share's last one may hold fewer), cut by the C
core as `load` cuts a file. The buffer grows to what a batch takes (twice the room at a
time), then stays that size."""

from __future__ import annotations

from .. import native
from ..dataset import Dataset
from ..model import Batch

START_BYTES = 1 << 20


class BatchSource:
    """Batches of entities [lo, hi) over `epochs` ticks from ds.start_ns. A batch's bytes
    live in the source's buffer: call next() again only once the last batch is answered."""

    def __init__(self, ds: Dataset, fmt: str, lo: int, hi: int, epochs: int, batch_rows: int,
                 layout: native.CsvLayout | None = None):
        self.sim = native.Simulator(ds.compiled, ds.spec.seed, lo, hi, ds.start_ns, ds.interval_ns, epochs)
        self.fmt, self.batch_rows, self.layout = fmt, batch_rows, layout
        self.bound = self.sim.record_bound(fmt)          # the longest a record can be (far above the mean)
        self.buf = bytearray(max(START_BYTES, 2 * self.bound))
        self.view = memoryview(self.buf)
        self.filled = self.sent = 0
        self.done = lo >= hi
        self.epoch = 0                   # the epoch the simulator emits next

    def next(self) -> Batch | None:
        """The next batch, or None when the share is done."""
        if self.sent:                    # the answered batch's bytes go; what follows moves up
            rest = self.filled - self.sent
            self.buf[:rest] = self.view[self.sent: self.filled]
            self.filled, self.sent = rest, 0
        while True:
            c = native.cut(self.fmt, self.buf, 0, self.filled, self.batch_rows, self.done, self.layout)
            if c.rows and (c.rows == self.batch_rows or self.done):
                self.sent = c.bytes
                return Batch(self.view[: c.bytes], c.rows, c.values)
            if self.done:
                return None
            if len(self.buf) - self.filled < self.bound:
                self._grow()
            r = self.sim.fill(self.fmt, self.view[self.filled:])
            self.filled += r.bytes
            self.done, self.epoch = bool(r.done), r.epoch

    def _grow(self) -> None:
        """Twice the room: the buffer grows to what a batch takes, then stays."""
        buf = bytearray(2 * len(self.buf))
        buf[: self.filled] = self.view[: self.filled]
        self.buf, self.view = buf, memoryview(buf)
