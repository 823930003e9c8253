"""Elasticsearch / OpenSearch as a target: loads (phase 2) and runs queries (phase 4).

Layout (templates.py): one index per measurement, named as the measurement, a
document per CSV row. Servers: `opensearch` (2.19.1, the default local server),
`elasticsearch` (7.10.2, `server: local:elasticsearch`), or any cluster by URL
(Elasticsearch 7 to 9, OpenSearch 1 and 2; credentials in the URL).

Client (option `client`): `library` (the default) is the server's official Python
client (clients.py): opensearch-py for OpenSearch and Elasticsearch 7 (the
`elasticsearch` package's product check refuses both), the `elasticsearch` package
(8.x/9.x) for Elasticsearch 8 and later; a query is timed from the call to the
library's answer, without a time to first byte. `http` is the shared HttpClient
(http.py: writes through aiohttp, queries through its keep-alive client whose
answers httptools reads), which times a query to its first and last byte and a
connection opened on the way apart. Either way the bodies are the same bytes (bulk
NDJSON built in C, the dialect's JSON) and the answers are read by tsbench, through
one seam (_wire, _request). version() names the client, e.g. "opensearch 2.19.1
(client opensearch-py 3.2.0)".

Load: each batch is split by measurement in C (native.split_csv), each part
rendered in C into bulk NDJSON (native.render: a `create` action line and the
document per row), the parts joined into one POST /_bulk. The index has
refresh_interval -1 during the load; flush() refreshes and sets it back. stats() (value
verification): per index one search of the fields' figures and the tag sets (stats.py).

Push-back and retries without doubles: documents get no _id (the server's own
ids keep its append-only fast path), so a document sent twice is stored twice.
A batch is therefore re-sent whole (Retryable, the loader's backoff) only when
the server took none of it: a whole request refused with 429/503, or every item
rejected with 429 (es_rejected_execution_exception). When some items went in and
others were rejected with 429, write() itself re-sends only the rejected items'
lines (cut out of the rendered buffer by offsets, in one bulk request), backing
off, bounded by PARTIAL_RETRY_S. Any other item error fails the load (Fatal)
with the number of refused documents and the first one's reason. One case is
left: a connection lost after the server read a bulk request (its outcome
unknown) is retried whole; if the server had indexed it, the count verification
after the load finds the excess and fails the load: never a silent double.

Queries: the dialect (dsl.py, EsDsl) renders EsQuery: requests (path, JSON body)
sent in order, timed from send to last byte; with `client` True the answers are
parsed and read into rows inside the timed region (client_s), else after the pass
in canonical()."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tsbench.core import bounds
from tsbench.core.errors import Fatal, Retryable, ServerLacks, UserError
from tsbench.core.model import STAT_KINDS, Batch, Table, Tables, TableStats
from tsbench.data import native
from tsbench.data.batches import csv_layout
from tsbench.databases.elasticsearch import clients, stats, templates
from tsbench.databases.elasticsearch import forms as _forms  # noqa: F401  (declares EsDsl.forms)
from tsbench.databases.elasticsearch.dialect import EsDsl, EsQuery
from tsbench.databases.shared.http import HttpClient
from tsbench.databases.shared.stats import FieldMerge
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer

PUSHBACK_WORDS = ("es_rejected_execution_exception",)
BULK_PARAMS = {"filter_path": "errors,items.*.status,items.*.error.type,items.*.error.reason"}
NDJSON = {"Content-Type": "application/x-ndjson"}
JSON = {"Content-Type": "application/json"}
PARTIAL_RETRY_S = 120.0      # re-sending the rejected items of a partly taken batch, at most this long
COMPACT_TIMEOUT = 1800.0
INDEX_NAME_BAD = re.compile(r'[\\/*?"<>| ,#:A-Z]|^[-_+]|^\.\.?$')


class ElasticsearchOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    template: Literal["default", "aggregation", "sorted"] = Field(
        "default", description="the indexes' settings and mappings (templates.py): default: every column indexed "
                               "and in doc values, documents in _source; aggregation: _source off, fields in doc "
                               "values only; sorted: the index sorted by the tags, then time, best_compression")
    shards: int = Field(1, ge=1, le=bounds.MAX_WORKERS, description="primary shards of each index")
    replicas: int = Field(0, ge=0, le=bounds.MAX_WORKERS, description="replicas of each shard")
    client: Literal["library", "http"] = Field(
        "library", description="library: the server's Python client, opensearch-py or elasticsearch (clients.py); "
                               "http: the shared HttpClient")


def check_names(t: Table) -> None:
    """Index and field names the layout can hold, else one UserError naming the culprit."""
    if INDEX_NAME_BAD.search(t.name) or not t.name or len(t.name.encode()) > 255:
        raise UserError(f"target elasticsearch: measurement {t.name!r} cannot be an index name (indices are "
                        f"lowercase, without \\ / * ? \" < > | , # : or spaces, and do not start with - _ +)")
    for col in (*t.tags, *t.field_names):
        if col == "time" or col.startswith("_") or "." in col or not col:
            raise UserError(f"target elasticsearch: measurement {t.name!r}: column {col!r} cannot be a document "
                            f"field here (time is the timestamp; names starting with _ or holding a dot are not "
                            f"plain fields)")


def _reason(body: bytes) -> str:
    """The server's error reason from an error body (or the body itself)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        err = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return text[:500] or "(empty body)"
    if isinstance(err, dict):
        root = (err.get("root_cause") or [err])[0]
        return f"{root.get('type')}: {root.get('reason')}"[:1000]
    return str(err)[:1000]


