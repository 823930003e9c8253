"""`tsbench import` of line protocol (tsbench.data.lpimport): the Parquet files read back against
values written by hand, escapes, nulls, chunking and row groups, broken files, determinism."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from test_lpscan import GOLDEN

from tsbench.core.errors import UserError
from tsbench.data import lpimport, lpscan

I64_MIN, I64_MAX, U64_MAX = -(2 ** 63), 2 ** 63 - 1, 2 ** 64 - 1
MY = "my meas,x"      # the golden file's escaped measurement
TAG = "dictionary<values=string, indices=int32, ordered=0>"

# GOLDEN read with --precision us, by hand: per measurement, its rows in file order (time in ns)
EXPECTED = {
    "cpu": [
        {"time": 1_000_000, "dc": "x,y", "host": "a b", "n": I64_MIN, "ok": True, "s": 'say "hi" \\o/', "u": U64_MAX,
         "usage": 1.5},
        {"time": 2_000_000, "dc": "x,y", "host": "a b", "n": I64_MAX, "ok": False, "s": "", "u": 0, "usage": -2.5e-3},
        {"time": 1_500_000, "dc": "z", "host": "c", "n": 1, "ok": False, "s": "a,b c=d", "u": 1, "usage": 0.1},
        {"time": 3_000_000, "dc": "z", "host": "c", "n": 2, "ok": True, "s": "", "u": 2, "usage": 3.0},
        {"time": 2_500_000, "dc": "z", "host": "c", "n": 3, "ok": True, "s": "", "u": 3, "usage": 4.0}],
    MY: [{"time": -5_000, "tag=k": "v=1", "f,1= k": 10, "g": 1000.0},
         {"time": None, "tag=k": "v=1", "f,1= k": 11, "g": None}],
    "mem": [{"time": 1000, "host": "a b", "Fa": False, "Tr": True, "fa": False, "flag": False, "free": 0.5, "t": True,
             "tr": True}],
}
TYPES = {"cpu": ["timestamp[ns]", TAG, TAG, "int64", "bool", "string", "uint64", "double"],
         MY: ["timestamp[ns]", TAG, "int64", "double"],
         "mem": ["timestamp[ns]", TAG, "bool", "bool", "bool", "bool", "double", "bool", "bool"]}


def rows(folder, name: str) -> list[dict]:
    """A measurement's rows as Python values, time as int64 ns."""
    table = pq.read_table(folder / lpimport.file_name(name))
    table = table.set_column(0, "time", table.column("time").cast("int64"))
    return table.to_pylist()


def imported(tmp_path, data: bytes, name: str = "in.lp", **kw):
    src = tmp_path / name
    src.write_bytes(data)
    out = tmp_path / (name + ".d")
    return lpimport.import_file(str(src), str(out), kw.pop("precision", "ns"), **kw), out


def test_golden_imports_exactly(tmp_path):
    manifest, out = imported(tmp_path, GOLDEN, precision="us")
    assert sorted(p.name for p in out.iterdir()) == sorted(["cpu.parquet", "mem.parquet", "import.json",
                                                           lpimport.file_name(MY)])
    for name, want in EXPECTED.items():
        assert rows(out, name) == want, name
        schema = pq.read_schema(out / lpimport.file_name(name))
        assert [str(f.type) for f in schema] == TYPES[name]
        assert schema.names == list(want[0])
    assert manifest["rows"] == {"cpu": 5, "mem": 1, MY: 2}
    assert manifest["files"][MY] == lpimport.file_name(MY) and lpimport.file_name(MY).startswith("my_meas_x-")
    assert json.loads((out / "import.json").read_text()) == json.loads(json.dumps(manifest))


def test_manifest_source_and_schema(tmp_path):
    manifest, _ = imported(tmp_path, GOLDEN, precision="us")
    src = manifest["source"]
    assert (src["size"], src["sha256"], src["lines"]) == (len(GOLDEN), hashlib.sha256(GOLDEN).hexdigest(), 11)
    assert manifest["schema"] == lpscan.scan_file(str(tmp_path / "in.lp"), "us")
    assert manifest["errors"] == []


