"""The iot query types (queries/iot.py) in InfluxQL (phases 3 and 5): IOT maps
each type (a custom shape of its own) to (render, rows). render(p) spells the
query (phase 3); rows(p, results) turns InfluxDB's answer (the "results" list
of the /query JSON, errors already raised) into the canonical rows of
queries/iot.py's columns(p), computing the SQL meaning exactly (phase 5).
influxql.py makes IOT the InfluxQL dialect's custom shapes. InfluxQL has no
HAVING, window functions or per-truck-then-per-group averages, so where the SQL
does more than one aggregation level, InfluxDB answers the innermost level (raw
newest rows, or per-bucket / per-truck aggregates with exact sums and counts)
and rows() does the rest client-side, as written per type below.

NULLs: InfluxDB stores none. A NULL field is an absent field (aggregates skip it,
a WHERE condition on it fails, as in SQL); a NULL tag is an absent tag, i.e. the
point lives in another series, and GROUP BY that tag reports it as "" (or no
key). The SQL ignores rows whose grouped / filtered tags are NULL, so rows()
drops every group whose tag is ""/missing, and tag equality filters (fleet =
'East') never match an absent tag. GROUP BY <tags> merges all series that share
those tags (e.g. a truck's series with and without a device_version), as SQL's
GROUP BY does.

All 13 types run in InfluxQL; none in Flux (not needed here).
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from itertools import pairwise

from tsbench.databases.influx.dialects.literals import ident, number, ql_str
from tsbench.queries.base import DAY, MINUTE

TEN_MIN = 10 * MINUTE
R, D_ = '"readings"', '"diagnostics"'


def _tag(tags: dict, key: str) -> str | None:
    v = (tags or {}).get(key)
    return None if v is None or v == "" else str(v)


def _series(results: list[dict], k: int = 0) -> list[dict]:
    """The series of statement k's result."""
    if k >= len(results):
        return []
    return results[k].get("series") or []


def _window(p: dict) -> str:
    return f"time >= {int(p['start'])} AND time < {int(p['end'])}"


def _fleet(p: dict) -> str:
    return f"{ident('fleet')} = {ql_str(p['fleet'])}"


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _f(v):
    return None if v is None else float(v)


def _grouped(results: list[dict], keys: tuple[str, ...], k: int = 0):
    """(tag values, time, [values...]) of every row of statement k, groups with an
    absent tag among `keys` dropped (the SQL ignores rows with NULL tags)."""
    for s in _series(results, k):
        g = tuple(_tag(s.get("tags"), t) for t in keys)
        if None in g:
            continue
        for row in s.get("values") or []:
            yield g, int(row[0]), row[1:]


# ---- newest row per truck: last-loc, single-last-loc, low-fuel, high-load ---------------------
#
# SELECT * (not the wanted fields: a raw SELECT of some fields skips points where all of
# them are absent, yet the SQL's newest row is the newest row whatever its NULLs) per
# (name, driver), ORDER BY time DESC LIMIT 1: the newest point of each truck among the
# points passing the tag filter. The test on that row (low-fuel, high-load) is done
# client-side with SQL's semantics (a NULL fails it; the same double arithmetic).

def _newest_render(measurement: str, p: dict) -> str:
    conds = []
    if "names" in p:
        conds.append("(" + " OR ".join(f"{ident('name')} = {ql_str(n)}" for n in p["names"]) + ")")
    if "fleet" in p:
        conds.append(_fleet(p))
    where = f" WHERE {' AND '.join(conds)}" if conds else ""
    return (f"SELECT * FROM {measurement}{where} GROUP BY {ident('name')}, {ident('driver')} "
            f"ORDER BY time DESC LIMIT 1")


def _newest_rows(fields: tuple[str, ...], keep, p: dict, results: list[dict]) -> list[tuple]:
    out = []
    for s in _series(results):
        tags = s.get("tags") or {}
        name, driver = _tag(tags, "name"), _tag(tags, "driver")
        if name is None or driver is None:
            continue
        cols = s["columns"]
        for row in s.get("values") or []:
            rec = dict(zip(cols, row))
            vals = tuple(_f(rec.get(f)) for f in fields)
            if keep(p, vals):
                out.append((int(rec["time"]), name, driver, *vals))
    return out


def _keep_all(p, vals):
    return True


def _keep_low_fuel(p, vals):
    (fuel,) = vals
    return fuel is not None and fuel < float(p["fuel_below"])


def _keep_high_load(p, vals):
    load, cap = vals
    return load is not None and cap is not None and load > float(p["load_above"]) * cap


def _newest(measurement: str, fields: tuple[str, ...], keep) -> tuple:
    """(render, rows) of a newest-row-per-truck type."""
    return partial(_newest_render, measurement), partial(_newest_rows, fields, keep)


# ---- stationary-trucks: mean velocity per truck in the window; HAVING client-side -------------

