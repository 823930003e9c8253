"""Stream: per-second figures per writer that merge exactly. Each writer's write
latencies of a second go into an HdrHistogram (microseconds, 3 significant digits);
at the second's end it becomes one row: rows, values, bytes, batches, errors and
backoffs in that second, the distinct series written so far and those created in the
second, p50/p99/max, the closed
loop's delay (as a target latency adapts it), and the
histogram itself, encoded (HdrHistogram's compressed base64 form), so a notebook
merges writers and seconds by adding histograms, never by averaging percentiles.
The run's whole histogram is the sum of every row's."""

from __future__ import annotations

from dataclasses import dataclass, field

from hdrh.histogram import HdrHistogram

LOWEST_US, HIGHEST_US, DIGITS = 1, 3600 * 10**6, 3     # 1 us .. 1 h, 3 significant digits


def histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def merged(encoded: list[bytes | str]) -> HdrHistogram:
    """The sum of encoded histograms (rows of the per-second table)."""
    h = histogram()
    for e in encoded:
        h.add(HdrHistogram.decode(e))
    return h


COUNTS = ("rows", "values", "bytes", "batches", "errors", "backoffs", "series", "series_created")


def all_writers(rows: list[dict]) -> dict:
    """One second's rows of every writer as one: counts added, latency from the added
    histograms (None without an answer)."""
    out = {k: sum(r[k] for r in rows) for k in COUNTS} | {"writer": "all", "delay_ms": None}
    h = merged([r["latency_hdr"] for r in rows if r["latency_hdr"]])
    n = h.get_total_count()
    return out | {"p50_ms": h.get_value_at_percentile(50) / 1e3 if n else None,
                  "p99_ms": h.get_value_at_percentile(99) / 1e3 if n else None,
                  "max_ms": h.get_max_value() / 1e3 if n else None}


@dataclass
class WriterSecond:
    """One writer's figures in the second under way."""

    hist: HdrHistogram = field(default_factory=histogram)
    rows: int = 0
    values: int = 0
    bytes: int = 0
    batches: int = 0
    errors: int = 0
    backoffs: int = 0
    series_created: int = 0
    delay: float | None = None           # the closed loop's delay after the second's last answer (s)


class Stats:
    """The per-second rows of every writer, and the run's totals."""

    def __init__(self, writers: int, series_per_epoch: list[int]):
        self.now = [WriterSecond() for _ in range(writers)]
        self.rows_total = [0] * writers
        self.series_total = [0] * writers                 # distinct series written so far (the batches' created)
        self.series_per_epoch = series_per_epoch         # a writer's distinct series: its rows of one epoch
        self.table: list[dict] = []                       # the finished seconds, one row per writer
        self.total = histogram()
        self.errors = self.backoffs = 0
        self.answers = 0                                  # batches answered, refused or pushed back: progress
        self.next_second = 0                              # the second the next roll closes
        self.also_roll: list = []                         # other per-second tables closed with this one

    def answered(self, w: int, latency_s: float, rows: int, values: int, nbytes: int, created: int = 0) -> None:
        """An answered batch; created: its records that were a new series' first."""
        s = self.now[w]
        s.hist.record_value(max(LOWEST_US, min(HIGHEST_US, round(latency_s * 1e6))))
        s.rows += rows
        s.values += values
        s.bytes += nbytes
        s.batches += 1
        self.rows_total[w] += rows
        s.series_created += created
        self.series_total[w] += created
        self.answers += 1

    def delay(self, w: int, seconds: float) -> None:
        self.now[w].delay = seconds

    def error(self, w: int) -> None:
        self.now[w].errors += 1
        self.errors += 1
        self.answers += 1

    def backoff(self, w: int) -> None:
        self.now[w].backoffs += 1
        self.backoffs += 1
        self.answers += 1

    def series(self, w: int) -> int:
        """Distinct series written so far: the answered records that were a series' first (the
        C simulator's count: epoch 0's, and with churn each renewed entity's first of its new
        series); exact where each series has one record per epoch (every use case but iot's
        missing and late rows)."""
        return self.series_total[w]

    def roll(self, second: int) -> list[dict]:
        """End second `second`: one row per writer, the accumulators reset."""
        rows = []
        for w, s in enumerate(self.now):
            h = s.hist
            n = h.get_total_count()
            rows.append({"second": second, "writer": w, "rows": s.rows, "values": s.values, "bytes": s.bytes,
                         "batches": s.batches, "errors": s.errors, "backoffs": s.backoffs,
                         "series": self.series(w), "series_created": s.series_created,
                         "p50_ms": h.get_value_at_percentile(50) / 1e3 if n else None,
                         "p99_ms": h.get_value_at_percentile(99) / 1e3 if n else None,
                         "max_ms": h.get_max_value() / 1e3 if n else None,
                         "delay_ms": None if s.delay is None else round(s.delay * 1e3, 3),
                         "latency_hdr": h.encode().decode() if n else ""})
            if n:
                self.total.add(h)
            h.reset()                                    # reused: a histogram is ~200 KB of counts
            self.now[w] = WriterSecond(hist=h, delay=s.delay)
        self.table += rows
        self.next_second = second + 1
        for roll in self.also_roll:
            roll(second)
        return rows
