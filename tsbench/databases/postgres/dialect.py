"""PostgreSQL's queries (phase 3 render; target.py runs them in phase 4): the
shared SQL dialect spelled for tsbench's layout (entity tags read through the
tag-set table, time math in exact numerics; TimescaleDB's time_bucket with
-O timescaledb=true), with the devops shapes in the forms measured fastest.

Forms (benchmarks/dialects.py, `nox -s bench_dialects`; docs/databases/postgres.md):
tsbench's basic shapes are stated as Form() below, the other forms of each
devops type by the Form they change. Measured on 100 hosts x 12 h (p50):
* buckets by date_bin on the timestamptz, grouped on it and turned into epoch ns
  on the output rows only: the per-row numeric epoch of `extract(epoch ...) /
  width * width` ("epoch") cost 1.1-1.8x; date_trunc (TSBS's) is no faster.
  date_bin needs PostgreSQL 14; a width in nanoseconds falls back to the epoch.
* a tag filter as `tags_id IN (SELECT id FROM tags WHERE ...)`, joining the tag
  table only for tags in the answer ("join": up to 1.2x).
* groups by entity tags aggregated per tag set first, then joined and merged
  ("join-then-group": 1.3x; TSBS's CTE is the same plan when a host is one tag set).
* lastpoint: the newest row of each tag set by a LATERAL index probe on (tags_id,
  time), merged per group ("distinct-on" over the whole table: 100-600x slower;
  "row-number" likewise). Without that index (index=none) or grouped by a tag
  outside the tag table, DISTINCT ON.
Recorded (docs/figures/dialects-*.json, 20 hosts x 12 h, busy machine): tsbench's form
is 2.0-3.8x faster than its form before ("join-epoch") on double-groupby-* and
groupby-orderby-limit, up to 1.7x on single-groupby-*/cpu-max-all-* (not on the one-host
types, below), 64x on lastpoint.
Kept although measured slower (form_reasons): the one-host single-groupby types, a
query of 1-4 ms where every form runs the same plan in the same server time
(EXPLAIN ANALYZE: 0.63 ms tsbench, 0.65 ms date_trunc at 100 hosts); a second run of
15 rounds at 100 hosts put tsbench's at 1.0-1.27x of the fastest of them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tsbench.databases.postgres import timescale
from tsbench.queries.base import SqlSpelling, lit, num, q
from tsbench.queries.shapes import AGG_SQL, OPS, sql
from tsbench.queries.sql import Sql

TAGS = "tags"          # the tag-set table
EPOCH = "TIMESTAMPTZ '1970-01-01T00:00:00Z'"


class PostgresSpelling(SqlSpelling):
    """The reference SQL as PostgreSQL runs it on tsbench's layout: with a tag-set
    table, entity tags are read through a join; time math in exact numerics."""

    name = "postgres"

    def __init__(self, schema: str, entity: tuple[str, ...], time_bucket: bool = False, indexed: bool = True):
        self.schema, self.entity, self.time_bucket, self.indexed = schema, entity, time_bucket, indexed

    def table(self, measurement: str) -> str:
        base = f"{q(self.schema)}.{q(measurement)} m"
        return base + (f" JOIN {q(self.schema)}.{TAGS} t ON m.tags_id = t.id" if self.entity else "")

    def tag(self, measurement: str, tag: str) -> str:
        return f"t.{q(tag)}" if tag in self.entity else f"m.{q(tag)}"

    def time_ns(self) -> str:
        return "(extract(epoch from m.time) * 1000000000)::bigint"

    def bucket_ns(self, width_ns: int) -> str:
        if self.time_bucket:             # TimescaleDB's own bucketing (timescale.py)
            return timescale.bucket_ns("m.time", width_ns)
        w = int(width_ns)
        return f"({self.time_ns()} / {w}) * {w}"

    def bucket_ts(self, width_ns: int) -> str | None:
        """A bucket as a timestamptz (time_bucket, else date_bin from the epoch); None for a
        width in nanoseconds, which neither states."""
        w = int(width_ns)
        if w % 1000:
            return None
        fn = "time_bucket" if self.time_bucket else "date_bin"
        return f"{fn}(INTERVAL {lit(f'{w // 1000} microseconds')}, m.time" + ("" if self.time_bucket else
                                                                                f", {EPOCH}") + ")"


@dataclass(frozen=True)
class Form:
    """How a basic shape is stated: tsbench's form is Form(); the others change one choice."""

    bucket: str = "ts"             # ts: date_bin/time_bucket grouped on the timestamptz; epoch; date_trunc
    tag_filter: str = "subquery"   # subquery: tags_id IN (SELECT id FROM tags ...); join
    pre_aggregate: bool = True     # groups by entity tags: aggregate per tag set, then join and merge
    last: str = "lateral"          # lateral; distinct-on; row-number


TRUNC = {60 * 10**9: "minute", 3600 * 10**9: "hour", 86400 * 10**9: "day"}


