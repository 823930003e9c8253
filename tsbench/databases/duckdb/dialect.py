"""DuckDB's queries (phase 3 render; target.py runs them in phase 4): the reference
engine's own SQL, the shared SQL dialect with the reference spelling, unchanged but
for lastpoint (QUALIFY, below); the rows come back as the driver returns them.

Forms (benchmarks/dialects.py, `nox -s bench_dialects`; docs/databases/duckdb.md):
buckets as integer math on epoch_ns (tsbench's), time_bucket or date_trunc on the
timestamp; lastpoint as QUALIFY row_number() (tsbench's), DISTINCT ON (the
reference engine's SQL, 13.9x slower at 20 hosts x 12 h), or arg_max of the row's
struct by time per group (3.4x). Every other form within 1.2x or slower than tsbench's."""

from __future__ import annotations

from tsbench.queries.base import SqlSpelling, lit
from tsbench.queries.catalog import CATALOG, TSBS_DEVOPS
from tsbench.queries.shapes import sql
from tsbench.queries.sql import Sql

TRUNC = {60 * 10**9: "minute", 3600 * 10**9: "hour", 86400 * 10**9: "day"}


class TimeBucket(SqlSpelling):
    """Buckets by time_bucket on the timestamp (microseconds: a width in ns falls back)."""

    def bucket_ns(self, width_ns: int) -> str:
        w = int(width_ns)
        if w % 1000:
            return super().bucket_ns(w)
        return f"epoch_ns(time_bucket(INTERVAL {lit(f'{w // 1000} microseconds')}, m.time, {self.ts(0)}))"


class DateTrunc(SqlSpelling):
    """Buckets by date_trunc on the timestamp, where the width is a calendar unit."""

    def bucket_ns(self, width_ns: int) -> str:
        unit = TRUNC.get(int(width_ns))
        return f"epoch_ns(date_trunc({lit(unit)}, m.time))" if unit else super().bucket_ns(width_ns)


def _last_arg_max(d: Sql, p: dict) -> str:
    """The newest row per group as arg_max of the row's struct by time (one row's values, ties too)."""
    s, m = d.spelling, p["measurement"]
    g = [s.tag(m, x) for x in p["group_by"]]
    cells = ["m.time"] + [s.field(f) for f in p["fields"]]
    row = "{" + ", ".join(f"{lit(f'c{i}')}: {e}" for i, e in enumerate(cells)) + "}"
    inner = f"SELECT {', '.join(g)}, arg_max({row}, m.time) AS r FROM {s.table(m)} GROUP BY {', '.join(g)}"
    sel = ["epoch_ns(r.c0) AS t", *(s.quote(x) for x in p["group_by"]), *(f"r.c{i}" for i in range(1, len(cells)))]
    return f"SELECT {', '.join(sel)} FROM ({inner})"


def _last_qualify(d: Sql, p: dict) -> str:
    s, m = d.spelling, p["measurement"]
    g = [s.tag(m, x) for x in p["group_by"]]
    sel = [f"{s.time_ns()} AS t", *g, *(s.field(f) for f in p["fields"])]
    return (f"SELECT {', '.join(sel)} FROM {s.table(m)} "
            f"QUALIFY row_number() OVER (PARTITION BY {', '.join(g)} ORDER BY m.time DESC) = 1")


def _spelled(spelling: type[SqlSpelling]):
    return lambda d, p: sql(p, spelling())


def _last_distinct_on(d: Sql, p: dict) -> str:
    return sql(p, d.spelling)


class DuckDbSql(Sql):
    """The reference SQL (the shared dialect, reference spelling) but for lastpoint's
    shape, stated with QUALIFY row_number() (DISTINCT ON recorded 13.9x slower); its other
    forms declared."""

    def last(self, p: dict) -> str:
        return _last_qualify(self, p)


BUCKET_FORMS = {"time_bucket": _spelled(TimeBucket), "date_trunc": _spelled(DateTrunc)}
DuckDbSql.forms = {
    name: (BUCKET_FORMS if CATALOG[name].shape == "aggregate" else {"distinct-on": _last_distinct_on,
                                                                     "arg_max": _last_arg_max})
    for name in TSBS_DEVOPS if CATALOG[name].shape in ("aggregate", "last")}

DIALECTS = {"sql": DuckDbSql}
