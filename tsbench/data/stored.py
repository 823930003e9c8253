"""A dataset stored by `tsbench import` (phase 1 for a user's own data): the import folder
(one Parquet file per measurement and import.json, see data/lpimport.py) seen as the phases
see a generated dataset. What a target can hold is the *loadable view*: every measurement a
table, its tags, and its numeric fields (float, integer; unsigned where every value fits a
signed 64-bit integer, loaded as integer). A field of another type is left out of the view,
named with the reason in `excluded`, never dropped silently.

The view's rows are the rows every target holds, the same for all of them:
- a row with no timestamp (its line had none: the server would stamp it with its clock) and
  a row with no numeric value (nothing a table could hold) are left out, and counted;
- times are kept to the microsecond, the finest PostgreSQL and DuckDB store (a finer part
  is cut, floor, and counted);
- duplicates (points of one measurement with the same tag set and time) become one row, as
  InfluxDB and VictoriaMetrics store them: field by field, the last value written wins.
  Generated data never repeats a series' time (a late record keeps its own), so a target
  holds every row of a generated file; merging makes an import the same, and a table with
  a key on (tags, time) and one without hold the same rows.
`excluded[measurement]` says how many rows each rule took. One query, view_sql(), is the view:
the data file writer (storedfile.py), the expected counts and value statistics (view_stats,
which verify.py compares with each target's) and the reference read the rows through it.

A StoredDataset stands where a Dataset (data/dataset.py) stands; `stored` tells them apart
(a Dataset's is False). The simulator's places (generate, reference, verify, query context)
take their stored path from `stored`. The view's figures cost one pass over the Parquet
files; they are kept in DIR/view.json (for this import.json) and read from there after."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from tsbench.core.errors import UserError
from tsbench.core.model import Column, Table, Tables
from tsbench.core.sqltext import lit, q
from tsbench.core.timeutil import format_time
from tsbench.data.usecase_detect import detect_use_case

IMPORT_FORMAT = "tsbench-import"
LOADABLE = {"float": "float", "integer": "int"}      # import type -> the model's column type
INT64_MAX = (1 << 63) - 1
VIEW_FILE = "view.json"
VIEW_VERSION = 1
ROW = "__tsbench_row"       # the file's row number in the view's queries
TIME = "__tsbench_ns"       # a row's time in the view: ns, cut to the microsecond


@dataclass
class StoredDataset:
    folder: Path                     # the import folder (tsbench import -o)
    meta: dict                       # its import.json
    meta_sha256: str                 # of import.json's bytes: what a data file made from it records
    tables: Tables                   # the loadable view (rows/values: of the view)
    interval_ns: int                 # the median step between a series' points (1 s when unknown)
    excluded: dict[str, str] = field(default_factory=dict)   # "measurement[.field]" -> what is not loaded, why
    use_case: str = "imported"       # or a use case whose queries the schema admits (e.g. devops)
    figures: dict = field(default_factory=dict)   # per table: view_stats' entry (rows, values, series, fields)
    stored = True

    @property
    def start_ns(self) -> int:
        return self.tables.start_ns

    @property
    def end_ns(self) -> int:
        return self.tables.end_ns

    def parquet(self, measurement: str) -> Path:
        return self.folder / self.meta["files"][measurement]

    def view_sql(self, measurement: str, ordered: bool = True) -> str:
        """The DuckDB query of a table's rows in the view: time (int64 ns), the tags, the
        loadable fields; in the order of the file (a merged row where its first line was)."""
        tb = self.tables.by_name()[measurement]
        types = self.meta["schema"]["measurements"][measurement]["fields"]
        return view_sql(self.parquet(measurement), tb, types, ordered)

    def null_tags(self) -> bool:
        """Whether a row of the view lacks a tag (a tag set of its own in some targets)."""
        return any(f["null_tags"] for f in self.figures.values())

    def describe(self) -> dict:
        """As plain data, for manifests and queries files: where the data is and which import."""
        return {"source": "import", "folder": str(self.folder.resolve()), "import_sha256": self.meta_sha256,
                "use_case": self.use_case, "start": format_time(self.start_ns), "end": format_time(self.end_ns),
                "interval_ns": self.interval_ns, "excluded": self.excluded}


def is_stored(described: dict) -> bool:
    """Whether a manifest's or queries file's dataset description is of an import."""
    return described.get("source") == "import"


def open_stored(folder: str | Path, want_sha256: str | None = None) -> StoredDataset:
    """The import folder as a dataset; with want_sha256, its import.json must be the one a
    data file or queries file was made from."""
    folder = Path(folder)
    path = folder / "import.json"
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        raise UserError(f"{folder}: not an import folder (no import.json; make one with: "
                        f"python -m tsbench import FILE -o {folder})") from None
    sha = hashlib.sha256(raw).hexdigest()
    if want_sha256 is not None and sha != want_sha256:
        raise UserError(f"{folder}: its import.json changed since this file was made from it; make it again")
    try:
        meta = json.loads(raw)
        if meta.get("format") != IMPORT_FORMAT:
            raise KeyError("format")
        measurements = meta["schema"]["measurements"]
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not a tsbench import ({exc}); import the file again") from None
    tables, excluded = _loadable(folder, meta, measurements)
    figures = _view_figures(folder, meta, sha, tables)
    tables = _counted(tables, figures, excluded, meta["rows"])
    return StoredDataset(folder, meta, sha, tables, _interval(measurements), excluded,
                         figures={t.name: figures[t.name] for t in tables},
                         use_case=detect_use_case(measurements)[0] or "imported")


def _loadable(folder: Path, meta: dict, measurements: dict) -> tuple[list[Table], dict[str, str]]:
    """The loadable columns of the import's schema, and what they leave out."""
    out, excluded = [], {}
    for name, m in measurements.items():
        cols = []
        for f, info in m["fields"].items():
            why = _unloadable(info, lambda f=f, name=name: _parquet_max(folder / meta["files"][name], f))
            if why:
                excluded[f"{name}.{f}"] = why
                continue
            cols.append(Column(f, LOADABLE.get(info["type"], "int")))
        if not cols:
            excluded[name] = "no numeric field"
            continue
        out.append(Table(name, tuple(sorted(m["tags"])), tuple(sorted(cols, key=lambda c: c.name))))
    if not out:
        raise UserError("the import holds no numeric field: there is nothing a database could be compared on")
    return out, excluded