def _ns(ts: str) -> str:
    return f"(extract(epoch from {ts}) * 1000000000)::bigint"


def _bucket(p: dict, s: PostgresSpelling, f: Form) -> tuple[str, str]:
    """(the bucket's group key, its epoch-ns output of that key) in the form's spelling."""
    w = int(p["bucket"])
    if f.bucket == "date_trunc" and w in TRUNC and not s.time_bucket:
        key = f"date_trunc({lit(TRUNC[w])}, m.time)"
        return key, _ns(key)
    ts = s.bucket_ts(w) if f.bucket == "ts" else None
    if ts is None:
        key = s.bucket_ns(w)
        return key, key
    return ts, _ns(ts)


def _entity(s: PostgresSpelling, tag: str) -> bool:
    return tag in s.entity


def _conds(p: dict, s: PostgresSpelling, f: Form) -> list[str]:
    m, conds = p["measurement"], [s.window(p["start"], p["end"])]
    if p.get("tag_values") is not None:
        vals = f"({', '.join(lit(v) for v in p['tag_values'])})"
        tag = p["tag"]
        if _entity(s, tag) and f.tag_filter == "subquery":
            conds.append(f"m.tags_id IN (SELECT id FROM {q(s.schema)}.{TAGS} WHERE {q(tag)} IN {vals})")
        else:
            conds.append(f"{s.tag(m, tag)} IN {vals}")
    vf = p.get("value_filter")
    if vf:
        assert vf["op"] in OPS
        conds.append(f"{s.field(vf['field'])} {vf['op']} {num(vf['value'])}")
    return conds


def _from(p: dict, s: PostgresSpelling, f: Form, tags_out: list[str]) -> str:
    """The FROM clause: the measurement table, joined to the tag table for entity tags in
    the answer, or for the tag filter in the "join" form."""
    m = p["measurement"]
    filt = p.get("tag_values") is not None and _entity(s, p["tag"]) and f.tag_filter == "join"
    joined = bool(s.entity) and (filt or any(_entity(s, g) for g in tags_out))
    base = f"{q(s.schema)}.{q(m)} m"
    return base + f" JOIN {q(s.schema)}.{TAGS} t ON m.tags_id = t.id" if joined else base


def _tail(p: dict) -> str:
    out = " ORDER BY t DESC" if p.get("order") == "desc" else ""
    return out + (f" LIMIT {int(p['limit'])}" if p.get("limit") else "")


def aggregate(p: dict, s: PostgresSpelling, f: Form = Form()) -> str:
    m, group = p["measurement"], list(p.get("group_by") or [])
    if f.pre_aggregate and s.entity and any(_entity(s, g) for g in group) and \
            all(_entity(s, g) for g in group):
        return _pre_aggregate(p, s, f)
    frm = _from(p, s, f, group)
    sel, grp = [], []
    if p.get("bucket") is not None:
        key, out = _bucket(p, s, f)
        sel.append(f"{out} AS t")
        grp.append(key)
    for g in group:
        sel.append(f"{s.tag(m, g)} AS {q(g)}")
        grp.append(s.tag(m, g))
    sel += [f"{AGG_SQL[p['agg']]}({s.field(x)})" for x in p["fields"]]
    out = f"SELECT {', '.join(sel)} FROM {frm} WHERE {' AND '.join(_conds(p, s, f))}"
    return out + (f" GROUP BY {', '.join(grp)}" if grp else "") + _tail(p)


# partial aggregates per tag set, and how they merge per group
PARTIAL = {"max": (("max({})",), "max(a.{0})"), "min": (("min({})",), "min(a.{0})"),
           "sum": (("sum({})",), "sum(a.{0})"), "count": (("count({})",), "sum(a.{0})::bigint"),
           "mean": (("sum({})", "count({})"), "sum(a.{0})::float8 / nullif(sum(a.{1}), 0)::float8")}


def _pre_aggregate(p: dict, s: PostgresSpelling, f: Form) -> str:
    """Aggregate per (bucket, tag set) on the measurement table alone, then join the few
    partial rows to the tag table and merge them per (bucket, group)."""
    m, group = p["measurement"], list(p["group_by"])
    parts, finals = PARTIAL[p["agg"]]
    inner_sel, inner_grp, sel, grp = [], [], [], []
    if p.get("bucket") is not None:
        key, out = _bucket(p, s, f)
        inner_sel.append(f"{key} AS b")
        inner_grp.append(key)
        sel.append(f"{_ns('a.b') if out != key else 'a.b'} AS t")
        grp.append("a.b")
    sel += [f"t.{q(g)} AS {q(g)}" for g in group]
    grp += [f"t.{q(g)}" for g in group]
    inner_sel.append("m.tags_id")
    inner_grp.append("m.tags_id")
    for i, x in enumerate(p["fields"]):
        inner_sel += [part.format(s.field(x)) + f" AS p{i}_{j}" for j, part in enumerate(parts)]
        sel.append(finals.format(*(f"p{i}_{j}" for j in range(len(parts)))))
    inner = (f"SELECT {', '.join(inner_sel)} FROM {q(s.schema)}.{q(m)} m "
             f"WHERE {' AND '.join(_conds(p, s, f))} GROUP BY {', '.join(inner_grp)}")
    return (f"SELECT {', '.join(sel)} FROM ({inner}) a JOIN {q(s.schema)}.{TAGS} t ON a.tags_id = t.id "
            f"GROUP BY {', '.join(grp)}" + _tail(p))


