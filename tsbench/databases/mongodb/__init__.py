"""MongoDB (phases 2-5): documents built as BSON in C, inserted with pymongo's
async client, queried with aggregation pipelines; the local server is a
MongoDB-wire stand-in (mongo-java-server from Maven Central), a real MongoDB by
mongodb:// URL."""

TARGETS = {"mongodb": "target:MongoTarget"}
SERVERS = {"mongo-java-server": "server:MongoJavaServer"}
