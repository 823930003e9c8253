"""The CQL dialects (phase 3 render, phase 4 client work): the basic query shapes
as plans of CQL statements over the two agreed Cassandra layouts, and the client
side aggregation that turns their rows into canonical rows (queries/shapes.py).

Contract with the target (load.py, CassandraTarget)
---------------------------------------------------
* Two dialect classes, one per schema (their exclusions differ):
  `CqlSeries` (name "cql", schema=series) and `CqlWide` (name "cql-wide",
  schema=wide). The target declares `dialects = {"cql": CqlSeries, "cql-wide":
  CqlWide}` and `dialect_name()` returns "cql-wide" for schema=wide, else "cql".
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
      canonical rows. This is client work the user waits for: the target times
      it and records it as Answer.client_s (inside Answer.seconds), and sets
      Answer.rows to its result. `client` is always True.
    - `text`: the statements as one printable string (for --print-responses).
    - A plan may hold no statement (no partition matches): finish([]) is the
      (empty) answer; the target still calls it.
  Types it does not run raise Unsupported with the reason (Dialect.render).

Layouts: schema=series: series_double / series_bigint keyed by series_id
`<m>[,<tag>=<value>]...#<field>#<YYYY-MM-DD>`, clustered by timestamp_ns;
schema=wide: one table per measurement, partition ("series", "day"), clustered
by ("time" ms, "ns" the sub-millisecond rest).

What each schema computes where
-------------------------------
* Partitions are chosen on the client from the index: the measurement, the
  field (series), the tag filter (a tag value parsed from the series id), the
  UTC days the window meets. One statement per partition; no IN lists.
* series (TSBS's and the seed's way): every statement reads raw values
  (`timestamp_ns, value` of one partition in [start, end)); buckets, groups and
  aggregates are computed on the client with numpy. Records (rows, or a value
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
  with the named tags null left out) and client work on its rows (IOT below).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ...errors import Unsupported
from ...model import Tables
from ...queries.base import DAY, q
from ...queries.dialect import Dialect
from ...queries.shapes import OPS, columns

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


# ---- schema=series ------------------------------------------------------------------------------

class CqlSeries(_Cql):
    """schema=series: one partition per (series, field, day) in series_double /
    series_bigint; every aggregate is computed on the client from the raw values,
    as TSBS's and the seed's Cassandra clients did."""

    name = "cql"

    @classmethod
    def index_queries(cls, keyspace: str, tables: Tables) -> list[str]:
        kinds = {c.type for t in tables for c in t.fields}
        return [f"SELECT DISTINCT series_id FROM {q(keyspace)}.{cls.value_table(k)}"
                for k in ("float", "int") if k in kinds]

    @staticmethod
    def value_table(kind: str) -> str:
        return "series_bigint" if kind == "int" else "series_double"

    def read_index(self, index):
        out: dict[str, list[Part]] = {m: [] for m in self.tag_names}
        for rows in index:
            for r in rows:
                sid = r[0]
                head, field, day = sid.rsplit("#", 2)
                m = self._measurement(head)
                if m is None:
                    continue
                tags = self.aligned(m, parse_tags(head[len(m) + 1:], self.tag_names[m]))
                out[m].append(Part((sid,), tags, days_of(day), field))
        return out

    def _measurement(self, head: str) -> str | None:
        """The measurement a series id's head (`<m>[,tags]`) belongs to: the longest table name that fits."""
        fits = [m for m in self.tag_names if head == m or head.startswith(m + ",")]
        return max(fits, key=len) if fits else None

    def _slice(self, kind: str) -> str:
        return (f"SELECT timestamp_ns, value FROM {q(self.keyspace)}.{self.value_table(kind)} "
                f"WHERE series_id = ? AND timestamp_ns >= ? AND timestamp_ns < ?")

    def aggregate(self, p: dict) -> CqlPlan:
        self.check(p)
        vf = p.get("value_filter")
        if vf and list(p["fields"]) != [vf["field"]]:
            names = self.tag_names[p["measurement"]]
            need, kinds, stmts, field_of, tags_of = self._joined(p)
            gidx = [names.index(t) for t in p.get("group_by") or []]
            return CqlPlan(tuple(stmts), SeriesJoinAggregate(p, need, kinds, field_of, tags_of, gidx))
        stmts, field_of, parts = [], [], []
        for j, (f, kind) in enumerate(zip(p["fields"], p["types"])):
            for part in self.chosen(p, f):
                stmts.append((self._slice(kind), (part.key[0], int(p["start"]), int(p["end"]))))
                field_of.append(j)
                parts.append(part)
        group_of, groups = groups_of(parts, self.tag_names[p["measurement"]], p.get("group_by") or [])
        return CqlPlan(tuple(stmts), SeriesAggregate(p, field_of, group_of, groups))

    def _joined(self, p: dict) -> tuple[list[str], list[str], list, list[int], list[tuple]]:
        """The statements reading every field a record join needs (the answer's, then the
        filter's): (fields, their types, statements, field of each, tags of each)."""
        m = p["measurement"]
        vf = p.get("value_filter")
        need = list(p["fields"]) + ([vf["field"]] if vf and vf["field"] not in p["fields"] else [])
        kinds = [self.field_type(m, f) for f in need]
        stmts, field_of, tags_of = [], [], []
        for j, f in enumerate(need):
            for part in self.chosen(p, f):
                stmts.append((self._slice(kinds[j]), (part.key[0], int(p["start"]), int(p["end"]))))
                field_of.append(j)
                tags_of.append(part.tags)
        return need, kinds, stmts, field_of, tags_of

    def rows(self, p: dict) -> CqlPlan:
        self.check(p)
        names = self.tag_names[p["measurement"]]
        need, kinds, stmts, field_of, tags_of = self._joined(p)
        out_idx = [names.index(t) for t in p.get("tags_out") or []]
        return CqlPlan(tuple(stmts), SeriesRows(p, need, kinds, field_of, tags_of, out_idx))

    def last(self, p: dict) -> CqlPlan:
        """Per series and field the newest value of its newest day; a record's time is the
        newest of all its measurement's fields (a record has at least one field: line
        protocol has no record without one), so every field is read, the answer's first."""
        self.check(p)
        m = p["measurement"]
        t = self.tables.by_name().get(m) if self.tables is not None else None
        need = list(p["fields"]) + [f for f in (t.field_names if t else ()) if f not in p["fields"]]
        stmts, field_of, parts = [], [], []
        for j, f in enumerate(need):
            newest: dict[tuple, Part] = {}
            for part in self.chosen(p, f, window=False):
                if part.tags not in newest or part.days > newest[part.tags].days:
                    newest[part.tags] = part
            sel = (f"SELECT timestamp_ns, value FROM {q(self.keyspace)}.{self.value_table(self.field_type(m, f))} "
                   f"WHERE series_id = ? ORDER BY timestamp_ns DESC LIMIT 1")
            for part in newest.values():
                stmts.append((sel, part.key))
                field_of.append(j)
                parts.append(part)
        names = self.tag_names[m]
        gidx = [names.index(t) for t in p["group_by"]]
        return CqlPlan(tuple(stmts), SeriesLast(p, field_of, [x.tags for x in parts], gidx))


