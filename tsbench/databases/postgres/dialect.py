"""PostgreSQL's queries (phase 3 render; target.py runs them in phase 4): the
shared SQL dialect spelled for tsbench's layout (entity tags read through the
tag-set table's join, time math in exact numerics; TimescaleDB's time_bucket
with -O timescaledb=true)."""

from __future__ import annotations

from tsbench.databases.postgres import timescale
from tsbench.queries.base import SqlSpelling, q

TAGS = "tags"          # the tag-set table


class PostgresSpelling(SqlSpelling):
    """The reference SQL as PostgreSQL runs it on tsbench's layout: with a tag-set
    table, entity tags are read through a join; time math in exact numerics."""

    name = "postgres"

    def __init__(self, schema: str, entity: tuple[str, ...], time_bucket: bool = False):
        self.schema, self.entity, self.time_bucket = schema, entity, time_bucket

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
