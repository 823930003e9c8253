"""The reference engine (phase 5): the dataset loaded into DuckDB straight from
the simulator's columnar output (no text parsing), or an import's from its
Parquet files (queries/storedview.py), one table per measurement
(time TIMESTAMPTZ, tags, fields), and each query's expected answer from
shapes.sql() over it. The database is a file in a temporary folder of tsbench's
home, removed with the engine, and DuckDB keeps at most MEMORY_LIMIT of it in
memory: an in-memory database of DevOps-100 over a day took 1.9 GB of the run's
process, this one peaks near 0.6 GB while it is built."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref

import duckdb
import numpy as np
import pyarrow as pa

from tsbench.core import homedir
from tsbench.data.dataset import Dataset
from tsbench.data.native import Simulator
from tsbench.queries.base import QuerySpec, SqlSpelling, q
from tsbench.queries.shapes import scale_sql, sql

CHUNK = 1 << 19         # rows a fill hands over at once: its arrays and their Arrow copies are the build's peak
MEMORY_LIMIT = "256MB"     # DuckDB's buffer pool for the reference database


class Reference:
    def __init__(self, ds: Dataset):
        self.ds = ds
        folder = _scratch_dir()
        self.con = duckdb.connect(os.path.join(folder, "reference.duckdb"),
                                  config={"memory_limit": MEMORY_LIMIT, "temp_directory": folder})
        weakref.finalize(self, _remove, self.con, folder)
        self.con.execute("SET TimeZone = 'UTC'")
        self._answers: dict[str, list[tuple]] = {}
        self._load()

    def _load(self) -> None:
        if self.ds.stored:        # an import: its view, from its Parquet files
            from tsbench.queries.storedview import fill

            fill(self.con, self.ds)
            return
        ds, sch = self.ds, self.ds.schema
        sim = Simulator(ds.compiled, ds.spec.seed, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs, cache=None)
        width = max(sum(1 for f in se.fields if not f.hidden) for se in sch.series)
        tagvals = []                     # per series: array[entity, tag] of values
        for s, _ in enumerate(sch.series):
            n = len(sch.series_tags(s))
            tagvals.append(np.array([sim.tag_values(e, s) for e in range(ds.entities)], dtype=object)
                           .reshape(ds.entities, n))
        for s, se in enumerate(sch.series):
            cols = ["time TIMESTAMPTZ"] + [f"{q(t.key)} VARCHAR" for t in sch.series_tags(s)] + \
                   [f"{q(f.name)} {'BIGINT' if f.type == 'int' else 'DOUBLE'}" for f in se.fields if not f.hidden]
            self.con.execute(f"CREATE TABLE {q(se.name)} ({', '.join(cols)})")
        while True:
            r, c = sim.fill_columns(CHUNK, width)
            for s, se in enumerate(sch.series):
                sel = np.flatnonzero(c["series"] == s)
                if not len(sel):
                    continue
                ent, nt = c["entity"][sel], c["null_tag"][sel]
                arrays = {"time": pa.array(c["time"][sel], pa.timestamp("ns", tz="UTC")).cast(
                    pa.timestamp("us", tz="UTC"))}
                for k, t in enumerate(sch.series_tags(s)):
                    vals = tagvals[s][ent, k]
                    arrays[t.key] = pa.array(vals, pa.string(), mask=(nt == k))
                for j, f in enumerate(f for f in se.fields if not f.hidden):
                    v = c["values"][sel, j]
                    nan = np.isnan(v)
                    if f.type == "int":
                        arrays[f.name] = pa.array(np.where(nan, 0, v).astype(np.int64), mask=nan)
                    else:
                        arrays[f.name] = pa.array(v, pa.float64(), mask=nan)
                chunk = pa.table(arrays)
                self.con.register("chunk_in", chunk)
                self.con.execute(f"INSERT INTO {q(se.name)} SELECT * FROM chunk_in")
                self.con.unregister("chunk_in")
            if r.done:
                break

    def sql(self, spec: QuerySpec) -> str:
        return reference_sql(spec)

    def expected(self, spec: QuerySpec) -> list[tuple]:
        """The reference answer; kept, so that the cells of a run that draw the same
        queries compute each answer once."""
        q = self.sql(spec)
        got = self._answers.get(q)
        if got is None:
            got = self._answers[q] = self.answer(spec)
        return got

    def answer(self, spec: QuerySpec) -> list[tuple]:
        """The reference answer computed now, not kept (for a caller that keeps answers itself)."""
        return [tuple(r) for r in self.con.execute(self.sql(spec)).fetchall()]

    def scales(self, spec: QuerySpec) -> list[tuple]:
        """A summed aggregate's n and sum|x| per answer row and field (shapes.scale_sql), kept
        like answers: what compare.py bounds its rounding error by."""
        q = reference_scale_sql(spec)
        got = self._answers.get(q)
        if got is None:
            got = self._answers[q] = self.scale_answer(spec)
        return got

    def scale_answer(self, spec: QuerySpec) -> list[tuple]:
        return [tuple(r) for r in self.con.execute(reference_scale_sql(spec)).fetchall()]


def _scratch_dir() -> str:
    """A new folder for the reference database in tsbench's home (on disk, where /tmp
    may be memory)."""
    base = os.path.join(homedir.root(), "tmp")
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix="reference-", dir=base)


def _remove(con: duckdb.DuckDBPyConnection, folder: str) -> None:
    """Close the reference database, then remove its folder (when the engine is
    collected or the process ends)."""
    con.close()
    shutil.rmtree(folder, ignore_errors=True)     # a folder left behind is only scratch in tsbench's tmp


def reference_sql(spec: QuerySpec) -> str:
    """The SQL the reference engine answers a query with."""
    return sql(spec.params, SqlSpelling())


def reference_scale_sql(spec: QuerySpec) -> str:
    """The SQL of a summed aggregate's scales (n and sum|x| per row and field)."""
    return scale_sql(spec.params, SqlSpelling())
