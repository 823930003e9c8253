"""Phase 4's --print-responses, done after the timed pass: each executed query
once, with its text as sent in the target's dialect, the server's answer as it
sent it, decoded by the target (Target.answer_lines: a JSON body as JSON, a
result set or an Arrow table as a table with its column names), and the
canonical rows, each cut explicitly at max_rows with how many were left out."""

from __future__ import annotations

from typing import Any

from tsbench.databases.shared.printable import cut


def query_text(native: Any) -> str:
    """A rendered query as its dialect spells it."""
    return getattr(native, "text", None) or str(native)


def show(target: str, spec, native: Any, answer_lines: list[str], rows: list[tuple], max_rows: int) -> str:
    """The printed block of one executed query; answer_lines: the target's (already cut)."""
    out = [f"-- query {spec.id} ({spec.type}) on {target}", query_text(native),
           "-- the server's answer:", *answer_lines,
           f"-- canonical rows ({len(rows)}):", *cut([repr(r) for r in rows], max_rows)]
    return "\n".join(out)
