"""Phase 2, afterwards: recount what a database holds against the data file it
was loaded from, table by table (`tsbench verify`; the runner can call verify()
on an open target at any time after a load). The expected figures come from the
dataset's description: closed form for perfect delivery, else one pass of the
simulator's columns, counted with numpy."""

from __future__ import annotations

import numpy as np

from .connect import Connection
from .datafile import DataFile
from .errors import Fatal, UserError
from .model import Tables

CHUNK = 1 << 16       # records per fill_columns call when counting faulty deliveries


def expected_counts(df: DataFile) -> dict[str, tuple[int, int]]:
    """Per table (measurement): the (rows, values) the data file holds."""
    ds = df.dataset
    lo, hi = df.manifest.get("entities") or (0, ds.entities)
    visible = [sum(1 for f in se.fields if not f.hidden) for se in ds.schema.series]
    names = [se.name for se in ds.schema.series]
    f = ds.schema.faults
    if not any(getattr(f, k) for k in ("group_drop", "group_late", "missing", "late", "null_field", "null_tag")):
        rows = (hi - lo) * ds.epochs
        out = {n: (rows, rows * v) for n, v in zip(names, visible)}
    else:
        out = dict(zip(names, _simulated(ds, lo, hi, max(visible))))
    if sum(r for r, _ in out.values()) != df.rows or sum(v for _, v in out.values()) != df.values:
        raise UserError(f"{df.path}: the manifest's totals ({df.rows:,} rows, {df.values:,} values) do not "
                        f"match its dataset; regenerate the file")
    return out


def _simulated(ds, lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    """(rows, values) per series from the simulator's columns (nulls are NaN, not counted)."""
    from .native import Simulator

    n = len(ds.schema.series)
    rows, values = np.zeros(n, np.int64), np.zeros(n, np.int64)
    sim = Simulator(ds.compiled, ds.spec.seed, lo, hi, ds.start_ns, ds.interval_ns, ds.epochs, cache=None)
    while True:
        r, c = sim.fill_columns(CHUNK, max(width, 1))
        rows += np.bincount(c["series"], minlength=n)
        values += np.bincount(c["series"], weights=(~np.isnan(c["values"])).sum(axis=1), minlength=n).astype(np.int64)
        if r.done:
            return list(zip(rows.tolist(), values.tolist()))


async def verify(conn: Connection, df: DataFile) -> list[dict]:
    """Count each table of df in the target: per table {table, unit, expected, counted, difference}
    (difference = counted - expected)."""
    t = conn.target
    cls = type(t)
    if not cls.keeps_data:
        raise UserError(f"verify: target {cls.name} keeps no data to count")
    if not cls.accepts(df.format):
        raise UserError(f"verify: target {cls.name} loads {cls.format} data; {df.path} is {df.format}")
    tables = df.tables()
    expected = expected_counts(df)
    await t.attach(tables)
    await t.flush()
    out = []
    for tb in tables:
        rows, values = expected[tb.name]
        want = rows if cls.count_unit == "rows" else values
        try:
            got = await t.count(Tables((tb,), tables.start_ns, tables.end_ns, rows, values))
        except Fatal as exc:
            raise UserError(f"verify: counting table {tb.name} in {cls.name}: {exc}") from None
        out.append({"table": tb.name, "unit": cls.count_unit, "expected": want, "counted": got,
                    "difference": got - want})
    return out


def all_equal(rows: list[dict]) -> bool:
    """Whether every table holds exactly what the data file has."""
    return all(r["difference"] == 0 for r in rows)


def render(rows: list[dict]) -> str:
    """The figures as a plain text table, one line per table."""
    unit = rows[0]["unit"] if rows else "rows"
    head = ("table", f"expected {unit}", f"counted {unit}", "difference")
    body = [(r["table"], f"{r['expected']:,}", f"{r['counted']:,}", f"{r['difference']:+,}" if r["difference"]
             else "0") for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(4)]
    return "\n".join("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(x, widths)))
                     for x in [head, *body])
