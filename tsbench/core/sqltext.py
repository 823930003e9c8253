"""SQL spelling shared by every layer that writes SQL (the stored view's DuckDB queries in
phase 1, the dialects and the reference engine in phases 3-5): a quoted identifier and a
string literal."""

from __future__ import annotations


def q(name: str) -> str:
    """A quoted identifier: "name", quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


def lit(s: str) -> str:
    """An SQL string literal: 'text', quotes doubled."""
    return "'" + s.replace("'", "''") + "'"
