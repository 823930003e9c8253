"""The iot query family's answers on PostgreSQL, tags in a table and inline, equal to the
reference engine's: the dataset and drawn queries of tests/querysets.py (20
trucks, two days at 46 s, NULL tags and fields; every type drawn, plus the threshold
variants that make the empty types find something)."""

from __future__ import annotations

import pytest

from tsbench.queries.reference import Reference

from conftest import execute_on, load_into
from querysets import TSBS_IOT, assert_all_valid, iot_csv, iot_specs


@pytest.fixture(scope="module")
def iot(tmp_path_factory):
    return iot_csv(tmp_path_factory)


@pytest.fixture(scope="module")
def specs(iot):
    return iot_specs(iot)


@pytest.fixture(scope="module")
def reference(iot):
    return Reference(iot.dataset)


@pytest.mark.parametrize("tags", ["table", "inline"])
def test_postgres_answers_equal_the_reference(pg, iot, specs, reference, tags):
    opts = {"tags": tags, "database": f"iot_{tags}"}
    load_into("postgres", pg.url, iot, opts)
    res = execute_on("postgres", pg.url, iot, specs, reference, opts, workers=3)
    assert_all_valid(res, specs, TSBS_IOT)
