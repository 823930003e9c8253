"""The few shapes every drawn query takes (phase 3), their canonical columns and
their meaning in SQL (phases 4-5). Renderers of other dialects (InfluxQL,
PromQL, Flux) implement the same shapes; the reference engine runs sql().

aggregate  agg (max|min|mean|sum|count) of fields of one measurement in
           [start, end), optionally where tag IN tag_values and field op value,
           per time bucket (or over the whole window), per group_by tags,
           optionally newest buckets first with a limit.
rows       the rows of a measurement in [start, end) (optionally filtered by tag
           values and field op value): time, tags_out, fields.
last       the newest row of each group_by group: its time, the group, fields.
custom     a query type of its own (iot): rendered per type.
"""

from __future__ import annotations

from tsbench.queries.base import SqlSpelling, Value, lit, num

AGG_SQL = {"max": "max", "min": "min", "mean": "avg", "sum": "sum", "count": "count"}
OPS = (">", ">=", "<", "<=", "=")


def columns(p: dict) -> tuple[bool, list[str], list[Value]]:
    """(has a time column, group columns, value columns) of an answer."""
    shape = p["shape"]
    if shape == "aggregate":
        agg = p["agg"]
        vals = [Value(f"{agg}_{f}", "int" if agg == "count" or (agg in ("max", "min", "sum") and t == "int")
                      else "float", stored=agg in ("max", "min")) for f, t in zip(p["fields"], p["types"])]
        return p.get("bucket") is not None, list(p.get("group_by") or []), vals
    if shape == "rows":
        return True, list(p.get("tags_out") or []), [Value(f, t, True) for f, t in zip(p["fields"], p["types"])]
    if shape == "last":
        return True, list(p["group_by"]), [Value(f, t, True) for f, t in zip(p["fields"], p["types"])]
    if shape == "custom":
        from tsbench.queries.catalog import CUSTOM

        return CUSTOM[p["type"]].columns(p)
    raise ValueError(f"unknown query shape {shape!r}")


def ordered(p: dict) -> bool:
    """Whether the answer's row order is part of its meaning: an aggregate asked newest
    first (ORDER BY t DESC, with its LIMIT), rows cut by a LIMIT (ORDER BY t). Those
    answers are compared in order (compare.py), the others as sets of rows."""
    if p["shape"] == "aggregate":
        return p.get("order") is not None
    return p["shape"] == "rows" and bool(p.get("limit"))


def summed(p: dict) -> bool:
    """Whether the answer's values are float sums or means of the data (an aggregate sum
    or mean): compared within the bound of their summation error (compare.py)."""
    return p["shape"] == "aggregate" and p["agg"] in ("sum", "mean")


def _where(p: dict, d: SqlSpelling) -> str:
    m = p["measurement"]
    conds = [d.window(p["start"], p["end"])]
    if p.get("tag_values") is not None:
        conds.append(f"{d.tag(m, p['tag'])} IN ({', '.join(lit(v) for v in p['tag_values'])})")
    vf = p.get("value_filter")
    if vf:
        assert vf["op"] in OPS
        conds.append(f"{d.field(vf['field'])} {vf['op']} {num(vf['value'])}")
    return " AND ".join(conds)


def _aggregate(p: dict, d: SqlSpelling, values: list[str]) -> str:
    """An aggregate's SELECT of `values` per bucket and group, in the answer's order."""
    m = p["measurement"]
    sel, grp = [], []
    if p.get("bucket") is not None:
        sel.append(f"{d.bucket_ns(p['bucket'])} AS t")
        grp.append("t")
    for g in p.get("group_by") or []:
        sel.append(f"{d.tag(m, g)} AS {d.quote(g)}")
        grp.append(d.tag(m, g))
    out = f"SELECT {', '.join(sel + values)} FROM {d.table(m)} WHERE {_where(p, d)}"
    if grp:
        out += f" GROUP BY {', '.join(grp)}"
    if p.get("order") == "desc":
        out += " ORDER BY t DESC"
    if p.get("limit"):
        out += f" LIMIT {int(p['limit'])}"
    return out


def scale_sql(p: dict, d: SqlSpelling) -> str:
    """For a summed aggregate (summed()): per answer row, its time and group, then for
    each field the count n of the values summed and the sum of their magnitudes
    sum|x|, from which compare.py bounds the sum's rounding error."""
    return _aggregate(p, d, [f"count({d.field(f)}), sum(abs({d.field(f)}))" for f in p["fields"]])


def sql(p: dict, d: SqlSpelling) -> str:
    """The query in SQL over the reference tables, returning canonical columns."""
    shape = p["shape"]
    m = p["measurement"] if shape != "custom" else None
    if shape == "aggregate":
        return _aggregate(p, d, [f"{AGG_SQL[p['agg']]}({d.field(f)})" for f in p["fields"]])
    if shape == "rows":
        sel = [f"{d.time_ns()} AS t"] + [d.tag(m, g) for g in p.get("tags_out") or []] + \
              [d.field(f) for f in p["fields"]]
        out = f"SELECT {', '.join(sel)} FROM {d.table(m)} WHERE {_where(p, d)}"
        if p.get("limit"):
            out += f" ORDER BY t LIMIT {int(p['limit'])}"
        return out
    if shape == "last":
        g = [d.tag(m, x) for x in p["group_by"]]
        sel = [f"{d.time_ns()} AS t"] + g + [d.field(f) for f in p["fields"]]
        return (f"SELECT DISTINCT ON ({', '.join(g)}) {', '.join(sel)} FROM {d.table(m)} "
                f"ORDER BY {', '.join(g)}, m.time DESC")
    if shape == "custom":
        from tsbench.queries.catalog import CUSTOM

        return CUSTOM[p["type"]].sql(p, d)
    raise ValueError(f"unknown query shape {shape!r}")
