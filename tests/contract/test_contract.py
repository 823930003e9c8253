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
`pytest tests/contract/test_contract.py -k duckdb` (or `-m contract`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import pathlib
import shutil
import tempfile

import pytest

from tsbench import databases, queries
from tsbench.core.errors import ServerLacks, UserError
from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.databases.victoriametrics.server import OTLP_RELEASE
from tsbench.execute.run import ExecOptions
from tsbench.experiments import session
from tsbench.load.run import LoadOptions

from conftest import run_cli, target_url

pytestmark = pytest.mark.contract

# case: (target, an unreachable URL, target options, server options for server: local)
CONTRACT = {
    "null": ("null", "", {}, {}),
    "null-http": ("null-http", "http://127.0.0.1:9", {}, {}),
    "influx": ("influx", "http://127.0.0.1:9", {}, {}),
    "influx-flux": ("influx", "http://127.0.0.1:9", {"query_language": "flux"}, {"flux": True}),
    "postgres": ("postgres", "postgresql://postgres@127.0.0.1:9/postgres", {}, {}),
    "victoriametrics": ("victoriametrics", "http://127.0.0.1:9", {}, {}),
    "victoriametrics-remote-write": ("victoriametrics", "http://127.0.0.1:9", {"protocol": "remote-write"}, {}),
    # OTLP needs VictoriaMetrics 1.92 or later: a release built with Go (Debian's is 1.79.5)
    "victoriametrics-otlp": ("victoriametrics", "http://127.0.0.1:9", {"protocol": "otlp"},
                             {"version": OTLP_RELEASE}),
    "duckdb": ("duckdb", "duckdb:/nonexistent-dir/x.duckdb", {}, {}),
    "cassandra": ("cassandra", "cassandra://127.0.0.1:9", {}, {}),
    "cassandra-wide": ("cassandra", "cassandra://127.0.0.1:9", {"schema": "wide"}, {}),
    "elasticsearch": ("elasticsearch", "http://127.0.0.1:9", {}, {}),
    "elasticsearch-aggregation": ("elasticsearch", "http://127.0.0.1:9", {"template": "aggregation"}, {}),
    "mongodb": ("mongodb", "mongodb://127.0.0.1:9", {}, {}),
    "opentsdb": ("opentsdb", "http://127.0.0.1:9", {}, {}),
    "questdb": ("questdb", "http://127.0.0.1:9", {}, {}),
    "clickhouse": ("clickhouse", "http://127.0.0.1:9", {}, {}),
    "iotdb": ("iotdb", "iotdb://127.0.0.1:9", {}, {}),
    "prometheus": ("prometheus", "http://127.0.0.1:9", {}, {}),
    # any receiver by URL: no local server, no count (load-only: the unreachable URL's line only)
    "remote-write": ("remote-write", "http://127.0.0.1:9/api/v1/write", {}, {}),
}

DATASETS = {
    # 32 hosts: every devops type draws; half an hour: every type's window but groupby-orderby-limit's
    # still covers the whole dataset, as it covered the hour this was, at half the rows to load
    "devops": {"use_case": "devops", "scale": 32, "end": "2016-01-01T00:30:00Z", "seed": 11},
    "iot": {"use_case": "iot", "scale": 10, "end": "2016-01-01T04:00:00Z", "seed": 12},
    "synthetic": {"use_case": "synthetic", "seed": 13, "params": {"tags": "4,3", "points": 120}},
}


def _cls(case: str):
    return databases.target_class(CONTRACT[case][0])


def _querying() -> list[str]:
    return [c for c in CONTRACT if _cls(c).dialects]


def _loading() -> list[str]:
    """The cases whose load is their own: a line that only chooses another query language
    loads as its target's first line does, so it runs the query tests only; a target that cannot
    count (remote-write: tests/databases/remotewrite) has no load to verify here."""
    return [c for c in CONTRACT if not (CONTRACT[c][2] and set(CONTRACT[c][2]) <= {"query_language"})
            and _cls(c).can_count]


def _keeping() -> list[str]:
    return [c for c in _loading() if _cls(c).keeps_data]


def test_every_registered_target_has_a_contract_line():
    covered = {target for target, *_ in CONTRACT.values()}
    assert set(databases.names()) <= covered, "add a CONTRACT line for every registered database"


def test_every_release_a_line_starts_is_built_by_servers_install_all():
    """A line's server option version (a release built with Go) is one its server class names in
    also_installed, so `servers install --all` (CI, before the tests) builds it, not the test."""
    for case, (target, _, _, server_options) in CONTRACT.items():
        if "version" in server_options:
            server = databases.server_class(databases.target_class(target).server_kind)
            assert {"version": server_options["version"]} in server.also_installed, case


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


class OneServer:
    """The module's local instance, one at a time: the next case of the same target and
    server options (cassandra-wide after cassandra, ...) shares it; another case's stops
    it first. pytest runs a module-scoped parameter's tests together, case by case."""

    def __init__(self):
        self.key, self.url, self.stack = None, None, contextlib.ExitStack()

    def url_for(self, target: str, server_options: dict) -> str:
        key = (target, json.dumps(server_options, sort_keys=True))
        if key != self.key:
            self.close()
            self.url = self.stack.enter_context(target_url(target, server_options))
            self.key = key
        return self.url

    def close(self) -> None:
        self.stack.close()
        self.key = None


@pytest.fixture(scope="module")
def one_server():
    s = OneServer()
    yield s
    s.close()


@pytest.fixture(scope="module")
def endpoint(request, one_server):
    """(case, URL) of a local instance, shared by the module's tests of that case (and
    by the next case's, if it is the same target and server options)."""
    case = request.param
    return case, one_server.url_for(CONTRACT[case][0], CONTRACT[case][3])


def _reach(endpoint) -> session.Reach:
    case, url = endpoint
    target, _, options, _ = CONTRACT[case]
    return session.Reach(target, url or "local", options)


LOADED: dict[str, tuple[str, str]] = {}   # URL -> (case, data file) its last load put there (drop, verified)


def _load(endpoint, df, if_exists="drop", verify=True, compact=True):
    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            return await session.load(conn, df, LoadOptions(workers=2, batch_size=2000, if_exists=if_exists,
                                                            verify=verify, compact=compact, progress=False))
    case, url = endpoint
    LOADED.pop(url, None)
    res = asyncio.run(go())
    if if_exists == "drop" and verify and res.verified:
        LOADED[url] = (case, str(df.path))
    return res


def _loaded(endpoint, df) -> None:
    """The data file in the database, exactly: loaded (verified, not compacted: the answers
    do not depend on it, and InfluxDB's takes 12 s), unless the last load there was this
    file's (the query tests then share it; the slow loaders' time goes)."""
    case, url = endpoint
    if LOADED.get(url) != (case, str(df.path)):
        _load(endpoint, df, compact=False)


def _count(endpoint, df) -> int:
    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            await conn.target.flush()
            return await conn.target.count(df.tables())
    return asyncio.run(go())


def _create(endpoint, df, if_exists: str) -> None:
    LOADED.pop(endpoint[1], None)

    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            await conn.target.create(df.tables(), if_exists)
    asyncio.run(go())


def _file(endpoint, datafiles, name="devops"):
    return datafiles[name, _cls(endpoint[0]).format]


@pytest.mark.parametrize("endpoint", _keeping(), indirect=True)
def test_if_exists_abort_reuse_drop(endpoint, datafiles):
    df = _file(endpoint, datafiles, "synthetic")           # four loads: the smallest dataset does
    cls = _cls(endpoint[0])
    expected = df.rows if cls.count_unit == "rows" else df.values
    _load(endpoint, df, compact=False)                    # compaction is not what this test is about
    with pytest.raises(UserError) as ei:
        _load(endpoint, df, if_exists="abort")
    msg = str(ei.value)                                   # one line naming what holds data, and the fix
    assert "\n" not in msg and "already exists and holds data" in msg and "--if-exists drop" in msg, msg
    assert _count(endpoint, df) == expected               # abort changed nothing
    _load(endpoint, df, if_exists="reuse", verify=False, compact=False)
    assert _count(endpoint, df) in (expected, 2 * expected)   # appended (time series dedupe equal points)
    _load(endpoint, df, if_exists="drop", compact=False)  # verified: exactly the file again
    _create(endpoint, df, "drop")
    _create(endpoint, df, "abort")                        # there but empty: nothing to refuse
    assert _count(endpoint, df) == 0


@pytest.mark.parametrize("endpoint", _loading(), indirect=True)
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
        # values (issue 35): every kind the target answers checked and equal, the others said not checked
        want = {k: "ok" if why is None else "not checked" for k, why in cls.value_checks.items()}
        assert {(r["kind"], r["status"]) for r in res.value_checks} == set(want.items()), res.value_checks


@pytest.mark.parametrize("endpoint", _querying(), indirect=True)
def test_printed_response_is_the_servers_answer_decoded(endpoint, datafiles, references, capsys):
    """--print-responses (issue 35 item 13): each query as sent, then the server's own answer
    decoded, holding every value of the reference's answer and the names the server gave
    them (the fields' own in an answer of rows); not a name split into characters,
    "(0 rows)", nor Arrow bytes."""
    import math
    import re

    from tsbench.execute.responses import query_text
    from tsbench.queries.shapes import columns

    case, url = endpoint
    df = _file(endpoint, datafiles)
    runs = _cls(case)(url, CONTRACT[case][2]).query_types
    types = [t for t in ("single-groupby-1-1-1", "high-cpu-1") if t in runs]
    specs = session.draw(df.dataset, types, 1, seed=8, reference=references["devops"])
    _loaded(endpoint, df)

    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            await conn.target.attach(df.tables())
            natives = {s.id: conn.target.render(s) for s in specs}
            opts = ExecOptions(cache="none", progress=False, print_responses=True, max_rows=1000)
            return natives, await session.run_queries(conn, df.dataset, specs, opts, references["devops"])
    natives, res = asyncio.run(go())
    out = capsys.readouterr().out
    digits = _cls(case).float_digits
    tol = 10.0 ** (1 - digits) if digits else 1e-12
    assert [v["ok"] for v in res.validation] == [True] * len(specs)
    named = [s for s in specs if s.params["shape"] == "rows"] or specs   # whose answer names the fields
    for s in specs:
        block = out.split(f"-- query {s.id} ({s.type}) on ", 1)[1].split("\n-- query ", 1)[0]
        assert query_text(natives[s.id]) in block
        answer = block.split("-- the server's answer", 1)[1].split("-- canonical rows", 1)[0]
        names = s.params["fields"] if s in named else []
        assert all(PRINTED_NAME.get(CONTRACT[case][0], f) in answer for f in names), (s.type, answer[:2000])
        printed = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", answer)]
        has_time, group, _ = columns(s.params)
        expected = [v for r in references["devops"].expected(s) for v in r[has_time + len(group):] if v is not None]
        missing = [v for v in expected if not any(math.isclose(v, x, rel_tol=tol) for x in printed)]
        assert expected and not missing, (s.type, missing[:3], answer[:2000])
        assert not re.search(r"'\w', '\w', '\w'", answer) and "(0 rows)" not in answer and "\ufffd" not in answer


# the name a target's server gives the field in its answer where it is not the field's own
PRINTED_NAME = {"victoriametrics": '"tsbench_field"', "prometheus": '"tsbench_field"'}


def _form_types(case: str, dataset: str) -> list[str]:
    """The types with other forms declared (Dialect.forms) that a case's dialect runs on a dataset."""
    _, url, options, _ = CONTRACT[case]
    dialect = _cls(case).dialects[_cls(case)(url, options).dialect_name()]
    ctx = queries.context(resolve(DatasetSpec(**DATASETS[dataset])))
    return [t for t in dialect.forms if t in dialect.query_types() and queries.CATALOG[t].applies(ctx) is None]


# The case alone is the parameter (the datasets a loop inside), so that pytest runs this test
# with the case's other tests on the server they share (a parameter given with a dataset beside
# it would be function-scoped: the test would run after all cases, each starting its server again).
@pytest.mark.parametrize("endpoint", [c for c in _querying() if any(_form_types(c, d) for d in DATASETS)],
                         indirect=True)
def test_every_declared_form_answers_as_tsbenchs_form(endpoint, datafiles, references):
    """The forms benchmarks/dialects.py times (execute/forms.py): each one's answers are tsbench's form's,
    on every dataset where the case declares forms."""
    from tsbench.execute.forms import form_mismatches

    case = endpoint[0]
    for dataset in (d for d in DATASETS if _form_types(case, d)):
        df = _file(endpoint, datafiles, dataset)
        specs = session.draw(df.dataset, _form_types(case, dataset), 1, seed=5, reference=references[dataset])
        _loaded(endpoint, df)

        async def go():
            async with session.open_target(_reach(endpoint), announce=False) as conn:
                await conn.target.attach(df.tables())
                return await form_mismatches(conn.target, specs, references[dataset])
        bad = asyncio.run(go())
        assert not bad, f"{dataset}:\n" + "\n".join(bad)


# devops first: the printed-response and forms tests before it loaded it; iot last: the timed
# pass after it takes iot where the case runs its client-work types (a test loads only when the
# last load on the server was another file: _loaded)
@pytest.mark.parametrize("dataset", ["devops", "synthetic", "iot"])
@pytest.mark.parametrize("endpoint", _querying(), indirect=True)
def test_every_query_it_runs_equals_the_reference(endpoint, dataset, datafiles, references):
    case, url = endpoint
    df = _file(endpoint, datafiles, dataset)
    ds = df.dataset
    ctx = queries.context(ds)
    runs = _cls(case)(url, CONTRACT[case][2]).query_types        # the types of the language its options chose
    types = [n for n, qt in queries.CATALOG.items() if n in runs and qt.applies(ctx) is None]
    assert types
    specs = session.draw(ds, types, 2, seed=5, reference=references[dataset])
    _loaded(endpoint, df)

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


@pytest.mark.parametrize("endpoint", _querying(), indirect=True)
def test_timed_pass_connections_client_work_and_printed_responses(endpoint, datafiles, references, capsys):
    """3 workers, no warm-up pass: the connections are opened before the timer (none in a
    latency); client work exactly where the rendered query says, inside the latency;
    --print-responses shows each executed query once, in the dialect, cut explicitly."""
    from tsbench.execute.responses import query_text

    case, url = endpoint
    runs = _cls(case)(url, CONTRACT[case][2]).query_types
    dataset = "iot" if "low-fuel" in runs else "devops"
    df = _file(endpoint, datafiles, dataset)
    ctx = queries.context(df.dataset)
    types = [n for n, qt in queries.CATALOG.items() if n in runs and qt.applies(ctx) is None]
    specs = session.draw(df.dataset, types, 1, seed=6, reference=references[dataset])
    _loaded(endpoint, df)

    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            await conn.target.attach(df.tables())
            natives = {}
            for s in specs:
                try:
                    natives[s.id] = conn.target.render(s)
                except ServerLacks:
                    pass
            opts = ExecOptions(workers=3, cache="none", progress=False, print_responses=True, max_rows=1)
            return natives, await session.run_queries(conn, df.dataset, specs, opts, references[dataset])
    natives, res = asyncio.run(go())
    out = capsys.readouterr().out
    assert [r["error"] for r in res.records if r["status"] != "ok"] == [] and len(res.records) == len(natives)
    assert all(r["connect_s"] is None for r in res.records)
    for r in res.records:
        client = getattr(natives[r["id"]], "client", False)
        assert (r["client_s"] is not None) == client and (not client or 0 <= r["client_s"] <= r["latency"])
        assert out.count(f"-- query {r['id']} ({r['type']}) on") == 1 and query_text(natives[r["id"]]) in out
    if any(r["rows"] > 1 for r in res.records):
        assert "more rows" in out


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


# ---- mutation tests of the validation (issue 11 item 7) ----------------------------------------
# A small cpu-only dataset (32 hosts, so that every devops type can be drawn; 2 h, so that
# one-hour windows do not all read a change; 11,520 rows) is loaded as a copy with one
# usage_user value scaled by 1 + 1e-8 (first hour) and one row removed (second hour), each
# the unique maximum of its minute over all hosts (tests/mutation.py). The validation
# against the reference of the unmutated data must flag exactly the queries whose answers
# the changes move by more than the target's tolerance: what the reference engine says
# when given the same changes.

MUTATION_DATASET = {"use_case": "cpu-only", "scale": 32, "end": "2016-01-01T02:00:00Z", "interval": "20s",
                    "seed": 21}


@pytest.fixture(scope="module")
def mutated():
    """The mutation, the original and mutated files in both formats, and three references:
    the original data, with the scaled value only, and with both changes."""
    from tsbench.queries.reference import Reference

    import mutation as mu

    d = pathlib.Path(tempfile.mkdtemp(prefix="tsbench-contract-mutation-"))
    ds = resolve(DatasetSpec(**MUTATION_DATASET))
    orig = Reference(ds)             # engines of their own, not the cached answers: two get changed
    m = mu.choose(orig)
    files = {}
    for fmt in ("influx", "csv"):
        generate(ds, fmt, str(d / f"cpu.{fmt}"), show_progress=False)
        files[fmt] = mu.write_mutated(open_datafile(d / f"cpu.{fmt}"), m, d / f"cpu-mutated.{fmt}")
    scaled, both = Reference(ds), Reference(ds)
    mu.apply_scale(scaled, m)
    mu.apply_scale(both, m)
    mu.apply_removal(both, m)
    yield {"ds": ds, "mutation": m, "files": files, "orig": orig, "scaled": scaled, "both": both, "verdicts": {}}
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("endpoint", _querying(), indirect=True)
def test_mutation_is_flagged_exactly_where_it_changes_an_answer(endpoint, mutated):
    from tsbench.queries.compare import compare, tolerance

    import mutation as mu

    case, url = endpoint
    cls = _cls(case)
    ds, m, df = mutated["ds"], mutated["mutation"], mutated["files"][cls.format]
    assert df.rows == df.dataset.entities * df.dataset.epochs - 1
    runs, ctx = cls(url, CONTRACT[case][2]).query_types, queries.context(ds)
    types = [n for n, qt in queries.CATALOG.items() if n in runs and qt.applies(ctx) is None]
    specs, seen = [], set()
    for s in session.draw(ds, types, 3, seed=9, reference=mutated["orig"]):   # a whole-dataset window: once
        key = (s.type, json.dumps(s.params, sort_keys=True))
        if key not in seen:
            seen.add(key)
            specs.append(s)
    rel_tol = 10.0 ** (1 - cls.float_digits) if cls.float_digits else 0.0   # as execute's default
    loaded = _load(endpoint, df, compact=False)           # the count verified: one row (its values) fewer
    assert loaded.verified and loaded.counted == (df.rows if cls.count_unit == "rows" else df.values)

    async def go():
        async with session.open_target(_reach(endpoint), announce=False) as conn:
            await conn.target.attach(df.tables())
            lacks = _server_lacks(conn.target, specs)
            return lacks, await session.run_queries(conn, ds, specs, ExecOptions(cache="none", progress=False),
                                                    mutated["orig"])
    lacks, res = asyncio.run(go())
    assert set(res.unsupported) == lacks
    specs = [s for s in specs if s.type not in lacks]
    assert [r["error"] for r in res.records if r["status"] != "ok"] == []
    assert len(res.validation) == len(specs)
    assert {v.get("rel_tol", rel_tol) for v in res.validation} == {rel_tol}

    # the ground truth: the reference engine given the same changes, compared at the target's tolerance
    verdicts = mutated["verdicts"]                       # shared by the cases of one tolerance

    def moved(a, b):
        """The ids of the queries whose answers over references a and b compare() tells apart."""
        out = set()
        for s in specs:
            key = (a, b, json.dumps(s.params, sort_keys=True), rel_tol)
            if key not in verdicts:
                ea, eb = mutated[a].expected(s), mutated[b].expected(s)
                same = ea == eb and not any(v != v for r in ea for v in r)   # then compare() finds nothing
                verdicts[key] = not same and compare(s.params, ea, eb, tolerance(s, rel_tol, mutated[a])) is not None
            if verdicts[key]:
                out.add(s.id)
        return out
    expected, by_scale, by_removal = moved("orig", "both"), moved("orig", "scaled"), moved("scaled", "both")
    by_id = {s.id: s for s in specs}
    assert expected & by_scale and expected & by_removal, (m.describe(), rel_tol)
    assert any(by_id[i].params.get("agg") == "max" for i in expected & by_scale), \
        "a max aggregate must see the 1e-8 change"
    # independently of the reference: a query moved by a change reads the changed point
    # (its window holds the time, its host filter the host); some windows read neither
    on_scaled = {s.id for s in specs if mu.covers(s.params, m.scaled, ds)}
    on_removed = {s.id for s in specs if mu.covers(s.params, m.removed, ds)}
    assert by_scale <= on_scaled and by_removal <= on_removed and expected <= on_scaled | on_removed, \
        [by_id[i].params for i in (by_scale - on_scaled) | (by_removal - on_removed)]
    assert on_scaled | on_removed < set(by_id), "some drawn queries must read neither change"

    flagged = {v["id"] for v in res.validation if not v["ok"]}
    missed = sorted((by_id[i].type, i) for i in expected - flagged)
    spurious = sorted((by_id[i].type, i) for i in flagged - expected)
    assert flagged == expected, f"{m.describe()} (rel_tol {rel_tol:g}): missed {missed}, flagged wrongly {spurious}"
    # the module's other tests load their own data (if_exists="drop"): nothing to restore
