"""OpenTSDB as a target: loads (phase 2) and runs queries (phase 4).

Load: each batch is split by measurement in the C core (native.split_csv) and
each part rendered by a C template (points.py) into /api/put data points, one
per field value; the batch goes as one gzip'd JSON array to
`/api/put?details&sync`: OpenTSDB answers once HBase holds every point
(`sync`, bounded by sync_timeout), and with `details` says how many it
refused and why. A refused point is Fatal with the count and OpenTSDB's first
error; 5xx answers, timeouts and lost connections are Retryable (a re-sent
point overwrites itself: one value per metric, tags and time).

stats() (value verification): one /api/query per field of whole-window
downsamples, series by series (stats.py; integer sums are doubles there).
count(): values, exactly: per measurement one /api/query whose sub-queries
(one per field's metric) count each series' points over the whole window
(`0all-count`) and add the series (`zimsum`: one bucket per series at the same
time, nothing to interpolate). /api/query/last would give only the newest point.

compact() (untimed, a server tsbench runs): a flush and a major compaction of
OpenTSDB's HBase tables through the server's control port; disk_bytes(): the
bytes of HBase's root dir (hbase_root_bytes). OpenTSDB's own row compaction
(a series-hour's cells rewritten as one) is off on a server tsbench runs (the
server option row_compaction turns it on; it then goes on for half an hour after
a load, and the figure holds what it had done by then). By URL, an OpenTSDB of its own:
no compaction, no disk figure.

Options: OpenTsdbOptions below (each field says what it means)."""

from __future__ import annotations

import asyncio
import json
import time

from pydantic import BaseModel, ConfigDict, Field

from tsbench.core import bounds
from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.core.model import STAT_KINDS, Batch, Table, Tables, TableStats
from tsbench.data import native
from tsbench.data.batches import csv_layout
from tsbench.databases.opentsdb import stats
from tsbench.databases.opentsdb.dialect import AnswerRows, TsdbApi, TsdbQuery
from tsbench.databases.opentsdb.points import metric, point_ops
from tsbench.databases.shared.http import HttpClient, gzip_member
from tsbench.databases.shared.server import allocated_bytes, local_state
from tsbench.databases.shared.stats import FieldMerge
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer

FAR_FUTURE_MS = 4102444800000          # 2100-01-01
JSON = {"Content-Type": "application/json"}
COMPACT_TIMEOUT = 1800.0
DELETE_WAIT_S = 60.0


class OpenTsdbOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sync: bool = Field(True, description="/api/put answers once HBase holds the points")
    sync_timeout: int = Field(120_000, ge=1, le=int(bounds.MAX_SECONDS * 1000),
                              description="milliseconds a synced put may wait for HBase")
    gzip: int = Field(1, ge=0, le=9, description="gzip level of a put body on zlib's 1-9 scale, deflated by "
                                                 "ISA-L as -O gzip_level is (0: not compressed)")


