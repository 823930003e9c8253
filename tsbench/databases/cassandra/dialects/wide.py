"""phase 3 render / phase 4 client work: the schema=wide dialect (CqlWide, name
"cql-wide"). One table per measurement, partitions ("series", "day"); aggregates
run on the server per partition and are merged on the client, value filters run
on the server (ALLOW FILTERING inside the named partition), the newest row is the
first of the newest day in descending order. The contract with the target and the
shared base: dialects/base.py."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tsbench.core.errors import Unsupported
from tsbench.core.model import Tables
from tsbench.databases.cassandra.dialects.base import (
    MS,
    CqlPlan,
    Part,
    Partials,
    _Cql,
    _ints,
    _vals,
    aggregate_rows,
    day_text,
    days_of,
    groups_of,
    int_filter,
    parse_tags,
)
from tsbench.databases.cassandra.dialects.iot import IOT
from tsbench.queries.base import q

# ---- schema=wide --------------------------------------------------------------------------------

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


CqlWide.custom = IOT
