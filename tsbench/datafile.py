"""A generated data file as the load phase sees it (phase 1 -> 2): the file, its
manifest (format, rows, values, spec) and the tables a target must create."""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

from .dataset import Dataset, resolve, spec_of
from .errors import UserError
from .model import Column, Table, Tables


def tables_of(ds: Dataset, rows: int, values: int) -> Tables:
    """Tag and field columns of every measurement, in the CSV column order."""
    out = []
    for s, se in enumerate(ds.schema.series):
        tags = tuple(t.key for t in ds.schema.series_tags(s))
        fields = tuple(Column(f.name, f.type) for f in se.fields if not f.hidden)
        out.append(Table(se.name, tags, fields))
    return Tables(tuple(out), ds.start_ns, ds.end_ns, rows, values)


@dataclass
class DataFile:
    path: pathlib.Path
    manifest: dict
    dataset: Dataset

    @property
    def format(self) -> str:
        return self.manifest["format"]

    @property
    def compression(self) -> str:
        return self.manifest.get("compression") or "none"

    @property
    def rows(self) -> int:
        return self.manifest["rows"]

    @property
    def values(self) -> int:
        return self.manifest["values"]

    @property
    def bytes(self) -> int:
        return self.manifest["bytes"]

    def tables(self) -> Tables:
        return tables_of(self.dataset, self.rows, self.values)


def open_datafile(path: str | pathlib.Path) -> DataFile:
    """The data file and its manifest FILE.manifest.json (written by generate)."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such data file (make one with: python -m tsbench generate -o {p})")
    mpath = pathlib.Path(str(p) + ".manifest.json")
    try:
        manifest = json.loads(mpath.read_text())
    except FileNotFoundError:
        raise UserError(f"{p}: no manifest {mpath.name} beside it; tsbench loads files made by "
                        f"`python -m tsbench generate`, which writes one") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{mpath}: not valid JSON ({exc})") from None
    try:
        spec = spec_of(manifest["spec"])
        for k in ("format", "rows", "values", "bytes"):
            manifest[k]
    except (KeyError, TypeError) as exc:
        raise UserError(f"{mpath}: missing {exc} (regenerate the file)") from None
    return DataFile(p, manifest, resolve(spec))
