"""`tsbench verify` (issue 12, item 5) against real databases, the way
test_contract.py reaches them (one local instance per target for the module):
a tiny file loaded, then recounted table by table (exit 0, all equal); rows
deleted behind tsbench's back, then recounted (exit 1, the table's difference
shown and in --json)."""

from __future__ import annotations

import asyncio
import json
import pathlib
import shutil
import tempfile

import pytest
from conftest import run_cli, target_url

from tsbench import databases, session
from tsbench.datafile import open_datafile
from tsbench.dataset import DatasetSpec, resolve
from tsbench.generate import generate
from tsbench.load import LoadOptions
from tsbench.verify import expected_counts, verify

pytestmark = pytest.mark.contract

TARGETS = ("duckdb", "postgres")
DECL = {"use_case": "devops", "scale": 3, "end": "2016-01-01T00:20:00Z", "seed": 5}


@pytest.fixture(scope="module")
def endpoint(request):
    """(target, URL) of one fresh local instance for the module."""
    with target_url(request.param) as url:
        yield request.param, url


@pytest.fixture(scope="module")
def datafile(endpoint):
    d = pathlib.Path(tempfile.mkdtemp(prefix="tsbench-verify-data-"))
    path = d / "data"
    generate(resolve(DatasetSpec(**DECL)), databases.target_class(endpoint[0]).format, str(path),
             show_progress=False)
    yield open_datafile(path)
    shutil.rmtree(d, ignore_errors=True)


def _load(endpoint, df) -> None:
    async def go():
        async with session.open_target(session.Reach(endpoint[0], endpoint[1]), announce=False) as conn:
            await session.load(conn, df, LoadOptions(workers=2, batch_size=500, if_exists="drop", progress=False))
    asyncio.run(go())


def _delete(endpoint, table: str, host: str) -> None:
    """Delete one host's rows of one table directly, as a fault after the load would."""
    name, url = endpoint
    sql = f"DELETE FROM {table} WHERE hostname = '{host}'"
    if name == "duckdb":
        import duckdb

        con = duckdb.connect(url.removeprefix("duckdb:"))
        con.execute(sql)
        con.close()
    else:
        import psycopg

        with psycopg.connect(url.rsplit("/", 1)[0] + "/tsbench", autocommit=True) as con:
            con.execute(f"DELETE FROM {table} WHERE tags_id IN (SELECT id FROM tags WHERE hostname = '{host}')")


def _verify_cli(endpoint, df, tmp_path):
    out = tmp_path / "v.json"
    p = run_cli("verify", str(df.path), "--target", endpoint[0], "--server", endpoint[1], "--json", str(out),
                check=False)
    return p, json.loads(out.read_text())


@pytest.mark.parametrize("endpoint", TARGETS, indirect=True)
def test_verify_equal_then_a_table_short(endpoint, datafile, tmp_path):
    _load(endpoint, datafile)
    p, doc = _verify_cli(endpoint, datafile, tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert doc["ok"] and len(doc["tables"]) == 9 and all(r["difference"] == 0 for r in doc["tables"])
    assert sum(r["counted"] for r in doc["tables"]) == datafile.rows
    _delete(endpoint, "cpu", "host_1")
    p, doc = _verify_cli(endpoint, datafile, tmp_path)
    assert p.returncode == 1, p.stderr.decode()
    per = {r["table"]: r for r in doc["tables"]}
    epochs = datafile.dataset.epochs
    assert per["cpu"]["difference"] == -epochs and per["cpu"]["counted"] == 2 * epochs
    assert all(r["difference"] == 0 for t, r in per.items() if t != "cpu")
    line = next(x for x in p.stdout.decode().splitlines() if x.startswith("cpu"))
    assert line.split() == ["cpu", f"{3 * epochs:,}", f"{2 * epochs:,}", f"-{epochs:,}"]
    assert "1 of 9 tables differ" in p.stderr.decode()


@pytest.mark.parametrize("endpoint", ["duckdb"], indirect=True)
def test_verify_api_for_the_runner(endpoint, datafile):
    _load(endpoint, datafile)

    async def go():
        async with session.open_target(session.Reach(endpoint[0], endpoint[1]), announce=False) as conn:
            return await verify(conn, datafile)
    rows = asyncio.run(go())
    assert [r["table"] for r in rows] == [t.name for t in datafile.tables()]
    assert all(r["expected"] == r["counted"] and r["unit"] == "rows" for r in rows)


def test_expected_counts_with_faults_match_the_manifest(tmp_path):
    """iot (nulls, drops, late entries): the per-table figures add up to the manifest's."""
    path = tmp_path / "iot.lp"
    generate(resolve(DatasetSpec(use_case="iot", scale=5, end="2016-01-01T02:00:00Z", seed=3)), "influx", str(path),
             show_progress=False)
    df = open_datafile(path)
    exp = expected_counts(df)
    assert set(exp) == {"readings", "diagnostics"}
    assert sum(r for r, _ in exp.values()) == df.rows and sum(v for _, v in exp.values()) == df.values


def test_verify_refuses_local_and_names_the_flag():
    p = run_cli("verify", "x.lp", "--target", "duckdb", "--server", "local", check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1 and "--server" in err
