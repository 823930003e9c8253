"""The value statistics generate writes into the manifest (issue 35, item 2): golden
values, what numpy computes from the parsed file, for every format, process count and
older files (one pass of the simulator)."""

import json
import math
from collections import defaultdict

import numpy as np
import pytest

from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.data.valuestats import stats_of

from conftest import lift_process_plan

CASES = {   # tiny datasets: ints and floats (devops), faults: missing, late, null fields and tags (iot)
    "devops": dict(use_case="devops", scale=3, end="2016-01-01T00:20:00Z", params={}),
    "iot": dict(use_case="iot", scale=5, end="2016-01-01T01:00:00Z", params={}),
}


def _dataset(case: str):
    c = CASES[case]
    return resolve(DatasetSpec(use_case=c["use_case"], scale=c["scale"], start="2016-01-01T00:00:00Z",
                               end=c["end"], interval="10s", seed=7, params=c["params"], schema_file=None))


def _parse_influx(text: str) -> tuple[dict, dict]:
    """Per (measurement, field) the values as written, and per measurement its first tag's values."""
    values, series = defaultdict(list), defaultdict(set)
    for line in text.splitlines():
        head, fields, _ = line.split(" ")
        m, *tags = head.split(",")
        series[m].add(tags[0])
        for kv in fields.split(","):
            k, v = kv.split("=")
            values[m, k].append(int(v[:-1]) if v.endswith("i") else float(v))
    return values, series


def _golden(values: dict, series: dict, tables) -> dict:
    out = {}
    for t in tables:
        fields = {}
        for c in t.fields:
            v = values.get((t.name, c.name), [])
            a = np.array(v, dtype=object if c.type == "int" else np.float64)
            fields[c.name] = {"count": len(v), "sum": sum(v) if c.type == "int" else math.fsum(v),
                              "sum_abs": float(sum(abs(x) for x in v)),
                              "min": a.min() if len(v) else None, "max": a.max() if len(v) else None}
        out[t.name] = {"series": len(series[t.name]), "fields": fields}
    return out


def _assert_match(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for table, w in want.items():
        g = got[table]
        assert g["series"] == w["series"], table
        assert g["fields"].keys() == w["fields"].keys(), table
        for name, wf in w["fields"].items():
            gf = g["fields"][name]
            where = f"{table}.{name}"
            assert gf["count"] == wf["count"] and gf["min"] == wf["min"] and gf["max"] == wf["max"], where
            assert type(gf["sum"]) is type(wf["sum"]), where       # integer fields: an exact int sum
            n = wf["count"]
            assert abs(gf["sum"] - wf["sum"]) <= 2 * max(n - 1, 1) * 2.0 ** -53 * wf["sum_abs"], where
            assert gf["sum_abs"] == pytest.approx(wf["sum_abs"], rel=1e-12), where


@pytest.mark.parametrize("case", list(CASES))
def test_manifest_stats_equal_what_the_file_holds(tmp_path, case):
    ds = _dataset(case)
    out = tmp_path / "f.lp"
    generate(ds, "influx", str(out), show_progress=False)
    manifest = json.loads((tmp_path / "f.lp.manifest.json").read_text())
    values, series = _parse_influx(out.read_text())
    want = _golden(values, series, open_datafile(out).tables())
    _assert_match(manifest["stats"], want)
    assert sum(f["count"] for t in want.values() for f in t["fields"].values()) == manifest["values"]
    if case == "iot":    # the faults are there: some values null, so counts differ between fields
        counts = {f["count"] for f in want["readings"]["fields"].values()}
        assert len(counts) > 1


@pytest.mark.parametrize("case", list(CASES))
def test_stats_are_the_same_for_csv_processes_and_one_simulator_pass(tmp_path, monkeypatch, case):
    """csv and influx, one process and three (the merge), and stats_of (an older file's
    figures from the simulator) give the same counts, min and max, and sums within the bound."""
    ds = _dataset(case)
    generate(ds, "influx", str(tmp_path / "a.lp"), show_progress=False)
    base = json.loads((tmp_path / "a.lp.manifest.json").read_text())["stats"]
    lift_process_plan(monkeypatch)
    generate(ds, "csv", str(tmp_path / "b.csv"), processes=3, show_progress=False)
    m = json.loads((tmp_path / "b.csv.manifest.json").read_text())
    assert m["timing"]["processes"] == 3
    for other in (m["stats"], stats_of(ds, 0, ds.entities)):
        _assert_match(other, base)


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_first_changed_line_names_the_edited_line(tmp_path, compression):
    """A byte changed past the first buffers (1 MB each) is named FILE:LINE:COLUMN; the
    file as generated has no changed line."""
    from tsbench.data.datacheck import first_changed_line

    ds = resolve(DatasetSpec(use_case="devops", scale=3, start="2016-01-01T00:00:00Z", end="2016-01-01T02:00:00Z",
                             interval="10s", seed=7, params={}, schema_file=None))
    path = tmp_path / ("f.lp.gz" if compression == "gzip" else "f.lp")
    generate(ds, "influx", str(path), show_progress=False)
    assert first_changed_line(open_datafile(path)) is None
    import gzip

    data = gzip.decompress(path.read_bytes()) if compression == "gzip" else path.read_bytes()
    assert len(data) > 3 << 20
    lines = data.split(b"\n")
    n = len(lines) * 2 // 3
    col = lines[n].index(b"=") + 1
    lines[n] = lines[n][:col] + b"x" + lines[n][col + 1:]
    data = b"\n".join(lines)
    path.write_bytes(gzip.compress(data) if compression == "gzip" else data)
    manifest = tmp_path / (path.name + ".manifest.json")
    m = json.loads(manifest.read_text())
    m["file_bytes"] = path.stat().st_size
    manifest.write_text(json.dumps(m))
    note = first_changed_line(open_datafile(path))
    assert note.startswith(f"{path}:{n + 1}:{col + 1}: differs from what its dataset generates: "), note
