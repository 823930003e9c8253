"""InfluxDB 1.x as a load target (phase 2): line protocol batches in ns
precision through the v1 /write endpoint (the shared HttpClient) or the v2
/api/v2/write endpoint that 1.8 also serves (the influxdb-client package);
statements through POST /query. count() is in field values.

Queries (phases 4-5): each shape of queries/shapes.py rendered as InfluxQL
(POST /query, epoch=ns, JSON) or, with option query_language: flux, as Flux
(POST /api/v2/query, annotated CSV; the server needs flux-enabled, i.e.
`server: {kind: influx, flux: true}`), and the response normalized to
canonical rows. Custom-shape types (iot) plug in through CUSTOM_INFLUXQL /
CUSTOM_FLUX (register_custom)."""

from __future__ import annotations

import asyncio
import base64
import calendar
import csv
import datetime as dt
import io
import json
import os
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from ..errors import UserError
from .base import Batch, Fatal, Retryable, Tables, Target, Unsupported, exists_error
from .http import PUSHBACK_STATUS, HttpClient

# InfluxDB's words when it pushes back (HTTP 500): retry the same batch later.
# A bare "timeout" would also match a refused line that mentions the word.
PUSHBACK_WORDS = ("cache-max-memory-size exceeded", "cache maximum memory size exceeded", '"error":"timeout"')
PASSWORD_ENV = "INFLUX_PASSWORD"
COMPACT_TIMEOUT = 600.0


class InfluxOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    database: str = "tsbench"
    api: Literal["v1", "v2"] = "v1"
    username: str | None = None
    password: SecretStr | None = None   # better: leave unset and export INFLUX_PASSWORD
    query_language: Literal["influxql", "flux"] = "influxql"   # flux: the server needs flux: true


