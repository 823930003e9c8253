"""IoTDB's renderers of the iot types (phase 3; their meanings in queries/iot.py) on the
tree-model dialect (tree.py). Each is one request over the trucks' devices, a LAST or
an aggregate merged by the server per truck (GROUP BY LEVEL of the name, driver, ...
levels), whose answer the client finishes inside the latency (client_s): a condition
on the newest row kept, driving buckets counted per truck or day, means over trucks or
days, driving sessions. Groups with a null tag (a row without a name or driver) are
dropped, as the reference ignores those rows; a fleet filter fixes the fleet level's node.

Not run (EXCLUDED): avg-vs-projected-fuel-consumption and breakdown-frequency."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

from tsbench.queries.base import DAY, MINUTE

TEN_MIN = 10 * MINUTE

EXCLUDED = {
    "avg-vs-projected-fuel-consumption":
        "its per-fleet means leave out the rows without a name: IoTDB would answer per (fleet, name) and the "
        "client merge sums and counts, two aggregates of one field in one request, which this dialect does not say",
    "breakdown-frequency":
        "a bucket's share of non-zero statuses needs a count of a condition per bucket (tree-model SQL counts "
        "values; COUNT_IF counts runs of consecutive points)",
}


def _mean(xs: list) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _newest(measurement: str, fields: tuple[str, ...], keep=None):
    """The newest row of each truck (name, driver not null) of a fleet or of named trucks,
    kept if keep(its values) holds (a null fails every test)."""
    def render(d, p: dict):
        q = {"shape": "last", "measurement": measurement, "fields": list(fields), "types": ["float"] * len(fields),
             "group_by": ["name", "driver"], "tag": "name" if "names" in p else None,
             "tag_values": p.get("names"), "fix": ("fleet", p["fleet"]) if "fleet" in p else None}
        return replace(d.last(q), keep=keep(p) if keep else None, whole_groups=True)
    return render


def _below(param: str):
    def keep(p):
        x = float(p[param])
        return lambda v: v[0] is not None and v[0] < x
    return keep


def _high_load(p):
    x = float(p["load_above"])
    return lambda v: v[0] is not None and v[1] is not None and v[0] > x * v[1]


def _means(d, p: dict, measurement: str, fields: list[str], group: list[str], bucket: int | None, fix=None):
    """avg of fields per group (and bucket) over the query's window, merged by the server."""
    q = {"shape": "aggregate", "measurement": measurement, "agg": "mean", "fields": fields,
         "types": ["float"] * len(fields), "tag": None, "tag_values": None, "start": p["start"], "end": p["end"],
         "bucket": bucket, "group_by": group, "fix": fix}
    return replace(d.aggregate(q), whole_groups=True)


def _stationary(d, p: dict):
    below = float(p["velocity_below"])
    q = _means(d, p, "readings", ["velocity"], ["name", "driver"], None, ("fleet", p["fleet"]))
    return replace(q, keep=lambda v: v[0] is not None and v[0] < below)


def _long_sessions(d, p: dict):
    """Per truck of a fleet, its 10-minute buckets with mean velocity above the threshold,
    counted; trucks with more than min_periods kept."""
    above, least = float(p["velocity_above"]), int(p["min_periods"])

    def reduce(rows):                                  # (bucket, name, driver, avg velocity)
        n = Counter((r[1], r[2]) for r in rows if r[3] is not None and r[3] > above)
        return [(nm, dr, c) for (nm, dr), c in n.items() if c > least]
    q = _means(d, p, "readings", ["velocity"], ["name", "driver"], TEN_MIN, ("fleet", p["fleet"]))
    return replace(q, reduce=reduce)


def _daily_driving_duration(d, p: dict):
    above = float(p["velocity_above"])

    def reduce(rows):                                  # (bucket, fleet, name, driver, avg velocity)
        days = Counter((r[1], r[2], r[3], r[0] // DAY) for r in rows if r[4] is not None and r[4] > above)
        hours = defaultdict(list)
        for (fl, nm, dr, _), c in days.items():
            hours[fl, nm, dr].append(c / 6)
        return [(*k, _mean(v)) for k, v in hours.items()]
    return replace(_means(d, p, "readings", ["velocity"], ["fleet", "name", "driver"], TEN_MIN), reduce=reduce)


def _daily_driving_session(d, p: dict):
    """Per truck, its buckets with a velocity in time order; a session runs from a bucket that
    drives after one that did not to the next change; per UTC day of its start, the mean length."""
    above = float(p["velocity_above"])

    def reduce(rows):                                  # (bucket, name, avg velocity)
        per = defaultdict(list)
        for t, nm, v in rows:
            per[nm].append((t, v > above))
        out = defaultdict(list)
        for nm, seq in per.items():
            seq.sort()
            changes = [seq[i] for i in range(1, len(seq)) if seq[i][1] != seq[i - 1][1]]
            for (tb, driving), (stop, _) in zip(changes, changes[1:]):
                if driving:
                    out[tb // DAY * DAY, nm].append((stop - tb) / MINUTE)
        return [(dy, nm, _mean(v)) for (dy, nm), v in out.items()]
    return replace(_means(d, p, "readings", ["velocity"], ["name"], TEN_MIN), reduce=reduce)


def _avg_load(d, p: dict):
    def reduce(rows):                                  # (fleet, model, name, avg current_load, avg capacity)
        caps, ratios = defaultdict(list), defaultdict(list)
        for fl, md, _, load, cap in rows:
            caps[fl, md] += [cap] if cap is not None else []
            ratios[fl, md] += [load / cap] if load is not None and cap else []
        return [(fl, md, _mean(caps[fl, md]), _mean(ratios[fl, md])) for fl, md in caps]
    q = _means(d, p, "diagnostics", ["current_load", "load_capacity"], ["fleet", "model", "name"], None)
    return replace(q, reduce=reduce)


def _daily_activity(d, p: dict):
    below = float(p["status_below"])

    def reduce(rows):                                  # (bucket, fleet, model, name, avg status)
        n = Counter((r[0] // DAY * DAY, r[1], r[2]) for r in rows if r[4] is not None and r[4] < below)
        return [(dy, fl, md, c / 144) for (dy, fl, md), c in n.items()]
    return replace(_means(d, p, "diagnostics", ["status"], ["fleet", "model", "name"], TEN_MIN), reduce=reduce)


CUSTOM = {
    "last-loc": _newest("readings", ("longitude", "latitude")),
    "single-last-loc": _newest("readings", ("longitude", "latitude")),
    "low-fuel": _newest("diagnostics", ("fuel_state",), _below("fuel_below")),
    "high-load": _newest("diagnostics", ("current_load", "load_capacity"), _high_load),
    "stationary-trucks": _stationary,
    "long-driving-sessions": _long_sessions,
    "long-daily-sessions": _long_sessions,
    "avg-daily-driving-duration": _daily_driving_duration,
    "avg-daily-driving-session": _daily_driving_session,
    "avg-load": _avg_load,
    "daily-activity": _daily_activity,
}
