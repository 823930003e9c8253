"""A target's data file from an import (phase 1 for a user's own data): the loadable view of a
StoredDataset (data/stored.py) written in the layout the C core writes for generated data
(csrc/formats.c), so the load phase's cutters, templates and verification take it unchanged,
with the manifest generate writes (its "spec": the import's describe(), its "stats": the view's).

    influx   measurement,tag=v,... field=v,field=vi <ns>\\n   tags in the table's order, a null or
             empty tag left out; ',', ' ', '=' and '\\' escaped (a measurement's '=' not);
             integers with the i suffix; a null field left out
    csv      measurement,time,tag values...,field values...\\n   time RFC 3339 UTC with the
             fraction's trailing zeros cut; a null is an empty unquoted value; a value holding
             a comma, quote or line break, or empty, is quoted (batches.csv_layout's columns)

Floats are the C core's shortest round-trip text (native.format_doubles, as formats.c), so a
value read back is the double written. The text is built a record batch at a time with
pyarrow.compute over the view's rows (DuckDB), never a row at a time."""

from __future__ import annotations

import contextlib
import hashlib
import json
import pathlib
import shutil
import tempfile
import time
from collections.abc import Iterator

import numpy as np

from tsbench import __version__
from tsbench.core.errors import UserError
from tsbench.core.model import Table
from tsbench.core.outfile import write_text
from tsbench.data.stored import StoredDataset, open_stored

FORMATS = ("influx", "csv")
BATCH_ROWS = 1 << 16


def _pa():
    import pyarrow as pa
    import pyarrow.compute as pc
    return pa, pc


def _influx_escape(arr, measurement: bool = False):
    _, pc = _pa()
    return pc.replace_substring_regex(arr, r"([, \\])" if measurement else r"([,= \\])", r"\\\1")


def _influx_name(name: str, measurement: bool = False) -> str:
    specials = ", \\" if measurement else ",= \\"
    return "".join("\\" + c if c in specials else c for c in name)


def _csv_quote_name(name: str) -> str:
    need = not name or any(c in name for c in ',"\n\r')
    return '"' + name.replace('"', '""') + '"' if need else name


def _csv_quote(arr):
    _, pc = _pa()
    need = pc.or_(pc.match_substring_regex(arr, r'[,"\r\n]'), pc.equal(pc.utf8_length(arr), 0))
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(arr, '"', '""'), '"', "")
    return pc.if_else(need, quoted, arr)


def _value_text(col, type_: str):
    """The text of each value of a field column (null where the value is null)."""
    pa, pc = _pa()
    if type_ == "int":
        return pc.cast(col, pa.string())
    from tsbench.data.native import format_doubles

    data, ends = format_doubles(col.fill_null(0.0).to_numpy(zero_copy_only=False))
    offsets = np.concatenate([[0], ends]).astype(np.int64)
    text = pa.LargeStringArray.from_buffers(len(col), pa.py_buffer(offsets), pa.py_buffer(data))
    return pc.if_else(pc.is_valid(col), text, pa.scalar(None, pa.large_string())).cast(pa.string())


def _csv_time(times):
    """RFC 3339 UTC of int64 ns, as formats.c's csv_stamp writes it."""
    pa, pc = _pa()
    t = times.to_numpy(zero_copy_only=False)
    secs = np.floor_divide(t, 1_000_000_000)
    frac = pa.array(t - secs * 1_000_000_000)
    whole = pc.strftime(pa.array(secs, pa.timestamp("s")), format="%Y-%m-%dT%H:%M:%S")
    digits = pc.utf8_rtrim(pc.utf8_lpad(pc.cast(frac, pa.string()), 9, "0"), "0")
    part = pc.if_else(pc.equal(frac, 0), "", pc.binary_join_element_wise(".", digits, ""))
    return pc.binary_join_element_wise(whole, part, "Z", "")


def _influx_lines(tb: Table, batch):
    pa, pc = _pa()
    n = batch.num_rows
    pieces = [pa.array([_influx_name(tb.name, True)] * n, pa.string())]
    for k in tb.tags:
        v = batch.column(k)
        piece = pc.binary_join_element_wise("," + _influx_name(k) + "=", _influx_escape(v), "")
        pieces.append(pc.if_else(pc.fill_null(pc.greater(pc.utf8_length(v), 0), False), piece, ""))
    fields = []
    for c in tb.fields:
        v = _value_text(batch.column(c.name), c.type)
        piece = pc.binary_join_element_wise("," + _influx_name(c.name) + "=", v, "i" if c.type == "int" else "", "")
        fields.append(pc.fill_null(piece, ""))
    joined = pc.binary_join_element_wise(*fields, "")
    pieces += [" ", pc.utf8_slice_codeunits(joined, 1), " ", pc.cast(batch.column("time"), pa.string()), "\n"]
    return pc.binary_join_element_wise(*pieces, "")


