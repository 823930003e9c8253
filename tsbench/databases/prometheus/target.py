"""Prometheus as a target: loads by remote-write (phase 2) and runs PromQL (phase 4).

Load: each batch as a Prometheus remote-write 1.0 WriteRequest (built by the C core,
snappy-compressed: shared/remote_write.py) POSTed to /api/v1/write, the series named as
Telegraf's Prometheus output names them (`__name__` = measurement_field, the tags as
labels). The reading side is the Prometheus query API's, shared with VictoriaMetrics
(shared/promapi.py): count and stats by rollups per metric (Prometheus 2 drops
__name__ from a rollup's series, so two fields of one tag set would clash), over
windows closed at both ends; the PromQL dialect (dialect.py) renders the queries.

Head compaction. Samples stay in the head (memory, WAL, and the out-of-order head) until
the head spans 1.5 block ranges (3 h by default); Prometheus 2.42 has no API that
compacts it. compact() and create()'s drop make it span that much: one sample of the
metric tsbench_compaction_marker, MARKER_BLOCKS block ranges after the newest sample in
the head; the server then writes every older sample (out-of-order ones too) into blocks
of its own accord, which is waited for (the end of a compaction is seen through the
admin API: the server needs --web.enable-admin-api, on in tsbench's local one). That is
the settled form compact() measures (blocks, no WAL of the data), and the only state in
which the admin API can delete samples: delete_series leaves out-of-order samples still
in the head alone, and a series it emptied in the head keeps its last sample, which
swallows that sample when it is written again (prometheus#11790; seen on 2.42). The
marker's samples stay (one a compaction), and a sample older than the marker is out of
order from then on (the server needs its out-of-order window, as tsbench's local one has)."""

from __future__ import annotations

import asyncio
import json
import re
import time

from pydantic import BaseModel, ConfigDict, Field

from tsbench.core import bounds
from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import Batch, Tables
from tsbench.databases.prometheus.dialect import PromQL
from tsbench.databases.shared.promapi import PromApiTarget
from tsbench.databases.shared.remote_write import RemoteWriteBody, series_name
from tsbench.databases.shared.target import exists_error

MARKER = "tsbench_compaction"           # the metric tsbench_compaction_marker (measurement, field marker)
MARKER_METRIC = f"{MARKER}_marker"
MARKER_BLOCKS = 2                       # head compaction needs more than 1.5 block ranges in the head
DATA_SERIES = f'{{__name__=~".+",__name__!="{MARKER_METRIC}"}}'
COMPACT_TIMEOUT = 1800.0
BLOCK_RANGE_MS = 2 * 3_600_000          # --storage.tsdb.min-block-duration's default


class PrometheusOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_samples_per_query: int = Field(
        20_000_000, ge=1, le=bounds.MAX_COUNT,
        description="samples one count query may load: under the server's --query.max-samples (50,000,000)")


