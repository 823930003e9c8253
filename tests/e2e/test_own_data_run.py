"""A file of your own in an experiment (datasets: {mine: {file: ...}}): imported once, every
phase run on it (DuckDB: loaded, verified, the devops and generic queries validated), and
--redact replacing its tag values in what the run writes: a server that quotes a line of the
data in its error (as InfluxDB does) has the hostname replaced in the cell's reason."""

from __future__ import annotations

import json
import pathlib

import pyarrow.parquet as pq
import pytest

from tsbench.core.redact import token

from conftest import run_cli
from faultserver import FaultServer

SAMPLE = pathlib.Path(__file__).resolve().parents[1] / "data" / "own" / "tsbs-devops.lp"
QUOTED = 'unable to parse "cpu,hostname=host_1,region=ap-southeast-1 usage_user=": missing field value'
EXP = """\
name: own
datasets:
  mine: {{file: "{file}"}}
targets:
  duck: {{target: duckdb}}
  quoting: {{target: null-http, server: "{url}"}}
queries: {{count: 1, seed: 5}}
"""


def _run(tmp_path, name: str, *extra: str) -> pathlib.Path:
    with FaultServer() as fs:
        fs.always, fs.fatal_text = "fatal", QUOTED
        (tmp_path / f"{name}.yaml").write_text(EXP.format(file=SAMPLE, url=fs.url))
        p = run_cli("run", str(tmp_path / f"{name}.yaml"), "--results", str(tmp_path / name), "-q", *extra,
                    check=False, env={"TSBENCH_REDACT_KEY": "11" * 32})
    assert p.returncode == 1, p.stderr.decode()           # the quoting target's cell failed, as it should
    return next(d for d in (tmp_path / name / "own").iterdir() if (d / "cells.parquet").exists())


@pytest.fixture(scope="module")
def redacted(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("own"), "r", "--redact")


def test_every_phase_runs_on_the_imported_file_and_every_answer_is_validated(redacted):
    cells = pq.read_table(redacted / "cells.parquet").to_pylist()
    duck = next(c for c in cells if c["target_name"] == "duck")
    assert duck["status"] == "ok" and duck["verified"] and duck["rows"] == 324, duck["reason"]
    assert duck["validated"] == duck["queries_run"] > 20 and duck["mismatches"] == 0
    manifest = json.loads((redacted / "manifest.json").read_text())
    spec = manifest["datasets"]["mine"]["spec"]
    assert spec["source"] == "import" and spec["use_case"] == "devops"


def test_redact_replaces_the_tag_values_a_server_quoted(redacted, tmp_path):
    reason = next(c for c in pq.read_table(redacted / "cells.parquet").to_pylist()
                  if c["target_name"] == "quoting")["reason"]
    assert token("host_1", bytes.fromhex("11" * 32)) in reason and "host_1" not in reason, reason
    assert "ap-southeast-1" not in reason, reason
    written = b"".join(p.read_bytes() for p in redacted.iterdir() if p.is_file())
    assert b"host_1" not in written and b"ap-southeast-1" not in written
    plain = _run(tmp_path, "p")                     # the same run without --redact: the values are there
    reason = next(c for c in pq.read_table(plain / "cells.parquet").to_pylist()
                  if c["target_name"] == "quoting")["reason"]
    assert "hostname=host_1,region=ap-southeast-1" in reason, reason


VM_EXP = """\
name: vm
datasets:
  every: {{file: "{file}"}}
targets:
  vm: {{target: victoriametrics}}
queries: {{types: [generic-max-1-1], count: 2, seed: 11}}
"""


@pytest.mark.parametrize("redact", [True, False])
def test_redact_keeps_an_answers_values_out_of_a_mismatch(tmp_path, redact):
    """VictoriaMetrics returns station b=2's -3.5e-07 (beside 1e15) as 0 (tests/contract/
    test_own_data.py): the cell fails; with --redact its reason says where, not the values."""
    (tmp_path / "vm.yaml").write_text(VM_EXP.format(file=SAMPLE.parent / "every_type.lp"))
    p = run_cli("run", str(tmp_path / "vm.yaml"), "--results", str(tmp_path / "r"), "-q", "--no-report",
                *(["--redact"] if redact else []), check=False, env={"TSBENCH_REDACT_KEY": "11" * 32})
    assert p.returncode == 1, p.stderr.decode()
    run = next(d for d in (tmp_path / "r" / "vm").iterdir() if (d / "cells.parquet").exists())
    reason = pq.read_table(run / "cells.parquet").to_pylist()[0]["reason"]
    if redact:
        assert "row 0 column 0 (max_temp): values differ (not shown: --redact)" in reason and "e-07" not in reason
    else:
        assert "row 0 column 0 (max_temp): 0.0, expected -3.5e-07" in reason, reason
