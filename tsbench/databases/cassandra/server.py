"""Apache Cassandra 5.0 as a local server (phases 2-5): the jars of
`org.apache.cassandra:cassandra-all` from Maven Central (jvm.py), run as one
node on 127.0.0.1 with Java 17's JPMS flags (those of Cassandra's own
jvm17-server.options) and its own cassandra.yaml and logback config in the
instance dir. Ready when the CQL port answers an OPTIONS frame with SUPPORTED.

The yaml is minimal: one node owning the whole ring (`num_tokens: 1`,
`initial_token: 0`: 16 tokens plus an initial token breaks every restart),
SimpleSnitch, itself as seed, every port free on 127.0.0.1 (CQL, storage;
JMX on 127.0.0.1 only, for nodetool), every directory under the data dir,
`auto_snapshot: false` (a drop leaves no snapshot behind). The loader's
unlogged batches hold hundreds of statements over many partitions: the batch
size thresholds are raised (warn 64 MiB, fail 128 MiB: the native transport's
own 16 MiB message limit bounds a batch first) and the cross-partition
warning is off, so a load neither fails nor logs a warning per batch.

`nodetool(server_lib, host, jmx_port, args)` runs Cassandra's NodeTool from the
same jars (bounded), for compaction and the table's own size figure."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import tempfile

from tsbench.core.errors import ServerError
from tsbench.databases.shared.jvm import JvmServer, java_home_ok, lib_dir

VERSION = "5.0.9"
NODETOOL_TIMEOUT = 1800.0

_EXPORTS = ("java.base/jdk.internal.misc", "java.base/jdk.internal.ref", "java.base/sun.nio.ch",
            "java.management.rmi/com.sun.jmx.remote.internal.rmi", "java.rmi/sun.rmi.registry",
            "java.rmi/sun.rmi.server", "java.sql/java.sql", "java.base/java.lang.ref",
            "jdk.unsupported/sun.misc", "jdk.compiler/com.sun.tools.javac.file", "jdk.attach/sun.tools.attach")
_OPENS = tuple(f"java.base/{p}" for p in (
    "java.lang.module", "jdk.internal.loader", "jdk.internal.ref", "jdk.internal.reflect", "jdk.internal.math",
    "jdk.internal.module", "jdk.internal.util.jar", "sun.nio.ch", "java.io", "java.nio", "java.lang.reflect",
    "java.lang", "java.util", "java.util.concurrent", "java.util.concurrent.atomic", "java.math", "java.net",
)) + ("jdk.management/com.sun.management.internal", "jdk.compiler/com.sun.tools.javac")
JPMS_FLAGS = (*(f"--add-exports={m}=ALL-UNNAMED" for m in _EXPORTS),
              *(f"--add-opens={m}=ALL-UNNAMED" for m in _OPENS))

# the CQL native protocol v4 OPTIONS request: version, flags, stream 0, opcode 5, empty body
_OPTIONS_FRAME = bytes([0x04, 0, 0, 0, 0x05, 0, 0, 0, 0])
_SUPPORTED = 0x06

LOGBACK = """<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{dir}/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{{ISO8601}} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <filter class="ch.qos.logback.classic.filter.ThresholdFilter"><level>WARN</level></filter>
    <encoder><pattern>%-5level %date{{ISO8601}} %msg%n</pattern></encoder>
  </appender>
  <!-- start-up advice about the host (jemalloc, read-ahead, map count...): to the file only -->
  <logger name="org.apache.cassandra.service.StartupChecks" additivity="false"><appender-ref ref="FILE"/></logger>
  <logger name="org.apache.cassandra.db.SystemKeyspace" additivity="false"><appender-ref ref="FILE"/></logger>
  <logger name="org.apache.cassandra.triggers" additivity="false"><appender-ref ref="FILE"/></logger>
  <root level="INFO"><appender-ref ref="FILE"/><appender-ref ref="STDOUT"/></root>
</configuration>
"""

TOOLS_LOGBACK = """<configuration><appender name="ERR" class="ch.qos.logback.core.ConsoleAppender">
<target>System.err</target><encoder><pattern>%-5level %msg%n</pattern></encoder></appender>
<root level="WARN"><appender-ref ref="ERR"/></root></configuration>
"""


def cassandra_yaml(datadir: pathlib.Path, ports: dict[str, int]) -> str:
    """A single node on 127.0.0.1 with its directories under datadir."""
    d = datadir
    return f"""cluster_name: tsbench
