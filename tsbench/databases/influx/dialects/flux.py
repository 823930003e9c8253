"""The Flux dialect (phases 3 and 5): the basic shapes (aggregate, rows, last)
rendered as Flux for POST /api/v2/query (the server needs flux-enabled), and
the annotated CSV answer (annotated_csv.py) turned into canonical rows
(queries/shapes.columns). No custom shapes: the iot types run in InfluxQL."""

from __future__ import annotations

from tsbench.core.errors import Unsupported
from tsbench.databases.influx.dialects.annotated_csv import flux_tables
from tsbench.databases.influx.dialects.canonical import AGGREGATES, finish_aggregate, layout, tag
from tsbench.databases.influx.dialects.literals import FLUX_MAX_TIME, FLUX_MIN_TIME, duration, fx_str, number, rfc3339
from tsbench.queries.base import shape_of
from tsbench.queries.dialect import Dialect

_OPS = {">": ">", ">=": ">=", "<": "<", "<=": "<=", "=": "=="}


def _list(names) -> str:
    return "[" + ", ".join(fx_str(n) for n in names) + "]"


def _col(name: str) -> str:
    return f"r[{fx_str(name)}]"


def _cmp(expr: str, vf: dict, kind: str) -> str:
    op = _OPS.get(vf["op"])
    if op is None:
        raise Unsupported(f"influx: value filter operator {vf['op']!r}")
    if kind == "int":               # compare as the SQL meaning does: the number, whatever its type
        expr = f"float(v: {expr})"
    return f"{expr} {op} {number(vf['value'])}"


def _field_kind(p: dict, name: str) -> str:
    for f, t in zip(p.get("fields") or [], p.get("types") or []):
        if f == name:
            return t
    return "float"


def _range(p: dict, window: bool) -> list[str]:
    """range() of [start, end). InfluxDB 1.8's Flux reads range()'s stop inclusively (a point
    at `stop` comes back, and lands in the first window), so stop is end - 1 ns: the same
    rows as time < end. An empty window is a range of 1 ns that keeps nothing."""
    if not window:
        return [f"  |> range(start: {FLUX_MIN_TIME}, stop: {FLUX_MAX_TIME})"]
    start, end = int(p["start"]), int(p["end"])
    if end > start:
        return [f"  |> range(start: {rfc3339(start)}, stop: {rfc3339(end - 1)})"]
    return [f"  |> range(start: {rfc3339(start)}, stop: {rfc3339(start + 1)})", "  |> filter(fn: (r) => false)"]


def _source(p: dict, bucket: str, fields: list[str], window: bool = True) -> list[str]:
    """from |> range |> filter(measurement, fields, tag values)."""
    lines = [f"from(bucket: {fx_str(bucket)})", *_range(p, window)]
    cond = f"r._measurement == {fx_str(p['measurement'])} and (" + \
        " or ".join(f"r._field == {fx_str(f)}" for f in dict.fromkeys(fields)) + ")"
    if p.get("tag_values") is not None:
        col = _col(p["tag"])
        cond += " and (" + (" or ".join(f"{col} == {fx_str(v)}" for v in p["tag_values"]) or "false") + ")"
    lines.append(f"  |> filter(fn: (r) => {cond})")
    return lines


