"""Importing a line-protocol file as a stored dataset (phase 1 of a user's own data): the file's
schema is gathered first (tsbench.data.lpscan: a line that does not parse or a field whose type
changes stops the import before anything is written), then the file is scanned again in chunks
and each batch's points become columns, one Parquet file per measurement:

    DIR/<measurement>.parquet   time timestamp[ns] (null: the line had none), every tag a
                                string (dictionary-encoded in Parquet), every field typed
                                (float64, int64, uint64, string, bool); a field or tag a line
                                lacks is null. Rows in file order; a row group per ROW_GROUP rows.
    DIR/import.json             the schema, the source (path, size, sha256, lines), the files,
                                the rows written per measurement (checked against the scan's
                                points), the scanner's errors.

Columns are built with numpy from the scanner's arrays, a shape (measurement, fields and types
in order) or a measurement at a time, never a row at a time. The folder is written under a
temporary name and renamed when complete: a failed import leaves nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tsbench.core.errors import UserError
from tsbench.data import lpscan, native

ROW_GROUP = 1 << 16
_TAG_ESCAPE = r'\\([,= ])'
_STRING_ESCAPE = r'\\(["\\])'
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}")


def file_name(measurement: str) -> str:
    """The Parquet file of a measurement: its name when plain, else a cleaned name and a hash."""
    if _SAFE_NAME.fullmatch(measurement):
        return measurement + ".parquet"
    clean = re.sub(r"[^A-Za-z0-9_.-]", "_", measurement)[:60].lstrip(".")
    return f"{clean}-{hashlib.sha256(measurement.encode()).hexdigest()[:12]}.parquet"


def tag_type():
    """The Arrow type of a tag column: strings, dictionary-encoded (one value per series)."""
    import pyarrow as pa
    return pa.dictionary(pa.int32(), pa.string())


def arrow_schema(name: str, m: dict):
    """The Arrow schema of one measurement of an lpscan schema (columns: time, tags, fields)."""
    import pyarrow as pa
    types = {"float": pa.float64(), "integer": pa.int64(), "unsigned": pa.uint64(), "string": pa.string(),
             "boolean": pa.bool_()}
    names = ["time", *m["tags"], *m["fields"]]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise UserError(f"measurement {name!r}: {', '.join(map(repr, dup))} is both a tag and a field "
                        "(or named time); the import cannot make it a column")
    return pa.schema([pa.field("time", pa.timestamp("ns")), *(pa.field(t, tag_type()) for t in m["tags"]),
                      *(pa.field(f, types[d["type"]]) for f, d in m["fields"].items())])


def _gather(bufnp: np.ndarray, offs: np.ndarray, lens: np.ndarray, pattern: str):
    """A pyarrow string array of the spans buf[off:off+len], unescaped by pattern (vectorized)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    lens = lens.astype(np.int64)
    ends = np.cumsum(lens)
    idx = np.repeat(offs.astype(np.int64) - (ends - lens), lens) + np.arange(int(ends[-1]) if len(ends) else 0)
    data = bufnp[idx]
    offsets = np.concatenate([[0], ends]).astype(np.int64)
    arr = pa.LargeStringArray.from_buffers(len(lens), pa.py_buffer(offsets), pa.py_buffer(data.tobytes()))
    if np.any(data == 0x5C):
        arr = pc.replace_substring_regex(arr, pattern, r"\1")
    return arr.cast(pa.string())


def _placed(n: int, rows: np.ndarray, values):
    """values (a pyarrow array, one per row in rows) spread over n rows, null elsewhere."""
    import pyarrow as pa
    pos = np.full(n, -1, np.int64)
    pos[rows] = np.arange(len(rows))
    return values.take(pa.array(pos, mask=pos < 0))


@dataclass
class _Table:
    """One measurement's output: its current schema and Parquet writer, the files written so
    far (a new one each time a tag or field appears), column names, rows waiting."""
    name: str
    file: str
    schema: object = None
    writer: object = None
    known: tuple = (-1, -1)                            # (tags, fields) the schema was made for
    parts: list = field(default_factory=list)
    tag_names: dict = field(default_factory=dict)     # key hash -> tag name
    field_names: dict = field(default_factory=dict)   # key hash -> field name
    pending: list = field(default_factory=list)
    pending_rows: int = 0
    rows: int = 0


