"""MongoDB as a target: loads (phase 2) and runs aggregation pipelines (phase 4).

Load: each batch is split by measurement in the C core (native.split_csv) and
each part rendered by a C template (documents.py) into BSON documents, one per
line; the documents go to `insert_many(ordered=False)` of the measurement's
collection as `RawBSONDocument`s (pymongo copies their bytes into the message
as they are: no dict, no re-encoding; the one Python step per row is wrapping
a slice of the rendered bytes). The client is pymongo's own async one
(`AsyncMongoClient`), its pool shared by the workers of a process.

Layout `bucket` (documents.py: one document per series and UTC hour holding
the hour's events in an array, TSBS's "aggregate" mode): each part is rendered
twice in C (each line's bucket key, the filter {"tags", "hour"}, and its event
sub-document), the C core groups the lines by key bytes (native.bson_groups:
groups in first-seen order, lines in order) and writes per bucket the filter
and the update `{"$push": {"events": {"$each": [...]}}}`; Python makes one
`UpdateOne(filter, update, upsert=True)` per bucket from RawBSONDocument
slices (per bucket, not per row) and sends them with `bulk_write(ordered=False)`.
Not `insert_many`: one series-hour spans several batches (a batch of 10,000
DevOps-100 rows is about 110 s of time), so each batch appends to buckets that
earlier batches made, and an upsert per bucket is what that takes. create()
makes a unique index on (tags, hour), so each upsert finds its bucket by index
and two batches racing to make the same bucket cannot make two: the loser's
upsert fails with a duplicate key and is sent again (it then appends), as
MongoDB itself retries such upserts. Events keep the order of their batch,
batches land in any order: the queries sort by time.

Push-back and retries: a server that cannot be selected or a connection lost
is Retryable (the loader backs off and re-sends the batch whole). Documents get
no `_id` (the server assigns it), so a batch the server had stored before the
connection dropped is stored twice (in the bucket layout: its events pushed
twice); the count verification after the load finds the excess and fails the
load: never a silent double. A document or update the server refuses (a
BulkWriteError) fails the load with the number refused and the first one's
words (a bucket over the server's 16 MiB document limit is one: an hour of
one series must fit, which at DevOps' 10 s is 360 events of about 250 bytes).

stats() (value verification): two aggregation pipelines per slice of the window (stats.py).
count(): records, exactly: `count_documents` of each measurement's collection
(point, timeseries), or the sum of the buckets' `$size` of events (bucket).
compact(): the `compact` command per collection on a server that has it
(untimed). disk_bytes(): from `collStats`, the documents' BSON bytes plus the
indexes' (mongodb_data_bytes, the figure every server reports, the in-memory
stand-in included), and the bytes on disk plus the indexes'
(mongodb_storage_bytes) where the server stores to disk.

Layouts: `point` (one document per record, as the seed loaded BSON),
`bucket` (one document per series and hour with an array of events, above)
and `timeseries` (the point documents in a native time-series collection,
timeField "time", metaField "tags", MongoDB 5+).

Options: MongoOptions below (each field says what it means), all checked before anything
starts."""

from __future__ import annotations

import json
import re
from typing import Literal

import pymongo
from bson import json_util
from bson.raw_bson import RawBSONDocument
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pymongo import AsyncMongoClient, UpdateOne, WriteConcern
from pymongo.errors import BulkWriteError, ConnectionFailure, OperationFailure, PyMongoError

from tsbench.core import bounds
from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.core.model import STAT_KINDS, Batch, Table, Tables, TableStats
from tsbench.data import native
from tsbench.data.batches import csv_layout
from tsbench.databases.mongodb import stats
from tsbench.databases.mongodb.dialect import Mql
from tsbench.databases.mongodb.documents import EVENTS, HOUR, TAGS, TIME, bucket_key_ops, document_ops, event_ops
from tsbench.databases.shared import printable
from tsbench.databases.shared.server import local_state, say
from tsbench.databases.shared.stats import FieldMerge
from tsbench.databases.shared.target import Target, exists_error
from tsbench.queries.base import Answer

CONNECT_TIMEOUT_MS = 10_000
EVENTS_NAME = EVENTS.encode()
DUPLICATE_KEY = 11000
RACE_RETRIES = 5       # rounds of re-sending the upserts that lost a race to make their bucket
MAX_MEMBERS = 50       # members of a replica set, at most: the largest w that can be met


class MongoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    database: str = Field("tsbench", pattern=r"^[A-Za-z0-9_-]{1,63}$", description="the database to load")
    layout: Literal["point", "bucket", "timeseries"] = Field(
        "point", description="point: one document per record; bucket: one document per series and UTC hour "
                             "with an array of events (TSBS's aggregate mode); timeseries: the point documents "
                             "in a native time-series collection (MongoDB 5+; the stand-in makes an ordinary one)")
    write_concern: int | Literal["majority"] = Field(
        1, description="w: a number of members, 0 to 50 (a replica set's most), or majority")
    journal: bool | None = Field(None, description="j (not with write_concern=0)")
    timeout: float = Field(60.0, gt=0, le=bounds.MAX_SECONDS, description="seconds, per operation")

    @field_validator("write_concern")
    @classmethod
    def _a_number_of_members(cls, w):
        if isinstance(w, int) and not 0 <= w <= MAX_MEMBERS:
            raise ValueError(f"a number of members from 0 to {MAX_MEMBERS}, or majority; got {w}")
        return w

    @model_validator(mode="after")
    def _journal_needs_an_acknowledgement(self):
        if self.write_concern == 0 and self.journal:
            raise ValueError("journal=true needs an acknowledged write (write_concern of 1 or more, or majority)")
        return self


def write_error(what: str, exc: PyMongoError, n: int, noun: str) -> Exception:
    """The loader's error for a failed write of n documents or updates: refused ones (a
    BulkWriteError) Fatal with their count and the first one's words; a lost connection
    or no server Retryable; anything else Fatal."""
    if isinstance(exc, BulkWriteError):
        errors = exc.details.get("writeErrors") or []
        first = errors[0].get("errmsg", "") if errors else one_line(exc)
        return Fatal(f"{what}: {len(errors)} of {n} {noun} refused by the server; the first: {first}")
    if isinstance(exc, ConnectionFailure):
        return Retryable(f"{what}: {one_line(exc)}")
    return Fatal(f"{what}: {one_line(exc)}")


def one_line(exc: BaseException) -> str:
    """The driver's words in one line, without its timeout settings and topology dump."""
    text = re.split(r", Timeout: | \(configured timeouts|, full error: ", str(exc))[0]
    return " ".join(text.split())[:1000] or type(exc).__name__


