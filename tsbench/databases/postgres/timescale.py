"""TimescaleDB on a user's PostgreSQL (phases 2-5), the postgres target's
`-O timescaledb=true`: the extension made in the database, every measurement
table a hypertable on time, optional native compression (settings at create,
an optional policy, every chunk compressed untimed before the disk figures),
sizes read with hypertable_size(), and time buckets with time_bucket().

No package registry reachable here ships TimescaleDB, so this runs only
against a server the user gives by URL; on a PostgreSQL without the extension
it stops in one line before any table is made."""

from __future__ import annotations

import re

from tsbench.core.errors import UserError
from tsbench.queries.base import lit, q

NOT_INSTALLED = "the timescaledb extension is not installed on this server"
_INTERVAL = re.compile(r"\d+\s*(microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)")


def is_interval(value: str) -> bool:
    """Whether an option's value is a plain PostgreSQL interval ("1 day", "12 hours"), safe to put in SQL."""
    return _INTERVAL.fullmatch(value) is not None


async def ensure_extension(admin, shown_url: str) -> str:
    """Create the extension in the target database (if the server has it); its version."""
    row = await (await admin.execute(
        "SELECT default_version FROM pg_available_extensions WHERE name = 'timescaledb'")).fetchone()
    if row is None:
        raise UserError(f"target postgres: -O timescaledb=true: {NOT_INSTALLED} ({shown_url})")
    await admin.execute("CREATE EXTENSION IF NOT EXISTS timescaledb")
    return (await (await admin.execute(
        "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'")).fetchone())[0]


def hypertable_sql(qname: str, chunk_interval: str) -> str:
    """Turn a fresh table into a hypertable on time (no default time index: the target makes its own)."""
    return (f"SELECT create_hypertable({lit(qname)}, 'time', chunk_time_interval => INTERVAL {lit(chunk_interval)}, "
            f"create_default_indexes => false, if_not_exists => true)")


def compression_sql(qname: str, segment_by: tuple[str, ...], compress_after: str | None) -> list[str]:
    """Native compression settings (segmented by the tag-set id or tag columns, ordered by time) and the policy."""
    seg = ", ".join(segment_by)
    out = [f"ALTER TABLE {qname} SET (timescaledb.compress, timescaledb.compress_orderby = 'time'"
           + (f", timescaledb.compress_segmentby = {lit(seg)}" if seg else "") + ")"]
    if compress_after:
        out.append(f"SELECT add_compression_policy({lit(qname)}, INTERVAL {lit(compress_after)}, if_not_exists => true)")
    return out


def compress_chunks_sql(qname: str) -> str:
    return f"SELECT count(compress_chunk(c, if_not_compressed => true)) FROM show_chunks({lit(qname)}) c"


def size_sql(qname: str) -> str:
    """Bytes of a hypertable and all its chunks (compressed ones included)."""
    return f"SELECT hypertable_size({lit(qname)})"


def bucket_ns(time_col: str, width_ns: int) -> str:
    """time_bucket of a width in whole microseconds, as epoch ns (buckets start at multiples of the
    width from the epoch for widths that divide a day, as the reference's do)."""
    if width_ns % 1000:
        raise UserError(f"target postgres: a bucket of {width_ns} ns is finer than TimescaleDB's microseconds")
    return (f"(extract(epoch from time_bucket(INTERVAL {lit(f'{width_ns // 1000} microseconds')}, {time_col}))"
            f" * 1000000)::bigint * 1000")


def segment_columns(entity: tuple[str, ...], extra: tuple[str, ...]) -> tuple[str, ...]:
    """Columns to segment compressed chunks by: the tag-set id, or the inline tags."""
    return ("tags_id",) if entity else tuple(q(t) for t in extra)
