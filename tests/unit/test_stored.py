"""An import as a dataset (tsbench.data.stored, storedfile; issue 39): the loadable view of the
hand-written file tests/data/own/every_type.lp (fields left out named, rows without a
timestamp or a numeric value counted, a duplicate merged, unsigned at the int64 bound), the
data files written from it against golden bytes checked by hand, a data file's manifest
opening the import again, an edited line named FILE:LINE, and the one-line errors."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from tsbench.core.errors import UserError
from tsbench.data import lpimport
from tsbench.data.datacheck import first_changed_line
from tsbench.data.datafile import open_datafile, tables_of
from tsbench.data.dataset import Dataset
from tsbench.data.stored import open_stored
from tsbench.data.storedfile import write_datafile

from conftest import assert_one_line, call

OWN = pathlib.Path(__file__).parent.parent / "data" / "own"
SOURCE = OWN / "every_type.lp"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("own") / "every_type"
    lpimport.import_file(str(SOURCE), str(out), "ns")
    return out


def small(tmp_path, text: str):
    tmp_path.mkdir(exist_ok=True)
    src = tmp_path / "in.lp"
    src.write_text(text)
    lpimport.import_file(str(src), str(tmp_path / "d"), "ns")
    return open_stored(tmp_path / "d")


def test_the_view_names_what_it_leaves_out(folder):
    ds = open_stored(folder)
    assert ds.stored and not Dataset.stored
    assert [(t.name, t.tags, [(c.name, c.type) for c in t.fields]) for t in ds.tables] == [
        ("counters", ("host",), [("n", "int"), ("rate", "float")]),
        ("weather", ("city", "station"), [("hum", "int"), ("temp", "float"), ("visits", "int")])]
    ex = ds.excluded
    assert ex["counters.big"] == "unsigned values beyond a signed 64-bit integer"
    assert ex["weather.note"].startswith("string fields") and ex["weather.ok"].startswith("boolean fields")
    assert ex["events"] == "no numeric field" and "events.msg" in ex
    assert ex["counters"].startswith("1 of 7 rows") and "1 without a timestamp" in ex["counters"]
    assert ex["weather"].startswith("2 of 18 rows") and "1 without a numeric value" in ex["weather"]
    assert "1 duplicates" in ex["weather"] and "1 times cut to the microsecond" in ex["weather"]
    assert (ds.tables.rows, ds.tables.values) == (22, 44)
    f = ds.figures
    assert (f["counters"]["no_time"], f["weather"]["no_value"], f["weather"]["duplicates"]) == (1, 1, 1)
    assert f["weather"]["fields"]["hum"] == {"count": 14, "sum": 1234567890123 + 40 + 41 - 5 + 3 + 4 - 42 + 0 + 6 +
                                             70 + 1 + 72 + 2 - 2, "sum_abs": f["weather"]["fields"]["hum"]["sum_abs"],
                                             "min": -42, "max": 1234567890123}
    assert f["weather"]["null_tags"] and not f["counters"]["null_tags"]
    assert ds.describe()["excluded"] == ex and ds.describe()["source"] == "import"
    assert json.loads((folder / "view.json").read_text())["figures"] == f      # kept for the next open


def test_unsigned_loads_as_int_up_to_the_int64_bound(tmp_path):
    fits = small(tmp_path, "m u=9223372036854775807u,v=1u 1000\nm u=0u,v=18446744073709551615u 2000\n")
    assert [c.name for c in fits.tables.tables[0].fields] == ["u"] and "m.v" in fits.excluded
    assert fits.figures["m"]["fields"]["u"]["max"] == 2 ** 63 - 1


def test_nothing_loadable_is_one_error(tmp_path):
    with pytest.raises(UserError, match="no row with a timestamp and a numeric value"):
        small(tmp_path, "m v=1\nm v=2\n")


@pytest.mark.parametrize("fmt", ["influx", "csv"])
def test_data_file_bytes_golden(folder, tmp_path, fmt):
    """every_type.{fmt}.golden was read line by line against every_type.lp once, by hand."""
    path = tmp_path / f"data.{fmt}"
    m = write_datafile(open_stored(folder), fmt, str(path))
    assert path.read_bytes() == (OWN / f"every_type.{fmt}.golden").read_bytes()
    assert (m["rows"], m["values"], m["bytes"], m["compression"]) == (22, 44, path.stat().st_size, "none")
    df = open_datafile(path, check_data=True)
    assert df.dataset.stored and df.dataset.meta_sha256 == m["spec"]["import_sha256"]
    assert df.tables() == tables_of(df.dataset, 22, 44) == open_stored(folder).tables
    assert m["stats"]["weather"]["fields"]["temp"]["max"] == 1.7976931348623157e308
    assert first_changed_line(df) is None


def test_escaped_measurement_and_tags(tmp_path):
    ds = small(tmp_path, 'my\\ meas\\,x,k=v\\=1\\ 2,q=a"b f=1.5,s="t" 1500\nm\\ 2,k=a\\,b f=2 1000\n')
    write_datafile(ds, "influx", str(tmp_path / "a.lp"))
    assert (tmp_path / "a.lp").read_text() == ('m\\ 2,k=a\\,b f=2 1000\n'
                                               'my\\ meas\\,x,k=v\\=1\\ 2,q=a"b f=1.5 1000\n')
    with pytest.raises(UserError, match="measurement 'my meas,x': a name with a comma"):
        write_datafile(ds, "csv", str(tmp_path / "a.csv"))
    csv = small(tmp_path / "c", 'm\\ 2,k=v\\=1\\ 2,q=a"b f=1.5 1500\n')
    write_datafile(csv, "csv", str(tmp_path / "a.csv"))
    assert (tmp_path / "a.csv").read_text() == 'm 2,1970-01-01T00:00:00.000001Z,v=1 2,"a""b",1.5\n'


def test_an_edited_line_is_named(folder, tmp_path):
    path = tmp_path / "data.csv"
    write_datafile(open_stored(folder), "csv", str(path))
    text = path.read_bytes().replace(b",21.5,", b",21.6,")
    path.write_bytes(text)
    assert first_changed_line(open_datafile(path)).startswith(f"{path}:7:")


def test_a_changed_import_is_refused(folder, tmp_path):
    copy = tmp_path / "imp"
    shutil.copytree(folder, copy)
    write_datafile(open_stored(copy), "influx", str(tmp_path / "d.lp"))
    meta = json.loads((copy / "import.json").read_text())
    (copy / "import.json").write_text(json.dumps(meta, indent=2))
    with pytest.raises(UserError, match="import.json changed since"):
        open_datafile(tmp_path / "d.lp")


def test_load_a_foreign_file_says_import_it(capsys):
    code, err = call(capsys, "load", str(SOURCE), "-t", "duckdb")
    assert_one_line(code, err, f"python -m tsbench import {SOURCE} -o DIR")


def test_load_a_folder_that_is_no_import(capsys, tmp_path):
    code, err = call(capsys, "load", str(tmp_path), "-t", "duckdb")
    assert_one_line(code, err, "not an import folder (no import.json; make one with: python -m tsbench import")


def test_generate_from_import(capsys, folder, tmp_path):
    out = tmp_path / "x.csv"
    code, err = call(capsys, "generate", "--from-import", str(folder), "--format", "csv", "-o", str(out), "-q")
    assert code in (0, None), err
    assert out.read_bytes() == (OWN / "every_type.csv.golden").read_bytes()
    code, err = call(capsys, "generate", "--from-import", str(folder), "--format", "csv")
    assert_one_line(code, err, "give the data file with -o FILE")


def test_an_imported_generated_file_has_the_generators_figures(tmp_path):
    """devops written by generate, imported: the view's counts and values are the ones
    generate's C core added up (the manifest's stats), and writing it again makes lines
    of the same length."""
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import generate

    src = tmp_path / "g.lp"
    generate(resolve(DatasetSpec(use_case="devops", scale=2, end="2016-01-01T00:10:00Z", seed=7)), "influx",
             str(src), show_progress=False)
    made = json.loads((tmp_path / "g.lp.manifest.json").read_text())
    lpimport.import_file(str(src), str(tmp_path / "d"), "ns")
    ds = open_stored(tmp_path / "d")
    assert (ds.tables.rows, ds.tables.values) == (made["rows"], made["values"])
    for name, want in made["stats"].items():
        got = ds.figures[name]
        assert got["series"] == want["series"]
        for field, w in want["fields"].items():
            g = got["fields"][field]
            assert (g["count"], g["min"], g["max"]) == (w["count"], w["min"], w["max"]), (name, field)
            assert g["sum"] == pytest.approx(w["sum"], rel=1e-15, abs=0), (name, field)
    m = write_datafile(ds, "influx", str(tmp_path / "again.lp"))
    assert m["bytes"] == made["bytes"] and m["rows"] == made["rows"]


@pytest.mark.parametrize("fmt", ["influx", "csv"])
def test_the_loaders_cutter_counts_the_views_values(fmt):
    """The load's rows and values (the C cutter's) of a file with quoted CSV tag values
    ("a,1"): the view's, not a count thrown off by the comma inside the quotes."""
    from tsbench.data.batches import BatchReader, csv_layout
    from tsbench.core.model import Table, Tables

    tables = Tables((Table("counters", ("host",), ()), Table("weather", ("city", "station"), ())), 0, 1, 22, 44)
    got = [0, 0]
    for b in BatchReader(OWN / f"every_type.{fmt}.golden", fmt, 5, "none", csv_layout(tables) if fmt == "csv" else None):
        got[0], got[1] = got[0] + b.rows, got[1] + b.values
    assert got == [22, 44]