class MongoTarget(Target):
    name = "mongodb"
    needs_url = True
    url_example = "mongodb://HOST:27017"
    format = "csv"
    server_kind = "mongo-java-server"
    count_unit = "rows"
    options_model = MongoOptions
    own_disk_figure = "mongodb_data_bytes"
    dialects = {"mql": Mql}
    value_checks = {k: None for k in STAT_KINDS}    # stats.py: integer sums unwrapped exactly

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        if not self.url.startswith(("mongodb://", "mongodb+srv://")):
            raise UserError("target mongodb: the server must be a mongodb:// URL")
        self.what = "target mongodb"
        self.client = None
        self.db = None
        self._layout = None
        self._templates: list = []        # point, timeseries: the document; bucket: (key, event)
        self._tables: Tables | None = None

    # ---- connect ------------------------------------------------------------------------
    async def open(self) -> None:
        o = self.options
        wc = WriteConcern(w=o.write_concern, j=o.journal)
        try:
            self.client = AsyncMongoClient(self.url, serverSelectionTimeoutMS=CONNECT_TIMEOUT_MS,
                                           connectTimeoutMS=CONNECT_TIMEOUT_MS, timeoutMS=int(o.timeout * 1000),
                                           appname="tsbench", tz_aware=True)
            with pymongo.timeout(CONNECT_TIMEOUT_MS / 1000):
                await self.client.admin.command("ping")
        except PyMongoError as exc:
            await self.close()
            raise UserError(f"{self.what}: cannot connect: {one_line(exc)}") from None
        self.db = self.client.get_database(o.database, write_concern=wc)

    async def close(self) -> None:
        if self.client is not None:
            client, self.client = self.client, None
            await client.close()

    async def version(self) -> str:
        """The server by its own name: "mongo-java-server 1.47.0 (MongoDB wire protocol)" for the
        local stand-in, "FerretDB v1.24.0 (MongoDB wire protocol)", "MongoDB 8.0.4"; and the client."""
        info = await self.client.admin.command("buildInfo")
        local = local_state("mongo-java-server", self.url)
        if local is not None:
            server = f"mongo-java-server {local.version} (MongoDB wire protocol)"
        elif info.get("ferretdbVersion"):
            server = f"FerretDB {info['ferretdbVersion']} (MongoDB wire protocol)"
        else:
            server = f"MongoDB {info.get('version', '?')}"
        return f"{server} (client pymongo {pymongo.version})"

    # ---- create -------------------------------------------------------------------------
    async def create(self, tables: Tables, if_exists: str) -> None:
        self._bind(tables)
        existing = set(await self.db.list_collection_names())
        for t in tables:
            if t.name not in existing:
                await self._make(t.name)
                continue
            if if_exists == "abort" and await self.db[t.name].find_one({}, {"_id": 1}) is not None:
                raise exists_error("mongodb", f"collection {t.name!r} in database {self.options.database!r}")
            if if_exists == "drop":
                await self.db.drop_collection(t.name)
                await self._make(t.name)
            else:
                await self._index(t.name)

    async def _make(self, name: str) -> None:
        if self.options.layout == "timeseries":
            await self.db.create_collection(name, timeseries={"timeField": TIME, "metaField": TAGS})
        else:
            await self.db.create_collection(name)
        await self._index(name)

    async def _index(self, name: str) -> None:
        """The bucket layout's unique index on (tags, hour): each upsert finds its bucket by it."""
        if self.options.layout != "bucket":
            return
        try:
            await self.db[name].create_index([(TAGS, 1), (HOUR, 1)], unique=True, name="tags_hour")
        except OperationFailure as exc:
            raise UserError(f"{self.what}: collection {name!r}: cannot index its buckets by (tags, hour) "
                            f"(does it hold another layout's documents?): {one_line(exc)}") from None

    def _bind(self, tables: Tables) -> None:
        self._tables = tables
        self._layout = csv_layout(tables)
        if self.options.layout == "bucket":
            self._templates = [(native.Template(bucket_key_ops(t)), native.Template(event_ops(t))) for t in tables]
        else:
            self._templates = [native.Template(document_ops(t)) for t in tables]

    async def attach(self, tables: Tables) -> None:
        self._bind(tables)

    # ---- write --------------------------------------------------------------------------
    async def write(self, batch: Batch) -> None:
        if self._layout is None:
            raise Fatal("mongodb: write() before create() or attach()")
        buf, parts = native.split_csv(self._layout, batch.data)
        bucket = self.options.layout == "bucket"
        for i, part in enumerate(parts):      # one collection after the other: nothing left running on an error
            if part is None:
                continue
            if bucket:
                (key, event), name = self._templates[i], self._tables.tables[i].name
                keys, kends = native.render(key, buf, part[0], part[1])
                events, eends = native.render(event, buf, part[0], part[1])
                f, fends, u, uends = native.bson_groups(keys, kends, events, eends, EVENTS_NAME)
                await self._upsert(name, bytes(f), fends, bytes(u), uends)
            else:
                out, ends = native.render(self._templates[i], buf, part[0], part[1])
                await self._insert(self._tables.tables[i].name, bytes(out), ends)

    async def _insert(self, collection: str, data: bytes, ends) -> None:
        bounds = [0, *ends.tolist()]
        docs = [RawBSONDocument(data[a:b]) for a, b in zip(bounds, bounds[1:])]
        try:
            await self.db[collection].insert_many(docs, ordered=False)
        except PyMongoError as exc:
            raise write_error(self.what, exc, len(docs), "documents") from None

    async def _upsert(self, collection: str, filters: bytes, fends, updates: bytes, uends) -> None:
        """One upsert per bucket (layout bucket); those that lose a race to make their bucket
        (a duplicate key: another batch made it first) are sent again and then append."""
        fb, ub = [0, *fends.tolist()], [0, *uends.tolist()]
        ops = [UpdateOne(RawBSONDocument(filters[a:b]), RawBSONDocument(updates[c:d]), upsert=True)
               for a, b, c, d in zip(fb, fb[1:], ub, ub[1:])]
        for attempt in range(RACE_RETRIES + 1):
            try:
                await self.db[collection].bulk_write(ops, ordered=False)
                return
            except BulkWriteError as exc:
                errors = exc.details.get("writeErrors") or []
                if not (errors and attempt < RACE_RETRIES and all(e.get("code") == DUPLICATE_KEY for e in errors)):
                    raise write_error(self.what, exc, len(ops), "bucket updates") from None
                ops = [ops[e["index"]] for e in errors]
            except PyMongoError as exc:
                raise write_error(self.what, exc, len(ops), "bucket updates") from None

    # ---- verify, compact, measure ---------------------------------------------------------
    async def count(self, tables: Tables) -> int:
        if self.options.layout != "bucket":
            return sum([await self.db[t.name].count_documents({}) for t in tables])
        total = 0
        for t in tables:          # the events of every bucket
            cursor = await self.db[t.name].aggregate(
                [{"$group": {"_id": None, "n": {"$sum": {"$size": {"$ifNull": [f"${EVENTS}", []]}}}}}])
            total += sum(int(d["n"]) for d in await cursor.to_list(None))
        return total

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """Per field count, sum, min and max, and the distinct tag sets, over the dataset's
        window: two aggregation pipelines per slice of it (stats.py)."""
        merge, series = FieldMerge(table, self.what), set()
        per_table = tables.rows // max(len(tables.tables), 1)
        for lo, hi in stats.slices(tables.start_ns, tables.end_ns, per_table):
            args = (table, self.options.layout, lo, hi)
            stats.read_fields(table, await self._aggregate(table.name, stats.fields_pipeline(*args)), merge)
            series |= stats.tag_sets(await self._aggregate(table.name, stats.series_pipeline(*args)))
        return merge.stats(len(series))

    async def _aggregate(self, collection: str, pipeline: list[dict]) -> list[dict]:
        try:
            cursor = await self.db[collection].aggregate(pipeline)
            return await cursor.to_list(None)
        except PyMongoError as exc:
            raise Fatal(f"{self.what}: {collection}: {one_line(exc)}") from None

    async def compact(self) -> None:
        """The compact command per collection, where the server has it (untimed)."""
        for t in self._tables or ():
            try:
                await self.db.command("compact", t.name)
            except OperationFailure as exc:
                say(f"mongodb: compact {t.name}: not done: {(exc.details or {}).get('errmsg') or one_line(exc)}")
                return

    async def disk_bytes(self) -> dict[str, int]:
        """From collStats of the collections: the documents' BSON bytes plus their indexes'
        (mongodb_data_bytes, every server reports it), and the storage engine's bytes on disk
        plus the indexes' (mongodb_storage_bytes) where the server stores to disk."""
        data = storage = index = 0
        for t in self._tables or ():
            st = await self.db.command("collStats", t.name)
            sizes = st.get("indexSize")
            index += int(st.get("totalIndexSize", sum(sizes.values()) if isinstance(sizes, dict) else 0))
            data += int(st.get("size", 0))
            storage += int(st.get("storageSize", 0))
        out = {self.own_disk_figure: data + index}
        if storage:
            out["mongodb_storage_bytes"] = storage + index
        return out

    # ---- queries ------------------------------------------------------------------------
    def dialect(self) -> Mql:
        return Mql(self.options.layout)

    async def query(self, plan):
        """The pipeline's cursor read to its end (the last batch)."""
        try:
            cursor = await self.db[plan.collection].aggregate(plan.pipeline)
            docs = await cursor.to_list(None)
        except PyMongoError as exc:
            raise Fatal(f"{self.what}: {one_line(exc)}") from None
        return Answer(raw=docs)

    def canonical(self, plan, answer) -> list[tuple]:
        return plan.read(answer.raw)

    def answer_lines(self, plan, answer, max_rows: int) -> list[str]:
        """The documents the cursor returned, each as (relaxed extended) JSON with its names."""
        docs = answer.raw
        shown = json.loads(json_util.dumps(docs[:max_rows], json_options=json_util.RELAXED_JSON_OPTIONS))
        lines = [line for d in shown for line in printable.json_lines(d, max_rows)] or ["(no documents)"]
        return lines + ([printable.more(len(docs) - max_rows, "documents")] if len(docs) > max_rows else [])
