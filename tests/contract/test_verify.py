"""`tsbench verify` (issue 12, item 5; values: issue 35, item 2) against real
databases, the way test_contract.py reaches them (one local instance per target for
the module): a tiny file loaded, then checked table by table (exit 0, counts and
values equal); rows deleted behind tsbench's back (exit 1, the table's difference
shown and in --json); 30 values changed, or 30 rows deleted and 30 duplicates
inserted (the counts unchanged): exit 1 naming the table and field. A data file
line edited to a non-number of the same size fails the load into VictoriaMetrics
(which stores 0 for it), naming FILE:LINE."""

from __future__ import annotations

import asyncio
import json
import pathlib
import shutil
import tempfile
import urllib.parse
import urllib.request

import pytest

from tsbench import databases
from tsbench.core.model import STAT_KINDS
from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.experiments import session
from tsbench.load.run import LoadOptions
from tsbench.load.verify import expected_counts, verify

from conftest import run_cli, target_url

pytestmark = pytest.mark.contract

TARGETS = ("duckdb", "postgres")
VALUE_TARGETS = ("duckdb", "postgres", "influx", "victoriametrics")
DECL = {"use_case": "devops", "scale": 3, "end": "2016-01-01T00:20:00Z", "seed": 5}


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
    v = asyncio.run(go())
    assert v.ok and [r["table"] for r in v.tables] == [t.name for t in datafile.tables()]
    assert all(r["expected"] == r["counted"] and r["unit"] == "rows" for r in v.tables)
    fields = sum(len(t.fields) for t in datafile.tables())
    assert len(v.values) == 4 * fields + 9 and all(r["status"] == "ok" for r in v.values)


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


# ---- values (issue 35, item 2) ----------------------------------------------------------------

def _sql(endpoint, *statements: str) -> None:
    name, url = endpoint
    if name == "duckdb":
        import duckdb

        con = duckdb.connect(url.removeprefix("duckdb:"))
        for s in statements:
            con.execute(s)
        con.close()
    else:
        import psycopg

        with psycopg.connect(url.rsplit("/", 1)[0] + "/tsbench", autocommit=True) as con:
            for s in statements:
                con.execute(s)


def _http(url: str, path: str, params: dict, body: bytes | None = None) -> bytes:
    req = urllib.request.Request(f"{url}{path}?{urllib.parse.urlencode(params)}", data=body)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read()


def _influxql(url: str, q: str) -> list[dict]:
    doc = json.loads(_http(url, "/query", {"db": "tsbench", "q": q, "epoch": "ns"}))
    return doc["results"][0].get("series", [])


def _influx_lines(series: dict, shift_ns: int, change: float, table) -> bytes:
    """Points of one InfluxQL answer series written again: at time + shift_ns, each field + change."""
    tags = ",".join(f"{k}={v}" for k, v in sorted(series["tags"].items()) if v)
    types = {c.name: c.type for c in table.fields}
    out = []
    for row in series["values"]:
        fields = [f"{k}={int(v)}i" if types[k] == "int" else f"{k}={v + change!r}"
                  for k, v in zip(series["columns"][1:], row[1:]) if v is not None]
        out.append(f"{series['name']},{tags} {','.join(fields)} {row[0] + shift_ns}")
    return ("\n".join(out) + "\n").encode()


def _vm_rewrite(url: str, metric: str, edit) -> None:
    """One VictoriaMetrics series exported, deleted and imported again as edit(values, timestamps) makes it."""
    match = {"match[]": f'{{__name__="{metric}",hostname="host_0"}}'}
    doc = json.loads(_http(url, "/api/v1/export", {**match, "start": "0"}).splitlines()[0])
    doc["values"], doc["timestamps"] = edit(doc["values"], doc["timestamps"])
    _http(url, "/api/v1/admin/tsdb/delete_series", match, b"")
    _http(url, "/api/v1/import", {}, json.dumps(doc).encode())


def _change_30_values(endpoint, df) -> None:
    """30 values of cpu.usage_user changed behind tsbench's back: the counts stay."""
    name, url = endpoint
    if name == "duckdb":
        _sql(endpoint, "UPDATE cpu SET usage_user = usage_user + 1 WHERE rowid IN (SELECT rowid FROM cpu LIMIT 30)")
    elif name == "postgres":
        _sql(endpoint, "UPDATE cpu SET usage_user = usage_user + 1 WHERE ctid IN (SELECT ctid FROM cpu LIMIT 30)")
    elif name == "influx":
        s = _influxql(url, "SELECT usage_user FROM cpu WHERE hostname = 'host_0' GROUP BY * LIMIT 30")[0]
        _http(url, "/write", {"db": "tsbench", "precision": "ns"}, _influx_lines(s, 0, 1.0, df.tables().tables[0]))
    else:
        _vm_rewrite(url, "cpu_usage_user", lambda v, ts: ([x + 1 for x in v[:30]] + v[30:], ts))


