"""The target protocol (phases 2-5): one small class per database dialect.

A target declares what it consumes and can do as class data (format, count
unit, server kind, options model, its dialects, from which the query types it
runs are derived), so a test can list every database's capabilities without a
server. The loader drives it:

    t = Cls(url, options); await t.open()
    await t.create(tables, if_exists)        # abort | reuse | drop (the phase's if_exists)
    (await t.attach(tables): in each extra load process instead of create)
    await t.write(batch)                     # many, concurrently, from N workers
    await t.flush(); await t.count(tables)   # verify
    await t.compact(); await t.disk_bytes()  # untimed
    await t.close()

write() raises Retryable when the server pushes back (the loader backs off
and retries the same batch) and Fatal with the server's own words otherwise.

The executor runs a query (phase 4) as `ans = await t.query(native)` then
`t.finish(native, ans)`, and times both itself (execute/timer.py): a latency is
send -> last byte plus finish(), the client work the user waits for (client_s).
No target reads a clock on that path; the shared HTTP transport (http_pool) reports
only the durations of its own events: the time to the first byte (ttfb) and the
connection set-up (connect_s, excluded from the latency). A driver that must open a
connection first does it in open_query_connection(), which the executor times apart
as connect_s."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from tsbench.core.errors import Unsupported, UserError
from tsbench.core.model import STAT_KINDS, Batch, Table, Tables, TableStats
from tsbench.databases.shared import printable
from tsbench.queries.base import RowSet
from tsbench.queries.dialect import TSBENCH_FORM, Dialect

IF_EXISTS = ("abort", "reuse", "drop")
GZIP_KEYS = ("gzip", "gzip_level")      # http.GzipOption's: only targets whose server takes gzip'd bodies


class _DerivedTypes:
    """query_types as data derived from the dialects: on the class, the default
    dialect's types; on an instance, those of the dialect its options chose."""

    def __get__(self, obj, owner) -> frozenset[str]:
        lang = obj.dialect_name() if obj is not None else next(iter(owner.dialects), None)
        return owner.dialects[lang].query_types() if lang else frozenset()


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Target:
    """Base class; see the module docstring for the calling order."""

    name: ClassVar[str]
    format: ClassVar[str]                         # "influx" | "csv": the data file it consumes
    count_unit: ClassVar[str] = "rows"            # what count() returns: "rows" or "values"
    time_resolution_ns: ClassVar[int] = 1_000     # the finest time it keeps (a time is kept floored to it)
    server_kind: ClassVar[str | None] = None      # Server registry name for server: local; None = in-process
    other_server_kinds: ClassVar[tuple[str, ...]] = ()   # further kinds it runs on: server: local:<kind>
    engine_library: ClassVar[str | None] = None  # in-process: the Python distribution that is the engine (its version)
    needs_url: ClassVar[bool] = False            # True: cannot run without a URL (--server local or one given)
    url_example: ClassVar[str] = ""              # the form of its URL, for the error when none is given
    # query languages it speaks, the default first: name -> Dialect class (queries/dialect.py)
    dialects: ClassVar[dict[str, type[Dialect]]] = {}
    query_types = _DerivedTypes()                # derived from the dialect: never typed by hand
    options_model: ClassVar[type[BaseModel]] = NoOptions
    default_database: ClassVar[str] = "tsbench"
    multiprocess: ClassVar[bool] = True          # can several load processes write at once
    float_digits: ClassVar[int | None] = None    # significant digits a float keeps (None: the exact double)
    own_disk_figure: ClassVar[str | None] = None  # the key of disk_bytes() that is the database's own size
    keeps_data: ClassVar[bool] = True            # False: a sink (create(abort) finds nothing to refuse)
    count_is_local: ClassVar[bool] = False       # count() is what this instance was sent (null): each
                                                 # --cluster slot counts its own, and the driver sums them
    settle_seconds: ClassVar[float] = 0.0        # how long a flushed store may take to show all it acknowledged
    can_count: ClassVar[bool] = True             # False: count() cannot be answered (a load must not verify)
    # the remote-write body builder (shared/remote_write.RemoteWriteBody) of an instance that
    # loads by remote-write, else None: the load phase then builds every batch's body before its
    # timed part (data/bodies.py) and write() gets them as Prebuilt batch data
    remote_write = None
    # value verification (verify.py): for each of model.STAT_KINDS, None if stats() answers it
    # exactly (a float sum: to the summation bound), else the reason it cannot be checked
    value_checks: ClassVar[dict[str, str | None]] = {k: "not implemented for this target" for k in STAT_KINDS}

    def __init__(self, url: str | None = None, options: dict[str, Any] | None = None):
        self.url = url.rstrip("/") if url else url
        self.options = self.parse_options(options or {})
        if self.needs_url and not self.url:
            raise UserError(f"target {self.name}: needs a server: --server local or --server {self.url_example}")

    @classmethod
    def parse_options(cls, options: dict[str, Any]) -> BaseModel:
        """The options model of these options (a spread's own, spread.KEYS, set aside)."""
        cls._check_gzip(options)
        try:
            return cls.options_model(**{k: v for k, v in options.items() if k not in ("spread", "spread_count")})
        except ValidationError as exc:
            e = exc.errors()[0]
            loc = ".".join(str(x) for x in e["loc"])
            msg = str(e["ctx"]["error"]) if e["type"] == "value_error" else e["msg"]
            known = ", ".join(cls.options_model.model_fields) or "none"
            where = f"option {loc}" if loc else "options"
            raise UserError(f"target {cls.name}: {where}: {msg} (options: {known})") from None

    @classmethod
    def _check_gzip(cls, options: dict[str, Any]) -> None:
        """gzip options on a target that cannot send gzip'd request bodies: one clear line."""
        given = [k for k in GZIP_KEYS if k in options and k not in cls.options_model.model_fields]
        if given:
            raise UserError(f"target {cls.name}: option {given[0]}: {cls.name} cannot gzip its request "
                            f"bodies (only targets that post text over HTTP can: see docs/guide/load.md)")

    @classmethod
    def refuse_verify(cls, verify: bool) -> None:
        """A load or stream that would verify into a target that cannot count: refused before it starts."""
        if verify and not cls.can_count:
            raise UserError(f"target {cls.name} cannot count what it was sent: run with --no-verify (its verify "
                            f"figures then stay empty: nothing is checked but each batch's 2xx answer)")

    @classmethod
    def local_url(cls, instance_dir) -> str | None:
        """For in-process targets (server_kind None): the URL of a fresh local
        instance under instance_dir (`--server local`)."""
        return None

    @classmethod
    def accepts(cls, fmt: str) -> bool:
        """Whether this target can load a data file of format fmt."""
        return fmt == cls.format

    @classmethod
    def capabilities(cls) -> dict[str, Any]:
        """Plain data: what this target consumes and supports."""
        return {"name": cls.name, "format": cls.format, "count_unit": cls.count_unit,
                "server": cls.server_kind, "needs_url": cls.needs_url,
                "other_servers": list(cls.other_server_kinds), "multiprocess": cls.multiprocess, "float_digits": cls.float_digits,
                "own_disk_figure": cls.own_disk_figure, "keeps_data": cls.keeps_data, "can_count": cls.can_count,
                "value_checks": dict(cls.value_checks),
                "query_types": sorted(cls.query_types),
                "dialects": {n: sorted(d.query_types()) for n, d in cls.dialects.items()},
                "options": sorted(cls.options_model.model_fields)}

    async def open(self) -> None:
        """Connect; raise UserError naming the URL if it cannot be reached."""

    async def close(self) -> None:
        pass

    async def create(self, tables: Tables, if_exists: str) -> None:
        raise NotImplementedError

    async def attach(self, tables: Tables) -> None:
        """In a load process other than the one that ran create(): bind to the
        tables create() made (no DDL), before the first write."""

    async def write(self, batch: Batch) -> None:
        raise NotImplementedError

    async def flush(self) -> None:
        """Make everything written visible to count() and queries."""

    async def count(self, tables: Tables) -> int:
        """Rows or values (count_unit) the database holds for these tables."""
        raise NotImplementedError

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """What the database holds of one table (value verification, after flush()):
        distinct series and, per field column, count, sum, min and max of the
        non-null values over the dataset's time range. Only the kinds value_checks
        maps to None need be right; the others may be anything (they are not compared)."""
        raise Unsupported(f"target {self.name} cannot report what it holds value by value")

    async def compact(self) -> None:
        """Untimed: let the database reach its settled on-disk form."""

    async def disk_bytes(self) -> dict[str, int]:
        """The database's own size figures, e.g. {"pg_total_relation_size": n}."""
        return {}

    async def version(self) -> str:
        return ""

    # ---- phases 3-5: queries -------------------------------------------------------------
    def dialect_name(self) -> str | None:
        """The query language this instance speaks (the default one unless an option chose)."""
        return next(iter(self.dialects), None)

    def dialect(self) -> Dialect:
        """The dialect instance that renders this target's queries (subclasses pass their
        context: database name, schema, the server's functions)."""
        return self.dialects[self.dialect_name()]()

    def render(self, spec, form: str = TSBENCH_FORM) -> Any:
        """The native query of a QuerySpec in this target's dialect (dialect().render), or in
        another of its forms (dialect().render_form: benchmarks/dialects.py); Unsupported,
        with the reason, for a type it does not run."""
        if self.dialect_name() is None:
            raise Unsupported(f"target {self.name} runs no queries")
        try:
            return self.dialect().render_form(spec, form)
        except Unsupported as exc:
            raise type(exc)(f"target {self.name}: {exc}") from None

    async def prepare(self, workers: int) -> None:
        """Before a timed pass (and after a cold restart): open the connections that
        `workers` concurrent queries use, so that no latency includes connection set-up."""

    async def query(self, native: Any):
        """Send a rendered query and read the response to its last byte; return an Answer
        (queries/base.py) holding the raw response, and what the transport reported (ttfb,
        connect_s). Raise Fatal with the server's words. The executor's timer
        (execute/timer.py) times this call and finish(): no target reads a clock here.
        Nothing here may do work the user does not wait for: canonical() does that after
        the timed pass."""
        raise Unsupported(f"target {self.name} runs no queries")

    async def open_query_connection(self) -> bool:
        """Called right before query(): open a connection for it if none is free; True if
        one was opened (the executor records that time as connect_s, outside the latency)."""
        return False

    def finish(self, native: Any, answer) -> list[tuple] | None:
        """Timed, right after query(): the client work the user waits for (the canonical rows
        a client computes from the answer: several responses merged, a driver's result
        reduced), inside the latency and recorded as client_s. None (the default) when the
        answer needs none: the rows are then decoded untimed by canonical()."""
        return None

    def canonical(self, native: Any, answer) -> list[tuple]:
        """Untimed, after the pass: the canonical rows (queries/shapes.py) decoded from the
        raw response (a RowSet's rows). Raise Fatal if the response cannot be read."""
        rows = answer.raw.rows if isinstance(answer.raw, RowSet) else answer.raw
        return [tuple(r) for r in rows]

    def answer_lines(self, native: Any, answer, max_rows: int) -> list[str]:
        """Untimed, for --print-responses: the server's answer as it sent it, decoded into
        printable lines (printable.py), each list or table cut at max_rows. Here the kinds
        most targets keep: a body (JSON or text), several bodies, a RowSet; a target whose
        raw answer is another kind (Arrow, documents, a DataFrame...) says how to print it."""
        raw = answer.raw
        if raw is None:
            return ["(no answer kept: no request was sent)"]
        if isinstance(raw, RowSet):
            return printable.table_lines(raw.names, raw.rows, max_rows)
        if isinstance(raw, (bytes, bytearray, str)):
            return printable.body_lines(raw, max_rows)
        if isinstance(raw, list) and all(isinstance(b, (bytes, bytearray)) for b in raw):
            return printable.responses_lines(raw, max_rows)
        if isinstance(raw, list):
            return printable.cut([repr(r) for r in raw], max_rows)
        return printable.cut(repr(raw).splitlines(), max_rows, "lines")

    def answer_rows(self, native: Any, answer) -> list[tuple]:
        """An answer's canonical rows: those the client computed in the timed pass, else canonical()."""
        return answer.rows if answer.rows is not None else self.canonical(native, answer)

    async def drop_caches(self) -> str | None:
        """Before a cold-cache pass on a server tsbench does not run: None if the
        target can drop its own caches, else the reason it cannot."""
        return "the server is not run by tsbench"


def exists_error(target: str, what: str) -> UserError:
    return UserError(f"target {target}: {what} already exists and holds data; "
                     f"use --if-exists drop to replace it or --if-exists reuse to add to it")
