"""Stream: the live table on a terminal (stderr a terminal and no --quiet): rich redraws,
each second, one row per writer and one for all of them with the second's rows/s,
values/s, write latency p50/p99/max (all writers: their histograms added), errors,
backoffs, the distinct series so far and the closed loop's delay, under a title with the
run's totals. Without a terminal the stream prints one line per second instead."""

from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.table import Table

from tsbench.stream.stats import all_writers

COLUMNS = (("writer", "writer"), ("rows", "rows/s"), ("values", "values/s"), ("p50_ms", "p50 ms"),
           ("p99_ms", "p99 ms"), ("max_ms", "max ms"), ("errors", "errors"), ("backoffs", "backoffs"),
           ("series", "series"), ("delay_ms", "delay ms"))


def _cell(v) -> str:
    if v is None:
        return "-"
    return f"{v:,.2f}" if isinstance(v, float) else f"{v:,}" if isinstance(v, int) else str(v)


class LiveTable:
    def __init__(self, target: str, console: Console | None = None):
        self.target = target
        self.console = console or Console(stderr=True)
        self.live = Live(console=self.console, auto_refresh=False)
        self.rows = self.errors = self.seconds = 0

    def table(self, rows: list[dict]) -> Table:
        self.rows += sum(r["rows"] for r in rows)
        self.errors += sum(r["errors"] for r in rows)
        self.seconds = rows[0]["second"] + 1 if rows else self.seconds
        t = Table(title=f"stream {self.target}: second {self.seconds}, {self.rows:,} rows, {self.errors} errors",
                  title_justify="left")
        for _, head in COLUMNS:
            t.add_column(head, justify="right")
        for r in [*rows, all_writers(rows)]:
            t.add_row(*(_cell(r[k]) for k, _ in COLUMNS))
        return t

    async def open(self) -> None:
        self.live.start()

    def push(self, rows: list[dict]) -> None:
        self.live.update(self.table(rows), refresh=True)

    async def close(self) -> None:
        self.live.stop()
        return None