def _current(m) -> dict:
    """A measurement of a SchemaScan in progress as lpscan's schema dict has it (names, types)."""
    return {"tags": {name: {} for name in sorted(t[0] for t in m.tags.values())},
            "fields": {f[0]: {"type": f[1]} for f in sorted(m.fields.values(), key=lambda f: f[0])}}


class Importer:
    """Writes the batches of a file being scanned into per-measurement Parquet files under
    folder (the sink of lpscan.scan_stream); nothing more once the scan has found an error."""

    def __init__(self, folder: Path):
        import pyarrow.parquet as pq
        self.folder = folder
        self.tables: dict[int, _Table] = {}
        self.failed = False
        self._pq = pq

    def _table(self, scan: lpscan.SchemaScan, h: int) -> _Table:
        t = self.tables.get(h)
        if t is None:
            name = scan.meas[h].name
            t = self.tables[h] = _Table(name, file_name(name))
            if len({x.file for x in self.tables.values()}) != len(self.tables):
                raise UserError(f"measurement {name!r}: its file name {t.file} is another's; rename one")
        m = scan.meas[h]
        if (len(m.tags), len(m.fields)) != t.known:      # a new tag or field: a new file from here
            self._flush(t)
            if t.writer is not None:
                t.writer.close()
                t.writer = None
            t.schema, t.known = arrow_schema(t.name, _current(m)), (len(m.tags), len(m.fields))
            path = self.folder / (t.file if not t.parts else f".{t.file}.part{len(t.parts)}")
            t.parts.append(path)
            t.writer = self._pq.ParquetWriter(str(path), t.schema, compression="zstd")
        return t

    def feed(self, scan: lpscan.SchemaScan, buf, batch: native.LpBatch) -> None:
        """Add one scanned batch (buf: the buffer its spans point into, from its start)."""
        self.failed = self.failed or bool(scan.errors or scan.counts["errors"])
        a = batch.arrays
        if not batch.points or self.failed:
            return
        bufnp = np.frombuffer(buf, np.uint8)
        meas = a["meas"]
        for h in np.unique(meas).tolist():
            pts = np.flatnonzero(meas == np.uint64(h))
            t = self._table(scan, h)
            cols = {"time": self._times(a, pts)}
            cols.update(self._tags(t, buf, bufnp, a, pts))
            cols.update(self._fields(t, buf, bufnp, a, pts))
            self._add(t, cols, len(pts))

    @staticmethod
    def _times(a: dict, pts: np.ndarray):
        import pyarrow as pa
        return pa.array(a["time"][pts], mask=a["has_time"][pts] == 0, type=pa.timestamp("ns"))

    @staticmethod
    def _names(known: dict, keys: np.ndarray, spans, buf) -> None:
        """Learn the names of key hashes not seen before (one Python step per distinct key)."""
        new, first = np.unique(keys, return_index=True)
        for kh, j in zip(new.tolist(), first.tolist()):
            if kh not in known:
                off, kl = spans(j)
                known[kh] = lpscan.unescape(bytes(buf[off:off + kl]), lpscan.NAME_ESCAPES)

    def _tags(self, t: _Table, buf, bufnp, a: dict, pts: np.ndarray) -> dict:
        """The tag columns: read from one point per series (a series is its tag set), then
        taken for every point of the series."""
        import pyarrow as pa
        _, rep, inv = np.unique(a["series"][pts], return_index=True, return_inverse=True)
        cols = self._tag_values(t, buf, bufnp, a, pts[rep])
        inv = inv.reshape(-1).astype(np.int32)
        out = {}
        for k, v in cols.items():
            absent = v.is_null().to_numpy(zero_copy_only=False)[inv]
            out[k] = pa.DictionaryArray.from_arrays(pa.array(inv, mask=absent if absent.any() else None),
                                                   v.fill_null(""))
        return out

    def _tag_values(self, t: _Table, buf, bufnp, a: dict, pts: np.ndarray) -> dict:
        ends = a["tag_end"][pts].astype(np.int64)
        starts = np.where(pts > 0, a["tag_end"][np.maximum(pts - 1, 0)], 0).astype(np.int64)
        per = ends - starts
        idx = np.repeat(starts - np.cumsum(per) + per, per) + np.arange(int(per.sum()))
        rows = np.repeat(np.arange(len(pts)), per)
        keys = a["tag_key"][idx]
        self._names(t.tag_names, keys, lambda j: (int(a["tag_off"][idx[j]]), int(a["tag_klen"][idx[j]])), buf)
        out = {}
        for kh in np.unique(keys).tolist():
            sel = idx[keys == np.uint64(kh)]
            voff = a["tag_off"][sel].astype(np.int64) + a["tag_klen"][sel] + 1
            vals = _gather(bufnp, voff, a["tag_vlen"][sel], _TAG_ESCAPE)
            out[t.tag_names[kh]] = _placed(len(pts), rows[keys == np.uint64(kh)], vals)
        return out

    def _fields(self, t: _Table, buf, bufnp, a: dict, pts: np.ndarray) -> dict:
        """Each field's column, built one line shape at a time (the fields' places in a line)."""
        fstart = np.where(pts > 0, a["field_end"][np.maximum(pts - 1, 0)], 0).astype(np.int64)
        shapes, first = np.unique(a["shape"][pts], return_index=True)
        parts: dict[str, list] = {}
        for s, f0 in zip(shapes.tolist(), first.tolist()):
            rows = np.flatnonzero(a["shape"][pts] == np.uint64(s)) if len(shapes) > 1 else np.arange(len(pts))
            lo = int(fstart[f0])
            for k in range(int(a["field_end"][pts[f0]]) - lo):
                self._names(t.field_names, a["field_key"][lo + k:lo + k + 1],
                            lambda _j, j=lo + k: (int(a["field_off"][j]), int(a["field_klen"][j])), buf)
                name = t.field_names[int(a["field_key"][lo + k])]
                parts.setdefault(name, []).append((rows, fstart[rows] + k))
        return {name: self._column(t, name, bufnp, a, len(pts), p) for name, p in parts.items()}

    def _column(self, t: _Table, name: str, bufnp, a: dict, n: int, parts: list):
        import pyarrow as pa
        rows = np.concatenate([r for r, _ in parts])
        fidx = np.concatenate([f for _, f in parts])
        typ = t.schema.field(name).type
        if typ == pa.string():
            return _placed(n, rows, _gather(bufnp, a["field_voff"][fidx], a["field_vlen"][fidx], _STRING_ESCAPE))
        bits = a["field_value"][fidx]
        vals = {pa.float64(): bits.view(np.float64), pa.uint64(): bits.view(np.uint64),
                pa.bool_(): bits != 0}.get(typ, bits)
        full = np.zeros(n, vals.dtype)
        full[rows] = vals
        mask = np.ones(n, bool)
        mask[rows] = False
        return pa.array(full, mask=mask, type=typ)

    def _add(self, t: _Table, cols: dict, n: int) -> None:
        import pyarrow as pa
        arrays = [cols.get(f.name) if f.name in cols else pa.nulls(n, f.type) for f in t.schema]
        t.pending.append(pa.Table.from_arrays(arrays, schema=t.schema))
        t.pending_rows += n
        t.rows += n
        if t.pending_rows >= ROW_GROUP:
            self._flush(t)

    @staticmethod
    def _flush(t: _Table) -> None:
        import pyarrow as pa
        if t.pending_rows:
            t.writer.write_table(pa.concat_tables(t.pending), row_group_size=max(t.pending_rows, 1))
        t.pending, t.pending_rows = [], 0

    def close(self) -> dict[str, int]:
        """Flush and close every file, a measurement's parts merged into its file: rows
        written per measurement."""
        for t in self.tables.values():
            if t.writer is None:
                continue
            self._flush(t)
            t.writer.close()
            if len(t.parts) > 1 and not self.failed:
                _merge(t.parts, t.schema, self.folder / t.file)
        return {t.name: t.rows for t in sorted(self.tables.values(), key=lambda t: t.name)}


