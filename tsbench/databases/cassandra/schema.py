"""The two Cassandra layouts (phase 2): their DDL, and per measurement the ops
of a C template (native.Template) that renders one CSV line of a split batch
(`time,tag1..tagN,field1..fieldM`) as CQL INSERT text. Plain data; load.py
runs it, the cql*.py dialects (the queries) read the same layouts.

schema=series (the seed's and TSBS's): `series_double` / `series_bigint`
(series_id text, timestamp_ns bigint, value, PRIMARY KEY (series_id,
timestamp_ns)); series_id = `<measurement>[,<tag>=<value>]...#<field>#<day>`
(tags in the dataset's order, null tags left out, the row's UTC day). A
template per field: one INSERT per line when the field is not null (its "if"
guards the whole statement). Rendering a batch field by field puts the INSERTs
of one series next to each other, so an unlogged batch cut from the text
touches few partitions (a batch over 1000 partitions is 2-3 times slower to
apply than one over 10-100, measured on 5.0.9).

schema=wide: one table per measurement ("series" text, "day" date, "time"
timestamp (epoch ms), "ns" int (the rest, 0..999999), tags text, fields,
PRIMARY KEY (("series", "day"), "time", "ns")); series = `<tag>=<value>,...`
(null tags left out). A null tag or field is left out of the column list and
the values alike (an explicit null would write a tombstone). The first tag is
written without a comma: the generator never nulls the first tag; a hand-made
file that does gets a series starting with ",".

Names are CQL identifiers in double quotes; inside series strings a `'` is
doubled (the C "cqlin" encoding does the same for values). A `,`, `=` or `#`
inside a tag value is kept as is, as the seed did."""

from __future__ import annotations

from ...errors import UserError
from ...model import Table, Tables

SERIES_TABLES = {"float": "series_double", "int": "series_bigint"}
CQL_TYPES = {"float": "double", "int": "bigint", "string": "text"}
WIDE_KEY = ("series", "day", "time", "ns")


def ident(name: str) -> str:
    """A CQL identifier, double-quoted (case kept)."""
    return '"' + name.replace('"', '""') + '"'


def _in_str(s: str) -> bytes:
    """Text inside a CQL string literal: ' doubled."""
    return s.replace("'", "''").encode()


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


# ---- templates: ops for native.Template (see tsbench/native.py) ------------------------------------

def series_ops(keyspace: str, table: Table, j: int) -> list[tuple]:
    """The INSERT of field j of a line into series_double / series_bigint (nothing if null)."""
    f = table.fields[j]
    col = 1 + len(table.tags) + j
    into = f"INSERT INTO {ident(keyspace)}.{SERIES_TABLES[f.type]} (series_id, timestamp_ns, value) VALUES ('"
    group: list[tuple] = [("lit", into.encode() + _in_str(table.name))]
    for i, tag in enumerate(table.tags, start=1):
        group += [("if", i, 2), ("lit", b"," + _in_str(tag) + b"="), ("col", i, "cqlin")]
    group += [("lit", b"#" + _in_str(f.name) + b"#"), ("col", 0, "day"), ("lit", b"',"),
              ("col", 0, "ns"), ("lit", b","), ("col", col, "raw"), ("lit", b");\n")]
    return [("if", col, len(group))] + group


def wide_ops(keyspace: str, table: Table) -> list[tuple]:
    """One INSERT per line into the measurement's table, null columns left out."""
    text = [True] * len(table.tags) + [f.type == "string" for f in table.fields]
    data = [(1 + i, name) for i, name in enumerate((*table.tags, *table.field_names))]
    ops: list[tuple] = [("lit", f"INSERT INTO {ident(keyspace)}.{ident(table.name)} "
                                f"(\"series\", \"day\", \"time\", \"ns\"".encode())]
    for col, name in data:
        ops += [("if", col, 1), ("lit", b", " + ident(name).encode())]
    ops.append(("lit", b") VALUES ('"))
    for i, tag in enumerate(table.tags, start=1):
        sep = b"" if i == 1 else b","
        ops += [("if", i, 2), ("lit", sep + _in_str(tag) + b"="), ("col", i, "cqlin")]
    ops += [("lit", b"', '"), ("col", 0, "day"), ("lit", b"', "), ("col", 0, "ms"), ("lit", b", "),
            ("col", 0, "subms")]
    for col, _name in data:
        ops += [("if", col, 2), ("lit", b", "), ("col", col, "cql" if text[col - 1] else "raw")]
    ops.append(("lit", b");\n"))
    return ops


def template_ops(schema: str, keyspace: str, table: Table) -> list[list[tuple]]:
    """The templates of one measurement: schema=series one per field (rendered field after
    field, so that consecutive INSERTs share a partition: a series over time), wide one."""
    if schema == "series":
        return [series_ops(keyspace, table, j) for j in range(len(table.fields))]
    return [wide_ops(keyspace, table)]
