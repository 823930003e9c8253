"""The Elasticsearch/OpenSearch target and its servers (tsbench/databases/elasticsearch),
beyond the contract suite: every index template loads and verifies, a document the
server refuses fails the load with one line naming its reason, rejected (429) items of
a partly taken bulk are re-sent alone (never doubling the others), Elasticsearch 7.10
starts and loads, an unreachable or foreign URL is one line, and both clients
(client=library: opensearch-py for OpenSearch and 7.10; client=http: aiohttp writes, httptools-read queries) load and
answer as the reference while the `elasticsearch` package's product check is one
line. One OpenSearch server for the module; Elasticsearch 7.10 in its own test."""

from __future__ import annotations

import asyncio
import json
import warnings

import numpy as np
import pytest

from tsbench.core.errors import Fatal, Retryable, ServerLacks, UserError
from tsbench.core.model import Batch, Column, Table, Tables
from tsbench.data.datafile import open_datafile
from tsbench.data.dataset import DatasetSpec, resolve
from tsbench.data.generate import generate
from tsbench.execute.timer import timed_query
from tsbench.queries.compare import compare, tolerance

from conftest import load_into, local_server, run_cli
from faultserver import FaultServer

CLIENT_TYPES = ["single-groupby-5-1-1", "double-groupby-1", "lastpoint", "groupby-orderby-limit"]

TINY = {"use_case": "devops", "scale": 2, "end": "2016-01-01T00:10:00Z", "seed": 3}


@pytest.fixture(scope="module")
def devops_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("es") / "devops.csv"
    generate(resolve(DatasetSpec(**TINY)), "csv", str(path), show_progress=False)
    return open_datafile(path)


@pytest.fixture(scope="module")
def opensearch():
    with local_server("opensearch") as srv:
        yield srv.url


def _target(url: str, options: dict | None = None):
    from tsbench.databases.elasticsearch.target import ElasticsearchTarget

    return ElasticsearchTarget(url, options or {})


async def _get(url: str, path: str) -> dict:
    t = _target(url)
    await t.open()
    try:
        return json.loads(await t.http.get_ok(path))
    finally:
        await t.close()


@pytest.mark.parametrize("template", ["default", "aggregation", "sorted"])
def test_each_template_loads_and_verifies(opensearch, devops_csv, template):
    res = load_into("elasticsearch", opensearch, devops_csv, {"template": template})
    assert res.counted == res.expected == devops_csv.rows
    assert res.own_disk_bytes == res.disk["es_store_size_bytes"] > 0
    mapping = asyncio.run(_get(opensearch, "/cpu/_mapping"))["cpu"]["mappings"]
    assert mapping["properties"]["time"]["type"] == "date_nanos"
    assert mapping["properties"]["hostname"]["type"] == "keyword"
    assert mapping["properties"]["usage_user"]["type"] == "double"
    assert mapping.get("_source", {}).get("enabled", True) is (template != "aggregation")
    settings = asyncio.run(_get(opensearch, "/cpu/_settings"))["cpu"]["settings"]["index"]
    assert "refresh_interval" not in settings                    # set back to the server's default
    assert settings["requests"]["cache"]["enable"] == "false"


def test_a_refused_document_fails_the_write_with_its_reason(opensearch):
    t_cpu = Table("cpu", ("hostname",), (Column("usage_user", "float"),))
    tables = Tables((t_cpu,), 0, 1, 3, 3)
    good = b"cpu,2016-01-01T00:00:00Z,host_0,1.5\n"
    bad = b"cpu,2016-01-01T00:00:10Z,host_0,1.5\ncpu,2016-13-45T00:00:00Z,host_1,2.5\n"

    async def go():
        t = _target(opensearch)
        await t.open()
        try:
            await t.create(tables, "drop")
            await t.write(Batch(memoryview(good), 1, 1))
            with pytest.raises(Fatal) as ei:
                await t.write(Batch(memoryview(bad), 2, 2))
            await t.flush()
            return str(ei.value), await t.count(tables)
        finally:
            await t.close()
    msg, n = asyncio.run(go())
    assert "\n" not in msg and "refused 1 of 2 documents" in msg and "[time]" in msg, msg
    assert n == 2          # the good documents of both batches went in; the load fails on the refused one


