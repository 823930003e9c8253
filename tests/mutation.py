"""Mutation testing of the validation (issue 11 item 7), test-side helpers: pick two
points of a dataset through the reference engine, write a copy of a generated data
file with one value scaled by (1 + 1e-8) and one row removed (with an honest
manifest beside it, so `open_datafile` and the load's count check see the copy as it
is), and apply the same change to a reference engine's tables.

The mutated copy is edited as text, independently of the C serializers: a line of
line protocol or a CSV row is found by its measurement, entity tag and time, and the
value is rewritten in shortest round-trip form (what generate writes)."""

from __future__ import annotations

import hashlib
import json
import math
import pathlib
from dataclasses import dataclass

from tsbench.data.datafile import DataFile, open_datafile, tables_of
from tsbench.queries.base import HOUR, MINUTE, iso, q

REL_CHANGE = 1e-8


@dataclass(frozen=True)
class Point:
    """One row of a measurement: an entity (by its tag) at one time."""

    measurement: str
    tag: str
    entity: str
    time_ns: int


@dataclass(frozen=True)
class Mutation:
    scaled: Point            # its `field` multiplied by (1 + REL_CHANGE)
    field: str
    old: float
    new: float
    removed: Point           # the whole row removed
    removed_value: float     # its `field` (a bucket maximum)

    def describe(self) -> str:
        a, b = self.scaled, self.removed
        return (f"{a.measurement}.{self.field} of {a.entity} at {iso(a.time_ns)}: {self.old!r} -> {self.new!r}; "
                f"{b.measurement} row of {b.entity} at {iso(b.time_ns)} removed ({self.field}={self.removed_value!r})")


def _unique_bucket_maxima(con, m: str, tag: str, field: str, bucket_ns: int) -> list[tuple]:
    """(bucket start, max, entity, time_ns) of every time bucket whose maximum of `field`
    over all entities is reached by exactly one row and is below the field's largest value
    (a clamped walk's bound is a round number that many rows reach), by bucket."""
    return con.execute(f"""
        WITH c AS (SELECT {q(tag)} AS e, epoch_ns(time) AS t, epoch_ns(time) // {bucket_ns} * {bucket_ns} AS b,
                          {q(field)} AS v FROM {q(m)} WHERE {q(field)} IS NOT NULL),
             mx AS (SELECT b, max(v) AS v FROM c GROUP BY b)
        SELECT c.b, c.v, min(c.e), min(c.t) FROM c JOIN mx USING (b, v)
        WHERE c.v < (SELECT max(v) FROM c)
        GROUP BY c.b, c.v HAVING count(*) = 1
        ORDER BY c.b""").fetchall()


