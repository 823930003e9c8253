"""Phase 2, verify: the SQL of value verification (Target.stats), shared by the SQL
targets (duckdb, postgres, questdb, clickhouse). Two statements per table: one
aggregate over every field column (count, sum, min and max of its non-null values)
and the count of distinct tag tuples. Each target gives its quoting, its relation and
tag columns, and how it sums an integer column without overflow."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tsbench.core.model import STAT_KINDS, FieldStats, Table, TableStats

EXACT = {k: None for k in STAT_KINDS}      # value_checks of a target whose SQL answers every kind


def fields_sql(relation: str, table: Table, quote: Callable[[str], str], int_sum: str = "sum({})") -> str:
    """count, sum, min, max of each field column, in one row (int_sum: the sum of an integer column)."""
    parts = []
    for c in table.fields:
        f = quote(c.name)
        s = int_sum.format(f) if c.type == "int" else f"sum({f})"
        parts += [f"count({f})", s, f"min({f})", f"max({f})"]
    return f"SELECT {', '.join(parts)} FROM {relation}"


def series_sql(relation: str, tag_columns: Sequence[str]) -> str:
    """The distinct tag tuples (already quoted column expressions) with a row."""
    return f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(tag_columns)} FROM {relation}) AS tag_sets"


def table_stats(table: Table, series: int, row: Sequence) -> TableStats:
    """fields_sql's row and the series count as TableStats (ints for integer fields: a
    Decimal or a float answer that is an integer becomes one)."""
    out = {}
    for i, c in enumerate(table.fields):
        count, total, lo, hi = row[4 * i: 4 * i + 4]
        conv = _as_int if c.type == "int" else _as_float
        out[c.name] = FieldStats(int(count or 0), conv(total) if count else 0, conv(lo), conv(hi))
    return TableStats(int(series), out)


def _as_int(x):
    if x is None:
        return None
    if isinstance(x, float) and not x.is_integer():
        return x                  # not an integer: left as it is, to differ
    return int(x)


def _as_float(x):
    return None if x is None else float(x)
