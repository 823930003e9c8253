"""Phases 3 and 5 on imported data (tsbench/queries/storedview.py): the reference engine
filled from an import's Parquet files (its loadable view), the generic queries drawn from
every tag's values, queries files and cached answers keyed by the import, and DuckDB's
answers equal to the reference's."""

from __future__ import annotations

import json

import pytest

from tsbench import queries
from tsbench.core.errors import UserError
from tsbench.queries import answer_store
from tsbench.queries.base import QuerySpec
from tsbench.queries.reference import Reference
from tsbench.queries.storedview import dataset_of

from conftest import run_cli
from querysets import assert_all_valid
from storedload import LP, execute_view, generic_names, imported, load_view

T0 = 1704067200 * 10**9          # 2024-01-01T00:00:00Z, ref_small.lp's first time
S = 10**9


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return imported(tmp_path_factory)


@pytest.fixture(scope="module")
def ref(ds):
    return Reference(ds)


@pytest.fixture(scope="module")
def specs(ds, ref):
    return queries.generate(ds, generic_names(), 3, 21, reference=ref)


def _aggregate(**kw) -> QuerySpec:
    p = {"shape": "aggregate", "tag": None, "tag_values": None, "start": T0, "end": T0 + 1200 * S,
         "bucket": None, "group_by": [], **kw}
    return QuerySpec(0, "generic-max-1-1", p)


def test_the_reference_answers_from_the_parquet_files_as_computed_by_hand(ref):
    """Goldens from reading ref_small.lp by hand: a series without a region tag, the line
    without a time (mem h2 used=5) and the string-only line are not in the view."""
    mx = _aggregate(measurement="cpu", agg="max", fields=["usage"], types=["float"], tag="host",
                    tag_values=["h4"], bucket=300 * S)
    assert ref.answer(mx) == [(T0, 81.75), (T0 + 300 * S, 66.0), (T0 + 600 * S, 77.75), (T0 + 900 * S, 99.25)]
    mean = _aggregate(measurement="mem", agg="mean", fields=["used"], types=["int"], group_by=["host"])
    assert sorted(ref.answer(mean)) == [("h1", 1201.5), ("h2", 1192.5), ("h3", 1183.5)]
    last = QuerySpec(0, "generic-lastpoint", {"shape": "last", "measurement": "cpu", "fields": ["ops", "usage"],
                                              "types": ["int", "float"], "group_by": ["host", "region"]})
    end = T0 + 1140 * S
    assert sorted(ref.answer(last), key=lambda r: r[1]) == [
        (end, "h1", "eu", 37, 3.75), (end, "h2", "eu", 16, 14.0), (end + 250_000_000, "h3", "us", None, 25.25),
        (end, "h4", None, 24, 36.5)]
    assert ref.con.execute('SELECT count(*) FROM "cpu"').fetchone()[0] == 80
    assert ref.con.execute('SELECT count(*) FROM "mem"').fetchone()[0] == 60


def test_every_tag_of_the_import_has_its_values_per_measurement(ds):
    ctx = queries.context(ds)
    assert dict(ctx.entity_tags) == {"host": ["h1", "h2", "h3", "h4"], "region": ["eu", "us"]}
    assert ctx.tag_values("mem", "host") == ["h1", "h2", "h3"]
    assert ctx.entities == 4                        # cpu's series: the largest measurement's
    assert (ctx.start_ns, ctx.end_ns) == (T0, T0 + 1171 * S)      # whole seconds past the newest time


def test_every_generic_type_is_drawn_on_the_import_with_a_non_empty_answer(ds, ref, specs):
    assert {s.type for s in specs} == set(generic_names())
    assert all(ref.expected(s) for s in specs)
    mem = [s for s in specs if s.params["measurement"] == "mem" and s.params.get("tag_values")]
    assert all(set(s.params["tag_values"]) <= {"h1", "h2", "h3"} for s in mem)   # the measurement's own values


def test_duckdb_answers_on_the_import_equal_the_reference(ds, ref, specs, tmp_path):
    url = f"duckdb:{tmp_path / 'own.duckdb'}"
    assert load_view("duckdb", url, ds) == 140
    res = execute_view("duckdb", url, ds, specs, ref)
    assert_all_valid(res, specs, tuple(generic_names()))


