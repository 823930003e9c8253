"""DuckDB, in-process (phases 2-5): Arrow appends into one table per
measurement, queries in the reference SQL; no server."""

TARGETS = {"duckdb": "target:DuckDBTarget"}
