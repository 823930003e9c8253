"""Canonical rows from InfluxDB's values (phase 5), shared by the InfluxQL and
Flux parsers: the columns a drawn query answers in (queries/shapes.py), value
conversion by column kind, group values, and what InfluxDB's aggregates leave
out of the SQL meaning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tsbench.queries.shapes import columns

AGGREGATES = ("max", "min", "mean", "sum", "count")


def tag(v) -> str | None:
    """A group value: InfluxDB has no empty tag values, an absent tag reads as ""."""
    return None if v is None or v == "" else str(v)


def converter(kind: str) -> Callable[[Any], Any]:
    """The function turning an answer's value into a canonical one of `kind` (int, str, float)."""
    if kind == "int":
        return lambda v: None if v is None else int(v)
    if kind == "str":
        return lambda v: None if v is None else str(v)
    return lambda v: None if v is None else float(v)


def layout(p: dict) -> tuple[bool, list[str], list[Callable[[Any], Any]]]:
    """(has a time column, group columns, a converter per value column) of p's answer."""
    has_time, group, values = columns(p)
    return has_time, group, [converter(v.kind) for v in values]


def finish_aggregate(p: dict, rows: list[tuple], has_time: bool, group: list[str]) -> list[tuple]:
    """What InfluxDB leaves out of the SQL meaning: count() of nothing is 0, not absent
    (a whole-window count over an empty window is one row of zeros), and LIMIT is global,
    not per series (rows of several groups are cut to the newest/oldest `limit`)."""
    n = len(p["fields"])
    if p["agg"] == "count":
        lead = (1 if has_time else 0) + len(group)
        rows = [r[:lead] + tuple(0 if v is None else v for v in r[lead:]) for r in rows]
        if not rows and not has_time and not group:
            rows = [(0,) * n]
    if p.get("limit") and has_time:
        rows.sort(key=lambda r: r[0], reverse=p.get("order") == "desc")
        rows = rows[:int(p["limit"])]
    return rows