def _merge(parts: list[Path], schema, out: Path) -> None:
    """One Parquet file of schema from parts whose columns are subsets of it (absent: null),
    row group by row group (memory bounded by one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    merged = out.with_name(f".{out.name}.merged")
    with pq.ParquetWriter(str(merged), schema, compression="zstd") as writer:
        for part in parts:
            pf = pq.ParquetFile(str(part))
            for g in range(pf.num_row_groups):
                got = pf.read_row_group(g)
                cols = [got.column(f.name) if f.name in got.column_names else pa.nulls(len(got), f.type)
                        for f in schema]
                writer.write_table(pa.Table.from_arrays(cols, schema=schema), row_group_size=max(len(got), 1))
    for part in parts:
        part.unlink()
    merged.rename(out)


class _Hashing:
    """A binary file read through readinto, its bytes hashed and counted on the way."""

    def __init__(self, f, progress):
        self.f, self.progress, self.sha, self.size = f, progress, hashlib.sha256(), 0

    def readinto(self, view) -> int:
        n = self.f.readinto(view)
        with memoryview(view) as v:
            self.sha.update(v[:n])
        self.size += n
        self.progress(self.size)
        return n


class ImportCountError(RuntimeError):
    """Rows written differ from the scan's points: a bug, never the data's fault."""


def _scan_into(path: str, tmp: Path, precision: str, progress, chunk_bytes: int) -> tuple[dict, dict, dict]:
    """Read the file once: its schema, the rows written per measurement, source facts."""
    importer = Importer(tmp)
    with open(path, "rb") as f:
        source = _Hashing(f, progress)
        try:
            schema = lpscan.scan_stream(source, precision, chunk_bytes, sink=importer.feed)
        finally:
            rows = importer.close()
    if schema["errors"]:
        raise lpscan.LpScanError(str(path), schema)
    points = {name: m["points"] for name, m in sorted(schema["measurements"].items())}
    if rows != points:
        raise ImportCountError(f"import: rows {rows} against the scan's points {points}")
    return schema, rows, {"size": source.size, "sha256": source.sha.hexdigest(), "lines": schema["counts"]["lines"]}


def import_file(path: str, output: str, precision: str = "ns", progress=lambda done: None,
                chunk_bytes: int = lpscan.CHUNK_BYTES) -> dict:
    """Import a line-protocol file into the folder output (which must not exist), reading it
    once; returns the import.json written. LpScanError (FILE:LINE: reason) when a line does
    not parse or a field's type changes, and nothing is left. progress(bytes read)."""
    if precision not in native.PRECISIONS:
        raise UserError(f"unknown precision {precision!r} (one of {', '.join(native.PRECISIONS)})")
    return write_import(path, output, lambda tmp: _scan_into(path, tmp, precision, progress, chunk_bytes))


def write_import(path: str, output: str, scan_into) -> dict:
    """The import folder output (which must not exist) made by scan_into(temporary folder) ->
    (schema, rows per measurement, source facts), which writes the Parquet files; then
    import.json, and the folder renamed into place. Any format's import ends here."""
    out = Path(output)
    if out.exists():
        raise UserError(f"-o {output}: exists already (the import writes a new folder)")
    tmp = out.parent / f".{out.name}.importing-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        schema, rows, source = scan_into(tmp)
        manifest = {"format": "tsbench-import", "version": 1,
                    "source": {"path": str(path), **source},
                    "files": {name: file_name(name) for name in sorted(schema["measurements"])},
                    "layout": {"time": "timestamp[ns], null when the line had none", "tags": "dictionary<int32, string>",
                               "fields": {"float": "float64", "integer": "int64", "unsigned": "uint64",
                                          "string": "string", "boolean": "bool"}},
                    "rows": rows, "schema": schema, "errors": schema["errors"]}
        (tmp / "import.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest
