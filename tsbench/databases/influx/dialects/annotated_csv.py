"""Flux's annotated CSV answers (phase 5): /api/v2/query's response parsed into
tables of typed rows, for flux.py to turn into canonical rows. An error table
is Fatal with the server's words."""

from __future__ import annotations

import csv
import io

from tsbench.core.errors import Fatal
from tsbench.databases.influx.dialects.literals import parse_rfc3339


def _value(v: str, datatype: str):
    """A cell typed by its #datatype annotation (dateTime as epoch ns; "" is None)."""
    if v == "":
        return None
    if datatype in ("long", "unsignedLong"):
        return int(v)
    if datatype == "double":
        return float(v)
    if datatype == "boolean":
        return v == "true"
    if datatype.startswith("dateTime"):
        return parse_rfc3339(v)
    return v


def _record(header: list[str], row: list[str], types, defaults) -> tuple[tuple, dict]:
    """(the table key: result and table columns, {column: typed value}) of one data row."""
    rec, key = {}, []
    for i, name in enumerate(header):
        if i == 0 and name == "":
            continue
        v = row[i] if i < len(row) else ""
        if v == "" and defaults is not None and i < len(defaults):
            v = defaults[i]
        if name in ("result", "table"):
            key.append(v)
            continue
        rec[name] = _value(v, types[i] if types is not None and i < len(types) else "string")
    return tuple(key), rec


def _error(header: list[str], row: list[str], what: str) -> Fatal:
    msg = row[header.index("error")] if len(row) > header.index("error") else ",".join(row)
    return Fatal(f"{what}: flux: {msg}")


def flux_tables(text: str, what: str = "influx") -> list[list[dict]]:
    """Parse an annotated CSV answer (#datatype/#group/#default rows, a header, data rows;
    a blank line or new annotations start another block) into tables of typed rows.
    An error table (an "error" column) raises Fatal with its words."""
    tables: dict[tuple, list[dict]] = {}
    types = defaults = header = None
    for row in csv.reader(io.StringIO(text)):
        if not row:
            types = defaults = header = None
            continue
        if row[0].startswith("#"):
            if header is not None:
                types = defaults = header = None
            if row[0] == "#datatype":
                types = row
            elif row[0] == "#default":
                defaults = row
            continue
        if header is None:
            header = row
            continue
        if "error" in header:
            raise _error(header, row, what)
        key, rec = _record(header, row, types, defaults)
        tables.setdefault(key, []).append(rec)
    return list(tables.values())
