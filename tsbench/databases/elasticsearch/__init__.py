"""Elasticsearch and OpenSearch (phases 2-5): bulk NDJSON built in C, one index
per measurement, queries in the search DSL; local servers from Maven Central
(OpenSearch 2.19.1, Elasticsearch 7.10.2) run by a small Java launcher."""

TARGETS = {"elasticsearch": "target:ElasticsearchTarget"}
SERVERS = {"opensearch": "server:OpenSearchServer", "elasticsearch": "server:ElasticsearchServer"}
