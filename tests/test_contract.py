"""The contract every database passes (phases 2-5), against the real server that
tsbench starts, one server per target for the whole module, on tiny datasets:

* create with if_exists abort / reuse / drop on a database that holds data;
* load, verify the count, flush, compact, disk figures (the data dir's and the
  database's own figure it names);
* every query type its dialect runs, drawn on a small devops, iot and synthetic
  dataset, equal to the reference engine's answer; every catalog type is either
  run or excluded with a reason;
* an unreachable URL is one clear line, exit 2, no traceback.

Adding a database: one line in CONTRACT below (a case name, the target, an
unreachable URL, target options and server options; a second line for a second
query language). Run one database's contract with
`pytest tests/test_contract.py -k duckdb` (or `-m contract`)."""

from __future__ import annotations

import asyncio
import pathlib
import shutil
import tempfile

import pytest
from conftest import run_cli

from tsbench import databases, queries, session
from tsbench.dataset import DatasetSpec, resolve
from tsbench.datafile import open_datafile
from tsbench.errors import ServerLacks, UserError
from tsbench.execute import ExecOptions
from tsbench.generate import generate
from tsbench.load import LoadOptions

pytestmark = pytest.mark.contract

# case: (target, an unreachable URL, target options, server options for server: local)
CONTRACT = {
    "null": ("null", "", {}, {}),
    "null-http": ("null-http", "http://127.0.0.1:9", {}, {}),
    "influx": ("influx", "http://127.0.0.1:9", {}, {}),
    "influx-flux": ("influx", "http://127.0.0.1:9", {"query_language": "flux"}, {"flux": True}),
    "postgres": ("postgres", "postgresql://postgres@127.0.0.1:9/postgres", {}, {}),
    "victoriametrics": ("victoriametrics", "http://127.0.0.1:9", {}, {}),
    "duckdb": ("duckdb", "duckdb:/nonexistent-dir/x.duckdb", {}, {}),
}

DATASETS = {
    "devops": {"use_case": "devops", "scale": 32, "end": "2016-01-01T01:00:00Z", "seed": 11},
    "iot": {"use_case": "iot", "scale": 10, "end": "2016-01-01T04:00:00Z", "seed": 12},
    "synthetic": {"use_case": "synthetic", "seed": 13, "params": {"tags": "4,3", "points": 120}},
}


def _cls(case: str):
    return databases.target_class(CONTRACT[case][0])


def _querying() -> list[str]:
    return [c for c in CONTRACT if _cls(c).dialects]


def _keeping() -> list[str]:
    return [c for c in CONTRACT if _cls(c).keeps_data]


def test_every_registered_target_has_a_contract_line():
    covered = {target for target, *_ in CONTRACT.values()}
    assert set(databases.names()) <= covered, "add a CONTRACT line for every registered database"


@pytest.fixture(scope="module")
def datafiles():
    """{(dataset, format): DataFile}, generated once for the module."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="tsbench-contract-"))
    out = {}
    for name, decl in DATASETS.items():
        ds = resolve(DatasetSpec(**decl))
        for fmt in ("influx", "csv"):
            path = d / f"{name}.{fmt}"
            generate(ds, fmt, str(path), show_progress=False)
            out[name, fmt] = open_datafile(path)
    yield out
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def references(datafiles):
    return {name: session.reference(datafiles[name, "influx"].dataset) for name in DATASETS}


@pytest.fixture(scope="module")
def endpoint(request):
    """(case, URL) of one fresh local instance, shared by the module's tests of that case."""
    case = request.param
    cls = _cls(case)
    d = tempfile.mkdtemp(prefix=f"tsbench-contract-{case}-")
    srv = None
    if cls.server_kind is not None:
        srv = databases.server_class(cls.server_kind)(name=f"contract-{case}-{pathlib.Path(d).name}", instance_dir=d,
                                                       options=CONTRACT[case][3])
        srv.start()
        url = srv.url
    else:
        url = cls.local_url(d)
    yield case, url
    if srv is not None:
        srv.stop()
    shutil.rmtree(d, ignore_errors=True)


def _reach(endpoint) -> session.Reach:
    case, url = endpoint
    target, _, options, _ = CONTRACT[case]
    return session.Reach(target, url or "local", options)


def _load(endpoint, df, if_exists="drop", verify=True):
    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            return await session.load(conn, df, LoadOptions(workers=2, batch_size=2000, if_exists=if_exists,
                                                            verify=verify, progress=False))
    return asyncio.run(go())


def _count(endpoint, df) -> int:
    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            await conn.target.flush()
            return await conn.target.count(df.tables())
    return asyncio.run(go())


