"""Query specs (phase 3) and answers (phases 4-5), database-agnostic.

A QueryType is a kind of query (TSBS's single-groupby-1-1-1, the seed's max-cpu-8,
...): it draws its parameters once from the seed (hosts, windows, thresholds),
says which dataset it needs, and states its meaning as SQL over the reference
tables (one table per measurement: time TIMESTAMPTZ, tag columns, field columns),
written against a small SqlDialect so PostgreSQL and DuckDB render the same
meaning. A QuerySpec is one drawn query (type + params), stored in a queries file
that every target renders from.

Every answer is normalized to canonical rows: (time_ns or None, *group values,
*values), in the columns the type declares; compare() checks two answers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import UserError
from ..targets.base import Tables

MINUTE = 60 * 10**9
HOUR = 60 * MINUTE
DAY = 24 * HOUR


@dataclass(frozen=True)
class QuerySpec:
    id: int
    type: str
    params: dict

    def to_dict(self) -> dict:
        return {"id": self.id, "type": self.type, "params": self.params}

    @classmethod
    def from_dict(cls, d: dict) -> "QuerySpec":
        return cls(int(d["id"]), str(d["type"]), dict(d["params"]))


@dataclass(frozen=True)
class Value:
    name: str
    kind: str = "float"          # "float" | "int" | "str"


@dataclass
class Answer:
    """One execution's result: canonical rows plus what the wire showed."""

    rows: list[tuple]
    nbytes: int | None = None    # response bytes on the wire (None: not measurable, e.g. in-process)
    ttfb: float | None = None    # seconds to the first byte of the response
    seconds: float = 0.0         # from sending the query to the answer's last byte (drivers: rows returned),
    #                              before tsbench turns it into canonical rows; the recorded latency
    raw: Any = None              # the database's own response, for --print-responses


@dataclass
class DatasetContext:
    """What query types need to know of a dataset: its tables, time range and the
    entity tag values (e.g. every hostname), to draw parameters and check needs."""

    use_case: str
    tables: Tables
    start_ns: int
    end_ns: int
    interval_ns: int
    entities: int
    entity_tags: dict[str, list[str | None]] = field(default_factory=dict)

    def table(self, name: str):
        return self.tables.by_name().get(name)


class SqlDialect:
    """How the reference tables are spelled in one SQL engine. Subclasses change
    the FROM clause (PostgreSQL's tag table), column references and time math."""

    name = "duckdb"

    def quote(self, name: str) -> str:
        return q(name)

    def table(self, measurement: str) -> str:
        """FROM item for a measurement, aliased m."""
        return f'{q(measurement)} m'

    def tag(self, measurement: str, tag: str) -> str:
        return f"m.{q(tag)}"

    def field(self, name: str) -> str:
        return f"m.{q(name)}"

    def time_ns(self) -> str:
        return "epoch_ns(m.time)"

    def bucket_ns(self, width_ns: int) -> str:
        return f"(epoch_ns(m.time) // {width_ns}) * {width_ns}"

    def ts(self, ns: int) -> str:
        """A TIMESTAMPTZ literal of an epoch-ns instant (microsecond precision)."""
        return f"TIMESTAMPTZ {lit(iso(ns))}"

    def window(self, start_ns: int, end_ns: int) -> str:
        return f"m.time >= {self.ts(start_ns)} AND m.time < {self.ts(end_ns)}"


def iso(ns: int) -> str:
    """RFC 3339 UTC with microseconds when needed: 2016-01-01T00:00:00Z."""
    import datetime as dt

    t = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=ns // 1000)
    frac = f".{t.microsecond:06d}" if t.microsecond else ""
    return t.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


@dataclass(frozen=True)
class QueryType:
    """One kind of query: a name, what it reads, and how it draws a query. A drawn
    query is a shape (queries/shapes.py: aggregate, rows, last, ...) with all its
    parameters, so renderers handle a few shapes, not every type."""

    name: str
    family: str                               # "devops" | "iot" | "flux" | "relational"
    doc: str
    needs: dict                               # measurement -> fields it reads
    make: Callable[[np.random.Generator, "DatasetContext"], dict]

    def applies(self, ctx: "DatasetContext") -> str | None:
        """None if the dataset has what this type reads, else the reason in one line."""
        for m, fields in self.needs.items():
            t = ctx.table(m)
            if t is None:
                return f"query type {self.name} needs measurement {m!r}, which the dataset ({ctx.use_case}) lacks"
            missing = [f for f in fields if f not in t.field_names and f not in t.tags]
            if missing:
                return f"query type {self.name} needs {m}.{missing[0]}, which the dataset ({ctx.use_case}) lacks"
        return None


