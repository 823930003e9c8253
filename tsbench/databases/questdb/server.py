"""QuestDB 9.3.4 as a local server (phases 2-5): the one jar `org.questdb:questdb`
from Maven Central (its native libraries inside), run on the JVM layer as the
JPMS module io.questdb (`-p <jar dir> -m io.questdb/io.questdb.ServerMain -d
<root>`). The root is the instance's data dir; its `conf/server.conf`, written
before every start, binds every listener to 127.0.0.1 on a free port (HTTP: the
REST API, /exec and ILP over HTTP /write; the minimal HTTP server; PostgreSQL
wire; ILP over TCP), turns ILP over UDP and telemetry off, and its `log.conf`
keeps the log to errors and QuestDB's advisories (its INFO level logs every
query and connection). Ready when `/exec?query=select 1` answers (about 3 s).
QuestDB keeps its data off the heap (memory-mapped files): the heap option's
default stays small."""

from __future__ import annotations

import pathlib
import urllib.parse
import urllib.request

from tsbench.databases.shared.jvm import JvmServer

VERSION = "9.3.4"
LOG_CONF = """writers=stdout
w.stdout.class=io.questdb.log.LogConsoleWriter
w.stdout.level=ERROR,CRITICAL,ADVISORY
"""


def server_conf(ports: dict[str, int]) -> str:
    settings = {
        "http.net.bind.to": f"127.0.0.1:{ports['http']}",
        "http.min.net.bind.to": f"127.0.0.1:{ports['http_min']}",
        "pg.net.bind.to": f"127.0.0.1:{ports['pg']}",
        "line.tcp.net.bind.to": f"127.0.0.1:{ports['ilp']}",
        "line.udp.enabled": "false",
        "telemetry.enabled": "false",
        "query.timeout": "1h",               # tsbench bounds its queries itself (--query-timeout)
        # idle writers closed (their preallocated column files cut to size) and applied WAL
        # segments purged within a second of a load, not after 10 minutes: the target's
        # compact() waits for that, so the disk figure is the settled one (in ms)
        "cairo.idle.check.interval": "250",
        "cairo.inactive.writer.ttl": "500",
        "cairo.wal.inactive.writer.ttl": "500",
        "cairo.wal.purge.interval": "250",
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


class QuestDbServer(JvmServer):
    kind = "questdb"
    port_names = ("http", "pg", "ilp", "http_min")
    lib_name = "questdb"
    lib_version = VERSION
    artifacts = (f"org.questdb:questdb:{VERSION}",)
    main_class = "io.questdb.ServerMain"
    module = "io.questdb/io.questdb.ServerMain"
    jvm_flags = ("--add-exports", "java.base/jdk.internal.math=io.questdb")
    heap_mb = (256, 1024, 8)
    ready_timeout = 60.0

    def prepare(self, datadir: pathlib.Path, ports: dict[str, int]) -> None:
        conf = datadir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (conf / "server.conf").write_text(server_conf(ports))
        (conf / "log.conf").write_text(LOG_CONF)

    def main_args(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return ["-d", str(datadir)]

    def ready(self, ports: dict[str, int]) -> bool:
        q = urllib.parse.urlencode({"query": "select 1"})
        with urllib.request.urlopen(f"http://127.0.0.1:{ports['http']}/exec?{q}", timeout=2.0) as r:
            return r.status == 200

    def version(self) -> str:
        return VERSION

    def extra_state(self) -> dict:
        return {"db_root": str(self.datadir / "db")}
