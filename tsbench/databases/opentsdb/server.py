"""OpenTSDB 2.4.1 on HBase 2.6.4 standalone as a local server (phases 2-5): both from
Maven Central (two lib dirs), run in one JVM by the single-file Launcher.java beside
this module, so the shared lifecycle (one pid, SIGTERM, SIGKILL after stop_timeout)
applies unchanged. HBase (ZooKeeper, master, region server) runs on the app class
path with its root dir and ZooKeeper data under the data dir, every port on
127.0.0.1 and its web UIs off; the launcher makes OpenTSDB's four tables through the
Admin API, then runs OpenTSDB in a class loader of its own. Ready when
`/api/version` answers. The launcher's control port answers `POST /compact` (a flush
and major compaction of the tables, for the target after a load); the state's
`hbase_root` is the dir whose bytes are the database's size. SIGTERM stops OpenTSDB,
then HBase, cleanly (a few seconds; bounded by the launcher at 75 s). OpenTSDB's own
row compaction is off unless the server option `row_compaction: true` turns it on
(see opentsdb_conf)."""

from __future__ import annotations

import pathlib
import shutil
import urllib.request

from tsbench.core.errors import UserError
from tsbench.databases.shared.jvm import JvmServer, lib_dir, maven_lib

LAUNCHER = pathlib.Path(__file__).resolve().parent / "Launcher.java"
VERSION = "2.4.1"
HBASE_VERSION = "2.6.4"
TSDB_ARTIFACTS = (f"net.opentsdb:opentsdb:{VERSION}",)

# the Java 11+ flags of HBase 2.6's own launcher (bin/hbase)
JDK17_FLAGS = ("-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
               "--add-modules=jdk.unsupported",
               *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
                   "java.io", "java.nio", "sun.nio.ch", "java.lang", "jdk.internal.ref", "java.lang.reflect",
                   "java.util", "java.util.concurrent")),
               *(f"--add-exports={p}=ALL-UNNAMED" for p in (
                   "java.base/jdk.internal.misc", "java.security.jgss/sun.security.krb5",
                   "java.base/sun.net.dns", "java.base/sun.net.util")))

LOG4J = """log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop=WARN
log4j.logger.org.apache.hadoop.hbase=INFO
"""

LOGBACK = """<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{0}: %msg%n</pattern></encoder>
  </appender>
  <logger name="QueryLog" level="OFF"/>
  <logger name="org.apache.zookeeper" level="WARN"/>
  <!-- a line per connection, request, query and new UID: loads make millions -->
  <logger name="net.opentsdb.tsd.ConnectionManager" level="WARN"/>
  <logger name="net.opentsdb.tsd.HttpQuery" level="WARN"/>
  <logger name="net.opentsdb.stats.QueryStats" level="WARN"/>
  <logger name="net.opentsdb.uid.UniqueId" level="WARN"/>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"""


def hbase_settings(datadir: pathlib.Path, ports: dict[str, int]) -> dict[str, str]:
    """HBase standalone on 127.0.0.1: the given ports, its data under datadir, no web UIs."""
    return {
        "hbase.cluster.distributed": "false",
        "hbase.rootdir": (datadir / "hbase").as_uri(),
        "hbase.tmp.dir": str(datadir / "tmp"),
        "hadoop.tmp.dir": str(datadir / "tmp"),
        "hbase.zookeeper.quorum": "127.0.0.1",
        "hbase.zookeeper.property.clientPort": str(ports["zk"]),
        "hbase.zookeeper.property.clientPortAddress": "127.0.0.1",
        "hbase.zookeeper.property.dataDir": str(datadir / "zk"),
        "hbase.master.hostname": "127.0.0.1",
        "hbase.unsafe.regionserver.hostname": "127.0.0.1",
        "hbase.master.port": str(ports["master"]),
        "hbase.regionserver.port": str(ports["regionserver"]),
        "hbase.master.info.port": "-1",
        "hbase.regionserver.info.port": "-1",
        "hbase.unsafe.stream.capability.enforce": "false",   # a local file system has no hflush
        "hbase.wal.provider": "filesystem",
        "hbase.master.start.timeout.localHBaseCluster": "180000",
        "hbase.master.wait.on.regionservers.maxtostart": "1",   # its one region server: no 4.5 s wait for more
        "hbase.master.hfilecleaner.ttl": "0",     # compacted-away files and flushed WALs: deleted by /compact
        "hbase.master.logcleaner.ttl": "0",
        # one region server gains nothing from splitting a table, and OpenTSDB 2.4's asynchbase
        # lost acknowledged points while the tsdb table's regions split under a day's load
        "hbase.regionserver.region.split.policy": "org.apache.hadoop.hbase.regionserver.DisabledRegionSplitPolicy",
    }