class ElasticsearchTarget(Target):
    name = "elasticsearch"
    needs_url = True
    url_example = "http://HOST:9200"
    format = "csv"
    count_unit = "rows"
    server_kind = "opensearch"
    other_server_kinds = ("elasticsearch",)
    options_model = ElasticsearchOptions
    own_disk_figure = "es_store_size_bytes"
    dialects = {"dsl": EsDsl}
    value_checks = {k: None for k in STAT_KINDS}     # stats.py: integer figures as Java longs

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"elasticsearch at {self.url}"
        self.http: HttpClient | None = None
        self.lib: clients.LibraryClient | None = None      # client=library (open())
        self.distribution = ""          # "opensearch" or "elasticsearch" (open())
        self.number = ""                # the server's version number
        self._tables: list[Table] = []
        self._layout = None
        self._tpls: list = []
        self._refresh: dict[str, str | None] = {}    # index -> its refresh_interval before the load

    # ---- connect ------------------------------------------------------------------------
    async def open(self) -> None:
        self.http = HttpClient(self.url, self.what, pushback_words=PUSHBACK_WORDS)
        await self.http.open(probe_path="/")
        status, body = await self.http.get("/")
        try:
            v = json.loads(body)["version"]
            self.number = str(v["number"])
        except (ValueError, KeyError, TypeError):
            await self.close()
            raise UserError(f"target elasticsearch: {self.url}/ answered HTTP {status}: {_reason(body)[:300]}: "
                            f"is this an Elasticsearch or OpenSearch server?") from None
        self.distribution = v.get("distribution") or "elasticsearch"
        if self.distribution == "elasticsearch" and int(self.number.split(".")[0]) < 7:
            await self.close()
            raise UserError(f"target elasticsearch: {self.url} runs Elasticsearch {self.number}; 7.0 or later "
                            f"is needed (typeless mappings, date_nanos)")
        if self.options.client == "library":
            try:
                self.lib = await clients.connect(self.url, self.distribution, self.number, self.what,
                                                 PUSHBACK_WORDS)
            except BaseException:       # the HTTP session closed, then re-raised: nothing hidden
                await self.close()
                raise

    @property
    def _wire(self):
        """Where bulk, query and warm-up requests go: the library client, or the HttpClient."""
        return self.lib if self.lib is not None else self.http

    async def close(self) -> None:
        if self.lib is not None:
            await self.lib.close()
            self.lib = None
        if self.http is not None:
            await self.http.close()
            self.http = None

    async def version(self) -> str:
        if not self.number:
            return ""
        return f"{self.distribution} {self.number} (client {self.lib.name if self.lib else 'aiohttp+httptools'})"

    # ---- create -------------------------------------------------------------------------
    def _bind(self, tables: Tables) -> None:
        self._tables = list(tables)
        for t in self._tables:
            check_names(t)
        self._layout = csv_layout(self._tables)
        self._tpls = [native.Template(templates.bulk_ops(t)) for t in self._tables]

    def _indices(self) -> str:
        return ",".join(t.name for t in self._tables)

    async def _request(self, method: str, path: str, data: bytes | None) -> tuple[int, bytes]:
        """One JSON request, any status back; no answer at all is Fatal."""
        return await self._wire.request(method, path, data, JSON)

    async def _ok(self, method: str, path: str, body: dict | None = None, ok=(200,)) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        status, text = await self._request(method, path, data)
        if status not in ok:
            raise Fatal(f"{self.what}: {method} {path}: HTTP {status}: {_reason(text)}")
        return status, text

    async def _doc_count(self, index: str) -> int | None:
        """Documents in an index after a refresh; None if there is no such index."""
        status, body = await self._ok("POST", f"/{index}/_refresh", ok=(200, 404))
        if status == 404:
            return None
        return int(json.loads((await self._ok("GET", f"/{index}/_count"))[1])["count"])

    async def create(self, tables: Tables, if_exists: str) -> None:
        self._bind(tables)
        counts = {t.name: await self._doc_count(t.name) for t in self._tables}
        if if_exists == "abort":
            for name, n in counts.items():
                if n:
                    raise exists_error("elasticsearch", f"index {name!r} at {self.url}")
        self._refresh = {}
        for t in self._tables:
            if counts[t.name] is not None and if_exists == "reuse":
                await self._reuse(t)
                continue
            if counts[t.name] is not None:     # drop, or abort on an empty index: made anew with this template
                await self._ok("DELETE", f"/{t.name}", ok=(200, 404))
            body = templates.index_body(t, self.options.template, self.options.shards, self.options.replicas)
            await self._ok("PUT", f"/{t.name}", body)
            self._refresh[t.name] = None        # the server's default after the load

    async def _reuse(self, t: Table) -> None:
        """An existing index kept: its mapping must hold the columns as this load writes them."""
        doc = json.loads((await self._ok("GET", f"/{t.name}/_mapping"))[1])
        props = (doc.get(t.name) or {}).get("mappings", {}).get("properties", {})
        want = templates.mapping(t, self.options.template)["properties"]
        bad = [f"{k} is {props.get(k, {}).get('type', 'missing')} (needs {v['type']})" for k, v in want.items()
               if props.get(k, {}).get("type") != v["type"]]
        if bad:
            raise UserError(f"target elasticsearch: index {t.name!r} at {self.url} exists with another mapping "
                            f"({', '.join(bad[:3])}); use --if-exists drop to replace it")
        st = json.loads((await self._ok("GET", f"/{t.name}/_settings/index.refresh_interval"))[1])
        self._refresh[t.name] = (st.get(t.name) or {}).get("settings", {}).get("index", {}).get("refresh_interval")
        await self._ok("PUT", f"/{t.name}/_settings", {"index": {"refresh_interval": "-1"}})

    async def attach(self, tables: Tables) -> None:
        self._bind(tables)

    # ---- write --------------------------------------------------------------------------
    def _render(self, batch: Batch) -> tuple[bytes, np.ndarray]:
        """The batch as one bulk body, and the end offset of each document's two lines in it."""
        buf, parts = native.split_csv(self._layout, batch.data)
        chunks, ends, at = [], [], 0
        for i, part in enumerate(parts):
            if part is None:
                continue
            off, n, _rows, _vals = part
            out, e = native.render(self._tpls[i], buf, off, n)
            chunks.append(out)
            ends.append(e + np.uint64(at))
            at += len(out)
        if not chunks:
            return b"", np.empty(0, np.uint64)
        return b"".join(chunks), np.concatenate(ends)

    async def write(self, batch: Batch) -> None:
        if self._layout is None:
            raise Fatal("elasticsearch: write() before create() or attach()")
        body, ends = self._render(batch)
        if not len(ends):
            return
        taken_any = False
        deadline = time.monotonic() + PARTIAL_RETRY_S
        pause = 0.05
        while True:
            try:
                resp = await self._wire.post("/_bulk", body, params=BULK_PARAMS, headers=NDJSON)
            except Retryable:
                if not taken_any:
                    raise                       # nothing of the batch is in: the loader re-sends it whole
                resp = None
            except Fatal as exc:
                raise Fatal(_too_large_hint(str(exc))) from None
            if resp is not None:
                rejected, taken = _bulk_outcome(self.what, resp, len(ends))
                if not rejected:
                    return
                if not taken and not taken_any:
                    raise Retryable(f"{self.what}: all {len(ends)} documents rejected (429, "
                                    f"es_rejected_execution_exception)")
                taken_any = True
                body, ends = _subset(body, ends, rejected)
            if time.monotonic() > deadline:
                raise Fatal(f"{self.what}: {len(ends)} documents still rejected by the server (429) after "
                            f"{PARTIAL_RETRY_S:.0f} s of re-sending them")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    # ---- verify, compact, measure ---------------------------------------------------------
    async def flush(self) -> None:
        """Refresh (everything written becomes searchable) and set refresh_interval back."""
        if not self._tables:
            await self._ok("POST", "/_refresh")
            return
        await self._ok("POST", f"/{self._indices()}/_refresh?ignore_unavailable=true")
        for index, value in self._refresh.items():
            await self._ok("PUT", f"/{index}/_settings", {"index": {"refresh_interval": value}})
        self._refresh = {}

    async def count(self, tables: Tables) -> int:
        names = ",".join(t.name for t in tables)
        if not names:
            return 0
        body = (await self._ok("GET", f"/{names}/_count?ignore_unavailable=true&allow_no_indices=true"))[1]
        return int(json.loads(body)["count"])

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """Per field count, sum, min and max, and the distinct tag sets, over the dataset's
        window (stats.py: one search for the fields, a page of tag sets per search)."""
        path = f"/{table.name}/_search"
        merge = FieldMerge(table, self.what)
        doc = await self._search(path, stats.fields_body(table, tables.start_ns, tables.end_ns))
        stats.read_fields(table, doc, merge)
        if not table.tags:
            return merge.stats(int(doc["hits"]["total"]["value"] > 0))
        series, after = 0, None
        while True:
            n, after = stats.read_series(await self._search(path, stats.series_body(table, tables.start_ns,
                                                                                     tables.end_ns, after)))
            series += n
            if after is None:
                return merge.stats(series)

    async def _search(self, path: str, body: dict) -> dict:
        return _search_doc(self.what, path, (await self._ok("POST", path, body))[1])

    async def compact(self) -> None:
        """Force-merge every index to one segment (the seed's compaction), as a task
        polled to its end (bounded by COMPACT_TIMEOUT)."""
        if not self._tables:
            return
        path = f"/{self._indices()}/_forcemerge?max_num_segments=1"
        status, body = await self._ok("POST", path + "&wait_for_completion=false", ok=(200, 400))
        if status == 400:                # before 7.7: no task form; the call returns when merged
            await self._ok("POST", path)
        task = json.loads(body).get("task") if status == 200 else None
        deadline = time.monotonic() + COMPACT_TIMEOUT
        while task:
            status, body = await self._ok("GET", f"/_tasks/{task}", ok=(200, 404))
            st = json.loads(body)
            if status == 404 or st.get("completed"):
                if st.get("error") and status == 200:
                    raise Fatal(f"{self.what}: force merge: {_reason(body)}")
                break
            if time.monotonic() > deadline:
                raise Fatal(f"{self.what}: force merge still running after {COMPACT_TIMEOUT:.0f} s")
            await asyncio.sleep(0.25)
        await self._ok("POST", f"/{self._indices()}/_refresh")

    async def disk_bytes(self) -> dict[str, int]:
        """The store size of the dataset's indices (Lucene files, every copy; primaries apart)."""
        if not self._tables:
            return {}
        doc = json.loads((await self._ok("GET", f"/{self._indices()}/_stats/store"))[1])["_all"]
        return {"es_store_size_bytes": int(doc["total"]["store"]["size_in_bytes"]),
                "es_primaries_store_size_bytes": int(doc["primaries"]["store"]["size_in_bytes"])}

    # ---- queries ------------------------------------------------------------------------
    def searches_doc_values(self) -> bool:
        """Whether the server filters on a doc-values-only field (the aggregation template's
        fields): OpenSearch 2.x and Elasticsearch 8.1+; Elasticsearch 7 refuses ("Cannot
        search on field [f] since it is not indexed"). Unknown (not open): assumed."""
        if self.distribution != "elasticsearch" or not self.number:
            return True
        major, minor = (int(x) for x in (self.number.split(".") + ["0"])[:2])
        return (major, minor) >= (8, 1)

    def render(self, spec, form: str = "tsbench") -> EsQuery:
        """The dialect's query; ServerLacks where the aggregation template's unindexed
        fields meet a filter on a field's value on a server that cannot search doc values."""
        native_q = super().render(spec, form)
        if self.options.template == "aggregation" and not self.searches_doc_values():
            f = next((f for _, body in native_q.requests for f in _field_filters(json.loads(body))), None)
            if f is not None:
                raise ServerLacks(f"target elasticsearch: template aggregation keeps field {f!r} as doc values "
                                  f"only, and Elasticsearch {self.number} cannot filter on such a field "
                                  f"(8.1+ and OpenSearch 2 can; or use template default)")
        return native_q

    async def prepare(self, workers: int) -> None:
        """One keep-alive connection per worker, opened before timing."""
        await self._wire.warm(workers, "/")

    async def drop_caches(self) -> str | None:
        """POST /_cache/clear: the query (filter) cache, the request cache and field data
        of every index. What stays: the OS page cache of a remote host, the JVM's own
        heap structures of open segments (terms and points indices), and the file
        system cache of the index files."""
        await self._ok("POST", "/_cache/clear")
        return None

    async def query(self, native_q: EsQuery) -> Answer:
        """The requests in order, each read to its last byte (client=library: to the
        library's answer, ttfb None). A paged answer (native_q.client with a pager) is
        parsed on the way (partial), the next page's request asked of native_q.next()
        after the last."""
        ans = Answer([], 0, None)
        paged = native_q.client and native_q.pager is not None
        ans.partial = [] if paged else None
        todo = list(native_q.requests)
        while todo:
            path, body = todo.pop(0)
            t = await self._wire.timed_post(path, body, headers=JSON)
            if t.status >= 300:
                raise Fatal(f"{self.what}: {path}: HTTP {t.status}: {_reason(t.body)}")
            ans.add_response(t)
            if paged:
                ans.partial.append(_search_doc(self.what, path, t.body))
                if not todo and (nxt := native_q.next(ans.partial)) is not None:
                    todo.append(nxt)
        return ans

    def finish(self, native_q: EsQuery, answer: Answer) -> list[tuple] | None:
        """native_q.client: the rows read from the parsed responses (client_s)."""
        if not native_q.client:
            return None
        docs = answer.partial
        if docs is None:
            docs = [_search_doc(self.what, path, body) for (path, _), body in zip(native_q.requests, answer.raw)]
        return native_q.read(docs)

    def canonical(self, native_q: EsQuery, answer: Answer) -> list[tuple]:
        docs = [_search_doc(self.what, path, body) for (path, _), body in zip(native_q.requests, answer.raw)]
        return native_q.read(docs)


