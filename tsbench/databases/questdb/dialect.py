"""QuestDB's queries (phase 3 render; target.py runs them in phase 4): the shared
SQL dialect spelled for QuestDB SQL, with QuestDB's own forms where its SQL
differs or has a better one.

* Time: QuestDB's TIMESTAMP is microseconds; `cast(time AS long) * 1000` is the
  canonical epoch ns, and windows compare `time` with ISO literals (which
  QuestDB turns into partition and interval scans).
* Time buckets: `SAMPLE BY <n><unit> ALIGN TO CALENDAR` when the width divides a
  day (then QuestDB's calendar buckets are the epoch multiples every other
  dialect uses), else the reference's GROUP BY of the bucket number.
* Newest row per group (lastpoint, the iot "newest" types): `LATEST ON time
  PARTITION BY ...`, after the WHERE (QuestDB filters first, then keeps each
  group's newest row).
* The iot types (queries/iot.py) in QuestDB SQL: QuestDB has no HAVING (a
  subquery's WHERE instead), no FILTER clause (a sum of CASE), no lag() of a
  BOOLEAN (0/1 integers), and a NULL compares equal to NULL and unequal to any
  value (so a NULL is tested for explicitly where SQL's three-valued logic
  would drop it).

Other forms timed by benchmarks/dialects.py: SAMPLE BY with FILL(NONE) or bare (TSBS's),
timestamp_floor + GROUP BY, the shared SQL's GROUP BY of the bucket number, and TSBS's
`LATEST BY` for lastpoint. Kept over LATEST BY although once measured faster: it is the
deprecated spelling of the same LATEST ON, and the gap did not hold between runs."""

from __future__ import annotations

from tsbench.core.errors import Unsupported
from tsbench.queries.base import DAY, HOUR, MINUTE, SqlSpelling, iso, lit, num
from tsbench.queries.iot import D_, TEN_MIN, R
from tsbench.queries.shapes import AGG_SQL
from tsbench.queries.shapes import _where as where
from tsbench.queries.sql import Sql

US = 1000                     # ns per microsecond
UNITS = (("d", DAY), ("h", HOUR), ("m", MINUTE), ("s", 10**9), ("T", 10**6), ("U", US))


class QuestDbSpelling(SqlSpelling):
    """The reference SQL as QuestDB runs it: time math on microseconds."""

    name = "questdb"

    def time_ns(self) -> str:
        return "(cast(m.time AS long) * 1000)"

    def bucket_ns(self, width_ns: int) -> str:
        if width_ns % US:
            raise Unsupported(f"questdb: a bucket of {width_ns} ns is not a whole number of microseconds")
        return f"((cast(m.time AS long) / {width_ns // US}) * {width_ns})"

    def ts(self, ns: int) -> str:
        return lit(iso(ns))


def sample_by(width_ns: int) -> str | None:
    """`SAMPLE BY` of a bucket width that divides a day (calendar = epoch alignment), else None."""
    if width_ns % US or DAY % width_ns:
        return None
    unit, n = next((u, n) for u, n in UNITS if width_ns % n == 0)
    return f"SAMPLE BY {width_ns // n}{unit} ALIGN TO CALENDAR"


