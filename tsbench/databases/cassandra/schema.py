"""The two Cassandra layouts (phase 2): their DDL, their prepared INSERTs, and per
measurement the ops of a C template (native.Template) that renders one CSV line
of a split batch (`time,tag1..tagN,field1..fieldM`) as a statement of a CQL
BATCH message: the prepared id and the bound values in the protocol's binary
form. Plain data; target.py runs it, the dialects/ modules (the queries) read the
same layouts.

schema=series (the seed's and TSBS's): `series_double` / `series_bigint`
(series_id text, timestamp_ns bigint, value, PRIMARY KEY (series_id,
timestamp_ns)); series_id = `<measurement>[,<tag>=<value>]...#<field>#<day>`
(tags in the dataset's order, null tags left out, the row's UTC day). A
template per field: one INSERT per line when the field is not null (its "if"
guards the whole statement). Rendering a batch field by field puts the statements
of one series next to each other, so an unlogged batch cut from the text
touches few partitions (a batch over 1000 partitions is 2-3 times slower to
apply than one over 10-100, measured on 5.0.9).

schema=wide: one table per measurement ("series" text, "day" date, "time"
timestamp (epoch ms), "ns" int (the rest, 0..999999), tags text, fields,
PRIMARY KEY (("series", "day"), "time", "ns")); series = `<tag>=<value>,...`
(null tags left out). A null tag or field is bound "unset" (an explicit null
would write a tombstone). The first tag is
written without a comma: the generator never nulls the first tag; a hand-made
file that does gets a series starting with ",".

Names are CQL identifiers in double quotes. A `,`, `=` or `#` inside a tag
value is kept as is in a series key, as the seed did."""

from __future__ import annotations

from tsbench.core.errors import UserError
from tsbench.core.model import Table, Tables

SERIES_TABLES = {"float": "series_double", "int": "series_bigint"}
CQL_TYPES = {"float": "double", "int": "bigint", "string": "text"}
VALUE_ENCODINGS = {"float": "v_double", "int": "v_bigint", "string": "v_text"}   # native.Template's
WIDE_KEY = ("series", "day", "time", "ns")


def ident(name: str) -> str:
    """A CQL identifier, double-quoted (case kept)."""
    return '"' + name.replace('"', '""') + '"'


def keyspace_ddl(keyspace: str, replication_factor: int) -> str:
    return (f"CREATE KEYSPACE IF NOT EXISTS {ident(keyspace)} WITH replication = "
            f"{{'class': 'SimpleStrategy', 'replication_factor': {replication_factor}}}")


def check_fields(schema: str, tables: Tables) -> None:
    """The series tables hold doubles and bigints only."""
    if schema != "series":
        return
    for t in tables:
        for f in t.fields:
            if f.type not in SERIES_TABLES:
                raise UserError(f"target cassandra: field {t.name}.{f.name} is a {f.type}; schema=series holds "
                                f"float and int fields only (use -O schema=wide)")


def table_columns(schema: str, tables: Tables) -> dict[str, dict[str, str]]:
    """Every table a load makes: name -> {column: CQL type}, key columns first."""
    if schema == "series":
        return {name: {"series_id": "text", "timestamp_ns": "bigint", "value": CQL_TYPES[typ]}
                for typ, name in SERIES_TABLES.items()}
    out = {}
    for t in tables:
        cols = {"series": "text", "day": "date", "time": "timestamp", "ns": "int"}
        clash = [c for c in (*t.tags, *t.field_names) if c in cols]
        if clash:
            raise UserError(f"target cassandra: measurement {t.name} has a column named {clash[0]!r}, a key "
                            f"column of schema=wide (use -O schema=series)")
        cols.update({k: "text" for k in t.tags})
        cols.update({f.name: CQL_TYPES[f.type] for f in t.fields})
        out[t.name] = cols
    return out