def _columns(rows: list[tuple], kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(timestamp_ns, value) rows as two arrays."""
    t, v = zip(*rows)
    return _ints(t), _vals(v, kind)


@dataclass(frozen=True, eq=False)
class SeriesAggregate:
    p: dict
    field_of: list[int]
    group_of: list[int]
    groups: list[tuple]

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        p = self.p
        vf = p.get("value_filter")
        per_field = [Partials.empty() for _ in p["fields"]]
        for rows, j, g in zip(results, self.field_of, self.group_of):
            if not rows:
                continue
            t, v = _columns(rows, p["types"][j])
            if vf:
                keep = passes(v, vf["op"], float(vf["value"]))
                t, v = t[keep], v[keep]
            per_field[j].add(bucket_of(t, p.get("bucket")), g, v, np.ones(len(t), np.int64))
        return aggregate_rows(p, self.groups, per_field)


@dataclass
class Joined:
    """Records of per-field partitions joined on (series, time): key arrays (series
    number, time ns), per field its column and where it has a value, and each series
    number's tag values."""

    series: np.ndarray
    time: np.ndarray
    cols: list[np.ndarray]
    has: list[np.ndarray]
    tagsets: list[tuple]


def join(results: list[list[tuple]], kinds: list[str], field_of: list[int], tags_of: list[tuple]) -> Joined | None:
    series: dict[tuple, int] = {}
    chunks = []                 # (field, series number, times, values) of each non-empty result
    for rows, j, tags in zip(results, field_of, tags_of):
        if rows:
            chunks.append((j, series.setdefault(tags, len(series)), *_columns(rows, kinds[j])))
    if not chunks:
        return None
    k = np.concatenate([np.full(len(c[2]), c[1], np.int64) for c in chunks])
    keys, inv = np.unique(np.stack([k, np.concatenate([c[2] for c in chunks])]), axis=1, return_inverse=True)
    inv = inv.reshape(-1)
    n = keys.shape[1]
    cols = [np.zeros(n, np.int64 if kind == "int" else np.float64) for kind in kinds]
    has = [np.zeros(n, bool) for _ in kinds]
    at = 0
    for j, _, t, v in chunks:
        pos = inv[at:at + len(t)]
        cols[j][pos] = v
        has[j][pos] = True
        at += len(t)
    return Joined(keys[0], keys[1], cols, has, list(series))


def _filtered(jd: Joined, need: list[str], vf: dict | None) -> np.ndarray:
    """The record numbers that pass the value filter."""
    if not vf:
        return np.arange(len(jd.time))
    j = need.index(vf["field"])
    return np.flatnonzero(jd.has[j] & passes(jd.cols[j], vf["op"], float(vf["value"])))


@dataclass(frozen=True, eq=False)
class SeriesRows:
    """Records joined from per-field partitions on (tag values, time)."""

    p: dict
    need: list[str]                 # the fields read: the answer's, then the filter's
    kinds: list[str]                # their types
    field_of: list[int]
    tags_of: list[tuple]
    out_idx: list[int]              # tags_out as positions in the tag tuple

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        p = self.p
        jd = join(results, self.kinds, self.field_of, self.tags_of)
        if jd is None:
            return []
        order = _filtered(jd, self.need, p.get("value_filter"))
        order = order[np.argsort(jd.time[order], kind="stable")]
        if p.get("limit"):
            order = order[:int(p["limit"])]
        lead = [jd.time[order].tolist()]
        tag_rows = [jd.tagsets[k] for k in jd.series[order].tolist()]
        lead += [[tr[i] for tr in tag_rows] for i in self.out_idx]
        vals = [[x if ok else None for x, ok in zip(jd.cols[j][order].tolist(), jd.has[j][order].tolist())]
                for j in range(len(p["fields"]))]
        return list(zip(*lead, *vals))


@dataclass(frozen=True, eq=False)
class SeriesJoinAggregate:
    """An aggregate whose value filter is on another field: the records joined first."""

    p: dict
    need: list[str]
    kinds: list[str]
    field_of: list[int]
    tags_of: list[tuple]
    gidx: list[int]                 # group_by as positions in the tag tuple

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        p = self.p
        jd = join(results, self.kinds, self.field_of, self.tags_of)
        groups: dict[tuple, int] = {}
        per_field = [Partials.empty() for _ in p["fields"]]
        if jd is not None:
            gnum = np.array([groups.setdefault(tuple(t[i] for i in self.gidx), len(groups)) for t in jd.tagsets],
                            np.int64)
            rec = _filtered(jd, self.need, p.get("value_filter"))
            for j in range(len(p["fields"])):
                r = rec[jd.has[j][rec]]
                per_field[j].add(bucket_of(jd.time[r], p.get("bucket")), gnum[jd.series[r]], jd.cols[j][r],
                                 np.ones(len(r), np.int64))
        return aggregate_rows(p, list(groups), per_field)


@dataclass(frozen=True, eq=False)
class SeriesLast:
    """The newest record of each group: per series the newest of its fields' newest
    times; a field whose newest value is older was null in that record."""

    p: dict
    field_of: list[int]
    tags_of: list[tuple]
    gidx: list[int]

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        nf = len(self.p["fields"])          # the answer's fields come first; the rest only date the record
        newest: dict[tuple, dict[int, tuple]] = {}
        for rows, j, tags in zip(results, self.field_of, self.tags_of):
            if rows:
                newest.setdefault(tags, {})[j] = (int(rows[0][0]), rows[0][1])
        best: dict[tuple, tuple] = {}
        for tags, fields in newest.items():
            t = max(x[0] for x in fields.values())
            vals = tuple(fields[j][1] if j in fields and fields[j][0] == t else None for j in range(nf))
            g = tuple(tags[i] for i in self.gidx)
            if g not in best or t > best[g][0]:
                best[g] = (t, vals)
        return [(t, *g, *vals) for g, (t, vals) in best.items()]


# ---- schema=wide --------------------------------------------------------------------------------

def int_filter(op: str, x: float) -> tuple[str, int] | None:
    """A filter `v op x` on a bigint column as the same filter with an integer bound
    (a bigint cannot be compared with a double literal); None: no integer passes."""
    import math

    if op == "=":
        return ("=", int(x)) if float(x).is_integer() else None
    if op in (">", "<="):
        return op, math.floor(x)
    return op, math.ceil(x)


class CqlWide(_Cql):
    """schema=wide: one table per measurement, partitions (series, day). Aggregates
    run on the server per partition (GROUP BY "series", "day", floor("time", w):
    max/min, or sum and count for mean and sum) and are merged across partitions on
    the client; value filters run on the server (ALLOW FILTERING, always inside
    one partition: the statement names it); the newest row of a series is the
    first row of its newest day's partition in descending clustering order."""

    name = "cql-wide"

    @classmethod
    def index_queries(cls, keyspace: str, tables: Tables) -> list[str]:
        return [f'SELECT DISTINCT "series", "day" FROM {q(keyspace)}.{q(t.name)}' for t in tables]

    def read_index(self, index):
        out: dict[str, list[Part]] = {}
        for t, rows in zip(self.tables, index):
            parts = out.setdefault(t.name, [])
            for series, day in rows:
                d = days_of(day)
                parts.append(Part((series, day_text(d)), self.aligned(t.name, parse_tags(series, t.tags)), d))
        return out

    def _where(self, p: dict, window: bool = True) -> tuple[str, tuple, bool]:
        """The WHERE clause after the partition key, its params, and whether no row can pass."""
        text, params = "", ()
        if window:
            s, e = int(p["start"]), int(p["end"])
            text = ' AND ("time", "ns") >= (?, ?) AND ("time", "ns") < (?, ?)'
            params = (s // MS, s % MS, e // MS, e % MS)
        vf = p.get("value_filter")
        if not vf:
            return text, params, False
        op, x = vf["op"], float(vf["value"])
        if self.field_type(p["measurement"], vf["field"]) == "int":
            f = int_filter(op, x)
            if f is None:
                return text, params, True
            op, x = f
        return text + f" AND {q(vf['field'])} {op} ?", params + (x,), False

    def _statements(self, p: dict, select: str, tail: str = "", window: bool = True,
                    parts: list[Part] | None = None) -> tuple[tuple[tuple[str, tuple], ...], list[Part]]:
        parts = self.chosen(p, window=window) if parts is None else parts
        where, params, none = self._where(p, window)
        if none:
            return (), []
        cql = (f'SELECT {select} FROM {self.table(p["measurement"])} WHERE "series" = ? AND "day" = ?'
               f'{where}{tail}' + (" ALLOW FILTERING" if p.get("value_filter") else ""))
        return tuple((cql, part.key + params) for part in parts), parts

    def aggregate(self, p: dict) -> CqlPlan:
        self.check(p)
        agg, w = p["agg"], p.get("bucket")
        sel = []
        for f in p["fields"]:
            col = q(f)
            sel += {"max": [f"max({col})"], "min": [f"min({col})"], "count": [f"count({col})"]}.get(
                agg, [f"sum({col})", f"count({col})"])
        sel.append("count(*)")                 # rows in the group: 0 when a bucketless slice is empty
        tail = ""
        if w is not None:
            if w % MS:
                raise Unsupported("cql-wide: buckets must be whole milliseconds (CQL timestamps are ms)")
            sel.insert(0, f'toUnixTimestamp(floor("time", {w // MS}ms))')
            tail = f' GROUP BY "series", "day", floor("time", {w // MS}ms)'
        stmts, parts = self._statements(p, ", ".join(sel), tail)
        group_of, groups = groups_of(parts, self.tag_names[p["measurement"]], p.get("group_by") or [])
        return CqlPlan(stmts, WideAggregate(p, group_of, groups))

    def rows(self, p: dict) -> CqlPlan:
        self.check(p)
        names = self.tag_names[p["measurement"]]
        sel = 'toUnixTimestamp("time"), "ns", ' + ", ".join(q(f) for f in p["fields"])
        stmts, parts = self._statements(p, sel)
        out_idx = [names.index(t) for t in p.get("tags_out") or []]
        return CqlPlan(stmts, WideRows(p, [x.tags for x in parts], out_idx))

    def last(self, p: dict) -> CqlPlan:
        self.check(p)
        newest: dict[str, Part] = {}
        for part in self.chosen(p, window=False):
            if part.key[0] not in newest or part.days > newest[part.key[0]].days:
                newest[part.key[0]] = part
        parts = list(newest.values())
        sel = 'toUnixTimestamp("time"), "ns", ' + ", ".join(q(f) for f in p["fields"])
        stmts, parts = self._statements(p, sel, ' ORDER BY "time" DESC, "ns" DESC LIMIT 1', False, parts)
        names = self.tag_names[p["measurement"]]
        return CqlPlan(stmts, SeriesLastWide(p, [x.tags for x in parts], [names.index(t) for t in p["group_by"]]))


@dataclass(frozen=True, eq=False)
class WideAggregate:
    """Per-partition groups (bucket start ms, then per field max|min|count, or sum and
    count) merged across partitions."""

    p: dict
    group_of: list[int]
    groups: list[tuple]

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        p = self.p
        agg, has_time = p["agg"], p.get("bucket") is not None
        per_field = [Partials.empty() for _ in p["fields"]]
        width = 2 if agg in ("sum", "mean") else 1
        for rows, g in zip(results, self.group_of):
            rows = [r for r in rows if r[-1]]
            if not rows:
                continue
            cols = list(zip(*rows))
            b = _ints(cols[0]) * MS if has_time else np.zeros(len(rows), np.int64)
            for j, kind in enumerate(p["types"]):
                c0 = int(has_time) + width * j
                self._add(per_field[j], agg, kind, b, g, cols[c0:c0 + width])
        return aggregate_rows(p, self.groups, per_field)

    @staticmethod
    def _add(pf: Partials, agg: str, kind: str, b: np.ndarray, g: int, cols: list) -> None:
        if agg == "count":
            n = _ints(cols[0])
            pf.add(b, g, n, n)
            return
        if agg in ("max", "min"):
            ok = np.array([v is not None for v in cols[0]], bool)
            s = _vals([v for v in cols[0] if v is not None], kind)
            pf.add(b[ok], g, s, np.ones(len(s), np.int64))
            return
        n = _ints(cols[1])
        ok = n > 0
        pf.add(b[ok], g, _vals(cols[0], kind)[ok], n[ok])


def _wide_times(cols: list) -> np.ndarray:
    """Epoch ns from the (toUnixTimestamp("time"), "ns") columns."""
    return _ints(cols[0]) * MS + _ints(cols[1])


@dataclass(frozen=True, eq=False)
class WideRows:
    """Rows of each partition (the filter already applied by the server), their tags
    from the partition's series, in time order."""

    p: dict
    tags_of: list[tuple]
    out_idx: list[int]

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        out: list[tuple] = []
        for rows, tags in zip(results, self.tags_of):
            if rows:
                cols = list(zip(*rows))
                lead = tuple(tags[i] for i in self.out_idx)
                out += [(t, *lead, *vals) for t, *vals in zip(_wide_times(cols).tolist(), *cols[2:])]
        if self.p.get("limit") or len(results) > 1:
            out.sort(key=lambda r: r[0])
        if self.p.get("limit"):
            out = out[:int(self.p["limit"])]
        return out


@dataclass(frozen=True, eq=False)
class SeriesLastWide:
    """The newest row of each group: the newest of its series' newest rows."""

    p: dict
    tags_of: list[tuple]
    gidx: list[int]

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        best: dict[tuple, tuple] = {}
        for rows, tags in zip(results, self.tags_of):
            if rows:
                ms, ns, *vals = rows[0]
                t = int(ms) * MS + int(ns)
                g = tuple(tags[i] for i in self.gidx)
                if g not in best or t > best[g][0]:
                    best[g] = (t, tuple(vals))
        return [(t, *g, *vals) for g, (t, vals) in best.items()]


# ---- iot: TSBS's types as a basic shape and client work on its rows ----------------------------
# Each iot type is an aggregate, last or rows query over one measurement (rows whose
# named tags are null left out: `not_null`), whose canonical rows the client turns
# into the type's answer (queries/iot.py states each meaning in SQL).

TEN_MIN = 10 * 60 * 10**9


@dataclass(frozen=True, eq=False)
class Then:
    """A reader followed by client work on its canonical rows."""

    reader: Callable[[list[list[tuple]]], list[tuple]]
    post: Callable[[list[tuple]], list[tuple]]

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        return self.post(self.reader(results))


def _inner(d: _Cql, shape: str, m: str, fields: Sequence[str], post, **kw) -> CqlPlan:
    p = {"shape": shape, "measurement": m, "fields": list(fields), "types": [d.field_type(m, f) for f in fields],
         "tag": None, "tag_values": None, **kw}
    if shape == "aggregate":
        p.setdefault("bucket", None)
    plan = getattr(d, shape)(p)
    return CqlPlan(plan.statements, Then(plan.reader, post))


def _fleet(p: dict) -> dict:
    return {"tag": "fleet", "tag_values": [p["fleet"]]} if "fleet" in p else {"tag": "name", "tag_values": p["names"]}


def _newest(fields: tuple[str, ...], m: str = "readings", keep=None):
    def render(d: _Cql, p: dict) -> CqlPlan:
        post = (lambda rows: rows) if keep is None else (lambda rows: [r for r in rows if keep(p, r[3:])])
        return _inner(d, "last", m, fields, post, group_by=["name", "driver"], not_null=["name", "driver"],
                      **_fleet(p))
    return render


def _low_fuel(p: dict, v: tuple) -> bool:
    return v[0] is not None and v[0] < float(p["fuel_below"])


def _high_load(p: dict, v: tuple) -> bool:
    return v[0] is not None and v[1] is not None and v[0] > float(p["load_above"]) * v[1]


def _velocity(d: _Cql, p: dict, bucket, group: list[str], post, **kw) -> CqlPlan:
    """Mean velocity of the readings in [start, end) per bucket and group (tags not null)."""
    return _inner(d, "aggregate", "readings", ["velocity"], post, agg="mean", start=p["start"], end=p["end"],
                  bucket=bucket, group_by=group, not_null=list(kw.pop("not_null", group)), **kw)


def _stationary(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        return [r for r in rows if r[2] is not None and r[2] < float(p["velocity_below"])]
    return _velocity(d, p, None, ["name", "driver"], post, **_fleet(p))


def _long_sessions(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        n: dict[tuple, int] = {}
        for _, nm, dr, v in rows:
            if v is not None and v > float(p["velocity_above"]):
                n[nm, dr] = n.get((nm, dr), 0) + 1
        return [(nm, dr, k) for (nm, dr), k in n.items() if k > int(p["min_periods"])]
    return _velocity(d, p, TEN_MIN, ["name", "driver"], post, **_fleet(p))


def _driving_duration(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        days: dict[tuple, dict[int, int]] = {}
        for b, fl, nm, dr, v in rows:
            if v is not None and v > float(p["velocity_above"]):
                per = days.setdefault((fl, nm, dr), {})
                per[b // DAY] = per.get(b // DAY, 0) + 1
        return [(*k, sum(n / 6 for n in per.values()) / len(per)) for k, per in days.items()]
    return _velocity(d, p, TEN_MIN, ["fleet", "name", "driver"], post)


def _driving_session(d: _Cql, p: dict) -> CqlPlan:
    """Sessions: a bucket that drives after one that did not, to the next change."""
    def post(rows):
        by: dict[str, list[tuple[int, bool]]] = {}
        for b, nm, v in sorted(rows, key=lambda r: (r[1], r[0])):
            if v is not None:
                by.setdefault(nm, []).append((b, v > float(p["velocity_above"])))
        lengths: dict[tuple, list[float]] = {}
        for nm, buckets in by.items():
            changes = [(b, drv) for (b, drv), (_, prev) in zip(buckets[1:], buckets) if drv != prev]
            for (b, drv), (stop, _) in zip(changes, changes[1:]):
                if drv:
                    lengths.setdefault((b // DAY * DAY, nm), []).append((stop - b) / 60e9)
        return [(dy, nm, sum(x) / len(x)) for (dy, nm), x in lengths.items()]
    return _velocity(d, p, TEN_MIN, ["name"], post)


def _fuel(d: _Cql, p: dict) -> CqlPlan:
    return _inner(d, "aggregate", "readings", ["fuel_consumption", "nominal_fuel_consumption"], lambda rows: rows,
                  agg="mean", start=p["start"], end=p["end"], group_by=["fleet"], not_null=["name", "fleet"],
                  value_filter={"field": "velocity", "op": ">", "value": float(p["velocity_above"])})


def _avg_load(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        by: dict[tuple, tuple[list, list]] = {}
        for fl, md, _, load, cap in rows:
            caps, ratios = by.setdefault((fl, md), ([], []))
            if cap is not None:
                caps.append(cap)
                if load is not None and cap != 0:
                    ratios.append(load / cap)
        mean = lambda x: sum(x) / len(x) if x else None      # noqa: E731
        return [(fl, md, mean(c), mean(r)) for (fl, md), (c, r) in by.items()]
    return _inner(d, "aggregate", "diagnostics", ["current_load", "load_capacity"], post, agg="mean",
                  start=p["start"], end=p["end"], group_by=["fleet", "model", "name"],
                  not_null=["fleet", "model", "name"])


def _daily_activity(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        n: dict[tuple, int] = {}
        for b, fl, md, _, v in rows:
            if v is not None and v < float(p["status_below"]):
                k = (b // DAY * DAY, fl, md)
                n[k] = n.get(k, 0) + 1
        return [(*k, c / 144) for k, c in n.items()]
    return _inner(d, "aggregate", "diagnostics", ["status"], post, agg="mean", start=p["start"], end=p["end"],
                  bucket=TEN_MIN, group_by=["fleet", "model", "name"], not_null=["fleet", "model", "name"])


def _breakdowns(d: _Cql, p: dict) -> CqlPlan:
    """Per truck and bucket: broken when at least half its statuses are non-zero; a
    breakdown is a broken bucket right after one that was not."""
    def post(rows):
        per: dict[tuple, list[int]] = {}            # (model, name, bucket) -> [non-zero, count]
        for t, md, nm, st in rows:
            if st is not None:
                c = per.setdefault((md, nm, t // TEN_MIN * TEN_MIN), [0, 0])
                c[0] += st != 0
                c[1] += 1
        out: dict[str, int] = {}
        prev: dict[tuple, bool] = {}
        for (md, nm, _), (nz, c) in sorted(per.items()):
            broken = 2 * nz >= c
            if broken and prev.get((md, nm)) is False:
                out[md] = out.get(md, 0) + 1
            prev[md, nm] = broken
        return list(out.items())
    return _inner(d, "rows", "diagnostics", ["status"], post, start=p["start"], end=p["end"], value_filter=None,
                  tags_out=["model", "name"], not_null=["model", "name"])


IOT = {"last-loc": _newest(("longitude", "latitude")), "single-last-loc": _newest(("longitude", "latitude")),
       "low-fuel": _newest(("fuel_state",), "diagnostics", _low_fuel),
       "high-load": _newest(("current_load", "load_capacity"), "diagnostics", _high_load),
       "stationary-trucks": _stationary, "long-driving-sessions": _long_sessions,
       "long-daily-sessions": _long_sessions, "avg-vs-projected-fuel-consumption": _fuel,
       "avg-daily-driving-duration": _driving_duration, "avg-daily-driving-session": _driving_session,
       "avg-load": _avg_load, "daily-activity": _daily_activity, "breakdown-frequency": _breakdowns}
CqlSeries.custom = IOT
CqlWide.custom = IOT
