"""Phases 4-5 on PostgreSQL for the generic family (tsbench/queries/generic.py): every
generic type, drawn on a small devops and a small custom-schema file, answered as the
reference engine answers it, with tags in a table and inline."""

from __future__ import annotations

import pytest

from tsbench.queries.reference import Reference

from conftest import execute_on, load_into
from querysets import assert_all_valid, generic_files, generic_specs, generic_types


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return generic_files(tmp_path_factory)


@pytest.mark.parametrize(("name", "tags"), [("devops", "table"), ("custom", "inline")])
def test_postgres_generic_answers_equal_the_reference(pg, files, name, tags):
    df = files[name]
    ref = Reference(df.dataset)
    specs = generic_specs(df, ref)
    opts = {"tags": tags, "database": f"g_{name}"}
    load_into("postgres", pg.url, df, opts)
    res = execute_on("postgres", pg.url, df, specs, ref, opts, workers=2)
    assert_all_valid(res, specs, tuple(generic_types()))