def test_reusing_an_index_with_another_mapping_is_one_line(opensearch, devops_csv):
    load_into("elasticsearch", opensearch, devops_csv)

    async def go():
        t = _target(opensearch)
        await t.open()
        try:
            await t.http.session.delete(t.http.base + "/cpu")
            r = await t.http.session.put(t.http.base + "/cpu", json={"mappings": {"properties": {
                "time": {"type": "date"}, "usage_user": {"type": "keyword"}}}})
            assert r.status == 200
            await t.create(devops_csv.tables(), "reuse")
        finally:
            await t.close()
    with pytest.raises(UserError) as ei:
        asyncio.run(go())
    msg = str(ei.value)
    assert "\n" not in msg and "index 'cpu'" in msg and "another mapping" in msg and "--if-exists drop" in msg


class _FakeBulk:
    """Stands in for the HttpClient: answers each bulk with the next canned item statuses."""

    def __init__(self, answers: list):
        self.answers, self.bodies = answers, []

    async def post(self, path, data, params=None, headers=None):
        self.bodies.append(bytes(data))
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        items = [{"create": {"status": s, **({"error": {"type": "es_rejected_execution_exception",
                                                         "reason": "queue full"}} if s == 429 else {})}}
                 for s in a]
        return json.dumps({"errors": any(s >= 300 for s in a), "items": items}).encode()


def _fake_target(answers):
    t = _target("http://127.0.0.1:9")
    t._bind(Tables((Table("cpu", ("hostname",), (Column("usage_user", "float"),)),), 0, 1, 4, 4))
    t.http = _FakeBulk(answers)
    return t


def _batch(n: int) -> Batch:
    data = b"".join(b"cpu,2016-01-01T00:00:%02dZ,host_%d,%d.5\n" % (i, i, i) for i in range(n))
    return Batch(memoryview(data), n, n)


def test_rejected_items_of_a_partly_taken_bulk_are_resent_alone():
    t = _fake_target([[201, 429, 201, 429], Retryable("HTTP 503"), [201, 429], [201]])
    asyncio.run(t.write(_batch(4)))
    first, *resent = t.http.bodies
    assert first.count(b"\n") == 8
    assert resent[0] == resent[1]                                   # the 503 did not re-send the whole batch
    assert resent[0].count(b"\n") == 4 and b"host_1" in resent[0] and b"host_3" in resent[0]
    assert resent[2].count(b"\n") == 2 and b"host_3" in resent[2] and b"host_1" not in resent[2]


def test_a_batch_rejected_whole_is_retryable_and_other_item_errors_are_fatal():
    with pytest.raises(Retryable):
        asyncio.run(_fake_target([[429, 429]]).write(_batch(2)))
    with pytest.raises(Fatal) as ei:
        asyncio.run(_fake_target([[201, 400]]).write(_batch(2)))
    assert "refused 1 of 2 documents" in str(ei.value)


def test_bad_measurement_names_are_one_line():
    from tsbench.databases.elasticsearch.target import check_names

    for t in (Table("CPU", (), ()), Table("cpu", ("time",), ()), Table("cpu", (), (Column("_id", "float"),))):
        with pytest.raises(UserError) as ei:
            check_names(t)
        assert "\n" not in str(ei.value)


def test_elasticsearch_7_10_starts_loads_and_says_what_it_lacks(devops_csv):
    from tsbench.experiments import session

    with local_server("elasticsearch") as srv:
        res = load_into("elasticsearch", srv.url, devops_csv, {"template": "aggregation"})
        assert res.counted == devops_csv.rows

        async def go():
            t = _target(srv.url, {"template": "aggregation"})
            await t.open()
            try:
                return await t.version(), t
            finally:
                await t.close()
        version, t = asyncio.run(go())
        assert version.startswith("elasticsearch 7.10.2 (client opensearch-py "), version
        spec = session.draw(devops_csv.dataset, ["high-cpu-1"], 1, seed=1, allow_empty=True)[0]
        with pytest.raises(ServerLacks) as ei:
            t.render(spec)
        assert "7.10.2" in str(ei.value)
        _client_loads_and_answers(srv.url, devops_csv, "http", "elasticsearch 7.10.2 (client aiohttp+httptools)")
        assert "product check" in _elasticsearch_package_refusal(srv.url)


