"""`tsbench import` of CSV (tsbench.data.csvimport): a hand-written golden file read back against
values written by hand, the same Parquet and schema as the line-protocol import of the same
points, time units, and rows that cannot be imported (FILE:LINE: reason, exit 2, nothing left)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tsbench.core.errors import UserError
from tsbench.data import csvimport, lpimport

GOLDEN = Path(__file__).parent.parent / "data" / "own" / "golden.csv"
I64_MIN, I64_MAX, U64_MAX = -(2 ** 63), 2 ** 63 - 1, 2 ** 64 - 1
TAG = "dictionary<values=string, indices=int32, ordered=0>"

# GOLDEN by hand (tags host, dc; big stated unsigned; the rest inferred): rows in file order
EXPECTED = [
    {"time": 1000, "dc": "x,y", "host": "a b", "big": U64_MAX, "n": I64_MIN, "note": 'say "hi"', "ok": True,
     "usage": 1.5},
    {"time": 2000, "dc": "x,y", "host": "a b", "big": 0, "n": I64_MAX, "note": None, "ok": False, "usage": -2.5e-3},
    {"time": 1500, "dc": "z", "host": "c", "big": 1, "n": 1, "note": "a,b c=d", "ok": False, "usage": 0.1},
    {"time": 3000, "dc": "z", "host": "c", "big": 2, "n": 2, "note": "", "ok": True, "usage": 3.0},
    {"time": 2500, "dc": "z", "host": "c", "big": 3, "n": 3, "note": None, "ok": True, "usage": 4.0},
    {"time": 2500, "dc": "z", "host": "c", "big": 4, "n": 4, "note": None, "ok": False, "usage": 5.0},
    {"time": 2600, "dc": None, "host": "c", "big": None, "n": 5, "note": "plain", "ok": None, "usage": None},
]
TYPES = ["timestamp[ns]", TAG, TAG, "uint64", "int64", "string", "bool", "double"]


def rows(folder: Path, name: str) -> list[dict]:
    table = pq.read_table(folder / lpimport.file_name(name))
    return table.set_column(0, "time", table.column("time").cast("int64")).to_pylist()


def golden(tmp_path, **kw):
    out = tmp_path / "g"
    kw = {"tags": ["host", "dc"], "types": {"big": "unsigned"}, **kw}
    return csvimport.import_csv(str(GOLDEN), str(out), **kw), out


def test_golden_imports_exactly(tmp_path):
    manifest, out = golden(tmp_path)
    assert sorted(p.name for p in out.iterdir()) == ["golden.parquet", "import.json"]
    assert rows(out, "golden") == EXPECTED
    assert [str(f.type) for f in pq.read_schema(out / "golden.parquet")] == TYPES
    assert manifest["rows"] == {"golden": 7}
    assert json.loads((out / "import.json").read_text()) == json.loads(json.dumps(manifest))


def test_golden_schema_report(tmp_path):
    manifest, _ = golden(tmp_path, measurement="cpu")
    s = manifest["schema"]
    assert s["format"] == "csv" and manifest["format"] == "tsbench-import"
    assert {k: s["counts"][k] for k in ("lines", "points", "blank", "header", "file_lines")} == \
        {"lines": 9, "points": 7, "blank": 1, "header": 1, "file_lines": 9}
    m = s["measurements"]["cpu"]
    assert (m["points"], m["series"], m["out_of_order"], m["duplicates"]) == (7, 3, 1, 1)
    assert m["tags"] == {"dc": {"cardinality": 2, "exact": True}, "host": {"cardinality": 2, "exact": True}}
    assert {f: (d["type"], d["values"], d["nulls"]) for f, d in m["fields"].items()} == {
        "big": ("unsigned", 6, 1), "n": ("integer", 7, 0), "note": ("string", 4, 3), "ok": ("boolean", 6, 1),
        "usage": ("float", 6, 1)}
    assert m["time"] == {"min_ns": 1000, "max_ns": 3000}
    assert (m["interval"]["steps"], m["interval"]["median_ns"], m["interval"]["max_ns"]) == (2, 1000, 1500)
    assert s["csv"] == {"time": "time", "unit": "ns", "tags": ["dc", "host"], "measurement": "cpu",
                        "types": {"big": "unsigned", "n": "integer", "note": "string", "ok": "boolean",
                                  "usage": "float"}, "stated": ["big"]}
    assert manifest["source"]["lines"] == 9 and manifest["source"]["size"] == GOLDEN.stat().st_size


# the same points as line protocol and as CSV (absent tags and fields, an empty string, every type)
SAME_LP = (b'cpu,host=a\\ b,dc=x\\,y usage=1.5,n=-3i,big=7u,ok=true,note="say \\"hi\\"" 1000\n'
           b"cpu,host=c,dc=z usage=2,n=4i,big=8u,ok=false 1500\n"
           b'cpu,host=c usage=3.25,n=5i,note="" 2000\n'
           b"cpu,dc=z,host=a\\ b n=6i 1200\n")
SAME_CSV = (b"ts,host,dc,usage,n,big,ok,note\n"
            b'1000,a b,"x,y",1.5,-3,7,true,"say ""hi"""\n'
            b"1500,c,z,2,4,8,false,\n"
            b'2000,c,,3.25,5,,,""\n'
            b"1200,a b,z,,6,,,\n")


