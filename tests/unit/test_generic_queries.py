"""The generic query family (tsbench/queries/generic.py, phase 3): drawn from the
schema of devops, iot and a custom YAML schema with sane parameters, the same from
the same (seed, type, index), applying only where the schema offers what a type
draws from, thresholds that leave answers non-empty, and DuckDB's answers equal to
the reference's on a small devops and a small custom-schema file (PostgreSQL's:
tests/databases/postgres/test_postgres_generic_queries.py)."""

from __future__ import annotations

import pytest

from tsbench import queries
from tsbench.core.errors import UserError
from tsbench.queries import generic
from tsbench.queries.reference import Reference

from conftest import dataset, execute_on, load_into
from querysets import GENERIC_CUSTOM_END, GENERIC_DEVOPS, assert_all_valid, generic_files, generic_schema, \
    generic_specs, generic_types

SPECS = {
    "devops": GENERIC_DEVOPS,
    "iot": dict(use_case="iot", scale=6, end="2016-01-01T02:00:00Z", seed=3),
    # series are tag0 x tag1: no one tag tells them apart
    "synthetic": dict(use_case="synthetic", seed=13, params={"tags": "4,3", "points": 120}),
}
# (agg, at most N fields, K series) of each aggregate type, by name
AGGREGATES = {"generic-max-1-1": ("max", 1, 1), "generic-mean-n-1": ("mean", 4, 1), "generic-min-1-4": ("min", 1, 4),
              "generic-sum-n-4": ("sum", 4, 4), "generic-count-n-4": ("count", 4, 4)}


@pytest.fixture(scope="module", params=["devops", "iot", "custom", "synthetic"])
def drawn(request, tmp_path_factory):
    """(dataset, its reference, 3 queries of every generic type) for each schema."""
    if request.param == "custom":
        ds = dataset(use_case="custom", schema_file=generic_schema(tmp_path_factory.mktemp("s")),
                     end=GENERIC_CUSTOM_END, seed=4)
    else:
        ds = dataset(**SPECS[request.param])
    ref = Reference(ds)
    ctx = queries.context(ds)
    assert all(queries.CATALOG[n].applies(ctx) is None for n in generic_types())
    return ds, ref, queries.generate(ds, generic_types(), 3, 21, reference=ref)


def test_the_family_has_its_named_types():
    assert set(generic_types()) == {*AGGREGATES, "generic-groupby-tag", "generic-lastpoint", "generic-above-p90",
                                    "generic-scan"}
    assert "generic" in queries.FAMILIES


def test_parameters_come_from_the_schema(drawn):
    ds, _, specs = drawn
    ctx = queries.context(ds)
    bucket = generic.bucket_of(ctx)
    for s in specs:
        p = s.params
        m = p["measurement"]
        assert m in generic.measurements(ctx)
        numeric = generic.numeric_fields(ctx, m)
        assert set(p["fields"]) <= set(numeric) and len(set(p["fields"])) == len(p["fields"])
        if s.type in ("generic-lastpoint", "generic-scan"):
            assert p["fields"] == numeric
        if "start" in p and s.type != "generic-scan":
            assert ds.start_ns <= p["start"] < p["end"] <= ds.end_ns
            assert p["start"] % bucket == 0 and (p["end"] - p["start"]) % bucket == 0
        tag = generic.series_tag(ctx, m)
        if s.type in AGGREGATES:
            agg, n, k = AGGREGATES[s.type]
            assert p["agg"] == agg and len(p["fields"]) == min(n, len(numeric)) and p["bucket"] == bucket
            assert p["tag"] == tag and len(p["tag_values"]) == k
            assert set(p["tag_values"]) <= set(generic.distinct_values(ctx, tag))
        elif s.type == "generic-groupby-tag":
            assert p["bucket"] is None and len(p["group_by"]) == 1
            assert len(generic.distinct_values(ctx, p["group_by"][0])) >= 2
        elif s.type == "generic-lastpoint":
            assert p["group_by"] in ([tag], list(ctx.table(m).tags))
        elif s.type == "generic-above-p90":
            assert p["value_filter"]["field"] == p["fields"][0] and p["tags_out"] == [tag]
        else:
            assert (p["start"], p["end"], p["value_filter"]) == (ds.start_ns, ds.end_ns, None)


def test_the_custom_schema_draws_its_own_measurements_and_tags(drawn):
    ds, _, specs = drawn
    if ds.spec.use_case != "custom":
        return
    assert {s.params["measurement"] for s in specs} == {"pump", "motor"}
    # serial is pump's own tag: its values are unknown before a database is asked, so it is never chosen
    used = {t for s in specs for t in [s.params.get("tag"), *s.params.get("group_by", [])] if t}
    assert used <= {"site", "zone"} and "site" in used


