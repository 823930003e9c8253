"""Comparing answers (phase 5): a target's canonical rows against the reference's,
after the same normalization (empty buckets dropped; rows sorted by time and
group, unless the query's meaning includes their order: shapes.ordered()).

How values are compared (Tolerance):
* integers and strings exactly; a null equals only a null.
* stored floats (max, min, a row's or the newest row's fields: Value.stored)
  exactly, bit for bit: the database hands back what was written.
* sums and means of floats (an aggregate sum or mean: shapes.summed()) within
  their rounding error. Summing n doubles in any order (recursive, pairwise,
  in several partial sums merged) errs by at most gamma(n) * sum|x_i|, where
  gamma(n) = n*u / (1 - n*u) and u = 2^-53 (Higham, Accuracy and Stability of
  Numerical Algorithms, 2nd ed., (4.4); n - 1 would do, n leaves room for the
  merge of partial sums). A mean m = sum / n adds one rounding, u*|m|. Both the
  reference and the target err, so two answers may differ by twice that:
      sum:  2 * gamma(n) * S
      mean: 2 * (gamma(n) * S / n + u * |m|)
  n and S = sum|x_i| are the reference engine's, computed per answer row and
  field by the same query with count(x) and sum(abs(x)) (shapes.scale_sql,
  Reference.scales).
* the other computed floats (the iot types' means of means, ratios, durations:
  no Value.stored, not summed()) within 4 * gamma(N) relative, N the most rows
  one value can read (the dataset's rows: entities x epochs). Their fields are
  never negative (clamped walks, capacities), so sum|x| = |sum x| and a sum's
  error is at most gamma(N) relative; a value is at most two such stages (a mean
  of per-truck means, of ratios), and both sides err: 2 x 2.
* a target that keeps fewer digits than a double (its class's float_digits,
  e.g. VictoriaMetrics 12) adds 10^(1 - digits) relative to every float, stored
  values included: its stored value is the double rounded to that many digits."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from tsbench.queries.shapes import columns, ordered, summed

# ---- comparing answers ------------------------------------------------------------------------

U = 2.0 ** -53                 # the unit roundoff of a double


def gamma(n: int) -> float:
    """Higham's gamma(n) = n*u / (1 - n*u): the relative error bound of n roundings."""
    return n * U / (1 - n * U) if n * U < 0.5 else math.inf


@dataclass(frozen=True)
class Tolerance:
    """What the floats of two answers to one query may differ by (the module's rules)."""

    rel: float = 0.0                      # the target's stored precision, 10^(1 - float_digits); 0: doubles
    rows: int = 0                         # N: the most rows one computed value reads
    scales: list[tuple] | None = None     # summed(): the reference's (lead..., n, sum|x| per field) per row


def tolerance(spec, rel: float, reference) -> Tolerance:
    """The Tolerance of a query's answers on a target of stored precision rel, with N and
    the per-row scales from the reference engine (a Reference or a CachedReference)."""
    ds = reference.ds
    scales = reference.scales(spec) if summed(spec.params) else None
    rows = ds.tables.rows if ds.stored else ds.entities * ds.epochs     # an import: its rows
    return Tolerance(rel, rows, scales)


@dataclass
class Mismatch:
    reason: str
    expected: list[tuple]
    got: list[tuple]
    where: str = ""           # the reason without the answer's values ("" : the reason holds none)

    def diff(self, limit: int = 5, values: bool = True) -> str:
        """A readable diff of the first differing rows; without values, only where they differ
        (--redact: an answer's values are the user's data)."""
        if not values:
            return f"{self.where}: values differ (not shown: --redact)" if self.where else self.reason
        lines = [self.reason]
        exp, got = self.expected, self.got
        i = next((k for k in range(min(len(exp), len(got))) if exp[k] != got[k]), min(len(exp), len(got)))
        for k in range(i, min(i + limit, max(len(exp), len(got)))):
            e = exp[k] if k < len(exp) else "(none)"
            g = got[k] if k < len(got) else "(none)"
            lines.append(f"  row {k}: expected {e}")
            lines.append(f"  row {k}:      got {g}")
        return "\n".join(lines)


def at_resolution(p: dict, rows: list[tuple], ns: int) -> list[tuple]:
    """The reference's rows of query p as a database keeping times to ns holds them: the leading
    time of a rows or last answer floored (a point's own time); a bucket's start (whole seconds)
    is unchanged by it, and other answers have no time column."""
    timed = p.get("shape") in ("rows", "last") or (p.get("shape") == "aggregate" and p.get("bucket"))
    if ns <= 1 or not rows or not timed:
        return rows
    return [(r[0] - r[0] % ns, *r[1:]) if isinstance(r[0], int) else r for r in rows]


