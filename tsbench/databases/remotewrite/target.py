"""Any remote-write receiver as a target (phase 2): `-t remote-write -s URL`, the URL the
receiver's write endpoint itself (http://HOST:9090/api/v1/write for Prometheus, :8428/api/v1/write
for VictoriaMetrics, a Mimir, Thanos or Cortex receiver's, a collector's). Each batch goes as
the remote-write 1.0 body the prometheus and victoriametrics targets send (shared/remote_write.py,
built before the timed load: data/bodies.py), the series named as they name them.

What is checked: every batch answered 2xx (else the receiver's words, as for every target; 429
and 5xx are push-back, retried). What is not: what the receiver keeps. A receiver of unknown kind
cannot be counted, so the load refuses to verify (can_count False: load with --no-verify, and its
verify figures stay empty); to verify, load the database's own target (prometheus,
victoriametrics -O protocol=remote-write) or count it by its own tools. create() cannot see what
the receiver holds either: --if-exists abort and reuse write on, drop is refused."""

from __future__ import annotations

from pydantic import ConfigDict

from tsbench.core.errors import UserError
from tsbench.core.model import Batch, Tables
from tsbench.databases.shared.http import HttpClient, PushTimeoutOption
from tsbench.databases.shared.remote_write import RemoteWriteBody
from tsbench.databases.shared.target import Target

NOT_COUNTED = ("target remote-write: a remote-write URL cannot be counted (the protocol has no read-back); "
               "load with --no-verify, or load the database's own target to verify")


class RemoteWriteOptions(PushTimeoutOption):
    model_config = ConfigDict(extra="forbid")


class RemoteWriteTarget(Target):
    name = "remote-write"
    needs_url = True
    url_example = "http://HOST:PORT/api/v1/write"
    format = "influx"
    count_unit = "values"
    time_resolution_ns = 1_000_000               # remote-write times are milliseconds
    can_count = False
    options_model = RemoteWriteOptions

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.remote_write = RemoteWriteBody()
        self.http: HttpClient | None = None

    async def open(self) -> None:
        self.http = HttpClient(self.url, f"remote-write receiver at {self.url}", timeout=self.options.timeout)
        await self.http.open(probe_path="")          # any answer: the receiver is there

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()
            self.http = None

    async def create(self, tables: Tables, if_exists: str) -> None:
        if if_exists == "drop":
            raise UserError("target remote-write: --if-exists drop: a remote-write URL has no delete; "
                            "empty the receiver by its own means (or use its database's target)")

    async def write(self, batch: Batch) -> None:
        await self.remote_write.post(self.http, "", batch.data)

    async def count(self, tables: Tables) -> int:
        raise UserError(NOT_COUNTED)

    async def version(self) -> str:
        return "remote-write 1.0 receiver"
