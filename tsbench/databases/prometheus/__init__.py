"""Prometheus (phases 2-5): a local server from Debian's package, loaded by
remote-write, queried in PromQL."""

TARGETS = {"prometheus": "target:PrometheusTarget"}
SERVERS = {"prometheus": "server:PrometheusServer"}