def opentsdb_conf(instance: pathlib.Path, ports: dict[str, int], row_compaction: bool = False) -> str:
    settings = {
        "tsd.network.bind": "127.0.0.1",
        "tsd.network.port": ports["http"],
        "tsd.storage.hbase.zk_quorum": f"127.0.0.1:{ports['zk']}",
        "tsd.http.staticroot": instance / "tsd" / "static",
        "tsd.http.cachedir": instance / "tsd" / "cache",
        "tsd.core.auto_create_metrics": "true",
        "tsd.http.request.enable_chunked": "true",
        "tsd.http.request.max_chunk": 64 << 20,       # loads post big gzip'd JSON batches
        "tsd.core.meta.enable_realtime_ts": "false",
        "tsd.core.meta.enable_realtime_uid": "false",
        "tsd.core.meta.enable_tsuid_tracking": "false",
        "tsd.core.meta.enable_tsuid_incrementing": "false",
        "tsd.storage.max_tags": 16,                   # devops points carry up to 12 tags (default 8)
        "tsd.http.query.allow_delete": "true",        # the target's --if-exists drop
        "tsd.query.skip_unresolved_tagvs": "true",    # a filter naming a never-written tag value
        # OpenTSDB's own row compaction (a series-hour's cells rewritten as one) runs in the
        # background for half an hour after a load: it moves the disk figure and races with the
        # deletes of --if-exists drop. Off unless the server option row_compaction asks for it.
        "tsd.storage.enable_compaction": "true" if row_compaction else "false",
    }
    return "".join(f"{k} = {v}\n" for k, v in settings.items())


class OpenTsdbServer(JvmServer):
    kind = "opentsdb"
    port_names = ("http", "zk", "master", "regionserver", "control")
    lib_name = "hbase"
    lib_version = HBASE_VERSION
    artifacts = (f"org.apache.hbase:hbase-server:{HBASE_VERSION}-hadoop3",
                 f"org.apache.hbase:hbase-zookeeper:{HBASE_VERSION}-hadoop3")
    main_class = str(LAUNCHER)
    jvm_flags = JDK17_FLAGS
    heap_mb = (768, 2048, 8)       # HBase and OpenTSDB share the heap
    options_allowed = ("heap", "row_compaction")
    ready_timeout = 180.0
    stop_timeout = 90.0            # beyond the launcher's own 75 s bound on HBase's clean stop

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        flag = self.options.get("row_compaction", False)
        if not isinstance(flag, bool):
            raise UserError(f"server {self.kind}: option row_compaction: {flag!r} is not true or false")
        self.row_compaction = flag

    # ---- install: HBase on the class path, OpenTSDB's own lib dir beside it -----------------
    def binary(self) -> pathlib.Path | None:
        return super().binary() if lib_dir("opentsdb", VERSION) else None

    def install(self) -> None:
        super().install()
        maven_lib("opentsdb", VERSION, list(TSDB_ARTIFACTS), self.kind)

    @classmethod
    def fixed_version(cls) -> str:
        return VERSION              # OpenTSDB's, not that of the HBase library it runs on

    # ---- run ----------------------------------------------------------------------------------
    def prepare(self, datadir: pathlib.Path, ports: dict[str, int]) -> None:
        shutil.rmtree(self.dir / "tsd", ignore_errors=True)
        for sub in ("static", "cache"):
            (self.dir / "tsd" / sub).mkdir(parents=True)
        (self.dir / "opentsdb.conf").write_text(opentsdb_conf(self.dir, ports, self.row_compaction))
        (self.dir / "log4j.properties").write_text(LOG4J)
        (self.dir / "logback.xml").write_text(LOGBACK)

    def sysprops(self, datadir: pathlib.Path, ports: dict[str, int]) -> dict[str, str]:
        return {"log4j.configuration": (self.dir / "log4j.properties").as_uri(),      # HBase's (reload4j)
                "logback.configurationFile": str(self.dir / "logback.xml")}            # OpenTSDB's

    def main_args(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return [str(lib_dir("opentsdb", VERSION)), str(self.dir / "opentsdb.conf"), str(ports["control"]),
                *(f"{k}={v}" for k, v in hbase_settings(datadir, ports).items())]

    def ready(self, ports: dict[str, int]) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{ports['http']}/api/version", timeout=2.0) as r:
            return r.status == 200

    def extra_state(self) -> dict:
        return {"hbase_root": str(self.datadir / "hbase")}