def _stationary_render(p: dict) -> str:
    return (f"SELECT mean({ident('velocity')}) FROM {R} WHERE {_window(p)} AND {_fleet(p)} "
            f"GROUP BY {ident('name')}, {ident('driver')}")


def _stationary_rows(p: dict, results: list[dict]) -> list[tuple]:
    out = []
    for g, _, vals in _grouped(results, ("name", "driver")):
        m = _f(vals[0])
        if m is not None and m < float(p["velocity_below"]):
            out.append((*g, m))
    return out


# ---- long-driving-sessions / long-daily-sessions ----------------------------------------------
# Mean velocity per truck and 10-minute bucket (fill(none): buckets without a velocity are
# absent, as SQL's avg of nothing is NULL and fails > v); the driving buckets counted per
# truck and the count tested client-side.

def _long_render(p: dict) -> str:
    return (f"SELECT mean({ident('velocity')}) FROM {R} WHERE {_window(p)} AND {_fleet(p)} "
            f"GROUP BY time(10m), {ident('name')}, {ident('driver')} fill(none)")


def _long_rows(p: dict, results: list[dict]) -> list[tuple]:
    n: dict[tuple, int] = defaultdict(int)
    for g, _, vals in _grouped(results, ("name", "driver")):
        m = _f(vals[0])
        if m is not None and m > float(p["velocity_above"]):
            n[g] += 1
    return [(*g, c) for g, c in n.items() if c > int(p["min_periods"])]


# ---- avg-vs-projected-fuel-consumption ----------------------------------------------------------
# Sums and counts per (fleet, name) over the rows with velocity > v (an absent velocity fails
# the WHERE, as NULL does in SQL), combined per fleet over the named trucks: the exact mean.

def _avp_render(p: dict) -> str:
    fc, nfc = ident("fuel_consumption"), ident("nominal_fuel_consumption")
    return (f"SELECT sum({fc}), count({fc}), sum({nfc}), count({nfc}) FROM {R} WHERE {_window(p)} "
            f"AND {ident('velocity')} > {number(p['velocity_above'])} "
            f"GROUP BY {ident('fleet')}, {ident('name')}")


def _avp_rows(p: dict, results: list[dict]) -> list[tuple]:
    acc: dict[str, list] = {}
    for (fleet, _), _, vals in _grouped(results, ("fleet", "name")):
        a = acc.setdefault(fleet, [0.0, 0, 0.0, 0])
        for j, v in enumerate(vals[:4]):
            if v is not None:
                a[j] += v
    return [(fleet, a[0] / a[1] if a[1] else None, a[2] / a[3] if a[3] else None) for fleet, a in acc.items()]


# ---- avg-daily-driving-duration -----------------------------------------------------------------
# Mean velocity per truck (fleet, name, driver) and 10-minute bucket; client-side: driving
# buckets counted per UTC day, / 6, averaged over the days with any.

def _dur_render(p: dict) -> str:
    return (f"SELECT mean({ident('velocity')}) FROM {R} WHERE {_window(p)} "
            f"GROUP BY time(10m), {ident('fleet')}, {ident('name')}, {ident('driver')} fill(none)")


def _dur_rows(p: dict, results: list[dict]) -> list[tuple]:
    days: dict[tuple, int] = defaultdict(int)
    for g, tb, vals in _grouped(results, ("fleet", "name", "driver")):
        m = _f(vals[0])
        if m is not None and m > float(p["velocity_above"]):
            days[g, tb // DAY] += 1
    per: dict[tuple, list] = defaultdict(list)
    for (g, _), c in days.items():
        per[g].append(c / 6)
    return [(*g, sum(v) / len(v)) for g, v in per.items()]


# ---- avg-daily-driving-session ------------------------------------------------------------------
# Mean velocity per truck (name only) and 10-minute bucket, buckets without a velocity absent
# (fill(none) = SQL's HAVING count(velocity) > 0); client-side, per truck in time order: the
# buckets where driving (mean > v) changes from the bucket before (the first bucket never
# counts as a change), each change's next change is its stop; a session is a change to
# driving that has a stop; its length (stop - start) in minutes averaged per (day of start, name).

def _session_render(p: dict) -> str:
    return (f"SELECT mean({ident('velocity')}) FROM {R} WHERE {_window(p)} "
            f"GROUP BY time(10m), {ident('name')} fill(none)")


def _session_rows(p: dict, results: list[dict]) -> list[tuple]:
    seq: dict[str, dict[int, bool]] = defaultdict(dict)
    for (name,), tb, vals in _grouped(results, ("name",)):
        m = _f(vals[0])
        if m is not None:
            seq[name][tb] = m > float(p["velocity_above"])
    out: dict[tuple, list] = defaultdict(list)
    for name, by_t in seq.items():
        xs = sorted(by_t.items())
        changes = [xs[i] for i in range(1, len(xs)) if xs[i][1] != xs[i - 1][1]]
        for (tb, driving), nxt in pairwise(changes):
            if driving:
                out[tb // DAY * DAY, name].append((nxt[0] - tb) / MINUTE)
    return [(dy, name, sum(v) / len(v)) for (dy, name), v in out.items()]


# ---- avg-load -----------------------------------------------------------------------------------
# Per truck (fleet, model, name): mean current_load and mean load_capacity; client-side per
# (fleet, model): the mean of the capacities and of load / capacity over the trucks that have
# them (SQL's avg skips NULLs; NULLIF(cap, 0) makes a zero capacity a NULL ratio).

def _load_render(p: dict) -> str:
    return (f"SELECT mean({ident('current_load')}), mean({ident('load_capacity')}) FROM {D_} "
            f"WHERE {_window(p)} GROUP BY {ident('fleet')}, {ident('model')}, {ident('name')}")


def _load_rows(p: dict, results: list[dict]) -> list[tuple]:
    per: dict[tuple, list] = defaultdict(list)
    for (fleet, model, _), _, vals in _grouped(results, ("fleet", "model", "name")):
        load, cap = _f(vals[0]), _f(vals[1])
        per[fleet, model].append((cap, None if load is None or cap is None or cap == 0 else load / cap))
    return [(*g, _mean([c for c, _ in v]), _mean([r for _, r in v])) for g, v in per.items()]


# ---- daily-activity -----------------------------------------------------------------------------
# Mean status per truck (fleet, model, name) and 10-minute bucket; client-side: the buckets
# with mean < s counted per (UTC day, fleet, model), / 144.

def _activity_render(p: dict) -> str:
    return (f"SELECT mean({ident('status')}) FROM {D_} WHERE {_window(p)} "
            f"GROUP BY time(10m), {ident('fleet')}, {ident('model')}, {ident('name')} fill(none)")


def _activity_rows(p: dict, results: list[dict]) -> list[tuple]:
    n: dict[tuple, int] = defaultdict(int)
    for (fleet, model, _), tb, vals in _grouped(results, ("fleet", "model", "name")):
        m = _f(vals[0])
        if m is not None and m < float(p["status_below"]):
            n[tb // DAY * DAY, fleet, model] += 1
    return [(*k, c / 144) for k, c in n.items()]


# ---- breakdown-frequency ------------------------------------------------------------------------
# Two statements per truck (model, name) and 10-minute bucket: the count of statuses and the
# count of non-zero statuses. Client-side: buckets with a status, broken when 2 * non-zero >=
# all, in time order per truck; a breakdown is a broken bucket right after one not broken.

def _breakdown_render(p: dict) -> str:
    st = ident("status")
    grp = f"GROUP BY time(10m), {ident('model')}, {ident('name')} fill(none)"
    return (f"SELECT count({st}) FROM {D_} WHERE {_window(p)} {grp}; "
            f"SELECT count({st}) FROM {D_} WHERE {_window(p)} AND {st} != 0 {grp}")


def _breakdown_rows(p: dict, results: list[dict]) -> list[tuple]:
    total = {(g, tb): int(v[0]) for g, tb, v in _grouped(results, ("model", "name"), 0) if v[0]}
    nonzero = {(g, tb): int(v[0]) for g, tb, v in _grouped(results, ("model", "name"), 1) if v[0]}
    seq: dict[tuple, list] = defaultdict(list)
    for (g, tb), n in sorted(total.items()):
        seq[g].append(2 * nonzero.get((g, tb), 0) >= n)
    count: dict[str, int] = defaultdict(int)
    for (model, _), xs in seq.items():
        count[model] += sum(1 for i in range(1, len(xs)) if xs[i] and not xs[i - 1])
    return [(m, c) for m, c in count.items() if c]


# ---- the table influxql.py reads ----------------------------------------------------------------

IOT = {
    "last-loc": _newest(R, ("longitude", "latitude"), _keep_all),
    "single-last-loc": _newest(R, ("longitude", "latitude"), _keep_all),
    "low-fuel": _newest(D_, ("fuel_state",), _keep_low_fuel),
    "high-load": _newest(D_, ("current_load", "load_capacity"), _keep_high_load),
    "stationary-trucks": (_stationary_render, _stationary_rows),
    "long-driving-sessions": (_long_render, _long_rows),
    "long-daily-sessions": (_long_render, _long_rows),
    "avg-vs-projected-fuel-consumption": (_avp_render, _avp_rows),
    "avg-daily-driving-duration": (_dur_render, _dur_rows),
    "avg-daily-driving-session": (_session_render, _session_rows),
    "avg-load": (_load_render, _load_rows),
    "daily-activity": (_activity_render, _activity_rows),
    "breakdown-frequency": (_breakdown_render, _breakdown_rows),
}
