"""Statistics over trials (after a run, and `compare`): a cell's figures as the median
over its trials with a 95% confidence interval and coefficient of variation.

Interface shared by the runner (runner.py calls `cell_columns` as each cell ends),
the report and `compare`. This first version gives medians only; the intervals come
with scipy.stats (issue 38)."""

from __future__ import annotations

import statistics

WRITES = ("load", "stream")
# figure column of the `trials` and `cells` tables -> (the phases that measure it, unit)
FIGURES = {
    "rows_per_s": (WRITES, "rows/s"), "values_per_s": (WRITES, "values/s"), "mb_per_s": (("load",), "MB/s"),
    "disk_bytes": (("load",), "bytes"), "client_cpu_s": (WRITES, "CPU s"), "server_cpu_s": (WRITES, "CPU s"),
    "query_p50_ms": (("execute",), "ms"), "query_p90_ms": (("execute",), "ms"),
    "query_p99_ms": (("execute",), "ms"), "query_mean_ms": (("execute",), "ms"), "qps": (("execute",), "queries/s"),
}


def cell_columns(trials: list[dict], queries: list[dict]) -> dict:
    """The cells table's figure columns of one cell from its rows of the `trials` table
    (one per phase and trial) and of the `queries` table: each figure the median over
    the trials of the phase that measures it."""
    out: dict = {}
    for fig, (phases, _unit) in FIGURES.items():
        got = [t[fig] for t in trials if t.get("phase") in phases and t.get(fig) is not None]
        if got:
            out[fig] = statistics.median(got)
    return out