def _delete_30_insert_30_duplicates(endpoint, df) -> None:
    """30 rows deleted and 30 duplicates of others inserted: the counts stay."""
    name, url = endpoint
    if name == "duckdb":
        _sql(endpoint, "INSERT INTO cpu SELECT * FROM (SELECT * FROM cpu ORDER BY time, hostname LIMIT 30)",
             "DELETE FROM cpu WHERE rowid IN (SELECT rowid FROM cpu ORDER BY time DESC, hostname LIMIT 30)")
    elif name == "postgres":
        _sql(endpoint, "INSERT INTO cpu SELECT * FROM (SELECT * FROM cpu ORDER BY time, tags_id LIMIT 30) AS s",
             "DELETE FROM cpu WHERE ctid IN (SELECT ctid FROM cpu ORDER BY time DESC, tags_id LIMIT 30)")
    elif name == "influx":
        start = df.dataset.start_ns
        s = _influxql(url, "SELECT * FROM cpu WHERE hostname = 'host_1' GROUP BY * LIMIT 30")[0]
        _http(url, "/write", {"db": "tsbench", "precision": "ns"}, _influx_lines(s, 1, 0.0, df.tables().tables[0]))
        _influxql(url, f"DELETE FROM cpu WHERE hostname = 'host_0' AND time < {start + 30 * df.dataset.interval_ns}")
    else:
        _vm_rewrite(url, "cpu_usage_user", lambda v, ts: (v[30:] + v[30:60], ts[30:] + [t + 1 for t in ts[30:60]]))


@pytest.mark.parametrize("mutate", [_change_30_values, _delete_30_insert_30_duplicates])
@pytest.mark.parametrize("endpoint", VALUE_TARGETS, indirect=True)
def test_verify_checks_values_not_only_counts(endpoint, datafile, tmp_path, mutate):
    _load(endpoint, datafile)
    p, doc = _verify_cli(endpoint, datafile, tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    checked = [k for k in STAT_KINDS if databases.target_class(endpoint[0]).value_checks[k] is None]
    assert set(checked) == set(STAT_KINDS)
    assert {r["kind"] for r in doc["values"]} == set(STAT_KINDS) and all(r["status"] == "ok" for r in doc["values"])
    mutate(endpoint, datafile)
    p, doc = _verify_cli(endpoint, datafile, tmp_path)
    err = p.stderr.decode()
    assert p.returncode == 1, err
    assert all(r["difference"] == 0 for r in doc["tables"])        # the counts cannot tell
    bad = [r for r in doc["values"] if r["status"] == "differs"]
    assert bad and {r["table"] for r in bad} == {"cpu"} and bad[0]["field"] in datafile.tables().tables[0].field_names
    if mutate is _change_30_values:
        assert {r["field"] for r in bad} == {"usage_user"} and bad[0]["kind"] == "sum", bad   # max may differ too
    assert f"first: cpu.{bad[0]['field']}: {bad[0]['kind']}" in err and "1 of 9 tables differ" in err, err
    assert f"differs: cpu.{bad[0]['field']} {bad[0]['kind']}" in p.stdout.decode()


def test_a_value_a_database_coerces_fails_the_load_naming_the_line(tmp_path):
    """`total=<number>` edited to a non-number of the same size: VictoriaMetrics stores 0
    for it; the load fails (exit 2) naming the file's line and the table's field."""
    path = tmp_path / "d.lp"
    generate(resolve(DatasetSpec(**DECL)), "influx", str(path), show_progress=False)
    lines = path.read_bytes().split(b"\n")
    n = next(i for i, x in enumerate(lines) if b",total=" in x or b" total=" in x)
    head, _, rest = lines[n].partition(b"total=")
    value, sep, tail = rest.partition(b",") if b"," in rest.split(b" ")[0] else rest.partition(b" ")
    lines[n] = head + b"total=" + (b"notanumberxyzw" * 4)[: len(value)] + sep + tail
    path.write_bytes(b"\n".join(lines))
    with target_url("victoriametrics") as url:
        p = run_cli("load", str(path), "--target", "victoriametrics", "--server", url, "-q", check=False)
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert f"{path}:{n + 1}:" in err and "total" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("endpoint", ["duckdb"], indirect=True)
def test_a_kind_the_target_cannot_answer_is_not_checked_never_ok(endpoint, datafile, monkeypatch):
    from tsbench.databases.duckdb.target import DuckDBTarget
    from tsbench.load.verify import render

    _load(endpoint, datafile)
    monkeypatch.setattr(DuckDBTarget, "value_checks", {**DuckDBTarget.value_checks, "sum": "sums are rounded here"})

    async def go():
        async with session.open_target(session.Reach(endpoint[0], endpoint[1]), announce=False) as conn:
            return await verify(conn, datafile)
    v = asyncio.run(go())
    sums = [r for r in v.values if r["kind"] == "sum"]
    assert v.ok and len(sums) == 9 and all(r["status"] == "not checked" and r["field"] is None for r in sums)
    assert {r["kind"] for r in v.values if r["status"] == "ok"} == {"count", "min", "max", "series"}
    assert "  not checked: sum (cpu, diskio, disk, kernel, mem, net, nginx, postgresl, redis): sums are rounded here" \
        in render(v).splitlines()
