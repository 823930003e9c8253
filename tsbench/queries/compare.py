"""Comparing answers (phase 5): a target's canonical rows against the reference's,
after the same normalization (empty buckets dropped, rows sorted by time and
group); integers and strings exactly, floats within a relative tolerance."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from .shapes import columns

# ---- comparing answers ------------------------------------------------------------------------

DEFAULT_REL_TOL = 1e-9


@dataclass
class Mismatch:
    reason: str
    expected: list[tuple]
    got: list[tuple]

    def diff(self, limit: int = 5) -> str:
        """A readable diff of the first differing rows."""
        lines = [self.reason]
        exp, got = self.expected, self.got
        i = next((k for k in range(min(len(exp), len(got))) if exp[k] != got[k]), min(len(exp), len(got)))
        for k in range(i, min(i + limit, max(len(exp), len(got)))):
            e = exp[k] if k < len(exp) else "(none)"
            g = got[k] if k < len(got) else "(none)"
            lines.append(f"  row {k}: expected {e}")
            lines.append(f"  row {k}:      got {g}")
        return "\n".join(lines)


def plain(v):
    """A database value as a plain Python value (Decimal -> int or float)."""
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def _norm(rows: list[tuple], n_lead: int) -> list[tuple]:
    """Drop rows whose values are all null (an empty bucket is the same as a missing
    one, in every dialect) and sort by time and group."""
    rows = [tuple(plain(v) for v in r) for r in rows]
    out = [r for r in rows if any(v is not None and not (isinstance(v, float) and math.isnan(v))
                                          for v in r[n_lead:])]
    def key(r):          # time and group first, then the values: ties sort alike
        return tuple((x is None, "" if x is None else str(x)) if isinstance(x, str) or x is None
                     else (False, x) for x in r[:n_lead]) + \
            tuple((x is None, 0.0 if x is None else float(x)) if not isinstance(x, str) else (False, 0.0)
                  for x in r[n_lead:])
    out.sort(key=key)
    return out


def compare(p: dict, expected: list[tuple], got: list[tuple], rel_tol: float = DEFAULT_REL_TOL) -> Mismatch | None:
    """Integers and strings exactly, floats within rel_tol; nulls equal only nulls."""
    has_time, group, values = columns(p)
    n_lead = (1 if has_time else 0) + len(group)
    kinds = [v.kind for v in values]
    exp, act = _norm(expected, n_lead), _norm(got, n_lead)
    if len(exp) != len(act):
        return Mismatch(f"{len(act)} rows, expected {len(exp)}", exp, act)
    for k, (e, g) in enumerate(zip(exp, act)):
        if len(e) != len(g):
            return Mismatch(f"row {k} has {len(g)} columns, expected {len(e)}", exp, act)
        if tuple(e[:n_lead]) != tuple(g[:n_lead]):
            return Mismatch(f"row {k}: time/group {tuple(g[:n_lead])}, expected {tuple(e[:n_lead])}", exp, act)
        for j, kind in enumerate(kinds):
            a, b = e[n_lead + j], g[n_lead + j]
            if a is None or b is None:
                if a is not b:
                    return Mismatch(f"row {k} column {j}: {b!r}, expected {a!r}", exp, act)
                continue
            if kind == "str":
                ok = str(a) == str(b)
            elif kind == "int":
                ok = a == b                 # exactly: Python compares int and float values exactly
            else:
                ok = math.isclose(float(a), float(b), rel_tol=rel_tol, abs_tol=0.0) or float(a) == float(b)
            if not ok:
                return Mismatch(f"row {k} column {j} ({values[j].name}): {b!r}, expected {a!r}", exp, act)
    return None
