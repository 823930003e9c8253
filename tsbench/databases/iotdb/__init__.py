"""Apache IoTDB (phases 2-5): a device per (measurement, tag set) in IoTDB's tree
model, loaded by aligned tablets of numpy columns through the apache-iotdb client,
queried by tree-model SQL; the local server is IoTDB 2.0.1-beta from Maven Central,
its ConfigNode and DataNode in one JVM run by a small Java launcher."""

TARGETS = {"iotdb": "target:IotdbTarget"}
SERVERS = {"iotdb": "server:IotdbServer"}
