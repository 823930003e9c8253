"""The C batch cutter and CSV splitter (phase 2), through Python, with golden
values and against the data files' manifests."""

from __future__ import annotations

import pytest

from tsbench.data import native
from tsbench.data.batches import BatchReader, byte_ranges, csv_layout
from tsbench.data.datafile import open_datafile

from conftest import run_cli


def test_influx_values_golden():
    buf = bytearray(b'cpu,host=a x=1,y=2 10\n'
                    b'cpu,host=b s="a,b c",y=2i 11\n'          # quoted string with a comma and a space
                    b'we\\ ird,t\\,k=v\\ w f\\,1=1,f2=2 12\n'   # escaped space, comma in names
                    b'mem z=1\n'                               # no timestamp
                    b'\n'                                      # blank: not a record
                    b'tail x=1,y=1,z=1')                       # no final newline
    c = native.cut("influx", buf, 0, len(buf), 100, False)
    assert (c.rows, c.values) == (4, 2 + 2 + 2 + 1)
    assert c.bytes == len(buf) - len(b"tail x=1,y=1,z=1")
    c = native.cut("influx", buf, 0, len(buf), 100, True)
    assert (c.rows, c.values, c.bytes) == (5, 10, len(buf))
    c = native.cut("influx", buf, 0, len(buf), 2, True)
    assert (c.rows, c.values) == (2, 4)
    assert bytes(buf[:c.bytes]).count(b"\n") == 2


def test_influx_values_of_long_lines_golden():
    """Lines long enough for the 16-byte blocks and for more than 255 of them (the per-lane sums
    wrap at 255): a quote or backslash far into a line still takes the careful path."""
    many = ",".join("f=1" for _ in range(3000))     # 12 kB of fields: a comma in 4 of 16 lanes of each
                                                    # block, 750 in each of those lanes
    head = ",".join(f"f{i}=1" for i in range(41))
    lines = [b"m,t=v " + many.encode() + b" 123",                   # 3000 values
             b"m " + head.encode() + b',s="x,y z",g=2 5',           # a quoted comma past 16 bytes: 43
             b"m " + head.encode() + b",f\\,x=1 6",                 # an escaped comma in a name: 42
             b"m " + head.encode() + b" 1,2,3",                     # commas after the last space: 41
             b"m " + many.encode()]                                 # no timestamp: 3000
    buf = bytearray(b"\n".join(lines) + b"\n")
    c = native.cut("influx", buf, 0, len(buf), 100, False)
    assert (c.rows, c.values, c.bytes) == (5, 3000 + 43 + 42 + 41 + 3000, len(buf))


def test_csv_values_and_split_golden():
    layout = native.CsvLayout([("cpu", 1), ("mem", 2)])
    buf = bytearray(b"cpu,t0,h1,1,2\nmem,t1,a,,3,\ncpu,t2,,1,\n")
    c = native.cut("csv", buf, 0, len(buf), 10, False, layout)
    assert (c.rows, c.values, c.bytes) == (3, 4, len(buf))
    dst, parts = native.split_csv(layout, buf)
    assert parts == [(0, 17, 2, 3), (17, 9, 1, 1)]
    assert bytes(dst[:26]) == b"t0,h1,1,2\nt2,,1,\nt1,a,,3,\n"


def test_csv_unknown_measurement_is_one_line():
    layout = native.CsvLayout([("cpu", 1)])
    buf = bytearray(b"cpu,t0,h,1\ndisk,t0,h,1\n")
    with pytest.raises(native.CsvMeasurementError, match="'disk'.*measurements: cpu"):
        native.cut("csv", buf, 0, len(buf), 10, False, layout)
    with pytest.raises(native.CsvMeasurementError, match="'disk'"):
        native.split_csv(layout, buf)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cut")
    out = {}
    for name, args in {"devops.lp": ["--format", "influx"], "iot.csv": ["-u", "iot", "--format", "csv"],
                       "iot.lp": ["-u", "iot", "--format", "influx"], "iot.csv.zst": ["-u", "iot", "--format", "csv"],
                       "devops.lp.gz": ["--format", "influx"]}.items():
        scale = ["--scale", "5"] if "iot" in name else ["--scale", "3"]
        run_cli("generate", "-q", "--end", "2016-01-01T01:00:00Z", *scale, *args, "-o", str(d / name))
        out[name] = open_datafile(d / name)
    return out


