"""How answers are compared (issue 35 items 11 and 12): stored floats bit for
bit, sums and means within the rounding error of their summation (n and
sum|x| from the reference engine), and the answers of ordered queries in
their order; everything else as a set of rows."""

from __future__ import annotations

import math
import random

import pytest

from tsbench import queries
from tsbench.queries.base import QuerySpec
from tsbench.queries.compare import Tolerance, U, compare, gamma, tolerance
from tsbench.queries.reference import Reference
from tsbench.queries.shapes import ordered

from conftest import dataset

START, END = "2016-01-01T00:00:00Z", "2016-01-01T02:00:00Z"
TYPES = ("max-cpu-1", "single-groupby-5-1-1", "read-tenth", "lastpoint", "double-groupby-5", "groupby-orderby-limit")


@pytest.fixture(scope="module")
def ref():
    ds = dataset(use_case="devops", scale=3, start=START, end=END, seed=4)
    r = Reference(ds)
    specs = {s.type: s for s in queries.generate(ds, list(TYPES), 1, 5, reference=r)}
    return r, specs


def _nudge(rows: list[tuple], col: int, rel: float) -> list[tuple]:
    """The answer with its first non-zero float of column col moved by rel (relative)."""
    out, done = [], False
    for r in rows:
        v = r[col]
        if not done and isinstance(v, float) and v != 0.0:
            r, done = r[:col] + (v * (1 + rel),) + r[col + 1:], True
        out.append(r)
    assert done
    return out


@pytest.mark.parametrize("name, col", [("max-cpu-1", 1), ("single-groupby-5-1-1", 3), ("read-tenth", 2),
                                       ("lastpoint", 2)])
def test_a_stored_value_changed_by_5e_11_differs(ref, name, col):
    """max, min, raw rows and the newest row hand back what was stored: exactly."""
    r, specs = ref
    s = specs[name]
    exp = r.expected(s)
    tol = tolerance(s, 0.0, r)
    assert compare(s.params, exp, list(exp), tol) is None
    changed = _nudge(exp, col, 5.2e-11)
    assert changed != exp
    mm = compare(s.params, exp, changed, tol)
    assert mm is not None and "expected" in mm.reason
    # a target keeping 12 significant digits (VictoriaMetrics) is allowed its rounding
    assert compare(s.params, exp, _nudge(exp, col, 2e-12), tolerance(s, 1e-11, r)) is None
    assert compare(s.params, exp, changed, tolerance(s, 1e-11, r)) is not None


def _mean_in_another_order(r: Reference, s: QuerySpec) -> list[tuple]:
    """double-groupby's answer computed in Python from the rows, each group summed backwards."""
    p = s.params
    fields = ", ".join(f'"{f}"' for f in p["fields"])
    rows = r.con.execute(f"SELECT (epoch_ns(time) // {p['bucket']}) * {p['bucket']}, hostname, {fields} FROM cpu "
                         f"WHERE epoch_ns(time) >= {p['start']} AND epoch_ns(time) < {p['end']} "
                         f"ORDER BY time DESC").fetchall()
    groups: dict[tuple, list[list[float]]] = {}
    for row in rows:
        groups.setdefault(row[:2], []).append(list(row[2:]))
    out = []
    for key, vals in groups.items():
        cols = list(zip(*vals))
        out.append(key + tuple(sum(c[::-1]) / len(c) if None not in c else None for c in cols))
    return out


def test_means_summed_in_another_order_pass_and_a_change_beyond_the_bound_differs(ref):
    r, specs = ref
    s = specs["double-groupby-5"]
    exp, tol = r.expected(s), tolerance(s, 0.0, r)
    mine = _mean_in_another_order(r, s)
    assert compare(s.params, exp, mine, tol) is None
    n, total = tol.scales[0][2], tol.scales[0][3]              # the first row's first field: n, sum|x|
    assert n > 100 and total > 0
    bound = 2 * (gamma(n) * total / n + U * abs(exp[0][2]))
    far = exp[:1] + exp[1:]
    far[0] = far[0][:2] + (far[0][2] + 3 * bound,) + far[0][3:]
    assert compare(s.params, exp, far, tol) is not None


