"""The OpenTSDB dialect (phase 3 render, phase 5 read back): the aggregate and
rows shapes as POSTs to /api/query (one, or up to three for a window cut inside
its buckets, below), whose JSON answers are turned into the canonical rows.
target.py sends them (phase 4).

A field f of measurement m is the metric `m.f` (points.py). Every sub-query
uses the `none` aggregator: OpenTSDB returns each series on its own, and the
client merges the series of a group. OpenTSDB's own cross-series aggregators
interpolate (a series without a point in a bucket gets a value made up from
its neighbours), which can change a max or a sum, so exact answers need the
merge (its time is part of the latency, client_s). Per series, the server
downsamples: `<bucket>-max|min|sum|count`, and a mean is the merged sums over
the merged counts (two sub-queries); a window without buckets is `0all-`.
Times are milliseconds (msResolution). OpenTSDB's window ends differ by request:
raw points and bucketed downsampling include the end, `0all` excludes it, and a
bucket that starts before the query's start is dropped whole; so a window
[start, end) cut inside its first or last bucket is asked as up to three
requests (the whole buckets, and each cut bucket by `0all`), as measured on 2.4.1.

Not run: filters on a field's value (OpenTSDB 2.4 filters series by tags only),
and the last shape (its /api/query/last finds a series' newest point by a
meta-data table or a backward scan hour by hour from now).

Other forms (benchmarks/dialects.py, `nox -s bench_dialects`): "server-aggregator",
the series of a group merged by OpenTSDB's own aggregator (max, min, sum; grouped
by `groupBy` filters) where tsbench asks `none` and merges on the client. Its
answers equal tsbench's only where every series has a point in every bucket (it
interpolates the others), so tsbench keeps the exact client merge (form_reasons);
tsbench's recorded at 0.86-1.52x of it (10 hosts x 6 h, busy machine)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tsbench.core.errors import Unsupported
from tsbench.databases.opentsdb.points import NAME_RE, metric
from tsbench.queries.catalog import CATALOG, TSBS_DEVOPS
from tsbench.queries.dialect import Dialect
from tsbench.queries.generic import ROWS_FILTERED
from tsbench.queries.shapes import columns

MS = 10**6                    # ns per ms
_NO_VALUE_FILTER = "OpenTSDB 2.4 filters series by their tags, never points by their value"
DOWNSAMPLE = {"max": ("max",), "min": ("min",), "sum": ("sum",), "count": ("count",), "mean": ("sum", "count")}


def _ms_ceil(ns: int) -> int:
    return -(-int(ns) // MS)


def _interval(ms: int) -> str:
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


@dataclass(frozen=True)
class TsdbRequest:
    """One /api/query body, what each of its sub-queries answers (its value column and
    role: the value itself, or a mean's sum or count), and for a `0all` piece of a
    bucketed window, the bucket (ms) its one value belongs to."""

    body: dict
    roles: tuple[tuple[int, str], ...]
    bucket_ms: int | None = None


@dataclass(frozen=True, eq=False)
class TsdbQuery:
    """A rendered query: its requests (none: it matches nothing) and its answer's columns."""

    shape: str                         # aggregate | rows
    requests: tuple[TsdbRequest, ...]
    has_time: bool
    group: tuple[str, ...]             # group columns (rows: tags_out)
    kinds: tuple[str, ...]             # value columns' kinds
    agg: str = ""
    limit: int | None = None           # aggregate: the newest buckets; rows: the oldest rows

    @property
    def client(self) -> bool:
        """Always: the series of a group are merged on the client (inside the latency)."""
        return True

    @property
    def text(self) -> str:
        return "\n".join(json.dumps(r.body, sort_keys=True) for r in self.requests) or "(matches nothing)"

    def __str__(self) -> str:
        return self.text


class TsdbApi(Dialect):
    """The aggregate and rows shapes as /api/query requests."""

    name = "opentsdb"
    excluded = {"high-cpu-all": _NO_VALUE_FILTER, "high-cpu-1": _NO_VALUE_FILTER,
                **{f"flux-sum{b}-{d}d": _NO_VALUE_FILTER for b in ("", "-by-tag") for d in (1, 4, 12)},
                **dict.fromkeys(ROWS_FILTERED, _NO_VALUE_FILTER)}

    def aggregate(self, p: dict) -> TsdbQuery:
        if p.get("value_filter"):
            raise Unsupported(f"opentsdb: {_NO_VALUE_FILTER}")
        if p.get("limit") and p.get("order") != "desc":
            raise Unsupported("opentsdb: LIMIT without ORDER BY time DESC has no defined answer")
        has_time, group, values = columns(p)
        if p.get("bucket") is not None and p["bucket"] % MS:
            raise Unsupported("opentsdb: buckets must be whole milliseconds")
        roles = tuple((i, ds) for i in range(len(p["fields"])) for ds in DOWNSAMPLE[p["agg"]])
        lo, hi = _ms_ceil(p["start"]), _ms_ceil(p["end"])
        reqs = [] if hi <= lo or _matches_nothing(p) else self._pieces(p, roles, lo, hi)
        return TsdbQuery("aggregate", tuple(reqs), has_time, tuple(group), tuple(v.kind for v in values),
                         p["agg"], int(p["limit"]) if p.get("limit") else None)

    def _pieces(self, p: dict, roles, lo: int, hi: int) -> list[TsdbRequest]:
        """The window [lo, hi) ms: whole buckets by one downsampled request (OpenTSDB drops a
        bucket that starts before the query's start, and its end is inclusive there); a cut
        first or last bucket, or a window without buckets, by `0all` (whose end is exclusive)."""
        def whole(a: int, b: int, every: str, bucket: int | None) -> TsdbRequest:
            subs = [self._sub(p, p["fields"][i], f"{every}-{ds}") for i, ds in roles]
            return TsdbRequest(_body(a, b, subs), roles, bucket)
        if p.get("bucket") is None:
            return [whole(lo, hi, "0all", None)]
        w = p["bucket"] // MS
        first, last = -(-lo // w) * w, hi // w * w          # whole buckets: [first, last)
        if last <= first:                                   # one bucket, cut
            return [whole(lo, hi, "0all", lo // w * w)]
        out = [whole(first, last - 1, _interval(w), None)]
        if lo < first:
            out.append(whole(lo, first, "0all", lo // w * w))
        if last < hi:
            out.append(whole(last, hi, "0all", last))
        return out

    def rows(self, p: dict) -> TsdbQuery:
        if p.get("value_filter"):
            raise Unsupported(f"opentsdb: {_NO_VALUE_FILTER}")
        _, group, values = columns(p)
        roles = tuple((i, "") for i in range(len(p["fields"])))
        lo, hi = _ms_ceil(p["start"]), _ms_ceil(p["end"]) - 1     # raw points: the end is inclusive
        reqs = [] if hi < lo or _matches_nothing(p) else \
            [TsdbRequest(_body(lo, hi, [self._sub(p, f, None) for f in p["fields"]]), roles)]
        return TsdbQuery("rows", tuple(reqs), True, tuple(group), tuple(v.kind for v in values),
                         limit=int(p["limit"]) if p.get("limit") else None)

    def _sub(self, p: dict, field: str, downsample: str | None) -> dict:
        sub: dict = {"metric": metric(p["measurement"], field), "aggregator": "none"}
        if downsample:
            sub["downsample"] = downsample
        if p.get("tag_values") is not None:
            vals = [v for v in p["tag_values"] if v is not None]
            bad = [v for v in vals if not NAME_RE.match(v)]
            if bad:
                raise Unsupported(f"opentsdb: tag value {bad[0]!r} cannot be stored or named in OpenTSDB")
            sub["filters"] = [{"type": "literal_or", "tagk": p["tag"], "filter": "|".join(vals), "groupBy": False}]
        return sub


def _server_aggregator(d: TsdbApi, p: dict) -> TsdbQuery:
    """tsbench's requests with each sub-query's series merged by the server: the aggregator
    of its role (a count's counts are summed), grouped by a `groupBy` filter per group tag."""
    q = d.aggregate(p)
    by = [{"type": "wildcard", "tagk": g, "filter": "*", "groupBy": True} for g in q.group]

    def sub(x: dict, role: str) -> dict:
        merger = "sum" if role == "count" else role
        return {**x, "aggregator": merger, "filters": [*x.get("filters", []), *by]}
    reqs = tuple(TsdbRequest({**r.body, "queries": [sub(x, role) for x, (_, role) in zip(r.body["queries"], r.roles)]},
                             r.roles, r.bucket_ms) for r in q.requests)
    return TsdbQuery(q.shape, reqs, q.has_time, q.group, q.kinds, q.agg, q.limit)


_AGGREGATES = tuple(n for n in TSBS_DEVOPS if CATALOG[n].shape == "aggregate")
TsdbApi.forms = {n: {"server-aggregator": _server_aggregator} for n in _AGGREGATES}
TsdbApi.form_reasons = {n: "OpenTSDB's aggregators interpolate a series lacking a point in a bucket (a value made "
                           "up from its neighbours), so their merge is exact only where every series has a point "
                           "in every bucket; tsbench's client merge is exact (tsbench's measured at 0.86-1.52x of it)"
                        for n in _AGGREGATES}


def _matches_nothing(p: dict) -> bool:
    """The query names tag values, none of them real."""
    return p.get("tag_values") is not None and not [v for v in p["tag_values"] if v is not None]


def _body(start_ms: int, end_ms: int, subs: list[dict]) -> dict:
    return {"start": start_ms, "end": end_ms, "msResolution": True, "showQuery": True, "queries": subs}


# ---- reading the answer ---------------------------------------------------------------------

def _value(v, kind: str):
    if v is None:
        return None
    return int(v) if kind == "int" else float(v)


class AnswerRows:
    """Canonical rows from the series of a query's /api/query answers (each a JSON list of
    series, each with its sub-query's index, its tags and its dps {ms: value}), added in turn."""

    def __init__(self, q: TsdbQuery):
        self.q = q
        self.cells: dict[tuple, dict] = {}    # aggregate: (bucket ms | None, group) -> {(column, role): merged}
        self.keyed: dict[tuple, list] = {}    # rows: (ms, series tags) -> [group values, field values]

    def add(self, req: TsdbRequest, series: list[dict]) -> None:
        if self.q.shape == "aggregate":
            self._add_aggregate(req, series)
        else:
            self._add_rows(req, series)

    def _add_aggregate(self, req: TsdbRequest, series: list[dict]) -> None:
        q = self.q
        for s in series:
            col, role = req.roles[s["query"]["index"]]
            g = tuple(s["tags"].get(x) for x in q.group)
            for t, v in s["dps"].items():
                b = (req.bucket_ms if req.bucket_ms is not None else int(t)) if q.has_time else None
                cell = self.cells.setdefault((b, g), {})
                cell[col, role] = v if (col, role) not in cell else _merge(role, cell[col, role], v)

    def _add_rows(self, req: TsdbRequest, series: list[dict]) -> None:
        q = self.q
        for s in series:
            col, _ = req.roles[s["query"]["index"]]
            tags = tuple(sorted(s["tags"].items()))
            g = tuple(s["tags"].get(x) for x in q.group)
            for t, v in s["dps"].items():
                row = self.keyed.setdefault((int(t), tags), [g, [None] * len(q.kinds)])
                row[1][col] = _value(v, q.kinds[col])

    def rows(self) -> list[tuple]:
        q = self.q
        if q.shape == "rows":
            out = [(ms * MS, *g, *vals) for (ms, _), (g, vals) in self.keyed.items()]
            if q.limit:
                out.sort(key=lambda r: r[0])
                out = out[:q.limit]
            return out
        out = []
        for (b, g), cell in self.cells.items():
            vals = tuple(_final(q.agg, cell, i, q.kinds[i]) for i in range(len(q.kinds)))
            out.append(((b * MS,) if q.has_time else ()) + g + vals)
        if q.limit:
            out.sort(key=lambda r: r[0], reverse=True)     # ties (groups of one bucket) as SQL: any
            out = out[:q.limit]
        return out


def _merge(role: str, a, b):
    if role == "max":
        return max(a, b)
    if role == "min":
        return min(a, b)
    return a + b                             # sum, count


def _final(agg: str, cell: dict, i: int, kind: str):
    if agg == "mean":
        n = cell.get((i, "count"))
        return float(cell[i, "sum"]) / n if n else None
    v = cell.get((i, DOWNSAMPLE[agg][0]))
    if agg == "count":
        return int(v or 0)
    return _value(v, kind)
