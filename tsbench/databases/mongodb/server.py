"""mongo-java-server as the local MongoDB stand-in (phases 2-5): no registry
reachable here ships a MongoDB server, so `server: local` runs
de.bwaldvogel:mongo-java-server 1.47.0 from Maven Central (its in-memory
backend, on the JVM layer) through the single-file Launcher.java beside this
module, on 127.0.0.1 and a free port. It speaks the MongoDB wire protocol
(reporting wire version 8, so pymongo < 4.18) and answers `$group` with `$max`,
`$min`, `$avg` and `$sum`; it is always named by its own name and version,
never called MongoDB. Its data lives in the heap (option `heap`, default a
quarter of the machine's memory, at least 1 GiB; DevOps-100 x 3 h, 972,000
documents, holds about 3.5 GB live): nothing is on disk, and a cold-cache pass
does not restart it (the data would be gone; the pass records why). A heap too small ends
the JVM (ExitOnOutOfMemoryError, as for every JVM server) with the error in its
log, rather than leaving a wedged server."""

from __future__ import annotations

import pathlib
import socket

from tsbench.databases.shared.jvm import JvmServer

LAUNCHER = pathlib.Path(__file__).resolve().parent / "Launcher.java"
VERSION = "1.47.0"


class MongoJavaServer(JvmServer):
    kind = "mongo-java-server"
    lib_name = "mongo-java-server"
    lib_version = VERSION
    artifacts = (f"de.bwaldvogel:mongo-java-server:{VERSION}", "org.slf4j:slf4j-nop:2.0.16")
    main_class = str(LAUNCHER)
    port_names = ("mongo",)
    url_scheme = "mongodb"
    heap_mb = (1024, 1 << 20, 4)   # the data lives in the heap: a quarter of the machine, at least 1 GiB
    restart_keeps_data = False

    def main_args(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return [str(ports["mongo"])]

    def ready(self, ports: dict[str, int]) -> bool:
        with socket.create_connection(("127.0.0.1", ports["mongo"]), timeout=2):
            return True

    def version(self) -> str:
        return VERSION
