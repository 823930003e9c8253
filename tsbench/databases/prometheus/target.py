"""Prometheus as a target (phase 2): loads by remote-write and counts.

Load: each batch as a Prometheus remote-write 1.0 WriteRequest (built by the C core,
snappy-compressed: shared/remote_write.py) POSTed to /api/v1/write, the series named as
Telegraf's Prometheus output names them (`__name__` = measurement_field, the tags as
labels). create()'s drop deletes every series by the admin API (delete_series, then
clean_tombstones) and checks that none is left.

count() is in samples (one per field value, the metric measurement_field), summed by
PromQL count_over_time per table and time slice (count.py), each slice small enough for
the server's --query.max-samples (50,000,000 by default)."""

from __future__ import annotations

import asyncio
import json
import math

from pydantic import BaseModel, ConfigDict, Field

from tsbench.core import bounds
from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import Batch, Tables
from tsbench.databases.prometheus.count import count_expr, metric_regex, slices
from tsbench.databases.shared.http import HttpClient
from tsbench.databases.shared.remote_write import RemoteWriteBody
from tsbench.databases.shared.target import Target, exists_error

QUERY_CONCURRENCY = 2
ALL_SERIES = '{__name__=~".+"}'


class PrometheusOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_samples_per_query: int = Field(
        20_000_000, ge=1, le=bounds.MAX_COUNT,
        description="samples one count query may load: under the server's --query.max-samples (50,000,000)")


class PrometheusTarget(Target):
    name = "prometheus"
    format = "influx"
    needs_url = True
    url_example = "http://HOST:9090"
    time_resolution_ns = 1_000_000                # milliseconds
    count_unit = "values"
    server_kind = "prometheus"
    options_model = PrometheusOptions

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"prometheus at {self.url}"
        self.remote_write = RemoteWriteBody()
        self.http: HttpClient | None = None

    async def open(self) -> None:
        self.http = HttpClient(self.url, self.what)
        await self.http.open(probe_path="/-/ready")
        status, _ = await self.http.get("/api/v1/status/buildinfo")
        if status != 200:
            await self.close()
            raise UserError(f"target prometheus: {self.url}/api/v1/status/buildinfo answered HTTP {status}: "
                            f"is this a Prometheus server?")

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None

    # ---- create -------------------------------------------------------------------------
    async def _has_series(self) -> bool:
        """Any series in the TSDB, at any time (no start or end: the whole range)."""
        doc = json.loads(await self.http.get_ok("/api/v1/series", {"match[]": ALL_SERIES}))
        return bool(doc.get("data"))

    async def create(self, tables: Tables, if_exists: str) -> None:
        if if_exists == "reuse" or not await self._has_series():
            return
        if if_exists == "abort":
            raise exists_error("prometheus", f"the TSDB at {self.url}")
        for path in ("/api/v1/admin/tsdb/delete_series", "/api/v1/admin/tsdb/clean_tombstones"):
            status, body = await self.http.request("POST", path, params={"match[]": ALL_SERIES}
                                                   if path.endswith("delete_series") else None)
            if status >= 300:
                raise Fatal(f"{self.what}: POST {path}: HTTP {status}: "
                            f"{body.decode('utf-8', 'replace').strip()[:500]} (is --web.enable-admin-api on?)")
        if await self._has_series():
            raise Fatal(f"{self.what}: series are still there after delete_series and clean_tombstones")

    # ---- load ---------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        rw = self.remote_write
        await self.http.post("/api/v1/write", rw.body(batch.data), headers=rw.headers)

    async def flush(self) -> None:
        """Nothing to do: a remote-write answer comes after the samples are in the head (and its WAL)."""

    # ---- verify -------------------------------------------------------------------------
    async def _instant(self, expr: str, t_s: int) -> float:
        doc = json.loads(await self.http.get_ok("/api/v1/query", {"query": expr, "time": str(t_s)}))
        if doc.get("status") != "success":
            raise Fatal(f"{self.what}: {expr[:200]}: {doc.get('error') or doc}")
        res = doc["data"]["result"]
        return float(res[0]["value"][1]) if res else 0.0

    async def count(self, tables: Tables) -> int:
        """Samples of the dataset's metrics with timestamps in [start_ns, end_ns)."""
        lo_ms = tables.start_ns // 1_000_000                  # a ns stamp t is kept as t // 1e6 ms
        hi_ms = max((tables.end_ns - 1) // 1_000_000 + 1, lo_ms + 2)
        n = math.ceil(max(tables.values, 1) / self.options.max_samples_per_query)
        sem = asyncio.Semaphore(QUERY_CONCURRENCY)

        async def one(names: str, a: int, b: int) -> float:
            async with sem:
                return await self._instant(*count_expr(names, a, b))

        # one metric a query: Prometheus 2 drops __name__ from count_over_time's series, and
        # two fields' series of one tag set are then the same labels (an error before sum())
        parts = await asyncio.gather(*(one(metric_regex(t, f), a, b) for t in tables for f in t.field_names
                                       for a, b in slices(lo_ms, hi_ms, n)))
        return round(sum(parts))
