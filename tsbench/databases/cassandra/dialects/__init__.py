"""Cassandra's CQL dialects (phases 3-5): the shared base, the series and wide layouts, and
TSBS's iot types on both."""