def _ident(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ==== queries (phases 4-5) =======================================================================
#
# What this target runs, declared as data per query language. Every type of the devops,
# flux and relational families has an InfluxQL and a Flux form. Custom-shape types (iot)
# are added by another module through register_custom(), which fills CUSTOM_INFLUXQL /
# CUSTOM_FLUX; query_types includes them from then on.

_DEVOPS_AGGREGATE = (
    *(f"max-cpu-{n}" for n in (1, 2, 4, 8, 16, 32)),
    "1-host-1-hr", "1-host-12-hr", "8-host-1-hr", "groupby",
    *(f"single-groupby-{nf}-{hh}" for nf in (1, 5) for hh in ("1-1", "1-12", "8-1")),
    "cpu-max-all-1", "cpu-max-all-8", "cpu-max-all-32-24",
    "double-groupby-1", "double-groupby-5", "double-groupby-all", "groupby-orderby-limit")
_DEVOPS_OTHER = ("high-cpu-all", "high-cpu-1", "lastpoint")
_FLUX_FAMILY = tuple(f"flux-sum-{by}{d}d" for by in ("", "by-tag-") for d in (1, 4, 12))
_RELATIONAL = ("read-all", "read-tenth", "read-one")

QUERY_TYPES: dict[str, frozenset[str]] = {
    "influxql": frozenset(_DEVOPS_AGGREGATE + _DEVOPS_OTHER + _FLUX_FAMILY + _RELATIONAL),
    "flux": frozenset(_DEVOPS_AGGREGATE + _DEVOPS_OTHER + _FLUX_FAMILY + _RELATIONAL),
}


@dataclass(frozen=True)
class CustomQuery:
    """How one custom-shape query type is spelled for InfluxDB in one language.

    render(params) -> the query text (InfluxQL: may hold several `;`-separated statements).
    rows(params, response) -> canonical rows (queries/shapes.columns(params)), where response
    is, for InfluxQL, the "results" list of the /query JSON (one dict per statement, errors
    already raised) and, for Flux, the parsed tables: a list of tables, each a list of
    {column: value} rows, values typed by the CSV annotations (dateTime as epoch ns)."""

    render: Callable[[dict], str]
    rows: Callable[[dict, Any], list[tuple]]


CUSTOM_INFLUXQL: dict[str, CustomQuery] = {}
CUSTOM_FLUX: dict[str, CustomQuery] = {}
CUSTOM: dict[str, dict[str, CustomQuery]] = {"influxql": CUSTOM_INFLUXQL, "flux": CUSTOM_FLUX}


def register_custom(type_name: str, render: Callable[[dict], str], rows: Callable[[dict, Any], list[tuple]],
                    language: str = "influxql") -> None:
    """Add a custom-shape query type (e.g. an iot type) to what InfluxTarget runs in `language`."""
    CUSTOM[language][type_name] = CustomQuery(render, rows)


def supported_types(language: str) -> frozenset[str]:
    return QUERY_TYPES[language] | frozenset(CUSTOM[language])


class _QueryTypes:
    """query_types as data: on the class, the types of `language` (the InfluxQL ones by
    default, as the default options run); on an instance, those of its query_language."""

    def __init__(self, language: str | None = None):
        self.language = language

    def __get__(self, obj, owner) -> frozenset[str]:
        lang = self.language or (obj.options.query_language if obj is not None else "influxql")
        return supported_types(lang)


@dataclass(frozen=True)
class InfluxQuery:
    """A rendered query: its language, text, and the spec's type and params (to normalize)."""

    language: str            # "influxql" | "flux"
    text: str
    type: str
    params: dict = field(repr=False, compare=False)

    def __str__(self) -> str:
        return self.text


# ==== the target ================================================================================

class InfluxTarget(Target):
    name = "influx"
    format = "influx"
    count_unit = "values"
    server_kind = "influx"
    options_model = InfluxOptions
    query_types = _QueryTypes()                     # of the instance's query_language; InfluxQL's on the class
    influxql_query_types = _QueryTypes("influxql")
    flux_query_types = _QueryTypes("flux")

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        o = self.options
        self.db = o.database
        self.what = f"influx at {self.url}"
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
        self.http: HttpClient | None = None
        self._v2 = None          # (client, write_api) for api v2
        self._query_headers: dict | None = None
        self._bodies: dict[tuple[str, str], bytes] = {}
        self._version = ""

    @classmethod
    def capabilities(cls) -> dict[str, Any]:
        return {**super().capabilities(), "flux_query_types": sorted(cls.flux_query_types)}

    # ---- connection ---------------------------------------------------------------------
    async def open(self) -> None:
        if not self.url:
            raise UserError("target influx: needs a url (server: local, or server: {url: http://host:8086})")
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

    async def create(self, tables: Tables, if_exists: str = "abort") -> None:
        db = _ident(self.db)
        if self.db in await self._databases():
            if if_exists == "drop":
                await self.influxql(f"DROP DATABASE {db}")
            elif if_exists == "abort":
                res = await self.influxql(f"SHOW MEASUREMENTS ON {db} LIMIT 1")
                if res[0].get("series"):
                    raise exists_error("influx", f"database {self.db!r} at {self.url}")
        await self.influxql(f"CREATE DATABASE {db}")

    # ---- load ---------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        if self._v2 is not None:
            return await self._write_v2(batch)
        await self.http.post("/write", batch.data, params={"db": self.db, "precision": "ns"},
                             headers={"Content-Type": "text/plain; charset=utf-8", **self.headers})

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
        q = ";".join(f"SELECT count(*) FROM {_ident(t.name)} {where}" for t in tables)
        total = 0
        for r in await self.influxql(q, db=self.db):
            for s in r.get("series", []):
                for row in s.get("values") or []:
                    total += sum(v for v in row[1:] if v)
        return total

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
    def render(self, spec) -> InfluxQuery:
        """InfluxQL (or Flux, with query_language: flux) of a QuerySpec; carries the params."""
        lang = self.options.query_language
        if spec.type not in self.query_types:
            raise Unsupported(f"influx ({lang}) does not run query type {spec.type}")
        p = spec.params
        custom = CUSTOM[lang].get(spec.type)
        if custom is not None:
            text = custom.render(p)
        elif lang == "flux":
            text = flux(p, self.db)
        else:
            text = influxql(p)
        self._body(lang, text)         # encoded now, not on the timed path
        return InfluxQuery(lang, text, spec.type, p)

    def _body(self, lang: str, text: str) -> bytes:
        """The request body of a query (JSON for Flux, a form for InfluxQL), encoded once."""
        body = self._bodies.get((lang, text))
        if body is not None:
            return body
        if lang == "flux":
            body = json.dumps({"query": text, "type": "flux", "dialect": {
                "header": True, "delimiter": ",", "annotations": ["datatype", "group", "default"]}}).encode()
        else:
            body = urllib.parse.urlencode({"q": text, "db": self.db}).encode()
        self._bodies[(lang, text)] = body
        return body

    async def query(self, native: InfluxQuery):
        """Run a rendered query: time to the first and the last byte of the response body
        (InfluxDB sends the headers before the query runs, so they are not the first
        byte that counts), its size (uncompressed on the wire: Accept-Encoding identity),
        and its canonical rows. InfluxDB's refusals are Fatal with its words."""
        from ..queries.base import Answer

        if self.http is None:
            raise Fatal(f"{self.what}: query() before open()")
        custom = CUSTOM[native.language].get(native.type)
        request = self._body(native.language, native.text)
        if native.language == "flux":
            status, body, ttfb, secs = await self._timed_post(
                "/api/v2/query", request, headers={**self.headers, "Content-Type": "application/json",
                                                       "Accept": "application/csv", "Accept-Encoding": "identity"})
            text = body.decode("utf-8", "replace")
            if status >= 300:
                hint = " (Flux needs the server option flux: true)" if status in (403, 404) else ""
                raise Fatal(f"{self.what}: flux: HTTP {status}: {_error_text(text)}{hint}")
            tables = flux_tables(text, self.what)
            rows = custom.rows(native.params, tables) if custom else flux_rows(native.params, tables)
            return Answer(rows, len(body), ttfb, secs, raw=text)
        if self._query_headers is None:     # built once: the per-query path stays short
            self._query_headers = {**self.headers, "Accept-Encoding": "identity",
                                   "Content-Type": "application/x-www-form-urlencoded"}
        status, body, ttfb, secs = await self._timed_post("/query?epoch=ns", request,
                                                          headers=self._query_headers)
        text = body.decode("utf-8", "replace")
        if status >= 300:
            raise Fatal(f"{self.what}: HTTP {status}: {_error_text(text)}")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:
            raise Fatal(f"{self.what}: not a JSON answer: {text[:200]!r}") from None
        if "error" in doc:
            raise Fatal(f"{self.what}: {doc['error']}")
        results = doc.get("results") or []
        for r in results:
            if "error" in r:
                raise Fatal(f"{self.what}: {r['error']}")
            if r.get("partial") or any(s.get("partial") for s in r.get("series") or []):
                raise Fatal(f"{self.what}: the answer was cut short (partial: the server's max-row-limit?)")
        rows = custom.rows(native.params, results) if custom else influxql_rows(native.params, results)
        return Answer(rows, len(body), ttfb, secs, raw=text)

    async def _timed_post(self, path: str, data, params: dict | None = None,
                          headers: dict | None = None) -> tuple[int, bytes, float, float]:
        """(status, body, seconds to the first byte of the body, seconds to its last byte)."""
        import aiohttp

        t0 = time.perf_counter()
        try:
            async with self.http.session.post(self.url + path, data=data, params=params, headers=headers) as r:
                # InfluxDB sends its headers before the query has run: time the first body byte
                first = await r.content.readany()
                ttfb = time.perf_counter() - t0
                body = first + await r.content.read()
                status = r.status
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise Fatal(f"{self.what}: {path}: {str(exc) or type(exc).__name__}") from None
        return status, body, ttfb, time.perf_counter() - t0


def _error_text(text: str) -> str:
    """The "error" of a JSON error body, else the body itself (one line, 500 chars)."""
    try:
        msg = json.loads(text).get("error")
    except (json.JSONDecodeError, AttributeError):
        msg = None
    return (msg or text.strip() or "(empty body)").replace("\n", " ")[:500]


# ---- spelling helpers ---------------------------------------------------------------------------

_UNITS = (("d", 86_400 * 10**9), ("h", 3_600 * 10**9), ("m", 60 * 10**9), ("s", 10**9), ("ms", 10**6), ("ns", 1))
# Flux's range() takes times, not "everything": the widest the storage engine holds.
FLUX_MIN_TIME = "1677-09-21T00:12:43.145224194Z"
FLUX_MAX_TIME = "2262-04-11T23:47:16.854775806Z"


def _duration(ns: int) -> str:
    """A duration literal both InfluxQL and Flux read: 1m, 1h, 90s, 1500ms, 7ns."""
    ns = int(ns)
    if ns <= 0:
        raise ValueError(f"bucket width must be positive, got {ns} ns")
    for unit, n in _UNITS:
        if ns % n == 0:
            return f"{ns // n}{unit}"
    raise AssertionError


def _number(x) -> str:
    """A float literal without exponent (InfluxQL reads no 1e-05)."""
    from decimal import Decimal

    s = format(Decimal(repr(float(x))), "f")
    return s if "." in s else s + ".0"


def _ql_str(s: str) -> str:
    return "'" + str(s).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fx_str(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fx_list(names) -> str:
    return "[" + ", ".join(_fx_str(n) for n in names) + "]"


def _fx_col(name: str) -> str:
    return f"r[{_fx_str(name)}]"


def rfc3339(ns: int) -> str:
    """Epoch ns as RFC 3339 UTC with up to nine fractional digits."""
    s, frac = divmod(int(ns), 10**9)
    t = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=s)
    out = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if frac:
        out += "." + f"{frac:09d}".rstrip("0")
    return out + "Z"


def parse_rfc3339(s: str) -> int:
    """RFC 3339 (Flux writes UTC with Z and up to nine fractional digits) to epoch ns."""
    off = 0
    if s.endswith(("Z", "z")):
        body = s[:-1]
    else:
        body, zone = s[:-6], s[-6:]
        off = (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    head, _, frac = body.partition(".")
    secs = calendar.timegm(dt.datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").timetuple()) - off
    return secs * 10**9 + (int((frac + "000000000")[:9]) if frac else 0)


def _tag(v) -> str | None:
    """A group value: InfluxDB has no empty tag values, an absent tag reads as ""."""
    return None if v is None or v == "" else str(v)


def _converter(kind: str) -> Callable[[Any], Any]:
    if kind == "int":
        return lambda v: None if v is None else int(v)
    if kind == "str":
        return lambda v: None if v is None else str(v)
    return lambda v: None if v is None else float(v)


def _columns(p: dict):
    from ..queries.shapes import columns

    return columns(p)


def _finish_aggregate(p: dict, rows: list[tuple], has_time: bool, group: list[str]) -> list[tuple]:
    """What InfluxDB leaves out of the SQL meaning: count() of nothing is 0, not absent
    (a whole-window count over an empty window is one row of zeros), and LIMIT is global,
    not per series (rows of several groups are cut to the newest/oldest `limit`)."""
    n = len(p["fields"])
    if p["agg"] == "count":
        lead = (1 if has_time else 0) + len(group)
        rows = [r[:lead] + tuple(0 if v is None else v for v in r[lead:]) for r in rows]
        if not rows and not has_time and not group:
            rows = [(0,) * n]
    if p.get("limit") and has_time:
        rows.sort(key=lambda r: r[0], reverse=p.get("order") == "desc")
        rows = rows[:int(p["limit"])]
    return rows


# ---- InfluxQL -----------------------------------------------------------------------------------

def _ql_cmp(vf: dict) -> str:
    op = vf["op"]
    if op not in (">", ">=", "<", "<=", "="):
        raise Unsupported(f"influx: value filter operator {op!r}")
    return f"{_ident(vf['field'])} {op} {_number(vf['value'])}"


def _ql_where(p: dict, window: bool = True) -> str:
    conds = []
    if window:
        conds.append(f"time >= {int(p['start'])} AND time < {int(p['end'])}")
    if p.get("tag_values") is not None:
        tag = _ident(p["tag"])
        vals = list(p["tag_values"])
        conds.append("(" + " OR ".join(f"{tag} = {_ql_str(v)}" for v in vals) + ")" if vals
                     else f"({tag} = '' AND {tag} != '')")
    if p.get("value_filter"):
        conds.append(_ql_cmp(p["value_filter"]))
    return " AND ".join(conds)


def influxql(p: dict) -> str:
    """The InfluxQL of a drawn query of shape aggregate, rows or last."""
    shape = p["shape"]
    if shape == "custom":
        raise Unsupported(f"influx: no InfluxQL renderer for custom query type {p.get('type')!r}")
    m = _ident(p["measurement"])
    if shape == "aggregate":
        agg = p["agg"]
        if agg not in ("max", "min", "mean", "sum", "count"):
            raise Unsupported(f"influx: aggregate {agg!r}")
        sel = ", ".join(f"{agg}({_ident(f)})" for f in p["fields"])
        q = f"SELECT {sel} FROM {m} WHERE {_ql_where(p)}"
        groups = [f"time({_duration(p['bucket'])})"] if p.get("bucket") is not None else []
        groups += [_ident(g) for g in p.get("group_by") or []]
        if groups:
            q += " GROUP BY " + ", ".join(groups)
        if p.get("bucket") is not None:
            q += " fill(none)"          # empty buckets: absent, as in SQL (count would give 0)
        if p.get("order") == "desc":
            q += " ORDER BY time DESC"
        if p.get("limit"):
            q += f" LIMIT {int(p['limit'])}"  # per series: cut again globally in _finish_aggregate
        return q
    if shape == "rows":
        sel = [f"{_ident(t)}::tag" for t in p.get("tags_out") or []] + [f"{_ident(f)}::field" for f in p["fields"]]
        q = f"SELECT {', '.join(sel)} FROM {m} WHERE {_ql_where(p)}"
        if p.get("limit"):
            q += f" ORDER BY time ASC LIMIT {int(p['limit'])}"   # no GROUP BY: one series, a global limit
        return q
    if shape == "last":
        sel = ", ".join(f"{_ident(f)}::field" for f in p["fields"])
        return (f"SELECT {sel} FROM {m} GROUP BY {', '.join(_ident(g) for g in p['group_by'])} "
                f"ORDER BY time DESC LIMIT 1")
    raise Unsupported(f"influx: unknown query shape {shape!r}")


def influxql_rows(p: dict, results: list[dict]) -> list[tuple]:
    """Canonical rows of a /query JSON answer to influxql(p)."""
    has_time, group, values = _columns(p)
    conv = [_converter(v.kind) for v in values]
    series = [s for r in results for s in r.get("series") or []]
    shape = p["shape"]
    out: list[tuple] = []
    if shape in ("aggregate", "last"):
        for s in series:
            tags = s.get("tags") or {}
            g = tuple(_tag(tags.get(k)) for k in group)
            for row in s.get("values") or []:
                vals = tuple(c(v) for c, v in zip(conv, row[1:]))
                out.append(((int(row[0]),) if has_time else ()) + g + vals)
        if shape == "aggregate":
            out = _finish_aggregate(p, out, has_time, group)
        return out
    if shape == "rows":
        k = len(group)
        for s in series:
            for row in s.get("values") or []:
                out.append((int(row[0]), *(_tag(x) for x in row[1:1 + k]),
                            *(c(v) for c, v in zip(conv, row[1 + k:]))))
        return out
    raise Unsupported(f"influx: unknown query shape {shape!r}")


# ---- Flux ---------------------------------------------------------------------------------------

def _fx_cmp(expr: str, vf: dict, kind: str) -> str:
    op = {">": ">", ">=": ">=", "<": "<", "<=": "<=", "=": "=="}.get(vf["op"])
    if op is None:
        raise Unsupported(f"influx: value filter operator {vf['op']!r}")
    if kind == "int":               # compare as the SQL meaning does: the number, whatever its type
        expr = f"float(v: {expr})"
    return f"{expr} {op} {_number(vf['value'])}"


def _field_kind(p: dict, name: str) -> str:
    for f, t in zip(p.get("fields") or [], p.get("types") or []):
        if f == name:
            return t
    return "float"


def _fx_source(p: dict, bucket: str, fields: list[str], window: bool = True) -> list[str]:
    """from |> range |> filter(measurement, fields, tag values). InfluxDB 1.8's Flux
    reads range()'s stop inclusively (a point at `stop` comes back, and lands in the
    first window), so stop is end - 1 ns: the same rows as time < end."""
    lines = [f"from(bucket: {_fx_str(bucket)})"]
    if window:
        start, end = int(p["start"]), int(p["end"])
        if end > start:
            lines.append(f"  |> range(start: {rfc3339(start)}, stop: {rfc3339(end - 1)})")
        else:
            lines.append(f"  |> range(start: {rfc3339(start)}, stop: {rfc3339(start + 1)})")
            lines.append("  |> filter(fn: (r) => false)")
    else:
        lines.append(f"  |> range(start: {FLUX_MIN_TIME}, stop: {FLUX_MAX_TIME})")
    cond = f"r._measurement == {_fx_str(p['measurement'])} and (" + \
        " or ".join(f"r._field == {_fx_str(f)}" for f in dict.fromkeys(fields)) + ")"
    if p.get("tag_values") is not None:
        col = _fx_col(p["tag"])
        cond += " and (" + (" or ".join(f"{col} == {_fx_str(v)}" for v in p["tag_values"]) or "false") + ")"
    lines.append(f"  |> filter(fn: (r) => {cond})")
    return lines


def flux(p: dict, bucket: str) -> str:
    """The Flux of a drawn query of shape aggregate, rows or last, reading `bucket` (db[/rp])."""
    shape = p["shape"]
    if shape == "custom":
        raise Unsupported(f"influx: no Flux renderer for custom query type {p.get('type')!r}")
    vf = p.get("value_filter")
    if shape == "aggregate":
        fields, agg = list(p["fields"]), p["agg"]
        if agg not in ("max", "min", "mean", "sum", "count"):
            raise Unsupported(f"influx: aggregate {agg!r}")
        group = list(p.get("group_by") or [])
        lines = _fx_source(p, bucket, fields)
        if vf:
            if fields != [vf["field"]]:
                raise Unsupported("influx (flux): a value filter on a field other than the one aggregated")
            lines.append(f"  |> filter(fn: (r) => {_fx_cmp('r._value', vf, _field_kind(p, vf['field']))})")
        lines.append(f"  |> group(columns: {_fx_list(['_field', *group])})")
        if p.get("bucket") is not None:
            lines.append(f"  |> aggregateWindow(every: {_duration(p['bucket'])}, fn: {agg}, timeSrc: \"_start\", "
                         f"createEmpty: false)")
            keep = ["_time", "_field", "_value", *group]
        else:
            lines.append(f"  |> {agg}()")
            keep = ["_field", "_value", *group]
        lines.append(f"  |> keep(columns: {_fx_list(keep)})")
        if p.get("limit") and p.get("bucket") is not None:
            desc = "true" if p.get("order") == "desc" else "false"
            lines.append(f"  |> sort(columns: [\"_time\"], desc: {desc})")
            lines.append(f"  |> limit(n: {int(p['limit'])})")     # per table: cut again globally
        return "\n".join(lines)
    if shape == "rows":
        fields, tags = list(p["fields"]), list(p.get("tags_out") or [])
        lines = _fx_source(p, bucket, fields + ([vf["field"]] if vf else []))
        lines.append('  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")')
        if vf:
            lines.append(f"  |> filter(fn: (r) => {_fx_cmp(_fx_col(vf['field']), vf, _field_kind(p, vf['field']))})")
        lines.append(f"  |> keep(columns: {_fx_list(['_time', *tags, *fields])})")
        if p.get("limit"):
            lines.append(f'  |> group()\n  |> sort(columns: ["_time"])\n  |> limit(n: {int(p["limit"])})')
        return "\n".join(lines)
    if shape == "last":
        fields, group = list(p["fields"]), list(p["group_by"])
        # newest value of each field of each series, its row rebuilt by time (a null field in
        # the newest row leaves an older, separate row), then the newest row per group
        lines = _fx_source(p, bucket, fields, window=False)
        lines += ["  |> last()",
                  '  |> pivot(rowKey: ["_time"], columnKey: ["_field"], valueColumn: "_value")',
                  f"  |> group(columns: {_fx_list(group)})",
                  '  |> sort(columns: ["_time"], desc: true)',
                  "  |> limit(n: 1)",
                  f"  |> keep(columns: {_fx_list(['_time', *group, *fields])})"]
        return "\n".join(lines)
    raise Unsupported(f"influx: unknown query shape {shape!r}")


def _fx_value(v: str, datatype: str):
    if v == "":
        return None
    if datatype in ("long", "unsignedLong"):
        return int(v)
    if datatype == "double":
        return float(v)
    if datatype == "boolean":
        return v == "true"
    if datatype.startswith("dateTime"):
        return parse_rfc3339(v)
    return v


def flux_tables(text: str, what: str = "influx") -> list[list[dict]]:
    """Parse an annotated CSV answer (#datatype/#group/#default rows, a header, data rows;
    a blank line or new annotations start another block) into tables of typed rows.
    An error table (an "error" column) raises Fatal with its words."""
    tables: dict[tuple, list[dict]] = {}
    types = defaults = header = None
    for row in csv.reader(io.StringIO(text)):
        if not row:
            types = defaults = header = None
            continue
        if row[0].startswith("#"):
            if header is not None:
                types = defaults = header = None
            if row[0] == "#datatype":
                types = row
            elif row[0] == "#default":
                defaults = row
            continue
        if header is None:
            header = row
            continue
        if "error" in header:
            msg = row[header.index("error")] if len(row) > header.index("error") else ",".join(row)
            raise Fatal(f"{what}: flux: {msg}")
        rec, key = {}, []
        for i, name in enumerate(header):
            if i == 0 and name == "":
                continue
            v = row[i] if i < len(row) else ""
            if v == "" and defaults is not None and i < len(defaults):
                v = defaults[i]
            if name in ("result", "table"):
                key.append(v)
                continue
            rec[name] = _fx_value(v, types[i] if types is not None and i < len(types) else "string")
        tables.setdefault(tuple(key), []).append(rec)
    return list(tables.values())


def flux_rows(p: dict, tables: list[list[dict]]) -> list[tuple]:
    """Canonical rows of the parsed tables of flux(p)."""
    has_time, group, values = _columns(p)
    conv = [_converter(v.kind) for v in values]
    shape = p["shape"]
    if shape == "aggregate":
        idx = {f: j for j, f in enumerate(p["fields"])}
        width = p.get("bucket")
        acc: dict[tuple, list] = {}
        for tbl in tables:
            for r in tbl:
                j = idx.get(r.get("_field"))
                if j is None:
                    continue
                # the first window starts at range start: report the bucket's start, as SQL does
                key = ((int(r["_time"]) // width * width,) if has_time else ()) + \
                    tuple(_tag(r.get(g)) for g in group)
                acc.setdefault(key, [None] * len(idx))[j] = conv[j](r.get("_value"))
        return _finish_aggregate(p, [k + tuple(v) for k, v in acc.items()], has_time, group)
    if shape in ("rows", "last"):
        return [(int(r["_time"]), *(_tag(r.get(g)) for g in group),
                 *(c(r.get(f)) for c, f in zip(conv, p["fields"])))
                for tbl in tables for r in tbl]
    raise Unsupported(f"influx: unknown query shape {shape!r}")


# ---- custom-shape types (iot) -------------------------------------------------------------------
# The iot renderers live in their own module that calls register_custom(name, render, rows[,
# language]) per type; import it here so that query_types lists them wherever InfluxTarget is used:
from . import influx_iot  # noqa: E402,F401
