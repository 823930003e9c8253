"""Stream: the batches of one writer, generated on the fly by the C core into one
reusable buffer (no data file; the memory does not grow with the run's length). A
writer owns an exact share [lo, hi) of the entities (as `generate --group` splits
them), so its bytes are the bytes `generate` writes for that share; each batch is
exactly batch_rows whole records (the share's last one may hold fewer), made by the C
core at the start of the buffer it is sent from (no cut, no copy). The buffer grows to
what a batch takes (at once to the size the records so far foretell), then stays that
size. With churn (stream/churn.py) the simulator renews a share of the series every
period."""

from __future__ import annotations

from tsbench.core.model import Batch
from tsbench.data import native
from tsbench.data.dataset import Dataset
from tsbench.stream.churn import Churn

START_BYTES = 1 << 20


class BatchSource:
    """Batches of entities [lo, hi) over `epochs` ticks from ds.start_ns. A batch's bytes
    live in the source's buffer: call next() again only once the last batch is answered."""

    def __init__(self, ds: Dataset, fmt: str, lo: int, hi: int, epochs: int, batch_rows: int,
                 churn: Churn | None = None):
        self.sim = native.Simulator(ds.compiled, ds.spec.seed, lo, hi, ds.start_ns, ds.interval_ns, epochs,
                                     cache=fmt)
        if churn is not None:            # (before the record bound: a renewed tag is longer)
            self.sim.set_churn(ds.entities, churn.per_period(ds.entities), churn.period_ns)
        self.fmt, self.batch_rows = fmt, batch_rows
        self.bound = self.sim.record_bound(fmt)          # the longest a record can be (far above the mean)
        self.buf = bytearray(max(START_BYTES, 2 * self.bound))
        self.view = memoryview(self.buf)
        self.done = lo >= hi
        self.epoch = 0                   # the epoch the simulator emits next
        self.created = 0                 # the last batch's records that were a new series' first

    def next(self) -> Batch | None:
        """The next batch, or None when the share is done."""
        filled = rows = values = self.created = 0
        while rows < self.batch_rows and not self.done:
            if len(self.buf) - filled < self.bound:
                self._grow(filled, rows)
            r = self.sim.fill_rows(self.fmt, self.view[filled:], self.batch_rows - rows)
            filled, rows, values = filled + r.bytes, rows + r.rows, values + r.values
            self.created += r.series_created
            self.done, self.epoch = bool(r.done), r.epoch
        return Batch(self.view[:filled], rows, values) if rows else None

    def _grow(self, filled: int, rows: int) -> None:
        """Room for the batch as its records so far foretell it (an eighth more, and
        at least twice the room): one or two grows, then the buffer stays."""
        foretold = filled * self.batch_rows // max(rows, 1) * 9 // 8 + self.bound
        buf = bytearray(max(2 * len(self.buf), foretold))
        buf[:filled] = self.view[:filled]
        self.buf, self.view = buf, memoryview(buf)
