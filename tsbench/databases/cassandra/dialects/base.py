"""The CQL dialects' shared base (phase 3 render, phase 4 client work): the basic
query shapes as plans of CQL statements over the two agreed Cassandra layouts,
and the client side aggregation that turns their rows into canonical rows
(queries/shapes.py). Here: partitions, the plan (CqlPlan), the numpy partials,
and `_Cql`, what both dialects share. The dialects are dialects/series.py (CqlSeries,
schema=series) and dialects/wide.py (CqlWide, schema=wide); the iot types are
dialects/iot.py (IOT, both dialects' `custom`).

Contract with the target (target.py, CassandraTarget)
---------------------------------------------------
* Two dialect classes, one per schema (their exclusions differ):
  `CqlSeries` (name "cql", schema=series; dialects/series.py) and `CqlWide` (name
  "cql-wide", schema=wide; dialects/wide.py). The target declares `dialects =
  {"cql": CqlSeries, "cql-wide": CqlWide}` and `dialect_name()` returns
  "cql-wide" for schema=wide, else "cql".
* Construction: `Cls(keyspace="tsbench", tables=None, index=None)`; keyspace is
  the target's `keyspace` option, tables the `Tables` of attach()/create().
* The partition index: a plan names the partitions it reads, so the dialect
  needs the partitions that exist. `Cls.index_queries(keyspace, tables) ->
  list[str]` gives the CQL (SELECT DISTINCT of the partition key, one statement
  per table); the target runs each one to the end (all pages), untimed, in
  attach() (session.run_queries calls attach() before anything is rendered;
  execute() renders before prepare()), and builds its dialect once with
  `Cls(keyspace, tables, index=[rows of statement 0, rows of statement 1, ...])`
  (rows: tuples or the driver's Row namedtuples, as returned). `dialect()`
  returns that cached instance (a fresh `Cls(keyspace)` before attach(): it
  reports support() but refuses to render). After a load into the same target
  instance, attach() (or prepare()) reads the index again.
* `render(spec)` returns a `CqlPlan`:
    - `statements: tuple[tuple[str, tuple], ...]`: (cql, params) pairs, the CQL
      with `?` markers, to be prepared (each distinct string once: `templates`
      is their set; the target may collect it at render() time and prepare them
      in prepare(), or prepare on first use and cache by string) and executed
      with the params. None depends on another: the target runs them all
      concurrently (execute_async) inside the timed region, each one read to
      its last page (fetch_size None, or by following paging_state).
    - `finish(results: list[list[tuple]]) -> list[tuple]`: results[i] is the
      rows of statements[i], in the order of the statements; returns the
      canonical rows. This is client work the user waits for: the target's
      finish() calls it, and the executor times it as Answer.client_s (inside
      Answer.seconds) and sets Answer.rows to its result. `client` is always True.
    - `text`: the statements as one printable string (for --print-responses).
    - A plan may hold no statement (no partition matches): finish([]) is the
      (empty) answer; the target still calls it.
  Types it does not run raise Unsupported with the reason (Dialect.render).

Layouts: schema=series: series_double / series_bigint keyed by series_id
`<m>[,<tag>=<value>]...#<field>#<YYYY-MM-DD>`, clustered by timestamp_ns;
schema=wide: one table per measurement, partition ("series", "day"), clustered
by ("time" ms, "ns" the sub-millisecond rest).

What each schema computes where (dialects/series.py, dialects/wide.py, dialects/iot.py)
-------------------------------------------------------------------------
* Partitions are chosen on the client from the index: the measurement, the
  field (series), the tag filter (a tag value parsed from the series id), the
  UTC days the window meets. One statement per partition; no IN lists.
* series (TSBS's and the seed's way): every statement reads raw values
  (`timestamp_ns, value` of one partition in [start, end)); buckets, groups and
  aggregates are computed on the client with numpy (but a max or min over at most
  24 buckets: per partition and bucket by Cassandra, series.py). Records (rows, or a value
  filter on another field than the one aggregated) are joined from the
  per-field partitions on (series, time). The newest record of a series is
  dated by the newest value of any of its measurement's fields (a record has at
  least one field), its fields null where their newest value is older.
* wide: aggregates run on the server per partition, `GROUP BY "series",
  "day", floor("time", <w>ms)` with max / min / count, or sum and count (never
  avg: means are merged as sum of sums / sum of counts); the client merges
  partitions. Value filters run on the server with ALLOW FILTERING, which is
  cheap here because every statement names its partition (an int field is
  compared with an integer bound). Newest rows: `ORDER BY "time" DESC, "ns"
  DESC LIMIT 1` in the newest day of each series (ORDER BY with IN on the
  partition key is refused by Cassandra when paging, hence one per partition).
* Times are exact ns: timestamp_ns as is; wide: toUnixTimestamp("time") * 1e6
  + "ns" (a bucket starts on a whole ms: buckets must be whole ms).
* iot (TSBS's thirteen): each one is a basic shape over one measurement (rows
  with the named tags null left out) and client work on its rows (IOT, dialects/iot.py).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from tsbench.core.errors import Unsupported
from tsbench.core.model import Tables
from tsbench.queries.base import DAY, q
from tsbench.queries.dialect import Dialect
from tsbench.queries.shapes import OPS, columns

MS = 10**6                     # ns per ms
AGGS = ("max", "min", "mean", "sum", "count")
_EPOCH = dt.date(1970, 1, 1)


# ---- partitions ---------------------------------------------------------------------------------

def days_of(day: Any) -> int:
    """Days since 1970-01-01 of a CQL date as the driver returns it (util.Date,
    datetime.date, 'YYYY-MM-DD' or a day number)."""
    if hasattr(day, "days_from_epoch"):
        return int(day.days_from_epoch)
    if isinstance(day, dt.date):
        return (day - _EPOCH).days
    if isinstance(day, str):
        return (dt.date.fromisoformat(day) - _EPOCH).days
    return int(day)


def day_text(days: int) -> str:
    return (_EPOCH + dt.timedelta(days=days)).isoformat()


def parse_tags(text: str, names: Sequence[str] | None) -> tuple[tuple[str, str], ...]:
    """`tag=value,tag=value` into (tag, value) pairs. With the table's tag names, a
    comma or '=' inside a value is kept in it (a new pair starts only at a known,
    later tag name)."""
    if not text:
        return ()
    pairs: list[list[str]] = []
    rest = list(names) if names is not None else None
    for tok in text.split(","):
        k, eq, v = tok.partition("=")
        known = eq and (rest is None or k in rest)
        if known or not pairs:
            pairs.append([k, v])
            if rest is not None and k in rest:
                del rest[:rest.index(k) + 1]
        else:
            pairs[-1][1] += "," + tok
    return tuple((k, v) for k, v in pairs)


@dataclass(frozen=True)
class Part:
    """One partition: its key (the statement's params), its tag values in the
    measurement's tag order (None: absent), its UTC day and (series schema) field."""

    key: tuple
    tags: tuple
    days: int
    field: str | None = None

    def overlaps(self, start: int, end: int) -> bool:
        return self.days * DAY < end and (self.days + 1) * DAY > start


# ---- the plan -----------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class CqlPlan:
    """A rendered query: independent statements, and the client work that makes
    their rows the canonical answer (see the module docstring)."""

    statements: tuple[tuple[str, tuple], ...]
    reader: Callable[[list[list[tuple]]], list[tuple]]
    client: bool = True

    @property
    def templates(self) -> frozenset[str]:
        return frozenset(c for c, _ in self.statements)

    def finish(self, results: list[list[tuple]]) -> list[tuple]:
        if len(results) != len(self.statements):
            raise ValueError(f"cql: {len(results)} results for {len(self.statements)} statements")
        return self.reader(results)

    @property
    def text(self) -> str:
        if not self.statements:
            return "-- no partition matches: no statement"
        by: dict[str, list[tuple]] = {}
        for c, params in self.statements:
            by.setdefault(c, []).append(params)
        return "\n".join(f"{c};  -- x{len(ps)}, first params {ps[0]!r}" for c, ps in by.items())

    def __str__(self) -> str:
        return self.text


# ---- client-side aggregation (numpy) ------------------------------------------------------------

def _ints(col) -> np.ndarray:
    return np.array(col, dtype=np.int64)


def _vals(col, kind: str) -> np.ndarray:
    return np.array(col, dtype=np.int64 if kind == "int" else np.float64)


@dataclass
class Partials:
    """Per-field partial aggregates: bucket, group number, partial value s and count c
    (raw values: s = the value, c = 1)."""

    b: list
    g: list
    s: list
    c: list

    @classmethod
    def empty(cls) -> "Partials":
        return cls([], [], [], [])

    def add(self, b: np.ndarray, g, s: np.ndarray, c: np.ndarray) -> None:
        """Partials of group g (a number, or one per value)."""
        self.b.append(b)
        self.g.append(np.full(len(b), g, dtype=np.int64) if np.isscalar(g) else g)
        self.s.append(s)
        self.c.append(c)

    def reduce(self, agg: str, kind: str) -> dict[tuple[int, int], Any]:
        """(bucket, group) -> the aggregate, for the keys that have values (count: every key seen)."""
        if not self.b:
            return {}
        b, g = np.concatenate(self.b), np.concatenate(self.g)
        s, c = np.concatenate(self.s), np.concatenate(self.c)
        if not len(b):
            return {}
        keys, inv = np.unique(np.stack([b, g]), axis=1, return_inverse=True)
        order = np.argsort(inv.reshape(-1), kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(inv.reshape(-1)[order]) != 0])
        s, c = s[order], c[order]
        n = np.add.reduceat(c, starts)
        if agg == "count":
            out = n
        elif agg == "max":
            out = np.maximum.reduceat(s, starts)
        elif agg == "min":
            out = np.minimum.reduceat(s, starts)
        else:
            out = np.add.reduceat(s, starts)
            if agg == "mean":
                out = out.astype(np.float64) / np.maximum(n, 1)
        ok = np.ones(len(n), bool) if agg == "count" else n > 0
        return {(int(kb), int(kg)): v for kb, kg, v, k in zip(keys[0].tolist(), keys[1].tolist(), out.tolist(),
                                                              ok.tolist()) if k}


