"""What PromQL and MetricsQL share (phase 3 render, phase 5 read back): the basic
shapes as requests to the Prometheus query API (/api/v1/query and
/api/v1/query_range) whose answers have the exact meaning of the shape's SQL
(queries/shapes.py), and the reading of those JSON answers into canonical rows.
The languages' own dialects (victoriametrics/dialect.py: MetricsQL, prometheus/
dialect.py: PromQL) subclass PromRenderer; the targets (shared/promapi.py) send
the requests (phase 4).

One series per field and tag set: a measurement's field f is the metric
<measurement>_f, its tags are labels. Rows filtered on a field cannot be stated
exactly (see ROWS_WHERE), and no custom (iot) shape is implemented. What differs
between the languages is class data and a few hooks: a range window's ends
(closed_windows), how names are spelled (metric, label), how one expression per
field is labelled and joined (labelled, union), a filter on raw samples
(filtered_rollup)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tsbench.core.errors import Unsupported
from tsbench.queries.dialect import Dialect
from tsbench.queries.shapes import columns

MS = 10**6                          # ns per ms
FAR_FUTURE_S = 4102444800           # 2100-01-01: an end for "every series ever written"
MAX_POINTS = 10_000                 # evaluation points per query_range (the server refuses > 30,000)
FIELD_LABEL = "tsbench_field"       # the column number of each expression in a union

ROWS_WHERE = ("rows WHERE a field > x need a filter on raw samples; {lang} filters only evaluated points "
              "(a subquery resamples on a step grid, inexact when samples are off the grid or missing), and "
              "the other fields of a row are separate series")


# ---- literals ---------------------------------------------------------------------------------

def regex_quote(s: str) -> str:
    """A literal for RE2 (Go regexp), inside a double-quoted string."""
    lit = re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", s)
    return lit.replace("\\", "\\\\").replace('"', '\\"')


def _ms(ns: int) -> int:
    """The first millisecond at or after ns (the servers keep a ns stamp t as t // 1e6)."""
    return -(-int(ns) // MS)


def _dur(ms: int) -> str:
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def _num(x: float) -> str:
    return repr(float(x))


def _q(s: str) -> str:
    """A double-quoted string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _no_tag_values(p: dict) -> bool:
    """The query names tag values, none of them real: it matches no series."""
    return p.get("tag_values") is not None and not [v for v in p["tag_values"] if v is not None]


# ---- the native query -------------------------------------------------------------------------

@dataclass(frozen=True)
class PromRequest:
    path: str                     # /api/v1/query (instant) or /api/v1/query_range
    query: str
    time_s: int                   # instant: evaluation time; range: start (whole seconds)
    end_s: int = 0                # range only
    step_ms: int = 0              # range only: the bucket width
    bucket_ns: int | None = None  # instant aggregate: the bucket its answer belongs to
    shift_ms: int = 0             # range: evaluation time - bucket start
    first_ns: int = 0             # range: the buckets it answers
    last_ns: int = 0
    nocache: bool = True          # VictoriaMetrics: nocache=1 (off: its rollup result cache may answer)

    @property
    def is_range(self) -> bool:
        return self.path.endswith("query_range")

    def form(self) -> dict[str, str]:
        cache = {"nocache": "1"} if self.nocache else {}
        if self.is_range:
            return {"query": self.query, "start": str(self.time_s), "end": str(self.end_s),
                    "step": _dur(self.step_ms), **cache}
        return {"query": self.query, "time": str(self.time_s), **cache}

    def __str__(self) -> str:
        args = " ".join(f"{k}={v}" for k, v in self.form().items() if k != "query")
        return f"{self.path} {args}: {self.query}"


@dataclass(frozen=True, eq=False)
class PromQuery:
    """A rendered query: the requests (newest first) whose answers make the canonical rows."""

    shape: str                          # aggregate | rows | last
    requests: tuple[PromRequest, ...]
    has_time: bool
    group: tuple[str, ...]              # group columns (rows: tags_out)
    kinds: tuple[str, ...]              # value columns' kinds
    names: tuple[str, ...] = ()         # rows, aggregate: the metric of each value column
    limit: int | None = None            # aggregate: the newest `limit` rows; rows: the oldest
    fill_zero: bool = False             # count: a field without samples in a present row counts 0
    mean_parts: bool = False            # mean: each field's sum and count come apart (label rollup), the client divides

    @property
    def text(self) -> str:
        return "\n".join(str(r) for r in self.requests)

    @property
    def client(self) -> bool:
        """Whether the answer is computed on the client beyond decoding one response: a
        merge of several requests, a series' newest row from its fields' newest samples
        (last), a LIMIT the server cannot apply. Laying one response's per-field
        series side by side as the row's columns is decoding, after the timed pass: the
        server computed every value, and one series per field is how the server
        answers (TSBS's runner, too, stops at the last byte)."""
        return len(self.requests) > 1 or self.limit is not None or self.shape == "last" or self.mean_parts

    def __str__(self) -> str:
        return self.text


# ---- rendering --------------------------------------------------------------------------------

def _plain_agg(agg: str, by: str, win: str) -> str:
    """An aggregate of every sample in the window."""
    if agg in ("max", "min"):
        return f"{agg}{by}({agg}_over_time({win}))"
    if agg == "sum":
        return f"sum{by}(sum_over_time({win}))"
    if agg == "count":
        return f"sum{by}(count_over_time({win}))"
    # mean = sum of sums / sum of counts (an avg of per-series averages would weigh series alike)
    return f"sum{by}(sum_over_time({win})) / sum{by}(count_over_time({win}))"


def _metric_names(p: dict) -> tuple[str, ...]:
    return tuple(f"{p['measurement']}_{f}" for f in p["fields"])


def _one_selector(p: dict) -> bool:
    """Whether the fields' aggregates can come from one selector grouped by __name__: several
    distinct fields, one max, min, sum or count of every sample (a mean divides two rollups)."""
    fields = list(p["fields"])
    return (len(fields) > 1 and len(set(fields)) == len(fields) and p["agg"] in ("max", "min", "sum", "count")
            and not p.get("value_filter"))


class PromRenderer(Dialect):
    """The basic shapes in the Prometheus query API's languages; a subclass says its
    language's spelling (the hooks below) and adds its extras (MetricsQL: one selector
    grouped by __name__, filters on raw samples, the last shape).

    A mean is sum by (g)(sum_over_time) / sum by (g)(count_over_time), exact for any
    grouping (MetricsQL's docstring gives the figures of the other forms)."""

    language = ""               # the language's name as written (name is the dialect's key)
    server = ""                 # the server that speaks it
    closed_windows = False      # True: a range window [d] at t is [t-d, t] (Prometheus 2), else (t-d, t]
    one_selector = False        # several fields' max/min/sum/count by one selector grouped by __name__
    nocache = False             # requests ask VictoriaMetrics' nocache=1

    # ---- the language's spelling ----------------------------------------------------------
    def metric(self, name: str) -> str:
        """A metric name as the server keeps it."""
        return name

    def label(self, name: str) -> str:
        """A label name as the language writes it."""
        raise NotImplementedError

    def labelled(self, expr: str, value: str) -> str:
        """expr with the label FIELD_LABEL set to value on each of its series."""
        raise NotImplementedError

    def union(self, parts: list[str]) -> str:
        """The series of every expression in parts (their FIELD_LABEL values differ)."""
        raise NotImplementedError

    def filtered_rollup(self, agg: str, op: str, x: float, by: str, win: str) -> str:
        """An aggregate of the window's raw samples that are op x (but max > x and min < x)."""
        raise Unsupported(f"{self.name}: {agg} of the values {op} {x!r} needs a filter on raw samples, "
                          f"which {self.language} does not have")

    def window(self, n_ms: int) -> int:
        """The range [d] that covers n_ms milliseconds ending at t-o (closed windows: one less)."""
        d = n_ms - self.closed_windows
        if d <= 0:
            raise Unsupported(f"{self.name}: a window of {n_ms} ms (its range would be empty)")
        return d

    def series(self, p: dict, f: str | None, names: tuple[str, ...] = ()) -> str:
        """The series of measurement p['measurement'] field f (or any of the metric names),
        where p['tag'] is one of p['tag_values']."""
        if f is not None:
            parts = [f"__name__={_q(self.metric(p['measurement'] + '_' + f))}"]
        elif len(names) == 1:
            parts = [f"__name__={_q(self.metric(names[0]))}"]
        else:
            parts = [f'__name__=~"{"|".join(regex_quote(self.metric(n)) for n in names)}"']
        if p.get("tag_values") is not None:
            vals = [v for v in p["tag_values"] if v is not None]
            if len(vals) == 1:
                parts.append(f"{self.label(p['tag'])}={_q(vals[0])}")
            else:
                parts.append(f'{self.label(p["tag"])}=~"{"|".join(regex_quote(v) for v in vals)}"')
        return "{" + ",".join(parts) + "}"

    def metric_names(self, p: dict) -> tuple[str, ...]:
        return tuple(self.metric(n) for n in _metric_names(p))

    def _eval_point(self, end_ms: int) -> tuple[int, int]:
        """(evaluation time in whole seconds, offset in ms) whose window ends at end_ms, exclusive:
        a window [d] at t with `offset o` ends at t-o; t-o = end-1 makes it end at end-1 ms."""
        t_s = -(-(end_ms - 1) // 1000)
        return t_s, t_s * 1000 - (end_ms - 1)

    # aggregate: one expression per field, each labelled with its column number, in one union;
    # evaluated at every bucket end (query_range, step = bucket width), or once per partial
    # bucket and for a bucketless window (/api/v1/query).
    def aggregate(self, p: dict) -> PromQuery:
        vf = p.get("value_filter")
        if vf and list(p["fields"]) != [vf["field"]]:
            raise Unsupported(f"{self.name}: a value filter on a field other than the one aggregated "
                              f"needs rows, which {self.server} does not keep (one series per field)")
        if p.get("limit") and p.get("order") != "desc":
            raise Unsupported(f"{self.name}: LIMIT without ORDER BY time DESC has no defined answer")
        has_time, group, values = columns(p)
        lo, hi = _ms(p["start"]), _ms(p["end"])
        limit = int(p["limit"]) if p.get("limit") else None
        reqs = [] if hi <= lo or _no_tag_values(p) else self._agg_requests(p, lo, hi, limit)
        return PromQuery("aggregate", tuple(reqs), has_time, tuple(group), tuple(v.kind for v in values),
                         names=self.metric_names(p), limit=limit, fill_zero=p["agg"] == "count")

    def _agg_requests(self, p: dict, lo: int, hi: int, limit: int | None) -> list[PromRequest]:
        """The requests of the window [lo, hi) ms, newest first: a cut bucket (or a
        bucketless window) by an instant query, the whole buckets by query_range."""
        if p.get("bucket") is None:
            return [self._agg_instant(p, lo, hi, None)]
        if p["bucket"] % MS:
            raise Unsupported(f"{self.name}: buckets must be whole milliseconds")
        w = p["bucket"] // MS
        first_b, last_b = lo // w * w, (hi - 1) // w * w
        if first_b == last_b and (first_b < lo or first_b + w > hi):
            return [self._agg_instant(p, lo, hi, first_b)]
        reqs: list[PromRequest] = []
        if last_b + w > hi:                     # the newest bucket is cut by the window's end
            reqs.append(self._agg_instant(p, last_b, hi, last_b))
        reqs += self._agg_ranges(p, -(-lo // w) * w, hi // w * w - w, w, limit)
        if first_b < lo:                        # the oldest bucket is cut by the window's start
            reqs.append(self._agg_instant(p, lo, first_b + w, first_b))
        return reqs

    def _agg_ranges(self, p: dict, full_first: int, full_last: int, w: int,
                    limit: int | None) -> list[PromRequest]:
        """query_range requests for the whole buckets full_first..full_last (ms), newest
        first, of MAX_POINTS buckets each (with a limit: `limit`, then growing chunks)."""
        reqs: list[PromRequest] = []
        size = limit or MAX_POINTS
        top = full_last
        while top >= full_first:
            n = min(size, (top - full_first) // w + 1)
            b0 = top - (n - 1) * w
            t_s, o = self._eval_point(b0 + w)
            reqs.append(PromRequest("/api/v1/query_range", self._agg_union(p, self.window(w), o), t_s,
                                    end_s=-(-(t_s * 1000 + (n - 1) * w) // 1000), step_ms=w,
                                    shift_ms=t_s * 1000 - b0, first_ns=b0 * MS, last_ns=top * MS,
                                    nocache=self.nocache))
            top = b0 - w
            if limit:                           # newest first, in growing chunks
                size = min(size * 2, MAX_POINTS)
        return reqs

    def _agg_instant(self, p: dict, a_ms: int, b_ms: int, bucket_ms: int | None) -> PromRequest:
        t_s, o = self._eval_point(b_ms)
        return PromRequest("/api/v1/query", self._agg_union(p, self.window(b_ms - a_ms), o), t_s,
                           bucket_ns=None if bucket_ms is None else bucket_ms * MS, nocache=self.nocache)

    def _agg_union(self, p: dict, d_ms: int, o_ms: int) -> str:
        if _one_selector(p) and self.one_selector:
            return self._agg_by_name(p, d_ms, o_ms)
        parts = [self.labelled(self._agg_expr(p, f, d_ms, o_ms), str(i)) for i, f in enumerate(p["fields"])]
        return parts[0] if len(parts) == 1 else self.union(parts)

    def _agg_by_name(self, p: dict, d_ms: int, o_ms: int) -> str:
        raise NotImplementedError

    def _agg_expr(self, p: dict, f: str, d_ms: int, o_ms: int) -> str:
        """Field f's aggregate over the window [d] ending o ms before the evaluation time."""
        win = f"{self.series(p, f)}[{_dur(d_ms)}]" + (f" offset {_dur(o_ms)}" if o_ms else "")
        group = p.get("group_by") or []
        by = f" by ({', '.join(self.label(g) for g in group)})" if group else ""
        if not p.get("value_filter"):
            return self.plain_agg(p["agg"], by, win)
        return self._filtered_agg(p["agg"], p["value_filter"], by, win)

    def plain_agg(self, agg: str, by: str, win: str) -> str:
        return _plain_agg(agg, by, win)

    def _filtered_agg(self, agg: str, vf: dict, by: str, win: str) -> str:
        """An aggregate of the samples in the window that pass the value filter vf."""
        op, x = vf["op"], float(vf["value"])
        if agg == "max" and op in (">", ">="):
            # the max of the values > x is the max itself if it is > x, and no row otherwise
            return f"max{by}(max_over_time({win})) {op} {_num(x)}"
        if agg == "min" and op in ("<", "<="):
            return f"min{by}(min_over_time({win})) {op} {_num(x)}"
        if agg in ("max", "min"):
            raise Unsupported(f"{self.name}: {agg} of the values {op} {x!r} has no exact {self.language} form")
        return self.filtered_rollup(agg, op, x, by, win)

    # rows: the raw samples of the fields in [start, end) (an instant query of a range
    # selector returns raw samples), joined into rows per series and timestamp.
    def rows(self, p: dict) -> PromQuery:
        if p.get("value_filter"):
            raise Unsupported(f"{self.name}: " + ROWS_WHERE.format(lang=self.language))
        names = self.metric_names(p)
        lo, hi = _ms(p["start"]), _ms(p["end"])
        reqs = ()
        if hi > lo and not _no_tag_values(p):
            t_s, o = self._eval_point(hi)
            sel = self.series(p, None, _metric_names(p))
            reqs = (PromRequest("/api/v1/query", f"{sel}[{_dur(self.window(hi - lo))}]"
                                + (f" offset {_dur(o)}" if o else ""), t_s, nocache=self.nocache),)
        return PromQuery("rows", reqs, True, tuple(p.get("tags_out") or []), tuple(p["types"]), names=names,
                         limit=int(p["limit"]) if p.get("limit") else None)


# ---- reading the answers ----------------------------------------------------------------------

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


class AnswerRows:
    """Canonical rows from the JSON answers (data.result) of a PromQuery's requests, added
    in the order of its requests."""

    def __init__(self, q: PromQuery):
        self.q = q
        self.keys: dict[tuple, list] = {}       # aggregate: (bucket, group) -> values; rows: (ms, series) -> row
        self.last: dict[tuple, dict] = {}       # last: series -> its group, field times and values
        self.parts: dict[tuple, list] = {}      # mean_parts: (bucket, group) -> per field [sum, count]

    def add(self, req: PromRequest, result: list[dict]) -> None:
        if self.q.shape == "aggregate":
            self._add_aggregate(req, result)
        elif self.q.shape == "rows":
            self._add_rows(result)
        else:
            self._add_last(result)

    def rows(self) -> list[tuple]:
        if self.q.shape == "aggregate":
            return self._aggregate_rows()
        if self.q.shape == "rows":
            return self._rows_rows()
        return self._last_rows()

    def _add_aggregate(self, req: PromRequest, result: list[dict]) -> None:
        q = self.q
        index = {n: i for i, n in enumerate(q.names)}
        for s in result:
            m = s["metric"]
            i = int(m[FIELD_LABEL]) if FIELD_LABEL in m else index[m["__name__"]]
            g = tuple(m.get(x) for x in q.group)
            for t, v in ([s["value"]] if "value" in s else s["values"]):
                if req.is_range:
                    b = (_t_ms(t) - req.shift_ms) * MS
                    if not req.first_ns <= b <= req.last_ns:
                        continue
                else:
                    b = req.bucket_ns
                if q.mean_parts:
                    part = self.parts.setdefault((b, g), [[None, None] for _ in q.kinds])[i]
                    part[m.get("rollup") == "count_over_time"] = float(v)
                    continue
                val = _value(v, q.kinds[i])
                if val is not None:
                    self.keys.setdefault((b, g), [None] * len(q.kinds))[i] = val

    def _add_rows(self, result: list[dict]) -> None:
        q = self.q
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

    def _add_last(self, result: list[dict]) -> None:
        q = self.q
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

    def _means(self) -> None:
        """mean_parts: each (bucket, group)'s means, sum over count, where a field has samples."""
        for key, parts in self.parts.items():
            vals = [s / c if s is not None and c else None for s, c in parts]
            if any(v is not None for v in vals):
                self.keys[key] = vals

    def _aggregate_rows(self) -> list[tuple]:
        q = self.q
        if q.mean_parts:
            self._means()
        out = []
        for (b, g), vals in self.keys.items():
            if q.fill_zero:
                vals = [0 if v is None else v for v in vals]
            out.append(((b,) if q.has_time else ()) + g + tuple(vals))
        if q.limit:
            out.sort(key=lambda r: r[0], reverse=True)    # ties (groups of one bucket) as SQL: any
            out = out[:q.limit]
        return out

    def _rows_rows(self) -> list[tuple]:
        q = self.q
        out = [(ms * MS, *g, *vals) for (ms, _), (g, vals) in self.keys.items()]
        if q.limit:
            out.sort(key=lambda r: r[0])
            out = out[:q.limit]
        return out

    def _last_rows(self) -> list[tuple]:
        q = self.q
        best: dict[tuple, tuple] = {}
        for series, rec in sorted(self.last.items()):
            if not rec["t"]:
                continue
            t = max(rec["t"].values())
            vals = tuple(rec["v"].get(i) if rec["t"].get(i) == t else None for i in range(len(q.kinds)))
            if rec["g"] not in best or t > best[rec["g"]][0]:
                best[rec["g"]] = (t, vals)
        return [(t * MS, *g, *vals) for g, (t, vals) in best.items()]
