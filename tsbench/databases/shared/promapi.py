"""The Prometheus HTTP query API as a target's reading side (phases 2 and 4-5), for
every server that speaks it (VictoriaMetrics, Prometheus): the count and the value
statistics that verify a load (instant queries of rollups over time slices:
promcount.py), and the queries a PromRenderer dialect renders (shared/promql.py),
sent, timed and read back into canonical rows.

What differs between the servers is class data: the path that says the server is
up, the range windows' ends (closed_windows), whether one rollup may cover several
metrics (Prometheus 2 drops __name__ from a rollup's series, so two fields of a tag
set clash: one_metric_a_rollup), the selector (VictoriaMetrics' defeats its tag
filter cache) and the metric names' spelling (metric)."""

from __future__ import annotations

import asyncio
import json
import math
from typing import ClassVar

from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import STAT_KINDS, Table, Tables, TableStats
from tsbench.databases.shared.http import HttpClient, Timed
from tsbench.databases.shared.promcount import metric_regex, plain_selector, slices, window_expr
from tsbench.databases.shared.promql import AnswerRows, PromQuery, PromRequest, regex_quote
from tsbench.databases.shared.sqlstats import table_stats
from tsbench.databases.shared.target import Target
from tsbench.queries.base import Answer

QUERY_CONCURRENCY = 2
# Prometheus 2's head compaction can cut a chunk from under a query that listed it: HTTP 422 "cannot
# populate chunk N from block ...: not found" (prometheus#8221), which the same query asked again
# answers right. A load of old data makes the head compact while it is being verified, so a
# verification query (untimed) asks again on that answer, RACE_TRIES times at the most; a timed
# query never does (the error is the server's answer then).
COMPACTION_RACE = "cannot populate chunk"
RACE_TRIES = 20
RACE_WAIT_S = 0.5
ROLLUPS = (("sum", "count_over_time"), ("sum", "sum_over_time"), ("min", "min_over_time"),
           ("max", "max_over_time"))          # a field's count, sum, min and max over a time slice


