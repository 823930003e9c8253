"""What Cassandra holds of a measurement, value by value in aggregate (phase 2, value
verification: target.py's stats()), for both layouts (schema.py). Aggregates over a
whole table are a scan the server may time out on a busy machine, so every
statement names one partition (a series' field and day for schema=series, a series'
day for schema=wide) and the window's clustering range; target.py runs them a few at
a time, each bounded by the request timeout and retried as counts are.

An integer column is summed as `sum(cast(x AS varint))`: Cassandra 5.0's
`sum(bigint)` wraps around on overflow (2^62 + 2^62 + 5 gave
-9223372036854775803, observed) where a varint sum is exact. Doubles are summed
by the server (plain addition) per partition and the partials added here (fsum).

Series: the distinct tag parts of the partition keys that hold a row in the window:
`<measurement>[,<tag>=<value>]...` of series_id (schema=series), the "series"
column (schema=wide)."""

from __future__ import annotations

from tsbench.core.model import Table
from tsbench.databases.cassandra.dialects.base import MS
from tsbench.databases.cassandra.schema import SERIES_TABLES, ident


def _total(col: str, typ: str) -> str:
    return f"sum(cast({col} AS varint))" if typ == "int" else f"sum({col})"


def series_partitions(keyspace: str) -> list[tuple[str, str]]:
    """(series table, the CQL of its partition keys): schema=series."""
    return [(typ, f"SELECT DISTINCT series_id FROM {ident(keyspace)}.{table}") for typ, table in SERIES_TABLES.items()]


def series_key(series_id: str) -> tuple[str, str, str]:
    """(measurement and tags, field, day) of a schema=series partition key."""
    head, field, day = series_id.rsplit("#", 2)
    return head, field, day


def series_statement(keyspace: str, typ: str) -> str:
    """One partition's figures (schema=series): count, sum, min, max of value in the window."""
    return (f"SELECT count(value), {_total('value', typ)}, min(value), max(value) FROM {ident(keyspace)}."
            f"{SERIES_TABLES[typ]} WHERE series_id = ? AND timestamp_ns >= ? AND timestamp_ns < ?")


def wide_partitions(keyspace: str, t: Table) -> str:
    return f'SELECT DISTINCT "series", "day" FROM {ident(keyspace)}.{ident(t.name)}'


def wide_statement(keyspace: str, t: Table) -> str:
    """One partition's figures (schema=wide): its rows in the window, then per field count,
    sum, min, max."""
    cols = ["count(*)"]
    for f in t.fields:
        c = ident(f.name)
        cols += [f"count({c})", _total(c, f.type), f"min({c})", f"max({c})"]
    return (f'SELECT {", ".join(cols)} FROM {ident(keyspace)}.{ident(t.name)} WHERE "series" = ? AND "day" = ? '
            f'AND ("time", "ns") >= (?, ?) AND ("time", "ns") < (?, ?)')


def wide_window(start_ns: int, end_ns: int) -> tuple[int, int, int, int]:
    """The bound values of wide_statement()'s window: (ms, rest) of its start and end."""
    return start_ns // MS, start_ns % MS, end_ns // MS, end_ns % MS
