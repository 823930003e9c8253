"""InfluxDB 1.x as a target (phases 2 and 4): line protocol batches in ns
precision through the v1 /write endpoint (the shared HttpClient) or the v2
/api/v2/write endpoint that 1.8 also serves (the influxdb-client package);
statements through POST /query. count() is in field values. Options consistency
(v1 /write's write consistency, meant for a cluster) and shard_duration (the
database is created WITH SHARD DURATION it) are inch's -consistency and -shard-duration;
gzip / gzip_level (http.GzipOption, v1 /write only) gzip the line protocol bodies.

Queries: rendered by the dialect of option query_language (influxql.py, the
default: POST /query, epoch=ns, JSON; or flux.py: POST /api/v2/query,
annotated CSV, the server needs flux-enabled, i.e. `server: {kind: influx,
flux: true}`), their request bodies encoded at render time; query() times the
request and hands the answer to the dialect's parse_answer()."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Literal

from pydantic import ConfigDict, Field, SecretStr, model_validator

from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.core.model import STAT_KINDS, Batch, Table, Tables, TableStats
from tsbench.databases.influx.dialects.flux import Flux
from tsbench.databases.influx.dialects.influxql import InfluxQL
from tsbench.databases.influx.dialects.literals import ident
from tsbench.databases.shared.http import PUSHBACK_STATUS, Gzip, GzipOption, HttpClient
from tsbench.databases.shared.sqlstats import table_stats
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer

# InfluxDB's words when it pushes back (HTTP 500): retry the same batch later.
# A bare "timeout" would also match a refused line that mentions the word.
PUSHBACK_WORDS = ("cache-max-memory-size exceeded", "cache maximum memory size exceeded", '"error":"timeout"')
PASSWORD_ENV = "INFLUX_PASSWORD"
COMPACT_TIMEOUT = 600.0
# per query language: the endpoint and the headers of a query request
QUERY_PATH = {"influxql": "/query?epoch=ns", "flux": "/api/v2/query"}
QUERY_HEADERS = {"influxql": {"Accept-Encoding": "identity", "Content-Type": "application/x-www-form-urlencoded"},
                 "flux": {"Content-Type": "application/json", "Accept": "application/csv",
                          "Accept-Encoding": "identity"}}
FLUX_DIALECT = {"header": True, "delimiter": ",", "annotations": ["datatype", "group", "default"]}


class InfluxOptions(GzipOption):
    model_config = ConfigDict(extra="forbid")
    database: str = Field("tsbench", description="the database to load")
    api: Literal["v1", "v2"] = Field("v1", description="the write endpoint: v1 /write (the shared HttpClient) or "
                                                       "v2 /api/v2/write (the influxdb-client package)")
    username: str | None = Field(None, description="the user to authenticate as (needs a password)")
    password: SecretStr | None = Field(None, description="the user's password; better: leave unset and export "
                                                         "INFLUX_PASSWORD")
    query_language: Literal["influxql", "flux"] = Field(
        "influxql", description="the queries' language; flux: the server needs flux: true")
    consistency: Literal["any", "one", "quorum", "all"] | None = Field(
        None, description="v1 /write's write consistency (a cluster's; inch's -consistency)")
    shard_duration: str | None = Field(
        None, pattern=r"^[1-9][0-9]*(ns|u|µ|ms|s|m|h|d|w)$",
        description="the database is made WITH SHARD DURATION this, e.g. 1h (inch's -shard-duration)")

    @model_validator(mode="after")
    def _v1_only(self):
        if self.consistency is not None and self.api != "v1":
            raise ValueError("consistency is a v1 /write setting (api=v1)")
        if self.gzip and self.api != "v1":
            raise ValueError("gzip is a v1 /write setting (api=v1; with v2 the influxdb-client library sends)")
        return self


@dataclass(frozen=True)
class InfluxQuery:
    """A rendered query: its language, text, and the spec's type and params (to normalize)."""

    language: str            # "influxql" | "flux"
    text: str
    type: str
    params: dict = field(repr=False, compare=False)
    client: bool = False     # the answer is computed on the client (Dialect.client_finished)

    def __str__(self) -> str:
        return self.text