def aggregate_rows(p: dict, groups: list[tuple], per_field: list[Partials]) -> list[tuple]:
    """Canonical aggregate rows from each field's partials; groups[i] is group number i's values."""
    has_time, _, values = columns(p)
    agg = p["agg"]
    maps = [pf.reduce(agg, t) for pf, t in zip(per_field, p["types"])]
    keys = sorted(set().union(*maps)) if maps else []
    fill = 0 if agg == "count" else None
    out = [((b,) if has_time else ()) + groups[g] + tuple(m.get((b, g), fill) for m in maps) for b, g in keys]
    if agg == "count" and not has_time and not p.get("group_by") and not out:
        out = [tuple(0 for _ in values)]          # COUNT over no rows is one row of 0
    if p.get("limit"):
        out.sort(key=lambda r: r[0], reverse=True)
        out = out[:int(p["limit"])]
    return out


def passes(v: np.ndarray, op: str, x: float) -> np.ndarray:
    """The mask of v op x (compared as doubles, as the reference does)."""
    v = v.astype(np.float64)
    return {">": v > x, ">=": v >= x, "<": v < x, "<=": v <= x, "=": v == x}[op]


def bucket_of(t_ns: np.ndarray, width: int | None) -> np.ndarray:
    return t_ns // width * width if width else np.zeros(len(t_ns), np.int64)


