"""InfluxDB's dialects (phases 3-5): InfluxQL and Flux, the iot types in InfluxQL, literals,
and canonical rows read back from either answer."""
