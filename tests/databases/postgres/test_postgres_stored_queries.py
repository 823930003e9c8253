"""Phases 4-5 on PostgreSQL for imported data (tsbench/queries/storedview.py): every generic
type drawn on tests/data/own/ref_small.lp's import, answered as the reference engine answers
it from the import's Parquet files, with tags in a table and inline."""

from __future__ import annotations

import pytest

from tsbench import queries
from tsbench.queries.reference import Reference

from querysets import assert_all_valid
from storedload import execute_view, generic_names, imported, load_view


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return imported(tmp_path_factory)


@pytest.mark.parametrize("tags", ["table", "inline"])
def test_postgres_answers_on_an_import_equal_the_reference(pg, ds, tags):
    ref = Reference(ds)
    specs = queries.generate(ds, generic_names(), 3, 21, reference=ref)
    opts = {"tags": tags, "database": f"own_{tags}"}
    assert load_view("postgres", pg.url, ds, opts) == 140
    res = execute_view("postgres", pg.url, ds, specs, ref, opts)
    assert_all_valid(res, specs, tuple(generic_names()))