def test_sums_with_cancellation_pass_in_any_order():
    """The bound follows the data (n, sum|x|), not a fixed relative tolerance: sums of
    mixed signs and magnitudes summed in other orders pass; a larger change does not."""
    p = {"shape": "aggregate", "agg": "sum", "fields": ["v"], "types": ["float"], "bucket": None,
         "group_by": ["g"]}
    rng = random.Random(7)
    def group():                # large values that cancel, and small ones: what remains is small
        big = [rng.choice((-1, 1)) * 10 ** rng.uniform(6, 12) for _ in range(1000)]
        xs = big + [-x for x in big] + [rng.uniform(0, 1) for _ in range(200)]
        return rng.sample(xs, len(xs))
    data = {f"g{k}": group() for k in range(20)}
    exp = [(g, sum(xs)) for g, xs in data.items()]
    scales = [(g, len(xs), sum(abs(x) for x in xs)) for g, xs in data.items()]
    tol = Tolerance(scales=scales)
    moved = 0
    for order in (sorted, lambda xs: xs[::-1], lambda xs: rng.sample(xs, len(xs))):
        got = [(g, sum(order(xs))) for g, xs in data.items()]
        moved += sum(a[1] != b[1] for a, b in zip(exp, got))
        assert compare(p, exp, got, tol) is None
    got = [(g, math.fsum(xs)) for g, xs in data.items()]          # exactly rounded, as a careful engine does
    assert compare(p, exp, got, tol) is None
    assert moved > 20 and any(abs(a[1] - b[1]) > 1e-9 * abs(a[1]) for a, b in zip(exp, got))
    s = scales[0]
    off = [(exp[0][0], exp[0][1] + 3 * gamma(s[1]) * s[2])] + exp[1:]
    assert compare(p, exp, off, tol) is not None


def test_an_ordered_answer_is_compared_in_order(ref):
    r, specs = ref
    s = specs["groupby-orderby-limit"]
    assert ordered(s.params)
    exp = r.expected(s)
    assert len(exp) == 5 and exp[0][0] > exp[-1][0]
    tol = tolerance(s, 0.0, r)
    assert compare(s.params, exp, list(exp), tol) is None
    mm = compare(s.params, exp, exp[::-1], tol)
    assert mm is not None and "in order" in mm.reason
    # rows of one time (several groups) may come in any order among themselves
    p = {**s.params, "group_by": ["hostname"]}
    tied = [(60, "b", 2.0), (60, "a", 1.0), (0, "a", 3.0)]
    assert compare(p, tied, [(60, "a", 1.0), (60, "b", 2.0), (0, "a", 3.0)]) is None
    assert compare(p, tied, [(0, "a", 3.0), (60, "a", 1.0), (60, "b", 2.0)]) is not None


def test_an_unordered_answer_is_compared_as_a_set(ref):
    r, specs = ref
    for name in ("max-cpu-1", "double-groupby-5", "read-tenth", "lastpoint"):
        s = specs[name]
        assert not ordered(s.params)
        exp = r.expected(s)
        assert len(exp) > 1 and compare(s.params, exp, exp[::-1], tolerance(s, 0.0, r)) is None


def test_a_diff_without_values_says_only_where_they_differ(ref):
    """--redact: a mismatch's diff without the answer's values (the user's data), for each kind
    of difference; a count of rows is a figure and stays."""
    r, specs = ref
    s = specs["lastpoint"]
    exp = r.expected(s)
    tol = tolerance(s, 0.0, r)
    value = compare(s.params, exp, [(*exp[0][:-1], exp[0][-1] + 1), *exp[1:]], tol)
    group = compare(s.params, exp, [(exp[0][0] + 1, *exp[0][1:]), *exp[1:]], tol)
    count = compare(s.params, exp, exp[1:], tol)
    assert value.diff(values=False) == "row 0 column 9 (usage_guest_nice): values differ (not shown: --redact)"
    assert group.diff(values=False) == "row 0: time/group: values differ (not shown: --redact)"
    assert count.diff(values=False) == count.reason == f"{len(exp) - 1} rows, expected {len(exp)}"
    for mm in (value, group):
        assert str(exp[0][-1]) in mm.diff() and str(exp[0][-1]) not in mm.diff(values=False)
