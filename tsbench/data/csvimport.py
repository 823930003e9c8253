"""Importing a CSV file as a stored dataset (phase 1 of a user's own data): the CSV twin of
data/lpimport.py. The file is read once, streaming, by pyarrow.csv in batches (every column
read as text, then cast column by column in C++: no Python step per row); a stated mapping
says which column is the time (and its unit), which columns are tags and the measurement's
name; every other column is a field, its type stated (--csv-types) or taken from the first
batch (integer, else float, else boolean, else string; all empty: float). An empty cell is
null. Each row is one line (a quoted value may not hold a line break).

The output is the line-protocol import's, written by the same pieces: DIR/<measurement>.parquet
with the same layout (time timestamp[ns], tags dictionary<int32, string> sorted, fields typed
and sorted), and DIR/import.json (lpimport.write_import) whose schema is gathered by the same
statistics (lpscan.SchemaScan: series, tag cardinality, fields' values and nulls, time range,
interval, out of order, duplicates), with "format": "csv" and the mapping under "csv".

A row that cannot be imported (no time or a bad one, a value that does not parse as its
column's type, a wrong number of cells) stops the import: CsvImportError, FILE:LINE: reason,
and nothing is left. The rows written are checked against the file's data lines.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from tsbench.core.errors import UserError
from tsbench.data import lpimport, lpscan

UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "rfc3339": None}
TYPES = ("float", "integer", "unsigned", "string", "boolean")
BLOCK_BYTES = 1 << 20
_FNV_OFFSET, _FNV_PRIME = np.uint64(0xcbf29ce484222325), np.uint64(0x100000001b3)
_NULL_TAG = np.uint64(0x9E3779B97F4A7C15)
_MEAS = 0                                       # the one measurement's key in the scan


class CsvImportError(UserError):
    """A CSV file that cannot be imported: FILE:LINE: reason."""

    def __init__(self, path: str, line: int, reason: str):
        super().__init__(f"{path}:{line}: {reason}")


def arrow_type(name: str):
    import pyarrow as pa
    return {"float": pa.float64(), "integer": pa.int64(), "unsigned": pa.uint64(), "string": pa.string(),
            "boolean": pa.bool_()}[name]


def parse_types(text: str | None) -> dict[str, str]:
    """--csv-types "a=float,b=integer" as {column: type}."""
    out = {}
    for item in filter(None, (text or "").split(",")):
        name, _, typ = item.partition("=")
        if typ not in TYPES:
            raise UserError(f"--csv-types {item!r}: write COLUMN=TYPE, TYPE one of {', '.join(TYPES)}")
        out[name] = typ
    return out


class _Source:
    """The binary file as pyarrow reads it: hashed, its bytes, newlines and blank lines
    counted on the way (the line numbers of blank lines kept: rows map to lines by them)."""

    def __init__(self, f, progress):
        self.f, self.progress, self.sha, self.size = f, progress, hashlib.sha256(), 0
        self.newlines = 0
        self.line_start = 0                    # offset of the current line's first byte
        self.last = b"\n"                      # the byte before it (\r: a CRLF ending)
        self.blank: list[np.ndarray] = []
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.sha.update(data)
        arr = np.frombuffer(data, np.uint8)
        nl = np.flatnonzero(arr == 0x0A) + self.size
        if len(nl):
            starts = np.concatenate([[self.line_start], nl[:-1] + 1])
            lens = nl - starts
            cr = np.zeros(len(nl), bool)
            inside = nl - 1 >= self.size
            cr[inside] = arr[nl[inside] - 1 - self.size] == 0x0D
            cr[~inside] = self.last == b"\r"
            blank = (lens == 0) | ((lens == 1) & cr)
            self.blank.append(self.newlines + 1 + np.flatnonzero(blank))
            self.newlines += len(nl)
            self.line_start = int(nl[-1]) + 1
        if data:
            self.last = data[-1:]
        self.size += len(data)
        self.progress(self.size)
        return data

    def blank_lines(self) -> np.ndarray:
        return np.concatenate(self.blank) if self.blank else np.empty(0, np.int64)

    def lines(self) -> int:
        return self.newlines + (self.size > self.line_start)

    def line_of(self, row: int) -> int:
        """The file line of non-blank line number row (1: the header), blank lines skipped."""
        blank, line = self.blank_lines(), row
        while True:
            at = row + int(np.searchsorted(blank, line, side="right"))
            if at == line:
                return line
            line = at


def _hash_strings(arr) -> np.ndarray:
    """FNV-1a of each string of arr (no nulls), mixed (lpscan's spread): vectorized over the
    strings, one numpy step per character position."""
    import pyarrow as pa
    arr = arr.cast(pa.large_string())
    offs = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2] or b"", np.uint8)
    starts, lens = offs[:-1], np.diff(offs)
    h = np.full(len(arr), _FNV_OFFSET, np.uint64)
    for j in range(int(lens.max()) if len(lens) else 0):
        live = np.flatnonzero(lens > j)
        h[live] = (h[live] ^ data[starts[live] + j]) * _FNV_PRIME
    return lpscan._mix(h)


class _CsvScan(lpscan.SchemaScan):
    """lpscan's schema statistics fed from CSV columns: one measurement, its tags and fields
    named by the mapping; series and tag values known by hashes of the tag cells."""

    def __init__(self, name: str, unit: str, tags: list[str], fields: dict[str, str]):
        super().__init__(unit)
        m = lpscan._Measurement(name)
        m.tags = {i: [t, np.empty(0, np.uint64)] for i, t in enumerate(tags)}
        m.fields = {i: [f, typ, 2, 0] for i, (f, typ) in enumerate(fields.items())}
        self.meas = {_MEAS: m}
        self.counts["header"] = 1
        self._tag_hashes: list[np.ndarray] = []

    def _measurement(self, buf, a: dict, i: int):
        return self.meas[_MEAS]

    def _tags(self, buf, a: dict, reps: np.ndarray) -> None:
        for t, hashes in zip(self.meas[_MEAS].tags.values(), self._tag_hashes):
            vals = hashes[reps]
            t[1] = np.union1d(t[1], vals[vals != _NULL_TAG])[:lpscan.TAG_VALUES_EXACT]

    def feed_columns(self, times: np.ndarray, tag_hashes: list[np.ndarray], valid: list[int]) -> None:
        """One batch: times (ns), each tag column's hashes (_NULL_TAG: empty), each field's
        count of values."""
        n = len(times)
        m = self.meas[_MEAS]
        self.counts["points"] += n
        m.points += n
        for f, k in zip(m.fields.values(), valid):
            f[3] += k
            self.counts["values"] += k
        series = lpscan._mix(np.full(n, np.uint64(0x5851F42D4C957F2D)))
        for i, hashes in enumerate(tag_hashes):
            series = lpscan._mix(series ^ (hashes + np.uint64(i)))
        self._tag_hashes, self.series = tag_hashes, series
        a = {"series": series, "time": times, "has_time": np.ones(n, np.uint8), "meas": np.zeros(n, np.uint64)}
        self._steps(a, self._series_ids(None, a))

    def result(self) -> dict:
        out = super().result()
        out["format"] = "csv"
        return out


class _BadRow(Exception):
    def __init__(self, row: int, reason: str):
        super().__init__(reason)
        self.row, self.reason = row, reason


def _first_bad(col, typ) -> int:
    """The index of col's first value that does not cast to typ (the cast fails somewhere):
    halving the range, each half cast in C++."""
    import pyarrow as pa
    lo, hi = 0, len(col)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            col.slice(lo, mid - lo).cast(typ)
            lo = mid
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            hi = mid
    return lo


def _text(col, i: int) -> str:
    value = col[i].as_py()
    return repr(value if len(value) <= 40 else value[:40] + "...")


def _cast(col, typ, reason):
    """col cast to typ; _BadRow(first bad index, reason(its text)) when a value does not parse."""
    import pyarrow as pa
    try:
        return col.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        i = _first_bad(col, typ)
        raise _BadRow(i, reason(_text(col, i))) from None


def _times(col, unit: str) -> np.ndarray:
    """The time column as int64 ns."""
    import pyarrow as pa
    if col.null_count:
        raise _BadRow(int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0]), "no time (an empty cell)")
    if unit == "rfc3339":
        ts = _cast(col, pa.timestamp("ns", "UTC"),
                   lambda v: f"time {v} is not an RFC 3339 time with a zone (e.g. 2016-01-01T00:00:00Z)")
        return ts.cast(pa.int64()).to_numpy()
    v = _cast(col, pa.int64(), lambda v: f"time {v} is not an integer (--csv-time-unit {unit})").to_numpy()
    limit = np.iinfo(np.int64).max // UNITS[unit]
    out = np.abs(v) > limit
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise _BadRow(i, f"time {v[i]} {unit} is beyond the range of nanosecond times")
    return v * UNITS[unit]


def _tag(col):
    """A tag column as dictionary<int32, string> and each row's hash (_NULL_TAG: empty)."""
    import pyarrow.compute as pc
    enc = pc.dictionary_encode(col)
    hashes = _hash_strings(enc.dictionary)
    idx = enc.indices.fill_null(0).to_numpy()
    out = hashes[idx] if len(hashes) else np.full(len(col), _NULL_TAG)
    if enc.null_count:
        out[enc.is_null().to_numpy(zero_copy_only=False)] = _NULL_TAG
    return enc, out


def infer_type(col) -> str:
    """A field's type from its first batch: integer, else float, else boolean, else string."""
    import pyarrow as pa
    if col.null_count == len(col):
        return "float"
    for name in ("integer", "float", "boolean"):
        try:
            col.cast(arrow_type(name))
            return name
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass                        # not every value is of this type: the next, more general one is tried
    return "string"


class _Mapping:
    """The stated mapping checked against the header: time column and unit, tags, fields."""

    def __init__(self, path: str, columns: list[str], time: str, unit: str, tags: list[str], types: dict):
        def fail(reason):
            raise CsvImportError(path, 1, reason)
        dup = sorted({c for c in columns if columns.count(c) > 1})
        if dup:
            fail(f"column {dup[0]!r} appears twice in the header")
        for what, names in (("--csv-time", [time]), ("--csv-tags", tags), ("--csv-types", list(types))):
            missing = [n for n in names if n not in columns]
            if missing:
                fail(f"no column {missing[0]!r} (named in {what}); the columns: {', '.join(columns)}")
        if time in tags or time in types:
            fail(f"column {time!r} is the time; it cannot also be a tag or a field")
        if set(tags) & set(types):
            fail(f"column {min(set(tags) & set(types))!r} is a tag; --csv-types is for fields")
        self.columns, self.time, self.unit, self.tags, self.stated = columns, time, unit, sorted(tags), dict(types)
        self.fields = sorted(c for c in columns if c != time and c not in tags)
        self.types: dict[str, str] = {}

    def infer(self, batch) -> None:
        self.types = {f: self.stated.get(f) or infer_type(batch.column(f)) for f in self.fields}

    def describe(self, measurement: str) -> dict:
        return {"time": self.time, "unit": self.unit, "tags": self.tags, "measurement": measurement,
                "types": self.types, "stated": sorted(self.stated)}


def _field(batch, mapping: _Mapping, name: str):
    typ = mapping.types[name]
    hint = "" if name in mapping.stated else f" (its type taken from the first rows; state it: --csv-types {name}=TYPE)"
    article = "an" if typ[0] in "aeiou" else "a"
    return _cast(batch.column(name), arrow_type(typ), lambda v: f"column {name!r}: {v} is not {article} {typ}{hint}")


def _header(path: str) -> list[str]:
    """The column names of the file's first line."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pcsv
    with open(path, "rb") as f:
        first = f.readline()
    if not first.strip():
        raise CsvImportError(path, 1, "no header (the first line names the columns)")
    try:
        return pcsv.read_csv(io.BytesIO(first)).column_names
    except pa.ArrowInvalid as exc:
        raise CsvImportError(path, 1, f"the header does not parse ({exc})") from None


def _reader(src: _Source, columns: list[str], block_bytes: int, invalid: list):
    import pyarrow as pa
    import pyarrow.csv as pcsv

    def bad_row(row) -> str:
        invalid.append(row)
        return "skip"
    return pcsv.open_csv(
        src, read_options=pcsv.ReadOptions(use_threads=False, block_size=block_bytes),
        parse_options=pcsv.ParseOptions(newlines_in_values=False, invalid_row_handler=bad_row),
        convert_options=pcsv.ConvertOptions(column_types={c: pa.string() for c in columns}, null_values=[""],
                                            strings_can_be_null=True, quoted_strings_can_be_null=False))


class _Reading:
    """One pass over the file: each batch cast, its statistics gathered, its rows written."""

    def __init__(self, path: str, tmp: Path, mapping: _Mapping, measurement: str, src: _Source):
        self.path, self.tmp, self.mapping, self.measurement, self.src = path, tmp, mapping, measurement, src
        self.importer = lpimport.Importer(tmp)
        self.scan: _CsvScan | None = None
        self.rows = 0

    def _start(self, batch) -> None:
        m = self.mapping
        m.infer(batch)
        self.scan = _CsvScan(self.measurement, m.unit, m.tags, m.types)
        t = self.importer.table(_MEAS, self.measurement)
        self.importer.new_part(t, {"tags": {k: {} for k in m.tags},
                                   "fields": {f: {"type": m.types[f]} for f in m.fields}})

    def feed(self, batch) -> None:
        import pyarrow as pa
        if self.scan is None:
            self._start(batch)
        m = self.mapping
        try:
            times = _times(batch.column(m.time), m.unit)
            tags = {name: _tag(batch.column(name)) for name in m.tags}
            fields = {name: _field(batch, m, name) for name in m.fields}
        except _BadRow as bad:
            raise CsvImportError(self.path, self.src.line_of(self.rows + bad.row + 2), bad.reason) from None
        self.scan.feed_columns(times, [h for _, h in tags.values()], [len(c) - c.null_count for c in fields.values()])
        values = {name: batch.column(name).cast(pa.string()) for name in m.tags}
        self.importer.add_columns(self.importer.table(_MEAS, self.measurement), times, np.ones(len(times), bool), self.scan.series,
                                  values, fields)
        self.rows += len(times)

    def close(self) -> dict[str, int]:
        return self.importer.close()


def _checked(path: str, src: _Source, scan: _CsvScan, rows: dict) -> dict:
    """The schema, its counts checked against the file's lines (header, data rows, blank)."""
    blank = len(src.blank_lines())
    scan.counts.update(lines=src.lines(), blank=blank)
    schema = scan.result()
    schema["counts"]["file_lines"] = src.lines()
    points = {name: m["points"] for name, m in schema["measurements"].items()}
    if rows != points:
        raise lpimport.ImportCountError(f"csv import: rows {rows} against the scan's points {points}")
    data_lines = src.lines() - 1 - blank
    if sum(rows.values()) != data_lines:
        raise UserError(f"{path}: {sum(rows.values())} rows read from {data_lines} data lines: a quoted "
                        "value holds a line break (the import reads one row a line)")
    return schema


def _read_into(path: str, tmp: Path, mapping: _Mapping, measurement: str, progress, block_bytes: int):
    invalid: list = []
    with open(path, "rb") as f:
        src = _Source(f, progress)
        reading = _Reading(path, tmp, mapping, measurement, src)
        try:
            for batch in _reader(src, mapping.columns, block_bytes, invalid):
                if invalid:
                    break
                reading.feed(batch)
        finally:
            rows = reading.close()
    if invalid:
        row = invalid[0]
        raise CsvImportError(path, src.line_of(row.number) if row.number else 0,
                             f"{row.actual_columns} cells where the header has {row.expected_columns}")
    if reading.scan is None:
        raise CsvImportError(path, 2, "no data rows after the header")
    schema = _checked(path, src, reading.scan, rows)
    schema["csv"] = mapping.describe(measurement)
    return schema, rows, {"size": src.size, "sha256": src.sha.hexdigest(), "lines": src.lines()}


def import_csv(path: str, output: str, time: str = "time", unit: str = "ns", tags: list[str] = (),
               measurement: str | None = None, types: dict[str, str] | None = None,
               progress=lambda done: None, block_bytes: int = BLOCK_BYTES) -> dict:
    """Import a CSV file into the folder output (which must not exist), reading it once;
    returns the import.json written. CsvImportError (FILE:LINE: reason) when a row cannot be
    imported, and nothing is left. progress(bytes read)."""
    if unit not in UNITS:
        raise UserError(f"--csv-time-unit {unit!r}: one of {', '.join(UNITS)}")
    measurement = measurement or Path(path).stem
    mapping = _Mapping(path, _header(path), time, unit, list(tags), dict(types or {}))
    return lpimport.write_import(path, output,
                                 lambda tmp: _read_into(path, tmp, mapping, measurement, progress, block_bytes))
