"""Index settings and mappings of the Elasticsearch/OpenSearch target (phase 2:
create() sends them; the queries of phases 4-5 rely on them). One index per
measurement, named as the measurement; a document is

    {"time": "<RFC 3339, up to ns>", "<tag>": "<value>", ..., "<field>": <number>, ...}

with null tags and fields absent. Mapping: time `date_nanos`, tags `keyword`,
float fields `double`, int fields `long`, string fields `keyword`; `dynamic:
strict`, so a document with an unknown field is refused, never mapped by guess.

Templates (target option `template`):
  default      the seed's `default`: documents kept in `_source`, every column
               indexed and in doc values: fast filters, any query answerable.
  aggregation  the seed's `aggregation`: `_source` off and the fields kept only as
               doc values (`index: false`): smaller on disk and faster to load.
               Documents are not retrievable as such: rows queries read doc values
               (`docvalue_fields`), and a filter on a field's value (a range query)
               needs a server that searches doc values (OpenSearch 2.x and
               Elasticsearch 8.1+ do; Elasticsearch 7.10 refuses it: "Cannot search
               on field [f] since it is not indexed").
  sorted       the default mapping with the index sorted by the tags, then time
               (`index.sort.*`) and the `best_compression` codec: each series' rows
               lie together on disk (smaller, quicker per-series reads), at some
               cost in load speed.

Every template disables the shard request cache (`index.requests.cache.enable`):
repeated aggregations would otherwise be answered from the cached result, and a
benchmark would time the cache rather than the database (as the VictoriaMetrics
server runs with its result cache off)."""

from __future__ import annotations

import json

from tsbench.core.model import Table

TEMPLATES = ("default", "aggregation", "sorted")
FIELD_TYPES = {"float": "double", "int": "long", "string": "keyword"}


def mapping(t: Table, template: str) -> dict:
    """The index's mappings for measurement t."""
    fields_indexed = template != "aggregation"
    props: dict[str, dict] = {"time": {"type": "date_nanos"}}
    for tag in t.tags:
        props[tag] = {"type": "keyword"}
    for f in t.fields:
        p = {"type": FIELD_TYPES[f.type]}
        if not fields_indexed:
            p["index"] = False          # doc values only (the seed's "index": "no")
        props[f.name] = p
    out: dict = {"dynamic": "strict", "properties": props}
    if template == "aggregation":
        out["_source"] = {"enabled": False}
    return out


def settings(t: Table, template: str, shards: int, replicas: int) -> dict:
    """The index's settings: shards, replicas, no refresh (create() loads with refresh
    off; flush() sets the server's default back), no request cache; `sorted` adds the
    index sort and the codec."""
    idx: dict = {"number_of_shards": shards, "number_of_replicas": replicas, "refresh_interval": "-1",
                 "requests": {"cache": {"enable": False}}}
    if template == "sorted":
        keys = [*t.tags, "time"]
        idx["sort"] = {"field": keys, "order": ["asc"] * len(keys)}
        idx["codec"] = "best_compression"
    return {"index": idx}


def index_body(t: Table, template: str, shards: int, replicas: int) -> dict:
    return {"settings": settings(t, template, shards, replicas), "mappings": mapping(t, template)}


def _j(s: str) -> bytes:
    return json.dumps(s).encode()


def bulk_ops(t: Table) -> list[tuple]:
    """The ops of native.Template that turn one of t's split CSV lines (time, tags,
    fields) into a bulk `create` action line and its document (no _id: the server
    makes one; see target.py for why a retry cannot double a document)."""
    ops: list[tuple] = [("lit", b'{"create":{"_index":' + _j(t.name) + b'}}\n{"time":"'), ("col", 0, "raw"),
                        ("lit", b'"')]
    for i, tag in enumerate(t.tags, 1):
        ops += [("if", i, 2), ("lit", b"," + _j(tag) + b":"), ("col", i, "json")]
    for j, f in enumerate(t.fields, 1 + len(t.tags)):
        ops += [("if", j, 2), ("lit", b"," + _j(f.name) + b":"), ("col", j, "json" if f.type == "string" else "raw")]
    ops.append(("lit", b"}\n"))
    return ops
