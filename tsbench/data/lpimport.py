"""Importing a line-protocol file as a stored dataset (phase 1 of a user's own data): the file
is read once, in chunks (tsbench.data.lpscan); each batch's schema is gathered (a line that
does not parse or a field whose type changes fails the import, and nothing is left) and its
points become columns, one Parquet file per measurement:

    DIR/<measurement>.parquet   time timestamp[ns] (null: the line had none), every tag a
                                string (dictionary-encoded), every field typed (float64,
                                int64, uint64, string, bool); a field or tag a line lacks is
                                null. Rows in file order; a row group per ROW_GROUP rows or so.
    DIR/import.json             the schema, the source (path, size, sha256, lines), the files,
                                the rows written per measurement (checked against the scan's
                                points), the scanner's errors.

Columns are built with numpy from the scanner's arrays, a shape (measurement, fields and types
in order) or a measurement at a time, never a row at a time. Tags are decoded once a series:
a measurement gives each series an id and each tag value a code the first time it is seen
(up to SERIES_KEPT series kept past a row group), and a row group's tag column is those codes
with the values it uses as its dictionary. The folder is written under a temporary name and
renamed when complete: a failed import leaves nothing.
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
SERIES_KEPT = 1 << 16   # series a measurement keeps its tags' codes for past a row group (memory bound)
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
    return values.take(_arrow(pos, pos >= 0, pa.int64()))


def _arrow(values: np.ndarray, valid: np.ndarray | None, typ):
    """An Arrow array of typ over a numpy array (null where valid is False), built from buffers
    (pyarrow's array() over numpy would import pandas)."""
    import pyarrow as pa
    bits = None
    if valid is not None and not valid.all():
        bits = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if values.dtype == bool:
        return pa.Array.from_buffers(typ, len(values), [bits, pa.py_buffer(np.packbits(values, bitorder="little"))])
    return pa.Array.from_buffers(typ, len(values), [bits, pa.py_buffer(np.ascontiguousarray(values))])


@dataclass
class _Tag:
    """One tag key of a measurement: its distinct values in order of appearance (their bytes as
    written, UTF-8 or not), and each series' code into them (-1: the series lacks the tag)."""
    count: int = 0                                     # distinct values
    chunks: list = field(default_factory=list)         # the values, as Arrow binary arrays
    values: object = None                              # the chunks combined (None: out of date)
    per_series: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))

    def known(self):
        import pyarrow as pa
        if self.values is None:
            self.values = pa.concat_arrays(self.chunks) if self.chunks else pa.nulls(0, pa.binary())
            self.chunks = [self.values]
        return self.values

    def dictionary(self):
        import pyarrow as pa
        return self.known().view(pa.string())

    def code(self, got) -> np.ndarray:
        """The codes of got (an Arrow string array; null: no value, code -1), the values not
        seen before added (vectorized: no Python step a value)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        raw = got.view(pa.binary())
        idx = pc.index_in(raw, value_set=self.known())
        missing = pc.and_(idx.is_null(), raw.is_valid())
        if pc.any(missing).as_py():
            fresh = pc.unique(raw.filter(missing))            # in order of first appearance
            self.chunks.append(fresh)
            self.values, self.count = None, self.count + len(fresh)
            idx = pc.index_in(raw, value_set=self.known())
        codes = np.frombuffer(idx.buffers()[1], np.int32, len(idx), idx.offset * 4).copy()
        if idx.null_count:                                    # (fill_null(-1) would import pandas)
            codes[~idx.is_valid().to_numpy(zero_copy_only=False)] = -1
        return codes


@dataclass
class _Table:
    """One measurement's output: its current schema and Parquet writer, the files written so
    far (a new one each time a tag or field appears), column names, its series (tags decoded
    once a series), rows waiting."""
    name: str
    file: str
    schema: object = None
    writer: object = None
    known: tuple = (-1, -1)                            # (tags, fields) the schema was made for
    parts: list = field(default_factory=list)
    tag_names: dict = field(default_factory=dict)     # key hash -> tag name
    field_names: dict = field(default_factory=dict)   # key hash -> field name
    keys: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))   # series hashes, sorted
    ids: np.ndarray = field(default_factory=lambda: np.empty(0, np.int32))     # their series ids
    tags: dict = field(default_factory=dict)          # tag name -> _Tag
    types: dict = field(default_factory=dict)         # field name -> _field_type
    shape_names: dict = field(default_factory=dict)   # line shape hash -> its field names in order
    pending: list = field(default_factory=list)       # (rows, time, has_time, series ids, field arrays)
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

    def table(self, key, name: str) -> _Table:
        """The output of measurement `name` (key: how the caller knows it), made when first asked."""
        t = self.tables.get(key)
        if t is None:
            t = self.tables[key] = _Table(name, file_name(name))
            if len({x.file for x in self.tables.values()}) != len(self.tables):
                raise UserError(f"measurement {name!r}: its file name {t.file} is another's; rename one")
        return t

    def new_part(self, t: _Table, m: dict, known: tuple = (-1, -1)) -> None:
        """From here t's rows go to a new file of the columns of m (lpscan's measurement dict:
        tags, fields and types); the parts are merged at close()."""
        self._flush(t)
        if t.writer is not None:
            t.writer.close()
            t.writer = None
        t.schema, t.known = arrow_schema(t.name, m), known
        path = self.folder / (t.file if not t.parts else f".{t.file}.part{len(t.parts)}")
        t.parts.append(path)
        t.writer = _writer(path, t.schema)

    def _table(self, scan: lpscan.SchemaScan, h: int) -> _Table:
        m = scan.meas[h]
        t = self.table(h, m.name)
        if (len(m.tags), len(m.fields)) != t.known:      # a new tag or field: a new file from here
            self.new_part(t, _current(m), (len(m.tags), len(m.fields)))
        return t

    def feed(self, scan: lpscan.SchemaScan, buf, batch: native.LpBatch) -> None:
        """Add one scanned batch (buf: the buffer its spans point into, from its start)."""
        self.failed = self.failed or bool(scan.errors or scan.counts["errors"])
        a = batch.arrays
        if not batch.points or self.failed:
            return
        bufnp = np.frombuffer(buf, np.uint8)
        meas = a["meas"]
        hashes = np.unique(meas)
        for h in hashes.tolist():
            pts = np.flatnonzero(meas == np.uint64(h)) if len(hashes) > 1 else np.arange(len(meas))
            t = self._table(scan, h)
            ids = self._series(t, buf, bufnp, a, pts)
            fields = self._fields(t, buf, bufnp, a, pts)
            self._add(t, (len(pts), a["time"][pts], a["has_time"][pts] != 0, ids, fields))

    def add_columns(self, t: _Table, times: np.ndarray, has_time: np.ndarray, keys: np.ndarray,
                    tags: dict, fields: dict) -> None:
        """Rows given as columns (the CSV importer): keys each row's series hash, tags each tag's
        values (Arrow strings), fields Arrow arrays; tags coded once a series, as for scanned lines."""
        ids = self._series_of(t, keys, lambda rows: {k: col.take(rows) for k, col in tags.items()})
        self._add(t, (len(times), times, has_time, ids, fields))

    def _series(self, t: _Table, buf, bufnp, a: dict, pts: np.ndarray) -> np.ndarray:
        """Each point's series id in its measurement; the tags of series not seen before are
        decoded (from one point each) and coded."""
        return self._series_of(t, a["series"][pts], lambda rows: self._tag_values(t, buf, bufnp, a, pts[rows]))

    def _series_of(self, t: _Table, s: np.ndarray, values_of) -> np.ndarray:
        """The series ids of the series hashes s; values_of(rows) gives the tag values of the rows
        (indices into s) that first show a series not seen before."""
        pos = np.minimum(np.searchsorted(t.keys, s), max(len(t.keys) - 1, 0))
        if len(t.keys) and (t.keys[pos] == s).all():
            return t.ids[pos]
        known = np.isin(s, t.keys)
        new, first = np.unique(s[~known], return_index=True)
        order = np.argsort(first, kind="stable")             # ids in order of appearance
        reps = np.flatnonzero(~known)[first[order]]
        base = len(t.ids)
        keys = np.concatenate([t.keys, new[order]])
        ids = np.concatenate([t.ids, np.arange(base, base + len(new), dtype=np.int32)])
        sort = np.argsort(keys, kind="stable")
        t.keys, t.ids = keys[sort], ids[sort]
        self._code_tags(t, values_of(reps), base, len(new))
        return t.ids[np.searchsorted(t.keys, s)]

    @staticmethod
    def _code_tags(t: _Table, values: dict, base: int, n: int) -> None:
        """Codes of the new series base.. base+n for every tag key."""
        for name in values.keys() - t.tags.keys():
            t.tags[name] = _Tag(per_series=np.full(base, -1, np.int32))
        for name, tag in t.tags.items():
            got = values.get(name)
            codes = tag.code(got) if got is not None else np.full(n, -1, np.int32)
            tag.per_series = np.concatenate([tag.per_series, codes])

    @staticmethod
    def _names(known: dict, keys: np.ndarray, spans, buf) -> None:
        """Learn the names of key hashes not seen before (one Python step per distinct key)."""
        new, first = np.unique(keys, return_index=True)
        for kh, j in zip(new.tolist(), first.tolist()):
            if kh not in known:
                off, kl = spans(j)
                known[kh] = lpscan.unescape(bytes(buf[off:off + kl]), lpscan.NAME_ESCAPES)

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
        shape = a["shape"][pts]
        shapes, first = np.unique(shape, return_index=True)
        parts: dict[str, list] = {}
        for s, f0 in zip(shapes.tolist(), first.tolist()):
            rows = np.flatnonzero(shape == np.uint64(s)) if len(shapes) > 1 else None
            names = t.shape_names.get(s)
            if names is None:
                names = t.shape_names[s] = self._shape_names(t, buf, a, int(fstart[f0]), int(a["field_end"][pts[f0]]))
            for k, name in enumerate(names):
                parts.setdefault(name, []).append((rows, (fstart if rows is None else fstart[rows]) + k))
        return {name: self._column(t, name, bufnp, a, len(pts), p) for name, p in parts.items()}

    def _shape_names(self, t: _Table, buf, a: dict, lo: int, hi: int) -> tuple:
        """The field names of a line shape, in the line's order (fields lo..hi of one point)."""
        for j in range(lo, hi):
            self._names(t.field_names, a["field_key"][j:j + 1],
                        lambda _j, j=j: (int(a["field_off"][j]), int(a["field_klen"][j])), buf)
        return tuple(t.field_names[int(k)] for k in a["field_key"][lo:hi].tolist())

    def _column(self, t: _Table, name: str, bufnp, a: dict, n: int, parts: list):
        typ, view = t.types.get(name) or t.types.setdefault(name, _field_type(t.schema.field(name).type))
        if len(parts) == 1 and parts[0][0] is None:       # every point has the field: no scatter
            fidx, rows = parts[0][1], None
        else:
            rows = np.concatenate([np.arange(n) if r is None else r for r, _ in parts])
            fidx = np.concatenate([f for _, f in parts])
        if view is str:
            vals = _gather(bufnp, a["field_voff"][fidx], a["field_vlen"][fidx], _STRING_ESCAPE)
            return vals if rows is None else _placed(n, rows, vals)
        bits = a["field_value"][fidx]
        vals = bits != 0 if view is bool else bits.view(view)
        if rows is None:
            return _arrow(vals, None, typ)
        full = np.zeros(n, vals.dtype)
        full[rows] = vals
        valid = np.zeros(n, bool)
        valid[rows] = True
        return _arrow(full, valid, typ)

    def _add(self, t: _Table, piece: tuple) -> None:
        t.pending.append(piece)
        t.pending_rows += piece[0]
        t.rows += piece[0]
        if t.pending_rows >= ROW_GROUP:
            self._flush(t)

    @staticmethod
    def _flush(t: _Table) -> None:
        """The rows waiting written as one row group: each tag column a dictionary of the
        values its rows use, indices from the series' codes."""
        import pyarrow as pa
        if not t.pending_rows:
            return
        ids = np.concatenate([p[3] for p in t.pending])
        cols = []
        for f in t.schema:
            if f.name == "time":
                cols.append(_arrow(np.concatenate([p[1] for p in t.pending]),
                                   np.concatenate([p[2] for p in t.pending]), pa.int64()).view(f.type))
            elif pa.types.is_dictionary(f.type):
                cols.append(_tag_column(t.tags[f.name], ids) if f.name in t.tags else pa.nulls(len(ids), f.type))
            else:
                cols.append(pa.chunked_array([p[4].get(f.name) or pa.nulls(p[0], f.type) for p in t.pending], f.type))
        t.writer.write_table(pa.Table.from_arrays(cols, schema=t.schema), row_group_size=t.pending_rows)
        t.pending, t.pending_rows = [], 0
        if len(t.ids) > SERIES_KEPT:       # many series: their codes dropped (decoded again when seen)
            t.keys, t.ids, t.tags = t.keys[:0], t.ids[:0], {}

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


