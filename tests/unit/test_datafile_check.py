"""Silent bad data refused (issue 12, item 4): a data file that is not the one its
manifest describes (size always, sha256 with --check-data), and a schema whose
values can be +/-Inf or NaN (refused when read if that is certain, else the
generator stops at the first such value, naming the field and the tick)."""

from __future__ import annotations

import pytest

from tsbench.core.errors import UserError
from tsbench.data import generate as gen
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.native import NonFiniteError, Simulator

from conftest import lift_process_plan, run_cli

END = "2016-01-01T00:10:00Z"


@pytest.fixture
def datafile(tmp_path):
    path = tmp_path / "d.lp"
    run_cli("generate", "-q", "--scale", "2", "--end", END, "-o", str(path))
    return path


def _load(path, *extra):
    return run_cli("load", str(path), "-t", "null", "-q", *extra, check=False)


def _one_line(p) -> str:
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_intact_file_loads_with_check_data(datafile):
    assert _load(datafile, "--check-data").returncode == 0


def test_corrupt_byte_refused_with_check_data(datafile):
    data = bytearray(datafile.read_bytes())
    data[len(data) // 2] ^= 0x01                      # same size, one byte changed
    datafile.write_bytes(bytes(data))
    err = _one_line(_load(datafile, "--check-data"))
    assert str(datafile) in err and "sha256" in err and "regenerate" in err


@pytest.mark.parametrize("change", [-10, +10], ids=["truncated", "extended"])
def test_size_mismatch_refused_always(datafile, change):
    size = datafile.stat().st_size
    with open(datafile, "r+b") as f:
        f.truncate(size + change)
    err = _one_line(_load(datafile))
    assert str(datafile) in err and f"{size + change:,} bytes" in err and f"says {size:,}" in err
    assert "regenerate" in err


FIELDS = {
    "ratio_const_zero": ("- {name: num, evolution: constant, initial: 5}\n"
                         "- {name: den, evolution: constant, initial: 0}\n"
                         "- {name: q, evolution: ratio, ratio: {num: num, den: den}}",
                         "field 'q': its denominator 'den' is a constant 0"),
    "ratio_int_truncated_zero": ("- {name: num, evolution: constant, initial: 5}\n"
                                 "- {name: den, type: int, evolution: constant, initial: {choice: [3, 0.5]}}\n"
                                 "- {name: q, evolution: ratio, ratio: {num: num, den: den}}",
                                 "field 'q': its denominator 'den' is a constant 0"),
    "infinite_initial": ("- {name: x, evolution: walk, step: {constant: 1}, initial: .inf}",
                         "field 'x': inf is not a finite number"),
    "nan_step": ("- {name: x, evolution: fresh, step: {normal: [.nan, 1]}}",
                 "field 'x': nan is not a finite number"),
    "ratio_walk_reaches_zero": ("- {name: num, evolution: constant, initial: 5}\n"
                                "- {name: den, evolution: walk, step: {constant: -1}, initial: 3}\n"
                                "- {name: q, evolution: ratio, ratio: {num: num, den: den}}",
                                "field m.q is not finite (+Inf, -Inf or NaN) at tick 3 (2016-01-01T00:00:30Z)"),
    "zero_over_zero": ("- {name: a, evolution: walk, step: {constant: -1}, initial: 2}\n"
                       "- {name: q, type: int, evolution: ratio, ratio: {num: a, den: a}}",
                       "field m.q is not finite (+Inf, -Inf or NaN) at tick 2 (2016-01-01T00:00:20Z)"),
    "overflowing_int_walk": ("- {name: big, type: int, evolution: walk, step: {constant: 1.0e308}, "
                             "initial: 1.0e308}",
                             "field m.big is not finite (+Inf, -Inf or NaN) at tick 1 (2016-01-01T00:00:10Z)"),
}


def _schema(tmp_path, fields: str):
    body = "\n".join("      " + line for line in fields.splitlines())
    p = tmp_path / "s.yaml"
    p.write_text(f"name: s\nscale: 2\nmeasurements:\n  - name: m\n    fields:\n{body}\n")
    return p


@pytest.mark.parametrize("case", list(FIELDS))
def test_nonfinite_schema_refused_naming_field(tmp_path, case):
    fields, message = FIELDS[case]
    out = tmp_path / "o.lp"
    p = run_cli("generate", "-q", "-u", "custom", "--schema", str(_schema(tmp_path, fields)), "--end", END,
                "-o", str(out), check=False)
    assert message in _one_line(p)


def _runtime_case(tmp_path):
    schema = _schema(tmp_path, FIELDS["ratio_walk_reaches_zero"][0])
    return resolve(DatasetSpec(use_case="custom", schema_file=str(schema), end=END, scale=4))


@pytest.mark.parametrize("output", ["p.csv", "/dev/null"])    # the parent only writes; it simulates a slice too
def test_nonfinite_stops_parallel_generation(tmp_path, monkeypatch, output):
    lift_process_plan(monkeypatch)                              # two processes even for a tiny dataset
    with pytest.raises(UserError, match=r"field m\.q is not finite .* at tick 3"):
        gen.generate(_runtime_case(tmp_path), "csv", str(tmp_path / output), processes=2, show_progress=False)


def test_nonfinite_stops_the_columns_too(tmp_path):
    ds = _runtime_case(tmp_path)
    sim = Simulator(ds.compiled, ds.spec.seed, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs)
    with pytest.raises(NonFiniteError, match="at tick 3"):
        sim.fill_columns(1000, 3)
