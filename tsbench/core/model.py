"""What every phase shares about a dataset as a database sees it (phases 2-5):
its tables (one per measurement: tag columns, then field columns), the
dataset's time range and counts, and the batches the loader cuts from a data
file. Plain data, no behaviour: the generator, the loader, the query catalog
and every database package import it; it imports nothing of tsbench."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    type: str          # "float" | "int" | "string" | "tag" | "time"


@dataclass(frozen=True)
class Table:
    """One measurement as a database sees it: tag columns, then field columns."""

    name: str
    tags: tuple[str, ...]
    fields: tuple[Column, ...]

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


@dataclass(frozen=True)
class Tables:
    """The dataset description create() and count() need: its tables, time range and counts."""

    tables: tuple[Table, ...]
    start_ns: int
    end_ns: int          # exclusive; late records still carry timestamps inside [start, end)
    rows: int            # records in the data file
    values: int          # field values in the data file (nulls not counted)

    def __iter__(self):
        return iter(self.tables)

    def by_name(self) -> dict[str, Table]:
        return {t.name: t for t in self.tables}


STAT_KINDS = ("count", "sum", "min", "max", "series")   # what value verification compares, per table


@dataclass(frozen=True)
class FieldStats:
    """What a table holds of one field column: its non-null values' count, sum,
    minimum and maximum (min and max None when count is 0). Integer fields give
    ints, float fields floats."""

    count: int
    sum: float | int
    min: float | int | None
    max: float | int | None


@dataclass(frozen=True)
class TableStats:
    """What a table holds, value by value in aggregate: the number of distinct
    series (tag sets with at least one row) and each field column's FieldStats."""

    series: int
    fields: dict[str, FieldStats]


@dataclass
class Batch:
    """Whole records of one format, cut from a data file by the C core."""

    data: memoryview
    rows: int
    values: int

    @property
    def nbytes(self) -> int:
        return len(self.data)
