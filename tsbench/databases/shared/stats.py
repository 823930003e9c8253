"""Value verification's shared arithmetic (phase 2, after a load): the partial
aggregates a database answers (per series, partition, device or shard: count,
sum, min and max of a field's non-null values) merged into model.TableStats,
each figure in its field's type. Integer fields give ints: a float a database
answered for one is taken only when it is an integer exactly and within 2^53
(every integer up to 2^53 is a double; beyond it a double may be a rounded sum),
else Fatal, never a rounded figure. Float fields give floats; their partial sums
are added with math.fsum, so merging adds no rounding of its own to the
database's summation bound. Targets' stats() use it (target.py)."""

from __future__ import annotations

import math

from tsbench.core.errors import Fatal
from tsbench.core.model import FieldStats, Table, TableStats

EXACT_INT = 2 ** 53          # beyond this, a double is not every integer


def exact_int(x, what: str) -> int:
    """x as an int: an int as is, a float only when it is an integer within 2^53 (numpy
    scalars as their Python values)."""
    if hasattr(x, "item"):
        x = x.item()
    if isinstance(x, int) and not isinstance(x, bool):
        return int(x)                        # a subclass (bson's Int64) as a plain int
    if isinstance(x, float) and x.is_integer() and abs(x) <= EXACT_INT:
        return int(x)
    if isinstance(x, str) and x.lstrip("-").isdigit():
        return int(x)
    raise Fatal(f"{what}: {x!r} is not an exact integer (a double beyond 2^53 may be a rounded sum)")


class FieldMerge:
    """Partial aggregates of each field column of one table, merged."""

    def __init__(self, table: Table, what: str, exact_int_sums: bool = True):
        """exact_int_sums False: the database's integer sums may be rounded doubles (its
        value_checks say the sum is not checked); they are taken rounded to an int."""
        self.table, self.what, self.exact_int_sums = table, what, exact_int_sums
        self.types = {f.name: f.type for f in table.fields}
        self.parts: dict[str, list[tuple]] = {f.name: [] for f in table.fields}

    def add(self, field: str, count, total, lo, hi) -> None:
        """One partial of field: its count, sum, min and max (min/max None or anything when count is 0)."""
        n = exact_int(count or 0, f"{self.what}: count of {self.table.name}.{field}")
        if n == 0:
            return
        if self.types[field] == "int":
            where = f"{self.what}: {self.table.name}.{field}"
            total = exact_int(total, f"{where}: sum") if self.exact_int_sums else round(total)
            part = (n, total, exact_int(lo, f"{where}: min"), exact_int(hi, f"{where}: max"))
        else:
            part = (n, float(total), float(lo), float(hi))      # numpy's floats too
        self.parts[field].append(part)

    def field(self, name: str) -> FieldStats:
        parts = self.parts[name]
        if not parts:
            return FieldStats(0, 0 if self.types[name] == "int" else 0.0, None, None)
        total = sum(p[1] for p in parts) if self.types[name] == "int" else math.fsum(p[1] for p in parts)
        return FieldStats(sum(p[0] for p in parts), total, min(p[2] for p in parts), max(p[3] for p in parts))

    def stats(self, series: int) -> TableStats:
        return TableStats(series, {f: self.field(f) for f in self.parts})
