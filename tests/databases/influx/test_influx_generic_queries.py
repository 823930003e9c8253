"""Phases 4-5 on InfluxDB 1.8 for the generic family (tsbench/queries/generic.py):
every generic type, drawn on a small devops and a small custom-schema file, rendered
as InfluxQL and as Flux, answered as the reference engine answers it."""

from __future__ import annotations

import pytest

from tsbench.queries.reference import Reference

from conftest import execute_on, load_into, local_server
from querysets import assert_all_valid, generic_files, generic_specs, generic_types


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return generic_files(tmp_path_factory, "influx")


@pytest.fixture(scope="module")
def server():
    with local_server("influx", flux=True) as s:
        yield s


@pytest.fixture(scope="module")
def loaded(server, files):
    """Each file loaded once (database g_<name>) for both languages."""
    for name, df in files.items():
        load_into("influx", server.url, df, {"database": f"g_{name}"}, compact=False)
    return files


@pytest.mark.parametrize("name", ["devops", "custom"])
@pytest.mark.parametrize("language", ["influxql", "flux"])
def test_influx_generic_answers_equal_the_reference(server, loaded, name, language):
    df = loaded[name]
    ref = Reference(df.dataset)
    specs = generic_specs(df, ref, count=2)
    opts = {"database": f"g_{name}", "query_language": language}
    res = execute_on("influx", server.url, df, specs, ref, opts, workers=2)
    assert_all_valid(res, specs, tuple(generic_types()))