def groups_of(parts: list[Part], tag_names: Sequence[str], group_by: Sequence[str]) -> tuple[list[int], list[tuple]]:
    """The group number of each partition and the groups' values."""
    idx = [list(tag_names).index(x) for x in group_by]
    number: dict[tuple, int] = {}
    out = []
    for part in parts:
        key = tuple(part.tags[i] for i in idx)
        out.append(number.setdefault(key, len(number)))
    return out, list(number)


def int_filter(op: str, x: float) -> tuple[str, int] | None:
    """A filter `v op x` on a bigint column as the same filter with an integer bound
    (a bigint cannot be compared with a double literal); None: no integer passes."""
    import math

    if op == "=":
        return ("=", int(x)) if float(x).is_integer() else None
    if op in (">", "<="):
        return op, math.floor(x)
    return op, math.ceil(x)


# ---- the dialects -------------------------------------------------------------------------------

class _Cql(Dialect):
    """What both schemas share: the partition index, partition choice by tag filter
    and window, checks of the parameters."""

    def __init__(self, keyspace: str = "tsbench", tables: Tables | None = None,
                 index: Sequence[Sequence[Any]] | None = None):
        self.keyspace = keyspace
        self.tables = tables
        self.tag_names = {t.name: tuple(t.tags) for t in tables} if tables is not None else {}
        self.parts: dict[str, list[Part]] | None = None
        if index is not None:
            if tables is None:
                raise ValueError("cql: a partition index needs the tables (their tag order)")
            self.parts = self.read_index(index)

    def read_index(self, index: Sequence[Sequence[Any]]) -> dict[str, list[Part]]:
        raise NotImplementedError

    def client_finished(self, p: dict) -> bool:
        return True           # every answer is merged from per-partition rows on the client

    def table(self, name: str) -> str:
        return f"{q(self.keyspace)}.{q(name)}"

    def aligned(self, measurement: str, pairs: tuple[tuple[str, str], ...]) -> tuple:
        """Tag values in the measurement's tag order (None: absent)."""
        d = dict(pairs)
        return tuple(d.get(t) for t in self.tag_names.get(measurement, ()))

    def chosen(self, p: dict, field: str | None = None, window: bool = True) -> list[Part]:
        """The partitions of p's measurement (and field) that its tag filter and window select."""
        if self.parts is None:
            raise RuntimeError("cql: no partition index (the target builds its dialect in attach())")
        m = p["measurement"]
        names = self.tag_names.get(m, ())
        want = None
        if p.get("tag_values") is not None:
            if p["tag"] not in names:
                return []
            k = names.index(p["tag"])
            want = {v for v in p["tag_values"] if v is not None}      # SQL IN never matches NULL
        nn = [names.index(t) for t in p.get("not_null") or ()]      # tags that must be present (iot)
        out = []
        for part in self.parts.get(m, ()):
            if field is not None and part.field != field:
                continue
            if want is not None and part.tags[k] not in want:
                continue
            if any(part.tags[i] is None for i in nn):
                continue
            if window and not part.overlaps(p["start"], p["end"]):
                continue
            out.append(part)
        return out

    def check(self, p: dict) -> None:
        for t in p.get("types") or ():
            if t not in ("float", "int"):
                raise Unsupported(f"{self.name}: {t} fields are not stored (double and bigint only)")
        if p["shape"] == "aggregate":
            if p["agg"] not in AGGS:
                raise Unsupported(f"{self.name}: aggregate {p['agg']!r}")
            if p.get("limit") and p.get("order") != "desc":
                raise Unsupported(f"{self.name}: LIMIT without ORDER BY time DESC has no defined answer")
        vf = p.get("value_filter")
        if vf and vf["op"] not in OPS:
            raise Unsupported(f"{self.name}: value filter operator {vf['op']!r}")

    def field_type(self, measurement: str, field: str) -> str:
        t = self.tables.by_name().get(measurement) if self.tables is not None else None
        by = {c.name: c.type for c in t.fields} if t is not None else {}
        return by.get(field, "float")
