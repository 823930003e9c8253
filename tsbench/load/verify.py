"""Phase 2, afterwards: check what a database holds against the data file it was
loaded from, table by table (`tsbench verify`; the load's own verification and the
runner call the same check()). Two parts: the counts (rows or values, as before:
closed form for perfect delivery, else one pass of the simulator's columns) and the
values: per table and field the count, sum, min and max of the non-null values, and
the table's series, against what the data file holds (its manifest's "stats", written
by generate from the C core; for an older file one pass of the simulator). Each
target says per kind whether its stats() answers it exactly (Target.value_checks);
a kind it cannot answer is reported "not checked" with its reason, never "ok".

How values compare: counts, series, integer sums exactly (modulo 2^64: some servers sum
int64 columns in int64, which wraps); min and max exactly (to
float_digits significant digits on a target that keeps fewer than a double's); a
float sum within the summation bound (n - 1) * u * sum|x| (u = 2^-53: any order of
adding n doubles stays within it of the exact sum, and the file's compensated sum is
the exact sum rounded), plus the stored values' rounding on a target with
float_digits. When values differ, the data file is compared with what its dataset
generates (datacheck.first_changed_line), so an edited line is named FILE:LINE.

A data file made from an import (data/stored.py, storedfile.py) is checked the same way:
its expected counts and values are its loadable view's, computed from the Parquet files
(stored.view_stats; the manifest's "stats" are the same figures), not the simulator's."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import numpy as np

from tsbench.core.errors import Fatal, UserError
from tsbench.core.model import STAT_KINDS, Tables
from tsbench.data.datafile import DataFile
from tsbench.data.valuestats import stats_of
from tsbench.databases.shared.target import Target
from tsbench.load.connect import Connection

CHUNK = 1 << 16       # records per fill_columns call when counting faulty deliveries


def expected_counts(df: DataFile) -> dict[str, tuple[int, int]]:
    """Per table (measurement): the (rows, values) the data file holds (of a file made from
    an import: its view's, from the Parquet files, stored.view_stats)."""
    ds = df.dataset
    if ds.stored:
        out = {name: (f["rows"], f["values"]) for name, f in ds.figures.items()}
        _check_totals(df, out)
        return out
    lo, hi = df.manifest.get("entities") or (0, ds.entities)
    visible = [sum(1 for f in se.fields if not f.hidden) for se in ds.schema.series]
    names = [se.name for se in ds.schema.series]
    f = ds.schema.faults
    if not any(getattr(f, k) for k in ("group_drop", "group_late", "missing", "late", "null_field", "null_tag")):
        rows = (hi - lo) * ds.epochs
        out = {n: (rows, rows * v) for n, v in zip(names, visible)}
    else:
        out = dict(zip(names, _simulated(ds, lo, hi, max(visible))))
    _check_totals(df, out)
    return out


def _check_totals(df: DataFile, out: dict[str, tuple[int, int]]) -> None:
    if sum(r for r, _ in out.values()) != df.rows or sum(v for _, v in out.values()) != df.values:
        raise UserError(f"{df.path}: the manifest's totals ({df.rows:,} rows, {df.values:,} values) do not "
                        f"match its dataset; regenerate the file")


def _simulated(ds, lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    """(rows, values) per series from the simulator's columns (nulls are NaN, not counted)."""
    from tsbench.data.native import Simulator

    n = len(ds.schema.series)
    rows, values = np.zeros(n, np.int64), np.zeros(n, np.int64)
    sim = Simulator(ds.compiled, ds.spec.seed, lo, hi, ds.start_ns, ds.interval_ns, ds.epochs, cache=None)
    while True:
        r, c = sim.fill_columns(CHUNK, max(width, 1))
        rows += np.bincount(c["series"], minlength=n)
        values += np.bincount(c["series"], weights=(~np.isnan(c["values"])).sum(axis=1), minlength=n).astype(np.int64)
        if r.done:
            return list(zip(rows.tolist(), values.tolist()))


U = 2.0 ** -53          # the unit roundoff of a double


@dataclass
class Verdict:
    """What check() found: per table the count row {table, unit, expected, counted,
    difference, status}, and the value rows {table, field (None: the table's series), kind,
    status ("ok" | "differs" | "not checked"), file, stored, bound, note}; note names a
    changed line of the data file when one explains a difference."""

    tables: list[dict]
    values: list[dict]
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.differing()

    def differing(self) -> list[dict]:
        return [r for r in self.tables + self.values if r["status"] == "differs"]

    def first_difference(self) -> str:
        """One line naming the first table (and field) that differs, or ""."""
        bad = self.differing()
        if not bad:
            return ""
        r, n = bad[0], len(bad)
        if "field" not in r:
            what = f"{r['table']} holds {r['counted']:,} {r['unit']}, the data file has {r['expected']:,}"
        else:
            where = f"{r['table']}.{r['field']}" if r["field"] else f"table {r['table']}"
            what = f"{where}: {r['kind']} {_fmt(r['stored'])} stored, the data file has {_fmt(r['file'])}"
        more = f" ({n - 1} more differences)" if n > 1 else ""
        return what + more + (f"; {self.note}" if self.note else "")

    def summary(self) -> str:
        """"N of M tables differ; first: ..." (or that all hold what the file has)."""
        bad = {r["table"] for r in self.differing()}
        n = len(self.tables) or len({r["table"] for r in self.values})
        return f"{len(bad)} of {n} tables differ; first: {self.first_difference()}" if bad else \
            f"all {n} tables hold what the data file has"

    def to_json(self) -> dict:
        return {"ok": self.ok, "tables": self.tables, "values": self.values, "note": self.note}


async def verify(conn: Connection, df: DataFile) -> Verdict:
    """`tsbench verify`: check each table of df in the target (flushed first)."""
    t = conn.target
    cls = type(t)
    if not cls.keeps_data:
        raise UserError(f"verify: target {cls.name} keeps no data to count")
    if not cls.accepts(df.format):
        raise UserError(f"verify: target {cls.name} loads {cls.format} data; {df.path} is {df.format}")
    tables = df.tables()
    await t.attach(tables)
    await t.flush()
    try:
        return await check(t, df, tables)
    except Fatal as exc:
        raise UserError(f"verify: {exc}") from None


async def check(t: Target, df: DataFile, tables: Tables, counts: bool = True) -> Verdict:
    """The counts of every table (unless counts is False: the load has counted them, in
    all) and its values."""
    expected = expected_counts(df) if counts else {}
    cls = type(t)
    rows = []
    for tb in tables if counts else ():
        want = expected[tb.name][0 if cls.count_unit == "rows" else 1]
        got = await t.count(Tables((tb,), tables.start_ns, tables.end_ns, *expected[tb.name]))
        rows.append({"table": tb.name, "unit": cls.count_unit, "expected": want, "counted": got,
                     "difference": got - want, "status": "ok" if got == want else "differs"})
    verdict = Verdict(rows, await check_values(t, df, tables))
    if any(r["status"] == "differs" for r in verdict.values):
        from tsbench.data.datacheck import first_changed_line

        verdict.note = await asyncio.to_thread(first_changed_line, df) or ""
    return verdict


def file_stats(df: DataFile) -> dict:
    """What the data file holds per table (the manifest's "stats", which a file made from an
    import always has, or one simulator pass)."""
    if "stats" in df.manifest:
        return df.manifest["stats"]
    lo, hi = df.manifest.get("entities") or (0, df.dataset.entities)
    return stats_of(df.dataset, lo, hi)


async def check_values(t: Target, df: DataFile, tables: Tables) -> list[dict]:
    """Per table: a row per field and kind the target answers, one per kind it cannot."""
    cls = type(t)
    checks = dict(t.value_checks)          # the class's (a spread may say more of itself)
    want_all = None
    out = []
    for tb in tables:
        mine = {**checks, "series": NULL_TAGS} if checks.get("series") is None and _null_tags(df, tb.name) else checks
        unchecked = {k: why for k, why in mine.items() if why is not None}
        out += [{"table": tb.name, "field": None, "kind": k, "status": "not checked", "file": None, "stored": None,
                 "bound": None, "note": why} for k, why in unchecked.items()]
        if len(unchecked) == len(STAT_KINDS):
            continue
        want_all = want_all or file_stats(df)
        want = want_all[tb.name]
        got = await t.stats(tb, tables)
        if "series" not in unchecked:
            out.append(_row(tb.name, None, "series", want["series"], got.series, 0))
        types = {c.name: c.type for c in tb.fields}
        for name, w in want["fields"].items():
            g = got.fields.get(name)
            for kind in ("count", "sum", "min", "max"):
                if kind in unchecked:
                    continue
                stored = getattr(g, kind) if g is not None else None
                out.append(_row(tb.name, name, kind, w[kind], stored, _bound(kind, w, types[name], cls.float_digits)))
    return out


NULL_TAGS = "the data file has null tags (a row with a null tag is a tag set of its own)"


def _null_tags(df: DataFile, table: str) -> bool:
    """Whether rows of the table lack a tag (generated: the null_tag fault; imported: the view's)."""
    ds = df.dataset
    return ds.figures[table]["null_tags"] if ds.stored else bool(ds.schema.faults.null_tag)


def _bound(kind: str, w: dict, type_: str, digits: int | None) -> float:
    """How far a stored figure may be from the file's (0: exactly)."""
    rel = 10.0 ** (1 - digits) if digits else 0.0        # a value kept to `digits` significant digits
    if kind == "sum":
        if type_ == "int" and not digits:
            return 0.0
        return max(w["count"] - 1, 0) * U * w["sum_abs"] + U * abs(w["sum"]) + rel * w["sum_abs"]
    if kind in ("min", "max") and w[kind] is not None:
        return rel * abs(w[kind])
    return 0.0


def _row(table: str, field: str | None, kind: str, want, got, bound: float) -> dict:
    if want is None or got is None:
        same = want is None and got is None
    elif kind == "sum" and bound == 0 and isinstance(want, int) and isinstance(got, int):
        same = (got - want) % 2 ** 64 == 0        # InfluxDB and QuestDB sum an int64 column in int64, which wraps
    elif bound == 0 and isinstance(want, int) and not isinstance(got, int):
        same = float(got).is_integer() and int(got) == want       # a target answering an int as a float
    else:
        same = abs(got - want) <= bound
    return {"table": table, "field": field, "kind": kind, "status": "ok" if same else "differs", "file": want,
            "stored": got, "bound": bound or None, "note": ""}


def _fmt(x) -> str:
    return "none" if x is None else f"{x:,}" if isinstance(x, int) else repr(x)


def render(v: Verdict) -> str:
    """The counts as a plain text table, one line per table, then the values: a summary
    line, every row that differs and every kind not checked."""
    rows = v.tables
    unit = rows[0]["unit"] if rows else "rows"
    head = ("table", f"expected {unit}", f"counted {unit}", "difference")
    body = [(r["table"], f"{r['expected']:,}", f"{r['counted']:,}", f"{r['difference']:+,}" if r["difference"]
             else "0") for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(4)]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(x, widths)))
             for x in [head, *body]]
    vals = v.values
    n_ok = sum(r["status"] == "ok" for r in vals)
    bad = [r for r in vals if r["status"] == "differs"]
    lines.append(f"values: {n_ok:,} checks ok, {len(bad):,} differ, "
                 f"{sum(r['status'] == 'not checked' for r in vals):,} not checked")
    for r in bad:
        where = f"{r['table']}.{r['field']}" if r["field"] else r["table"]
        lines.append(f"  differs: {where} {r['kind']}: stored {_fmt(r['stored'])}, data file {_fmt(r['file'])}")
    unchecked: dict[tuple[str, str], list[str]] = {}
    for r in vals:
        if r["status"] == "not checked":
            unchecked.setdefault((r["kind"], r["note"]), []).append(r["table"])
    for (kind, why), names in unchecked.items():
        lines.append(f"  not checked: {kind} ({', '.join(names)}): {why}")
    if v.note:
        lines.append(v.note)
    return "\n".join(lines)