class QuestSql(Sql):
    name = "questdb"      # forms and form_reasons: below the class

    def __init__(self, spelling: SqlSpelling | None = None):
        super().__init__(spelling or QuestDbSpelling())

    def aggregate(self, p: dict) -> str:
        sample = sample_by(p["bucket"]) if p.get("bucket") is not None else None
        if sample is None:
            return super().aggregate(p)
        return self.bucketed(p, "time", "time", sample)

    def bucketed(self, p: dict, bucket: str, name: str, clause: str) -> str:
        """The aggregate per bucket (the expression `bucket`, selected as `name`, made by the
        clause after the WHERE: SAMPLE BY, or a GROUP BY of name), its start as epoch ns."""
        d, m = self.spelling, p["measurement"]
        groups = [d.quote(g) for g in p.get("group_by") or []]
        vals = [f"v{i}" for i in range(len(p["fields"]))]
        sel = [bucket if bucket == name else f"{bucket} AS {name}"] + \
              [f"{d.tag(m, g)} AS {d.quote(g)}" for g in p.get("group_by") or []] + \
              [f"{AGG_SQL[p['agg']]}({d.field(f)}) AS {v}" for f, v in zip(p["fields"], vals)]
        inner = f"SELECT {', '.join(sel)} FROM {d.table(m)} WHERE {where(p, d)} {clause}"
        out = f"SELECT {', '.join([f'(cast({name} AS long) * 1000) AS t', *groups, *vals])} FROM ({inner})"
        if p.get("order") == "desc":
            out += " ORDER BY t DESC"
        if p.get("limit"):
            out += f" LIMIT {int(p['limit'])}"
        return out

    def sample_by_form(self, p: dict, clause: str) -> str:
        """tsbench's SAMPLE BY query with another sampling clause (`SAMPLE BY 1h` ...)."""
        return self.aggregate(p).replace(sample_by(p["bucket"]), clause)

    def last(self, p: dict) -> str:
        d, m = self.spelling, p["measurement"]
        g = [d.tag(m, x) for x in p["group_by"]]
        sel = [f"{d.time_ns()} AS t", *g, *(d.field(f) for f in p["fields"])]
        by = ", ".join(d.quote(x) for x in p["group_by"])       # LATEST ON takes bare column names
        return f"SELECT {', '.join(sel)} FROM {d.table(m)} LATEST ON time PARTITION BY {by}"

    def render_custom(self, shape: str, p: dict) -> str:
        return IOT[shape](self.spelling, p)


# ---- other forms of the same questions (benchmarks/dialects.py measures them) ------------------

def _unit(width_ns: int) -> str:
    """A bucket width as QuestDB's sampling units spell it (1h, 10m...)."""
    unit, n = next((u, n) for u, n in UNITS if width_ns % n == 0)
    return f"{width_ns // n}{unit}"


def _group_by_bucket(d: QuestSql, p: dict) -> str:
    """The shared SQL: GROUP BY the bucket number computed from the epoch microseconds."""
    return Sql.aggregate(d, p)


def _timestamp_floor(d: QuestSql, p: dict) -> str:
    """GROUP BY timestamp_floor(unit, time): QuestDB's bucket function on the designated timestamp."""
    groups = ", ".join(["tb", *(d.spelling.quote(g) for g in p.get("group_by") or [])])
    return d.bucketed(p, f"timestamp_floor('{_unit(p['bucket'])}', m.time)", "tb", f"GROUP BY {groups}")


def _fill_none(d: QuestSql, p: dict) -> str:
    """SAMPLE BY with an explicit FILL(NONE) (no row for an empty bucket: tsbench's meaning)."""
    return d.sample_by_form(p, f"SAMPLE BY {_unit(p['bucket'])} FILL(NONE) ALIGN TO CALENDAR")


def _tsbs(d: QuestSql, p: dict) -> str:
    """TSBS's text: a bare `SAMPLE BY 1h` (QuestDB 7.4+ aligns to the calendar by default)."""
    return d.sample_by_form(p, f"SAMPLE BY {_unit(p['bucket'])}")


def _latest_by(d: QuestSql, p: dict) -> str:
    """TSBS's lastpoint: the older `LATEST BY <symbol>` spelling."""
    s, m = d.spelling, p["measurement"]
    sel = [f"{s.time_ns()} AS t", *(s.tag(m, x) for x in p["group_by"]), *(s.field(f) for f in p["fields"])]
    return f"SELECT {', '.join(sel)} FROM {s.table(m)} LATEST BY {', '.join(s.quote(x) for x in p['group_by'])}"


BUCKETED = ("single-groupby-1-1-1", "single-groupby-1-1-12", "single-groupby-1-8-1", "single-groupby-5-1-1",
            "single-groupby-5-1-12", "single-groupby-5-8-1", "cpu-max-all-1", "cpu-max-all-8", "double-groupby-1",
            "double-groupby-5", "double-groupby-all", "groupby-orderby-limit")
QuestSql.forms = {
    **{t: {"group-by-bucket": _group_by_bucket, "timestamp-floor": _timestamp_floor, "fill-none": _fill_none,
           "tsbs": _tsbs} for t in BUCKETED},
    "lastpoint": {"tsbs-latest-by": _latest_by},
}
QuestSql.form_reasons = {
    "lastpoint": "LATEST BY is QuestDB's deprecated spelling of LATEST ON time PARTITION BY, the same plan; "
                 "the gap measured (1.06x to 3.9x in runs on a machine shared with other work) is not settled",
}


# ---- the iot types in QuestDB SQL (meanings: queries/iot.py) -----------------------------------

