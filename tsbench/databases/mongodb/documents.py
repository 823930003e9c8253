"""The MongoDB documents of records (phase 2), as the ops of C templates
(native.Template) that render each CSV line of a split batch
(`time,tag1..tagN,field1..fieldM`) as BSON, one collection per measurement.

Layouts `point` and `timeseries`: one document per line,

    {"time": <UTC datetime, ms>, "tags": {<tag>: <string>, ...}, <field>: <value>, ...}

no `_id` (the server assigns it). The tags are one sub-document so that a
time-series collection can name it as its metaField.

Layout `bucket` (TSBS's "aggregate" mode, MongoDB's own bucket pattern): one
document per series (tag set) and UTC hour,

    {"tags": {<tag>: <string>, ...}, "hour": <UTC datetime>, "events": [
        {"time": <UTC datetime, ms>, <field>: <value>, ...}, ...]}

rendered as two templates per line: its key (bucket_key_ops: the filter
document {"tags": ..., "hour": the time floored to its UTC hour}, b_hour)
and its event (event_ops); the C core groups a batch's lines by key bytes
(native.bson_groups) into one `$push` of the group's events per bucket.

Null tags and fields are left out (no element), as the seed's BSON documents
did; floats are doubles, ints int64, strings strings. Times keep milliseconds
(BSON datetimes): a finer time is floored to its millisecond. Plain data;
target.py runs it, dialect.py (the queries) reads the same names."""

from __future__ import annotations

from tsbench.core.errors import UserError
from tsbench.core.model import Table

TIME, TAGS = "time", "tags"
HOUR, EVENTS = "hour", "events"          # the bucket layout's
TYPES = {"float": (b"\x01", "b_double"), "int": (b"\x12", "b_int64"), "string": (b"\x02", "b_string")}


def _name(s: str, table: Table) -> bytes:
    """An element name: a BSON cstring (no NUL inside); `$` first or `.` inside would make
    the name unusable in a query."""
    if "\0" in s or s.startswith("$") or "." in s:
        raise UserError(f"target mongodb: measurement {table.name}: the name {s!r} cannot be a MongoDB field "
                        f"name (no NUL, no leading $, no .)")
    return s.encode() + b"\0"


def _tags_ops(table: Table) -> list[tuple]:
    """The "tags" element: a sub-document of the line's non-null tags."""
    ops: list[tuple] = [("lit", b"\x03" + _name(TAGS, table)), ("open", "bson")]
    for i, tag in enumerate(table.tags, start=1):
        ops += [("if", i, 2), ("lit", b"\x02" + _name(tag, table)), ("col", i, "b_string")]
    return ops + [("close",)]


def _fields_ops(table: Table) -> list[tuple]:
    """An element per non-null field."""
    clash = [f for f in table.field_names if f in (TIME, TAGS, "_id")]
    if clash:
        raise UserError(f"target mongodb: measurement {table.name} has a field named {clash[0]!r}, which the "
                        f"document layout uses itself")
    ops: list[tuple] = []
    for j, f in enumerate(table.fields):
        code, enc = TYPES[f.type]
        col = 1 + len(table.tags) + j
        ops += [("if", col, 2), ("lit", code + _name(f.name, table)), ("col", col, enc)]
    return ops


def document_ops(table: Table) -> list[tuple]:
    """Ops writing one line of the measurement as a BSON document (point, timeseries)."""
    fields = _fields_ops(table)
    return [("open", "bson"), ("lit", b"\x09" + _name(TIME, table)), ("col", 0, "b_date"), *_tags_ops(table),
            *fields, ("close",)]


def bucket_key_ops(table: Table) -> list[tuple]:
    """Ops writing one line's bucket (layout bucket) as the filter document that finds it:
    {"tags": {...}, "hour": the line's time floored to its UTC hour}."""
    return [("open", "bson"), *_tags_ops(table), ("lit", b"\x09" + _name(HOUR, table)), ("col", 0, "b_hour"),
            ("close",)]


def event_ops(table: Table) -> list[tuple]:
    """Ops writing one line as an event of its bucket (layout bucket): {"time": ..., fields...}."""
    return [("open", "bson"), ("lit", b"\x09" + _name(TIME, table)), ("col", 0, "b_date"), *_fields_ops(table),
            ("close",)]
