"""The Elasticsearch/OpenSearch query DSL dialect (phase 3 render, phase 5 read back):
every catalog shape as `_search` requests whose answers have the exact meaning of
the shape's SQL (queries/shapes.py, queries/iot.py), and the reading of their JSON
answers into canonical rows. target.py (ElasticsearchTarget) sends the requests (phase 4).

Index layout (templates.py): one index per measurement, named as it; `time` date_nanos,
tags keyword, float fields double, int fields long; a NULL is an absent field.

How the shapes are stated:
* aggregate: a bool filter (range on time, `terms` on the tag, the value filter as a
  range), then `max`/`min`/`avg`/`sum`/`value_count` per field, under a
  `date_histogram` (`fixed_interval`, `min_doc_count` 1: an empty bucket is a missing
  row, as in SQL), or over the whole window. Groups, newest-first limits and
  histograms of more than HISTOGRAM_MAX buckets use a `composite` aggregation (date
  histogram and `terms` sources, `missing_bucket` as SQL's NULL group), paged by
  `after_key`: exact for any number of groups, where `terms` would need a size bound.
  `sum` carries a `value_count`: SQL's sum of no values is NULL, the server's is 0.
* rows: hits sorted by time with `docvalue_fields` (so the `_source`-less template
  answers too), paged by time: the next page starts at the last page's newest
  instant, skipping (`from`) the hits already read at it (the tie order is stable:
  one shard copy per `preference`, a static index). No scroll context is left open;
  more rows at one instant than the index's max_result_window is Fatal.
* last: a composite of the groups with a `top_hits` (size 1, newest first).
* iot: composites over (truck tags[, 10-minute buckets]) with their averages and
  counts (zero statuses by a `range` aggregation, not a query on the field); the
  HAVINGs and outer aggregations are finished on the client (`client`).
Paged answers are `client` queries: the target asks EsQuery.next(docs) for each page
after the first inside the timed region (target.py query()). Every catalog type runs.

Other forms of the devops types (forms.py: calendar intervals, query context, terms
groups, terms or collapse for lastpoint) are timed against these by benchmarks/dialects.py;
why these are kept where another measured faster is said there (form_reasons).

Ints: the server aggregates long fields in doubles; an int column is rounded back
(exact up to 2**53). Times: histogram keys are epoch ms; hit times are read from
`docvalue_fields` formatted epoch_millis with the nanosecond fraction."""

from __future__ import annotations

import copy
import json
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Callable
from urllib.parse import quote

from tsbench.core.errors import Fatal, Unsupported
from tsbench.queries.base import DAY, MINUTE, shape_of
from tsbench.queries.dialect import Dialect
from tsbench.queries.shapes import OPS, columns

MS = 10**6                    # ns per ms
PAGE = 10_000                 # hits or composite buckets per request
RESULT_WINDOW = 10_000        # index.max_result_window's default: a page's from + size
HISTOGRAM_MAX = 10_000        # buckets a plain date_histogram may make (search.max_buckets is 65,535)
PREFERENCE = "tsbench"        # every page of a query from the same shard copies: a stable tie order
TIME_FMT = "epoch_millis"     # hit times: "1451606420123.456789" (ms with the ns fraction)
NANOS = "strict_date_optional_time_nanos"
TEN_MIN = 10 * MINUTE
ES_AGG = {"max": "max", "min": "min", "mean": "avg", "sum": "sum", "count": "value_count"}

Request = tuple[str, bytes]