def partition_key(schema: str) -> tuple[str, ...]:
    return ("series_id",) if schema == "series" else ("series", "day")


def table_ddl(keyspace: str, schema: str, name: str, columns: dict[str, str]) -> str:
    cols = ", ".join(f"{ident(c)} {typ}" for c, typ in columns.items())
    key = ('"series_id", "timestamp_ns"' if schema == "series" else '("series", "day"), "time", "ns"')
    return f"CREATE TABLE IF NOT EXISTS {ident(keyspace)}.{ident(name)} ({cols}, PRIMARY KEY ({key}))"


# ---- prepared INSERTs and the templates that bind them (native.Template) ------------------------

def insert_cql(schema: str, keyspace: str, table: Table) -> list[str]:
    """The INSERT statement each template of a measurement binds (template_ops' order): schema=series
    one per field (into series_double or series_bigint), wide one into the measurement's table."""
    if schema == "series":
        return [f"INSERT INTO {ident(keyspace)}.{SERIES_TABLES[f.type]} (series_id, timestamp_ns, value) "
                f"VALUES (?, ?, ?)" for f in table.fields]
    cols = [*WIDE_KEY, *table.tags, *table.field_names]
    return [f"INSERT INTO {ident(keyspace)}.{ident(table.name)} ({', '.join(ident(c) for c in cols)}) "
            f"VALUES ({', '.join('?' * len(cols))})"]


def statement_head(query_id: bytes, n_values: int) -> bytes:
    """A prepared statement in a BATCH message: kind 1, [short bytes] id, [short] value count."""
    return b"\x01" + len(query_id).to_bytes(2, "big") + query_id + n_values.to_bytes(2, "big")


def _series_key(name: str, tags: tuple[str, ...], first_sep: bytes) -> list[tuple]:
    """Ops writing `<name><sep><tag>=<value>...` (null tags left out) inside an open value."""
    ops: list[tuple] = [("lit", name.encode())] if name else []
    for i, tag in enumerate(tags, start=1):
        sep = first_sep if i == 1 else b","
        ops += [("if", i, 2), ("lit", sep + tag.encode() + b"="), ("col", i, "raw")]
    return ops


def series_ops(table: Table, j: int, query_id: bytes) -> list[tuple]:
    """Field j of a line bound to its series table's INSERT (nothing if the field is null)."""
    f = table.fields[j]
    col = 1 + len(table.tags) + j
    group = [("lit", statement_head(query_id, 3)), ("open",), *_series_key(table.name, table.tags, b","),
             ("lit", b"#" + f.name.encode() + b"#"), ("col", 0, "day"), ("close",),
             ("col", 0, "v_ns"), ("col", col, VALUE_ENCODINGS[f.type])]
    return [("if", col, len(group))] + group


def wide_ops(table: Table, query_id: bytes) -> list[tuple]:
    """A line bound to its measurement's INSERT: a null tag or field is sent unset (no tombstone)."""
    ops = [("lit", statement_head(query_id, len(WIDE_KEY) + len(table.tags) + len(table.fields))),
           ("open",), *_series_key("", table.tags, b""), ("close",),
           ("col", 0, "v_date"), ("col", 0, "v_ms"), ("col", 0, "v_subms")]
    ops += [("col", i, "v_text") for i in range(1, len(table.tags) + 1)]
    ops += [("col", 1 + len(table.tags) + j, VALUE_ENCODINGS[f.type]) for j, f in enumerate(table.fields)]
    return ops


def template_ops(schema: str, table: Table, query_ids: list[bytes]) -> list[list[tuple]]:
    """The templates of one measurement, each binding the prepared INSERT of insert_cql() at the
    same place: schema=series one per field (rendered field after field, so that consecutive
    statements share a partition: a series over time), wide one."""
    if schema == "series":
        return [series_ops(table, j, qid) for j, qid in enumerate(query_ids)]
    return [wide_ops(table, query_ids[0])]
