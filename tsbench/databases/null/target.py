"""Null targets (phase 2): the harness ceiling. `null` discards each batch after
the client-side work (reading and cutting the file, the workers' hand-off);
`null-http` posts each batch to a null HTTP sink (server.py) that
answers 204, to measure the HTTP path without a database (-O gzip=true: the bodies
gzip'd, the sink counts the lines it inflated)."""

from __future__ import annotations

import json

from pydantic import ConfigDict

from tsbench.core.model import Batch, Tables
from tsbench.databases.shared.http import (
    Gzip,
    GzipOption,
    HttpClient,
    PushTimeoutOption,
)
from tsbench.databases.shared.target import Target


class NullHttpOptions(PushTimeoutOption, GzipOption):
    model_config = ConfigDict(extra="forbid")


class NullTarget(Target):
    name = "null"
    format = "influx"
    count_unit = "rows"
    multiprocess = False
    keeps_data = False
    count_is_local = True

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.rows = 0

    @classmethod
    def accepts(cls, fmt: str) -> bool:
        return True

    async def create(self, tables: Tables, if_exists: str) -> None:
        self.rows = 0

    async def write(self, batch: Batch) -> None:
        self.rows += batch.rows

    async def count(self, tables: Tables) -> int:
        return self.rows


class NullHttpTarget(Target):
    """POST /write to a sink that counts the lines it got (GET /count)."""

    name = "null-http"
    needs_url = True
    url_example = "http://HOST:PORT"
    format = "influx"
    count_unit = "rows"
    server_kind = "null-http"
    keeps_data = False
    options_model = NullHttpOptions

    @classmethod
    def accepts(cls, fmt: str) -> bool:
        return True

    async def open(self) -> None:
        self.http = HttpClient(self.url, f"null-http sink at {self.url}", timeout=self.options.timeout)
        self.gzip = Gzip(self.options)
        await self.http.open(probe_path="/ping")

    async def close(self) -> None:
        await self.http.close()

    async def create(self, tables: Tables, if_exists: str) -> None:
        await self.http.post("/reset", b"")

    async def write(self, batch: Batch) -> None:
        await self.http.post("/write", await self.gzip.body(batch.data), headers=self.gzip.headers)

    async def count(self, tables: Tables) -> int:
        """The sink's lines; a sink that keeps timestamps (the tests' fault server) counts the window."""
        window = {"start": tables.start_ns, "end": tables.end_ns}
        return json.loads(await self.http.get_ok("/count", window))["rows"]

    async def version(self) -> str:
        return "null-http"