def _not_null(d: SqlSpelling, m: str, *tags: str) -> str:
    return " AND ".join(f"{d.tag(m, t)} IS NOT NULL" for t in tags)


def _newest(m: str, fields: tuple[str, ...], keep=None):
    def render(d: SqlSpelling, p: dict) -> str:
        conds = [_not_null(d, m, "name", "driver")]
        if "names" in p:
            conds.append(f"{d.tag(m, 'name')} IN ({', '.join(lit(x) for x in p['names'])})")
        if "fleet" in p:
            conds.append(f"{d.tag(m, 'fleet')} = {lit(p['fleet'])}")
        sel = [f"{d.time_ns()} AS tm", f"{d.tag(m, 'name')} AS nm", f"{d.tag(m, 'driver')} AS dr",
               *(f"{d.field(f)} AS {d.quote(f)}" for f in fields)]
        inner = (f"SELECT {', '.join(sel)} FROM {d.table(m)} WHERE {' AND '.join(conds)} "
                 f"LATEST ON time PARTITION BY {d.quote('name')}, {d.quote('driver')}")
        out = ", ".join(["tm", "nm", "dr", *(d.quote(f) for f in fields)])
        return f"SELECT {out} FROM ({inner})" + (f" WHERE {keep(p)}" if keep else "")
    return render


def _stationary(d, p):
    nm, dr, fl = (d.tag(R, t) for t in ("name", "driver", "fleet"))
    inner = (f"SELECT {nm} AS nm, {dr} AS dr, avg(m.velocity) AS v FROM {d.table(R)} "
             f"WHERE {d.window(p['start'], p['end'])} AND {_not_null(d, R, 'name', 'driver')} "
             f"AND {fl} = {lit(p['fleet'])} GROUP BY {nm}, {dr}")
    return f"SELECT nm, dr, v FROM ({inner}) WHERE v < {num(p['velocity_below'])}"


def _driving_buckets(d, p, m: str, tags: tuple[str, ...], *buckets: tuple[str, int], cond: str) -> str:
    """A subquery: per truck (its tags, none NULL; of the drawn fleet, if any) and bucket(s),
    the aggregate `cond` of its rows in the window as `c`, for the caller to test (no HAVING)."""
    cols = [f"{d.tag(m, t)} AS {a}" for t, a in tags] + [f"{d.bucket_ns(w)} AS {a}" for a, w in buckets]
    keys = [d.tag(m, t) for t, _ in tags] + [a for a, _ in buckets]
    fleet = f"AND {d.tag(m, 'fleet')} = {lit(p['fleet'])} " if "fleet" in p else ""
    return (f"SELECT {', '.join(cols)}, {cond} AS c FROM {d.table(m)} WHERE {d.window(p['start'], p['end'])} "
            f"AND {_not_null(d, m, *(t for t, _ in tags))} {fleet}GROUP BY {', '.join(keys)}")


def _long_sessions(d, p):
    b = _driving_buckets(d, p, R, (("name", "nm"), ("driver", "dr")), ("tb", TEN_MIN), cond="avg(m.velocity)")
    counted = f"SELECT nm, dr, count() AS n FROM ({b}) WHERE c > {num(p['velocity_above'])} GROUP BY nm, dr"
    return f"SELECT nm, dr, n FROM ({counted}) WHERE n > {int(p['min_periods'])}"


def _avg_vs_projected(d, p):
    fl = d.tag(R, "fleet")
    return (f"SELECT {fl}, avg(m.fuel_consumption), avg(m.nominal_fuel_consumption) FROM {d.table(R)} "
            f"WHERE {d.window(p['start'], p['end'])} AND {_not_null(d, R, 'name', 'fleet')} "
            f"AND m.velocity > {num(p['velocity_above'])} GROUP BY {fl}")


def _daily_duration(d, p):
    b = _driving_buckets(d, p, R, (("fleet", "fl"), ("name", "nm"), ("driver", "dr")), ("dy", DAY), ("tb", TEN_MIN),
                         cond="avg(m.velocity)")
    days = (f"SELECT fl, nm, dr, dy, count() AS n FROM ({b}) WHERE c > {num(p['velocity_above'])} "
            f"GROUP BY fl, nm, dr, dy")
    return f"SELECT fl, nm, dr, avg(cast(n AS double) / 6) FROM ({days}) GROUP BY fl, nm, dr"


