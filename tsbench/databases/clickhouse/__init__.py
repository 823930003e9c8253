"""ClickHouse (phases 2-5): in-process through chdb (the ClickHouse engine as a
library, `--server local`) or a ClickHouse server by URL through
clickhouse-connect (HTTP); MergeTree tables ordered by (tags, time), Arrow
inserts, queries in the shared SQL dialect spelled for ClickHouse. No local
server: Debian's clickhouse-server (18.16) is too old for this SQL. In-process
there is no wire protocol to choose (a query's answer is handed over in memory); by
URL, ClickHouse's native TCP protocol is not offered (clickhouse-connect speaks HTTP)."""

TARGETS = {"clickhouse": "target:ClickHouseTarget"}
