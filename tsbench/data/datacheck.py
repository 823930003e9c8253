"""Phase 2, when a check fails: name the line of a data file that is not what its
dataset generates. The C simulator makes the file's bytes again (one process, the
file's format and entity range; for a file made from an import, storedfile writes its
view's text again) and they are compared with the file's, a buffer at a time; the
first differing byte's line is the one named, FILE:LINE. Generation runs at hundreds
of MB/s, so this costs about a read of the file; it runs only when stored values
differ from the file's figures (verify.py) or its hash does."""

from __future__ import annotations

import pathlib

from tsbench.data.batches import _open_stream
from tsbench.data.datafile import DataFile
from tsbench.data.generate import BUF_BYTES
from tsbench.data.native import Simulator

EXCERPT = 120          # characters of the changed line shown


def first_changed_line(df: DataFile) -> str | None:
    """"FILE:LINE:COLUMN: ..." naming the first line that differs from what the dataset
    generates (or where the file ends early or runs on), or None when it is the same."""
    lines, tail = 0, b""        # lines before this buffer, its last partial line
    with _open_stream(pathlib.Path(df.path), df.compression) as f:
        for made in _made(df):
            read = _read_exactly(f, len(made))
            if read != made:
                at = next((i for i, (a, b) in enumerate(zip(read, made)) if a != b), min(len(read), len(made)))
                return _name(df.path, lines + made.count(b"\n", 0, at) + 1, tail, read, at, f)
            lines += made.count(b"\n")
            tail = made[made.rfind(b"\n") + 1:]
        extra = f.read(1)
        return None if not extra else f"{df.path}:{lines + 1}: the data file goes on past what its dataset makes"


def _made(df: DataFile):
    """The bytes the dataset makes in the file's format, a buffer at a time: the simulator's,
    or (a file made from an import) the view's text (storedfile.chunks)."""
    ds = df.dataset
    if ds.stored:
        from tsbench.data.storedfile import chunks

        for data, _, _ in chunks(ds, df.format):
            yield data
        return
    lo, hi = df.manifest.get("entities") or (0, ds.entities)
    sim = Simulator(ds.compiled, ds.spec.seed, lo, hi, ds.start_ns, ds.interval_ns, ds.epochs, cache=df.format)
    buf = bytearray(max(BUF_BYTES, 2 * sim.record_bound(df.format)))
    while True:
        r = sim.fill(df.format, buf)
        yield bytes(buf[: r.bytes])
        if r.done:
            return


def _read_exactly(f, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        b = f.read(n - len(out))
        if not b:
            break
        out += b
    return bytes(out)


def _name(path, line: int, tail: bytes, read: bytes, at: int, f) -> str:
    """FILE:LINE:COLUMN and the changed line's text around the change (the line may
    begin in the buffer before and end in the next)."""
    if not read[at:at + 1]:
        return f"{path}:{line}: the data file ends before what its dataset makes"
    start = read.rfind(b"\n", 0, at) + 1
    before = (tail if start == 0 else b"") + read[start:at]
    after = read[at:]
    if b"\n" not in after:
        after += f.read(4096)
    after = after.split(b"\n", 1)[0]
    a, b = before[-EXCERPT // 2:], after[:EXCERPT // 2]
    shown = ("..." if len(a) < len(before) else "") + (a + b).decode("utf-8", "replace") + \
        ("..." if len(b) < len(after) else "")
    return f"{path}:{line}:{len(before) + 1}: differs from what its dataset generates: {shown}"
