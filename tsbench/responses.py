"""Phase 4's --print-responses, done after the timed pass: each executed query
once, with its text in the target's dialect, the server's raw answer split into
rows (a JSON answer: a line per series header and per row of values; CSV or
text: its lines; a driver's answer: its rows) and the canonical rows, each cut
explicitly at max_rows with "... N more rows"."""

from __future__ import annotations

import json
from typing import Any, Iterator


def query_text(native: Any) -> str:
    """A rendered query as its dialect spells it."""
    return getattr(native, "text", None) or str(native)


def raw_rows(raw: Any) -> list[str]:
    """The server's answer, one printable line per row."""
    if raw is None:
        return []
    if isinstance(raw, list) and raw and all(isinstance(x, (bytes, bytearray)) for x in raw):
        return [line for i, body in enumerate(raw) for line in [f"# response {i + 1} of {len(raw)}", *raw_rows(body)]]
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", "replace")
    if isinstance(raw, str):
        try:
            doc = json.loads(raw)
        except ValueError:
            return raw.splitlines()
        return list(_json_rows(doc))
    return [repr(tuple(r)) for r in raw]


def _is_header(v: Any) -> bool:
    """A member printed on a series' header line: a scalar or a flat object (tags, labels)."""
    if isinstance(v, dict):
        return not any(isinstance(x, (list, dict)) for x in v.values())
    return not isinstance(v, list)


def _json_rows(node: Any) -> Iterator[str]:
    if isinstance(node, list):
        if node and all(isinstance(x, dict) for x in node):
            for x in node:
                yield from _json_rows(x)
        elif node and all(isinstance(x, list) for x in node):
            yield from (json.dumps(x) for x in node)
        else:
            yield json.dumps(node)
        return
    if not isinstance(node, dict):
        yield json.dumps(node)
        return
    head = {k: v for k, v in node.items() if _is_header(v)}
    if head:
        yield json.dumps(head)
    for k, v in node.items():
        if k not in head:
            yield from _json_rows(v)


def cut(lines: list[str], max_rows: int) -> list[str]:
    """The first max_rows lines, and how many more there are."""
    if len(lines) <= max_rows:
        return list(lines)
    return lines[:max_rows] + [f"... {len(lines) - max_rows} more rows"]


def show(target: str, spec, native: Any, raw: Any, rows: list[tuple], max_rows: int) -> str:
    """The printed block of one executed query."""
    raw_lines = raw_rows(raw)
    out = [f"-- query {spec.id} ({spec.type}) on {target}", query_text(native),
           f"-- the server's answer ({len(raw_lines)} rows):", *cut(raw_lines, max_rows),
           f"-- canonical rows ({len(rows)}):", *cut([repr(r) for r in rows], max_rows)]
    return "\n".join(out)
