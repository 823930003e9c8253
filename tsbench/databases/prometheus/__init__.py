"""Prometheus (phases 2-5): a local server from Debian's package, written to by
remote-write; the target and its load come in a later step."""

SERVERS = {"prometheus": "server:PrometheusServer"}