def choose(ref, measurement: str = "cpu", tag: str = "hostname", field: str = "usage_user",
           bucket_ns: int = MINUTE, span_ns: int = HOUR) -> Mutation:
    """Deterministically, from the reference engine, two bucket maxima of `field` over all
    entities (the max-cpu queries' minute buckets): (a) the largest in the first span
    (hour) of the dataset, to be scaled; (b) the largest in the last span, of another
    entity, to be removed. Each is the only row of its bucket that reaches the maximum,
    so both changes move the bucket's maximum for any entity filter that holds the
    entity; and not a round number: the scaled value needs all the digits a double has."""
    ds = ref.ds
    rows = _unique_bucket_maxima(ref.con, measurement, tag, field, bucket_ns)
    first, last = ds.start_ns // span_ns, (ds.end_ns - 1) // span_ns
    assert first != last, "the dataset must span two spans, one for each change"
    a = max((r for r in rows if r[3] // span_ns == first), key=lambda r: (r[1], -r[0]))
    b = max((r for r in rows if r[3] // span_ns == last and r[2] != a[2]), key=lambda r: (r[1], -r[0]))
    old = float(a[1])
    new = old * (1 + REL_CHANGE)
    assert new != old and float(repr(new)) == new and "e" not in repr(new)
    return Mutation(Point(measurement, tag, a[2], int(a[3])), field, old, new,
                    Point(measurement, tag, b[2], int(b[3])), float(b[1]))


def apply_scale(ref, m: Mutation) -> None:
    """The scaled value in a reference engine's tables (its answers forgotten)."""
    p = m.scaled
    n = ref.con.execute(f"UPDATE {q(p.measurement)} SET {q(m.field)} = ? WHERE {q(p.tag)} = ? AND epoch_ns(time) = ?",
                        [m.new, p.entity, p.time_ns]).fetchall()
    assert n == [(1,)], n
    ref._answers.clear()


def apply_removal(ref, m: Mutation) -> None:
    """The removed row, from a reference engine's tables (its answers forgotten)."""
    p = m.removed
    n = ref.con.execute(f"DELETE FROM {q(p.measurement)} WHERE {q(p.tag)} = ? AND epoch_ns(time) = ?",
                        [p.entity, p.time_ns]).fetchall()
    assert n == [(1,)], n
    ref._answers.clear()


# ---- the mutated data file ---------------------------------------------------------------------

def _lp_point(line: str) -> tuple[str, dict, str, int]:
    """measurement, tags, the field set's text and the time of a line (no escapes: devops)."""
    head, fieldset, t = line.split(" ")
    m, *tags = head.split(",")
    return m, dict(kv.split("=", 1) for kv in tags), fieldset, int(t)


def _lp_edit(line: str, p: Point, m: Mutation | None) -> tuple[str | None, int]:
    """(the line as written to the copy, or None if removed; its values if removed)."""
    meas, tags, fieldset, t = _lp_point(line)
    if meas != p.measurement or tags.get(p.tag) != p.entity or t != p.time_ns:
        return line, 0
    if m is None:
        return None, len(fieldset.split(","))
    fields = [kv.split("=", 1) for kv in fieldset.split(",")]
    out = []
    for k, v in fields:
        if k == m.field:
            assert float(v) == m.old, (v, m.old)
            v = repr(m.new)
        out.append(f"{k}={v}")
    return f"{line.split(' ')[0]} {','.join(out)} {t}", 0


def _csv_edit(line: str, p: Point, m: Mutation | None, cols: dict[str, dict[str, int]]) -> tuple[str | None, int]:
    """The same for a CSV row: measurement, time, tag values, field values."""
    cells = line.split(",")
    if cells[0] != p.measurement or cells[1] != iso(p.time_ns) or cells[cols[p.measurement][p.tag]] != p.entity:
        return line, 0
    if m is None:
        return None, sum(1 for k in cols[p.measurement]["fields"] if cells[k] != "")
    k = cols[p.measurement][m.field]
    assert float(cells[k]) == m.old, (cells[k], m.old)
    cells[k] = repr(m.new)
    return ",".join(cells), 0


def write_mutated(df: DataFile, m: Mutation, out: str | pathlib.Path) -> DataFile:
    """A copy of the (uncompressed) data file with m applied, and its manifest: the
    original's, with rows, values, bytes, file size and sha256 of the copy."""
    assert df.compression == "none" and df.format in ("influx", "csv")
    cols = {}
    for t in tables_of(df.dataset, 0, 0).tables:
        c = {tag: 2 + i for i, tag in enumerate(t.tags)}
        c.update({f: 2 + len(t.tags) + j for j, f in enumerate(t.field_names)})
        c["fields"] = [2 + len(t.tags) + j for j in range(len(t.field_names))]
        cols[t.name] = c
    edit = _lp_edit if df.format == "influx" else (lambda ln, p, mm: _csv_edit(ln, p, mm, cols))
    scaled = removed = removed_values = 0
    lines = []
    for line in df.path.read_text().splitlines():
        new, _ = edit(line, m.scaled, m)
        if new != line:
            scaled += 1
        new2, nvals = edit(new, m.removed, None)
        if new2 is None:
            removed += 1
            removed_values += nvals
            continue
        lines.append(new2)
    assert scaled == 1 and removed == 1, (scaled, removed)
    data = ("\n".join(lines) + "\n").encode()
    out = pathlib.Path(out)
    out.write_bytes(data)
    manifest = dict(df.manifest, rows=df.rows - 1, values=df.values - removed_values, bytes=len(data),
                    file_bytes=len(data), sha256=hashlib.sha256(data).hexdigest(),
                    stats=_stats_of_lines(df, lines, cols), mutation=m.describe())
    pathlib.Path(str(out) + ".manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return open_datafile(out)


def _stats_of_lines(df: DataFile, lines: list[str], cols: dict) -> dict:
    """The manifest's "stats" of the copy, recounted from its text (per table: distinct
    tag sets, and per field count, sum, sum of magnitudes, min and max)."""
    tables = {t.name: t for t in tables_of(df.dataset, 0, 0).tables}
    seen = {name: ({}, set()) for name in tables}        # table -> (field -> values, tag sets)
    for line in lines:
        if df.format == "influx":
            meas, tags, fieldset, _ = _lp_point(line)
            values = dict(kv.split("=", 1) for kv in fieldset.split(","))
            key = tuple(sorted(tags.items()))
        else:
            cells = line.split(",")
            meas, c = cells[0], cols[cells[0]]
            values = {f: cells[c[f]] for f in tables[meas].field_names if cells[c[f]] != ""}
            key = tuple(cells[c[t]] for t in tables[meas].tags)
        fields, keys = seen[meas]
        keys.add(key)
        types = {c.name: c.type for c in tables[meas].fields}
        for f, v in values.items():
            fields.setdefault(f, []).append(int(v.rstrip("i")) if types[f] == "int" else float(v))
    out = {}
    for name, t in tables.items():
        fields, keys = seen[name]
        out[name] = {"series": len(keys), "fields": {}}
        for col in t.fields:
            vs = fields.get(col.name, [])
            total = sum(vs) if col.type == "int" else math.fsum(vs)
            out[name]["fields"][col.name] = {"count": len(vs), "sum": total, "sum_abs": math.fsum(abs(v) for v in vs),
                                             "min": min(vs) if vs else None, "max": max(vs) if vs else None}
    return out


def covers(params: dict, p: Point, ds) -> bool:
    """Whether a drawn query reads the point: its window [start, end) holds the time (no
    window: the whole dataset) and its entity filter, if any, names the entity."""
    if params.get("measurement") not in (None, p.measurement):
        return False
    start, end = params.get("start", ds.start_ns), params.get("end", ds.end_ns)
    if not start <= p.time_ns < end:
        return False
    if params.get("tag") == p.tag and params.get("tag_values") is not None:
        return p.entity in params["tag_values"]
    return True
