"""Remote-write bodies built before the timed load (data/bodies.py): the companion file holds
each batch's body as RemoteWriteBody builds it, is reused until the data file changes, cuts
into whole records, and the load phase sends its bodies to a remote-write target."""

from __future__ import annotations

import asyncio
import os

import cramjam

from tsbench.core.model import Tables
from tsbench.data import bodies, native
from tsbench.data.batches import BatchReader
from tsbench.data.datafile import open_datafile
from tsbench.databases.shared.remote_write import RemoteWriteBody
from tsbench.databases.shared.target import Target
from tsbench.load.run import LoadOptions, load

from conftest import run_cli


def datafile(tmp_path):
    path = tmp_path / "devops.lp"
    run_cli("generate", "-q", "-u", "devops", "--scale", "3", "--end", "2016-01-01T00:20:00Z", "-o", str(path))
    return open_datafile(path)


def test_companion_holds_each_batch_body_and_is_reused(tmp_path):
    df = datafile(tmp_path)
    path, built = bodies.prebuilt(df, 500, RemoteWriteBody())
    assert built and path == tmp_path / "devops.lp.remote-write-500.bodies"
    assert not list(tmp_path.glob("*.tmp"))
    batches = list(BatchReader(df.path, "influx", 500))
    got = list(bodies.BodyReader(path))
    assert len(got) == len(batches) > 5
    for b, g in zip(batches, got):
        assert (g.rows, g.values, g.nbytes) == (b.rows, b.values, b.nbytes)
        want = bytes(native.RemoteWriteEncoder().encode(b.data).body)
        assert bytes(cramjam.snappy.decompress_raw(bytes(g.data.body))) == want
    mtime = path.stat().st_mtime_ns
    assert bodies.prebuilt(df, 500, RemoteWriteBody()) == (path, False) and path.stat().st_mtime_ns == mtime
    assert bodies.prebuilt(df, 700, RemoteWriteBody())[0] != path      # another batch size, another file


def test_a_changed_data_file_builds_the_companion_again(tmp_path):
    df = datafile(tmp_path)
    path, _ = bodies.prebuilt(df, 500, RemoteWriteBody())
    before = path.read_bytes()
    os.utime(df.path, ns=(1, 1))
    path.write_bytes(b"")               # were it reused, its reader would find no batch
    assert bodies.prebuilt(df, 500, RemoteWriteBody()) == (path, True) and path.read_bytes() == before


def test_record_ranges_are_whole_records_covering_the_file(tmp_path):
    df = datafile(tmp_path)
    path, _ = bodies.prebuilt(df, 300, RemoteWriteBody())
    whole = [(b.rows, bytes(b.data.body)) for b in bodies.BodyReader(path)]
    for parts in (1, 2, 3, 7):
        ranges = bodies.record_ranges(path, parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == path.stat().st_size
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        cut = [(b.rows, bytes(b.data.body)) for r in ranges for b in bodies.BodyReader(path, r)]
        assert cut == whole


class Sink(Target):
    """A remote-write target that keeps what write() would post."""

    name = "rw-sink"
    format = "influx"
    keeps_data = False

    def __init__(self):
        super().__init__()
        self.remote_write = RemoteWriteBody()
        self.posted: list[tuple[bool, bytes]] = []

    async def create(self, tables: Tables, if_exists: str) -> None:
        pass

    async def write(self, batch) -> None:
        self.posted.append((isinstance(batch.data, bodies.Prebuilt), bytes(self.remote_write.body(batch.data))))

    async def count(self, tables: Tables) -> int:
        return 0


def test_the_load_phase_posts_the_prebuilt_bodies(tmp_path):
    df = datafile(tmp_path)
    opts = LoadOptions(workers=2, batch_size=400, verify=False, compact=False, progress=False)
    t = Sink()
    res = asyncio.run(load(t, df, opts))
    assert (res.rows, res.values, res.bytes) == (df.rows, df.values, df.bytes)
    assert all(pre for pre, _ in t.posted)
    path = bodies.companion_path(df.path, 400)
    assert res.summary()["bodies"] | {"seconds": 0, "cpu_seconds": 0} == {
        "format": "remote-write", "file": str(path), "built": True, "seconds": 0, "cpu_seconds": 0,
        "bytes": path.stat().st_size}
    assert asyncio.run(load(Sink(), df, opts)).bodies["built"] is False      # the second load reuses them
    want = [bytes(RemoteWriteBody().body(b.data)) for b in BatchReader(df.path, "influx", 400)]
    assert sorted(body for _, body in t.posted) == sorted(want)