def _field_type(typ) -> tuple:
    """A field's Arrow type and how its value bits are read: str (a span of the buffer), bool,
    or the numpy type the int64 bits are viewed as."""
    import pyarrow as pa
    return typ, {pa.string(): str, pa.bool_(): bool, pa.float64(): np.float64, pa.uint64(): np.uint64}.get(typ, np.int64)


def _tag_column(tag: _Tag, ids: np.ndarray):
    """A tag's dictionary column for the points of series ids: the dictionary holds the values
    these points use (in order of first appearance in the file), null where a series lacks it."""
    import pyarrow as pa
    codes = tag.per_series[ids]
    present = codes >= 0
    everywhere = bool(present.all())
    used = np.zeros(tag.count, bool)
    used[codes if everywhere else codes[present]] = True
    values = tag.dictionary()
    if used.all():                         # the codes index the whole dictionary
        indices = codes if everywhere else np.where(present, codes, 0)
    else:
        remap = (np.cumsum(used) - 1).astype(np.int32)
        indices = np.where(present, remap[codes], 0).astype(np.int32)
        values = values.take(_arrow(np.flatnonzero(used), None, pa.int64()))
    return pa.DictionaryArray.from_arrays(_arrow(indices, present, pa.int32()), values)


def _writer(path: Path, schema):
    """A Parquet writer of schema: zstd; dictionary encoding for the tag columns only (a field's
    values seldom repeat: trying a dictionary first costs time and bytes), floats split by
    byte stream and integers and times delta-coded (smaller and cheaper to compress)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    tags = [f.name for f in schema if pa.types.is_dictionary(f.type)]
    encoding = {f.name: "BYTE_STREAM_SPLIT" if pa.types.is_floating(f.type) else "DELTA_BINARY_PACKED"
                for f in schema if pa.types.is_floating(f.type) or f.type in (pa.int64(), pa.timestamp("ns"))}
    return pq.ParquetWriter(str(path), schema, compression="zstd", use_dictionary=tags,
                            column_encoding=encoding or None)


def _merge(parts: list[Path], schema, out: Path) -> None:
    """One Parquet file of schema from parts whose columns are subsets of it (absent: null),
    row group by row group (memory bounded by one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    merged = out.with_name(f".{out.name}.merged")
    with _writer(merged, schema) as writer:
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


def import_file(path: str, output: str, precision: str, progress=lambda done: None,
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
    except BaseException:               # re-raised: only the half-built folder is removed first
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest
