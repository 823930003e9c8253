"""phase 3 render / phase 4 client work: TSBS's thirteen iot types for both CQL
dialects (IOT, their `custom` renderers): each one a basic shape (aggregate, last
or rows) over one measurement, rendered by the dialect it is given, and client
work on its canonical rows. Imports only the base (dialects/base.py); dialects/series.py and
dialects/wide.py import IOT from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from tsbench.databases.cassandra.dialects.base import CqlPlan, _Cql
from tsbench.queries.base import DAY

# ---- iot: TSBS's types as a basic shape and client work on its rows ----------------------------
# Each iot type is an aggregate, last or rows query over one measurement (rows whose
# named tags are null left out: `not_null`), whose canonical rows the client turns
# into the type's answer (queries/iot.py states each meaning in SQL).

TEN_MIN = 10 * 60 * 10**9


@dataclass(frozen=True, eq=False)
class Then:
    """A reader followed by client work on its canonical rows."""

    reader: Callable[[list[list[tuple]]], list[tuple]]
    post: Callable[[list[tuple]], list[tuple]]

    def __call__(self, results: list[list[tuple]]) -> list[tuple]:
        return self.post(self.reader(results))


def _inner(d: _Cql, shape: str, m: str, fields: Sequence[str], post, **kw) -> CqlPlan:
    p = {"shape": shape, "measurement": m, "fields": list(fields), "types": [d.field_type(m, f) for f in fields],
         "tag": None, "tag_values": None, **kw}
    if shape == "aggregate":
        p.setdefault("bucket", None)
    plan = getattr(d, shape)(p)
    return CqlPlan(plan.statements, Then(plan.reader, post))


def _fleet(p: dict) -> dict:
    return {"tag": "fleet", "tag_values": [p["fleet"]]} if "fleet" in p else {"tag": "name", "tag_values": p["names"]}


def _newest(fields: tuple[str, ...], m: str = "readings", keep=None):
    def render(d: _Cql, p: dict) -> CqlPlan:
        post = (lambda rows: rows) if keep is None else (lambda rows: [r for r in rows if keep(p, r[3:])])
        return _inner(d, "last", m, fields, post, group_by=["name", "driver"], not_null=["name", "driver"],
                      **_fleet(p))
    return render


def _low_fuel(p: dict, v: tuple) -> bool:
    return v[0] is not None and v[0] < float(p["fuel_below"])


def _high_load(p: dict, v: tuple) -> bool:
    return v[0] is not None and v[1] is not None and v[0] > float(p["load_above"]) * v[1]


def _velocity(d: _Cql, p: dict, bucket, group: list[str], post, **kw) -> CqlPlan:
    """Mean velocity of the readings in [start, end) per bucket and group (tags not null)."""
    return _inner(d, "aggregate", "readings", ["velocity"], post, agg="mean", start=p["start"], end=p["end"],
                  bucket=bucket, group_by=group, not_null=list(kw.pop("not_null", group)), **kw)


def _stationary(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        return [r for r in rows if r[2] is not None and r[2] < float(p["velocity_below"])]
    return _velocity(d, p, None, ["name", "driver"], post, **_fleet(p))


def _long_sessions(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        n: dict[tuple, int] = {}
        for _, nm, dr, v in rows:
            if v is not None and v > float(p["velocity_above"]):
                n[nm, dr] = n.get((nm, dr), 0) + 1
        return [(nm, dr, k) for (nm, dr), k in n.items() if k > int(p["min_periods"])]
    return _velocity(d, p, TEN_MIN, ["name", "driver"], post, **_fleet(p))


def _driving_duration(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        days: dict[tuple, dict[int, int]] = {}
        for b, fl, nm, dr, v in rows:
            if v is not None and v > float(p["velocity_above"]):
                per = days.setdefault((fl, nm, dr), {})
                per[b // DAY] = per.get(b // DAY, 0) + 1
        return [(*k, sum(n / 6 for n in per.values()) / len(per)) for k, per in days.items()]
    return _velocity(d, p, TEN_MIN, ["fleet", "name", "driver"], post)


def _driving_session(d: _Cql, p: dict) -> CqlPlan:
    """Sessions: a bucket that drives after one that did not, to the next change."""
    def post(rows):
        by: dict[str, list[tuple[int, bool]]] = {}
        for b, nm, v in sorted(rows, key=lambda r: (r[1], r[0])):
            if v is not None:
                by.setdefault(nm, []).append((b, v > float(p["velocity_above"])))
        lengths: dict[tuple, list[float]] = {}
        for nm, buckets in by.items():
            changes = [(b, drv) for (b, drv), (_, prev) in zip(buckets[1:], buckets) if drv != prev]
            for (b, drv), (stop, _) in zip(changes, changes[1:]):
                if drv:
                    lengths.setdefault((b // DAY * DAY, nm), []).append((stop - b) / 60e9)
        return [(dy, nm, sum(x) / len(x)) for (dy, nm), x in lengths.items()]
    return _velocity(d, p, TEN_MIN, ["name"], post)


def _fuel(d: _Cql, p: dict) -> CqlPlan:
    return _inner(d, "aggregate", "readings", ["fuel_consumption", "nominal_fuel_consumption"], lambda rows: rows,
                  agg="mean", start=p["start"], end=p["end"], group_by=["fleet"], not_null=["name", "fleet"],
                  value_filter={"field": "velocity", "op": ">", "value": float(p["velocity_above"])})


def _avg_load(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        by: dict[tuple, tuple[list, list]] = {}
        for fl, md, _, load, cap in rows:
            caps, ratios = by.setdefault((fl, md), ([], []))
            if cap is not None:
                caps.append(cap)
                if load is not None and cap != 0:
                    ratios.append(load / cap)
        mean = lambda x: sum(x) / len(x) if x else None      # noqa: E731
        return [(fl, md, mean(c), mean(r)) for (fl, md), (c, r) in by.items()]
    return _inner(d, "aggregate", "diagnostics", ["current_load", "load_capacity"], post, agg="mean",
                  start=p["start"], end=p["end"], group_by=["fleet", "model", "name"],
                  not_null=["fleet", "model", "name"])


def _daily_activity(d: _Cql, p: dict) -> CqlPlan:
    def post(rows):
        n: dict[tuple, int] = {}
        for b, fl, md, _, v in rows:
            if v is not None and v < float(p["status_below"]):
                k = (b // DAY * DAY, fl, md)
                n[k] = n.get(k, 0) + 1
        return [(*k, c / 144) for k, c in n.items()]
    return _inner(d, "aggregate", "diagnostics", ["status"], post, agg="mean", start=p["start"], end=p["end"],
                  bucket=TEN_MIN, group_by=["fleet", "model", "name"], not_null=["fleet", "model", "name"])


def _breakdowns(d: _Cql, p: dict) -> CqlPlan:
    """Per truck and bucket: broken when at least half its statuses are non-zero; a
    breakdown is a broken bucket right after one that was not."""
    def post(rows):
        per: dict[tuple, list[int]] = {}            # (model, name, bucket) -> [non-zero, count]
        for t, md, nm, st in rows:
            if st is not None:
                c = per.setdefault((md, nm, t // TEN_MIN * TEN_MIN), [0, 0])
                c[0] += st != 0
                c[1] += 1
        out: dict[str, int] = {}
        prev: dict[tuple, bool] = {}
        for (md, nm, _), (nz, c) in sorted(per.items()):
            broken = 2 * nz >= c
            if broken and prev.get((md, nm)) is False:
                out[md] = out.get(md, 0) + 1
            prev[md, nm] = broken
        return list(out.items())
    return _inner(d, "rows", "diagnostics", ["status"], post, start=p["start"], end=p["end"], value_filter=None,
                  tags_out=["model", "name"], not_null=["model", "name"])


IOT = {"last-loc": _newest(("longitude", "latitude")), "single-last-loc": _newest(("longitude", "latitude")),
       "low-fuel": _newest(("fuel_state",), "diagnostics", _low_fuel),
       "high-load": _newest(("current_load", "load_capacity"), "diagnostics", _high_load),
       "stationary-trucks": _stationary, "long-driving-sessions": _long_sessions,
       "long-daily-sessions": _long_sessions, "avg-vs-projected-fuel-consumption": _fuel,
       "avg-daily-driving-duration": _driving_duration, "avg-daily-driving-session": _driving_session,
       "avg-load": _avg_load, "daily-activity": _daily_activity, "breakdown-frequency": _breakdowns}
