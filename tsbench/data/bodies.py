"""Request bodies built before the timed load (phase 1 -> 2), as line protocol batches are
built at generate time: for a target that loads by Prometheus remote-write, every batch of
the data file as the snappy-compressed WriteRequest it sends (shared/remote_write.py: the C
core's encoder and one cramjam call a batch), written once per data file and batch size
into a companion file beside it, FILE.remote-write-ROWS.bodies, with its manifest
FILE.remote-write-ROWS.bodies.json (written last: a file without one is rebuilt). The load
workers then post bytes of the memory-mapped companion, as line protocol's post bytes of
the mapped data file; the build is not timed (the load summary's figures are the posting's).

A companion record: a header (body bytes, rows, values, the data file's bytes the batch
stands for: little-endian u32, u32, u64, u64), then the body. Each batch a reader yields
has a Prebuilt as its data: the body on the wire, and the data file's bytes as its length,
so the load's MB/s and CPU per MB count the same bytes whichever way it sends them."""

from __future__ import annotations

import json
import os
import pathlib
import struct
from typing import Iterator

from tsbench.core.errors import UserError
from tsbench.core.model import Batch
from tsbench.data.batches import BatchReader, walk_mapped

HEADER = struct.Struct("<IIQQ")
BODY_FORMAT = "remote-write"
VERSION = 1


class Prebuilt:
    """A batch's request body built before the timed load; len() is the data file's bytes it stands for."""

    __slots__ = ("body", "source_bytes")

    def __init__(self, body: memoryview, source_bytes: int):
        self.body, self.source_bytes = body, source_bytes

    def __len__(self) -> int:
        return self.source_bytes


def companion_path(data_path: str | os.PathLike, batch_rows: int) -> pathlib.Path:
    return pathlib.Path(f"{data_path}.{BODY_FORMAT}-{batch_rows}.bodies")


def _source(df) -> dict:
    """What the companion was built from: a changed data file (size, time, sha256) builds it again."""
    st = df.path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": df.manifest.get("sha256"),
            "rows": df.rows, "values": df.values}


def prebuilt(df, batch_rows: int, encoder) -> tuple[pathlib.Path, bool]:
    """The companion of data file df (a DataFile) for batches of batch_rows, and whether it was
    built now: reused when its manifest matches the data file, else built (encoder.body(data):
    one batch's body)."""
    path = companion_path(df.path, batch_rows)
    mpath = pathlib.Path(f"{path}.json")
    want = {"version": VERSION, "body_format": BODY_FORMAT, "batch_rows": batch_rows, "source": _source(df)}
    try:
        have = json.loads(mpath.read_text())
        if {k: have.get(k) for k in want} == want and path.stat().st_size == have["bytes"]:
            return path, False
    except (OSError, ValueError, KeyError, TypeError):
        pass                    # none yet, or damaged: built again below
    try:
        mpath.unlink(missing_ok=True)
        # written under this process's own names, then renamed: two loads building it at once
        # each rename whole files (the same bytes), and a reader's mapping keeps what it opened
        tmp = pathlib.Path(f"{path}.{os.getpid()}.tmp")
        try:
            totals = _write(df, batch_rows, encoder, tmp)
            tmp.replace(path)
            tmp.write_text(json.dumps(want | totals))
            tmp.replace(mpath)
        finally:
            tmp.unlink(missing_ok=True)          # left only by a build that failed
    except OSError as exc:
        raise UserError(f"{path}: cannot write the pre-built {BODY_FORMAT} bodies beside the data file "
                        f"({exc.strerror or exc}); copy the data file to a folder you can write") from None
    return path, True


def _write(df, batch_rows: int, encoder, path: pathlib.Path) -> dict:
    batches = rows = values = 0
    with open(path, "wb") as f:
        for b in BatchReader(df.path, df.format, batch_rows, df.compression):
            body = encoder.body(b.data)
            f.write(HEADER.pack(len(body), b.rows, b.values, b.nbytes))
            f.write(body)
            batches, rows, values = batches + 1, rows + b.rows, values + b.values
        size = f.tell()
    return {"batches": batches, "rows": rows, "values": values, "bytes": size}


def record_ranges(path: str | os.PathLike, parts: int) -> list[tuple[int, int]]:
    """The companion cut into `parts` byte ranges of whole records, about equal in bytes
    (one step a batch, reading only the headers)."""
    size = os.path.getsize(path)
    starts = []
    with open(path, "rb") as f:
        pos = 0
        while pos < size:
            starts.append(pos)
            f.seek(pos)
            n = HEADER.unpack(f.read(HEADER.size))[0]
            pos += HEADER.size + n
    cuts = [0]
    for i in range(1, parts):
        goal = size * i // parts
        cuts.append(max(cuts[-1], next((s for s in starts if s >= goal), size)))
    cuts.append(size)
    return [(cuts[i], cuts[i + 1]) for i in range(parts)]


class BodyReader:
    """The batches of a companion (or of one byte range of whole records), memory-mapped;
    pages read are unmapped again RESIDENT bytes behind the reader, as BatchReader does."""

    def __init__(self, path: str | os.PathLike, byte_range: tuple[int, int] | None = None):
        self.path = pathlib.Path(path)
        self.byte_range = byte_range

    def __iter__(self) -> Iterator[Batch]:
        def step(mm, view, pos, hi):
            n, rows, values, source_bytes = HEADER.unpack_from(mm, pos)
            start = pos + HEADER.size
            if start + n > hi:
                raise UserError(f"{self.path}: a record runs past the end of the file; delete it to build it again")
            return Batch(Prebuilt(view[start: start + n], source_bytes), rows, values), HEADER.size + n
        return walk_mapped(self.path, self.byte_range, step)
