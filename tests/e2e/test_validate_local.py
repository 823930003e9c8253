"""queries generate, then validate and execute with --server local --load on InfluxDB,
PostgreSQL and VictoriaMetrics, as a user runs them (phases 3-5 end to end)."""

from __future__ import annotations

import re

import pytest

from conftest import run_cli


@pytest.mark.parametrize("target", ["influx", "postgres", "victoriametrics"])
def test_cli_validate_on_local_servers(target, tmp_path, tshome):
    """queries generate, then validate and execute with --server local --load, as a user runs them."""
    fmt = "csv" if target == "postgres" else "influx"
    data = tmp_path / f"d.{fmt}"
    run_cli("generate", "-q", "--scale", "10", "--end", "2016-01-01T02:00:00Z", "--seed", "8", "--format", fmt,
            "-o", str(data))
    q = tmp_path / "q.jsonl"
    run_cli("queries", "generate", str(data), "-T", "max-cpu-8,single-groupby-5-1-1,double-groupby-all,lastpoint",
            "-n", "2", "-o", str(q))
    p = run_cli("validate", str(q), "-t", target, "--load", str(data), env={"TSBENCH_HOME": tshome})
    assert "validated 8/8 distinct queries equal to the reference" in p.stderr.decode()
    p = run_cli("execute", str(q), "-t", target, "--load", str(data), "--count", "16", "-w", "2",
                env={"TSBENCH_HOME": tshome})
    err = p.stderr.decode()
    assert re.search(r"\s+all\s+16\s+0\s+0\s", err) and "validated 8/8" in err and "16/16 executions" in err