def _field_filters(node) -> list[str]:
    """The fields a query body filters by value: range on anything but time, term on a number."""
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "range" and isinstance(v, dict):
                out += [f for f in v if f != "time"]
            elif k == "term" and isinstance(v, dict):
                out += [f for f, x in v.items() if isinstance(x, (int, float)) and not isinstance(x, bool)]
            else:
                out += _field_filters(v)
    elif isinstance(node, list):
        for v in node:
            out += _field_filters(v)
    return out


def _search_doc(what: str, path: str, body: bytes) -> dict:
    """A search answer, parsed; Fatal when a shard failed or it timed out (a partial answer)."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise Fatal(f"{what}: {path}: not JSON: {body[:200]!r}") from None
    shards = doc.get("_shards") or {}
    if shards.get("failed"):
        f = (shards.get("failures") or [{}])[0].get("reason", {})
        raise Fatal(f"{what}: {path}: {shards['failed']} shard(s) failed: {f.get('type')}: {f.get('reason')}")
    if doc.get("timed_out"):
        raise Fatal(f"{what}: {path}: the search timed out (a partial answer)")
    return doc


def _bulk_outcome(what: str, resp: bytes, n: int) -> tuple[list[int], int]:
    """From a 200 bulk answer: the positions of the items rejected with 429 and how many
    went in. Any other item error is Fatal with the count and the first one's reason."""
    head = resp[: resp.find(b'"items"')] if b'"items"' in resp else resp
    if b'"errors":false' in head:
        return [], n
    items = json.loads(resp).get("items") or []
    if len(items) != n:
        raise Fatal(f"{what}: the bulk answer has {len(items)} items for {n} documents")
    rejected, failed, first = [], 0, None
    for k, item in enumerate(items):
        res = next(iter(item.values()))
        status = res.get("status", 0)
        if status < 300:
            continue
        err = res.get("error") or {}
        if status == 429 or err.get("type") == "es_rejected_execution_exception":
            rejected.append(k)
            continue
        failed += 1
        first = first or f"{err.get('type')}: {err.get('reason')}"
    if failed:
        raise Fatal(f"{what}: the server refused {failed} of {n} documents of a bulk request; the first: {first}")
    return rejected, n - len(rejected)


def _subset(body: bytes, ends: np.ndarray, keep: list[int]) -> tuple[bytes, np.ndarray]:
    """The lines of documents `keep` only (a re-send of the rejected ones) and their ends."""
    starts = np.concatenate([np.zeros(1, np.uint64), ends[:-1]])
    view = memoryview(body)
    parts = [view[int(starts[k]): int(ends[k])] for k in keep]
    return b"".join(parts), np.cumsum(ends[keep] - starts[keep], dtype=np.uint64)


def _too_large_hint(msg: str) -> str:
    if "HTTP 413" in msg:
        return msg + " (a bulk request larger than the server's http.max_content_length: use a smaller --batch-size)"
    return msg
