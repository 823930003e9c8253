"""Tests of queries on imported data (phases 3-5 on tests/data/own/ref_small.lp): the import,
the generic queries drawn on it, and a target loaded with the import's loadable view.

The load is a stand-in until the data file written from an import (h-stored's writer) is
on main: the view's rows are rendered here, in Python from the Parquet files, in the data
file's CSV layout (measurement,time,tags...,fields...), and given to the target's own
create() and write(), as the loader gives them a batch. Replace it by load_into() of that
data file when it exists."""

from __future__ import annotations

import asyncio
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

from tsbench import queries
from tsbench.core.model import Batch
from tsbench.core.timeutil import format_time
from tsbench.data.stored import open_stored

from conftest import execute_on, run_cli

LP = pathlib.Path(__file__).parent / "data" / "own" / "ref_small.lp"


def imported(tmp_path_factory):
    """ref_small.lp imported with `tsbench import`, opened as a StoredDataset."""
    d = tmp_path_factory.mktemp("own") / "ref_small"
    run_cli("import", str(LP), "-o", str(d))
    return open_stored(d)


def generic_names() -> list[str]:
    return [n for n, qt in queries.CATALOG.items() if qt.family == "generic"]


def view_csv(ds) -> tuple[bytes, int, int]:
    """(CSV text, rows, values) of the view: rows with a time and a value of a view field."""
    out, rows, values = [], 0, 0
    for t in ds.tables:
        tab = pq.read_table(ds.parquet(t.name))
        times = tab.column("time").cast(pa.int64()).to_pylist()
        cols = {c: tab.column(c).to_pylist() for c in (*t.tags, *t.field_names)}
        for i, ns in enumerate(times):
            vals = [cols[f][i] for f in t.field_names]
            if ns is None or all(v is None for v in vals):
                continue
            tags = ["" if cols[k][i] is None else cols[k][i] for k in t.tags]
            cells = [t.name, format_time(ns), *tags, *("" if v is None else repr(v) for v in vals)]
            out.append(",".join(cells))
            rows += 1
            values += sum(v is not None for v in vals)
    return ("\n".join(out) + "\n").encode(), rows, values


def load_view(target: str, url: str, ds, options: dict | None = None) -> int:
    """The view's rows written into the target through its create() and write(); the row count."""
    from tsbench.load.connect import connect

    data, rows, values = view_csv(ds)

    async def go():
        async with connect(target, url, options or {}) as c:
            await c.target.create(ds.tables, "drop")
            await c.target.write(Batch(memoryview(data), rows, values))
            await c.target.flush()
            assert await c.target.count(ds.tables) == rows
    asyncio.run(go())
    return rows


class ViewFile:
    """What execute_on needs of a data file: its tables (the view's)."""

    def __init__(self, ds):
        self.ds = ds

    def tables(self):
        return self.ds.tables


def execute_view(target: str, url: str, ds, specs, reference, options: dict | None = None):
    return execute_on(target, url, ViewFile(ds), specs, reference, options, workers=2)
