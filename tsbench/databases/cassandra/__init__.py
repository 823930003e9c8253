"""Apache Cassandra (phases 2-5): CQL text in unlogged batches rendered by the
C core, two schemas (the seed's `series` table of values, or one `wide` table
per measurement), queries in CQL (dialects/base.py, with dialects/series.py, dialects/wide.py and
dialects/iot.py); the server 5.0 from Maven Central."""

TARGETS = {"cassandra": "target:CassandraTarget"}
SERVERS = {"cassandra": "server:CassandraServer"}
