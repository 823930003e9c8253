"""InfluxDB 1.x (phases 2-5): line protocol over /write or the v2 API,
queries in InfluxQL or Flux; the server built with Go (or Debian's)."""

TARGETS = {"influx": "target:InfluxTarget"}
SERVERS = {"influx": "server:InfluxServer"}