# a missing tag, fields in two shapes, a string with escapes: tags and fields null where absent
NULLS = (b'w,a=1,b=x f=1i,s="q\\"1" 10\n'
         b"w,b=y g=2.5 20\n"
         b'w,a=2 f=3i,g=4,s="" 30\n'
         b"w,b=x,a=1 g=5 40\n")
NULLS_ROWS = [{"time": 10, "a": "1", "b": "x", "f": 1, "g": None, "s": 'q"1'},
              {"time": 20, "a": None, "b": "y", "f": None, "g": 2.5, "s": None},
              {"time": 30, "a": "2", "b": None, "f": 3, "g": 4.0, "s": ""},
              {"time": 40, "a": "1", "b": "x", "f": None, "g": 5.0, "s": None}]


def test_absent_tags_and_fields_are_null(tmp_path):
    _, out = imported(tmp_path, NULLS)
    assert rows(out, "w") == NULLS_ROWS


def test_chunks_and_row_groups_change_nothing_but_groups(tmp_path, monkeypatch):
    data = NULLS * 50
    _, whole = imported(tmp_path, data, "a.lp")
    monkeypatch.setattr(lpimport, "ROW_GROUP", 16)
    _, small = imported(tmp_path, data, "b.lp", chunk_bytes=64)
    assert rows(small, "w") == rows(whole, "w") == NULLS_ROWS * 50
    assert pq.ParquetFile(small / "w.parquet").num_row_groups > 5
    assert sorted(os.listdir(small)) == ["import.json", "w.parquet"]     # its parts merged
    assert pq.ParquetFile(whole / "w.parquet").num_row_groups == 1


def test_a_tag_and_a_field_first_seen_late(tmp_path):
    data = b"w f=1i 1\n" * 40 + b"w,late=x\\,y f=2i,z=\"s\" 2\n"
    _, out = imported(tmp_path, data, chunk_bytes=32)
    assert rows(out, "w") == [{"time": 1, "late": None, "f": 1, "z": None}] * 40 + \
        [{"time": 2, "late": "x,y", "f": 2, "z": "s"}]
    assert sorted(os.listdir(out)) == ["import.json", "w.parquet"]


@pytest.mark.parametrize("kept", [lpimport.SERIES_KEPT, 3])
def test_series_across_row_groups_and_batches(tmp_path, monkeypatch, kept):
    """Tags coded once a series: values seen in earlier batches, series lacking a tag, a row
    group using part of a tag's values (its dictionary holds those only); the same when the
    codes are dropped after each row group (more series than kept)."""
    monkeypatch.setattr(lpimport, "SERIES_KEPT", kept)
    lines = [f"w,h=h{i}{',z=odd' if i % 2 else ''} f={i}i {i}" for i in range(30)]
    lines += [f"w,h=h5,z=odd f={i}i {i}" for i in range(30, 70)] + ["w,h=h0 f=70i 70", "w,h=new f=71i 71"]
    monkeypatch.setattr(lpimport, "ROW_GROUP", 16)
    _, out = imported(tmp_path, ("\n".join(lines) + "\n").encode(), chunk_bytes=100)
    want = [{"time": i, "h": f"h{i}", "z": "odd" if i % 2 else None, "f": i} for i in range(30)]
    want += [{"time": i, "h": "h5", "z": "odd", "f": i} for i in range(30, 70)]
    want += [{"time": 70, "h": "h0", "z": None, "f": 70}, {"time": 71, "h": "new", "z": None, "f": 71}]
    assert rows(out, "w") == want
    pf = pq.ParquetFile(out / "w.parquet")
    for g in range(pf.num_row_groups):
        h = pf.read_row_group(g).column("h").combine_chunks()
        assert sorted(h.dictionary.to_pylist()) == sorted(set(h.to_pylist()))


