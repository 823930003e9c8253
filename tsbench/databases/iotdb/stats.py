"""What IoTDB holds of a measurement, value by value in aggregate (phase 2, value
verification: target.py's stats()): one `ALIGN BY DEVICE` aggregation over the
dataset's window, a row per device (a tag set, paths.py), the columns read by
position. Series: the devices with a value in the window.

IoTDB's sum of an INT64 timeseries is a DOUBLE, and so is any arithmetic on it
(`x / 7` is not an integer; observed on 2.0.1-beta): a device's sum of values of
2^40 (DevOps' disk totals) passes 2^53 after 8,192 rows. So an integer field is
summed in two exact halves, `sum(x % 2^26)` and `sum((x - x % 2^26) / 2^26)`,
each an integer sum that stays within 2^53 (every partial sum an exact double)
as long as the device's values stay within 2^53 and it holds at most 2^26 of
them; the halves are joined here as ints. A device beyond those bounds is Fatal
(it cannot be summed exactly), never a rounded figure."""

from __future__ import annotations

from tsbench.core.errors import Fatal
from tsbench.core.model import Table
from tsbench.databases.iotdb.paths import measurement_path, node
from tsbench.databases.shared.stats import exact_int

SPLIT = 2 ** 26
EXACT = 2 ** 53
MAX_ROWS = 2 ** 26


def _columns(t: Table) -> list[str]:
    """The aggregates of each field, in order: count, min, max, then the sum (float) or its
    two halves (int)."""
    out = []
    for f in t.fields:
        c = node(f.name)
        out += [f"count({c})", f"min_value({c})", f"max_value({c})"]
        out += [f"sum({c} % {SPLIT})", f"sum(({c} - {c} % {SPLIT}) / {SPLIT})"] if f.type == "int" else [f"sum({c})"]
    return out


def sql(db: str, t: Table, lo: int, hi: int) -> str:
    """The figures of every device of t with times in [lo, hi) (the server's unit)."""
    return (f"SELECT {', '.join(_columns(t))} FROM {measurement_path(db, t.name)}.** "
            f"WHERE time >= {lo} AND time < {hi} ALIGN BY DEVICE")


def read(t: Table, df, merge, what: str) -> int:
    """The answer of sql() into merge (stats.FieldMerge); the devices holding a value."""
    series = 0
    for row in df.itertuples(index=False):
        vals, at, held = list(row)[1:], 0, False        # row[0]: the device
        for f in t.fields:
            n, lo, hi = vals[at: at + 3]
            n = int(n) if n == n else 0                  # NaN: no value
            width = 5 if f.type == "int" else 4
            if n:
                held = True
                total = _joined(f.name, n, lo, hi, vals[at + 3], vals[at + 4], what) if f.type == "int" \
                    else vals[at + 3]
                merge.add(f.name, n, total, lo, hi)
            at += width
        series += held
    return series


def _joined(field: str, n: int, lo, hi, low_sum: float, high_sum: float, what: str) -> int:
    """A device's integer sum from its halves' sums, if they were exact."""
    if n > MAX_ROWS or max(abs(int(lo)), abs(int(hi))) > EXACT:
        raise Fatal(f"{what}: field {field}: a device holds {n:,} values within [{lo}, {hi}]; IoTDB sums them as "
                    f"doubles, exact only up to {MAX_ROWS:,} values within 2^53")
    return exact_int(high_sum, f"{what}: {field}") * SPLIT + exact_int(low_sum, f"{what}: {field}")
