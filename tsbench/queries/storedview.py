"""The rows of an import's loadable view (phases 3 and 5 on a user's own data): SQL that reads
them straight from the import's Parquet files (data/stored.py, data/lpimport.py) for the
reference engine's tables, each tag's distinct values and the query context drawn from
them, and the dataset back from a queries file's description. DuckDB does the work; no
Python per row.

The view's rows are data/stored.py's (view_sql: the rows every target is given); here they
become the reference's tables, time as a TIMESTAMPTZ, the measurement's tags as VARCHAR, its
view fields as BIGINT or DOUBLE, and each tag's values."""

from __future__ import annotations

from collections.abc import Mapping

from tsbench.core.model import Table
from tsbench.queries.base import DatasetContext, q

SQL_TYPES = {"float": "DOUBLE", "int": "BIGINT"}
SECOND = 10**9


def view_select(ds, table: Table) -> str:
    """SELECT of a measurement's view rows (the rows every target is given: data/stored.py's
    view_sql, duplicates merged, times cut to the microsecond), columns in the table's order
    (time, tags, fields)."""
    return (f"SELECT CAST(make_timestamp(time // 1000) AS TIMESTAMPTZ) AS time, * EXCLUDE (time) "
            f"FROM ({ds.view_sql(table.name)})")      # in file order, as generated data is


def fill(con, ds) -> None:
    """The reference engine's tables (con: its DuckDB connection, TimeZone UTC) from the view:
    one INSERT ... SELECT per measurement."""
    for t in ds.tables:
        cols = ["time TIMESTAMPTZ"] + [f"{q(k)} VARCHAR" for k in t.tags] + \
               [f"{q(f.name)} {SQL_TYPES[f.type]}" for f in t.fields]
        con.execute(f"CREATE TABLE {q(t.name)} ({', '.join(cols)})")
        con.execute(f"INSERT INTO {q(t.name)} {view_select(ds, t)}")


def entities(ds) -> int:
    """What `entities` means for imported data: the series count (distinct tag sets, as the
    import counted them) of the view's measurement with the most series. It sizes, never selects."""
    ms = ds.meta["schema"]["measurements"]
    return max((int(ms[t.name].get("series") or 0) for t in ds.tables), default=0)


class TagValues:
    """Each tag's distinct non-null values in the view, sorted (by code point), asked of DuckDB
    (SELECT DISTINCT over the view's rows) the first time and kept: values(m, tag) of one
    measurement, every(tag) of every measurement that has the tag."""

    def __init__(self, ds):
        self.ds, self.con, self.memo = ds, None, {}

    def values(self, measurement: str, tag: str) -> list[str]:
        key = (measurement, tag)
        if key not in self.memo:
            if self.con is None:
                import duckdb

                self.con = duckdb.connect()
            sql = (f"SELECT DISTINCT CAST({q(tag)} AS VARCHAR) AS v FROM ({self.ds.view_sql(measurement, False)}) "
                   f"WHERE {q(tag)} IS NOT NULL")
            self.memo[key] = sorted(r[0] for r in self.con.execute(sql).fetchall())
        return self.memo[key]

    def every(self, tag: str) -> list[str]:
        if ("*", tag) not in self.memo:
            found = set()
            for t in self.ds.tables:
                if tag in t.tags:
                    found.update(self.values(t.name, tag))
            self.memo[("*", tag)] = sorted(found)
        return self.memo[("*", tag)]


def every_tag_value(ds) -> set[str]:
    """Every tag value of the view (what --redact replaces)."""
    values = TagValues(ds)
    return {v for t in ds.tables for k in t.tags for v in values.values(t.name, k)}


class EveryTag(Mapping):
    """DatasetContext.entity_tags of imported data: every tag of the view, its values
    (TagValues.every) looked up when first asked."""

    def __init__(self, names, tag_values: TagValues):
        self.names, self.tag_values = tuple(dict.fromkeys(names)), tag_values

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, tag: str) -> list[str]:
        if tag not in self.names:
            raise KeyError(tag)
        return self.tag_values.every(tag)


def context(ds, reference) -> DatasetContext:
    """The import as query types see it: the view's tables, its time range widened to whole
    seconds (time_range), its interval, every tag with its values (entity_tags: over all
    measurements; tag_values: of one measurement)."""
    values = TagValues(ds)
    tags = EveryTag((k for t in ds.tables for k in t.tags), values)
    start, end = time_range(ds)
    return DatasetContext(ds.use_case, ds.tables, start, end, ds.interval_ns, entities(ds), tags,
                          reference, tag_values=values.values)


def time_range(ds) -> tuple[int, int]:
    """[start, end) in whole seconds holding every row: a query's window bound is then the same
    instant in every dialect (SQL literals carry microseconds, InfluxQL nanoseconds); the
    import's own end (its newest time + 1 ns) would be cut to its newest time in SQL."""
    return ds.start_ns // SECOND * SECOND, ((ds.end_ns - 1) // SECOND + 1) * SECOND


def dataset_of(described: dict):
    """The dataset a queries file's (or manifest's) description names: the import opened (its
    import.json must be the one described), else the generated dataset resolved again."""
    from tsbench.data.dataset import resolve, spec_of
    from tsbench.data.stored import is_stored, open_stored

    if is_stored(described):
        return open_stored(described["folder"], described.get("import_sha256"))
    return resolve(spec_of(described))
