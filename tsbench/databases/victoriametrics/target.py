"""VictoriaMetrics as a target: loads (phase 2) and runs queries (phase 4).

Load: influx line protocol batches through POST /write (the shared
HttpClient), where `cpu usage_user=..` becomes the metric cpu_usage_user
with the tags as labels (gzip'd with -O gzip=true, http.GzipOption); with
-O protocol=remote-write, the same series as Prometheus remote-write bodies
to /api/v1/write (shared/remote_write.py; the load phase builds them before its
timed part: data/bodies.py). count() is in samples (one per field value), summed
by PromQL count_over_time per table and time slice (count.py), so no query
meets the server's per-query limits.

Queries: the MetricsQL dialect (dialect.py) renders them; query() POSTs its
requests to /api/v1/query and /api/v1/query_range (nocache=1), times them, and
hands the JSON answers to the dialect's reader for the canonical rows."""

from __future__ import annotations

import asyncio
import json
import math
import re
import time

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from tsbench.core import bounds
from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import STAT_KINDS, Batch, Table, Tables, TableStats
from tsbench.databases.shared.http import Gzip, GzipOption, HttpClient, Timed
from tsbench.databases.shared.remote_write import RemoteWriteBody
from tsbench.databases.shared.sqlstats import table_stats
from tsbench.databases.shared.target import Target, exists_error
from tsbench.databases.victoriametrics.count import count_expr, metric_regex, selector, slices, window_expr
from tsbench.databases.victoriametrics.dialect import (
    FAR_FUTURE_S,
    OPTIONAL_FUNCTIONS,
    AnswerRows,
    MetricsQL,
    VMQuery,
    VMRequest,
    regex_quote,
)
from tsbench.queries.base import Answer

COMPACT_TIMEOUT = 1800.0
QUERY_CONCURRENCY = 2
ROLLUPS = (("sum", "count_over_time"), ("sum", "sum_over_time"), ("min", "min_over_time"),
           ("max", "max_over_time"))          # a field's count, sum, min and max over a time slice


class VictoriaMetricsOptions(GzipOption):
    model_config = ConfigDict(extra="forbid")
    max_samples_per_query: int = Field(
        20_000_000, ge=1, le=bounds.MAX_COUNT,
        description="samples one count query may scan: well under the server's -search.maxSamplesPerQuery "
                    "(1e9) and -search.maxSamplesPerSeries (3e7), and quick enough for -search.maxQueryDuration")
    protocol: Literal["line", "remote-write"] = Field(
        "line", description="how batches are sent: line (influx line protocol to /write) or remote-write "
                            "(Prometheus remote-write 1.0 to /api/v1/write: protobuf built by the C core, snappy); "
                            "the same metric names and labels either way")

    @model_validator(mode="after")
    def _gzip_is_for_line(self):
        if self.protocol == "remote-write" and self.gzip:
            raise ValueError("gzip=true is for protocol=line (remote-write bodies are snappy-compressed)")
        return self


