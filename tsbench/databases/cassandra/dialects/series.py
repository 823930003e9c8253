"""phase 3 render / phase 4 client work: the schema=series dialect (CqlSeries,
name "cql"). One partition per (series, field, day) in series_double /
series_bigint; statements read raw values, and buckets, groups, aggregates
and record joins are computed on the client with numpy (the readers below),
except a max or min over at most 24 buckets, which Cassandra computes per
partition and bucket (TSBS's server aggregation plan; benchmarks/dialects.py
measured it 1.4-1.7x faster there, and 6-30x slower over 1-minute buckets).
The contract with the target and the shared base: dialects/base.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tsbench.core.model import Tables
from tsbench.databases.cassandra.dialects.base import (
    CqlPlan,
    Part,
    Partials,
    _Cql,
    _ints,
    _vals,
    aggregate_rows,
    bucket_of,
    days_of,
    groups_of,
    parse_tags,
    passes,
)
from tsbench.databases.cassandra.dialects.iot import IOT
from tsbench.queries.base import DAY, q

# ---- schema=series ------------------------------------------------------------------------------

class CqlSeries(_Cql):
    """schema=series: one partition per (series, field, day) in series_double /
    series_bigint; aggregates are computed on the client from the raw values, as
    TSBS's client plan and the seed's Cassandra client did, except a max or min over at
    most SERVER_BUCKETS buckets, computed by Cassandra per partition and bucket (TSBS's
    server plan; the module docstring says why)."""

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
        """A max or min over few buckets is computed by Cassandra, a statement per partition
        and bucket (_server_buckets: the raw values of wide buckets cost more to ship than
        the statements); every other aggregate on the client from the raw values."""
        self.check(p)
        if _few_buckets(p):
            return _server_buckets(self, p)
        return self.client_aggregate(p)

    def client_aggregate(self, p: dict) -> CqlPlan:
        """The raw values of every chosen partition in the window, aggregated on the client."""
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


CqlSeries.custom = IOT


# ---- another form of the same questions (benchmarks/dialects.py measures it) --------------------

@dataclass(frozen=True, eq=False)
class _NonEmpty:
    """A reader of (first timestamp, aggregate) rows, one per statement: an empty bucket's
    row (nulls: Cassandra answers an aggregate of no rows) dropped first."""

    reader: SeriesAggregate

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        return self.reader([[r for r in rows if r[0] is not None] for rows in results])


SERVER_BUCKETS = 24         # at most this many buckets in a window: Cassandra computes a max or min


def _server_side(p: dict) -> bool:
    return p["agg"] in ("max", "min") and not p.get("value_filter") and p.get("bucket") is not None


def _few_buckets(p: dict) -> bool:
    """A max or min whose window meets at most SERVER_BUCKETS buckets (benchmarks/dialects.py:
    1h buckets over hours went 1.4-1.7x faster so, 1m buckets 6-30x slower)."""
    if not _server_side(p):
        return False
    w = p["bucket"]
    return (int(p["end"]) - 1) // w - int(p["start"]) // w + 1 <= SERVER_BUCKETS


def _server_buckets(d: CqlSeries, p: dict) -> CqlPlan:
    """TSBS's server aggregation plan: one statement per partition and bucket, Cassandra
    computing the bucket's max (or min) and its first timestamp (which names the bucket);
    the client merges the partitions' buckets into groups as the raw plan does."""
    if not _server_side(p):
        return d.client_aggregate(p)
    w, lo, hi = p["bucket"], int(p["start"]), int(p["end"])
    stmts, field_of, parts = [], [], []
    for j, (f, kind) in enumerate(zip(p["fields"], p["types"])):
        cql = (f"SELECT min(timestamp_ns), {p['agg']}(value) FROM {q(d.keyspace)}.{d.value_table(kind)} "
               f"WHERE series_id = ? AND timestamp_ns >= ? AND timestamp_ns < ?")
        for part in d.chosen(p, f):
            a, z = max(lo, part.days * DAY), min(hi, (part.days + 1) * DAY)     # the window within its day
            for b in range(a // w * w, z, w):
                stmts.append((cql, (part.key[0], max(b, a), min(b + w, z))))
                field_of.append(j)
                parts.append(part)
    group_of, groups = groups_of(parts, d.tag_names[p["measurement"]], p.get("group_by") or [])
    return CqlPlan(tuple(stmts), _NonEmpty(SeriesAggregate(p, field_of, group_of, groups)))


CqlSeries.forms = {t: {"tsbs-server-buckets": _server_buckets, "client-raw": CqlSeries.client_aggregate}
                   for t in ("single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-1-8-1",
                             "single-groupby-5-1-1", "single-groupby-5-1-12", "single-groupby-5-8-1",
                             "cpu-max-all-1", "cpu-max-all-8")}