async def _client_answers(url: str, df, client: str) -> tuple[str, list[str]]:
    """The version string with this client and the queries whose answers differ from the reference."""
    from tsbench.experiments import session
    from tsbench.queries.reference import Reference

    ref = Reference(df.dataset)
    specs = session.draw(df.dataset, CLIENT_TYPES, 2, seed=5, reference=ref)
    failures = []
    t = _target(url, {"client": client})
    await t.open()
    try:
        await t.prepare(2)
        for spec in specs:
            native = t.render(spec)
            ans = await timed_query(t, native)
            assert (ans.ttfb is None) == (client == "library") and ans.seconds > 0
            m = compare(spec.params, ref.expected(spec), t.answer_rows(native, ans), tolerance(spec, 0.0, ref))
            if m is not None:
                failures.append(f"{spec.type} #{spec.id}: {m.diff()}")
        return await t.version(), failures
    finally:
        await t.close()


def _client_loads_and_answers(url: str, df, client: str, version_start: str) -> None:
    res = load_into("elasticsearch", url, df, {"client": client})
    assert res.counted == res.expected == df.rows
    version, failures = asyncio.run(_client_answers(url, df, client))
    assert version.startswith(version_start), version
    assert not failures, "\n".join(failures)


def _elasticsearch_package_refusal(url: str) -> str:
    """What the `elasticsearch` package says of a server (asked directly, as if it were 8.x)."""
    from tsbench.databases.elasticsearch.clients import ElasticsearchPy

    async def go():
        lib = ElasticsearchPy(url, "test", (), 8)
        try:
            await lib.request("GET", "/", None, {})
        finally:
            await lib.close()
    with pytest.raises(UserError) as ei:
        asyncio.run(go())
    msg = str(ei.value)
    assert "\n" not in msg and "use client: http" in msg, msg
    return msg


@pytest.mark.parametrize("client,version", [("library", "opensearch 2.19.1 (client opensearch-py "),
                                            ("http", "opensearch 2.19.1 (client aiohttp+httptools)")])
def test_each_client_on_opensearch_loads_and_answers_as_the_reference(opensearch, devops_csv, client, version):
    _client_loads_and_answers(opensearch, devops_csv, client, version)
    assert "product check" in _elasticsearch_package_refusal(opensearch)


def test_a_server_saying_it_is_elasticsearch_8_without_the_product_header_is_one_line():
    async def go(url):
        t = _target(url, {"client": "library"})
        try:
            await t.open()
        finally:
            await t.close()
    with FaultServer() as fs:
        fs.root = {"version": {"number": "8.15.0"}}           # no X-Elastic-Product header
        with pytest.raises(UserError) as ei:
            asyncio.run(go(fs.url))
    msg = str(ei.value)
    assert "\n" not in msg and "product check" in msg and "use client: http" in msg, msg


def test_a_server_warning_header_is_not_printed_through_the_library():
    from tsbench.databases.elasticsearch.clients import OpenSearchPy

    async def go(url):
        lib = OpenSearchPy(url, "test", ())
        try:
            return await lib.request("GET", "/", None, {})
        finally:
            await lib.close()
    with FaultServer() as fs, warnings.catch_warnings(record=True) as seen:
        fs.root = {"version": {"number": "2.19.1"}}
        fs.root_headers = {"Warning": '299 OpenSearch-2.19.1 "this request accesses system indices: [.tasks]"'}
        warnings.simplefilter("always")
        status, _ = asyncio.run(go(fs.url))
    assert status == 200 and not [str(w.message) for w in seen], [str(w.message) for w in seen]


def test_unreachable_and_foreign_urls_are_one_line(devops_csv):
    with FaultServer() as fs:                  # answers 404 on /: not Elasticsearch
        for url, words in (("http://127.0.0.1:9", "cannot reach"), (fs.url, "Elasticsearch or OpenSearch")):
            p = run_cli("load", str(devops_csv.path), "--target", "elasticsearch", "--server", url, "-q",
                        check=False)
            err = p.stderr.decode().strip()
            assert p.returncode == 2 and len(err.splitlines()) == 1 and words in err, err


def test_ends_of_rendered_documents_cut_a_subset_exactly():
    from tsbench.databases.elasticsearch.target import _subset

    body = b"a\nA\nbb\nBB\nccc\nCCC\n"
    ends = np.array([4, 10, 18], np.uint64)
    sub, sub_ends = _subset(body, ends, [0, 2])
    assert sub == b"a\nA\nccc\nCCC\n" and sub_ends.tolist() == [4, 12]