def _daily_session(d, p):
    nm = d.tag(R, "name")
    b = (f"SELECT {nm} AS nm, {d.bucket_ns(DAY)} AS dy, {d.bucket_ns(TEN_MIN)} AS tb, avg(m.velocity) AS v, "
         f"count(m.velocity) AS k FROM {d.table(R)} WHERE {d.window(p['start'], p['end'])} AND {nm} IS NOT NULL "
         f"GROUP BY {nm}, dy, tb")
    drv = (f"SELECT nm, dy, tb, CASE WHEN v > {num(p['velocity_above'])} THEN 1 ELSE 0 END AS driving "
           f"FROM ({b}) WHERE k > 0")
    c = f"SELECT nm, dy, tb, driving, lag(driving) OVER (PARTITION BY nm ORDER BY tb) AS prev FROM ({drv})"
    s = (f"SELECT nm, dy, tb, driving, lead(tb) OVER (PARTITION BY nm ORDER BY tb) AS stop FROM ({c}) "
         f"WHERE prev IS NOT NULL AND driving <> prev")
    return (f"SELECT dy, nm, avg(cast(stop - tb AS double) / {MINUTE}) FROM ({s}) "
            f"WHERE driving = 1 AND stop IS NOT NULL GROUP BY dy, nm")


def _avg_load(d, p):
    fl, md, nm = (d.tag(D_, t) for t in ("fleet", "model", "name"))
    tr = (f"SELECT {fl} AS fl, {md} AS md, {nm} AS nm, avg(m.current_load) AS l, avg(m.load_capacity) AS cap "
          f"FROM {d.table(D_)} WHERE {d.window(p['start'], p['end'])} AND {_not_null(d, D_, 'fleet', 'model', 'name')} "
          f"GROUP BY {fl}, {md}, {nm}")
    return f"SELECT fl, md, avg(cap), avg(l / nullif(cap, 0)) FROM ({tr}) GROUP BY fl, md"


def _daily_activity(d, p):
    b = _driving_buckets(d, p, D_, (("fleet", "fl"), ("model", "md"), ("name", "nm")), ("dy", DAY), ("tb", TEN_MIN),
                         cond="avg(cast(m.status AS double))")
    return (f"SELECT dy, fl, md, cast(count() AS double) / 144 FROM ({b}) "
            f"WHERE c < {num(p['status_below'])} GROUP BY dy, fl, md")


def _breakdowns(d, p):
    md, nm = d.tag(D_, "model"), d.tag(D_, "name")
    nonzero = "sum(CASE WHEN m.status IS NOT NULL AND m.status <> 0 THEN 1 ELSE 0 END)"
    b = (f"SELECT {md} AS md, {nm} AS nm, {d.bucket_ns(TEN_MIN)} AS tb, {nonzero} AS bad, count(m.status) AS k "
         f"FROM {d.table(D_)} WHERE {d.window(p['start'], p['end'])} AND {_not_null(d, D_, 'model', 'name')} "
         f"GROUP BY {md}, {nm}, tb")
    br = f"SELECT md, nm, tb, CASE WHEN 2 * bad >= k THEN 1 ELSE 0 END AS broken FROM ({b}) WHERE k > 0"
    c = f"SELECT md, nm, tb, broken, lag(broken) OVER (PARTITION BY md, nm ORDER BY tb) AS prev FROM ({br})"
    return f"SELECT md, count() FROM ({c}) WHERE broken = 1 AND prev = 0 GROUP BY md"


IOT = {
    "last-loc": _newest(R, ("longitude", "latitude")),
    "single-last-loc": _newest(R, ("longitude", "latitude")),
    "low-fuel": _newest(D_, ("fuel_state",), lambda p: f'"fuel_state" < {num(p["fuel_below"])}'),
    "high-load": _newest(D_, ("current_load", "load_capacity"),
                         lambda p: f'"current_load" > {num(p["load_above"])} * "load_capacity"'),
    "stationary-trucks": _stationary,
    "long-driving-sessions": _long_sessions,
    "long-daily-sessions": _long_sessions,
    "avg-vs-projected-fuel-consumption": _avg_vs_projected,
    "avg-daily-driving-duration": _daily_duration,
    "avg-daily-driving-session": _daily_session,
    "avg-load": _avg_load,
    "daily-activity": _daily_activity,
    "breakdown-frequency": _breakdowns,
}