class PrometheusTarget(PromApiTarget):
    name = "prometheus"
    url_example = "http://HOST:9090"
    server_kind = "prometheus"
    options_model = PrometheusOptions
    server_name = "Prometheus"
    probe_path = "/-/ready"
    closed_windows = True
    one_metric_a_rollup = True
    exact_int_sums = True               # doubles kept exactly, so integer sums are checked exactly
    own_disk_figure = "prometheus_tsdb_storage_blocks_bytes"
    dialects = {"promql": PromQL}

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.remote_write = RemoteWriteBody()

    def metric(self, name: str) -> str:
        return series_name(name)

    async def open(self) -> None:
        await super().open()
        status, _ = await self.http.get("/api/v1/status/buildinfo")
        if status != 200:
            await self.close()
            raise UserError(f"target prometheus: {self.url}/api/v1/status/buildinfo answered HTTP {status}: "
                            f"is this a Prometheus server?")

    # ---- create -------------------------------------------------------------------------
    async def _has_series(self) -> bool:
        """Any series but the marker's in the TSDB, at any time (no start or end: all of it)."""
        doc = json.loads(await self.http.get_ok("/api/v1/series", {"match[]": DATA_SERIES}))
        return bool(doc.get("data"))

    async def create(self, tables: Tables, if_exists: str) -> None:
        if if_exists == "reuse" or not await self._has_series():
            return
        if if_exists == "abort":
            raise exists_error("prometheus", f"the TSDB at {self.url}")
        await self._compact_head()           # the admin API deletes samples in blocks only (module docstring)
        await self._admin("delete_series", {"match[]": DATA_SERIES})
        await self._admin("clean_tombstones")
        if await self._has_series():
            raise Fatal(f"{self.what}: series are still there after delete_series and clean_tombstones")

    async def _admin(self, what: str, params: dict | None = None) -> None:
        status, body = await self.http.request("POST", f"/api/v1/admin/tsdb/{what}", params=params)
        if status >= 300:
            raise Fatal(f"{self.what}: POST /api/v1/admin/tsdb/{what}: HTTP {status}: "
                        f"{body.decode('utf-8', 'replace').strip()[:500]} (is --web.enable-admin-api on?)")

    # ---- load ---------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        await self.remote_write.post(self.http, "/api/v1/write", batch.data)

    async def flush(self) -> None:
        """Nothing to do: a remote-write answer comes after the samples are in the head (and its WAL)."""

    # ---- settle and measure -------------------------------------------------------------
    async def _head(self) -> dict:
        return json.loads(await self.http.get_ok("/api/v1/status/tsdb"))["data"]["headStats"]

    async def _compact_head(self) -> None:
        """Every sample of the head (in order and out of order) into blocks: the marker sample
        MARKER_BLOCKS block ranges after the head's newest makes the server compact all that
        is older. The head's oldest time passing its newest before the marker says the
        compaction has begun (its in-order part); clean_tombstones, which waits for the lock
        a compaction holds to its end (the out-of-order part too), says it has ended."""
        head = await self._head()
        if head["numSeries"] == 0:
            return
        newest = head["maxTime"]
        t_ms = max(newest, 0) + MARKER_BLOCKS * await self._block_range_ms()
        line = f"{MARKER} marker=1 {t_ms * 1_000_000}\n".encode()
        await self.remote_write.post(self.http, "/api/v1/write", memoryview(line))
        deadline = time.monotonic() + COMPACT_TIMEOUT
        while (head := await self._head())["minTime"] <= newest:
            if time.monotonic() > deadline:
                raise Fatal(f"{self.what}: the head still starts at {head['minTime']} ms "
                            f"{COMPACT_TIMEOUT:.0f} s after a sample that makes it compact")
            await asyncio.sleep(0.25)
        await self._admin("clean_tombstones")

    async def _block_range_ms(self) -> int:
        """--storage.tsdb.min-block-duration (a Go duration such as 2h), in ms."""
        flags = json.loads(await self.http.get_ok("/api/v1/status/flags"))["data"]
        return _duration_ms(flags.get("storage.tsdb.min-block-duration", "")) or BLOCK_RANGE_MS

    async def compact(self) -> None:
        """Untimed: the head written into blocks (the module docstring says how)."""
        await self._compact_head()

    async def disk_bytes(self) -> dict[str, int]:
        """The blocks' bytes (after compact(): all the data but the marker's last sample)."""
        text = (await self.http.get_ok("/metrics")).decode("utf-8", "replace")
        m = re.search(r"^prometheus_tsdb_storage_blocks_bytes (\S+)$", text, re.MULTILINE)
        return {"prometheus_tsdb_storage_blocks_bytes": int(float(m.group(1)))} if m else {}

    async def version(self) -> str:
        """The build's version without Debian's suffix (2.42.0+ds: 2.42.0)."""
        doc = json.loads(await self.http.get_ok("/api/v1/status/buildinfo"))
        return doc["data"]["version"].partition("+")[0]


def _duration_ms(text: str) -> int:
    """A Prometheus duration (1d2h30m, 90s, 500ms) in ms; 0 if it is not one."""
    units = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000, "h": 3_600_000, "m": 60_000,
             "s": 1000, "ms": 1}
    parts = re.findall(r"(\d+)(ms|[ywdhms])", text)
    return sum(int(n) * units[u] for n, u in parts) if "".join(n + u for n, u in parts) == text else 0
