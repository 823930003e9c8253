"""The server's answer as printable lines (phase 4's --print-responses, after the
timed pass): the helpers every target's answer_lines() uses, so that each answer
is printed as the server sent it, decoded, and cut alike.

* a JSON body: its JSON, every member with its name; a container that fits on a
  line is one line, a longer one a member or item a line (a list's items and an
  object of scalars' members are its rows);
* an Arrow table or a driver's result set: a table, its column names first;
* any other text: its lines;
* several responses (a query sent as several requests): each one under a heading.

Every list, table or text is cut at max_rows with a line saying how many were left out."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:                 # only named in annotations: a target starts without pyarrow
    import pyarrow as pa

WIDTH = 100              # a JSON container this long or shorter is printed on one line
SEP = " | "              # between the cells of a table's row


def more(n: int, what: str) -> str:
    """The line that stands for n left-out rows (or items, lines, responses...)."""
    return f"... {n} more {what}"


def cut(lines: Sequence[str], max_rows: int, what: str = "rows") -> list[str]:
    """The first max_rows lines, and how many more there are."""
    if len(lines) <= max_rows:
        return list(lines)
    return list(lines[:max_rows]) + [more(len(lines) - max_rows, what)]


# ---- text and JSON bodies -------------------------------------------------------------------------

def body_lines(body: bytes | str, max_rows: int) -> list[str]:
    """An HTTP body: its JSON when it is JSON, else its lines."""
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else body
    if not text.strip():
        return ["(empty body)"]
    try:
        doc = json.loads(text)
    except ValueError:
        return cut(text.splitlines(), max_rows, "lines")
    return json_lines(doc, max_rows)


def json_lines(doc: Any, max_rows: int, indent: str = "") -> list[str]:
    """A decoded JSON document, indented: a container of WIDTH characters or fewer on one
    line, a longer one a member or item a line, each cut at max_rows."""
    flat = json.dumps(doc)
    if len(flat) <= WIDTH or not isinstance(doc, (dict, list)) or not doc:
        return [indent + flat]
    inner = indent + "  "
    if isinstance(doc, dict):
        keep = max_rows if _is_map(doc) else len(doc)
        parts = [_named(inner, k, json_lines(v, max_rows, inner)) for k, v in list(doc.items())[:keep]]
        opening, closing, what = "{", "}", "members"
    else:
        keep = max_rows
        parts = [json_lines(v, max_rows, inner) for v in doc[:keep]]
        opening, closing, what = "[", "]", "items"
    lines = [indent + opening]
    for i, part in enumerate(parts):
        lines += part[:-1] + [part[-1] + ("," if i < len(parts) - 1 else "")]
    if len(doc) > keep:
        lines.append(inner + more(len(doc) - keep, what))
    return lines + [indent + closing]


def _is_map(doc: dict) -> bool:
    """An object of scalars only (OpenTSDB's time -> value "dps"): its members are rows, cut
    as a list's items are; an object holding containers is structure, printed whole."""
    return not any(isinstance(v, (dict, list)) for v in doc.values())


def _named(inner: str, key: str, value: list[str]) -> list[str]:
    """A member's lines: its name before its value's first line."""
    return [f"{inner}{json.dumps(key)}: {value[0].lstrip()}"] + value[1:]


def responses_lines(bodies: Sequence, max_rows: int, each: Callable[[Any, int], list[str]] = body_lines,
                    what: str = "response") -> list[str]:
    """Several responses of one query, each under a heading, at most max_rows of them."""
    if not bodies:
        return [f"(no {what}: nothing was sent)"]
    out: list[str] = []
    for i, body in enumerate(bodies[:max_rows]):
        out += [f"# {what} {i + 1} of {len(bodies)}", *each(body, max_rows)]
    if len(bodies) > max_rows:
        out.append(more(len(bodies) - max_rows, what + "s"))
    return out


# ---- tables ---------------------------------------------------------------------------------------

def table_lines(names: Sequence[str], rows: Sequence, max_rows: int, total: int | None = None) -> list[str]:
    """A result set: its column names, then its first max_rows rows, a cell each value, and
    how many more there are (total: the result's rows when `rows` holds only its first ones)."""
    total = len(rows) if total is None else total
    head = SEP.join(str(n) for n in names) if names else "(no column names)"
    body = [SEP.join(cell(v) for v in r) for r in rows[:max_rows]] or ["(no rows)"]
    if total > max_rows:
        body.append(more(total - max_rows, "rows"))
    return [head, *body]


def arrow_lines(table: pa.Table, max_rows: int) -> list[str]:
    """An Arrow table: its column names and its first max_rows rows."""
    head = table.slice(0, max_rows)
    rows = list(zip(*(c.to_pylist() for c in head.columns)))
    return table_lines(table.column_names, rows, max_rows, table.num_rows)


def cell(v: Any) -> str:
    """One value as a table prints it: NULL, a float's shortest exact form, a time in
    RFC 3339, anything else as str (a numpy scalar as its Python value)."""
    if v is None:
        return "NULL"
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):     # numpy / pandas scalars
        v = v.item()
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    if isinstance(v, dt.datetime):
        return v.isoformat()
    return str(v)