def _aggregate_rows(p: dict, tables: list[list[dict]]) -> list[tuple]:
    """One row per (bucket, group): the fields' values gathered from their tables."""
    has_time, group, conv = layout(p)
    idx = {f: j for j, f in enumerate(p["fields"])}
    width = p.get("bucket")
    acc: dict[tuple, list] = {}
    for tbl in tables:
        for r in tbl:
            j = idx.get(r.get("_field"))
            if j is None:
                continue
            # the first window starts at range start: report the bucket's start, as SQL does
            key = ((int(r["_time"]) // width * width,) if has_time else ()) + \
                tuple(tag(r.get(g)) for g in group)
            acc.setdefault(key, [None] * len(idx))[j] = conv[j](r.get("_value"))
    return finish_aggregate(p, [k + tuple(v) for k, v in acc.items()], has_time, group)


def _pivoted_rows(p: dict, tables: list[list[dict]]) -> list[tuple]:
    """Rows of a rows or last answer: pivoted, one record per row."""
    _, group, conv = layout(p)
    return [(int(r["_time"]), *(tag(r.get(g)) for g in group), *(c(r.get(f)) for c, f in zip(conv, p["fields"])))
            for tbl in tables for r in tbl]


class Flux(Dialect):
    """Flux scripts of the basic shapes, reading the bucket named after the database;
    parse_answer() turns an annotated CSV answer into canonical rows."""

    name = "flux"

    def __init__(self, database: str = "tsbench"):
        self.bucket = database

    def aggregate(self, p: dict) -> str:
        fields, agg, vf = list(p["fields"]), p["agg"], p.get("value_filter")
        if agg not in AGGREGATES:
            raise Unsupported(f"influx: aggregate {agg!r}")
        group = list(p.get("group_by") or [])
        lines = _source(p, self.bucket, fields)
        if vf:
            if fields != [vf["field"]]:
                raise Unsupported("influx (flux): a value filter on a field other than the one aggregated")
            lines.append(f"  |> filter(fn: (r) => {_cmp('r._value', vf, _field_kind(p, vf['field']))})")
        lines.append(f"  |> group(columns: {_list(['_field', *group])})")
        if p.get("bucket") is not None:
            lines.append(f"  |> aggregateWindow(every: {duration(p['bucket'])}, fn: {agg}, timeSrc: \"_start\", "
                         f"createEmpty: false)")
            keep = ["_time", "_field", "_value", *group]
        else:
            lines.append(f"  |> {agg}()")
            keep = ["_field", "_value", *group]
        lines.append(f"  |> keep(columns: {_list(keep)})")
        if p.get("limit") and p.get("bucket") is not None:
            desc = "true" if p.get("order") == "desc" else "false"
            lines.append(f"  |> sort(columns: [\"_time\"], desc: {desc})")
            lines.append(f"  |> limit(n: {int(p['limit'])})")     # per table: cut again globally
        return "\n".join(lines)

    def rows(self, p: dict) -> str:
        fields, tags, vf = list(p["fields"]), list(p.get("tags_out") or []), p.get("value_filter")
        lines = _source(p, self.bucket, fields + ([vf["field"]] if vf else []))
        lines.append('  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")')
        if vf:
            lines.append(f"  |> filter(fn: (r) => {_cmp(_col(vf['field']), vf, _field_kind(p, vf['field']))})")
        if p.get("limit"):
            lines.append(f"  |> keep(columns: {_list(['_time', *tags, *fields])})")
            lines.append(f'  |> group()\n  |> sort(columns: ["_time"])\n  |> limit(n: {int(p["limit"])})')
        else:   # every tag stays in the group key: series whose tags or fields differ (nulls) stay apart
            lines.append('  |> drop(columns: ["_start", "_stop", "_measurement"])')
        return "\n".join(lines)

    def last(self, p: dict) -> str:
        fields, group = list(p["fields"]), list(p["group_by"])
        # newest value of each field of each series, its row rebuilt by time (a null field in
        # the newest row leaves an older, separate row), then the newest row per group
        lines = _source(p, self.bucket, fields, window=False)
        lines += ["  |> last()",
                  '  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")',
                  f"  |> group(columns: {_list(group)})",
                  '  |> sort(columns: ["_time"], desc: true)',
                  "  |> limit(n: 1)",
                  f"  |> keep(columns: {_list(['_time', *group, *fields])})"]
        return "\n".join(lines)

    def client_finished(self, p: dict) -> bool:
        """An aggregate's fields come back in a table each and are joined into rows on the
        client; a LIMIT over several groups is cut there too (limit() is per table)."""
        return shape_of(p) == "aggregate" and (len(p["fields"]) > 1 or (bool(p.get("limit"))
                                                                         and bool(p.get("group_by"))))

    def parse_answer(self, p: dict, text: str, what: str) -> list[tuple]:
        """Canonical rows of the annotated CSV answer `text` to the query of params p."""
        tables = flux_tables(text, what)
        shape = shape_of(p)
        if shape == "aggregate":
            return _aggregate_rows(p, tables)
        if shape in ("rows", "last"):
            return _pivoted_rows(p, tables)
        raise Unsupported(f"influx: unknown query shape {shape!r}")