def _csv_lines(tb: Table, batch):
    pa, pc = _pa()
    n = batch.num_rows
    pieces = [pa.array([_csv_quote_name(tb.name) + ","] * n, pa.string()), _csv_time(batch.column("time"))]
    for k in tb.tags:
        v = batch.column(k)
        pieces += [",", pc.fill_null(_csv_quote(v), "")]
    for c in tb.fields:
        pieces += [",", pc.fill_null(_value_text(batch.column(c.name), c.type), "")]
    pieces.append("\n")
    return pc.binary_join_element_wise(*pieces, "")


def _text(lines) -> bytes:
    """The lines of a string array, one after another (no nulls)."""
    pa, _ = _pa()
    if lines.null_count:
        raise RuntimeError("storedfile: a line of text came out null")
    lines = lines.cast(pa.large_string())
    offsets = np.frombuffer(lines.buffers()[1], np.int64, len(lines) + 1, lines.offset * 8)
    return lines.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]]


def chunks(ds: StoredDataset, fmt: str) -> Iterator[tuple[bytes, int, int]]:
    """The data file's bytes a batch at a time, with the batch's rows and values; tables in
    the view's order, rows in the view's (the file's) order."""
    import duckdb

    if fmt not in FORMATS:
        raise UserError(f"an import is written as {' or '.join(FORMATS)}, not {fmt!r}")
    make = _influx_lines if fmt == "influx" else _csv_lines
    quoted = [t.name for t in ds.tables if fmt == "csv" and _csv_quote_name(t.name) != t.name]
    if quoted:
        raise UserError(f"measurement {quoted[0]!r}: a name with a comma, quote or line break cannot be a "
                        "table loaded from CSV (the CSV loaders read the name unquoted); rename it in the file")
    con = duckdb.connect()
    try:
        con.execute("SET threads TO 1")        # beside the load's own work on a small machine
        for tb in ds.tables:
            rel = con.sql(ds.view_sql(tb.name))
            reader = rel.to_arrow_reader(BATCH_ROWS) if hasattr(rel, "to_arrow_reader") else \
                rel.fetch_arrow_reader(BATCH_ROWS)       # DuckDB before 1.4
            for batch in reader:
                if batch.num_rows:
                    values = sum(batch.num_rows - batch.column(c.name).null_count for c in tb.fields)
                    yield _text(make(tb, batch)), batch.num_rows, values
    finally:
        con.close()


def manifest_stats(ds: StoredDataset) -> dict:
    """The manifest's "stats" of the view (valuestats.to_manifest's layout)."""
    return {name: {"series": f["series"], "fields": f["fields"]} for name, f in ds.figures.items()}


def write_datafile(ds: StoredDataset, fmt: str, path: str) -> dict:
    """Write the view in format fmt to path and its manifest to path.manifest.json; returns
    the manifest."""
    t0 = time.perf_counter()
    sha, rows, values, size = hashlib.sha256(), 0, 0, 0
    try:
        with open(path, "wb") as f:
            for data, r, v in chunks(ds, fmt):
                f.write(data)
                sha.update(data)
                rows, values, size = rows + r, values + v, size + len(data)
    except OSError as exc:
        raise UserError(f"-o {path}: {exc.strerror}") from None
    if (rows, values) != (ds.tables.rows, ds.tables.values):
        raise RuntimeError(f"{path}: wrote {rows} rows, {values} values; the view has "
                           f"{ds.tables.rows}, {ds.tables.values}")
    manifest = {"tsbench": __version__, "spec": ds.describe(), "format": fmt, "compression": "none",
                "group": 0, "groups": 1, "rows": rows, "values": values, "bytes": size, "file_bytes": size,
                "sha256": sha.hexdigest(), "stats": manifest_stats(ds),
                "timing": {"seconds": round(time.perf_counter() - t0, 3), "processes": 1}}
    write_text(path + ".manifest.json", "--output", json.dumps(manifest, indent=2) + "\n")
    return manifest


@contextlib.contextmanager
def temporary_datafile(folder: str, fmt: str):
    """An import folder's data written in format fmt into a temporary folder (what `load DIR`
    and `execute --load DIR` load); the path, the folder removed after the block."""
    ds = open_stored(folder)
    scratch = tempfile.mkdtemp(prefix="tsbench-")
    try:
        path = str(pathlib.Path(scratch) / f"data.{fmt}")
        write_datafile(ds, fmt, path)
        yield path
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