def test_sub_microsecond_times_come_cut_to_the_microsecond(tmp_path):
    """As the view gives them to every target (data/stored.py: floored, not rounded)."""
    from tsbench.data.stored import open_stored

    lp = tmp_path / "ns.lp"
    lp.write_text(f"m,k=a v=1 {T0 + 600}\nm,k=a v=2 {T0 + 1_400}\nm,k=b v=3 {T0 - 1_600}\n")
    run_cli("import", str(lp), "-o", str(tmp_path / "ns"))
    ref = Reference(open_stored(tmp_path / "ns"))
    got = ref.con.execute('SELECT epoch_ns(time) - {0}, v FROM "m" ORDER BY v'.format(T0)).fetchall()
    assert got == [(0, 1.0), (1000, 2.0), (-2000, 3.0)]


def test_a_queries_file_names_the_import_and_opens_it_back(ds, specs, tmp_path):
    path = tmp_path / "q.jsonl"
    queries.write_queries(path, ds, 21, specs)
    head, back = queries.read_queries(path)
    assert head["dataset"]["source"] == "import" and len(back) == len(specs)
    again = dataset_of(head["dataset"])
    assert again.stored and again.meta_sha256 == ds.meta_sha256 and again.tables == ds.tables
    changed = dict(head["dataset"], import_sha256="0" * 64)
    with pytest.raises(UserError, match="changed since"):
        dataset_of(changed)


def test_cached_answers_are_keyed_by_the_import(ds, tmp_path_factory):
    from tsbench.data.stored import open_stored

    assert answer_store.dataset_key(ds) == answer_store.dataset_key(open_stored(ds.folder))
    d = tmp_path_factory.mktemp("other") / "other"
    lp = tmp_path_factory.mktemp("lp") / "other.lp"
    lp.write_text(LP.read_text().replace("usage=0.0,", "usage=0.5,"))
    run_cli("import", str(lp), "-o", str(d))
    assert answer_store.dataset_key(open_stored(d)) != answer_store.dataset_key(ds)


def test_queries_generate_and_list_take_an_import_folder(ds, tmp_path):
    out = tmp_path / "q.jsonl"
    p = run_cli("queries", "generate", str(ds.folder), "--count", "1", "-o", str(out),
                env={"TSBENCH_REFERENCE_CACHE": str(tmp_path / "cache")})
    head, specs = queries.read_queries(out)
    assert head["dataset"]["import_sha256"] == ds.meta_sha256, p.stderr
    assert sorted(s.type for s in specs) == sorted(generic_names())
    listed = run_cli("queries", "list", str(ds.folder)).stdout.decode().splitlines()
    assert sorted(line.split("\t")[0] for line in listed[1:]) == sorted(generic_names())
    assert json.loads((out.read_text().splitlines()[0]))["dataset"]["folder"] == str(ds.folder.resolve())


def test_validate_checks_a_target_holding_the_import_end_to_end(ds, tmp_path):
    url = f"duckdb:{tmp_path / 'v.duckdb'}"
    load_view("duckdb", url, ds)
    env = {"TSBENCH_REFERENCE_CACHE": str(tmp_path / "cache")}
    run_cli("queries", "generate", str(ds.folder), "--count", "1", "-o", str(tmp_path / "q.jsonl"), env=env)
    run_cli("validate", str(tmp_path / "q.jsonl"), "--target", "duckdb", "--server", url, "-q",
            "--json", str(tmp_path / "v.json"), env=env)
    res = json.loads((tmp_path / "v.json").read_text())
    checks = res.get("validation") or []
    assert len(checks) == len(generic_names()) and all(v["ok"] for v in checks)


def test_queries_list_with_a_dataset_shows_only_the_types_that_fit_it():
    out = run_cli("queries", "list", "--why", "--dataset", "use_case=iot,scale=2,end=2016-01-01T01:00:00Z")
    lines = out.stdout.decode().splitlines()
    rows = [line.split("\t") for line in lines[1:] if "\t" in line]
    assert {r[1] for r in rows} == {"relational", "iot", "generic"}
    assert "generic-lastpoint" in {r[0] for r in rows} and "generic-min-1-4" not in {r[0] for r in rows}  # 2 trucks
    why = {x.split(": ")[1] for x in lines if "\t" not in x}
    assert "high-cpu-all" not in why and "last-loc" in why       # reasons of the types shown only