def _unloadable(info: dict, parquet_max) -> str | None:
    t = info["type"]
    if t in LOADABLE:
        return None
    if t == "unsigned":
        mx = info["max"] if info.get("max") is not None else parquet_max()
        return None if mx is not None and mx <= INT64_MAX else "unsigned values beyond a signed 64-bit integer"
    return f"{t} fields are not loaded (tsbench compares databases on numeric fields)"


def _parquet_max(path: Path, column: str) -> int | None:
    """The largest value of a column from the Parquet file's statistics (no data read);
    None when a row group has none."""
    import pyarrow.parquet as pq

    md = pq.ParquetFile(str(path)).metadata
    k = md.schema.to_arrow_schema().get_field_index(column)
    best = None
    for g in range(md.num_row_groups):
        col = md.row_group(g).column(k)
        st = col.statistics
        if st is None or (st.null_count != col.num_values and not st.has_min_max):
            return None
        if st.has_min_max:
            best = st.max if best is None else max(best, st.max)
    return best


def _counted(tables: list[Table], figures: dict, excluded: dict[str, str], rows: dict) -> Tables:
    """Tables with the view's counts and time range; a measurement the rules leave empty
    goes, and each measurement's rows left out or merged are named in excluded."""
    out, lo, hi = [], None, None
    for tb in tables:
        f = figures[tb.name]
        note = _left_out(f, rows[tb.name])
        if note:
            excluded[tb.name] = note
        if not f["rows"]:
            continue
        out.append(tb)
        lo = f["min_ns"] if lo is None else min(lo, f["min_ns"])
        hi = f["max_ns"] if hi is None else max(hi, f["max_ns"])
    if not out:
        raise UserError("the import holds no row with a timestamp and a numeric value: there is nothing to load")
    return Tables(tuple(out), lo, hi + 1, sum(figures[t.name]["rows"] for t in out),
                  sum(figures[t.name]["values"] for t in out))


def _left_out(f: dict, total: int) -> str:
    parts = []
    if f["no_time"]:
        parts.append(f"{f['no_time']:,} without a timestamp (a server would stamp them with its clock)")
    if f["no_value"]:
        parts.append(f"{f['no_value']:,} without a numeric value")
    if f["duplicates"]:
        parts.append(f"{f['duplicates']:,} duplicates (same tags and time to the microsecond) merged into the "
                     "row before them, field by field, the last value winning")
    note = f"{total - f['rows']:,} of {total:,} rows not loaded as rows: " + "; ".join(parts) if parts else ""
    if f["finer_than_us"]:
        note += ("; " if note else "") + f"{f['finer_than_us']:,} times cut to the microsecond"
    return note


