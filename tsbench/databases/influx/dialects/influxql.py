"""The InfluxQL dialect (phases 3 and 5): the basic shapes (aggregate, rows,
last) rendered as InfluxQL for POST /query (epoch=ns, JSON), the iot types as
custom shapes (iot.py), and the /query JSON answer parsed into canonical rows
(queries/shapes.columns); the server's errors in the answer are Fatal."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import ClassVar, Mapping

from tsbench.core.errors import Fatal, Unsupported
from tsbench.databases.influx.dialects.canonical import AGGREGATES, finish_aggregate, layout, tag
from tsbench.databases.influx.dialects.iot import IOT
from tsbench.databases.influx.dialects.literals import duration, ident, number, ql_str
from tsbench.queries.base import iso, shape_of
from tsbench.queries.dialect import Dialect

# rows(params, results) -> canonical rows, for a custom shape
RowsFn = Callable[[dict, list[dict]], list[tuple]]


def _custom(render: Callable[[dict], str]) -> Callable[[Dialect, dict], str]:
    """A Dialect.custom renderer of a render(params) function."""
    return lambda dialect, p: render(p)


# ---- rendering ----------------------------------------------------------------------------------

def _cmp(vf: dict) -> str:
    op = vf["op"]
    if op not in (">", ">=", "<", "<=", "="):
        raise Unsupported(f"influx: value filter operator {op!r}")
    return f"{ident(vf['field'])} {op} {number(vf['value'])}"


def _where(p: dict) -> str:
    conds = [f"time >= {int(p['start'])} AND time < {int(p['end'])}"]
    if p.get("tag_values") is not None:
        col = ident(p["tag"])
        vals = list(p["tag_values"])
        conds.append("(" + " OR ".join(f"{col} = {ql_str(v)}" for v in vals) + ")" if vals
                     else f"({col} = '' AND {col} != '')")
    if p.get("value_filter"):
        conds.append(_cmp(p["value_filter"]))
    return " AND ".join(conds)


# ---- answers ------------------------------------------------------------------------------------

def results(text: str, what: str) -> list[dict]:
    """The "results" of a /query JSON answer; Fatal with the server's words for an error
    or a partial (cut short) answer."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise Fatal(f"{what}: not a JSON answer: {text[:200]!r}") from None
    if "error" in doc:
        raise Fatal(f"{what}: {doc['error']}")
    out = doc.get("results") or []
    for r in out:
        if "error" in r:
            raise Fatal(f"{what}: {r['error']}")
        if r.get("partial") or any(s.get("partial") for s in r.get("series") or []):
            raise Fatal(f"{what}: the answer was cut short (partial: the server's max-row-limit?)")
    return out


def _series(results: list[dict]) -> list[dict]:
    return [s for r in results for s in r.get("series") or []]


def _grouped_rows(p: dict, results: list[dict]) -> list[tuple]:
    """Rows of an aggregate or last answer: one series per group, its tags the group."""
    has_time, group, conv = layout(p)
    out: list[tuple] = []
    for s in _series(results):
        tags = s.get("tags") or {}
        g = tuple(tag(tags.get(k)) for k in group)
        for row in s.get("values") or []:
            vals = tuple(c(v) for c, v in zip(conv, row[1:]))
            out.append(((int(row[0]),) if has_time else ()) + g + vals)
    return out


def _raw_rows(p: dict, results: list[dict]) -> list[tuple]:
    """Rows of a rows answer: time, the tags selected (::tag), the fields."""
    _, group, conv = layout(p)
    k = len(group)
    return [(int(row[0]), *(tag(x) for x in row[1:1 + k]), *(c(v) for c, v in zip(conv, row[1 + k:])))
            for s in _series(results) for row in s.get("values") or []]


# ---- the dialect --------------------------------------------------------------------------------