def _create(endpoint, df, if_exists: str) -> None:
    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            await conn.target.create(df.tables(), if_exists)
    asyncio.run(go())


def _file(endpoint, datafiles, name="devops"):
    return datafiles[name, _cls(endpoint[0]).format]


@pytest.mark.parametrize("endpoint", list(CONTRACT), indirect=True)
def test_load_verify_compact_and_disk_figures(endpoint, datafiles):
    cls = _cls(endpoint[0])
    df = _file(endpoint, datafiles)
    res = _load(endpoint, df)
    expected = df.rows if cls.count_unit == "rows" else df.values
    assert res.verified and res.counted == res.expected == expected
    assert res.rows == df.rows and res.values == df.values and res.bytes == df.bytes
    assert res.compact_seconds is not None
    if cls.own_disk_figure:
        assert cls.own_disk_figure in res.disk and res.own_disk_bytes == res.disk[cls.own_disk_figure] > 0
    if cls.keeps_data:
        assert _count(endpoint, df) == expected       # flushed, and there for a new connection


@pytest.mark.parametrize("endpoint", _keeping(), indirect=True)
def test_if_exists_abort_reuse_drop(endpoint, datafiles):
    df = _file(endpoint, datafiles)
    cls = _cls(endpoint[0])
    expected = df.rows if cls.count_unit == "rows" else df.values
    _load(endpoint, df)
    with pytest.raises(UserError) as ei:
        _load(endpoint, df, if_exists="abort")
    msg = str(ei.value)                                   # one line naming what holds data, and the fix
    assert "\n" not in msg and "already exists and holds data" in msg and "--if-exists drop" in msg, msg
    assert _count(endpoint, df) == expected               # abort changed nothing
    _load(endpoint, df, if_exists="reuse", verify=False)
    assert _count(endpoint, df) in (expected, 2 * expected)   # appended (time series dedupe equal points)
    _load(endpoint, df, if_exists="drop")                 # verified: exactly the file again
    _create(endpoint, df, "drop")
    _create(endpoint, df, "abort")                        # there but empty: nothing to refuse
    assert _count(endpoint, df) == 0


@pytest.mark.parametrize("dataset", list(DATASETS))
@pytest.mark.parametrize("endpoint", _querying(), indirect=True)
def test_every_query_it_runs_equals_the_reference(endpoint, dataset, datafiles, references):
    case, url = endpoint
    df = _file(endpoint, datafiles, dataset)
    ds = df.dataset
    ctx = queries.context(ds)
    runs = _cls(case)(url, CONTRACT[case][2]).query_types        # the types of the language its options chose
    types = [n for n, qt in queries.CATALOG.items() if n in runs and qt.applies(ctx) is None]
    assert types
    specs = session.draw(ds, types, 2, seed=5)
    _load(endpoint, df)

    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            await conn.target.attach(df.tables())
            lacks = _server_lacks(conn.target, specs)
            return lacks, await session.run_queries(conn, ds, specs, ExecOptions(cache="none", progress=False),
                                                    references[dataset])
    lacks, res = asyncio.run(go())
    assert set(res.unsupported) == lacks                  # only what this server's release lacks
    specs = [s for s in specs if s.type not in lacks]
    assert [r["error"] for r in res.records if r["status"] != "ok"] == []
    bad = [v["diff"] for v in res.validation if not v["ok"]]
    assert not bad, bad[0]
    assert len(res.validation) == len(specs)


def _server_lacks(target, specs) -> set[str]:
    """The types the open target refuses for want of a function of its server's release."""
    out = set()
    for s in specs:
        try:
            target.render(s)
        except ServerLacks:
            out.add(s.type)
    return out


@pytest.mark.parametrize("name", databases.names())
def test_support_is_total_and_every_exclusion_has_a_reason(name):
    cls = databases.target_class(name)
    for lang, dialect in cls.dialects.items():
        support = dialect.support()
        assert set(support) == set(queries.CATALOG)
        assert all(why is None or why.strip() for why in support.values()), (name, lang)
        assert set(dialect.excluded) <= set(queries.CATALOG), f"{name}/{lang} excludes unknown types"
    assert cls.capabilities()["query_types"] == sorted(cls.query_types)


@pytest.mark.parametrize("name", sorted({t for t, url, *_ in CONTRACT.values() if url}))
def test_unreachable_url_is_one_clear_line(name, datafiles):
    url = next(u for t, u, *_ in CONTRACT.values() if t == name)
    df = datafiles["devops", databases.target_class(name).format]
    p = run_cli("load", str(df.path), "--target", name, "--server", url, "-q", check=False)
    err = p.stderr.decode().strip()
    assert p.returncode == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err and name in err, err