num_tokens: 1
initial_token: 0
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:{ports['storage']}"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: {ports['storage']}
native_transport_port: {ports['cql']}
start_native_transport: true
data_file_directories: ["{d}/data"]
commitlog_directory: {d}/commitlog
saved_caches_directory: {d}/saved_caches
hints_directory: {d}/hints
cdc_raw_directory: {d}/cdc_raw
commitlog_sync: periodic
commitlog_sync_period: 10000ms
auto_snapshot: false
batch_size_warn_threshold: 64MiB
batch_size_fail_threshold: 128MiB
unlogged_batch_across_partitions_warn_threshold: 1000000000
read_request_timeout: 30000ms
range_request_timeout: 60000ms
write_request_timeout: 10000ms
request_timeout: 60000ms
hinted_handoff_enabled: false
dynamic_snitch: false
"""


class CassandraServer(JvmServer):
    kind = "cassandra"
    port_names = ("cql", "storage", "jmx")
    url_scheme = "cassandra"                    # cassandra://127.0.0.1:<cql port>
    lib_name = "cassandra"
    lib_version = VERSION
    artifacts = (f"org.apache.cassandra:cassandra-all:{VERSION}",)
    main_class = "org.apache.cassandra.service.CassandraDaemon"
    jvm_flags = ("-Djdk.attach.allowAttachSelf=true", "-Dio.netty.tryReflectionSetAccessible=true",
                 "-Djava.net.preferIPv4Stack=true", "-XX:+UseG1GC",
                 *JPMS_FLAGS)
    ready_timeout = 180.0

    def prepare(self, datadir: pathlib.Path, ports: dict[str, int]) -> None:
        for sub in ("data", "commitlog", "saved_caches", "hints", "cdc_raw"):
            (datadir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        (self.dir / "cassandra.yaml").write_text(cassandra_yaml(datadir, ports))
        (self.dir / "logback.xml").write_text(LOGBACK.format(dir=self.dir / "logs"))

    def sysprops(self, datadir: pathlib.Path, ports: dict[str, int]) -> dict[str, str]:
        return {"cassandra.config": (self.dir / "cassandra.yaml").as_uri(),
                "cassandra.storagedir": str(datadir),
                "cassandra.logdir": str(self.dir / "logs"),
                "cassandra-foreground": "yes",
                "cassandra.jmx.local.port": str(ports["jmx"]),   # JMX on 127.0.0.1 only, no auth
                "logback.configurationFile": str(self.dir / "logback.xml"),
                "cassandra.skip_wait_for_gossip_to_settle": "0"}  # one node: nothing to settle

    def extra_jvm_flags(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        jamm = sorted(self.lib.glob("jamm-*.jar"))
        if not jamm:
            raise ServerError(f"{self.kind}: no jamm jar in {self.lib} (Cassandra needs it as -javaagent)")
        return [f"-javaagent:{jamm[-1]}"]

    def ready(self, ports: dict[str, int]) -> bool:
        """The CQL port answers an OPTIONS request with SUPPORTED."""
        with socket.create_connection(("127.0.0.1", ports["cql"]), timeout=2) as s:
            s.settimeout(2)
            s.sendall(_OPTIONS_FRAME)
            head = s.recv(9)
        return len(head) >= 5 and head[4] == _SUPPORTED


def nodetool(host: str, jmx_port: int, args: list[str], timeout: float = NODETOOL_TIMEOUT) -> str:
    """Run Cassandra's NodeTool from the installed jars against host:jmx_port; its output.
    ServerError with its words when it fails or outlasts the timeout."""
    lib = lib_dir("cassandra", VERSION)
    if lib is None:
        raise ServerError(f"cassandra: nodetool needs Cassandra {VERSION}'s jars "
                          f"(python -m tsbench servers install cassandra)")
    java = java_home_ok("cassandra nodetool")
    with tempfile.NamedTemporaryFile("w", prefix="tsbench-nodetool-", suffix=".xml") as quiet:
        quiet.write(TOOLS_LOGBACK)
        quiet.flush()
        cmd = [str(java), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", *JPMS_FLAGS,   # a quick client
               f"-Dlogback.configurationFile={quiet.name}", "-cp", f"{lib}/*",
               "org.apache.cassandra.tools.NodeTool", "-h", host, "-p", str(jmx_port), *args]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise ServerError(f"cassandra: nodetool {' '.join(args)} did not finish within {timeout:.0f} s") from None
    if p.returncode != 0:
        words = (p.stderr.strip() or p.stdout.strip()).splitlines()
        raise ServerError(f"cassandra: nodetool {' '.join(args)} failed: {' | '.join(words[-3:]) or p.returncode}")
    return p.stdout