class OpenTsdbTarget(Target):
    name = "opentsdb"
    needs_url = True
    url_example = "http://HOST:4242"
    format = "csv"
    count_unit = "values"
    server_kind = "opentsdb"
    options_model = OpenTsdbOptions
    own_disk_figure = "hbase_root_bytes"
    dialects = {"opentsdb": TsdbApi}
    # stats.py: downsampling computes in doubles (the 0all-sum of 2^53, 1 and 1 is 2^53)
    value_checks = {**{k: None for k in STAT_KINDS},
                    "sum": "OpenTSDB sums in doubles: an integer series' sum past 2^53 is rounded"}

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"opentsdb at {self.url}"
        self.http: HttpClient | None = None
        self._version = "?"
        self._layout = None
        self._templates: list = []
        self._tables: Tables | None = None
        o = self.options
        self._put = "/api/put?details" + (f"&sync&sync_timeout={o.sync_timeout}" if o.sync else "")

    # ---- connect ------------------------------------------------------------------------
    async def open(self) -> None:
        self.http = HttpClient(self.url, self.what)
        await self.http.open(probe_path="/api/version")
        status, body = await self.http.get("/api/version")
        try:
            self._version = str(json.loads(body)["version"]) if status == 200 else None
        except (ValueError, TypeError, KeyError):
            self._version = None
        if self._version is None:
            await self.close()
            raise UserError(f"target opentsdb: {self.url}/api/version answered HTTP {status} without a "
                            f"version: is this an OpenTSDB server?")

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None

    async def version(self) -> str:
        """OpenTSDB's version: the one a server tsbench runs was installed as (the Maven
        build of 2.4.1 reports "BuildData" in /api/version), else what /api/version says."""
        st = local_state("opentsdb", self.url)
        return f"OpenTSDB {st.version if st is not None else self._version}"

    # ---- create -------------------------------------------------------------------------
    async def create(self, tables: Tables, if_exists: str) -> None:
        self._bind(tables)
        if if_exists == "reuse":
            return
        for t in tables:
            if not await self._points(t, 0, FAR_FUTURE_MS):
                continue
            if if_exists == "abort":
                raise exists_error("opentsdb", f"data of measurement {t.name!r} at {self.url}")
            await self._delete(t)

    def _bind(self, tables: Tables) -> None:
        self._tables = tables
        self._layout = csv_layout(tables)
        self._templates = [native.Template(point_ops(t)) for t in tables]

    async def attach(self, tables: Tables) -> None:
        self._bind(tables)

    async def _delete(self, t) -> None:
        """Every point of the measurement's metrics: a query with delete: true (which the
        server must allow: tsd.http.query.allow_delete), whose deletes HBase applies after
        the answer; waited for, at most DELETE_WAIT_S."""
        await self._query_json(_count_body(t, 0, FAR_FUTURE_MS) | {"delete": True})
        deadline = time.monotonic() + DELETE_WAIT_S
        while await self._points(t, 0, FAR_FUTURE_MS):
            if time.monotonic() > deadline:
                raise Fatal(f"{self.what}: points of {t.name} are still there {DELETE_WAIT_S:.0f} s after "
                            f"a delete query")
            await asyncio.sleep(0.2)

    # ---- write --------------------------------------------------------------------------
    def _render(self, batch: Batch) -> bytearray | bytes:
        """The batch's points as one JSON array."""
        buf, parts = native.split_csv(self._layout, batch.data)
        chunks = [native.render(self._templates[i], buf, part[0], part[1])[0]
                  for i, part in enumerate(parts) if part is not None]
        if not chunks:
            return b""
        body = bytearray(b"[")
        for c in chunks:                     # every point ends in ","; the last one's becomes "]"
            body += c
        body[-1:] = b"]"
        return body

    async def write(self, batch: Batch) -> None:
        if self._layout is None:
            raise Fatal("opentsdb: write() before create() or attach()")
        body = self._render(batch)
        if not body:
            return
        headers = dict(JSON)
        if self.options.gzip:
            body = gzip_member(body, self.options.gzip)
            headers["Content-Encoding"] = "gzip"
        status, answer = await self._send(body, headers)
        if status < 300:
            return
        text = answer.decode("utf-8", "replace")
        if status >= 500:
            raise Retryable(f"{self.what}: /api/put: HTTP {status}: {_error_words(text)}")
        raise Fatal(f"{self.what}: /api/put: HTTP {status}: {_refused(text)}")

    async def _send(self, body: bytes, headers: dict) -> tuple[int, bytes]:
        try:
            return await self.http.request("POST", self._put, body, headers)
        except Fatal as exc:                     # no answer at all: a lost connection or a timeout
            raise Retryable(str(exc)) from None

    # ---- verify -------------------------------------------------------------------------
    async def _query_json(self, body: dict) -> list:
        status, answer = await self.http.request("POST", "/api/query", json.dumps(body).encode(), JSON)
        _check(self.what, status, answer)
        return _series(status, answer)

    async def _points(self, t, lo_ms: int, hi_ms: int) -> int:
        """The points of measurement t's metrics in [lo_ms, hi_ms)."""
        if not t.fields:
            return 0
        series = await self._query_json(_count_body(t, lo_ms, hi_ms))
        return round(sum(v for s in series for v in s["dps"].values()))

    async def count(self, tables: Tables) -> int:
        """Values with times in [start_ns, end_ns): the points of each measurement's metrics
        (`0all` excludes the end)."""
        lo_ms = -(-tables.start_ns // 1_000_000)
        hi_ms = -(-tables.end_ns // 1_000_000)
        if hi_ms <= lo_ms:
            return 0
        return sum([await self._points(t, lo_ms, hi_ms) for t in tables])

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """Per field count, sum, min and max, series by series, and the distinct tag sets,
        over the dataset's window (`0all` excludes the end): a request per field (stats.py)."""
        merge, series = FieldMerge(table, self.what, exact_int_sums=False), set()
        lo_ms, hi_ms = -(-tables.start_ns // 1_000_000), -(-tables.end_ns // 1_000_000)
        for f in table.field_names if hi_ms > lo_ms else ():
            series |= stats.read(f, await self._query_json(stats.body(table, f, lo_ms, hi_ms)), merge)
        return merge.stats(len(series))

    # ---- compact and measure (a server tsbench runs) -------------------------------------------
    async def compact(self) -> None:
        """A flush and major compaction of the HBase tables, through the launcher's control port."""
        st = local_state("opentsdb", self.url)
        if st is None:
            return
        ctl = HttpClient(f"http://127.0.0.1:{st.ports['control']}", f"{self.what} (HBase control)",
                         timeout=COMPACT_TIMEOUT)
        await ctl.open()
        try:
            status, body = await ctl.request("POST", "/compact")
        finally:
            await ctl.close()
        if status != 200:
            raise Fatal(f"{self.what}: HBase compaction: HTTP {status}: {body.decode('utf-8', 'replace')[:500]}")

    async def disk_bytes(self) -> dict[str, int]:
        st = local_state("opentsdb", self.url)
        if st is None or not st.extra.get("hbase_root"):
            return {}
        return {self.own_disk_figure: await asyncio.to_thread(allocated_bytes, st.extra["hbase_root"])}

    # ---- queries ------------------------------------------------------------------------
    async def prepare(self, workers: int) -> None:
        await self.http.warm(workers, "/api/version")

    async def query(self, native_q: TsdbQuery) -> Answer:
        """The requests in turn, each read to its last byte; an error status is Fatal with
        the server's words, except "No such name" (no series): the statuses kept for finish()."""
        ans = Answer([], 0, None, partial=[])
        for req in native_q.requests:
            t = await self.http.timed_post("/api/query", json.dumps(req.body).encode(), JSON)
            _check(self.what, t.status, t.body)
            ans.add_response(t)
            ans.partial.append(t.status)
        return ans

    def finish(self, native_q: TsdbQuery, answer: Answer) -> list[tuple]:
        """The requests' series decoded and merged into rows: client work (client_s)."""
        acc = AnswerRows(native_q)
        for req, status, body in zip(native_q.requests, answer.partial, answer.raw):
            acc.add(req, _series(status, body))
        return acc.rows()


def _check(what: str, status: int, body: bytes) -> None:
    """Fatal with the server's words for an error status, except OpenTSDB's 400 "No such
    name for ..." (a metric or tag value never written: no series)."""
    if status >= 300:
        text = body.decode("utf-8", "replace")
        if not (status == 400 and "No such name for" in text):
            raise Fatal(f"{what}: /api/query: HTTP {status}: {_error_words(text)}")


def _series(status: int, body: bytes) -> list:
    """The series of an /api/query answer that _check let through: none for "No such name"."""
    return [] if status >= 300 else json.loads(body.decode("utf-8", "replace"))


def _count_body(t, lo_ms: int, hi_ms: int) -> dict:
    return {"start": lo_ms, "end": hi_ms, "queries": [
        {"metric": metric(t.name, f), "aggregator": "zimsum", "downsample": "0all-count"} for f in t.field_names]}


def _error_words(text: str) -> str:
    """OpenTSDB's error message from its JSON error body (else the text)."""
    try:
        err = json.loads(text).get("error", {})
        return " ".join(str(err.get("message") or err or text).split())[:1000]
    except (ValueError, AttributeError):
        return " ".join(text.split())[:1000] or "(empty body)"


def _refused(text: str) -> str:
    """A /api/put?details answer: how many points were refused, and the first one's error."""
    try:
        doc = json.loads(text)
        errors = doc.get("errors") or []
    except (ValueError, AttributeError):
        return _error_words(text)
    if not errors and "failed" not in doc:
        return _error_words(text)
    first = errors[0] if errors else {}
    return (f"{doc.get('failed', len(errors))} of {doc.get('failed', 0) + doc.get('success', 0)} points refused; "
            f"the first: {first.get('error', '?')} ({json.dumps(first.get('datapoint'))[:300]})")
