"""The query catalog (phase 3): every query type by name, as declarations.

devops: the seed benchmark's six (max-cpu-1 .. max-cpu-32), influxdb-comparisons'
four (1-host-1-hr, 1-host-12-hr, 8-host-1-hr, groupby) and TSBS's sixteen.
flux: ingen-style range + filter(value > 0) + sum, alone and grouped by tag0,
over 1, 4 and 12 days (or what the dataset spans). relational: read all rows,
a tenth of the time range, one record (of the first measurement). iot: TSBS's
thirteen (queries/iot.py), each a custom shape. generic: drawn from any
dataset's schema (queries/generic.py), in the basic shapes.

Windows start on a multiple of their bucket width (so every dialect buckets a
window alike); a window longer than the dataset becomes the whole dataset."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:      # numpy's generator is only named in annotations (a target's dialects start without numpy)
    import numpy as np

from tsbench.queries.base import DAY, HOUR, MINUTE, DatasetContext, QueryType, draw_entities, draw_window

CPU = ("usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq", "usage_softirq",
       "usage_steal", "usage_guest", "usage_guest_nice")

CATALOG: dict[str, QueryType] = {}
CUSTOM: dict[str, object] = {}       # custom-shape types: name -> object with columns(p), sql(p, d)


def register(qt: QueryType) -> QueryType:
    CATALOG[qt.name] = qt
    return qt


def _types(ctx: DatasetContext, m: str, fields) -> list[str]:
    by = {f.name: f.type for f in ctx.table(m).fields}
    return [by[f] for f in fields]


def _cpu_max(rng: np.random.Generator, ctx: DatasetContext, hosts: int, window: int, bucket: int,
             fields: tuple[str, ...]) -> dict:
    start, end = draw_window(rng, ctx, window, bucket)
    return {"shape": "aggregate", "measurement": "cpu", "agg": "max", "fields": list(fields),
            "types": _types(ctx, "cpu", fields), "tag": "hostname",
            "tag_values": draw_entities(rng, ctx, "hostname", hosts), "start": start, "end": end,
            "bucket": bucket, "group_by": []}


def _per_host_mean(rng, ctx, window: int, fields: tuple[str, ...]) -> dict:
    start, end = draw_window(rng, ctx, window, HOUR)
    return {"shape": "aggregate", "measurement": "cpu", "agg": "mean", "fields": list(fields),
            "types": _types(ctx, "cpu", fields), "tag": None, "tag_values": None, "start": start, "end": end,
            "bucket": HOUR, "group_by": ["hostname"]}


def _high_cpu(rng, ctx, hosts: int | None) -> dict:
    start, end = draw_window(rng, ctx, 12 * HOUR, MINUTE)
    return {"shape": "rows", "measurement": "cpu", "fields": list(CPU), "types": _types(ctx, "cpu", CPU),
            "tag": "hostname" if hosts else None,
            "tag_values": draw_entities(rng, ctx, "hostname", hosts) if hosts else None,
            "start": start, "end": end, "value_filter": {"field": "usage_user", "op": ">", "value": 90.0},
            "tags_out": ["hostname"]}


def _lastpoint(rng, ctx) -> dict:
    return {"shape": "last", "measurement": "cpu", "fields": list(CPU), "types": _types(ctx, "cpu", CPU),
            "group_by": ["hostname"]}


def _orderby_limit(rng, ctx) -> dict:
    first = -(-(ctx.start_ns + MINUTE) // MINUTE) * MINUTE
    last = ctx.end_ns // MINUTE * MINUTE
    end = first + MINUTE * int(rng.integers(0, max((last - first) // MINUTE, 0) + 1))
    return {"shape": "aggregate", "measurement": "cpu", "agg": "max", "fields": ["usage_user"],
            "types": _types(ctx, "cpu", ["usage_user"]), "tag": None, "tag_values": None,
            "start": ctx.start_ns, "end": end, "bucket": MINUTE, "group_by": [], "order": "desc", "limit": 5}


def _devops(name: str, doc: str, make, fields=CPU, shape: str = "aggregate") -> None:
    hosts = getattr(make, "keywords", {}).get("hosts")
    register(QueryType(name, "devops", doc, {"cpu": ("hostname", *fields)}, make, shape,
                       ("hostname", hosts) if hosts else None))


for n in (1, 2, 4, 8, 16, 32):
    _devops(f"max-cpu-{n}", f"seed benchmark: max(usage_user) of {n} random hosts over a random hour, by minute",
            partial(_cpu_max, hosts=n, window=HOUR, bucket=MINUTE, fields=("usage_user",)), ("usage_user",))
_devops("1-host-1-hr", "influxdb-comparisons: max(usage_user), 1 host, random 1 h, by minute",
        partial(_cpu_max, hosts=1, window=HOUR, bucket=MINUTE, fields=("usage_user",)), ("usage_user",))
_devops("1-host-12-hr", "influxdb-comparisons: max(usage_user), 1 host, random 12 h, by minute",
        partial(_cpu_max, hosts=1, window=12 * HOUR, bucket=MINUTE, fields=("usage_user",)), ("usage_user",))
_devops("8-host-1-hr", "influxdb-comparisons: max(usage_user), 8 hosts, random 1 h, by minute",
        partial(_cpu_max, hosts=8, window=HOUR, bucket=MINUTE, fields=("usage_user",)), ("usage_user",))
_devops("groupby", "influxdb-comparisons: mean(usage_user) per host per hour, all hosts, random day",
        partial(_per_host_mean, window=DAY, fields=("usage_user",)), ("usage_user",))
for nf, fields in ((1, CPU[:1]), (5, CPU[:5])):
    for hosts, hours in ((1, 1), (1, 12), (8, 1)):
        _devops(f"single-groupby-{nf}-{hosts}-{hours}",
                f"TSBS: max of {nf} cpu field(s) per minute, {hosts} random host(s), random {hours} h",
                partial(_cpu_max, hosts=hosts, window=hours * HOUR, bucket=MINUTE, fields=fields), fields)
for hosts, hours in ((1, 8), (8, 8), (32, 24)):
    _devops("cpu-max-all-32-24" if hosts == 32 else f"cpu-max-all-{hosts}",
            f"TSBS: max of all 10 cpu fields per hour, {hosts} random host(s), random {hours} h",
            partial(_cpu_max, hosts=hosts, window=hours * HOUR, bucket=HOUR, fields=CPU))
for label, fields in (("1", CPU[:1]), ("5", CPU[:5]), ("all", CPU)):
    _devops(f"double-groupby-{label}", f"TSBS: mean of {len(fields)} cpu field(s) per host per hour, all hosts, "
            f"random 12 h", partial(_per_host_mean, window=12 * HOUR, fields=fields), fields)
_devops("high-cpu-all", "TSBS: cpu rows with usage_user > 90, all hosts, random 12 h", partial(_high_cpu, hosts=None),
        shape="rows")
_devops("high-cpu-1", "TSBS: cpu rows with usage_user > 90, 1 random host, random 12 h", partial(_high_cpu, hosts=1),
        shape="rows")
_devops("lastpoint", "TSBS: the newest cpu row of every host", _lastpoint, shape="last")
_devops("groupby-orderby-limit", "TSBS: max(usage_user) per minute before a random end, the newest 5 minutes",
        _orderby_limit, ("usage_user",))
# TSBS's devops types: the ones the dialects' other forms (Dialect.forms) are declared for
TSBS_DEVOPS = tuple(n for n in CATALOG if n.startswith(("single-groupby-", "double-groupby-", "cpu-max-all-",
                                                        "high-cpu-", "lastpoint", "groupby-orderby-limit")))


# ---- flux / ingen style ------------------------------------------------------------------------

def _flux_sum(rng, ctx, days: int, by_tag: bool) -> dict:
    start, end = draw_window(rng, ctx, days * DAY, MINUTE)
    return {"shape": "aggregate", "measurement": "m0", "agg": "sum", "fields": ["v0"],
            "types": _types(ctx, "m0", ["v0"]), "tag": None, "tag_values": None, "start": start, "end": end,
            "bucket": None, "group_by": ["tag0"] if by_tag else [],
            "value_filter": {"field": "v0", "op": ">", "value": 0.0}}


for days in (1, 4, 12):
    register(QueryType(f"flux-sum-{days}d", "flux", f"range {days} d |> filter(m0, v0 > 0) |> sum",
                       {"m0": ("v0",)}, partial(_flux_sum, days=days, by_tag=False), "aggregate"))
    register(QueryType(f"flux-sum-by-tag-{days}d", "flux",
                       f"range {days} d |> filter(m0, v0 > 0) |> group(tag0) |> sum",
                       {"m0": ("v0", "tag0")}, partial(_flux_sum, days=days, by_tag=True), "aggregate"))


# ---- relational study --------------------------------------------------------------------------

def _first_table(rng, ctx: DatasetContext):
    return ctx.tables.tables[0]


def read_rows(rng, ctx: DatasetContext, part: str, pick=_first_table) -> dict:
    """Rows of a measurement (pick(rng, ctx) -> its Table; the first by default): all of
    them, a random tenth of the time range, or one record. The generic family's scan too."""
    t = pick(rng, ctx)
    fields = list(t.field_names)
    p = {"shape": "rows", "measurement": t.name, "fields": fields, "types": _types(ctx, t.name, fields),
         "tag": None, "tag_values": None, "start": ctx.start_ns, "end": ctx.end_ns, "value_filter": None,
         "tags_out": list(t.tags[:1])}
    if part == "tenth":
        p["start"], p["end"] = draw_window(rng, ctx, (ctx.end_ns - ctx.start_ns) // 10, ctx.interval_ns)
    elif part == "one":
        p["start"], p["end"] = draw_window(rng, ctx, ctx.interval_ns, ctx.interval_ns)
        if t.tags and t.tags[0] in ctx.entity_tags:
            p["tag"], p["tag_values"] = t.tags[0], draw_entities(rng, ctx, t.tags[0], 1)
    return p


register(QueryType("read-all", "relational", "every row of the first measurement", {}, partial(read_rows, part="all"),
                   "rows"))
register(QueryType("read-tenth", "relational", "the rows of a random tenth of the time range", {},
                   partial(read_rows, part="tenth"), "rows"))
register(QueryType("read-one", "relational", "one record: one entity at one random time", {},
                   partial(read_rows, part="one"), "rows"))
