"""The SQL dialect (phases 3-5): every shape, the custom (iot) ones included,
as the reference engine states it (shapes.sql over one table per measurement),
spelled for one SQL database by a SqlSpelling (its FROM clause, tag columns and
time math). DuckDB uses the reference spelling; PostgreSQL its own."""

from __future__ import annotations

from tsbench.queries.base import SqlSpelling
from tsbench.queries.catalog import CUSTOM
from tsbench.queries.dialect import Dialect
from tsbench.queries.shapes import sql


class Sql(Dialect):
    name = "sql"

    def __init__(self, spelling: SqlSpelling | None = None):
        self.spelling = spelling or SqlSpelling()

    @classmethod
    def shapes(cls) -> frozenset[str]:
        return super().shapes() | frozenset(CUSTOM)       # every custom type states its meaning in SQL

    def aggregate(self, p: dict) -> str:
        return sql(p, self.spelling)

    def rows(self, p: dict) -> str:
        return sql(p, self.spelling)

    def last(self, p: dict) -> str:
        return sql(p, self.spelling)

    def render_custom(self, shape: str, p: dict) -> str:
        return sql(p, self.spelling)