def test_an_import_recognized_as_a_use_case_also_draws_its_family(ds):
    from dataclasses import replace

    from tsbench.experiments.session import stored_families

    assert stored_families(ds) == ["generic"]
    assert stored_families(replace(ds, use_case="devops")) == ["generic", "devops"]



def test_a_generated_file_imported_gives_the_simulators_reference_answers(tmp_path):
    """The same rows by two paths: a devops file written as line protocol and imported (the
    reference from its Parquet files) and the dataset itself (the reference from the simulator);
    the import taken as devops data (as a recognized TSBS devops file is), so that the devops
    family is drawn on it beside the generic one."""
    from dataclasses import replace

    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.stored import open_stored
    from tsbench.experiments.session import select_types

    end = "2016-01-01T01:00:00Z"
    run_cli("generate", "-q", "--scale", "8", "--end", end, "--seed", "7", "--format", "influx",
            "-o", str(tmp_path / "dv.lp"))
    run_cli("import", str(tmp_path / "dv.lp"), "-o", str(tmp_path / "dv"))
    ds = replace(open_stored(tmp_path / "dv"), use_case="devops")
    from_import = Reference(ds)
    from_simulator = Reference(resolve(DatasetSpec(use_case="devops", scale=8, end=end, seed=7)))
    names = [n for n in select_types(ds, [], []) if not n.endswith(("-16", "-32", "-32-24"))]   # 8 hosts
    assert {queries.CATALOG[n].family for n in names} == {"devops", "generic"} and len(names) > 25
    for s in queries.generate(ds, names, 2, 5, reference=from_import):
        assert sorted(map(repr, from_import.answer(s))) == sorted(map(repr, from_simulator.answer(s))), s


TSBS = LP.parent / "tsbs-devops.lp"      # tsbs_generate_data's output, as is (its .provenance beside it)


def test_a_tsbs_devops_file_imports_as_is_and_its_devops_answers_on_duckdb_equal_the_reference(tmp_path):
    """Issue 39's TSBS acceptance: the file TSBS wrote, imported without a change, is recognized
    as devops, loaded by the real loader (verified), and every devops query type that applies to
    two hosts over three minutes and every generic type is answered by DuckDB as by the reference."""
    from tsbench.data.stored import open_stored
    from tsbench.experiments.session import select_types

    run_cli("import", str(TSBS), "-o", str(tmp_path / "tsbs"))
    ds = open_stored(tmp_path / "tsbs")
    assert ds.use_case == "devops" and ds.tables.rows == 324 and not ds.excluded
    assert {c.type for c in ds.tables.by_name()["cpu"].fields} == {"int"}        # TSBS's integer cpu fields
    url = f"duckdb:{tmp_path / 't.duckdb'}"
    assert load_view("duckdb", url, ds) == 324
    ref = Reference(ds)
    types = select_types(ds, [], [])
    devops = [t for t in types if queries.CATALOG[t].family == "devops"]
    picks_more = {"max-cpu-4", "max-cpu-8", "max-cpu-16", "max-cpu-32", "8-host-1-hr", "single-groupby-1-8-1",
                  "single-groupby-5-8-1", "cpu-max-all-8", "cpu-max-all-32-24"}          # more hosts than its 2
    assert set(devops) == {n for n, qt in queries.CATALOG.items() if qt.family == "devops"} - picks_more
    specs = queries.generate(ds, types, 1, 7, reference=ref)
    assert_all_valid(execute_view("duckdb", url, ds, specs, ref), specs, tuple(types))


def test_execute_and_validate_load_an_import_folder_first(ds, tmp_path):
    """`--load DIR` as `load DIR`: the folder written in the target's format into a temporary
    file, loaded, then the queries validated; the temporary file removed."""
    env = {"TSBENCH_REFERENCE_CACHE": str(tmp_path / "cache"), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    run_cli("queries", "generate", str(ds.folder), "--count", "1", "-o", str(tmp_path / "q.jsonl"), env=env)
    run_cli("validate", str(tmp_path / "q.jsonl"), "--target", "duckdb", "--load", str(ds.folder), "-q",
            "--json", str(tmp_path / "v.json"), env=env)
    checks = json.loads((tmp_path / "v.json").read_text())["validation"]
    assert len(checks) == len(generic_names()) and all(v["ok"] for v in checks)
    assert not any(p.name.startswith("tsbench-") for p in (tmp_path / "tmp").iterdir())
