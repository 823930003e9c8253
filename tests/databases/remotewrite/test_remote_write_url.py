"""The remote-write target (any receiver by URL), against VictoriaMetrics' /api/v1/write: the
load posts every batch and the receiver holds them (counted here by the victoriametrics target,
since the remote-write target cannot count); a load that would verify, and --if-exists drop,
are refused in one line."""

from __future__ import annotations

import asyncio
import json

import pytest

from tsbench.data.datafile import open_datafile
from tsbench.databases.victoriametrics.target import VictoriaMetricsTarget

from conftest import local_server, run_cli


@pytest.fixture(scope="module")
def vm():
    with local_server("victoriametrics") as server:
        yield server


def generate(tmp_path):
    path = tmp_path / "devops.lp"
    run_cli("generate", "-q", "-u", "devops", "--scale", "3", "--end", "2016-01-01T00:30:00Z", "-o", str(path))
    return open_datafile(path)


async def vm_count(url: str, df) -> int:
    t = VictoriaMetricsTarget(url)
    await t.open()
    try:
        await t.flush()
        return await t.count(df.tables())
    finally:
        await t.close()


def test_a_load_into_a_remote_write_url_reaches_the_receiver(vm, tmp_path):
    df = generate(tmp_path)
    out = tmp_path / "load.json"
    run_cli("load", str(df.path), "-t", "remote-write", "-s", f"{vm.url}/api/v1/write", "-b", "700", "-w", "2",
            "--no-verify", "-q", "--json", str(out))
    doc = json.loads(out.read_text())
    assert doc["status"] == "ok" and doc["rows"] == df.rows and doc["verify"]["ok"] is None
    assert asyncio.run(vm_count(vm.url, df)) == df.values


def test_a_remote_write_url_is_not_verified_nor_dropped(vm, tmp_path):
    """A load or stream that would verify is refused before it starts, as is a drop."""
    df = generate(tmp_path)
    url = f"{vm.url}/api/v1/write"
    p = run_cli("load", str(df.path), "-t", "remote-write", "-s", url, "-q", check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1 and "cannot count what it was sent: run with --no-verify" in err
    p = run_cli("load", str(df.path), "-t", "remote-write", "-s", url, "-q", "--no-verify", "--if-exists", "drop",
                check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1 and "has no delete" in err
    p = run_cli("stream", "-t", "remote-write", "-s", url, "-u", "cpu-only", "--scale", "2", "--points-per-series", "5",
                "-q", check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1 and "cannot count what it was sent" in err
