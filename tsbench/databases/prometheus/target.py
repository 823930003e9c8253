"""Prometheus as a target (phase 2, verification only so far): connects and counts.
Loading by remote-write (WriteRequest bodies built by the C core) is the next step, and
with it the registry line (TARGETS), the dialect and the contract line; until then this
class is not registered and has no write().

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
from tsbench.core.model import Tables
from tsbench.databases.prometheus.count import count_expr, metric_regex, slices
from tsbench.databases.shared.http import HttpClient
from tsbench.databases.shared.target import Target

QUERY_CONCURRENCY = 2


class PrometheusOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_samples_per_query: int = Field(
        20_000_000, ge=1, le=bounds.MAX_COUNT,
        description="samples one count query may load: under the server's --query.max-samples (50,000,000)")


class PrometheusTarget(Target):
    name = "prometheus"
    needs_url = True
    url_example = "http://HOST:9090"
    time_resolution_ns = 1_000_000                # milliseconds
    count_unit = "values"
    server_kind = "prometheus"
    options_model = PrometheusOptions

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"prometheus at {self.url}"
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

        parts = await asyncio.gather(*(one(metric_regex(t), a, b) for t in tables if t.fields
                                       for a, b in slices(lo_ms, hi_ms, n)))
        return round(sum(parts))
