"""No secret in any output of a whole run (phases 2-5 and the report, end to end): a
run against a real PostgreSQL reached by a URL with a password, a password option and
a `password_env` option leaves none of them in any file it writes nor in what it
prints (the masking itself: tests/unit/test_secrets.py)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from conftest import local_server, run_cli

URL_PW, ENV_PW, OPT_PW = "S3cr3tXYZ", "EnvS3cretQQ7", "L1teralPW9"


EXP = """\
name: secrets
datasets:
  d: {{use_case: cpu-only, scale: 2, end: "2016-01-01T00:10:00Z", seed: 5}}
targets:
  pg: {{target: postgres, server: "{url}", options: {{database: secrets_e2e, password_env: TSB_SECRET_PW}}}}
  gone: {{target: postgres, server: "{gone}", options: {{password: {opt}}}}}
load: {{workers: 1, batch_size: 1000}}
queries: {{types: [max-cpu-1], count: 1}}
"""


def _strings(obj) -> list[str]:
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in _strings(k) + _strings(v)]
    if isinstance(obj, (list, tuple)):
        return [s for v in obj for s in _strings(v)]
    return [obj] if isinstance(obj, str) else []


def test_no_secret_in_any_output_of_a_run(tmp_path):
    with local_server("postgres") as srv:
        assert srv.url.startswith("postgresql://postgres@")     # trust auth: any password will do
        url = srv.url.replace("postgres@", f"postgres:{URL_PW}@", 1)
        shown_url = srv.url.replace("postgres@", "postgres:***@", 1)
        gone = f"postgresql://postgres:{URL_PW}@127.0.0.1:1/postgres"
        f = tmp_path / "e.yaml"
        f.write_text(EXP.format(url=url, gone=gone, opt=OPT_PW))
        results = tmp_path / "results"
        ran = run_cli("run", str(f), "--results", str(results), check=False, env={"TSB_SECRET_PW": ENV_PW})
    runs = sorted(p for p in (results / "secrets").glob("*") if (p / "manifest.json").is_file())
    assert runs, ran.stderr.decode()
    shown = run_cli("report", str(runs[-1]), check=False)
    printed = b"".join([ran.stdout, ran.stderr, shown.stdout, shown.stderr]).decode()
    files = [p for p in results.rglob("*") if p.is_file()]
    assert {"manifest.json", "cells.parquet", "report.html"} <= {p.name for p in files}, printed
    texts = {str(p): p.read_bytes().decode("latin-1") for p in files}
    texts.update({f"{p} (decoded)": "\n".join(_strings(pq.read_table(p).to_pylist()))
                  for p in files if p.suffix == ".parquet"})
    texts["printed"] = printed
    for where, text in texts.items():
        for s in (URL_PW, ENV_PW, OPT_PW):
            assert s not in text, f"{s} in {where}"
    cells = {c["target_name"]: c for c in pq.read_table(runs[-1] / "cells.parquet").to_pylist()}
    assert cells["pg"]["status"] == "ok", cells["pg"]["reason"]
    assert cells["gone"]["status"] == "failed" and "***" in cells["gone"]["reason"]
    assert cells["pg"]["server"] == shown_url
    manifest = json.loads((runs[-1] / "manifest.json").read_text())
    assert manifest["config"]["targets"]["gone"]["options"]["password"] == "***"
    assert "***" in (runs[-1] / "report.html").read_text() and "***" in ran.stderr.decode()