def rows(p: dict, s: PostgresSpelling, f: Form = Form()) -> str:
    m, tags = p["measurement"], list(p.get("tags_out") or [])
    frm = _from(p, s, f, tags)
    sel = [f"{s.time_ns()} AS t"] + [s.tag(m, g) for g in tags] + [s.field(x) for x in p["fields"]]
    out = f"SELECT {', '.join(sel)} FROM {frm} WHERE {' AND '.join(_conds(p, s, f))}"
    return out + (f" ORDER BY t LIMIT {int(p['limit'])}" if p.get("limit") else "")


def last(p: dict, s: PostgresSpelling, f: Form = Form()) -> str:
    m, group = p["measurement"], list(p["group_by"])
    g = [s.tag(m, x) for x in group]
    cols = ", ".join(s.field(x) for x in p["fields"])
    if f.last == "lateral" and s.entity and s.indexed and all(_entity(s, x) for x in group):
        probe = (f"SELECT m.time, {cols} FROM {q(s.schema)}.{q(m)} m WHERE m.tags_id = t.id "
                 f"ORDER BY m.time DESC LIMIT 1")
        return (f"SELECT DISTINCT ON ({', '.join(g)}) {s.time_ns()} AS t, {', '.join(g)}, {cols} "
                f"FROM {q(s.schema)}.{TAGS} t CROSS JOIN LATERAL ({probe}) m ORDER BY {', '.join(g)}, m.time DESC")
    if f.last == "row-number":
        names = ", ".join(["t", *(f"g{i}" for i in range(len(g))), *(f"v{i}" for i in range(len(p["fields"])))])
        inner = ", ".join([f"{s.time_ns()} AS t", *(f"{x} AS g{i}" for i, x in enumerate(g)),
                           *(f"{s.field(x)} AS v{i}" for i, x in enumerate(p["fields"]))])
        return (f"SELECT {names} FROM (SELECT {inner}, row_number() OVER (PARTITION BY {', '.join(g)} "
                f"ORDER BY m.time DESC) AS rn FROM {s.table(m)}) x WHERE rn = 1")
    return sql(p, s)                                  # DISTINCT ON over the whole table


_SAME_PLAN = ("every form of a one-host query runs the same plan in the same server time (EXPLAIN ANALYZE "
              "0.63 ms vs 0.65 ms); the 1-4 ms latencies differ by the busy machine's noise: a 15-round "
              "rerun put tsbench's at 1.0-1.27x of the fastest")


class PostgresSql(Sql):
    """The SQL dialect with PostgreSQL's own statement of the basic shapes (the custom iot
    shapes as the shared SQL states them)."""

    def aggregate(self, p: dict) -> str:
        return aggregate(p, self.spelling)

    def rows(self, p: dict) -> str:
        return rows(p, self.spelling)

    def last(self, p: dict) -> str:
        return last(p, self.spelling)


def _form(shape, **change):
    """A renderer of a shape in tsbench's form with some choices changed."""
    form = replace(Form(), **change)
    return lambda d, p: shape(p, d.spelling, form)


def _devops_forms() -> dict:
    """TSBS's devops types: each with the forms that state it otherwise (a choice that does
    not apply to a type, such as the tag filter's of a type without one, is left out)."""
    from tsbench.queries.catalog import CATALOG, TSBS_DEVOPS

    buckets = {"epoch": _form(aggregate, bucket="epoch"), "date_trunc": _form(aggregate, bucket="date_trunc"),
               # tsbench's form before bench_dialects: joined, epoch buckets, grouped after the join
               "join-epoch": _form(aggregate, bucket="epoch", tag_filter="join", pre_aggregate=False)}
    out = {}
    for name in TSBS_DEVOPS:
        shape = CATALOG[name].shape
        if name.startswith("double-groupby-"):
            out[name] = {**buckets, "join-then-group": _form(aggregate, pre_aggregate=False)}
        elif shape == "aggregate":
            filtered = name != "groupby-orderby-limit"
            out[name] = {**buckets, **({"join": _form(aggregate, tag_filter="join")} if filtered else {})}
        elif name == "high-cpu-1":
            out[name] = {"join": _form(rows, tag_filter="join")}
        elif shape == "last":
            out[name] = {"distinct-on": _form(last, last="distinct-on"), "row-number": _form(last, last="row-number")}
    return out


PostgresSql.forms = _devops_forms()
PostgresSql.form_reasons = {t: _SAME_PLAN for t in ("single-groupby-1-1-1", "single-groupby-1-1-12",
                                                    "single-groupby-5-1-12")}
