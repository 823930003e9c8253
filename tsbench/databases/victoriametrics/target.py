"""VictoriaMetrics as a target: loads (phase 2) and runs queries (phase 4).

Load: influx line protocol batches through POST /write (the shared
HttpClient), where `cpu usage_user=..` becomes the metric cpu_usage_user
with the tags as labels (gzip'd with -O gzip=true, http.GzipOption); with
-O protocol=remote-write, the same series as Prometheus remote-write bodies
to /api/v1/write (shared/remote_write.py; the load phase builds them before its
timed part: data/bodies.py); with -O protocol=otlp, as OTLP/HTTP metrics to
/opentelemetry/v1/metrics (shared/otlp.py; VictoriaMetrics 1.92 and later, so
not Debian's 1.79.5: open() asks the server first).

The reading side is the Prometheus query API's, shared with Prometheus
(shared/promapi.py): count() is in samples (one per field value), summed by
count_over_time per table and time slice, so no query meets the server's
per-query limits; the MetricsQL dialect (dialect.py) renders the queries, POSTed
to /api/v1/query and /api/v1/query_range with nocache=1. Here VictoriaMetrics'
own: its selectors that defeat the tag filter cache, create's drop,
force_flush and force_merge, its size figure and version, the MetricsQL
functions its release lacks."""

from __future__ import annotations

import asyncio
import json
import re
import time

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from tsbench.core import bounds
from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import Batch, Tables
from tsbench.databases.shared.http import Gzip, GzipOption
from tsbench.databases.shared.otlp import CONTENT_TYPE as OTLP_TYPE
from tsbench.databases.shared.otlp import OtlpBody
from tsbench.databases.shared.promapi import PromApiTarget
from tsbench.databases.shared.promcount import selector
from tsbench.databases.shared.remote_write import RemoteWriteBody
from tsbench.databases.shared.target import exists_error
from tsbench.databases.victoriametrics.dialect import FAR_FUTURE_S, OPTIONAL_FUNCTIONS, MetricsQL
from tsbench.databases.victoriametrics.server import OTLP_RELEASE

OTLP_PATH = "/opentelemetry/v1/metrics"
COMPACT_TIMEOUT = 1800.0


class VictoriaMetricsOptions(GzipOption):
    model_config = ConfigDict(extra="forbid")
    max_samples_per_query: int = Field(
        20_000_000, ge=1, le=bounds.MAX_COUNT,
        description="samples one count query may scan: well under the server's -search.maxSamplesPerQuery "
                    "(1e9) and -search.maxSamplesPerSeries (3e7), and quick enough for -search.maxQueryDuration")
    protocol: Literal["line", "remote-write", "otlp"] = Field(
        "line", description="how batches are sent: line (influx line protocol to /write), remote-write "
                            "(Prometheus remote-write 1.0 to /api/v1/write: protobuf built by the C core, snappy) "
                            "or otlp (OpenTelemetry OTLP/HTTP metrics to /opentelemetry/v1/metrics: protobuf built "
                            "by the C core; VictoriaMetrics 1.92 or later); the same metric names and labels each way")

    @model_validator(mode="after")
    def _gzip_is_for_line(self):
        if self.protocol == "remote-write" and self.gzip:
            raise ValueError("gzip=true is for protocol=line or otlp (remote-write bodies are snappy-compressed)")
        return self


class VictoriaMetricsTarget(PromApiTarget):
    name = "victoriametrics"
    url_example = "http://HOST:8428"
    server_kind = "victoriametrics"
    options_model = VictoriaMetricsOptions
    # VictoriaMetrics keeps a float as a decimal of ~12 significant digits (lib/decimal), so answers
    # compare with the reference within a relative 1e-11, not bit for bit; value_checks (every
    # kind) are sums, min and max of what it kept, to float_digits
    float_digits = 12
    probe_path = "/health"
    server_name = "VictoriaMetrics"
    query_params = {"nocache": "1"}
    own_disk_figure = "vm_data_size_bytes"
    settle_seconds = 10.0          # a new series can be missing from searches for a moment after force_flush
    dialects = {"metricsql": MetricsQL}

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        # text/plain, never a form type: VM would parse a form body as query args
        self.gzip = Gzip(self.options, {"Content-Type": "text/plain; charset=utf-8"})
        self.remote_write = RemoteWriteBody() if self.options.protocol == "remote-write" else None
        self.otlp = OtlpBody(self.options) if self.options.protocol == "otlp" else None
        self.missing_functions: set[str] = set()     # MetricsQL functions this server lacks (open())

    async def open(self) -> None:
        await super().open()
        if self.otlp is not None:
            await self._check_otlp()
        await self._probe_functions()

    async def _check_otlp(self) -> None:
        """protocol=otlp needs a server that takes OTLP: an empty request (no metrics) answers 2xx."""
        status, body = await self.http.request("POST", OTLP_PATH, b"", headers={"Content-Type": OTLP_TYPE})
        if status >= 300:
            await self.close()
            why = body.decode("utf-8", "replace").strip().rsplit(";", 1)[-1].strip()[:200]
            raise UserError(f"target victoriametrics: protocol=otlp: {self.url} does not accept OTLP (POST {OTLP_PATH}: "
                            f"HTTP {status}: {why}); VictoriaMetrics takes it from 1.92 on (local server: "
                            f"--server-option version={OTLP_RELEASE})")

    def selector(self, name_regex: str) -> str:
        return selector(name_regex)

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
            await self.remote_write.post(self.http, "/api/v1/write", batch.data)
            return
        if self.otlp is not None:
            await self.http.post(OTLP_PATH, await self.otlp.body(batch.data), headers=self.otlp.headers)
            return
        await self.http.post("/write", await self.gzip.body(batch.data), headers=self.gzip.headers)

    async def flush(self) -> None:
        await self.http.get_ok("/internal/force_flush")

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
