"""The MongoDB document of a record (phase 2), as the ops of a C template
(native.Template) that renders each CSV line of a split batch
(`time,tag1..tagN,field1..fieldM`) as one BSON document:

    {"time": <UTC datetime, ms>, "tags": {<tag>: <string>, ...}, <field>: <value>, ...}

one collection per measurement, no `_id` (the server assigns it). Null tags and
fields are left out (no element), as the seed's BSON documents did; floats are
doubles, ints int64, strings strings. Times keep milliseconds (BSON datetimes):
a finer time is floored to its millisecond. The tags are one sub-document so
that a time-series collection can name it as its metaField. Plain data; load.py
runs it, mql.py (the queries) reads the same names."""

from __future__ import annotations

from ...errors import UserError
from ...model import Table

TIME, TAGS = "time", "tags"
TYPES = {"float": (b"\x01", "b_double"), "int": (b"\x12", "b_int64"), "string": (b"\x02", "b_string")}


def _name(s: str, table: Table) -> bytes:
    """An element name: a BSON cstring (no NUL inside); `$` first or `.` inside would make
    the name unusable in a query."""
    if "\0" in s or s.startswith("$") or "." in s:
        raise UserError(f"target mongodb: measurement {table.name}: the name {s!r} cannot be a MongoDB field "
                        f"name (no NUL, no leading $, no .)")
    return s.encode() + b"\0"


def document_ops(table: Table) -> list[tuple]:
    """Ops writing one line of the measurement as a BSON document."""
    clash = [f for f in table.field_names if f in (TIME, TAGS, "_id")]
    if clash:
        raise UserError(f"target mongodb: measurement {table.name} has a field named {clash[0]!r}, which the "
                        f"document layout uses itself")
    ops: list[tuple] = [("open", "bson"), ("lit", b"\x09" + _name(TIME, table)), ("col", 0, "b_date"),
                        ("lit", b"\x03" + _name(TAGS, table)), ("open", "bson")]
    for i, tag in enumerate(table.tags, start=1):
        ops += [("if", i, 2), ("lit", b"\x02" + _name(tag, table)), ("col", i, "b_string")]
    ops.append(("close",))
    for j, f in enumerate(table.fields):
        code, enc = TYPES[f.type]
        col = 1 + len(table.tags) + j
        ops += [("if", col, 2), ("lit", code + _name(f.name, table)), ("col", col, enc)]
    return ops + [("close",)]