def _interval(measurements: dict) -> int:
    steps = sorted(m["interval"]["median_ns"] for m in measurements.values()
                   if m.get("interval") and m["interval"].get("median_ns"))
    return int(steps[len(steps) // 2]) if steps else 1_000_000_000


# ---- the view as DuckDB queries ------------------------------------------------------------

def _merged_sql(path: Path, tb: Table) -> str:
    """The timed rows of one Parquet file to the microsecond, one per (tags, time): each
    field the last non-null value written, ROW the first line's row number."""
    tags = [q(t) for t in tb.tags]
    fields = [q(c.name) for c in tb.fields]
    ns = "epoch_ns(time)"
    src = (f"SELECT *, {ns} - ((({ns} % 1000) + 1000) % 1000) AS {TIME} "
           f"FROM read_parquet({lit(str(path))}, file_row_number=true) WHERE time IS NOT NULL")
    picks = "".join(f", arg_max({f}, file_row_number) FILTER (WHERE {f} IS NOT NULL) AS {f}" for f in fields)
    key = ", ".join([*tags, TIME])
    return f"SELECT {key}, min(file_row_number) AS {ROW}{picks} FROM ({src}) GROUP BY {key}"


def view_sql(path: Path, tb: Table, types: dict, ordered: bool = True) -> str:
    """The rows of the view of one Parquet file (see the module's docstring): time (int64
    ns, whole microseconds), the tags, the fields (unsigned as BIGINT)."""
    cast = {"float": "DOUBLE"}
    cols = [f"CAST({q(c.name)} AS {cast.get(types[c.name]['type'], 'BIGINT')}) AS {q(c.name)}"
            for c in tb.fields]
    some = " OR ".join(f"{q(c.name)} IS NOT NULL" for c in tb.fields)
    order = f" ORDER BY {ROW}" if ordered else ""
    return (f"SELECT {TIME} AS time, {', '.join([*map(q, tb.tags), *cols])} FROM ({_merged_sql(path, tb)}) "
            f"WHERE {some}{order}")


def _stats_sql(path: Path, tb: Table, types: dict) -> str:
    """One row of a table's figures over its view (the kinds of valuestats.to_manifest)."""
    src = f"read_parquet({lit(str(path))})"
    items = ["count(*)", "min(time)", "max(time)",
             f"(SELECT count(*) FROM {src} WHERE time IS NULL)",
             f"(SELECT count(*) FROM ({_merged_sql(path, tb)}))",
             f"(SELECT count(*) FROM {src} WHERE epoch_ns(time) % 1000 <> 0)",
             f"count(DISTINCT row({', '.join(map(q, tb.tags))}))" if tb.tags else "least(count(*), 1)",
             " OR ".join(f"bool_or({q(t)} IS NULL)" for t in tb.tags) if tb.tags else "false"]
    for c in tb.fields:
        f = q(c.name)
        if c.type == "int":
            items += [f"count({f})", f"sum({f}::HUGEINT)", f"fsum(abs({f}::DOUBLE))", f"min({f})", f"max({f})"]
        else:
            items += [f"count({f})", f"fsum({f})", f"fsum(abs({f}))", f"min({f})", f"max({f})"]
    return f"SELECT {', '.join(items)} FROM ({view_sql(path, tb, types, ordered=False)})"


def view_stats(folder: Path, meta: dict, tables: list[Table]) -> dict:
    """Per table: rows, values, series, null_tags, min_ns, max_ns, the rows left out
    (no_time, no_value, duplicates) and per field {count, sum, sum_abs, min, max}, all
    from one DuckDB pass over its Parquet file."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute("SET threads TO 2")
        out = {}
        for tb in tables:
            types = meta["schema"]["measurements"][tb.name]["fields"]
            r = con.execute(_stats_sql(folder / meta["files"][tb.name], tb, types)).fetchone()
            out[tb.name] = _figures(tb, r)
        return out
    finally:
        con.close()


def _figures(tb: Table, r: tuple) -> dict:
    rows, tmin, tmax, no_time, groups, finer, series, null_tags = r[:8]
    fields, values = {}, 0
    for k, c in enumerate(tb.fields):
        count, total, sabs, lo, hi = r[8 + 5 * k: 13 + 5 * k]
        as_int = c.type == "int"
        fields[c.name] = {"count": count, "sum": int(total or 0) if as_int else float(total or 0.0),
                          "sum_abs": float(sabs or 0.0), "min": lo, "max": hi}
        values += count
    return {"rows": rows, "values": values, "series": series, "null_tags": bool(null_tags),
            "min_ns": tmin, "max_ns": tmax, "no_time": no_time, "groups": groups, "finer_than_us": finer,
            "fields": fields}


def _view_figures(folder: Path, meta: dict, sha: str, tables: list[Table]) -> dict:
    """view_stats, from DIR/view.json when it was made for this import.json and these tables."""
    key = {"version": VIEW_VERSION, "import_sha256": sha,
           "tables": [[t.name, list(t.tags), [[c.name, c.type] for c in t.fields]] for t in tables]}
    path = folder / VIEW_FILE
    try:
        kept = json.loads(path.read_text())
        if kept.get("key") == key:
            return kept["figures"]
    except (OSError, ValueError, AttributeError):
        pass                   # no cache, or an unreadable one: the figures are computed again below
    figures = view_stats(folder, meta, tables)
    for name, f in figures.items():
        timed = meta["rows"][name] - f["no_time"]
        f["duplicates"] = timed - f.pop("groups")
        f["no_value"] = timed - f["duplicates"] - f["rows"]
    try:                       # a cache: a folder we cannot write to costs a pass each time
        tmp = path.with_name(f".{VIEW_FILE}.{os.getpid()}")
        tmp.write_text(json.dumps({"key": key, "figures": figures}, indent=1, sort_keys=True) + "\n")
        tmp.rename(path)
    except OSError:
        pass
    return figures