class VictoriaMetricsTarget(Target):
    name = "victoriametrics"
    needs_url = True
    url_example = "http://HOST:8428"
    format = "influx"
    time_resolution_ns = 1_000_000                # milliseconds
    count_unit = "values"
    server_kind = "victoriametrics"
    options_model = VictoriaMetricsOptions
    # VictoriaMetrics keeps a float as a decimal of ~12 significant digits (lib/decimal), so answers
    # compare with the reference within a relative 1e-11, not bit for bit.
    float_digits = 12
    # every kind answered by rollups over the dataset's range; sums, min and max of what it
    # kept, to float_digits (verify.py widens the bounds by them)
    value_checks = {k: None for k in STAT_KINDS}
    own_disk_figure = "vm_data_size_bytes"
    settle_seconds = 10.0          # a new series can be missing from searches for a moment after force_flush
    dialects = {"metricsql": MetricsQL}

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"victoriametrics at {self.url}"
        # text/plain, never a form type: VM would parse a form body as query args
        self.gzip = Gzip(self.options, {"Content-Type": "text/plain; charset=utf-8"})
        self.remote_write = RemoteWriteBody() if self.options.protocol == "remote-write" else None
        self.http: HttpClient | None = None
        self.missing_functions: set[str] = set()     # MetricsQL functions this server lacks (open())

    async def open(self) -> None:
        self.http = HttpClient(self.url, self.what)
        await self.http.open(probe_path="/health")
        status, _ = await self.http.get("/health")
        if status != 200:
            await self.close()
            raise UserError(f"target victoriametrics: {self.url}/health answered HTTP {status}: "
                            f"is this a VictoriaMetrics server?")
        await self._probe_functions()

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None

    # ---- create -------------------------------------------------------------------------
    async def _has_series(self) -> bool:
        """Any series in the store (deleted ones excluded; start=0 would mean 'last day')."""
        status, body = await self.http.get("/api/v1/series", {"match[]": selector(".+"), "start": "1",
                                                              "end": str(FAR_FUTURE_S), "limit": "1"})
        text = body.decode("utf-8", "replace")
        if status >= 300:
            if "exceed" in text:          # more series than -search.maxSeries: certainly not empty
                return True
            raise Fatal(f"{self.what}: GET /api/v1/series: HTTP {status}: {text.strip()[:500]}")
        return bool(json.loads(text).get("data"))

    async def create(self, tables: Tables, if_exists: str) -> None:
        await self.flush()
        if if_exists == "reuse" or not await self._has_series():
            return
        if if_exists == "abort":
            raise exists_error("victoriametrics", f"the store at {self.url}")
        await self.http.post("/api/v1/admin/tsdb/delete_series", {"match[]": selector(".+")})
        if await self._has_series():
            raise Fatal(f"{self.what}: series are still there after /api/v1/admin/tsdb/delete_series")

    # ---- load ---------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        if self.remote_write is not None:
            rw = self.remote_write
            await self.http.post("/api/v1/write", rw.body(batch.data), headers=rw.headers)
            return
        await self.http.post("/write", await self.gzip.body(batch.data), headers=self.gzip.headers)

    async def flush(self) -> None:
        await self.http.get_ok("/internal/force_flush")

    # ---- verify -------------------------------------------------------------------------
    async def _instant(self, expr: str, t_s: int) -> float:
        body = await self.http.get_ok("/api/v1/query", {"query": expr, "time": str(t_s), "nocache": "1"})
        doc = json.loads(body)
        if doc.get("status") != "success":
            raise Fatal(f"{self.what}: {expr[:200]}: {doc.get('error') or doc}")
        res = doc["data"]["result"]
        return float(res[0]["value"][1]) if res else 0.0

    async def count(self, tables: Tables) -> int:
        """Samples of the dataset's metrics with timestamps in [start_ns, end_ns)."""
        lo_ms = tables.start_ns // 1_000_000                  # VM keeps ms: a ns stamp t lands on t // 1e6
        hi_ms = (tables.end_ns - 1) // 1_000_000 + 1
        if hi_ms <= lo_ms:
            return 0
        n = math.ceil(max(tables.values, 1) / self.options.max_samples_per_query)
        sem = asyncio.Semaphore(QUERY_CONCURRENCY)

        async def one(names: str, a: int, b: int) -> float:
            async with sem:
                return await self._instant(*count_expr(selector(names), a, b))

        parts = await asyncio.gather(*(one(metric_regex(t), a, b) for t in tables if t.fields
                                       for a, b in slices(lo_ms, hi_ms, n)))
        return round(sum(parts))

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """Per field (metric TABLE_FIELD): count, sum, min and max over time slices of the
        dataset's range, as count(); series: the distinct label sets of any field's samples."""
        lo_ms, hi_ms = tables.start_ns // 1_000_000, (tables.end_ns - 1) // 1_000_000 + 1
        n = math.ceil(max(tables.values, 1) / self.options.max_samples_per_query)
        cuts = slices(lo_ms, hi_ms, n)
        sem = asyncio.Semaphore(QUERY_CONCURRENCY)

        async def one(agg: str, rollup: str, names: str, a: int, b: int) -> float | None:
            async with sem:
                return await self._instant_or_none(*window_expr(agg, rollup, selector(names), a, b))

        row = []
        for c in table.fields:
            name = regex_quote(f"{table.name}_{c.name}")
            got = await asyncio.gather(*(one(agg, rollup, name, a, b) for agg, rollup in ROLLUPS for a, b in cuts))
            count, total, lo, hi = ([x for x in got[i * len(cuts):(i + 1) * len(cuts)] if x is not None]
                                    for i in range(4))
            row += [round(sum(count)), math.fsum(total), min(lo, default=None), max(hi, default=None)]
        return table_stats(table, round(await self._series(table, lo_ms, hi_ms)), row)

    async def _series(self, table: Table, lo_ms: int, hi_ms: int) -> float:
        """The distinct label sets (tags) of the table's samples in [lo, hi) ms."""
        inner, t_s = window_expr("", "last_over_time", selector(metric_regex(table)), lo_ms, hi_ms)
        by = ", ".join(table.tags)
        return await self._instant_or_none(f"count(group by ({by}) {inner})", t_s) or 0.0

    async def _instant_or_none(self, expr: str, t_s: int) -> float | None:
        body = await self.http.get_ok("/api/v1/query", {"query": expr, "time": str(t_s), "nocache": "1"})
        doc = json.loads(body)
        if doc.get("status") != "success":
            raise Fatal(f"{self.what}: {expr[:200]}: {doc.get('error') or doc}")
        res = doc["data"]["result"]
        return float(res[0]["value"][1]) if res else None

    # ---- settle and measure -------------------------------------------------------------
    async def _metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for line in (await self.http.get_ok("/metrics")).decode("utf-8", "replace").splitlines():
            if line and not line.startswith("#"):
                key, _, val = line.rpartition(" ")
                try:
                    out[key] = float(val)
                except ValueError:
                    pass
        return out

    async def compact(self) -> None:
        """force_flush, force_merge (which runs in the background), then wait until no
        merge is active on two polls in a row."""
        await self.flush()
        await self.http.get_ok("/internal/force_merge")
        deadline = time.monotonic() + COMPACT_TIMEOUT
        quiet = 0
        while quiet < 2:
            await asyncio.sleep(0.25)
            m = await self._metrics()
            busy = sum(v for k, v in m.items() if k.startswith(("vm_active_force_merges", "vm_active_merges")))
            quiet = quiet + 1 if busy == 0 else 0
            if time.monotonic() > deadline:
                raise Fatal(f"{self.what}: merges still running after {COMPACT_TIMEOUT:.0f} s of /internal/force_merge")

    async def disk_bytes(self) -> dict[str, int]:
        m = await self._metrics()
        return {"vm_data_size_bytes": int(sum(v for k, v in m.items() if k.startswith("vm_data_size_bytes")))}

    async def version(self) -> str:
        """vm_app_version's short_version; Debian's build leaves it empty (the server's
        version() asks dpkg instead)."""
        text = (await self.http.get_ok("/metrics")).decode("utf-8", "replace")
        m = re.search(r'^vm_app_version\{[^}]*short_version="([^"]*)"', text, re.MULTILINE)
        if m and m.group(1):
            return m.group(1).removeprefix("v")
        m = re.search(r'^vm_app_version\{[^}]*version="[^"]*?v(\d+\.\d+\.\d+)', text, re.MULTILINE)
        return m.group(1) if m else ""

    # ---- queries ------------------------------------------------------------------------
    async def _probe_functions(self) -> None:
        """MetricsQL functions the renderer may use that this server's release lacks
        (Debian's 1.79.5 has count_gt_over_time but no sum_gt_over_time)."""
        self.missing_functions = set()
        for fn in OPTIONAL_FUNCTIONS:
            status, body = await self.http.get("/api/v1/query", {"query": f'{fn}({{__name__="tsbench_probe"}}[1s], 0)',
                                                                 "time": "1", "nocache": "1"})
            if status >= 300 and "unknown func" in body.decode("utf-8", "replace"):
                self.missing_functions.add(fn)

    def dialect(self) -> MetricsQL:
        """MetricsQL without the functions this server lacks (probed at open())."""
        return self.dialects[self.dialect_name()](self.missing_functions)

    async def prepare(self, workers: int) -> None:
        """One keep-alive connection per worker, opened before timing."""
        await self.http.warm(workers, "/health")

    async def _request(self, req: VMRequest) -> Timed:
        """POST one request, timed; an HTTP error status is Fatal with the server's words."""
        t = await self.http.timed_post(req.path, req.form())
        if t.status >= 300:
            _doc(self.what, req, t.status, t.body)
        return t

    async def query(self, native: VMQuery) -> Answer:
        """One request whose answer needs only decoding: its body, decoded after the timed
        pass. Otherwise (native.client) the requests in turn, their bodies kept for
        finish(); the newest `limit` aggregate rows decoded on the way (partial), as the
        older requests cannot make the cut once they are there."""
        if not native.client:
            if not native.requests:
                return Answer(None, 0, None, rows=[])          # no request: nothing was sent
            t = await self._request(native.requests[0])
            return Answer(t.body, len(t.body), t.ttfb, connect_s=t.connect_s)
        ans = Answer([], 0, None)
        if native.limit and native.shape == "aggregate":
            ans.partial = AnswerRows(native)
        for req in native.requests:
            t = await self._request(req)
            ans.add_response(t)
            if ans.partial is not None:
                ans.partial.add(req, _doc(self.what, req, t.status, t.body)["data"]["result"])
                if len(ans.partial.keys) >= native.limit:
                    break                               # newest first: the older requests cannot make the cut
        return ans

    def finish(self, native: VMQuery, answer: Answer) -> list[tuple] | None:
        """native.client: the rows computed from the requests' answers (client_s)."""
        if not native.client:
            return None
        acc = answer.partial
        if acc is None:
            acc = AnswerRows(native)
            for req, body in zip(native.requests, answer.raw or ()):
                acc.add(req, _doc(self.what, req, 200, body)["data"]["result"])
        return acc.rows()

    def canonical(self, native: VMQuery, answer: Answer) -> list[tuple]:
        """The canonical rows of a one-request answer (decoded after the timed pass)."""
        acc = AnswerRows(native)
        acc.add(native.requests[0], _doc(self.what, native.requests[0], 200, answer.raw)["data"]["result"])
        return acc.rows()


def _doc(what: str, req: VMRequest, status: int, body: bytes) -> dict:
    """The JSON answer of a request; Fatal with the server's words unless it succeeded."""
    text = body.decode("utf-8", "replace")
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if status >= 300 or not isinstance(doc, dict) or doc.get("status") != "success":
        msg = doc.get("error") if isinstance(doc, dict) and doc.get("error") else text.strip()
        raise Fatal(f"{what}: {req.path}: HTTP {status}: {(msg or '(empty body)')[:1000]}")
    return doc
