"""A generated data file as the load phase sees it (phase 1 -> 2): the file, its
manifest (format, rows, values, spec) and the tables a target must create."""

from __future__ import annotations

import hashlib
import json
import pathlib
from dataclasses import dataclass

from tsbench.core.errors import UserError
from tsbench.core.model import Column, Table, Tables
from tsbench.data.dataset import Dataset, resolve, spec_of
from tsbench.data.stored import is_stored, open_stored

CHUNK = 1 << 20      # bytes hashed at a time by check_sha256


def tables_of(ds, rows: int, values: int) -> Tables:
    """Tag and field columns of every measurement, in the CSV column order (of an import:
    its loadable view's)."""
    if ds.stored:
        v = ds.tables
        return Tables(v.tables, v.start_ns, v.end_ns, rows, values)
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
    dataset: Dataset            # or a StoredDataset (data/stored.py) for a file made from an import

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


def open_datafile(path: str | pathlib.Path, check_data: bool = False) -> DataFile:
    """The data file and its manifest FILE.manifest.json (written by generate); the
    file's size is checked against the manifest, and its sha256 too with check_data."""
    p = pathlib.Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such data file (make one with: python -m tsbench generate -o {p})")
    mpath = pathlib.Path(str(p) + ".manifest.json")
    try:
        manifest = json.loads(mpath.read_text())
    except FileNotFoundError:
        raise UserError(f"{p}: no manifest {mpath.name} beside it; tsbench loads files made by "
                        f"`python -m tsbench generate`; for a file of your own, import it first: "
                        f"python -m tsbench import {p} -o DIR, then load DIR") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{mpath}: not valid JSON ({exc})") from None
    try:
        stored = is_stored(manifest["spec"])
        spec = None if stored else spec_of(manifest["spec"])
        for k in ("format", "rows", "values", "bytes"):
            manifest[k]
    except (KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{mpath}: missing {exc} (regenerate the file)") from None
    check_size(p, manifest)
    if check_data:
        check_sha256(p, manifest)
    if stored:
        described = manifest["spec"]
        return DataFile(p, manifest, open_stored(described["folder"], described.get("import_sha256")))
    return DataFile(p, manifest, resolve(spec))


def check_size(p: pathlib.Path, manifest: dict) -> None:
    """The file's size is the one its manifest records (file_bytes; bytes if uncompressed)."""
    want = manifest.get("file_bytes")
    if want is None and (manifest.get("compression") or "none") == "none":
        want = manifest["bytes"]
    have = p.stat().st_size
    if want is not None and have != want:
        raise UserError(f"{p}: {have:,} bytes, but its manifest says {want:,}: the file was truncated or "
                        f"changed since it was generated; regenerate it")


def check_sha256(p: pathlib.Path, manifest: dict) -> None:
    """The file's sha256 is the one its manifest records (--check-data)."""
    want = manifest.get("sha256")
    if not want:
        raise UserError(f"{p}: its manifest records no sha256 to check; regenerate the file")
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    if h.hexdigest() != want:
        raise UserError(f"{p}: sha256 {h.hexdigest()[:16]}..., but its manifest says {want[:16]}...: the file "
                        f"was changed since it was generated; regenerate it")
