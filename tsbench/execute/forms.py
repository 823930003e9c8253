"""Query forms (phases 4-5, for benchmarks/dialects.py and the database tests): every
form a dialect declares for a query type (Dialect.forms, tsbench's own rendering
first) run on one target through the executor's timed path (execute/timer.py), in
alternating rounds so that a busy machine's load meets every form alike, and each
form's answers compared with tsbench's form's by the validate phase's comparison
(queries/compare.py). A form whose answer differs is wrong: never the fastest.

    runs = await run_forms(target, specs, reference, rounds=5)   # {(type, form): FormRun}
    bad = await form_mismatches(target, specs, reference)        # ["type form id: diff", ...]
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass, field

from tsbench.core.errors import Fatal, Retryable, Unsupported
from tsbench.execute.timer import timed_query
from tsbench.queries.base import QuerySpec
from tsbench.queries.compare import compare, tolerance
from tsbench.queries.dialect import TSBENCH_FORM

QUERY_TIMEOUT_S = 120.0


@dataclass
class FormRun:
    """One form of one query type: its latencies (s) over the measured rounds, each keyed
    by (query id, round) so that it pairs with tsbench's form's run of the same query in
    the same round, and the first difference of its answers from tsbench's form's (empty:
    the same answers)."""

    type: str
    form: str
    seconds: list[float] = field(default_factory=list)
    wrong: str = ""
    errors: int = 0
    paired: dict[tuple[int, int], float] = field(default_factory=dict)

    def to(self, base: FormRun) -> float | None:
        """The median over (query, round) of this form's latency over base's for the same
        query in the same round: a machine's load, which shifts both alike, cancels."""
        keys = [k for k in self.paired if k in base.paired]
        return statistics.median(self.paired[k] / base.paired[k] for k in keys) if keys else None

    @property
    def p50_ms(self) -> float | None:
        return statistics.median(self.seconds) * 1e3 if self.seconds else None

    @property
    def correct(self) -> bool:
        return not self.wrong and not self.errors and bool(self.seconds)


def form_names(target, query_type: str) -> tuple[str, ...]:
    """tsbench's form and the others the target's dialect declares for a type."""
    return type(target.dialect()).form_names(query_type)


def render_forms(target, specs: list[QuerySpec]) -> dict[tuple[int, str], object]:
    """Every form of every spec rendered (before anything is timed): (spec id, form) -> native."""
    return {(s.id, f): target.render(s, f) for s in specs for f in form_names(target, s.type)}


async def _answer(target, native, timeout: float):
    """One timed execution: (seconds, canonical rows), or (None, the error)."""
    try:
        async with asyncio.timeout(timeout):
            ans = await timed_query(target, native)
        return ans.seconds, target.answer_rows(native, ans)
    except (Fatal, Retryable, Unsupported, TimeoutError) as exc:
        return None, f"{type(exc).__name__}: {str(exc)[:300] or 'no answer in time'}"


def _rel_tol(target) -> float:
    digits = target.float_digits
    return 10.0 ** (1 - digits) if digits else 0.0


async def _checked_round(target, specs, natives, reference, runs: dict) -> None:
    """The unrecorded first round: every form's answers against tsbench's form's."""
    for s in specs:
        _, expected = await _answer(target, natives[s.id, TSBENCH_FORM], QUERY_TIMEOUT_S)
        if isinstance(expected, str):
            runs[s.type, TSBENCH_FORM].wrong = runs[s.type, TSBENCH_FORM].wrong or expected
            continue
        tol = tolerance(s, _rel_tol(target), reference)
        for f in form_names(target, s.type)[1:]:
            _, rows = await _answer(target, natives[s.id, f], QUERY_TIMEOUT_S)
            mm = rows if isinstance(rows, str) else compare(s.params, expected, rows, tol)
            if mm and not runs[s.type, f].wrong:
                runs[s.type, f].wrong = f"query {s.id}: " + (mm if isinstance(mm, str) else mm.diff(3))


async def run_forms(target, specs: list[QuerySpec], reference, rounds: int = 5,
                    timeout: float = QUERY_TIMEOUT_S) -> dict[tuple[str, str], FormRun]:
    """Every form of every spec: a checked round (answers compared, unrecorded), then
    `rounds` measured rounds; in each, every query runs in all its forms one after the
    other, the forms' order turned by one for each query and each round. (type, form) -> FormRun."""
    natives = render_forms(target, specs)
    runs = {(s.type, f): FormRun(s.type, f) for s in specs for f in form_names(target, s.type)}
    await target.prepare(1)
    await _checked_round(target, specs, natives, reference, runs)
    for r in range(rounds):
        for i, s in enumerate(specs):
            names = form_names(target, s.type)
            k = (r + i) % len(names)          # each form leads as often as the others: a cache warmed by
                                              # the query's first form favours the ones after it
            for f in names[k:] + names[:k]:
                seconds, _ = await _answer(target, natives[s.id, f], timeout)
                if seconds is None:
                    runs[s.type, f].errors += 1
                else:
                    runs[s.type, f].seconds.append(seconds)
                    runs[s.type, f].paired[s.id, r] = seconds
    return runs


async def form_mismatches(target, specs: list[QuerySpec], reference) -> list[str]:
    """The forms whose answers differ from tsbench's form's (the checked round alone)."""
    natives = render_forms(target, specs)
    runs = {(s.type, f): FormRun(s.type, f) for s in specs for f in form_names(target, s.type)}
    await target.prepare(1)
    await _checked_round(target, specs, natives, reference, runs)
    return [f"{t} {f}: {r.wrong}" for (t, f), r in runs.items() if r.wrong]