def plain(v):
    """A database value as a plain Python value (Decimal -> int or float)."""
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def _norm(rows: list[tuple], n_lead: int, in_order: bool = False) -> list[tuple]:
    """Drop rows whose values are all null (an empty bucket is the same as a missing
    one, in every dialect) and sort by time and group; in_order: keep the order of
    the times (the answer's meaning) and sort only rows of equal time."""
    rows = [tuple(plain(v) for v in r) for r in rows]
    out = [r for r in rows if any(v is not None and not (isinstance(v, float) and math.isnan(v))
                                          for v in r[n_lead:])]
    def key(r):          # time and group first, then the values: ties sort alike
        return tuple((x is None, "" if x is None else str(x)) if isinstance(x, str) or x is None
                     else (False, x) for x in r[:n_lead]) + \
            tuple((x is None, 0.0 if x is None else float(x)) if not isinstance(x, str) else (False, 0.0)
                  for x in r[n_lead:])
    if not in_order:
        return sorted(out, key=key)
    run, runs = -1, []                    # the run of equal times each row is in, in answer order
    for k, r in enumerate(out):
        run += k == 0 or r[0] != out[k - 1][0]
        runs.append(run)
    return [r for _, r in sorted(zip(runs, out), key=lambda x: (x[0], key(x[1])))]


def _bounds(p: dict, tol: Tolerance, n_lead: int, values) -> dict:
    """Per answer row (its time and group): the allowed difference of each summed value, from
    the reference's n and sum|x| (the module's rule), as a function of the value."""
    if tol.scales is None or not summed(p):
        return {}
    mean = p["agg"] == "mean"
    out = {}
    for r in tol.scales:
        r = tuple(plain(v) for v in r)
        per = []
        for j in range(len(values)):
            n, s = r[n_lead + 2 * j] or 0, r[n_lead + 2 * j + 1] or 0.0
            per.append((2 * gamma(n) * s / n, 2 * U) if mean and n else (2 * gamma(n) * s, 0.0))
        out[r[:n_lead]] = per
    return out


def _close(a: float, b: float, allowed: float) -> bool:
    return a == b or abs(a - b) <= allowed


def compare(p: dict, expected: list[tuple], got: list[tuple], tol: Tolerance | float | None = None) -> Mismatch | None:
    """Integers and strings exactly, floats by the module's rules (tol; a float: a
    target's stored precision alone); nulls equal only nulls. An ordered query
    (shapes.ordered) in its order."""
    tol = tol if isinstance(tol, Tolerance) else Tolerance(float(tol or 0.0))
    has_time, group, values = columns(p)
    n_lead = (1 if has_time else 0) + len(group)
    in_order = ordered(p) and has_time
    exp, act = _norm(expected, n_lead, in_order), _norm(got, n_lead, in_order)
    if len(exp) != len(act):
        return Mismatch(f"{len(act)} rows, expected {len(exp)}", exp, act)
    bounds = _bounds(p, tol, n_lead, values)
    computed = 4 * gamma(tol.rows)
    for k, (e, g) in enumerate(zip(exp, act)):
        if len(e) != len(g):
            return Mismatch(f"row {k} has {len(g)} columns, expected {len(e)}", exp, act)
        if tuple(e[:n_lead]) != tuple(g[:n_lead]):
            what = "in order, " if in_order else ""
            return Mismatch(f"row {k}: {what}time/group {tuple(g[:n_lead])}, expected {tuple(e[:n_lead])}", exp, act,
                            f"row {k}: {what}time/group")
        per = bounds.get(tuple(e[:n_lead]))
        for j, v in enumerate(values):
            a, b = e[n_lead + j], g[n_lead + j]
            if a is None or b is None:
                if a is not b:
                    return Mismatch(f"row {k} column {j}: {b!r}, expected {a!r}", exp, act, f"row {k} column {j}")
                continue
            if v.kind == "str":
                ok = str(a) == str(b)
            elif v.kind == "int":
                ok = a == b                 # exactly: Python compares int and float values exactly
            else:
                a, b = float(a), float(b)
                if v.stored:
                    allowed = 0.0
                elif summed(p):
                    absolute, relative = per[j] if per else (0.0, 0.0)
                    allowed = absolute + relative * abs(a)
                else:
                    allowed = computed * abs(a)
                ok = _close(a, b, allowed + tol.rel * abs(a))
            if not ok:
                return Mismatch(f"row {k} column {j} ({v.name}): {b!r}, expected {a!r}", exp, act,
                                f"row {k} column {j} ({v.name})")
    return None