# ---- the native query -------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class EsQuery:
    """A rendered query: `requests` (path, JSON body) are POSTed in order. When `client`
    is True the target parses each response inside the timed region and, after the
    last of `requests`, asks `next(docs)` (docs: every parsed response so far) for the
    request of the next page until it returns None; then `read(docs)`. When `client` is
    False the answer is one page: read([doc]) after the pass (next() is always None)."""

    requests: tuple[Request, ...]
    client: bool
    reader: Callable[[list[dict]], list[tuple]] = field(repr=False)
    pager: Callable[[list[dict]], Request | None] | None = field(default=None, repr=False)

    def read(self, docs: list[dict]) -> list[tuple]:
        """Canonical rows (queries/shapes.columns) from the parsed JSON responses."""
        for d in docs:
            _check(d)
        return self.reader(docs)

    def next(self, docs: list[dict]) -> Request | None:
        """The request of the page after docs[-1], or None when the answer is complete."""
        if self.pager is None or not docs:
            return None
        _check(docs[-1])
        return self.pager(docs)

    @property
    def text(self) -> str:
        return "\n".join(f"POST {path}\n{body.decode()}" for path, body in self.requests)

    def __str__(self) -> str:
        return self.text


def _check(doc: dict) -> None:
    """Fatal for an answer the server cut short (shard failures, a timeout)."""
    if not isinstance(doc, dict):
        raise Fatal(f"elasticsearch: not a JSON object: {str(doc)[:200]}")
    if "error" in doc:
        raise Fatal(f"elasticsearch: {json.dumps(doc['error'])[:1000]}")
    failures = (doc.get("_shards") or {}).get("failures")
    if failures:
        raise Fatal(f"elasticsearch: shard failure: {json.dumps(failures[0])[:1000]}")
    if doc.get("timed_out"):
        raise Fatal("elasticsearch: the search timed out (a partial answer)")


# ---- request pieces ---------------------------------------------------------------------------

def _path(index: str, params: str = "") -> str:
    return f"/{quote(index, safe='')}/_search" + (f"?{params}" if params else "")


