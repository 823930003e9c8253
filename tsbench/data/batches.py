"""Cutting a data file into batches of whole records (phase 2: load).

Uncompressed files are memory-mapped: a batch is a view into the mapping, so
nothing is copied between the page cache and the socket. The pages read are
unmapped again (MADV_DONTNEED) once the reader is RESIDENT bytes past them, so
the mapping does not make a load's client look as large as its data file; a
batch still in flight over them reads them back from the page cache. Compressed files are
streamed through the decompressor into fresh chunks. Record boundaries, row
and value counts come from the C core (native.cut); no Python per row."""

from __future__ import annotations

import mmap
import os
import pathlib
from typing import Iterator

from tsbench.core.errors import UserError
from tsbench.core.model import Batch, Tables
from tsbench.data import native

CHUNK = 32 << 20
RESIDENT = 64 << 20     # bytes of the mapping left resident behind the reader


def csv_layout(tables: Tables) -> native.CsvLayout:
    return native.CsvLayout([(t.name, len(t.tags)) for t in tables])


def byte_ranges(path: str | os.PathLike, parts: int) -> list[tuple[int, int]]:
    """Split a file into `parts` byte ranges that start and end on record boundaries."""
    size = os.path.getsize(path)
    cuts = [0]
    with open(path, "rb") as f:
        for i in range(1, parts):
            pos = max(size * i // parts, cuts[-1])
            f.seek(pos)
            if pos > 0:
                f.seek(pos - 1)
                line = f.readline()           # to the end of the record pos falls in
                pos = pos - 1 + len(line)
            cuts.append(min(pos, size))
    cuts.append(size)
    return [(cuts[i], cuts[i + 1]) for i in range(parts)]


def _decompress_errors() -> tuple[type[Exception], ...]:
    """What the decompressors raise on damaged data: a bad CRC or header (gzip.BadGzipFile),
    a bad deflate block (zlib.error), a stream cut short (EOFError), a bad zstd frame."""
    import gzip
    import zlib

    import zstandard

    return gzip.BadGzipFile, zlib.error, EOFError, zstandard.ZstdError


def _open_stream(path: pathlib.Path, compression: str):
    if compression == "gzip":
        import gzip

        return gzip.open(path, "rb")
    if compression == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().stream_reader(open(path, "rb"), closefd=True)
    return open(path, "rb")


class BatchReader:
    """Iterate the batches of `batch_rows` whole records of one data file
    (or one byte range of an uncompressed one)."""

    def __init__(self, path: str | os.PathLike, fmt: str, batch_rows: int, compression: str = "none",
                 layout: native.CsvLayout | None = None, byte_range: tuple[int, int] | None = None):
        if batch_rows < 1:
            raise UserError(f"--batch-size: must be at least 1 row, got {batch_rows}")
        if fmt not in native.FORMATS:
            raise UserError(f"unknown data format {fmt!r} (one of {', '.join(native.FORMATS)})")
        if byte_range is not None and compression != "none":
            raise UserError("several load processes need an uncompressed data file")
        self.path = pathlib.Path(path)
        self.fmt = fmt
        self.batch_rows = batch_rows
        self.compression = compression
        self.layout = layout
        self.byte_range = byte_range

    def __iter__(self) -> Iterator[Batch]:
        if self.compression == "none":
            return self._mapped()
        return self._streamed()

    def _mapped(self) -> Iterator[Batch]:
        def step(mm, view, pos, hi):
            c = native.cut(self.fmt, mm, pos, hi, self.batch_rows, True, self.layout)
            return (Batch(view[pos: pos + c.bytes], c.rows, c.values) if c.rows else None), c.bytes
        return walk_mapped(self.path, self.byte_range, step)

    def _streamed(self) -> Iterator[Batch]:
        with _open_stream(self.path, self.compression) as f:
            buf, start, filled, eof = bytearray(CHUNK), 0, 0, False
            while True:
                while start < filled:
                    c = native.cut(self.fmt, buf, start, filled, self.batch_rows, eof, self.layout)
                    if c.rows < self.batch_rows and not eof:
                        break               # a partial batch: read more first
                    if c.bytes == 0:
                        break
                    if c.rows:
                        yield Batch(memoryview(buf)[start: start + c.bytes], c.rows, c.values)
                    start += c.bytes
                if eof:
                    return
                tail = filled - start
                size = CHUNK if tail < CHUNK // 2 else 2 * tail + CHUNK
                nb = bytearray(size)        # a new chunk: batches in flight keep the old one
                nb[:tail] = buf[start:filled]
                buf, start, filled = nb, 0, tail
                while filled < len(buf):
                    n = self._read(f, memoryview(buf)[filled:])
                    if not n:
                        eof = True
                        break
                    filled += n

    def _read(self, f, into: memoryview) -> int:
        """f.readinto(into); a stream that does not decompress is a UserError naming the file."""
        try:
            return f.readinto(into)
        except Exception as exc:
            if not isinstance(exc, _decompress_errors()):
                raise
            raise UserError(f"{self.path}: not valid {self.compression} data ({_reason(exc)}): the file is "
                            "damaged or truncated; regenerate it") from None


def _reason(exc: BaseException) -> str:
    """A decompressor's error in one line (zlib's "Error -3 while decompressing data: ...")."""
    return " ".join(str(exc).split()) or type(exc).__name__


def walk_mapped(path, byte_range: tuple[int, int] | None, step) -> Iterator[Batch]:
    """The batches of a memory-mapped file, or of one byte range of it: step(mm, view, pos, hi)
    gives the batch at pos (None: nothing to send) and the bytes it takes (0: the end). Pages
    read are unmapped again RESIDENT bytes behind the reader."""
    size = os.path.getsize(path)
    lo, hi = byte_range or (0, size)
    if hi <= lo:
        return
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    mm.madvise(mmap.MADV_SEQUENTIAL)
    view = memoryview(mm)
    pos, dropped = lo, lo - lo % mmap.PAGESIZE
    while pos < hi:
        batch, n = step(mm, view, pos, hi)
        if n == 0:
            break
        if batch is not None:
            yield batch
        pos += n
        if pos - dropped >= 2 * RESIDENT:
            dropped = unmap_pages(mm, dropped, pos - RESIDENT)


def unmap_pages(mm: mmap.mmap, start: int, end: int) -> int:
    """Unmap the whole pages of [start, end) from this process (they stay in the page
    cache; a later read maps them again); returns where the next drop starts."""
    end -= end % mmap.PAGESIZE
    if end > start:
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)
    return max(start, end)
