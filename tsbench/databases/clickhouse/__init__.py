"""ClickHouse (phases 2-5): in-process through chdb (the ClickHouse engine as a
library, `--server local`) or a ClickHouse server by URL through
clickhouse-connect (HTTP); MergeTree tables ordered by (tags, time), Arrow
inserts, queries in the shared SQL dialect spelled for ClickHouse. No local
server: Debian's clickhouse-server (18.16) is too old for this SQL."""

TARGETS = {"clickhouse": "target:ClickHouseTarget"}
