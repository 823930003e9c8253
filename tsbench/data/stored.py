"""A dataset stored by `tsbench import` (phase 1 for a user's own data): the import folder
(one Parquet file per measurement and import.json, see data/lpimport.py) seen as the phases
see a generated dataset. What a target can hold is the *loadable view*: every measurement a
table, its tags, and its numeric fields (float, integer; unsigned where every value fits a
signed 64-bit integer). A field of another type is left out of the view, named with the
reason in `excluded`, never dropped silently.

A StoredDataset stands where a Dataset (data/dataset.py) stands; `stored` tells them apart
(a Dataset's is False). The simulator's places (generate, reference, verify, query context)
take their stored path from `stored`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from tsbench.core.errors import UserError
from tsbench.core.model import Column, Table, Tables
from tsbench.core.timeutil import format_time

IMPORT_FORMAT = "tsbench-import"
LOADABLE = {"float": "float", "integer": "int"}      # import type -> the model's column type
INT64_MAX = (1 << 63) - 1


@dataclass
class StoredDataset:
    folder: Path                     # the import folder (tsbench import -o)
    meta: dict                       # its import.json
    meta_sha256: str                 # of import.json's bytes: what a data file made from it records
    tables: Tables                   # the loadable view (rows/values: of the view)
    interval_ns: int                 # the median step between a series' points (1 s when unknown)
    excluded: dict[str, str] = field(default_factory=dict)   # "measurement.field" -> why it is not loaded
    use_case: str = "imported"       # or a use case whose queries the schema admits (e.g. devops)
    stored = True

    @property
    def start_ns(self) -> int:
        return self.tables.start_ns

    @property
    def end_ns(self) -> int:
        return self.tables.end_ns

    def parquet(self, measurement: str) -> Path:
        return self.folder / self.meta["files"][measurement]

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
    except FileNotFoundError:
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
    tables, excluded = _loadable(measurements, meta["rows"])
    return StoredDataset(folder, meta, sha, tables, _interval(measurements), excluded)


def _loadable(measurements: dict, rows: dict) -> tuple[Tables, dict[str, str]]:
    """The loadable view of the import's schema, and what it leaves out."""
    out, excluded, lo, hi, values = [], {}, None, None, 0
    for name, m in measurements.items():
        cols = []
        for f, info in m["fields"].items():
            why = _unloadable(info)
            if why:
                excluded[f"{name}.{f}"] = why
                continue
            cols.append(Column(f, LOADABLE.get(info["type"], "int")))
            values += info["values"]
        if not cols:
            excluded[name] = "no numeric field"
            continue
        out.append(Table(name, tuple(sorted(m["tags"])), tuple(sorted(cols, key=lambda c: c.name))))
        t = m.get("time") or {}
        if t.get("min_ns") is not None:
            lo = t["min_ns"] if lo is None else min(lo, t["min_ns"])
            hi = t["max_ns"] if hi is None else max(hi, t["max_ns"])
    if not out:
        raise UserError("the import holds no numeric field: there is nothing a database could be compared on")
    n = sum(rows[t.name] for t in out)
    return Tables(tuple(out), lo or 0, (hi if hi is not None else 0) + 1, n, values), excluded


def _unloadable(info: dict) -> str | None:
    t = info["type"]
    if t in LOADABLE:
        return None
    if t == "unsigned":
        mx = info.get("max")
        return None if mx is not None and mx <= INT64_MAX else "unsigned values beyond a signed 64-bit integer"
    return f"{t} fields are not loaded (tsbench compares databases on numeric fields)"


def _interval(measurements: dict) -> int:
    steps = sorted(m["interval"]["median_ns"] for m in measurements.values()
                   if m.get("interval") and m["interval"].get("median_ns"))
    return int(steps[len(steps) // 2]) if steps else 1_000_000_000
