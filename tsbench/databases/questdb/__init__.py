"""QuestDB (phases 2-5): influx line protocol batches posted as they are to its
ILP-over-HTTP endpoint, into WAL tables made beforehand (designated timestamp,
PARTITION BY DAY); queries in QuestDB SQL (SAMPLE BY, LATEST ON) over its HTTP
/exec endpoint, or with -O protocol=pgwire over its PostgreSQL wire protocol
(psycopg; text or binary results); the local server is QuestDB 9.3.4's jar from Maven Central, run
as a JPMS module."""

TARGETS = {"questdb": "target:QuestDbTarget"}
SERVERS = {"questdb": "server:QuestDbServer"}
