"""synthetic (inch / ingen) and custom (YAML) use cases, and the manifest."""

import dataclasses
import json
import re

import numpy as np
import pytest

from conftest import columns, dataset, generate_bytes, parse_influx, run_cli


def test_inch_style_cardinality():
    ds = dataset(use_case="synthetic", params={"tags": "10,10,10", "points": 5, "measurements": 2, "fields": 3})
    assert ds.entities == 1000 and ds.epochs == 5
    cols, sim = columns(ds)
    assert len(cols["time"]) == 1000 * 2 * 5
    combos = {tuple(sim.tag_values(e, 0)) for e in range(1000)}
    assert len(combos) == 1000
    assert sim.tag_values(0, 0) == ["value0", "value0", "value0"]
    assert sim.tag_values(123, 1) == ["value1", "value2", "value3"]
    assert cols["values"].shape[1] == 3 and (cols["values"] >= 0).all() and (cols["values"] <= 100).all()


def test_ingen_style_shards():
    ds = dataset(use_case="synthetic", params={"tags": "4,3", "shards": 12, "points_per_shard": 250})
    assert ds.entities == 12
    assert ds.epochs == 3000 and ds.interval_ns == 86_400_000_000_000 // 250
    assert ds.end_ns - ds.start_ns == 12 * 86_400_000_000_000


def test_replication_lag_example(tmp_path):
    ds = dataset(use_case="custom", schema_file="experiments/schemas/replication_lag.yaml")
    assert ds.entities == 1 and ds.interval_ns == 10_000_000_000
    assert ds.epochs == 4_730_400      # 1.5 years every 10 s, "almost 5 million records"
    text = generate_bytes(tmp_path, "--use-case", "custom", "--schema", "experiments/schemas/replication_lag.yaml",
                          "--end", "2016-01-02T00:00:00Z").decode()
    rows = list(parse_influx(text))
    assert len(rows) == 8640
    assert all(m == "replication_data" and t == {"host": "mytesthost"} for m, t, _, _ in rows)
    for _, _, vals, _ in rows:
        assert list(vals) == ["receive_lag_kb", "replay_lag_kb", "seconds_since_last_commit"]
        assert all(isinstance(v, int) and v >= 0 for v in vals.values())
    assert len({v["receive_lag_kb"] for _, _, v, _ in rows}) > 100


