"""The iot query types (TSBS's thirteen), each a custom shape: registered in
catalog.CATALOG and catalog.CUSTOM (columns and reference SQL per type).

Meanings follow TSBS's query generators (cmd/tsbs_generate_queries/databases/
timescaledb/iot.go and influx/iot.go). Where TSBS's dialects disagree, or one of
them computes something other than its own description says, the choice made
here is written in the type's docstring. Rules common to every type:

* Trucks are told apart by their `name` tag. Rows whose name is NULL are
  ignored, and so are rows with a NULL in any other tag the query filters or
  groups by (fleet, driver, model): each truck has one fleet, driver and model,
  so grouping by (name, driver) or (fleet, name, driver) is one group per truck.
* NULL fields are ignored by aggregates (avg, count of a field) as SQL does; a
  bucket whose aggregated field is NULL throughout has no value and counts as
  neither driving / active / broken down nor the opposite.
* "Newest row" types (last-loc, single-last-loc, low-fuel, high-load) take the
  newest row of each truck among the rows that pass the tag filters, then
  report (or test) that row's fields, NULL or not: a NULL fails every test.
* Time buckets are multiples of their width since the Unix epoch (10 minutes,
  UTC days), as TimescaleDB's time_bucket and InfluxQL's GROUP BY time() have
  them. Types over "all the data" carry the dataset's [start, end) explicitly.
* Times are epoch ns; thresholds are parameters of the drawn query (TSBS's
  values by default), so a query file says exactly what was asked.

Parameters (besides shape "custom" and type), for renderers of other dialects:
  last-loc            fleet
  single-last-loc     names (one truck name)
  low-fuel            fleet, fuel_below (0.1)
  high-load           fleet, load_above (0.9)
  stationary-trucks   fleet, start, end (10 min), velocity_below (1)
  long-driving-sessions / long-daily-sessions
                      fleet, start, end (4 h / 24 h, on a 10-minute boundary),
                      velocity_above (1), min_periods (22 / 60)
  avg-vs-projected-fuel-consumption, avg-daily-driving-duration
                      start, end (the dataset), velocity_above (1)
  avg-daily-driving-session   start, end, velocity_above (5)
  avg-load, breakdown-frequency   start, end
  daily-activity      start, end, status_below (1)
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:      # numpy's generator is only named in annotations (a target's dialects start without numpy)
    import numpy as np

from tsbench.data.usecases.iot import TRUCK_TAGS
from tsbench.queries.base import (
    DAY,
    MINUTE,
    DatasetContext,
    QueryType,
    SqlSpelling,
    Value,
    draw_entities,
    draw_window,
    lit,
    num,
)
from tsbench.queries.catalog import CATALOG, CUSTOM, register

TEN_MIN = 10 * MINUTE
FLEETS = next(t.parts[0].choices for t in TRUCK_TAGS if t.key == "fleet")
R, D_ = "readings", "diagnostics"          # the two measurements


def _num(x: float) -> str:
    """A double literal both engines read alike."""
    return f"CAST({num(x)} AS DOUBLE PRECISION)"


def _dbl(expr: str) -> str:
    return f"CAST({expr} AS DOUBLE PRECISION)"


def ten_minute_periods(minutes_rest_per_hour: int, duration_ns: int) -> int:
    """TSBS's tenMinutePeriods: the 10-minute periods left of a duration after
    resting the given minutes per hour (4 h, 5 min/h -> 22; 24 h, 35 min/h -> 60)."""
    minutes = duration_ns // MINUTE
    return int((minutes - minutes_rest_per_hour * duration_ns / (60 * MINUTE)) // 10)


def _fleet(rng: np.random.Generator) -> str:
    return str(FLEETS[int(rng.integers(0, len(FLEETS)))])


def _all(ctx: DatasetContext) -> dict:
    return {"start": ctx.start_ns, "end": ctx.end_ns}


class _Type:
    """One custom type: its name, the parameters it is drawn with (besides shape and
    type; a queries file must give exactly these), its columns and SQL."""

    name = ""
    params: tuple[str, ...] = ("start", "end")

    def columns(self, p: dict) -> tuple[bool, list[str], list[Value]]:
        raise NotImplementedError

    def sql(self, p: dict, d: SqlSpelling) -> str:
        raise NotImplementedError


def _not_null(d: SqlSpelling, m: str, *tags: str) -> list[str]:
    return [f"{d.tag(m, t)} IS NOT NULL" for t in tags]


# ---- newest row per truck ------------------------------------------------------------------

class _Newest(_Type):
    """The newest row of each truck (name, driver not NULL) among the rows of the
    measurement that pass the tag filter, optionally kept only if a condition on
    that row holds."""

    measurement = R
    fields: tuple[str, ...] = ()

    def columns(self, p):
        return True, ["name", "driver"], [Value(f, stored=True) for f in self.fields]

    def where(self, p: dict, d: SqlSpelling) -> list[str]:
        m = self.measurement
        conds = _not_null(d, m, "name", "driver")
        if "names" in p:
            conds.append(f"{d.tag(m, 'name')} IN ({', '.join(lit(x) for x in p['names'])})")
        if "fleet" in p:
            conds.append(f"{d.tag(m, 'fleet')} = {lit(p['fleet'])}")
        return conds

    def keep(self, p: dict) -> str | None:
        return None

    def sql(self, p, d):
        m = self.measurement
        nm, dr = d.tag(m, "name"), d.tag(m, "driver")
        sel = [f"{d.time_ns()} AS tm", f"{nm} AS nm", f"{dr} AS dr"] + \
              [f"{d.field(f)} AS {d.quote(f)}" for f in self.fields]
        inner = (f"SELECT DISTINCT ON ({nm}, {dr}) {', '.join(sel)} FROM {d.table(m)} "
                 f"WHERE {' AND '.join(self.where(p, d))} ORDER BY {nm}, {dr}, m.time DESC")
        cond = self.keep(p)
        out = ", ".join(["tm", "nm", "dr"] + [d.quote(f) for f in self.fields])
        return f"SELECT {out} FROM ({inner}) x" + (f" WHERE {cond}" if cond else "")


class LastLoc(_Newest):
    """last-loc (TSBS LastLocPerTruck): for one random fleet, every truck's
    newest readings row among its rows of that fleet: time, name, driver,
    longitude, latitude. Rows with a NULL name, driver or fleet are ignored
    (TimescaleDB's dialect answers per tag set, so a truck with a NULL-driver row
    would come twice; InfluxQL groups by name, driver; here: once per truck)."""

    name = "last-loc"
    params = ("fleet",)
    fields = ("longitude", "latitude")


class SingleLastLoc(_Newest):
    """single-last-loc (TSBS LastLocByTruck with 1 truck): the newest readings row
    of one random truck (rows with a NULL driver ignored), any fleet: time, name,
    driver, longitude, latitude."""

    name = "single-last-loc"
    params = ("names",)
    fields = ("longitude", "latitude")


class LowFuel(_Newest):
    """low-fuel (TSBS TrucksWithLowFuel, TimescaleDB's meaning): in one random
    fleet, the trucks whose newest diagnostics row has fuel_state < 0.1 (a NULL
    fuel_state is not low): time, name, driver, fuel_state of that row.
    InfluxQL's dialect instead answers each truck's newest row with
    fuel_state <= 0.1, however old: trucks that ever ran low, not trucks low now."""

    name = "low-fuel"
    params = ("fleet", "fuel_below")
    measurement = D_
    fields = ("fuel_state",)

    def keep(self, p):
        return f'"fuel_state" < {_num(p["fuel_below"])}'


class HighLoad(_Newest):
    """high-load (TSBS TrucksWithHighLoad): in one random fleet, the trucks whose
    newest diagnostics row has current_load > 0.9 * load_capacity (a NULL in
    either is not high): time, name, driver, current_load, load_capacity. (TSBS's
    dialects use > and >= on a continuous value: the same answers.)"""

    name = "high-load"
    params = ("fleet", "load_above")
    measurement = D_
    fields = ("current_load", "load_capacity")

    def keep(self, p):
        return f'"current_load" > {_num(p["load_above"])} * "load_capacity"'


# ---- per truck over a window ---------------------------------------------------------------

class Stationary(_Type):
    """stationary-trucks (TSBS StationaryTrucks, TimescaleDB's window): the trucks
    of one random fleet whose mean velocity over a random 10-minute window is
    < 1: name, driver, that mean. A truck with no velocity in the window is not
    stationary (no data is not evidence). InfluxQL's dialect uses the last 10
    minutes of the data, (end - 10m, end]; here the window is drawn."""

    name = "stationary-trucks"
    params = ("fleet", "start", "end", "velocity_below")

    def columns(self, p):
        return False, ["name", "driver"], [Value("avg_velocity")]

    def sql(self, p, d):
        nm, dr, fl = (d.tag(R, t) for t in ("name", "driver", "fleet"))
        return (f"SELECT {nm}, {dr}, avg(m.velocity) FROM {d.table(R)} WHERE {d.window(p['start'], p['end'])} "
                f"AND {' AND '.join(_not_null(d, R, 'name', 'driver'))} AND {fl} = {lit(p['fleet'])} "
                f"GROUP BY {nm}, {dr} HAVING avg(m.velocity) < {_num(p['velocity_below'])}")


class LongSessions(_Type):
    """long-driving-sessions / long-daily-sessions (TSBS TrucksWithLong
    DrivingSessions / ...DailySessions): the trucks of one random fleet that drove
    in more than `min_periods` 10-minute buckets of a random window (4 h: 22, the
    periods left after resting 5 min/h; 24 h: 60, after 35 min/h), a bucket
    counting as driving when the truck's mean velocity in it is > 1: name, driver,
    the number of driving buckets. The window starts on a 10-minute boundary, so
    it holds whole buckets. (InfluxQL's dialect takes (start, end]; here [start,
    end) as everywhere else.)"""

    params = ("fleet", "start", "end", "velocity_above", "min_periods")

    def __init__(self, name: str):
        self.name = name

    def columns(self, p):
        return False, ["name", "driver"], [Value("driving_periods", "int")]

    def sql(self, p, d):
        nm, dr, fl = (d.tag(R, t) for t in ("name", "driver", "fleet"))
        b = (f"SELECT {nm} AS nm, {dr} AS dr, {d.bucket_ns(TEN_MIN)} AS tb FROM {d.table(R)} "
             f"WHERE {d.window(p['start'], p['end'])} AND {' AND '.join(_not_null(d, R, 'name', 'driver'))} "
             f"AND {fl} = {lit(p['fleet'])} GROUP BY {nm}, {dr}, tb "
             f"HAVING avg(m.velocity) > {_num(p['velocity_above'])}")
        return (f"WITH b AS ({b}) SELECT nm, dr, count(*) FROM b GROUP BY nm, dr "
                f"HAVING count(*) > {int(p['min_periods'])}")


# ---- fleet-wide, over all the data ---------------------------------------------------------

class AvgVsProjectedFuel(_Type):
    """avg-vs-projected-fuel-consumption (TSBS AvgVsProjectedFuelConsumption): per
    fleet, over the readings rows with velocity > 1 (a NULL velocity is not
    moving; NULL name or fleet ignored): the mean fuel_consumption and the mean
    nominal_fuel_consumption (the projected), each over its non-NULL values.
    Both TSBS dialects weigh by rows, as here."""

    name = "avg-vs-projected-fuel-consumption"
    params = ("start", "end", "velocity_above")

    def columns(self, p):
        return False, ["fleet"], [Value("avg_fuel_consumption"), Value("projected_fuel_consumption")]

    def sql(self, p, d):
        fl = d.tag(R, "fleet")
        return (f"SELECT {fl}, avg(m.fuel_consumption), avg(m.nominal_fuel_consumption) FROM {d.table(R)} "
                f"WHERE {d.window(p['start'], p['end'])} AND {' AND '.join(_not_null(d, R, 'name', 'fleet'))} "
                f"AND m.velocity > {_num(p['velocity_above'])} GROUP BY {fl}")


class AvgDailyDrivingDuration(_Type):
    """avg-daily-driving-duration (TSBS AvgDailyDrivingDuration, TimescaleDB's
    meaning): per truck (fleet, name, driver), its driving hours per UTC day
    (10-minute buckets with mean velocity > 1, / 6), averaged over the days on
    which it drove at all. Hours are exact (count / 6.0): TimescaleDB's SQL
    divides integers and truncates to whole hours; InfluxQL's dialect counts
    every bucket with data (no velocity test) and does not average the days."""

    name = "avg-daily-driving-duration"
    params = ("start", "end", "velocity_above")

    def columns(self, p):
        return False, ["fleet", "name", "driver"], [Value("avg_daily_hours")]

    def sql(self, p, d):
        fl, nm, dr = (d.tag(R, t) for t in ("fleet", "name", "driver"))
        b = (f"SELECT {fl} AS fl, {nm} AS nm, {dr} AS dr, {d.bucket_ns(DAY)} AS dy, {d.bucket_ns(TEN_MIN)} AS tb "
             f"FROM {d.table(R)} WHERE {d.window(p['start'], p['end'])} AND "
             f"{' AND '.join(_not_null(d, R, 'fleet', 'name', 'driver'))} GROUP BY {fl}, {nm}, {dr}, dy, tb "
             f"HAVING avg(m.velocity) > {_num(p['velocity_above'])}")
        return (f"WITH b AS ({b}), days AS (SELECT fl, nm, dr, dy, count(*) AS n FROM b GROUP BY fl, nm, dr, dy) "
                f"SELECT fl, nm, dr, avg({_dbl('n')} / 6) FROM days GROUP BY fl, nm, dr")


class AvgDailyDrivingSession(_Type):
    """avg-daily-driving-session (TSBS AvgDailyDrivingSession, TimescaleDB's
    meaning): per truck (name), its 10-minute buckets with a velocity, in time
    order (buckets without one are skipped), each driving when the mean velocity
    > 5. A session starts at a bucket that drives after one that did not and ends
    at the next bucket that does not drive; its length is the time between the
    two bucket starts. Sessions under way at the first bucket or still under way
    at the last are not counted. Answer: per UTC day of a session's start and
    truck, the mean session length in minutes. (InfluxQL's dialect reaches for
    the same with difference()/elapsed() but its signs and buckets differ.)"""

    name = "avg-daily-driving-session"
    params = ("start", "end", "velocity_above")

    def columns(self, p):
        return True, ["name"], [Value("avg_session_minutes")]

    def sql(self, p, d):
        nm = d.tag(R, "name")
        b = (f"SELECT {nm} AS nm, {d.bucket_ns(DAY)} AS dy, {d.bucket_ns(TEN_MIN)} AS tb, "
             f"avg(m.velocity) > {_num(p['velocity_above'])} AS driving FROM {d.table(R)} "
             f"WHERE {d.window(p['start'], p['end'])} AND {nm} IS NOT NULL GROUP BY {nm}, dy, tb "
             f"HAVING count(m.velocity) > 0")
        return (f"WITH b AS ({b}), "
                f"c AS (SELECT nm, dy, tb, driving, lag(driving) OVER (PARTITION BY nm ORDER BY tb) AS prev FROM b), "
                f"s AS (SELECT nm, dy, tb, driving, lead(tb) OVER (PARTITION BY nm ORDER BY tb) AS stop "
                f"FROM c WHERE driving <> prev) "
                f"SELECT dy, nm, avg({_dbl('stop - tb')} / {MINUTE}) FROM s "
                f"WHERE driving AND stop IS NOT NULL GROUP BY dy, nm")


class AvgLoad(_Type):
    """avg-load (TSBS AvgLoad, TimescaleDB's meaning): per fleet and model, the
    mean over its trucks of (the truck's mean current_load / its load_capacity),
    and the load_capacity (mean over those trucks, one value per model). Each
    truck weighs the same; InfluxQL's dialect averages current_load /
    load_capacity over rows instead."""

    name = "avg-load"

    def columns(self, p):
        return False, ["fleet", "model"], [Value("load_capacity"), Value("avg_load_ratio")]

    def sql(self, p, d):
        fl, md, nm = (d.tag(D_, t) for t in ("fleet", "model", "name"))
        tr = (f"SELECT {fl} AS fl, {md} AS md, {nm} AS nm, avg(m.current_load) AS l, avg(m.load_capacity) AS cap "
              f"FROM {d.table(D_)} WHERE {d.window(p['start'], p['end'])} AND "
              f"{' AND '.join(_not_null(d, D_, 'fleet', 'model', 'name'))} GROUP BY {fl}, {md}, {nm}")
        return (f"WITH tr AS ({tr}) SELECT fl, md, avg(cap), avg(l / NULLIF(cap, 0)) FROM tr "
                f"GROUP BY fl, md")


class DailyActivity(_Type):
    """daily-activity (TSBS DailyTruckActivity): per UTC day, fleet and model, the
    truck-days of activity: the number of (truck, 10-minute bucket) pairs in which
    the truck's mean status < 1 (active, not out of commission), / 144. So 1.0 is
    one truck active all day. TimescaleDB's SQL sums rows, not buckets (its value
    grows with the sampling rate) and divides integers; InfluxQL's dialect
    averages status over all the group's trucks per bucket. Here: buckets."""

    name = "daily-activity"
    params = ("start", "end", "status_below")

    def columns(self, p):
        return True, ["fleet", "model"], [Value("daily_activity")]

    def sql(self, p, d):
        fl, md, nm = (d.tag(D_, t) for t in ("fleet", "model", "name"))
        b = (f"SELECT {fl} AS fl, {md} AS md, {nm} AS nm, {d.bucket_ns(DAY)} AS dy, {d.bucket_ns(TEN_MIN)} AS tb "
             f"FROM {d.table(D_)} WHERE {d.window(p['start'], p['end'])} AND "
             f"{' AND '.join(_not_null(d, D_, 'fleet', 'model', 'name'))} GROUP BY {fl}, {md}, {nm}, dy, tb "
             f"HAVING avg({_dbl('m.status')}) < {_num(p['status_below'])}")
        return f"WITH b AS ({b}) SELECT dy, fl, md, {_dbl('count(*)')} / 144 FROM b GROUP BY dy, fl, md"


class BreakdownFrequency(_Type):
    """breakdown-frequency (TSBS TruckBreakdownFrequency): per model, the number
    of breakdowns: a truck is broken down in a 10-minute bucket when at least half
    of its status readings there are non-zero (buckets without a status are
    skipped), and a breakdown is a bucket broken down right after one that was
    not (consecutive among the truck's buckets). Models without a breakdown are
    absent. Both TSBS dialects miscompute the share (TimescaleDB: count(status =
    0) counts every non-NULL status; InfluxQL: status/status is 1 for every
    non-zero status, so its share is always 1); this is the meaning they aim at,
    with InfluxQL's sense of "broken" (non-zero status), which agrees with
    daily-activity's "active" (mean status < 1)."""

    name = "breakdown-frequency"

    def columns(self, p):
        return False, ["model"], [Value("breakdowns", "int")]

    def sql(self, p, d):
        md, nm = d.tag(D_, "model"), d.tag(D_, "name")
        b = (f"SELECT {md} AS md, {nm} AS nm, {d.bucket_ns(TEN_MIN)} AS tb, "
             f"2 * count(*) FILTER (WHERE m.status <> 0) >= count(m.status) AS broken FROM {d.table(D_)} "
             f"WHERE {d.window(p['start'], p['end'])} AND {' AND '.join(_not_null(d, D_, 'model', 'name'))} "
             f"GROUP BY {md}, {nm}, tb HAVING count(m.status) > 0")
        return (f"WITH b AS ({b}), c AS (SELECT md, nm, tb, broken, "
                f"lag(broken) OVER (PARTITION BY md, nm ORDER BY tb) AS prev FROM b) "
                f"SELECT md, count(*) FROM c WHERE broken AND NOT prev GROUP BY md")


# ---- parameter drawing ---------------------------------------------------------------------

def _p(name: str, **kw) -> dict:
    return {"shape": "custom", "type": name, **kw}


def _make_last_loc(rng, ctx):
    return _p("last-loc", fleet=_fleet(rng))


def _make_single_last_loc(rng, ctx):
    return _p("single-last-loc", names=draw_entities(rng, ctx, "name", 1))


def _make_low_fuel(rng, ctx):
    return _p("low-fuel", fleet=_fleet(rng), fuel_below=0.1)


def _make_high_load(rng, ctx):
    return _p("high-load", fleet=_fleet(rng), load_above=0.9)


def _make_stationary(rng, ctx):
    start, end = draw_window(rng, ctx, 10 * MINUTE, MINUTE)
    return _p("stationary-trucks", fleet=_fleet(rng), start=start, end=end, velocity_below=1.0)


def _make_long(rng, ctx, name: str, width: int, rest: int):
    start, end = draw_window(rng, ctx, width, TEN_MIN)
    return _p(name, fleet=_fleet(rng), start=start, end=end, velocity_above=1.0,
              min_periods=ten_minute_periods(rest, width))


def _make_all(rng, ctx, name: str, **kw):
    return _p(name, **_all(ctx), **kw)


def _register(t: _Type, doc: str, needs: dict, make) -> None:
    CUSTOM[t.name] = t
    register(QueryType(t.name, "iot", doc, needs, make, t.name))


_LOC = ("name", "fleet", "driver", "longitude", "latitude")
_register(LastLoc(), "TSBS: newest location (longitude, latitude) of each truck of a random fleet",
          {R: _LOC}, _make_last_loc)
_register(SingleLastLoc(), "TSBS: newest location of one random truck",
          {R: ("name", "driver", "longitude", "latitude")}, _make_single_last_loc)
_register(LowFuel(), "TSBS: trucks of a random fleet whose newest fuel_state < 0.1",
          {D_: ("name", "fleet", "driver", "fuel_state")}, _make_low_fuel)
_register(HighLoad(), "TSBS: trucks of a random fleet whose newest current_load > 90% of load_capacity",
          {D_: ("name", "fleet", "driver", "current_load", "load_capacity")}, _make_high_load)
_register(Stationary(), "TSBS: trucks of a random fleet with mean velocity < 1 over a random 10 minutes",
          {R: ("name", "fleet", "driver", "velocity")}, _make_stationary)
_register(LongSessions("long-driving-sessions"),
          "TSBS: trucks of a random fleet driving (mean velocity > 1) in more than 22 of the 10-minute "
          "periods of a random 4 h", {R: ("name", "fleet", "driver", "velocity")},
          partial(_make_long, name="long-driving-sessions", width=4 * 60 * MINUTE, rest=5))
_register(LongSessions("long-daily-sessions"),
          "TSBS: trucks of a random fleet driving (mean velocity > 1) in more than 60 of the 10-minute "
          "periods of a random 24 h", {R: ("name", "fleet", "driver", "velocity")},
          partial(_make_long, name="long-daily-sessions", width=DAY, rest=35))
_register(AvgVsProjectedFuel(), "TSBS: per fleet, mean fuel_consumption vs mean nominal_fuel_consumption "
          "while moving (velocity > 1), all data",
          {R: ("name", "fleet", "velocity", "fuel_consumption", "nominal_fuel_consumption")},
          partial(_make_all, name="avg-vs-projected-fuel-consumption", velocity_above=1.0))
_register(AvgDailyDrivingDuration(), "TSBS: per truck (fleet, name, driver), mean driving hours per day "
          "(10-minute periods with mean velocity > 1), all data",
          {R: ("name", "fleet", "driver", "velocity")},
          partial(_make_all, name="avg-daily-driving-duration", velocity_above=1.0))
_register(AvgDailyDrivingSession(), "TSBS: per truck and day, mean length (minutes) of driving sessions "
          "(runs of 10-minute periods with mean velocity > 5), all data",
          {R: ("name", "velocity")}, partial(_make_all, name="avg-daily-driving-session", velocity_above=5.0))
_register(AvgLoad(), "TSBS: per fleet and model, mean over trucks of mean current_load / load_capacity, all data",
          {D_: ("name", "fleet", "model", "current_load", "load_capacity")},
          partial(_make_all, name="avg-load"))
_register(DailyActivity(), "TSBS: per day, fleet and model, truck-days active (10-minute periods with mean "
          "status < 1, / 144), all data", {D_: ("name", "fleet", "model", "status")},
          partial(_make_all, name="daily-activity", status_below=1.0))
_register(BreakdownFrequency(), "TSBS: per model, breakdowns (a 10-minute period with at least half its "
          "statuses non-zero after one without), all data", {D_: ("name", "model", "status")},
          partial(_make_all, name="breakdown-frequency"))

IOT_TYPES = tuple(n for n, qt in CATALOG.items() if qt.family == "iot")
