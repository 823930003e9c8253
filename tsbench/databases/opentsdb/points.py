"""The OpenTSDB data points of a record (phase 2), as the ops of a C template
(native.Template) that renders each CSV line of a split batch
(`time,tag1..tagN,field1..fieldM`) as one `/api/put` JSON object per field value:

    {"metric":"<measurement>.<field>","timestamp":<epoch ms>,"value":<number>,"tags":{<tag>:"<v>",...}},

OpenTSDB keeps one value per (metric, tags, time), as the seed's `opentsdb`
format wrote them. Null fields give no point and null tags no tag (a SEP op
puts the commas); a time keeps its millisecond (a finer time is floored).
OpenTSDB stores numbers only, names of a restricted alphabet, and at least one
tag per point: metric_names() refuses a measurement that breaks these rules
before anything is written. target.py wraps the points of a batch in `[...]`;
the dialect (api_query.py) reads the same metric names."""

from __future__ import annotations

import json
import re

from tsbench.core.errors import UserError
from tsbench.core.model import Table

# what OpenTSDB 2.4 accepts in a metric, tag key or tag value (Tags.validateString):
# ASCII letters and digits, - _ . / and any Unicode letter
NAME_RE = re.compile(r"^(?:[-_./A-Za-z0-9]|[^\W\d_])+$")


def metric(table: str, field: str) -> str:
    return f"{table}.{field}"


def check_names(table: Table) -> None:
    """UserError if OpenTSDB cannot hold the measurement as points."""
    bad = [s for s in (table.name, *table.tags, *table.field_names) if not NAME_RE.match(s)]
    if bad:
        raise UserError(f"target opentsdb: measurement {table.name}: {bad[0]!r} is not a valid OpenTSDB name "
                        f"(letters, digits, - _ . / only)")
    strings = [f.name for f in table.fields if f.type == "string"]
    if strings:
        raise UserError(f"target opentsdb: measurement {table.name}: field {strings[0]!r} holds strings; "
                        f"OpenTSDB stores numbers only")
    if not table.tags:
        raise UserError(f"target opentsdb: measurement {table.name} has no tags; an OpenTSDB point needs one")


def point_ops(table: Table) -> list[tuple]:
    """Ops writing one line of the measurement as its points, each followed by a comma."""
    check_names(table)
    tags: list[tuple] = [("lit", b',"tags":{')]
    for i, tag in enumerate(table.tags, start=1):
        tags += [("if", i, 3), ("sep", b","), ("lit", json.dumps(tag).encode() + b":"), ("col", i, "json")]
    tags.append(("lit", b"}},"))
    ops: list[tuple] = []
    for j, f in enumerate(table.field_names, start=1 + len(table.tags)):
        head = b'{"metric":' + json.dumps(metric(table.name, f)).encode() + b',"timestamp":'
        body = [("lit", head), ("col", 0, "ms"), ("lit", b',"value":'), ("col", j, "raw"), *tags]
        ops += [("if", j, len(body)), *body]
    return ops