# ---- parameter drawing helpers ----------------------------------------------------------------

def draw_window(rng: np.random.Generator, ctx: DatasetContext, width_ns: int, align_ns: int) -> tuple[int, int]:
    """A random [start, start + width) inside the dataset, its start aligned to
    align_ns (so every dialect buckets it alike); the whole span if it is shorter."""
    span = ctx.end_ns - ctx.start_ns
    width = min(width_ns, span)
    first = -(-ctx.start_ns // align_ns) * align_ns
    last = ctx.end_ns - width
    if last < first:
        return ctx.start_ns, ctx.start_ns + width
    k = int(rng.integers(0, (last - first) // align_ns + 1))
    s = first + k * align_ns
    return s, s + width


def draw_entities(rng: np.random.Generator, ctx: DatasetContext, tag: str, n: int) -> list[str]:
    values = ctx.entity_tags[tag]
    if n > len(values):
        raise UserError(f"a query needs {n} distinct {tag} values; the dataset has {len(values)} "
                        f"(raise --scale or pick another query type)")
    idx = rng.choice(len(values), size=n, replace=False)
    return [values[i] for i in sorted(int(i) for i in idx)]


# ---- comparing answers ------------------------------------------------------------------------

DEFAULT_REL_TOL = 1e-9


@dataclass
class Mismatch:
    reason: str
    expected: list[tuple]
    got: list[tuple]

    def diff(self, limit: int = 5) -> str:
        """A readable diff of the first differing rows."""
        lines = [self.reason]
        exp, got = self.expected, self.got
        i = next((k for k in range(min(len(exp), len(got))) if exp[k] != got[k]), min(len(exp), len(got)))
        for k in range(i, min(i + limit, max(len(exp), len(got)))):
            e = exp[k] if k < len(exp) else "(none)"
            g = got[k] if k < len(got) else "(none)"
            lines.append(f"  row {k}: expected {e}")
            lines.append(f"  row {k}:      got {g}")
        return "\n".join(lines)


def plain(v):
    """A database value as a plain Python value (Decimal -> int or float)."""
    from decimal import Decimal

    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def _norm(rows: list[tuple], n_lead: int) -> list[tuple]:
    """Drop rows whose values are all null (an empty bucket is the same as a missing
    one, in every dialect) and sort by time and group."""
    rows = [tuple(plain(v) for v in r) for r in rows]
    out = [r for r in rows if any(v is not None and not (isinstance(v, float) and math.isnan(v))
                                          for v in r[n_lead:])]
    def key(r):          # time and group first, then the values: ties sort alike
        return tuple((x is None, "" if x is None else str(x)) if isinstance(x, str) or x is None
                     else (False, x) for x in r[:n_lead]) + \
            tuple((x is None, 0.0 if x is None else float(x)) if not isinstance(x, str) else (False, 0.0)
                  for x in r[n_lead:])
    out.sort(key=key)
    return out


def compare(p: dict, expected: list[tuple], got: list[tuple], rel_tol: float = DEFAULT_REL_TOL) -> Mismatch | None:
    """Integers and strings exactly, floats within rel_tol; nulls equal only nulls."""
    from .shapes import columns

    has_time, group, values = columns(p)
    n_lead = (1 if has_time else 0) + len(group)
    kinds = [v.kind for v in values]
    exp, act = _norm(expected, n_lead), _norm(got, n_lead)
    if len(exp) != len(act):
        return Mismatch(f"{len(act)} rows, expected {len(exp)}", exp, act)
    for k, (e, g) in enumerate(zip(exp, act)):
        if len(e) != len(g):
            return Mismatch(f"row {k} has {len(g)} columns, expected {len(e)}", exp, act)
        if tuple(e[:n_lead]) != tuple(g[:n_lead]):
            return Mismatch(f"row {k}: time/group {tuple(g[:n_lead])}, expected {tuple(e[:n_lead])}", exp, act)
        for j, kind in enumerate(kinds):
            a, b = e[n_lead + j], g[n_lead + j]
            if a is None or b is None:
                if a is not b:
                    return Mismatch(f"row {k} column {j}: {b!r}, expected {a!r}", exp, act)
                continue
            if kind == "str":
                ok = str(a) == str(b)
            elif kind == "int":
                ok = float(a) == float(b)
            else:
                ok = math.isclose(float(a), float(b), rel_tol=rel_tol, abs_tol=0.0) or float(a) == float(b)
            if not ok:
                return Mismatch(f"row {k} column {j} ({values[j].name}): {b!r}, expected {a!r}", exp, act)
    return None