def _body(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def rfc3339(ns: int) -> str:
    """An epoch-ns instant as RFC 3339 UTC with nanoseconds."""
    s, f = divmod(int(ns), 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{f:09d}Z"


def interval(ns: int) -> str:
    """A fixed_interval of whole milliseconds: 1h, 10m, 20s, 250ms."""
    if ns <= 0 or ns % MS:
        raise Unsupported("elasticsearch: buckets must be a positive whole number of milliseconds")
    ms = ns // MS
    for unit, n in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % n == 0:
            return f"{ms // n}{unit}"
    return f"{ms}ms"


def window(start: int, end: int) -> dict:
    return {"range": {"time": {"gte": rfc3339(start), "lt": rfc3339(end), "format": NANOS}}}


def compare(vf: dict) -> dict:
    """A value filter (field op value) as a range or term query."""
    op, f, x = vf["op"], vf["field"], float(vf["value"])
    if op not in OPS:
        raise Unsupported(f"elasticsearch: value filter operator {op!r}")
    if op == "=":
        return {"term": {f: x}}
    return {"range": {f: {{">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[op]: x}}}


def _filters(p: dict, with_window: bool = True) -> list[dict]:
    out = [window(p["start"], p["end"])] if with_window else []
    if p.get("tag_values") is not None:
        vals = [v for v in p["tag_values"] if v is not None]          # tag IN (NULL) matches nothing
        out.append({"terms": {p["tag"]: vals}} if vals else {"match_none": {}})
    if p.get("value_filter"):
        out.append(compare(p["value_filter"]))
    return out


def _bool(filters: list[dict]) -> dict:
    return {"bool": {"filter": filters}} if filters else {"match_all": {}}


def _hist_source(width: int, desc: bool = False) -> dict:
    h = {"field": "time", "fixed_interval": interval(width)}
    return {"date_histogram": {**h, "order": "desc"} if desc else h}


def _terms_source(tag: str, missing: bool) -> dict:
    return {"terms": {"field": tag, "missing_bucket": True} if missing else {"field": tag}}


# ---- reading values ---------------------------------------------------------------------------

def hit_ns(s: Any) -> int:
    """Epoch ns of an epoch_millis docvalue ("1451606420123.456789", "1451606410000")."""
    ms, _, frac = str(s).partition(".")
    ns = int(ms) * MS
    if frac:
        sub = int(frac[:6].ljust(6, "0"))
        ns += -sub if ms.startswith("-") else sub
    return ns


def convert(v: Any, kind: str):
    """A JSON value as the column's kind; None for a missing or non-finite value."""
    if v is None:
        return None
    if kind == "str":
        return str(v)
    x = float(v)
    if not math.isfinite(x):
        return None
    return (v if isinstance(v, int) else round(x)) if kind == "int" else x


def _field(hit: dict, name: str, kind: str):
    vals = (hit.get("fields") or {}).get(name)
    return convert(vals[0], kind) if vals else None


def _metric(b: dict, name: str) -> Any:
    return (b.get(name) or {}).get("value")


def _metric_aggs(p: dict) -> dict:
    agg = p["agg"]
    if agg not in ES_AGG:
        raise Unsupported(f"elasticsearch: aggregate {agg!r}")
    out = {}
    for i, f in enumerate(p["fields"]):
        out[f"v{i}"] = {ES_AGG[agg]: {"field": f}}
        if agg == "sum":
            out[f"n{i}"] = {"value_count": {"field": f}}
    return out


def _metric_values(p: dict, kinds: list[str], b: dict) -> tuple:
    out = []
    for i, kind in enumerate(kinds):
        v = _metric(b, f"v{i}")
        if p["agg"] == "sum" and not _metric(b, f"n{i}"):
            v = None                                   # SQL: the sum of no values is NULL
        out.append(convert(v, kind))
    return tuple(out)


def _agg(doc: dict, name: str = "c") -> dict:
    return (doc.get("aggregations") or {}).get(name) or {}


def _buckets(docs: list[dict], name: str = "c") -> list[dict]:
    return [b for d in docs for b in _agg(d, name).get("buckets") or []]


# ---- composite aggregations, paged ------------------------------------------------------------

def _composite(index: str, query: dict, sources: list[tuple[str, dict]], aggs: dict,
               reader: Callable[[list[dict]], list[tuple]], limit: int | None = None,
               client: bool | None = None) -> EsQuery:
    """A composite aggregation "c" of the sources (name, source) with sub-aggregations, the
    first `limit` buckets (or all), paged by after_key."""
    comp = {"size": min(limit or PAGE, PAGE), "sources": [{k: s} for k, s in sources]}
    body = {"size": 0, "track_total_hits": False, "query": query,
            "aggs": {"c": {"composite": comp, **({"aggs": aggs} if aggs else {})}}}
    path = _path(index)
    one_page = limit is not None and limit <= PAGE

    def pager(docs: list[dict]) -> Request | None:
        c = _agg(docs[-1])
        got, seen = len(c.get("buckets") or []), sum(len(_agg(d).get("buckets") or []) for d in docs)
        asked = min(PAGE, limit - (seen - got)) if limit else PAGE
        if got < asked or not c.get("after_key") or (limit and seen >= limit):
            return None
        nxt = copy.deepcopy(body)
        nxt["aggs"]["c"]["composite"].update(after=c["after_key"], size=min(PAGE, limit - seen) if limit else PAGE)
        return path, _body(nxt)

    def read(docs: list[dict]) -> list[tuple]:
        rows = reader(docs)
        return rows[:limit] if limit else rows

    return EsQuery(((path, _body(body)),), (not one_page) if client is None else client, read,
                   None if one_page else pager)


def _key(b: dict, name: str):
    return b["key"].get(name)


# ---- basic shapes -----------------------------------------------------------------------------

def _aggregate(p: dict) -> EsQuery:
    has_time, group, values = columns(p)
    kinds = [v.kind for v in values]
    limit = int(p["limit"]) if p.get("limit") else None
    desc = p.get("order") == "desc"
    if limit and not desc:
        raise Unsupported("elasticsearch: LIMIT without ORDER BY time DESC has no defined answer")
    if desc and not has_time:
        raise Unsupported("elasticsearch: ORDER BY time DESC needs time buckets")
    query, aggs = _bool(_filters(p)), _metric_aggs(p)
    index = p["measurement"]
    if not has_time and not group:                    # one row over the whole window, as SQL's
        body = {"size": 0, "track_total_hits": False, "query": query, "aggs": aggs}
        return EsQuery(((_path(index), _body(body)),), False,
                       lambda docs: [_metric_values(p, kinds, d.get("aggregations") or {}) for d in docs])
    buckets = -(-(p["end"] - p["start"]) // p["bucket"]) + 1 if has_time else 0
    if has_time and not group and not limit and buckets <= HISTOGRAM_MAX:
        hist = {"field": "time", "fixed_interval": interval(p["bucket"]), "min_doc_count": 1}
        body = {"size": 0, "track_total_hits": False, "query": query,
                "aggs": {"b": {"date_histogram": hist, "aggs": aggs}}}
        return EsQuery(((_path(index), _body(body)),), False,
                       lambda docs: [(b["key"] * MS, *_metric_values(p, kinds, b)) for b in _buckets(docs, "b")])
    sources = [("t", _hist_source(p["bucket"], desc))] if has_time else []
    sources += [(f"g{j}", _terms_source(g, True)) for j, g in enumerate(group)]

    def read(docs):
        return [((_key(b, "t") * MS,) if has_time else ()) + tuple(_key(b, f"g{j}") for j in range(len(group)))
                + _metric_values(p, kinds, b) for b in _buckets(docs)]
    return _composite(index, query, sources, aggs, read, limit)


def _rows(p: dict, result_window: int = RESULT_WINDOW) -> EsQuery:
    _, tags, values = columns(p)
    kinds = [v.kind for v in values]
    limit = int(p["limit"]) if p.get("limit") else None
    filters = _filters(p)
    docvalues = [{"field": "time", "format": TIME_FMT}, *tags, *p["fields"]]
    path = _path(p["measurement"], f"preference={PREFERENCE}")

    def body(start: int, skip: int, size: int) -> bytes:
        q = _bool([window(start, p["end"])] + filters[1:])
        return _body({"size": size, **({"from": skip} if skip else {}), "track_total_hits": False,
                      "_source": False, "query": q, "sort": [{"time": {"order": "asc"}}],
                      "docvalue_fields": docvalues})

    def size_after(prev: list[dict]) -> int:
        """The size of the page after the pages prev: what is left of PAGE after the hits
        skipped at its first instant, and of the limit."""
        skip = _tail(prev)[1] if prev else 0
        return min(PAGE, result_window - skip, limit - _count(prev) if limit else PAGE)

    def pager(docs: list[dict]) -> Request | None:
        if len(_hits(docs[-1])) < size_after(docs[:-1]):
            return None                                # a short page: the last
        t, skip = _tail(docs)
        size = size_after(docs)
        if limit and _count(docs) >= limit:
            return None
        if size <= 0:
            raise Fatal(f"elasticsearch: more than {result_window} rows at one instant ({rfc3339(t)}): "
                        f"beyond the index's max_result_window, which time-sorted pages reach with `from`")
        return path, body(t, skip, size)

    def read(docs: list[dict]) -> list[tuple]:
        rows = [(hit_ns(h["fields"]["time"][0]), *(_field(h, g, "str") for g in tags),
                 *(_field(h, f, k) for f, k in zip(p["fields"], kinds))) for d in docs for h in _hits(d)]
        return rows[:limit] if limit else rows

    one_page = limit is not None and limit <= min(PAGE, result_window)
    return EsQuery(((path, body(p["start"], 0, size_after([]))),), not one_page, read,
                   None if one_page else pager)


def _hits(doc: dict) -> list[dict]:
    return (doc.get("hits") or {}).get("hits") or []


def _count(docs: list[dict]) -> int:
    return sum(len(_hits(d)) for d in docs)


def _tail(docs: list[dict]) -> tuple[int, int]:
    """(t, n): the newest instant of the time-sorted pages read and how many hits were
    read at it (scanning back from the end: only the trailing hits at t)."""
    t, n = None, 0
    for d in reversed(docs):
        for h in reversed(_hits(d)):
            x = hit_ns(h["fields"]["time"][0])
            if t is not None and x != t:
                return t, n
            t, n = x, n + 1
    if t is None:
        raise Fatal("elasticsearch: a page of rows came back empty where a full one was expected")
    return t, n


def _top_hits(fields: list[str]) -> dict:
    return {"top_hits": {"size": 1, "sort": [{"time": {"order": "desc"}}], "_source": False,
                         "docvalue_fields": [{"field": "time", "format": TIME_FMT}, *fields]}}


def _newest(b: dict) -> dict | None:
    hits = (((b.get("top") or {}).get("hits")) or {}).get("hits") or []
    return hits[0] if hits else None


def _last(p: dict) -> EsQuery:
    _, group, values = columns(p)
    kinds = [v.kind for v in values]
    sources = [(f"g{j}", _terms_source(g, True)) for j, g in enumerate(group)]

    def read(docs):
        out = []
        for b in _buckets(docs):
            h = _newest(b)
            if h is not None:
                out.append((hit_ns(h["fields"]["time"][0]), *(_key(b, f"g{j}") for j in range(len(group))),
                            *(_field(h, f, k) for f, k in zip(p["fields"], kinds))))
        return out
    return _composite(p["measurement"], {"match_all": {}}, sources, {"top": _top_hits(list(p["fields"]))}, read)


# ---- iot (queries/iot.py): composites per truck, finished on the client -----------------------

R, D_ = "readings", "diagnostics"
T = "@t"                                      # the 10-minute bucket source of a composite


def _iot(index: str, filters: list[dict], keys: tuple[str, ...], aggs: dict,
         finish: Callable[[list[dict]], list[tuple]], bucket: bool = False) -> EsQuery:
    """A composite over the tags `keys` (documents lacking one are left out, as the SQL's
    IS NOT NULL), optionally per 10-minute bucket, with sub-aggregations; finish(buckets)
    computes the answer's rows on the client."""
    sources = [(k, _terms_source(k, False)) for k in keys] + ([(T, _hist_source(TEN_MIN))] if bucket else [])
    return _composite(index, _bool(filters), sources, aggs, lambda docs: finish(_buckets(docs)), client=True)


def _k(b: dict, *names: str) -> tuple:
    return tuple(b["key"][n] for n in names)


def _tb(b: dict) -> int:
    return b["key"][T] * MS


def _avg(field_: str) -> dict:
    return {"avg": {"field": field_}}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _fleet(p: dict) -> list[dict]:
    return [{"term": {"fleet": p["fleet"]}}] if "fleet" in p else []


def _newest_type(index: str, fields: tuple[str, ...], keep: Callable[[dict, tuple], bool] | None = None):
    """last-loc, single-last-loc, low-fuel, high-load: the newest row of each (name, driver)
    among the rows passing the tag filters; `keep` tests that row (a NULL fails it)."""
    def render(dialect, p: dict) -> EsQuery:
        filters = _fleet(p) + ([{"terms": {"name": list(p["names"])}}] if "names" in p else [])

        def finish(buckets):
            out = []
            for b in buckets:
                h = _newest(b)
                if h is None:
                    continue
                vals = tuple(_field(h, f, "float") for f in fields)
                if keep is None or (None not in vals and keep(p, vals)):
                    out.append((hit_ns(h["fields"]["time"][0]), *_k(b, "name", "driver"), *vals))
            return out
        return _iot(index, filters, ("name", "driver"), {"top": _top_hits(list(fields))}, finish)
    return render


def _stationary(dialect, p: dict) -> EsQuery:
    def finish(buckets):
        return [(*_k(b, "name", "driver"), v) for b in buckets
                if (v := _metric(b, "v")) is not None and v < float(p["velocity_below"])]
    return _iot(R, [window(p["start"], p["end"])] + _fleet(p), ("name", "driver"), {"v": _avg("velocity")}, finish)


def _long_sessions(dialect, p: dict) -> EsQuery:
    def finish(buckets):
        n: dict[tuple, int] = defaultdict(int)
        for b in buckets:
            if (v := _metric(b, "v")) is not None and v > float(p["velocity_above"]):
                n[_k(b, "name", "driver")] += 1
        return [(*k, c) for k, c in n.items() if c > int(p["min_periods"])]
    return _iot(R, [window(p["start"], p["end"])] + _fleet(p), ("name", "driver"), {"v": _avg("velocity")},
                finish, bucket=True)


def _avg_vs_projected(dialect, p: dict) -> EsQuery:
    def finish(buckets):
        return [(b["key"]["fleet"], _metric(b, "f"), _metric(b, "n")) for b in buckets]
    filters = [window(p["start"], p["end"]), {"exists": {"field": "name"}},
               {"range": {"velocity": {"gt": float(p["velocity_above"])}}}]
    return _iot(R, filters, ("fleet",), {"f": _avg("fuel_consumption"), "n": _avg("nominal_fuel_consumption")},
                finish)


def _daily_driving_duration(dialect, p: dict) -> EsQuery:
    def finish(buckets):
        days: dict[tuple, int] = defaultdict(int)
        for b in buckets:
            if (v := _metric(b, "v")) is not None and v > float(p["velocity_above"]):
                days[(*_k(b, "fleet", "name", "driver"), _tb(b) // DAY)] += 1
        hours: dict[tuple, list[float]] = defaultdict(list)
        for (*truck, _), n in days.items():
            hours[tuple(truck)].append(n / 6)
        return [(*k, _mean(h)) for k, h in hours.items()]
    return _iot(R, [window(p["start"], p["end"])], ("fleet", "name", "driver"), {"v": _avg("velocity")}, finish,
                bucket=True)


def _daily_driving_session(dialect, p: dict) -> EsQuery:
    def finish(buckets):
        per: dict[str, list[tuple[int, bool]]] = defaultdict(list)
        for b in buckets:
            if _metric(b, "n"):                       # buckets with a velocity
                per[b["key"]["name"]].append((_tb(b), _metric(b, "v") > float(p["velocity_above"])))
        lengths: dict[tuple, list[float]] = defaultdict(list)
        for name, seq in per.items():
            seq.sort()
            changes = [(tb, drv) for (_, prev), (tb, drv) in pairwise(seq) if drv != prev]
            for (tb, drv), (stop, _) in pairwise(changes):
                if drv:
                    lengths[(tb // DAY * DAY, name)].append((stop - tb) / MINUTE)
        return [(dy, name, _mean(xs)) for (dy, name), xs in lengths.items()]
    return _iot(R, [window(p["start"], p["end"])], ("name",), {"v": _avg("velocity"),
                "n": {"value_count": {"field": "velocity"}}}, finish, bucket=True)


def _avg_load(dialect, p: dict) -> EsQuery:
    def finish(buckets):
        caps: dict[tuple, list[float]] = defaultdict(list)
        ratios: dict[tuple, list[float]] = defaultdict(list)
        for b in buckets:
            g, load, cap = _k(b, "fleet", "model"), _metric(b, "l"), _metric(b, "cap")
            caps.setdefault(g, [])
            if cap is not None:
                caps[g].append(cap)
            if cap and load is not None:
                ratios[g].append(load / cap)
        return [(*g, _mean(c), _mean(ratios.get(g, []))) for g, c in caps.items()]
    return _iot(D_, [window(p["start"], p["end"])], ("fleet", "model", "name"),
                {"l": _avg("current_load"), "cap": _avg("load_capacity")}, finish)


def _daily_activity(dialect, p: dict) -> EsQuery:
    def finish(buckets):
        n: dict[tuple, int] = defaultdict(int)
        for b in buckets:
            if (v := _metric(b, "v")) is not None and v < float(p["status_below"]):
                n[(_tb(b) // DAY * DAY, *_k(b, "fleet", "model"))] += 1
        return [(*k, c / 144) for k, c in n.items()]
    return _iot(D_, [window(p["start"], p["end"])], ("fleet", "model", "name"), {"v": _avg("status")}, finish,
                bucket=True)


def _breakdown_frequency(dialect, p: dict) -> EsQuery:
    # the zero statuses of a bucket by a range aggregation (doc values, no query on the
    # field: the aggregation template's unindexed fields allow it everywhere): >= 0 minus > 0
    zeros = {"range": {"field": "status", "keyed": True,
                       "ranges": [{"key": "ge", "from": 0.0}, {"key": "gt", "from": 5e-324}]}}

    def finish(buckets):
        per: dict[tuple, list[tuple[int, bool]]] = defaultdict(list)
        for b in buckets:
            if n := _metric(b, "n"):
                z = b["z"]["buckets"]
                nonzero = n - (z["ge"]["doc_count"] - z["gt"]["doc_count"])
                per[_k(b, "model", "name")].append((_tb(b), 2 * nonzero >= n))
        out: dict[str, int] = defaultdict(int)
        for (model, _), seq in per.items():
            seq.sort()
            out[model] += sum(1 for (_, prev), (_, now) in pairwise(seq) if now and not prev)
        return [(m, c) for m, c in out.items() if c]
    return _iot(D_, [window(p["start"], p["end"])], ("model", "name"),
                {"n": {"value_count": {"field": "status"}}, "z": zeros}, finish, bucket=True)


IOT = {
    "last-loc": _newest_type(R, ("longitude", "latitude")),
    "single-last-loc": _newest_type(R, ("longitude", "latitude")),
    "low-fuel": _newest_type(D_, ("fuel_state",), lambda p, v: v[0] < float(p["fuel_below"])),
    "high-load": _newest_type(D_, ("current_load", "load_capacity"),
                              lambda p, v: v[0] > float(p["load_above"]) * v[1]),
    "stationary-trucks": _stationary,
    "long-driving-sessions": _long_sessions,
    "long-daily-sessions": _long_sessions,
    "avg-vs-projected-fuel-consumption": _avg_vs_projected,
    "avg-daily-driving-duration": _daily_driving_duration,
    "avg-daily-driving-session": _daily_driving_session,
    "avg-load": _avg_load,
    "daily-activity": _daily_activity,
    "breakdown-frequency": _breakdown_frequency,
}


# ---- the dialect ------------------------------------------------------------------------------

class EsDsl(Dialect):
    """The query DSL of Elasticsearch 7.10+/8/9 and OpenSearch: every catalog type, each an
    EsQuery (requests, whether the client finishes it, how to read its answers)."""

    name = "dsl"
    custom = IOT

    def __init__(self, result_window: int = RESULT_WINDOW):
        self.result_window = result_window        # the indexes' index.max_result_window

    def aggregate(self, p: dict) -> EsQuery:
        return _aggregate(p)

    def rows(self, p: dict) -> EsQuery:
        return _rows(p, self.result_window)

    def last(self, p: dict) -> EsQuery:
        return _last(p)

    def client_finished(self, p: dict) -> bool:
        """Paged answers (composites, rows) and the iot types' client-side HAVINGs."""
        shape = shape_of(p)
        native = getattr(self, shape)(p) if shape in ("aggregate", "rows", "last") else self.render_custom(shape, p)
        return native.client
