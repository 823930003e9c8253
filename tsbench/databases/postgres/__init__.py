"""PostgreSQL (phases 2-5): COPY into one table per measurement (tag sets in a
table or inline), queries in SQL; the server from Debian or a wheel."""

TARGETS = {"postgres": "target:PostgresTarget"}
SERVERS = {"postgres": "server:PostgresServer"}