class InfluxQL(Dialect):
    """InfluxQL statements of the basic shapes and of the iot types; parse_answer()
    turns a /query answer into canonical rows."""

    name = "influxql"
    custom = {t: _custom(render) for t, (render, _) in IOT.items()}
    custom_rows: ClassVar[Mapping[str, RowsFn]] = {t: rows for t, (_, rows) in IOT.items()}

    def __init__(self, database: str = "tsbench"):
        self.database = database        # InfluxQL names no database: /query's db parameter does

    def aggregate(self, p: dict) -> str:
        agg = p["agg"]
        if agg not in AGGREGATES:
            raise Unsupported(f"influx: aggregate {agg!r}")
        sel = ", ".join(f"{agg}({ident(f)})" for f in p["fields"])
        q = f"SELECT {sel} FROM {ident(p['measurement'])} WHERE {_where(p)}"
        groups = [f"time({duration(p['bucket'])})"] if p.get("bucket") is not None else []
        groups += [ident(g) for g in p.get("group_by") or []]
        if groups:
            q += " GROUP BY " + ", ".join(groups)
        if p.get("bucket") is not None:
            q += " fill(none)"          # empty buckets: absent, as in SQL (count would give 0)
        if p.get("order") == "desc":
            q += " ORDER BY time DESC"
        if p.get("limit"):
            q += f" LIMIT {int(p['limit'])}"  # per series: cut again globally in finish_aggregate
        return q

    def rows(self, p: dict) -> str:
        sel = [f"{ident(t)}::tag" for t in p.get("tags_out") or []] + [f"{ident(f)}::field" for f in p["fields"]]
        q = f"SELECT {', '.join(sel)} FROM {ident(p['measurement'])} WHERE {_where(p)}"
        if p.get("limit"):
            q += f" ORDER BY time ASC LIMIT {int(p['limit'])}"   # no GROUP BY: one series, a global limit
        return q

    def last(self, p: dict) -> str:
        sel = ", ".join(f"{ident(f)}::field" for f in p["fields"])
        return (f"SELECT {sel} FROM {ident(p['measurement'])} GROUP BY {', '.join(ident(g) for g in p['group_by'])} "
                f"ORDER BY time DESC LIMIT 1")

    def client_finished(self, p: dict) -> bool:
        """The iot types (their HAVINGs and outer aggregations), and a LIMIT over several
        groups (InfluxQL's LIMIT is per series: the global cut is made on the client)."""
        shape = shape_of(p)
        return shape in self.custom_rows or (shape == "aggregate" and bool(p.get("limit"))
                                             and bool(p.get("group_by")))

    def parse_answer(self, p: dict, text: str, what: str) -> list[tuple]:
        """Canonical rows of the /query JSON answer `text` to the query of params p."""
        res = results(text, what)
        shape = shape_of(p)
        if shape in self.custom_rows:
            return self.custom_rows[shape](p, res)
        if shape == "aggregate":
            has_time, group, _ = layout(p)
            return finish_aggregate(p, _grouped_rows(p, res), has_time, group)
        if shape == "last":
            return _grouped_rows(p, res)
        if shape == "rows":
            return _raw_rows(p, res)
        raise Unsupported(f"influx: unknown query shape {shape!r}")


# ---- other forms of the same questions (benchmarks/dialects.py measures them) ------------------

def _fill_null(d: InfluxQL, p: dict) -> str:
    """tsbench's statement with InfluxDB's default fill(null): empty buckets come back as nulls."""
    return d.aggregate(p).replace(" fill(none)", "")


def _tsbs_text(d: InfluxQL, p: dict) -> str:
    """TSBS's text: RFC3339 time literals, lower-case keywords, the default fill(null)."""
    q = _fill_null(d, p).replace(f"time >= {int(p['start'])} AND time < {int(p['end'])}",
                                 f"time >= '{iso(p['start'])}' and time < '{iso(p['end'])}'")
    return q.replace(" FROM ", " from ", 1).replace(" WHERE ", " where ", 1) \
        .replace(" GROUP BY ", " group by ", 1)


def _per_host_subquery(d: InfluxQL, p: dict) -> str:
    """max (or min) of each host's max in a subquery: the same answer, in two stages."""
    agg, b = p["agg"], duration(p["bucket"])
    inner = ", ".join(f"{agg}({ident(f)}) AS v{i}" for i, f in enumerate(p["fields"]))
    outer = ", ".join(f"{agg}(v{i})" for i in range(len(p["fields"])))
    window = f"time >= {int(p['start'])} AND time < {int(p['end'])}"
    sub = f"SELECT {inner} FROM {ident(p['measurement'])} WHERE {_where(p)} GROUP BY time({b}), {ident(p['tag'])}"
    return f"SELECT {outer} FROM ({sub}) WHERE {window} GROUP BY time({b}) fill(none)"


_MAX_OF_HOSTS = ("single-groupby-1-8-1", "single-groupby-5-8-1", "cpu-max-all-8")
_BUCKETED = ("single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-5-1-1", "single-groupby-5-1-12",
             "cpu-max-all-1", "double-groupby-1", "double-groupby-5", "double-groupby-all")
InfluxQL.forms = {
    **{t: {"fill-null": _fill_null, "tsbs-text": _tsbs_text} for t in _BUCKETED},
    **{t: {"fill-null": _fill_null, "tsbs-text": _tsbs_text, "per-host-subquery": _per_host_subquery}
       for t in _MAX_OF_HOSTS},
}
