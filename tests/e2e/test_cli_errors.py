"""Bad input: a non-zero exit and one line naming the option or the file and field."""

import pytest

from conftest import run_cli

BAD_SCHEMA = """\
name: typo
measurements:
  - name: m
    fields:
      - name: f
        type: int
        evolutoin: clamped_walk
"""

BAD_EVOLUTION = """\
name: typo
measurements:
  - name: m
    fields:
      - {name: f, evolution: clamped_wlak, step: {normal: [0, 1]}, min: 0, max: 1}
"""


@pytest.mark.parametrize("args,needle", [
    (["--use-case", "devopz"], "--use-case"),
    (["--format", "parquet"], "--format"),
    (["--start", "2016-01-02T00:00:00Z", "--end", "2016-01-01T00:00:00Z"], "--end"),
    (["--scale", "0"], "--scale"),
    (["--scale", "-3"], "--scale"),
    (["--start", "yesterday"], "--start"),
    (["--end", "2016-13-45"], "--end"),
    (["--interval", "ten seconds"], "--interval"),
    (["--compress", "rar"], "--compress"),
    (["--group", "4", "--groups", "4"], "--group"),
    (["--use-case", "iot", "-P", "missing=2"], "--param missing"),
    (["--use-case", "iot", "-P", "bogus=1"], "--param bogus"),
    (["--use-case", "synthetic", "-P", "tags=10,x"], "--param tags"),
    (["--use-case", "custom"], "--schema"),
    (["--use-case", "custom", "--schema", "/nonexistent.yaml"], "--schema"),
    (["--no-such-option"], "--no-such-option"),
    (["--scale", "ten"], "--scale"),
])
def test_bad_option_gets_one_line(tmp_path, args, needle):
    p = run_cli("generate", "-o", str(tmp_path / "x"), *args, check=False)
    err = p.stderr.decode()
    assert p.returncode != 0
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert needle in err and "Traceback" not in err


@pytest.mark.parametrize("text,needle", [
    (BAD_SCHEMA, "measurements[0].fields[0].evolutoin: unknown key (did you mean 'evolution'?)"),
    (BAD_EVOLUTION, "measurements[0].fields[0].evolution"),
    ("name: x\nmeasurements: [{name: m, fields: [{name: a, evolution: linear, terms: {b: 1}}]}]\n", "'b'"),
    ("name: x\nmeasurements: [\n", "line"),
])
def test_bad_schema_names_file_and_field(tmp_path, text, needle):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    p = run_cli("generate", "--use-case", "custom", "--schema", str(f), "-o", str(tmp_path / "x"), check=False)
    err = p.stderr.decode()
    assert p.returncode != 0 and err.count("\n") == 1, err
    assert str(f) in err and needle in err, err


def test_help_documents_generate():
    out = run_cli("generate", "--help").stdout.decode()
    for opt in ("--use-case", "--scale", "--start", "--end", "--interval", "--seed", "--format", "--output",
                "--compress", "--group", "--groups", "--processes", "--param", "--schema"):
        assert opt in out


@pytest.mark.parametrize("target, server, needle", [
    ("postgres", "local:influx", "--server local:influx: target postgres has no local server 'influx' "
                                 "(one of local:postgres)"),
    ("duckdb", "local:postgres", "target duckdb has no local server 'postgres' (it runs in-process: use local)"),
])
def test_a_local_server_kind_the_target_does_not_run_is_one_line(tmp_path, target, server, needle):
    data = tmp_path / "d.csv"
    run_cli("generate", "-q", "--scale", "1", "--end", "2016-01-01T00:01:00Z", "--format", "csv", "-o", str(data))
    p = run_cli("load", str(data), "--target", target, "--server", server, check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2 and "Traceback" not in err
    assert needle in err