def test_tag_values_not_utf8_kept_as_written(tmp_path):
    """A tag value that is not UTF-8 (the fuzz found one) is written as its bytes, as before."""
    manifest, out = imported(tmp_path, b"w,h=\xff\xfe f=1i 1\nw,h=a f=2i 2\nw,h=\xff\xfe f=3i 3\n")
    assert manifest["rows"] == {"w": 3}
    h = pq.read_table(out / "w.parquet").column("h").cast("string").cast("binary")
    assert h.to_pylist() == [b"\xff\xfe", b"a", b"\xff\xfe"]


# the Parquet encodings the import chooses, by column kind (any row group, merged parts too)
ENCODINGS = {"tag": "RLE_DICTIONARY", "double": "BYTE_STREAM_SPLIT", "int64": "DELTA_BINARY_PACKED",
             "timestamp[ns]": "DELTA_BINARY_PACKED"}


@pytest.mark.parametrize("data, chunk_bytes", [(GOLDEN, 1 << 20), (b"w f=1i 1\n" * 40 + b"w,late=x\\,y f=2i,g=0.5 2\n", 32)])
def test_encodings_by_column_kind(tmp_path, data, chunk_bytes, monkeypatch):
    monkeypatch.setattr(lpimport, "ROW_GROUP", 16)
    manifest, out = imported(tmp_path, data, precision="us", chunk_bytes=chunk_bytes)
    for name in manifest["files"].values():
        pf = pq.ParquetFile(out / name)
        for g in range(pf.num_row_groups):
            for i, f in enumerate(pf.schema_arrow):
                kind = "tag" if str(f.type) == TAG else str(f.type)
                encodings = pf.metadata.row_group(g).column(i).encodings
                assert ENCODINGS.get(kind, "PLAIN") in encodings, (name, f.name, encodings)
                assert kind == "tag" or "RLE_DICTIONARY" not in encodings, (name, f.name, encodings)


def test_deterministic_bytes(tmp_path):
    _, one = imported(tmp_path, GOLDEN, "a.lp", precision="us")
    _, two = imported(tmp_path, GOLDEN, "b.lp", precision="us")
    for f in one.iterdir():
        if f.suffix == ".parquet":
            assert f.read_bytes() == (two / f.name).read_bytes()


def test_type_change_writes_nothing(tmp_path):
    with pytest.raises(lpscan.LpScanError, match=r"in\.lp:3: field 'v' of measurement 'm' is string here, float"):
        imported(tmp_path, b"m v=1 1\nm v=2 2\nm v=\"x\" 3\n")
    assert sorted(os.listdir(tmp_path)) == ["in.lp"]


def test_existing_output_refused(tmp_path):
    (tmp_path / "in.lp.d").mkdir()
    with pytest.raises(UserError, match="exists already"):
        imported(tmp_path, GOLDEN)


def test_tag_and_field_of_one_name_refused(tmp_path):
    with pytest.raises(UserError, match="'x' is both a tag and a field"):
        imported(tmp_path, b"m,x=1 x=2 1\n")
    assert sorted(os.listdir(tmp_path)) == ["in.lp"]


def test_broken_line_cli_exit_2_nothing_written(tmp_path):
    src = tmp_path / "bad.lp"
    src.write_bytes(b"m v=1 1\n\nm,t v=2 2\n")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "tsbench", "import", str(src), "-o", str(out)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"tsbench: error: {src}:3: a tag without '=' or with an empty key or value"
    assert sorted(os.listdir(tmp_path)) == ["bad.lp"]


def test_rows_against_points_checked_and_folder_removed(tmp_path, monkeypatch):
    close = lpimport.Importer.close
    monkeypatch.setattr(lpimport.Importer, "close", lambda self: {**close(self), "cpu": 4})
    with pytest.raises(lpimport.ImportCountError, match="rows"):
        imported(tmp_path, GOLDEN, precision="us")
    assert sorted(os.listdir(tmp_path)) == ["in.lp"]
