"""The null targets (phase 2): the harness ceiling without a database (`null`)
and through HTTP to a sink that answers 204 (`null-http`)."""

TARGETS = {"null": "target:NullTarget", "null-http": "target:NullHttpTarget"}
SERVERS = {"null-http": "server:NullHttpServer"}
