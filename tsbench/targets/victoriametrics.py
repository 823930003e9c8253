"""VictoriaMetrics as a load target (phase 2): influx line protocol batches
through POST /write (the shared HttpClient), where `cpu usage_user=..`
becomes the metric cpu_usage_user with the tags as labels. count() is in
samples (one per field value), summed by PromQL count_over_time per table
and time slice, so no query meets the server's per-query limits."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import time

from pydantic import BaseModel, ConfigDict, Field

from ..errors import UserError
from .base import Batch, Fatal, Table, Tables, Target, exists_error
from .http import HttpClient

NOCACHE_LABEL = "tsbench_nocache"
FAR_FUTURE_S = 4102444800          # 2100-01-01: an end for "every series ever written"
COMPACT_TIMEOUT = 1800.0
QUERY_CONCURRENCY = 2


class VictoriaMetricsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Samples one count query may scan: well under the server's -search.maxSamplesPerQuery
    # (1e9) and -search.maxSamplesPerSeries (3e7), and quick enough for -search.maxQueryDuration.
    max_samples_per_query: int = Field(20_000_000, ge=1)


def _regex_quote(s: str) -> str:
    """A literal for RE2 (Go regexp), inside a MetricsQL double-quoted string."""
    lit = re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", s)
    return lit.replace("\\", "\\\\").replace('"', '\\"')


_nonce = itertools.count(1)


def _selector(name_regex: str) -> str:
    """A series selector the server cannot answer from its tag-filters cache: that cache
    can hold a stale answer for seconds after new series arrive (seen on 1.79: an empty
    store's answer to {__name__=~".+"} outlived a load, so a drop deleted nothing), so
    each selector carries a never-matching negative filter of its own."""
    return f'{{__name__=~"{name_regex}",{NOCACHE_LABEL}!="{next(_nonce)}"}}'


def _metric_regex(t: Table) -> str:
    return "|".join(_regex_quote(f"{t.name}_{f}") for f in t.field_names)


def _slices(lo_ms: int, hi_ms: int, n: int) -> list[tuple[int, int]]:
    """[lo, hi) in n nearly equal slices of whole milliseconds."""
    n = max(1, min(n, hi_ms - lo_ms))
    cuts = [lo_ms + (hi_ms - lo_ms) * i // n for i in range(n + 1)]
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a]


def _count_expr(selector: str, a_ms: int, b_ms: int) -> tuple[str, int]:
    """A query and its evaluation time (whole seconds) counting the samples in [a, b) ms.
    A range window [d] at t covers (t-d, t]; `offset o` shifts it to (t-o-d, t-o], so
    t-o = b-1 and d = b-a give exactly [a, b-1]."""
    t_s = -(-(b_ms - 1) // 1000)
    off = t_s * 1000 - (b_ms - 1)
    expr = f"sum(count_over_time({selector}[{b_ms - a_ms}ms]{f' offset {off}ms' if off else ''}))"
    return expr, t_s


class VictoriaMetricsTarget(Target):
    name = "victoriametrics"
    format = "influx"
    count_unit = "values"
    server_kind = "victoriametrics"
    options_model = VictoriaMetricsOptions
    float_digits = 12        # VictoriaMetrics keeps ~12 significant decimal digits of a float

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"victoriametrics at {self.url}"
        self.http: HttpClient | None = None

    async def open(self) -> None:
        if not self.url:
            raise UserError("target victoriametrics: needs a url (server: local, or server: {url: http://host:8428})")
        self.http = HttpClient(self.url, self.what)
        await self.http.open(probe_path="/health")
        status, _ = await self.http.get("/health")
        if status != 200:
            await self.close()
            raise UserError(f"target victoriametrics: {self.url}/health answered HTTP {status}: "
                            f"is this a VictoriaMetrics server?")

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None

    # ---- create -------------------------------------------------------------------------
    async def _has_series(self) -> bool:
        """Any series in the store (deleted ones excluded; start=0 would mean 'last day')."""
        status, body = await self.http.get("/api/v1/series", {"match[]": _selector(".+"), "start": "1",
                                                              "end": str(FAR_FUTURE_S), "limit": "1"})
        text = body.decode("utf-8", "replace")
        if status >= 300:
            if "exceed" in text:          # more series than -search.maxSeries: certainly not empty
                return True
            raise Fatal(f"{self.what}: GET /api/v1/series: HTTP {status}: {text.strip()[:500]}")
        return bool(json.loads(text).get("data"))

    async def create(self, tables: Tables, if_exists: str = "abort") -> None:
        await self.flush()
        if if_exists == "reuse" or not await self._has_series():
            return
        if if_exists == "abort":
            raise exists_error("victoriametrics", f"the store at {self.url}")
        await self.http.post("/api/v1/admin/tsdb/delete_series", {"match[]": _selector(".+")})
        if await self._has_series():
            raise Fatal(f"{self.what}: series are still there after /api/v1/admin/tsdb/delete_series")

    # ---- load ---------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        # text/plain, never a form type: VM would parse a form body as query args
        await self.http.post("/write", batch.data, headers={"Content-Type": "text/plain; charset=utf-8"})

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
                return await self._instant(*_count_expr(_selector(names), a, b))

        parts = await asyncio.gather(*(one(_metric_regex(t), a, b) for t in tables if t.fields
                                       for a, b in _slices(lo_ms, hi_ms, n)))
        return round(sum(parts))

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
