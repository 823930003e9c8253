"""The IoTDB tree-model dialect (phase 3 render, phase 5 read back): the aggregate,
rows and last shapes as IoTDB SQL over the paths of paths.py; target.py runs them
(phase 4) and keeps the driver's answer (a DataFrame) for canonical().

aggregate  SELECT max_value|min_value|avg|sum|count(`f`) FROM <devices> WHERE time
           window [AND `f` op v] GROUP BY ([a, b), <w>ns), LEVEL = <tag levels>: the
           server merges the devices of a group (LEVEL = 0: all of them into one).
           A tag filter is one FROM path per value, its node at the tag's level.
           IoTDB answers every bucket of the range (empty ones null, count 0) with a
           column per (value, group) named by the group's path: canonical() reads the
           columns' paths and drops empty cells, as SQL has no row for them. The newest
           buckets (ORDER BY time DESC LIMIT n) keep only buckets holding values
           (HAVING count > 0), so the limit counts real buckets.
rows       SELECT `f`... FROM <devices> WHERE ... [ORDER BY TIME LIMIT n] ALIGN BY
           DEVICE: a row per device and time, its tags read from the device path.
           IoTDB has no row where every field asked for is null.
last       SELECT LAST of every field gives each timeseries' newest point; the client takes,
           per device, the newest time of its fields and the fields at that time (a
           field whose newest point is older was null in that row), then per group the
           newest device: client work, timed (client_s).

Other forms (benchmarks/dialects.py, `nox -s bench_dialects`): the double-groupby types
per device (ALIGN BY DEVICE, a device's tags read from its path) where tsbench merges
the devices of a group on the server (GROUP BY LEVEL). Recorded 1.07-1.62x faster
(20 hosts x 12 h, busy machine), and kept out (form_reasons): it answers per device,
which is per group only when the group's tags name one device (devops' hostname); a
group of several devices (iot's trucks by fleet, a tag below the group's) gets a row
per device, where GROUP BY LEVEL merges them exactly.

iot (iot.py): eleven of the thirteen types, each one request whose answer the client
finishes (kept rows, counts per truck or day: client_s); the other two excluded there."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

from tsbench.core.errors import Unsupported, UserError
from tsbench.databases.iotdb.dialects.iot import CUSTOM, EXCLUDED
from tsbench.databases.iotdb.paths import FIRST_TAG_LEVEL, measurement_path, node, split, tag_node, tag_value
from tsbench.queries.base import num
from tsbench.queries.catalog import TSBS_DEVOPS
from tsbench.queries.dialect import Dialect
from tsbench.queries.shapes import OPS, columns

AGG = {"max": "max_value", "min": "min_value", "mean": "avg", "sum": "sum", "count": "count"}
UNITS = {1: "ns", 1000: "us", 10**6: "ms"}


@dataclass(frozen=True, eq=False)
class IotdbQuery:
    """A rendered query: its SQL (None: it matches nothing) and how to read its answer."""

    shape: str                        # aggregate | rows | last (aggregate-device: a form's)
    sql: str | None
    has_time: bool
    group: tuple[str, ...]            # group columns (rows: tags_out)
    levels: tuple[int, ...]           # the path level of each group column
    fields: tuple[str, ...]
    kinds: tuple[str, ...]            # value columns' kinds
    agg: str = ""
    one_row: bool = False             # aggregate without buckets or groups: always one row
    unit_ns: int = 1                  # the server's time unit
    keep: Callable | None = None      # iot: a row is kept if keep(its values)
    whole_groups: bool = False        # iot: rows of a group with a null tag dropped
    reduce: Callable | None = None    # iot: the answer's rows from the kept rows (client work)

    @property
    def client(self) -> bool:
        """The last shape's rows, and rows kept by a condition, are computed on the client
        (inside the latency)."""
        return self.shape == "last" or self.keep is not None or self.reduce is not None

    @property
    def text(self) -> str:
        return self.sql or "(matches nothing)"

    def __str__(self) -> str:
        return self.text


class IotdbTree(Dialect):
    """The aggregate, rows and last shapes in IoTDB's tree-model SQL."""

    name = "iotdb"
    custom = CUSTOM
    excluded = EXCLUDED

    def __init__(self, database: str = "tsbench", tables: dict | None = None, unit_ns: int = 1):
        self.database = database
        self.tables = tables or {}            # measurement -> Table (its tags' order, its fields)
        self.unit = unit_ns

    # ---- shapes -------------------------------------------------------------------------
    def aggregate(self, p: dict) -> IotdbQuery:
        if p.get("limit") and (p.get("order") != "desc" or p.get("group_by")):
            raise Unsupported("iotdb: a LIMIT is run only on the newest buckets of one group")
        has_time, group, values = columns(p)
        tags = self._tags(p["measurement"])
        levels = tuple(FIRST_TAG_LEVEL + tags.index(g) for g in group)
        sel = ", ".join(f"{AGG[p['agg']]}({node(f)})" for f in p["fields"])
        by = []
        if p.get("bucket") is not None:
            w = self._units(p["bucket"], "a bucket width")
            lo, hi = self._t(p["start"]), self._t(p["end"])
            by.append(f"([{lo // w * w}, {-(-hi // w) * w}), {w}{UNITS[self.unit]})")
        by.append(f"LEVEL = {', '.join(map(str, levels)) or 0}")
        sql = self._select(p, sel, tags) + " GROUP BY " + ", ".join(by)
        if p.get("limit"):
            having = " + ".join(f"count({node(f)})" for f in p["fields"])
            sql += f" HAVING {having} > 0 ORDER BY TIME DESC LIMIT {int(p['limit'])}"
        return IotdbQuery("aggregate", sql if self._matches(p) else None, has_time, tuple(group), levels,
                          tuple(p["fields"]), tuple(v.kind for v in values), p["agg"],
                          one_row=not has_time and not group, unit_ns=self.unit)

    def rows(self, p: dict) -> IotdbQuery:
        _, group, values = columns(p)
        tags = self._tags(p["measurement"])
        sql = self._select(p, ", ".join(node(f) for f in p["fields"]), tags)
        if p.get("limit"):
            sql += f" ORDER BY TIME LIMIT {int(p['limit'])}"
        sql += " ALIGN BY DEVICE"
        return IotdbQuery("rows", sql if self._matches(p) else None, True, tuple(group),
                          tuple(FIRST_TAG_LEVEL + tags.index(g) for g in group), tuple(p["fields"]),
                          tuple(v.kind for v in values), unit_ns=self.unit)

    def last(self, p: dict) -> IotdbQuery:
        """LAST of every field of the measurement, so that a row's time is found even when the
        fields asked for are all null in it."""
        _, group, values = columns(p)
        tags = self._tags(p["measurement"])
        every = self.tables[p["measurement"]].field_names
        vals = None if p.get("tag_values") is None else [v for v in p["tag_values"] if v is not None]
        sql = f"SELECT LAST {', '.join(node(f) for f in every)} FROM {', '.join(self._devices(p, tags, vals))}"
        return IotdbQuery("last", sql if vals != [] else None, True, tuple(group),
                          tuple(FIRST_TAG_LEVEL + tags.index(g) for g in group), tuple(p["fields"]),
                          tuple(v.kind for v in values), unit_ns=self.unit)

    # ---- parts --------------------------------------------------------------------------
    def _tags(self, measurement: str) -> tuple[str, ...]:
        if measurement not in self.tables:
            raise UserError(f"target iotdb: measurement {measurement!r} is not among the loaded tables "
                            f"({', '.join(self.tables) or 'none'})")
        return tuple(self.tables[measurement].tags)

    def _t(self, ns: int) -> int:
        """An instant [start or end) in the server's unit: the first unit at or after it."""
        return -(-int(ns) // self.unit)

    def _units(self, ns: int, what: str) -> int:
        if ns % self.unit:
            raise Unsupported(f"iotdb: {what} of {ns} ns is not a whole number of the server's time unit")
        return ns // self.unit

    def _devices(self, p: dict, tags: tuple[str, ...], values) -> list[str]:
        """FROM paths: every device of the measurement, or one path per tag value."""
        base = measurement_path(self.database, p["measurement"])
        if p.get("fix"):                      # iot: a tag = value besides the filter
            k, v = p["fix"]
            tags = [tag_node(k, v) if t == k else t for t in tags]
        if values is None:
            return [".".join([base, *("*" if k in self.tables[p["measurement"]].tags else k for k in tags)])]
        return [".".join([base, *(tag_node(k, v) if k == p["tag"] else "*" if k in self.tables[p["measurement"]].tags
                                  else k for k in tags)]) for v in values]

    def _select(self, p: dict, sel: str, tags: tuple[str, ...]) -> str:
        vals = None if p.get("tag_values") is None else [v for v in p["tag_values"] if v is not None]
        conds = [f"time >= {self._t(p['start'])}", f"time < {self._t(p['end'])}"]
        vf = p.get("value_filter")
        if vf:
            if vf["op"] not in OPS:
                raise Unsupported(f"iotdb: value filter op {vf['op']!r}")
            conds.append(f"{node(vf['field'])} {vf['op']} {_literal(p, vf)}")
        return f"SELECT {sel} FROM {', '.join(self._devices(p, tags, vals) or ['-'])} WHERE {' AND '.join(conds)}"

    @staticmethod
    def _matches(p: dict) -> bool:
        """False when the query names tag values, none of them real (or an empty window)."""
        if p.get("tag_values") is not None and not [v for v in p["tag_values"] if v is not None]:
            return False
        return p["end"] > p["start"]


def _literal(p: dict, vf: dict) -> str:
    """A value filter's number: an integer literal for an integral value on an INT64 field
    (IoTDB casts the literal to the column's type and refuses "134217729.0" for INT64)."""
    kind = dict(zip(p["fields"], p["types"])).get(vf["field"])
    x = vf["value"]
    return str(int(x)) if kind == "int" and float(x).is_integer() else num(x)


# ---- reading the answer ---------------------------------------------------------------------

def _value(v, kind: str):
    """A cell as a canonical value; None for a null (None, NaN, or pandas' NA of a nullable
    integer column)."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType":
        return None
    if kind == "int":
        return int(float(v)) if isinstance(v, str) else int(v)
    return float(v)


def _tags_of(q: IotdbQuery, nodes: list[str]) -> tuple:
    return tuple(tag_value(g, nodes[lv]) for g, lv in zip(q.group, q.levels))


def _frame(df) -> tuple[list[str], list[list]]:
    """A DataFrame's column names and its columns as lists (NaN kept). Names repeat when
    several FROM paths (tag values) merge into one group: each such column holds the
    group's merged values."""
    if df is None:
        return [], []
    return [str(c) for c in df.columns], [df.iloc[:, j].tolist() for j in range(df.shape[1])]


def aggregate_rows(q: IotdbQuery, df) -> list[tuple]:
    names, cols = _frame(df)
    times = cols[names.index("Time")] if "Time" in names else [None] * (len(cols[0]) if cols else 0)
    cells: dict[tuple, list] = {}
    for name, col in zip(names, cols):
        if name == "Time":
            continue
        nodes = split(name[name.index("(") + 1: name.rindex(")")])
        i, g = q.fields.index(nodes[-1]), _tags_of(q, nodes)
        for t, v in zip(times, col):
            cells.setdefault((t, g), [None] * len(q.fields))[i] = _value(v, q.kinds[i])
    empty = 0 if q.agg == "count" else None
    out = [(((int(t) * q.unit_ns,) if q.has_time else ()) + g + tuple(vals))
           for (t, g), vals in cells.items() if any(v not in (None, empty) for v in vals)]
    if q.one_row and not out:
        out = [tuple(0 if q.agg == "count" else None for _ in q.fields)]
    return out


def rows_rows(q: IotdbQuery, df) -> list[tuple]:
    names, cols = _frame(df)
    if not cols:
        return []
    idx = [names.index(f) for f in q.fields]
    groups = {d: _tags_of(q, split(d)) for d in set(cols[names.index("Device")])}
    return [(int(t) * q.unit_ns, *groups[d], *(_value(cols[j][r], k) for j, k in zip(idx, q.kinds)))
            for r, (t, d) in enumerate(zip(cols[names.index("Time")], cols[names.index("Device")]))]


def last_rows(q: IotdbQuery, df) -> list[tuple]:
    """Per device the newest row (fields of older points null), then per group the newest device."""
    names, cols = _frame(df)
    if not cols:
        return []
    devices: dict[tuple, dict] = {}
    for t, ts, v in zip(*(cols[names.index(c)] for c in ("Time", "Timeseries", "Value"))):
        nodes = split(ts)
        devices.setdefault(tuple(nodes[:-1]), {})[nodes[-1]] = (int(t), v)
    best: dict[tuple, tuple] = {}
    for dev, points in devices.items():
        newest = max(t for t, _ in points.values())
        vals = tuple(_value(points[f][1], k) if f in points and points[f][0] == newest else None
                     for f, k in zip(q.fields, q.kinds))
        g = _tags_of(q, list(dev))
        if g not in best or newest > best[g][0]:
            best[g] = (newest, vals)
    return [(t * q.unit_ns, *g, *vals) for g, (t, vals) in best.items()]


def device_rows(q: IotdbQuery, df) -> list[tuple]:
    """An aggregate ALIGN BY DEVICE: a row per (bucket, device), its group read from the
    device path (one device a group: the form is correct only where a group is one device);
    all-empty buckets dropped as aggregate_rows does."""
    names, cols = _frame(df)
    if not cols:
        return []
    idx = [next(j for j, n in enumerate(names) if "(" in n and split(n[n.index("(") + 1: n.rindex(")")])[-1] == f)
           for f in q.fields]
    empty = 0 if q.agg == "count" else None
    out = []
    for r, (t, d) in enumerate(zip(cols[names.index("Time")], cols[names.index("Device")])):
        vals = tuple(_value(cols[j][r], k) for j, k in zip(idx, q.kinds))
        if any(v not in (None, empty) for v in vals):
            out.append((int(t) * q.unit_ns, *_tags_of(q, split(d)), *vals))
    return out


def _align_by_device(d: IotdbTree, p: dict) -> IotdbQuery:
    """A grouped aggregate per device (ALIGN BY DEVICE) where tsbench merges devices by GROUP BY LEVEL."""
    q = d.aggregate(p)
    level = f", LEVEL = {', '.join(map(str, q.levels)) or 0}"
    return replace(q, shape="aggregate-device", sql=None if q.sql is None else q.sql.replace(level, "") +
                   " ALIGN BY DEVICE")


_DOUBLE = tuple(n for n in TSBS_DEVOPS if n.startswith("double-groupby-"))
IotdbTree.forms = {n: {"align-by-device": _align_by_device} for n in _DOUBLE}
IotdbTree.form_reasons = {n: "ALIGN BY DEVICE answers per device, the group's answer only where the group's tags "
                             "name one device (devops' hostname); GROUP BY LEVEL merges a group's devices exactly "
                             "whatever the data" for n in _DOUBLE}


def canonical(q: IotdbQuery, df) -> list[tuple]:
    readers = {"aggregate": aggregate_rows, "rows": rows_rows, "last": last_rows, "aggregate-device": device_rows}
    rows = readers[q.shape](q, df)
    if q.whole_groups:
        lo = 1 if q.has_time else 0
        rows = [r for r in rows if None not in r[lo: lo + len(q.group)]]
    if q.keep is not None:
        rows = [r for r in rows if q.keep(r[len(r) - len(q.fields):])]
    return q.reduce(rows) if q.reduce is not None else rows