@pytest.mark.parametrize("name", ["devops.lp", "iot.csv", "iot.lp", "iot.csv.zst", "devops.lp.gz"])
@pytest.mark.parametrize("batch", [1, 7, 1000, 10 ** 9])
def test_batches_add_up_to_the_manifest(files, name, batch):
    df = files[name]
    layout = csv_layout(df.tables()) if df.format == "csv" else None
    rows = values = nbytes = n = 0
    for b in BatchReader(df.path, df.format, batch, df.compression, layout):
        assert b.rows <= batch
        assert bytes(b.data[-1:]) == b"\n" and bytes(b.data).count(b"\n") == b.rows
        rows, values, nbytes, n = rows + b.rows, values + b.values, nbytes + b.nbytes, n + 1
    assert (rows, values, nbytes) == (df.rows, df.values, df.bytes)
    assert n == -(-df.rows // batch)          # every batch full but the last


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
def test_byte_ranges_split_on_records(files, parts):
    df = files["devops.lp"]
    ranges = byte_ranges(df.path, parts)
    assert ranges[0][0] == 0 and ranges[-1][1] == df.bytes
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    rows = values = 0
    data = df.path.read_bytes()
    for r in ranges:
        assert r[0] == 0 or data[r[0] - 1: r[0]] == b"\n"
        for b in BatchReader(df.path, df.format, 100, byte_range=r):
            rows, values = rows + b.rows, values + b.values
    assert (rows, values) == (df.rows, df.values)


def _mapped_rss(path) -> int:
    """Resident bytes of this process's mappings of `path`."""
    import psutil

    return sum(m.rss for m in psutil.Process().memory_maps(grouped=True) if m.path == str(path))


FOLIO = 2 << 20    # the largest piece the page cache keeps a file in (x86: a 2 MB folio); a fault maps all of it


def test_pages_behind_the_reader_are_unmapped_and_batches_still_read_right(tmp_path, monkeypatch):
    """The reader unmaps what it has passed, bar RESIDENT bytes; batches kept from
    before (in flight, in a load) read their pages back from the page cache. RESIDENT
    is set at a folio, so the bound does not depend on how the writer sized its writes."""
    import tsbench.data.batches as batches

    monkeypatch.setattr(batches, "RESIDENT", FOLIO)
    path = tmp_path / "devops.lp"
    run_cli("generate", "-q", "--scale", "10", "--end", "2016-01-01T03:00:00Z", "-o", str(path))
    df = open_datafile(path)                    # ~40 MB: 20 times 2 MB
    kept, peak = [], 0
    for b in BatchReader(df.path, df.format, 5000):
        kept.append(b.data)
        peak = max(peak, _mapped_rss(df.path))
    assert df.bytes > 16 * batches.RESIDENT
    assert 0 < peak <= 3 * batches.RESIDENT + FOLIO   # two RESIDENTs, a batch, and a folio read ahead
    assert b"".join(bytes(k) for k in kept) == df.path.read_bytes()
    monkeypatch.setattr(batches, "RESIDENT", 1 << 40)
    peak = 0
    for b in BatchReader(df.path, df.format, 5000):
        peak = max(peak, _mapped_rss(df.path))
    assert peak > df.bytes // 2                  # without the drops, the mapping grows with the file


def test_bad_batch_size():
    with pytest.raises(Exception, match="--batch-size: must be at least 1"):
        BatchReader("x", "influx", 0)


def _fnv1a(key: bytes) -> int:
    h = 1469598103934665603
    for b in key:
        h = ((h ^ b) * 1099511628211) & (2 ** 64 - 1)
    return h


def test_route_series_sends_each_record_where_its_series_key_hashes(tmp_path):
    """Golden: the part of each record is FNV-1a of its series key mod n, computed here
    apart from the C core (influx: up to the first unescaped space; csv: the measurement
    and the tag columns), records kept whole and in order within a part."""
    from tsbench.data.batches import csv_layout
    from tsbench.data.datafile import open_datafile
    from tsbench.data.native import cut, route_series

    for fmt in ("influx", "csv"):
        path = tmp_path / f"d.{fmt}"
        run_cli("generate", "-q", "--scale", "5", "--end", "2016-01-01T00:01:00Z", "--format", fmt, "-o", str(path))
        df = open_datafile(path)
        layout = csv_layout(df.tables()) if fmt == "csv" else None
        data = path.read_bytes()
        dst, parts = route_series(fmt, data, 3, layout)
        want = [[], [], []]
        for line in data.splitlines():
            if fmt == "influx":
                key = line.split(b" ", 1)[0]
            else:
                cols = line.split(b",")
                ntags = len(next(t for t in df.tables() if t.name == cols[0].decode()).tags)
                key = cols[0] + b"".join(c + b"," for c in cols[2: 2 + ntags])
            want[_fnv1a(key) % 3].append(line + b"\n")
        for p, lines in zip(parts, want):
            off, n = p.bytes
            assert bytes(dst[off: off + n]) == b"".join(lines) and p.rows == len(lines)
            assert p.values == cut(fmt, dst, off, off + n, 10**9, True, layout).values
        assert sum(p.rows for p in parts) == df.rows and all(p.rows for p in parts)
