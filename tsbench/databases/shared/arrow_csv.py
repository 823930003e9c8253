"""Arrow tables from CSV batches (phase 2), for the targets that insert Arrow
(DuckDB, ClickHouse, IoTDB): the C core splits a batch by measurement, then
pyarrow's CSV reader turns each part into a typed table (time, tags as strings,
fields as float64/int64). No Python per row."""

from __future__ import annotations

from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv

from tsbench.core.errors import Fatal
from tsbench.core.model import Table, Tables
from tsbench.data import native
from tsbench.data.batches import csv_layout

ARROW_TYPES = {"float": pa.float64(), "int": pa.int64()}


class CsvToArrow:
    """The split layout and each measurement's read and convert options, made once per load."""

    def __init__(self, tables: Tables, time_unit: str, what: str):
        self.tables: list[Table] = list(tables)
        self.layout = csv_layout(tables)
        self.what = what                   # names the target in an error: "duckdb"
        self.options = [self._options(t, time_unit) for t in self.tables]

    @staticmethod
    def _options(t: Table, time_unit: str) -> tuple[pacsv.ReadOptions, pacsv.ConvertOptions]:
        names = ["time", *t.tags, *t.field_names]
        types = {"time": pa.timestamp(time_unit, tz="UTC"), **{k: pa.string() for k in t.tags},
                 **{f.name: ARROW_TYPES[f.type] for f in t.fields}}
        return (pacsv.ReadOptions(column_names=names, use_threads=False),
                pacsv.ConvertOptions(column_types=types, strings_can_be_null=True))

    def parts(self, data) -> Iterator[tuple[Table, pa.Table]]:
        """(measurement, its rows as Arrow) for each measurement the batch holds; a part
        pyarrow cannot read is Fatal, naming the table."""
        buf, parts = native.split_csv(self.layout, data)
        view = memoryview(buf)
        for t, part, (ropts, copts) in zip(self.tables, parts, self.options):
            if part is None:
                continue
            off, n, _, _ = part
            try:
                arrow = pacsv.read_csv(pa.BufferReader(pa.py_buffer(view[off: off + n])), read_options=ropts,
                                       convert_options=copts)
            except pa.ArrowInvalid as exc:
                raise Fatal(f"{self.what}: table {t.name}: {' '.join(str(exc).split())}") from None
            yield t, arrow