class InfluxTarget(Target):
    name = "influx"
    needs_url = True
    url_example = "http://HOST:8086"
    format = "influx"
    count_unit = "values"
    value_checks = {k: None for k in STAT_KINDS}   # InfluxQL count/sum/min/max; series by the index
    own_disk_figure = "influx_shard_disk_bytes"
    server_kind = "influx"
    options_model = InfluxOptions
    dialects = {"influxql": InfluxQL, "flux": Flux}   # query_types: those of the query_language's dialect

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        o = self.options
        self.db = o.database
        self.what = f"influx at {self.url}"
        self._write_params = {"db": self.db, "precision": "ns",
                              **({"consistency": o.consistency} if o.consistency else {})}
        self.headers: dict[str, str] = {}
        self._password: str | None = None
        if o.username:
            pw = o.password.get_secret_value() if o.password else os.environ.get(PASSWORD_ENV)
            if pw is None:
                raise UserError(f"target influx: username {o.username!r} needs a password: "
                                f"export {PASSWORD_ENV}")
            self._password = pw
            cred = base64.b64encode(f"{o.username}:{pw}".encode()).decode()
            self.headers["Authorization"] = f"Basic {cred}"
        self._gzip = Gzip(o, {"Content-Type": "text/plain; charset=utf-8", **self.headers})
        self.http: HttpClient | None = None
        self._v2 = None          # (client, write_api) for api v2
        self._query_headers = {lang: {**self.headers, **h} for lang, h in QUERY_HEADERS.items()}
        self._bodies: dict[tuple[str, str], bytes] = {}
        self._version = ""

    # ---- connection ---------------------------------------------------------------------
    async def open(self) -> None:
        self.http = HttpClient(self.url, self.what, pushback_words=PUSHBACK_WORDS)
        await self.http.open(probe_path="/ping")
        async with self.http.session.get(self.url + "/ping") as r:
            self._version = r.headers.get("X-Influxdb-Version", "")
            if r.status != 204 or not self._version:
                await self.close()
                raise UserError(f"target influx: {self.url}/ping answered HTTP {r.status} with X-Influxdb-Version "
                                f"{self._version or '(none)'}: is this an InfluxDB 1.x server?")
        if self.options.api == "v2":
            from influxdb_client.client.influxdb_client_async import InfluxDBClientAsync

            token = f"{self.options.username}:{self._password}" if self.options.username else "-"
            client = InfluxDBClientAsync(url=self.url, token=token, org="-", timeout=300_000)
            self._v2 = (client, client.write_api())

    async def close(self) -> None:
        if self._v2 is not None:
            await self._v2[0].close()
            self._v2 = None
        if self.http is not None:
            await self.http.close()
            self.http = None

    async def version(self) -> str:
        return self._version

    # ---- statements ---------------------------------------------------------------------
    async def influxql(self, q: str, db: str | None = None) -> list[dict]:
        """Run InfluxQL statements (POST /query); the results, or Fatal with the server's words."""
        form = {"q": q}
        if db:
            form["db"] = db
        try:
            body = await self.http.post("/query", form, params={"epoch": "ns"}, headers=self.headers)
        except Retryable as exc:
            raise Fatal(str(exc)) from None
        results = json.loads(body).get("results", [])
        for r in results:
            if "error" in r:
                raise Fatal(f"{self.what}: {q[:200]}: {r['error']}")
        return results

    async def _databases(self) -> set[str]:
        res = await self.influxql("SHOW DATABASES")
        return {row[0] for s in res[0].get("series", []) for row in s.get("values") or []}

    async def create(self, tables: Tables, if_exists: str) -> None:
        db = ident(self.db)
        if self.db in await self._databases():
            if if_exists == "drop":
                await self.influxql(f"DROP DATABASE {db}")
            elif if_exists == "abort":
                res = await self.influxql(f"SHOW MEASUREMENTS ON {db} LIMIT 1")
                if res[0].get("series"):
                    raise exists_error("influx", f"database {self.db!r} at {self.url}")
        shards = f" WITH SHARD DURATION {self.options.shard_duration}" if self.options.shard_duration else ""
        await self.influxql(f"CREATE DATABASE {db}{shards}")

    # ---- load ---------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        if self._v2 is not None:
            return await self._write_v2(batch)
        await self.http.post("/write", await self._gzip.body(batch.data), params=self._write_params,
                             headers=self._gzip.headers)

    async def _write_v2(self, batch: Batch) -> None:
        import aiohttp
        from influxdb_client.rest import ApiException

        try:
            # the client takes bytes only (a memoryview would be iterated per byte)
            await self._v2[1].write(bucket=f"{self.db}/autogen", record=bytes(batch.data), write_precision="ns")
        except ApiException as exc:
            text = (exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) else str(exc.body or "")).strip()
            msg = f"{self.what}: HTTP {exc.status}: {text[:500] or exc.reason}"
            if exc.status in PUSHBACK_STATUS or any(w in text for w in PUSHBACK_WORDS):
                raise Retryable(msg) from None
            raise Fatal(msg) from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, asyncio.TimeoutError,
                ConnectionError) as exc:
            raise Retryable(f"{self.what}: {exc or type(exc).__name__}") from None

    async def count(self, tables: Tables) -> int:
        """Field values: count(*) of every measurement over [start, end)."""
        where = f"WHERE time >= {tables.start_ns} AND time < {tables.end_ns}"
        q = ";".join(f"SELECT count(*) FROM {ident(t.name)} {where}" for t in tables)
        total = 0
        for r in await self.influxql(q, db=self.db):
            for s in r.get("series", []):
                for row in s.get("values") or []:
                    total += sum(v for v in row[1:] if v)
        return total

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """count, sum, min, max of every field over [start, end) in one InfluxQL statement
        (JSON numbers: Go writes a float's shortest round-trip text), and the exact series
        cardinality of the measurement."""
        cols = ", ".join(f"{agg}({ident(c.name)})" for c in table.fields for agg in ("count", "sum", "min", "max"))
        res = await self.influxql(f"SELECT {cols} FROM {ident(table.name)} "
                                  f"WHERE time >= {tables.start_ns} AND time < {tables.end_ns}", db=self.db)
        rows = [row for s in res[0].get("series", []) for row in s.get("values") or []]
        row = rows[0][1:] if rows else [None] * (4 * len(table.fields))
        card = await self.influxql(f"SHOW SERIES EXACT CARDINALITY ON {ident(self.db)} FROM {ident(table.name)}")
        series = sum(r[0] for s in card[0].get("series", []) for r in s.get("values") or [])
        return table_stats(table, series, row)

    # ---- settle and measure -------------------------------------------------------------
    async def _stats(self, module: str) -> list[tuple[dict, dict]]:
        """SHOW STATS rows of one module for this database: (tags, {field: value})."""
        res = await self.influxql(f"SHOW STATS FOR '{module}'")
        out = []
        for s in res[0].get("series", []):
            tags = s.get("tags") or {}
            if tags.get("database") != self.db:
                continue
            for row in s.get("values") or []:
                out.append((tags, dict(zip(s["columns"], row))))
        return out

    async def compact(self, timeout: float = COMPACT_TIMEOUT) -> None:
        """Wait until every shard's cache has been snapshotted to TSM files (our
        server config does it after 10 s without writes) and no compaction is
        running or queued, on two polls 1 s apart; give up quietly after
        `timeout` s. Full compaction of cold shards (1 min cold in our config)
        is not awaited."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while time.monotonic() < deadline:
            cache = await self._stats("tsm1_cache")
            engine = await self._stats("tsm1_engine")
            busy = any(v.get("memBytes", 0) for _, v in cache) or any(
                n for _, v in engine for k, n in v.items()
                if k.endswith(("CompactionsActive", "CompactionQueue")) and n)
            quiet = 0 if busy else quiet + 1
            if quiet == 2:
                return
            await asyncio.sleep(1.0)

    async def disk_bytes(self) -> dict[str, int]:
        """The shards' own diskBytes (TSM files + WAL) summed over the database."""
        return {"influx_shard_disk_bytes": sum(int(v.get("diskBytes", 0)) for _, v in await self._stats("shard"))}

    # ---- queries ------------------------------------------------------------------------
    def dialect_name(self) -> str:
        return self.options.query_language

    def dialect(self, language: str | None = None) -> InfluxQL | Flux:
        """The dialect of `language` (the query_language option's by default) for this database."""
        return self.dialects[language or self.dialect_name()](self.db)

    def render(self, spec, form: str = "tsbench") -> InfluxQuery:
        """InfluxQL (or Flux, with query_language: flux) of a QuerySpec, in tsbench's form or
        another (Target.render); carries the params."""
        text = super().render(spec, form)
        lang = self.dialect_name()
        self._body(lang, text)         # encoded now, not on the timed path
        return InfluxQuery(lang, text, spec.type, spec.params, self.dialect(lang).client_finished(spec.params))

    def _body(self, lang: str, text: str) -> bytes:
        """The request body of a query (JSON for Flux, a form for InfluxQL), encoded once."""
        body = self._bodies.get((lang, text))
        if body is None:
            if lang == "flux":
                body = json.dumps({"query": text, "type": "flux", "dialect": FLUX_DIALECT}).encode()
            else:
                body = urllib.parse.urlencode({"q": text, "db": self.db}).encode()
            self._bodies[(lang, text)] = body
        return body

    async def prepare(self, workers: int) -> None:
        """One keep-alive connection per worker, opened before timing."""
        await self.http.warm(workers, "/ping")

    async def query(self, native: InfluxQuery) -> Answer:
        """Run a rendered query: the response body read to its last byte, the transport's
        time to its first byte (InfluxDB sends the headers before the query runs, so they
        are not the first byte that counts) and its size (uncompressed on the wire:
        Accept-Encoding identity). InfluxDB's refusals are Fatal with its words."""
        if self.http is None:
            raise Fatal(f"{self.what}: query() before open()")
        lang = native.language
        t = await self.http.timed_post(QUERY_PATH[lang], self._body(lang, native.text),
                                       headers=self._query_headers[lang])
        if t.status >= 300:
            raise self._refused(lang, t.status, t.body.decode("utf-8", "replace"))
        return Answer(t.body, len(t.body), t.ttfb, connect_s=t.connect_s)

    def finish(self, native: InfluxQuery, answer: Answer) -> list[tuple] | None:
        """Where the client computes the answer (native.client): its rows (client_s)."""
        return self.canonical(native, answer) if native.client else None

    def canonical(self, native: InfluxQuery, answer: Answer) -> list[tuple]:
        """The canonical rows of a /query answer (the dialect's parser)."""
        text = answer.raw.decode("utf-8", "replace")
        return self.dialect(native.language).parse_answer(native.params, text, self.what)

    def _refused(self, lang: str, status: int, text: str) -> Fatal:
        """A query answered with an HTTP error status, in the server's words."""
        if lang == "flux":
            hint = " (Flux needs the server option flux: true)" if status in (403, 404) else ""
            return Fatal(f"{self.what}: flux: HTTP {status}: {_error_text(text)}{hint}")
        return Fatal(f"{self.what}: HTTP {status}: {_error_text(text)}")


def _error_text(text: str) -> str:
    """The "error" of a JSON error body, else the body itself (one line, 500 chars)."""
    try:
        msg = json.loads(text).get("error")
    except (json.JSONDecodeError, AttributeError):
        msg = None
    return (msg or text.strip() or "(empty body)").replace("\n", " ")[:500]
