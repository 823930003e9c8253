"""Prometheus (phases 2-5): a local server from Debian's package, written to by
remote-write, counted in PromQL."""

TARGETS = {"prometheus": "target:PrometheusTarget"}
SERVERS = {"prometheus": "server:PrometheusServer"}