class PromApiTarget(Target):
    """Base class of the targets read through the Prometheus query API (see the module docstring)."""

    format = "influx"
    needs_url = True
    time_resolution_ns = 1_000_000                # milliseconds
    count_unit = "values"
    # every kind answered by rollups over the dataset's range (verify.py widens the bounds by float_digits)
    value_checks = {k: None for k in STAT_KINDS}
    probe_path: ClassVar[str] = "/-/ready"        # answers 200 when the server is up
    server_name: ClassVar[str] = ""               # for the error when it does not
    closed_windows: ClassVar[bool] = False        # a range window [d] at t is [t-d, t], not (t-d, t]
    one_metric_a_rollup: ClassVar[bool] = False   # a rollup's series lose __name__, and may not clash
    query_params: ClassVar[dict[str, str]] = {}   # sent with every verification query
    # an integer field's sum from each series' sum_over_time, added here in ints: exact while a
    # series' sum over a slice stays under 2^53 (the server's sum of several series, in doubles, is not)
    exact_int_sums: ClassVar[bool] = False

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"{self.name} at {self.url}"
        self.http: HttpClient | None = None

    async def open(self) -> None:
        self.http = HttpClient(self.url, self.what)
        await self.http.open(probe_path=self.probe_path)
        status, _ = await self.http.get(self.probe_path)
        if status != 200:
            await self.close()
            raise UserError(f"target {self.name}: {self.url}{self.probe_path} answered HTTP {status}: "
                            f"is this a {self.server_name} server?")

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None

    # ---- the server's spelling ----------------------------------------------------------
    def selector(self, name_regex: str) -> str:
        return plain_selector(name_regex)

    def metric(self, name: str) -> str:
        """A metric name as the server keeps it."""
        return name

    def _names(self, t: Table, fields=None) -> str:
        return metric_regex(t, fields, self.metric)

    # ---- verify -------------------------------------------------------------------------
    async def _instant_values(self, expr: str, t_s: int) -> list[str]:
        """The values (as the server wrote them) of an instant query's series."""
        params = {"query": expr, "time": str(t_s), **self.query_params}
        for _ in range(RACE_TRIES):
            status, body = await self.http.get("/api/v1/query", params)
            if status != 422 or COMPACTION_RACE.encode() not in body:
                break
            await asyncio.sleep(RACE_WAIT_S)
        if status >= 300:
            raise Fatal(f"{self.what}: GET /api/v1/query: HTTP {status}: {body.decode('utf-8', 'replace').strip()[:500]}")
        doc = json.loads(body)
        if doc.get("status") != "success":
            raise Fatal(f"{self.what}: {expr[:200]}: {doc.get('error') or doc}")
        return [r["value"][1] for r in doc["data"]["result"]]

    async def _instant_or_none(self, expr: str, t_s: int) -> float | None:
        values = await self._instant_values(expr, t_s)
        return float(values[0]) if values else None

    async def _int_sum_or_none(self, expr: str, t_s: int) -> int | None:
        """The sum of the series' values, each an integer, in Python's ints: exact."""
        values = await self._instant_values(expr, t_s)
        return sum(round(float(v)) for v in values) if values else None

    def _slices(self, tables: Tables) -> list[tuple[int, int]]:
        """The dataset's range in ms ([start, end): a ns stamp t is kept as t // 1e6), in
        slices small enough for options.max_samples_per_query."""
        lo_ms, hi_ms = tables.start_ns // 1_000_000, (tables.end_ns - 1) // 1_000_000 + 1
        if hi_ms <= lo_ms:
            return []
        hi_ms = max(hi_ms, lo_ms + 1 + self.closed_windows)   # a closed window's range may not be empty
        n = math.ceil(max(tables.values, 1) / self.options.max_samples_per_query)
        return slices(lo_ms, hi_ms, n, 1 + self.closed_windows)

    async def _rollups(self, agg: str, rollup: str, names: list[str], cuts,
                       int_sum: bool = False) -> list[float | int | None]:
        """agg(rollup(...)) of each metric regex in names over each slice, names-major;
        int_sum: the rollup's values summed here, in ints, not by `agg` on the server."""
        sem = asyncio.Semaphore(QUERY_CONCURRENCY)
        ask = self._int_sum_or_none if int_sum else self._instant_or_none

        async def one(name: str, a: int, b: int) -> float | int | None:
            async with sem:
                return await ask(*window_expr("" if int_sum else agg, rollup, self.selector(name), a, b,
                                              self.closed_windows))
        return list(await asyncio.gather(*(one(n, a, b) for n in names for a, b in cuts)))

    async def count(self, tables: Tables) -> int:
        """Samples of the dataset's metrics with timestamps in [start_ns, end_ns)."""
        if self.one_metric_a_rollup:
            names = [self._names(t, [f]) for t in tables for f in t.field_names]
        else:
            names = [self._names(t) for t in tables if t.fields]
        parts = await self._rollups("sum", "count_over_time", names, self._slices(tables))
        return round(sum(x or 0.0 for x in parts))

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """Per field (metric TABLE_FIELD): count, sum, min and max over time slices of the
        dataset's range, as count(); series: the distinct label sets of any field's samples."""
        cuts = self._slices(tables)
        row = []
        for c in table.fields:
            name = [regex_quote(self.metric(f"{table.name}_{c.name}"))]
            int_sum = self.exact_int_sums and c.type == "int"
            got = await asyncio.gather(*(self._rollups(agg, rollup, name, cuts, int_sum and rollup == "sum_over_time")
                                         for agg, rollup in ROLLUPS))
            count, total, lo, hi = ([x for x in xs if x is not None] for xs in got)
            row += [round(sum(count)), sum(total) if int_sum else math.fsum(total), min(lo, default=None),
                    max(hi, default=None)]
        return table_stats(table, round(await self._series(table, cuts)), row)

    async def _series(self, table: Table, cuts) -> float:
        """The distinct label sets (tags) of the table's samples in the dataset's range."""
        if not cuts or not table.fields:
            return 0.0
        lo_ms, hi_ms = cuts[0][0], cuts[-1][1]
        groups = [[f] for f in table.field_names] if self.one_metric_a_rollup else [None]
        inner = [window_expr("", "last_over_time", self.selector(self._names(table, g)), lo_ms, hi_ms,
                             self.closed_windows) for g in groups]
        by = ", ".join(table.tags)
        expr = " or ".join(e for e, _ in inner)          # `or`: one series per label set
        return await self._instant_or_none(f"count(group by ({by}) ({expr}))" if len(inner) > 1
                                           else f"count(group by ({by}) {expr})", inner[0][1]) or 0.0

    # ---- queries ------------------------------------------------------------------------
    async def prepare(self, workers: int) -> None:
        """One keep-alive connection per worker, opened before timing."""
        await self.http.warm(workers, self.probe_path)

    async def _request(self, req: PromRequest) -> Timed:
        """POST one request, timed; an HTTP error status is Fatal with the server's words."""
        t = await self.http.timed_post(req.path, req.form())
        if t.status >= 300:
            answer_doc(self.what, req, t.status, t.body)
        return t

    async def query(self, native: PromQuery) -> Answer:
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
                ans.partial.add(req, answer_doc(self.what, req, t.status, t.body)["data"]["result"])
                if len(ans.partial.keys) >= native.limit:
                    break                               # newest first: the older requests cannot make the cut
        return ans

    def finish(self, native: PromQuery, answer: Answer) -> list[tuple] | None:
        """native.client: the rows computed from the requests' answers (client_s)."""
        if not native.client:
            return None
        acc = answer.partial
        if acc is None:
            acc = AnswerRows(native)
            for req, body in zip(native.requests, answer.raw or ()):
                acc.add(req, answer_doc(self.what, req, 200, body)["data"]["result"])
        return acc.rows()

    def canonical(self, native: PromQuery, answer: Answer) -> list[tuple]:
        """The canonical rows of a one-request answer (decoded after the timed pass)."""
        acc = AnswerRows(native)
        acc.add(native.requests[0], answer_doc(self.what, native.requests[0], 200, answer.raw)["data"]["result"])
        return acc.rows()


def answer_doc(what: str, req: PromRequest, status: int, body: bytes) -> dict:
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