def test_custom_schema_features(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("""
name: features
scale: 4
tags:
  site: "site_{entity:02}"
  zone: {choice: [north, south]}
  rack: {choice_by: {tag: zone, values: {north: [n1, n2], south: [s1]}}}
measurements:
  - name: pump
    tags:
      serial: "{int:0..9}-{choice:a|b}"
    fields:
      - {name: cap, type: float, evolution: constant, initial: {by_tag: {tag: zone, values: {north: 10, south: 20}}}}
      - {name: level, type: float, evolution: clamped_walk, step: {uniform: [-1, 1]}, min: 0, max: 1,
         initial: {uniform: [0, 1]}, scale_by: cap, decimals: 2}
      - {name: pct, evolution: ratio, ratio: {num: level, den: cap, scale: 100}}
      - {name: n, type: int, evolution: monotonic_walk, step: {constant: 2}}
      - {name: spare, type: int, evolution: linear, terms: {n: 1}, constant: 1}
      - {name: hidden_state, evolution: fresh, step: {normal: [0, 1]}, initial: draw, hidden: true}
""")
    ds = dataset(use_case="custom", schema_file=str(f), end="2016-01-01T00:10:00Z")
    cols, sim = columns(ds)
    assert len(cols["time"]) == 4 * 60 and cols["values"].shape[1] == 5
    for e in range(4):
        site, zone, rack, serial = sim.tag_values(e, 0)
        assert site == f"site_{e:02d}" and rack in {"north": {"n1", "n2"}, "south": {"s1"}}[zone]
        assert serial[0].isdigit() and serial[1:] in ("-a", "-b")
        v = cols["values"][cols["entity"] == e]
        cap = {"north": 10, "south": 20}[zone]
        assert (v[:, 0] == cap).all() and (v[:, 1] >= 0).all() and (v[:, 1] <= cap).all()
        assert np.allclose(v[:, 1] * 100, np.round(v[:, 1] * 100), atol=1e-9)
        assert np.allclose(v[:, 2], 100 * v[:, 1] / cap)
        assert (v[:, 3] == 2 * np.arange(60)).all() and (v[:, 4] == v[:, 3] + 1).all()


EDGE_FIELDS = {   # name: (definition, written at ticks 0-4)
    "big": ("type: int, evolution: walk, step: {constant: 0}, initial: 1.0e19", ["9200000000000000000i"] * 5),
    "neg": ("type: int, evolution: walk, step: {constant: 0}, initial: -1.0e19", ["-9200000000000000000i"] * 5),
    "near": ("type: int, evolution: walk, step: {constant: 0}, initial: 9.1e18", ["9100000000000000000i"] * 5),
    "frac": ("type: int, evolution: walk, step: {constant: 0.75}, initial: -2.5", ["-2i", "-1i", "-1i", "0i", "0i"]),
    "x": ("type: float, evolution: walk, step: {constant: 0.75}, initial: -2.5",
          ["-2.5", "-1.75", "-1", "-0.25", "0.5"]),
}
# a value out of range first in a pair, second in a pair, last alone; none; one field
EDGE_SERIES = {"a": ["big", "frac"], "b": ["frac", "neg"], "c": ["frac", "x", "big"], "d": ["near", "frac", "x"],
               "e": ["frac"]}


@pytest.mark.parametrize("fmt", ["influx", "csv"])
def test_int_fields_written_truncated_and_clamped(tmp_path, fmt):
    """An integer is its state truncated toward zero and held within +/-9.2e18, whether
    a record is written from the state itself (every value in range) or from a copy
    (a series holding a value out of range, wherever it stands)."""
    series = "".join(f"  - name: {m}\n    fields:\n" + "".join(f"      - {{name: {f}, {EDGE_FIELDS[f][0]}}}\n"
                                                               for f in fields)
                     for m, fields in EDGE_SERIES.items())
    schema = tmp_path / "s.yaml"
    schema.write_text(f"name: edges\nscale: 1\nmeasurements:\n{series}")
    text = generate_bytes(tmp_path, "-u", "custom", "--schema", str(schema), "--end", "2016-01-01T00:00:50Z",
                          "--format", fmt).decode()
    got: dict[str, list[list[str]]] = {}
    for line in text.splitlines():
        if fmt == "influx":
            m, values = line.split(" ")[0], [kv.split("=")[1] for kv in line.split(" ")[1].split(",")]
        else:
            m, values = line.split(",")[0], line.split(",")[2:]
        got.setdefault(m, []).append(values)
    for m, fields in EDGE_SERIES.items():
        want = [[EDGE_FIELDS[f][1][t] for f in fields] for t in range(5)]
        if fmt == "csv":
            want = [[v.rstrip("i") for v in row] for row in want]
        assert got[m] == want, m


FAULTY = """
name: faulty
scale: 50
measurements:
  - name: m
    tags: {a: "{choice:x|y}", b: "{int:0..3}"}
    fields:
      - {name: f, type: float, evolution: walk, step: {normal: [0, 1]}}
      - {name: g, type: int, evolution: walk, step: {normal: [0, 1]}}
"""


def test_custom_faults_default_to_perfect_data():
    from tsbench.data.schema import FAULT_SETTINGS, Faults, fault_defaults
    from tsbench.data.usecases.custom import FaultSpec

    assert list(FaultSpec.model_fields) == [s.name for s in FAULT_SETTINGS]
    assert FaultSpec().model_dump() == fault_defaults() == dataclasses.asdict(Faults())
    assert all(v == 0 for k, v in fault_defaults().items() if k not in ("group_size", "max_delay"))


def test_custom_faults_block(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(FAULTY + "faults: {missing: 0.25, null_tag: 0.5, late: 0.2, max_delay: 3}\n")
    ds = dataset(use_case="custom", schema_file=str(f), end="2016-01-01T01:00:00Z")
    fa = ds.schema.faults
    assert (fa.missing, fa.null_tag, fa.late, fa.max_delay, fa.group_drop) == (0.25, 0.5, 0.2, 3, 0.0)
    cols, _ = columns(ds)
    assert len(cols["time"]) == pytest.approx(50 * 360 * 0.75, rel=0.03)
    assert (cols["null_tag"] >= 0).mean() == pytest.approx(0.5, abs=0.03)
    assert set(np.unique(cols["delay"])) == {0, 1, 2, 3}


@pytest.mark.parametrize("faults,needle", [
    ("{late: -1}", "faults.late: Input should be greater than or equal to 0"),
    ("{missing: 2}", "faults.missing: Input should be less than or equal to 1"),
    ("{group_size: 0}", "faults.group_size: Input should be greater than or equal to 1"),
    ("{max_delay: 1.5}", "faults.max_delay: Input should be a valid integer"),
    ("{mising: 0.1}", "faults.mising: unknown key (did you mean 'missing'?)"),
])
def test_bad_faults_are_one_line(tmp_path, faults, needle):
    f = tmp_path / "s.yaml"
    f.write_text(FAULTY + f"faults: {faults}\n")
    p = run_cli("generate", "--use-case", "custom", "--schema", str(f), "-o", str(tmp_path / "x"), check=False)
    err = p.stderr.decode()
    assert p.returncode != 0 and err.count("\n") == 1 and f"{f}: {needle}" in err, err


def test_compiled_faults_are_checked_against_the_declaration():
    from tsbench.core.errors import UserError
    from tsbench.data.schema import Faults, Schema, Series, compile_schema, nd

    for bad, message in ((dict(late=1.5), "late=1.5 is not float within [0, 1]"),
                         (dict(max_delay=0), "max_delay=0 is not int >= 1"),
                         (dict(group_size=2.5), "group_size=2.5 is not int >= 1")):
        schema = Schema("s", (Series("m", (nd("f", 0, 1),)),), faults=Faults(**bad))
        with pytest.raises(UserError, match=re.escape(f"s: faults: {message}")):
            compile_schema(schema)


def test_manifest_next_to_the_file(tmp_path):
    import hashlib

    out = tmp_path / "d.csv"
    run_cli("generate", "-q", "--scale", "2", "--end", "2016-01-01T00:05:00Z", "--format", "csv", "-o", str(out))
    m = json.loads((tmp_path / "d.csv.manifest.json").read_text())
    data = out.read_bytes()
    assert m["rows"] == data.count(b"\n") == 2 * 30 * 9 and m["values"] == 2 * 30 * 101
    assert m["bytes"] == m["file_bytes"] == len(data)
    assert m["sha256"] == hashlib.sha256(data).hexdigest()
    assert m["spec"]["use_case"] == "devops" and m["spec"]["seed"] == 1 and m["format"] == "csv"


def test_stdout_when_piped():
    p = run_cli("generate", "--scale", "1", "--end", "2016-01-01T00:00:20Z")
    assert p.stdout.count(b"\n") == 18 and p.stderr == b""


def test_generate_of_a_built_in_use_case_starts_without_the_custom_one():
    """The custom use case (pydantic models of YAML, the YAML parser) and
    the process pool are imported only when asked for: the start-up is part of the command's time."""
    import subprocess
    import sys

    code = ("import sys\nimport tsbench.data.generate\nfrom tsbench.data.dataset import DatasetSpec, resolve\n"
            "resolve(DatasetSpec(use_case='devops', scale=2, end='2016-01-01T00:01:00Z'))\n"
            "print(sorted(m for m in ('tsbench.data.usecases.custom', 'yaml', 'multiprocessing') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    from tsbench.data.usecases import USE_CASES, use_case

    assert [use_case(n).name for n in USE_CASES] == list(USE_CASES)