def test_csv_and_line_protocol_of_the_same_points_import_alike(tmp_path):
    (tmp_path / "a.lp").write_bytes(SAME_LP)
    (tmp_path / "b.csv").write_bytes(SAME_CSV)
    lp = lpimport.import_file(str(tmp_path / "a.lp"), str(tmp_path / "lp"), "ms")
    csv = csvimport.import_csv(str(tmp_path / "b.csv"), str(tmp_path / "csv"), "ts", "ms", ["host", "dc"], "cpu",
                               {"big": "unsigned", "ok": "boolean", "note": "string"})
    a, b = pq.read_table(tmp_path / "lp" / "cpu.parquet"), pq.read_table(tmp_path / "csv" / "cpu.parquet")
    assert a.schema == b.schema
    assert decoded(a).equals(decoded(b))
    assert lp["schema"]["measurements"] == csv["schema"]["measurements"]
    assert (lp["rows"], lp["files"], lp["layout"]) == (csv["rows"], csv["files"], csv["layout"])


def decoded(table: pa.Table) -> pa.Table:
    """The table with its dictionary columns as plain strings (dictionaries differ by writer)."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            table = table.set_column(i, f.name, table.column(i).cast(pa.string()))
    return table.combine_chunks()


@pytest.mark.parametrize("unit,times", [("s", "1,2"), ("ms", "1000,2000"), ("us", "1000000,2000000"),
                                        ("ns", "1000000000,2000000000"),
                                        ("rfc3339", "1970-01-01T00:00:01Z,1970-01-01T01:00:02+01:00")])
def test_time_units(tmp_path, unit, times):
    t1, t2 = times.split(",")
    src = tmp_path / "u.csv"
    src.write_text(f"time,v\n{t1},1\n{t2},2\n")
    csvimport.import_csv(str(src), str(tmp_path / "o"), unit=unit)
    assert [r["time"] for r in rows(tmp_path / "o", "u")] == [1_000_000_000, 2_000_000_000]


@pytest.mark.parametrize("text,kw,want", [
    (b"time,h,v\n1,a,1\n\n\n2,a\n", {}, "5: 2 cells where the header has 3"),
    (b"time,h,v\n1,a,1\n\n,a,2\n", {}, "4: no time (an empty cell)"),
    (b"time,h,v\n1,a,1\n1.5,a,2\n", {}, "3: time '1.5' is not an integer (--csv-time-unit ns)"),
    (b"time,v\n2016-01-01T00:00:00Z,1\n2016-01-01 00:00:00,2\n", {"unit": "rfc3339"}, "3: time '2016-01-01 00:00:00' is not an RFC 3339"),
    (b"time,v\n1,1\n99999999999,2\n", {"unit": "s"}, "3: time 99999999999 s is beyond the range"),
    (b"time,v\n1,1\n2,x\n", {"types": {"v": "float"}}, "3: column 'v': 'x' is not a float"),
    (b"time,v\r\n1,1\r\n\r\n\r\n2,x\r\n", {"types": {"v": "float"}}, "5: column 'v': 'x' is not a float"),
    (b"time,h,v\n1,a,1\n", {"tags": ["h", "host"]}, "1: no column 'host' (named in --csv-tags); the columns: time, h, v"),
    (b"ts,v\n1,1\n", {}, "1: no column 'time' (named in --csv-time)"),
    (b"time,v,v\n1,1,2\n", {}, "1: column 'v' appears twice in the header"),
    (b"time,v\n", {}, "2: no data rows after the header"),
])
def test_rows_that_cannot_be_imported(tmp_path, text, kw, want):
    src = tmp_path / "e.csv"
    src.write_bytes(text)
    with pytest.raises(csvimport.CsvImportError) as err:
        csvimport.import_csv(str(src), str(tmp_path / "o"), **kw)
    assert str(err.value).startswith(f"{src}:{want}")
    assert os.listdir(tmp_path) == ["e.csv"]


def test_a_type_taken_from_the_first_batch_fails_later_with_its_line(tmp_path):
    src = tmp_path / "late.csv"
    src.write_bytes(b"time,v\n" + b"".join(b"%d,%d\n" % (i, i) for i in range(1, 2000)) + b"2000,2.5\n")
    with pytest.raises(csvimport.CsvImportError, match=r"late.csv:2001: column 'v': '2.5' is not an integer "
                                                       r"\(its type taken from the first rows; state it"):
        csvimport.import_csv(str(src), str(tmp_path / "o"), block_bytes=1 << 10)
    m = csvimport.import_csv(str(src), str(tmp_path / "o"), types={"v": "float"}, block_bytes=1 << 10)
    assert m["rows"] == {"late": 2000} and m["schema"]["measurements"]["late"]["interval"]["median_ns"] == 1


def test_a_quoted_line_break_fails_the_line_count(tmp_path):
    src = tmp_path / "q.csv"
    src.write_bytes(b'time,v\n1,"a\nb"\n2,c\n')
    with pytest.raises(UserError, match="2 rows read from 3 data lines: a quoted value holds a line break"):
        csvimport.import_csv(str(src), str(tmp_path / "o"))


def test_cli_format_from_the_extension_and_exit_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = [sys.executable, "-m", "tsbench", "import", "-q"]
    ok = subprocess.run([*run, str(GOLDEN), "-o", str(tmp_path / "g"), "--csv-tags", "host,dc",
                         "--csv-types", "big=unsigned"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert ok.returncode == 0, ok.stderr
    assert rows(tmp_path / "g", "golden") == EXPECTED
    (tmp_path / "bad.csv").write_text("time,v\n1,1\n\n2\n3,3,3\n")
    bad = subprocess.run([*run, str(tmp_path / "bad.csv"), "-o", str(tmp_path / "b")], capture_output=True, check=False,
                         text=True, env=env, timeout=120)
    assert (bad.returncode, bad.stderr) == (2, f"tsbench: error: {tmp_path / 'bad.csv'}:4: 1 cells where the header has 2\n")
    lp = subprocess.run([*run, str(tmp_path / "bad.csv"), "--format", "influx", "--csv-tags", "v", "-o",
                         str(tmp_path / "c")], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert lp.returncode == 2 and "--csv-tags applies to CSV files" in lp.stderr
    assert sorted(os.listdir(tmp_path)) == ["bad.csv", "g"]
