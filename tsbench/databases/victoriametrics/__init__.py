"""VictoriaMetrics single-node (phases 2-5): line protocol over /write,
queries in MetricsQL; the server from Debian or built with Go."""

TARGETS = {"victoriametrics": "target:VictoriaMetricsTarget"}
SERVERS = {"victoriametrics": "server:VictoriaMetricsServer"}