def test_the_same_seed_draws_the_same_and_each_type_draws_alone(drawn):
    ds, ref, specs = drawn
    again = queries.generate(ds, generic_types(), 3, 21, reference=ref)
    assert [s.params for s in again] == [s.params for s in specs]
    alone = queries.generate(ds, ["generic-sum-n-4"], 3, 21, reference=ref)
    assert [s.params for s in alone] == [s.params for s in specs if s.type == "generic-sum-n-4"]
    other = queries.generate(ds, generic_types(), 3, 22, reference=ref)
    assert [s.params for s in other] != [s.params for s in specs]


def test_the_newest_row_is_taken_per_series(drawn):
    """generic-lastpoint's groups tell the measurement's series apart: no group has two rows at
    its newest time, so its newest row is one row, whichever database answers (synthetic's tag0
    alone would have three)."""
    _, ref, specs = drawn
    for s in (x for x in specs if x.type == "generic-lastpoint"):
        m, key = s.params["measurement"], ", ".join(f'"{t}"' for t in s.params["group_by"])
        most = ref.con.execute(
            f'SELECT max(n) FROM (SELECT count(*) AS n FROM (SELECT {key}, time, max(time) OVER '
            f'(PARTITION BY {key}) AS newest FROM "{m}") WHERE time = newest GROUP BY {key})').fetchone()[0]
        assert most == 1, (m, s.params["group_by"], most)


def test_thresholds_leave_answers_non_empty_without_a_redraw(drawn):
    """The threshold is the 90th percentile of the window's bucket maxima: attempt 0 (no redraw)
    has rows, and fewer than the window holds (the filter keeps a part)."""
    ds, ref, _ = drawn
    for s in queries.generate(ds, ["generic-above-p90"], 6, 21, allow_empty=True, reference=ref):
        got = ref.expected(s)
        every = ref.expected(queries.QuerySpec(-1, s.type, {**s.params, "value_filter": None}))
        assert 0 < len(got) < len(every), (s.params, len(got), len(every))


def test_every_generic_answer_is_not_empty(drawn):
    _, ref, specs = drawn
    assert all(ref.expected(s) for s in specs)


def test_a_schema_without_what_a_type_needs_gets_the_reason():
    """One host (the replication-lag schema): no 4 series, no tag with several values."""
    ds = dataset(use_case="custom", schema_file="experiments/schemas/replication_lag.yaml",
                 end="2016-01-01T00:30:00Z")
    ctx = queries.context(ds)
    why = {n: queries.CATALOG[n].applies(ctx) for n in generic_types()}
    assert why["generic-min-1-4"] and "an entity tag with 4 distinct value(s)" in why["generic-min-1-4"]
    assert why["generic-groupby-tag"] and "a tag with several values" in why["generic-groupby-tag"]
    runs = {n for n, w in why.items() if w is None}
    assert runs == {"generic-max-1-1", "generic-mean-n-1", "generic-lastpoint", "generic-above-p90", "generic-scan"}
    with pytest.raises(UserError, match="generic-groupby-tag needs a measurement"):
        queries.generate(ds, ["generic-groupby-tag"], 1, 1)


def test_the_dialects_declare_the_generic_types_by_their_shapes():
    """VictoriaMetrics and OpenTSDB filter no rows on a value: they exclude generic-above-p90 with the
    reason; OpenTSDB has no last shape; DuckDB, PostgreSQL and InfluxDB run every generic type."""
    from tsbench.databases.shared.support import support_matrix

    m = support_matrix()
    for col in ("duckdb", "postgres", "influx", "influx/flux"):
        assert all(m.runs(col, n) for n in generic_types()), col
    assert "filter" in m.reasons("victoriametrics")["generic-above-p90"]
    assert "value" in m.reasons("opentsdb")["generic-above-p90"]
    assert "last shape" in m.reasons("opentsdb")["generic-lastpoint"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return generic_files(tmp_path_factory)


@pytest.mark.parametrize("name", ["devops", "custom"])
def test_duckdb_answers_equal_the_reference(files, name, tmp_path):
    df = files[name]
    ref = Reference(df.dataset)
    specs = generic_specs(df, ref)
    url = f"duckdb:{tmp_path / 'g.duckdb'}"
    load_into("duckdb", url, df)
    res = execute_on("duckdb", url, df, specs, ref, workers=2)
    assert_all_valid(res, specs, tuple(generic_types()))
