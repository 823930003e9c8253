"""OpenTSDB (phases 2-5): data points posted as JSON to /api/put, queries by
/api/query; the local server is OpenTSDB 2.4.1 on HBase 2.6.4 standalone, both
from Maven Central, in one JVM run by a small Java launcher."""

TARGETS = {"opentsdb": "target:OpenTsdbTarget"}
SERVERS = {"opentsdb": "server:OpenTsdbServer"}
