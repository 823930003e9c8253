"""Apache IoTDB 2.0.1-beta as a local server (phases 2-5): `iotdb-server` (the DataNode)
and `iotdb-confignode` from Maven Central (one lib dir; later releases miss a parent pom
on Central), run in ONE JVM by the single-file Launcher.java beside this module: the
ConfigNode, then the DataNode once the ConfigNode's port is open, each in a class loader
of its own. So the shared lifecycle (one pid: watched, SIGTERM, SIGKILL after
stop_timeout) applies unchanged: a kill of the server is a kill of both nodes, and
neither can be orphaned. (Two JVMs would have needed the Server layer to own and watch
two processes; in one JVM both nodes are ready in about 5 s here, in 0.4 GB.)

Both nodes read one `iotdb-system.properties` in the instance's conf dir: the seven
ports (ConfigNode internal and consensus; DataNode RPC, internal, MPP data exchange,
schema and data region consensus), all addresses 127.0.0.1, every dir under the data
dir, nanosecond timestamps (the data's own unit), a replication factor of 1 and
SimpleConsensus for the ConfigNode and the schema regions (one node, one replica: no
Ratis groups; the ConfigNode's took 5 s to close at each stop); the data regions keep
IoTDB's default, IoTConsensus, whose port is the only consensus port open. IoTDB's
thrift services listen on every interface whatever the addresses say (2.0.1-beta binds
`new InetSocketAddress(port)`, no setting); the ports are fresh ones. Ready when a
session on the RPC port answers SHOW VERSION. SIGTERM: both nodes' shutdown hooks, then
the launcher halts the JVM once the DataNode's is done (under a second). The state's
data_dir and wal_dir are the DataNode's TsFile and WAL dirs (the target's disk figures)."""

from __future__ import annotations

import pathlib

from tsbench.databases.iotdb.paths import quiet_client_logs
from tsbench.databases.shared.jvm import JvmServer

LAUNCHER = pathlib.Path(__file__).resolve().parent / "Launcher.java"
VERSION = "2.0.1-beta"
SIMPLE = "org.apache.iotdb.consensus.simple.SimpleConsensus"

# the Java 17 flags of IoTDB's own start scripts (datanode-env.sh, confignode-env.sh)
JDK17_FLAGS = tuple(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
    "java.util.concurrent", "java.lang", "java.util", "java.nio", "java.io", "java.net"))

LOGBACK = """<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{0}: %msg%n</pattern></encoder>
  </appender>
  <!-- a line per Ratis step and per flushed memtable: loads make thousands -->
  <logger name="org.apache.ratis" level="WARN"/>
  <logger name="org.apache.iotdb.db.storageengine.dataregion.flush" level="WARN"/>
  <logger name="org.apache.iotdb.db.storageengine.dataregion.compaction" level="WARN"/>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""


def system_properties(datadir: pathlib.Path, ports: dict[str, int]) -> dict[str, str]:
    cn, dn = datadir / "confignode", datadir / "datanode"
    seed = f"127.0.0.1:{ports['cn_internal']}"
    return {
        "cn_internal_address": "127.0.0.1",
        "cn_internal_port": ports["cn_internal"],
        "cn_consensus_port": ports["cn_consensus"],
        "cn_seed_config_node": seed,
        "cn_system_dir": cn / "system",
        "cn_consensus_dir": cn / "consensus",
        "cn_pipe_receiver_file_dir": cn / "pipe",
        "dn_seed_config_node": seed,
        "dn_rpc_address": "127.0.0.1",
        "dn_rpc_port": ports["rpc"],
        "dn_internal_address": "127.0.0.1",
        "dn_internal_port": ports["dn_internal"],
        "dn_mpp_data_exchange_port": ports["mpp"],
        "dn_schema_region_consensus_port": ports["schema_consensus"],
        "dn_data_region_consensus_port": ports["data_consensus"],
        "dn_system_dir": dn / "system",
        "dn_data_dirs": dn / "data",
        "dn_consensus_dir": dn / "consensus",
        "dn_wal_dirs": dn / "wal",
        "dn_tracing_dir": dn / "tracing",
        "dn_sync_dir": dn / "sync",
        "timestamp_precision": "ns",
        "schema_replication_factor": 1,
        "data_replication_factor": 1,
        # one node, one replica: no Ratis groups (the ConfigNode's took 5 s to close at each stop);
        # the data regions keep IoTDB's default, IoTConsensus (the write path as shipped)
        "config_node_consensus_protocol_class": SIMPLE,
        "schema_region_consensus_protocol_class": SIMPLE,
        "enable_rest_service": "false",
        "enable_mqtt_service": "false",
        "cn_metric_reporter_list": "",
        "dn_metric_reporter_list": "",
    }


class IotdbServer(JvmServer):
    kind = "iotdb"
    port_names = ("rpc", "cn_internal", "cn_consensus", "dn_internal", "mpp", "schema_consensus", "data_consensus")
    url_scheme = "iotdb"
    lib_name = "iotdb"
    lib_version = VERSION
    artifacts = (f"org.apache.iotdb:iotdb-server:{VERSION}", f"org.apache.iotdb:iotdb-confignode:{VERSION}")
    main_class = str(LAUNCHER)
    jvm_flags = JDK17_FLAGS
    heap_mb = (512, 2048, 8)       # both nodes share the heap
    ready_timeout = 120.0
    stop_timeout = 60.0

    @property
    def conf(self) -> pathlib.Path:
        return self.dir / "conf"

    def prepare(self, datadir: pathlib.Path, ports: dict[str, int]) -> None:
        self.conf.mkdir(parents=True, exist_ok=True)
        props = system_properties(datadir, ports)
        (self.conf / "iotdb-system.properties").write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.conf / "logback.xml").write_text(LOGBACK)

    def sysprops(self, datadir: pathlib.Path, ports: dict[str, int]) -> dict[str, str]:
        home, conf = str(self.dir), str(self.conf)
        return {"IOTDB_HOME": home, "IOTDB_CONF": conf, "CONFIGNODE_HOME": home, "CONFIGNODE_CONF": conf,
                "TSFILE_HOME": home, "TSFILE_CONF": conf, "IOTDB_LOG_DIR": str(self.dir / "logs"),
                "logback.configurationFile": str(self.conf / "logback.xml")}

    def main_args(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return [str(self.lib), str(ports["cn_internal"]), str(ports["rpc"])]

    def ready(self, ports: dict[str, int]) -> bool:
        from iotdb.Session import Session

        quiet_client_logs()
        s = Session("127.0.0.1", ports["rpc"], "root", "root", enable_redirection=False,
                    connection_timeout_in_ms=2000)
        s.open(False)
        try:
            s.execute_query_statement("SHOW VERSION", 2000).todf()
        finally:
            s.close()
        return True

    def extra_state(self) -> dict:
        dn = self.datadir / "datanode"
        return {"data_dir": str(dn / "data"), "wal_dir": str(dn / "wal")}
