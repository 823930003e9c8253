"""VictoriaMetrics as a target: loads (phase 2) and queries (phases 3-5).

Load: influx line protocol batches through POST /write (the shared
HttpClient), where `cpu usage_user=..` becomes the metric cpu_usage_user
with the tags as labels. count() is in samples (one per field value), summed
by PromQL count_over_time per table and time slice, so no query meets the
server's per-query limits.

Queries: MetricsQL through /api/v1/query and /api/v1/query_range (POST,
nocache=1), rendered so that every answer has the exact meaning of the
shape's SQL (queries/shapes.py); see the "queries" section below."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import re
import time
from dataclasses import dataclass

import aiohttp
from pydantic import BaseModel, ConfigDict, Field

from ..errors import UserError
from .base import Batch, Fatal, Table, Tables, Target, Unsupported, exists_error
from .http import HttpClient

NOCACHE_LABEL = "tsbench_nocache"
FAR_FUTURE_S = 4102444800          # 2100-01-01: an end for "every series ever written"
COMPACT_TIMEOUT = 1800.0
QUERY_CONCURRENCY = 2


# What the target answers, as data: every type whose SQL meaning MetricsQL can state exactly.
QUERY_TYPES = frozenset({
    # the seed's six and influxdb-comparisons' max per minute of 1-32 hosts
    "max-cpu-1", "max-cpu-2", "max-cpu-4", "max-cpu-8", "max-cpu-16", "max-cpu-32",
    "1-host-1-hr", "1-host-12-hr", "8-host-1-hr",
    # TSBS devops aggregates
    "single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-1-8-1",
    "single-groupby-5-1-1", "single-groupby-5-1-12", "single-groupby-5-8-1",
    "cpu-max-all-1", "cpu-max-all-8", "cpu-max-all-32-24",
    "groupby", "double-groupby-1", "double-groupby-5", "double-groupby-all",
    "groupby-orderby-limit", "lastpoint",
    # flux/ingen: sum of v0 > 0 (sum_gt_over_time; not on 1.79.5, see render)
    "flux-sum-1d", "flux-sum-4d", "flux-sum-12d", "flux-sum-by-tag-1d", "flux-sum-by-tag-4d", "flux-sum-by-tag-12d",
    # relational: raw rows of a window
    "read-all", "read-tenth", "read-one",
})

_ROWS_WHERE = ("rows WHERE a field > x need a filter on raw samples; MetricsQL filters only evaluated points "
               "(a subquery resamples on a step grid, inexact when samples are off the grid or missing), and "
               "the other fields of a row are separate series")
UNSUPPORTED = {"high-cpu-all": _ROWS_WHERE, "high-cpu-1": _ROWS_WHERE}


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
    # VictoriaMetrics keeps a float as a decimal of ~12 significant digits (lib/decimal), so answers
    # compare with the reference within a relative 1e-11, not bit for bit.
    float_digits = 12
    query_types = QUERY_TYPES

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.what = f"victoriametrics at {self.url}"
        self.http: HttpClient | None = None
        self.missing_functions: set[str] = set()     # MetricsQL functions this server lacks (open())

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
        await self._probe_functions()

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

    # ---- queries (phases 3-5) -------------------------------------------------------------
    async def _probe_functions(self) -> None:
        """MetricsQL functions the renderer may use that this server's release lacks
        (Debian's 1.79.5 has count_gt_over_time but no sum_gt_over_time)."""
        self.missing_functions = set()
        for fn in OPTIONAL_FUNCTIONS:
            status, body = await self.http.get("/api/v1/query", {"query": f'{fn}({{__name__="tsbench_probe"}}[1s], 0)',
                                                                 "time": "1", "nocache": "1"})
            if status >= 300 and "unknown func" in body.decode("utf-8", "replace"):
                self.missing_functions.add(fn)

    def _eval_point(self, end_ms: int) -> tuple[int, int]:
        """(evaluation time in whole seconds, offset in ms) whose window ends at end_ms, exclusive:
        a window [d] at t with `offset o` covers (t-o-d, t-o]; t-o = end-1 makes it [end-d, end-1] ms."""
        t_s = -(-(end_ms - 1) // 1000)
        return t_s, t_s * 1000 - (end_ms - 1)

    def render(self, spec) -> VMQuery:
        if spec.type not in self.query_types:
            why = UNSUPPORTED.get(spec.type, "its SQL meaning has no exact MetricsQL rendering here")
            raise Unsupported(f"target victoriametrics: query type {spec.type} is not supported ({why})")
        p = spec.params
        shape = p.get("shape")
        if shape == "aggregate":
            return self._render_aggregate(p)
        if shape == "rows":
            return self._render_rows(p)
        if shape == "last":
            return self._render_last(p)
        raise Unsupported(f"target victoriametrics: query type {spec.type}: shape {shape!r} is not rendered")

    # aggregate: one expression per field, each labelled with its column number, in one union;
    # evaluated at every bucket end (query_range, step = bucket width), or once per partial
    # bucket and for a bucketless window (/api/v1/query).
    def _agg_expr(self, p: dict, f: str, d_ms: int, o_ms: int) -> str:
        win = f"{_series(p, f)}[{_dur(d_ms)}]" + (f" offset {_dur(o_ms)}" if o_ms else "")
        group = p.get("group_by") or []
        by = f" by ({', '.join(_label(g) for g in group)})" if group else ""
        agg, vf = p["agg"], p.get("value_filter")
        if not vf:
            if agg in ("max", "min"):
                return f"{agg}{by}({agg}_over_time({win}))"
            if agg == "sum":
                return f"sum{by}(sum_over_time({win}))"
            if agg == "count":
                return f"sum{by}(count_over_time({win}))"
            # mean = sum of sums / sum of counts (an avg of per-series averages would weigh series alike)
            return f"sum{by}(sum_over_time({win})) / sum{by}(count_over_time({win}))"
        op, x = vf["op"], float(vf["value"])
        if agg == "max" and op in (">", ">="):
            # the max of the values > x is the max itself if it is > x, and no row otherwise
            return f"max{by}(max_over_time({win})) {op} {_num(x)}"
        if agg == "min" and op in ("<", "<="):
            return f"min{by}(min_over_time({win})) {op} {_num(x)}"
        if agg in ("max", "min"):
            raise Unsupported(f"target victoriametrics: {agg} of the values {op} {x!r} has no exact MetricsQL form")
        # raw-sample filters: v >= x is v > prev(x) and v < x is v <= prev(x) for doubles
        below = _num(math.nextafter(x, -math.inf))
        cmp, thr = {">": ("gt", _num(x)), ">=": ("gt", below), "<=": ("le", _num(x)),
                    "<": ("le", below), "=": ("eq", _num(x))}[op]
        count = f"sum{by}(count_{cmp}_over_time({win}, {thr}))"
        if agg == "count":
            return f"{count} > 0"
        fn = f"sum_{cmp}_over_time"
        if fn in self.missing_functions:
            raise Unsupported(f"target victoriametrics: {agg} of the values {op} {x!r} needs {fn}, which "
                              f"this server's MetricsQL lacks (newer releases have it, e.g. 1.115.0)")
        total = f"sum{by}({fn}({win}, {thr}))"
        if agg == "sum":        # a bucket whose samples all fail the filter has no row, not a sum of 0
            return f"({total}) and ({count} > 0)"
        return f"({total}) / ({count})"        # mean: 0/0 = NaN, which VM leaves out of the answer

    def _render_aggregate(self, p: dict) -> VMQuery:
        fields = list(p["fields"])
        vf = p.get("value_filter")
        if vf and fields != [vf["field"]]:
            raise Unsupported("target victoriametrics: a value filter on a field other than the one aggregated "
                              "needs rows, which VictoriaMetrics does not keep (one series per field)")
        if p.get("limit") and p.get("order") != "desc":
            raise Unsupported("target victoriametrics: LIMIT without ORDER BY time DESC has no defined answer")
        from ..queries.shapes import columns

        has_time, group, values = columns(p)

        def expr(d_ms: int, o_ms: int) -> str:
            parts = [f'label_set({self._agg_expr(p, f, d_ms, o_ms)}, "{FIELD_LABEL}", "{i}")'
                     for i, f in enumerate(fields)]
            return parts[0] if len(parts) == 1 else f"union({', '.join(parts)})"

        def instant(a_ms: int, b_ms: int, bucket_ms: int | None) -> VMRequest:
            t_s, o = self._eval_point(b_ms)
            return VMRequest("/api/v1/query", expr(b_ms - a_ms, o), t_s,
                             bucket_ns=None if bucket_ms is None else bucket_ms * MS)

        lo, hi = _ms(p["start"]), _ms(p["end"])
        limit = int(p["limit"]) if p.get("limit") else None
        reqs: list[VMRequest] = []                      # newest first
        empty = hi <= lo or (p.get("tag_values") is not None and not [v for v in p["tag_values"] if v is not None])
        if empty:
            pass
        elif p.get("bucket") is None:
            reqs.append(instant(lo, hi, None))
        else:
            if p["bucket"] % MS:
                raise Unsupported("target victoriametrics: buckets must be whole milliseconds")
            w = p["bucket"] // MS
            first_b, last_b = lo // w * w, (hi - 1) // w * w
            if first_b == last_b and (first_b < lo or first_b + w > hi):
                reqs.append(instant(lo, hi, first_b))
            else:
                if last_b + w > hi:                     # the newest bucket is cut by the window's end
                    reqs.append(instant(last_b, hi, last_b))
                full_first, full_last = -(-lo // w) * w, hi // w * w - w
                size = limit or MAX_POINTS
                top = full_last
                while top >= full_first:
                    n = min(size, (top - full_first) // w + 1)
                    b0 = top - (n - 1) * w
                    t_s, o = self._eval_point(b0 + w)
                    reqs.append(VMRequest("/api/v1/query_range", expr(w, o), t_s,
                                          end_s=-(-(t_s * 1000 + (n - 1) * w) // 1000), step_ms=w,
                                          shift_ms=t_s * 1000 - b0, first_ns=b0 * MS, last_ns=top * MS))
                    top = b0 - w
                    if limit:                           # newest first, in growing chunks
                        size = min(size * 2, MAX_POINTS)
                if first_b < lo:                        # the oldest bucket is cut by the window's start
                    reqs.append(instant(lo, first_b + w, first_b))
        return VMQuery("aggregate", tuple(reqs), has_time, tuple(group), tuple(v.kind for v in values),
                       limit=limit, fill_zero=p["agg"] == "count")

    # rows: the raw samples of the fields in [start, end) (an instant query of a range
    # selector returns raw samples), joined into rows per series and timestamp.
    def _render_rows(self, p: dict) -> VMQuery:
        if p.get("value_filter"):
            raise Unsupported("target victoriametrics: " + _ROWS_WHERE)
        names = tuple(f"{p['measurement']}_{f}" for f in p["fields"])
        lo, hi = _ms(p["start"]), _ms(p["end"])
        reqs = ()
        if hi > lo and (p.get("tag_values") is None or [v for v in p["tag_values"] if v is not None]):
            t_s, o = self._eval_point(hi)
            sel = _series(p, None, names)
            reqs = (VMRequest("/api/v1/query", f"{sel}[{_dur(hi - lo)}]" + (f" offset {_dur(o)}" if o else ""), t_s),)
        return VMQuery("rows", reqs, True, tuple(p.get("tags_out") or []), tuple(p["types"]), names=names,
                       limit=int(p["limit"]) if p.get("limit") else None)

    # last: per series and field the newest sample and its time (tlast_over_time) over all
    # time; a series' newest row is at the newest of its fields' times, and a field whose
    # newest sample is older was null in that row.
    def _render_last(self, p: dict) -> VMQuery:
        win = f"[{LAST_LOOKBEHIND_S}s]"
        parts = []
        for i, f in enumerate(p["fields"]):
            sel = _series(p, f)
            parts.append(f'label_set(tlast_over_time({sel}{win}), "{FIELD_LABEL}", "t{i}")')
            parts.append(f'label_set(last_over_time({sel}{win}), "{FIELD_LABEL}", "v{i}")')
        req = VMRequest("/api/v1/query", f"union({', '.join(parts)})", FAR_FUTURE_S)
        return VMQuery("last", (req,), True, tuple(p["group_by"]), tuple(p["types"]))

    async def _request(self, req: VMRequest) -> tuple[dict, int, float, float]:
        """POST one request: (JSON answer, body bytes, seconds to the response head, total seconds)."""
        t0 = time.perf_counter()
        try:
            async with self.http.session.post(self.url + req.path, data=req.form()) as r:
                t1 = time.perf_counter()
                body = await r.read()
                status = r.status
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise Fatal(f"{self.what}: {req.path}: {exc or type(exc).__name__}") from None
        t2 = time.perf_counter()
        text = body.decode("utf-8", "replace")
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if status >= 300 or not isinstance(doc, dict) or doc.get("status") != "success":
            msg = doc.get("error") if isinstance(doc, dict) and doc.get("error") else text.strip()
            raise Fatal(f"{self.what}: {req.path}: HTTP {status}: {(msg or '(empty body)')[:1000]}")
        return doc, len(body), t1 - t0, t2 - t0

    async def query(self, native: VMQuery):
        from ..queries.base import Answer

        docs, nbytes, ttfb, seconds = [], 0, None, 0.0
        acc = _Rows(native)
        for req in native.requests:
            doc, n, head, total = await self._request(req)
            docs.append(doc)
            nbytes += n
            seconds += total
            ttfb = head if ttfb is None else ttfb
            acc.add(req, doc["data"]["result"])
            if native.limit and native.shape == "aggregate" and len(acc.keys) >= native.limit:
                break                               # newest first: the older requests cannot make the cut
        return Answer(acc.rows(), nbytes=nbytes, ttfb=ttfb, seconds=seconds,
                      raw=docs[0] if len(docs) == 1 else docs)


# ---- queries: rendering helpers and the parsed answer ---------------------------------------------

MS = 10**6                          # ns per ms
MAX_POINTS = 10_000                 # evaluation points per query_range (the server refuses > 30,000)
FIELD_LABEL = "tsbench_field"       # the column number of each expression in a union
# last: a window back to 1970-01-02 from 2100; 1.79 answers nothing when the window reaches 0
LAST_LOOKBEHIND_S = FAR_FUTURE_S - 86_400
OPTIONAL_FUNCTIONS = ("sum_gt_over_time", "sum_le_over_time", "sum_eq_over_time")   # not in 1.79.5

def _ms(ns: int) -> int:
    """The first VM millisecond at or after ns (VM keeps a ns stamp t as t // 1e6)."""
    return -(-int(ns) // MS)


def _dur(ms: int) -> str:
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _num(x: float) -> str:
    return repr(float(x))


def _q(s: str) -> str:
    """A MetricsQL double-quoted string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name
    return "".join(c if c.isalnum() or c == "_" else "\\" + c for c in name)


def _series(p: dict, f: str | None, names: tuple[str, ...] = ()) -> str:
    """The series of measurement p['measurement'] field f (or any of the metric names),
    where p['tag'] is one of p['tag_values']."""
    if f is not None:
        parts = [f"__name__={_q(p['measurement'] + '_' + f)}"]
    elif len(names) == 1:
        parts = [f"__name__={_q(names[0])}"]
    else:
        parts = [f'__name__=~"{"|".join(_regex_quote(n) for n in names)}"']
    if p.get("tag_values") is not None:
        vals = [v for v in p["tag_values"] if v is not None]
        if len(vals) == 1:
            parts.append(f"{_label(p['tag'])}={_q(vals[0])}")
        else:
            parts.append(f'{_label(p["tag"])}=~"{"|".join(_regex_quote(v) for v in vals)}"')
    return "{" + ",".join(parts) + "}"


@dataclass(frozen=True)
class VMRequest:
    path: str                     # /api/v1/query (instant) or /api/v1/query_range
    query: str
    time_s: int                   # instant: evaluation time; range: start (whole seconds)
    end_s: int = 0                # range only
    step_ms: int = 0              # range only: the bucket width
    bucket_ns: int | None = None  # instant aggregate: the bucket its answer belongs to
    shift_ms: int = 0             # range: evaluation time - bucket start
    first_ns: int = 0             # range: the buckets it answers
    last_ns: int = 0

    @property
    def is_range(self) -> bool:
        return self.path.endswith("query_range")

    def form(self) -> dict[str, str]:
        if self.is_range:
            return {"query": self.query, "start": str(self.time_s), "end": str(self.end_s),
                    "step": _dur(self.step_ms), "nocache": "1"}
        return {"query": self.query, "time": str(self.time_s), "nocache": "1"}

    def __str__(self) -> str:
        args = " ".join(f"{k}={v}" for k, v in self.form().items() if k != "query")
        return f"{self.path} {args}: {self.query}"


@dataclass(frozen=True, eq=False)
class VMQuery:
    """A rendered query: the requests (newest first) whose answers make the canonical rows."""

    shape: str                          # aggregate | rows | last
    requests: tuple[VMRequest, ...]
    has_time: bool
    group: tuple[str, ...]              # group columns (rows: tags_out)
    kinds: tuple[str, ...]              # value columns' kinds
    names: tuple[str, ...] = ()         # rows: the metric of each value column
    limit: int | None = None            # aggregate: the newest `limit` rows; rows: the oldest
    fill_zero: bool = False             # count: a field without samples in a present row counts 0

    @property
    def text(self) -> str:
        return "\n".join(str(r) for r in self.requests)

    def __str__(self) -> str:
        return self.text


def _value(v, kind: str):
    x = float(v)
    if math.isnan(x):
        return None
    if kind == "int":
        return round(x)
    if kind == "str":
        return v
    return x


def _t_ms(t) -> int:
    return round(float(t) * 1000)


class _Rows:
    """Canonical rows from the JSON answers of a VMQuery's requests."""

    def __init__(self, q: VMQuery):
        self.q = q
        self.keys: dict[tuple, list] = {}
        self.last: dict[tuple, dict] = {}

    def add(self, req: VMRequest, result: list[dict]) -> None:
        q = self.q
        if q.shape == "aggregate":
            for s in result:
                m = s["metric"]
                i = int(m[FIELD_LABEL])
                g = tuple(m.get(x) for x in q.group)
                for t, v in ([s["value"]] if "value" in s else s["values"]):
                    if req.is_range:
                        b = (_t_ms(t) - req.shift_ms) * MS
                        if not req.first_ns <= b <= req.last_ns:
                            continue
                    else:
                        b = req.bucket_ns
                    val = _value(v, q.kinds[i])
                    if val is not None:
                        self.keys.setdefault((b, g), [None] * len(q.kinds))[i] = val
        elif q.shape == "rows":
            index = {n: i for i, n in enumerate(q.names)}
            for s in result:
                m = dict(s["metric"])
                i = index[m.pop("__name__")]
                series = tuple(sorted(m.items()))
                g = tuple(m.get(x) for x in q.group)
                for t, v in s["values"]:
                    ms = _t_ms(t)
                    row = self.keys.setdefault((ms, series), [g, [None] * len(q.kinds)])
                    row[1][i] = _value(v, q.kinds[i])
        else:                                   # last
            for s in result:
                m = dict(s["metric"])
                m.pop("__name__", None)
                col = m.pop(FIELD_LABEL)
                series = tuple(sorted(m.items()))
                rec = self.last.setdefault(series, {"g": tuple(m.get(x) for x in q.group), "t": {}, "v": {}})
                v = s["value"][1]
                if col[0] == "t":
                    rec["t"][int(col[1:])] = _t_ms(v)
                else:
                    rec["v"][int(col[1:])] = _value(v, q.kinds[int(col[1:])])

    def rows(self) -> list[tuple]:
        q = self.q
        if q.shape == "aggregate":
            out = []
            for (b, g), vals in self.keys.items():
                if q.fill_zero:
                    vals = [0 if v is None else v for v in vals]
                out.append(((b,) if q.has_time else ()) + g + tuple(vals))
            if q.limit:
                out.sort(key=lambda r: r[0], reverse=True)    # ties (groups of one bucket) as SQL: any
                out = out[:q.limit]
            return out
        if q.shape == "rows":
            out = [(ms * MS, *g, *vals) for (ms, _), (g, vals) in self.keys.items()]
            if q.limit:
                out.sort(key=lambda r: r[0])
                out = out[:q.limit]
            return out
        best: dict[tuple, tuple] = {}
        for series, rec in sorted(self.last.items()):
            if not rec["t"]:
                continue
            t = max(rec["t"].values())
            vals = tuple(rec["v"].get(i) if rec["t"].get(i) == t else None for i in range(len(q.kinds)))
            if rec["g"] not in best or t > best[rec["g"]][0]:
                best[rec["g"]] = (t, vals)
        return [(t * MS, *g, *vals) for g, (t, vals) in best.items()]
