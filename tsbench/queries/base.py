"""Query specs (phase 3) and answers (phases 4-5), database-agnostic.

A QueryType is a kind of query (TSBS's single-groupby-1-1-1, the seed's max-cpu-8,
...): it draws its parameters once from the seed (hosts, windows, thresholds),
says which dataset it needs, and states its meaning as SQL over the reference
tables (one table per measurement: time TIMESTAMPTZ, tag columns, field columns),
written against a small SqlSpelling so PostgreSQL and DuckDB render the same
meaning. A QuerySpec is one drawn query (type + params), stored in a queries file
that every target renders from.

Every answer is normalized to canonical rows: (time_ns or None, *group values,
*values), in the columns the type declares; compare() checks two answers."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:      # numpy's generator is only named in annotations (a target's dialects start without numpy)
    import numpy as np

from tsbench.core.errors import UserError
from tsbench.core.model import Tables
from tsbench.core.sqltext import lit, q  # noqa: F401  (the dialects import them from here)

MINUTE = 60 * 10**9
HOUR = 60 * MINUTE
DAY = 24 * HOUR


BASIC_SHAPES = ("aggregate", "rows", "last")


def shape_of(params: dict) -> str:
    """The shape a drawn query takes: aggregate, rows, last, or a custom type's own name."""
    return params["type"] if params["shape"] == "custom" else params["shape"]


@dataclass(frozen=True)
class QuerySpec:
    id: int
    type: str
    params: dict

    def to_dict(self) -> dict:
        return {"id": self.id, "type": self.type, "params": self.params}

    @classmethod
    def from_dict(cls, d: dict) -> "QuerySpec":
        return cls(int(d["id"]), str(d["type"]), dict(d["params"]))


@dataclass(frozen=True)
class Value:
    name: str
    kind: str = "float"          # "float" | "int" | "str"
    stored: bool = False         # a value as stored (max, min, a row's field): equal bit for bit, not computed


@dataclass
class Answer:
    """One execution's result as the timed pass records it (phase 4): what the wire
    showed, the database's own response, and the canonical rows only where the
    target had to compute them on the client to give the answer asked for. The
    target's query() fills in what it got (raw, nbytes, and the transport's ttfb and
    connect_s); the executor's timer (execute/timer.py) alone fills in seconds and
    client_s. The executor turns `raw` into canonical rows after the timed pass
    (Target.canonical)."""

    raw: Any = None              # the response: body bytes (HTTP), a RowSet, or what the driver gave
    nbytes: int | None = None    # response bytes on the wire (None: not measurable, e.g. in-process)
    ttfb: float | None = None    # seconds from sending to the first byte of the response body, as the
    #                              transport (databases/shared/) saw it (None: not measurable)
    seconds: float = 0.0         # the latency (set by the executor's timer): from calling query() to the
    #                              answer's last byte, plus client_s; connection set-up excluded (connect_s)
    rows: list[tuple] | None = None   # canonical rows, set only when the client computed the answer
    client_s: float | None = None     # seconds of Target.finish(), the client work after the last byte
    #                                   (inside `seconds`; set by the executor's timer)
    connect_s: float | None = None    # seconds the transport spent opening a connection for this query
    #                                   (not in `seconds`)
    partial: Any = None          # what query() decoded on the way (pages read to ask for the next), for finish()

    def add_response(self, t) -> None:
        """One more response of a query sent as several requests (t: an HTTP client's
        Timed: body, ttfb, connect_s): its body kept and its bytes added; the first
        response's ttfb stands."""
        self.raw.append(t.body)
        self.nbytes += len(t.body)
        self.ttfb = t.ttfb if self.ttfb is None else self.ttfb
        if t.connect_s is not None:
            self.connect_s = (self.connect_s or 0.0) + t.connect_s


@dataclass
class RowSet:
    """A driver's result set as the server sent it: its column names and its rows."""

    names: list[str]
    rows: list


@dataclass
class DatasetContext:
    """What query types need to know of a dataset: its tables, time range and the
    entity tag values (e.g. every hostname), to draw parameters and check needs."""

    use_case: str
    tables: Tables
    start_ns: int
    end_ns: int
    interval_ns: int
    entities: int
    entity_tags: dict[str, list[str | None]] = field(default_factory=dict)
    # () -> the dataset's reference (expected(spec) -> rows), for types that draw from the data's
    # values (generic-above-p90); None: not at hand
    reference: Callable[[], Any] | None = None
    # (measurement, tag) -> that tag's distinct non-null values in the measurement, where every
    # tag's values are known (imported data: every tag is in entity_tags); None: a generated dataset
    tag_values: Callable[[str, str], list[str]] | None = None
    # what users derive from the context once and keep (the generic family's distinct tag values)
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def table(self, name: str):
        return self.tables.by_name().get(name)


class SqlSpelling:
    """How the reference tables are spelled in one SQL engine. Subclasses change
    the FROM clause (PostgreSQL's tag table), column references and time math."""

    name = "duckdb"

    def quote(self, name: str) -> str:
        return q(name)

    def table(self, measurement: str) -> str:
        """FROM item for a measurement, aliased m."""
        return f'{q(measurement)} m'

    def tag(self, measurement: str, tag: str) -> str:
        return f"m.{q(tag)}"

    def field(self, name: str) -> str:
        return f"m.{q(name)}"

    def time_ns(self) -> str:
        return "epoch_ns(m.time)"

    def bucket_ns(self, width_ns: int) -> str:
        w = int(width_ns)
        return f"(epoch_ns(m.time) // {w}) * {w}"

    def ts(self, ns: int) -> str:
        """A TIMESTAMPTZ literal of an epoch-ns instant (microsecond precision)."""
        return f"TIMESTAMPTZ {lit(iso(ns))}"

    def window(self, start_ns: int, end_ns: int) -> str:
        return f"m.time >= {self.ts(start_ns)} AND m.time < {self.ts(end_ns)}"


def iso(ns: int) -> str:
    """RFC 3339 UTC with microseconds when needed: 2016-01-01T00:00:00Z."""
    import datetime as dt

    t = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=ns // 1000)
    frac = f".{t.microsecond:06d}" if t.microsecond else ""
    return t.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def num(x: float) -> str:
    """An SQL double literal (a finite float's shortest repr): the SQL dialects' one number spelling."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"not a finite number: {x!r}")
    return repr(x)


@dataclass(frozen=True)
class QueryType:
    """One kind of query: a name, what it reads, and how it draws a query. A drawn
    query is a shape (queries/shapes.py: aggregate, rows, last, ...) with all its
    parameters, so renderers handle a few shapes, not every type."""

    name: str
    family: str                               # one of queries.FAMILIES (the families the catalog has)
    doc: str
    needs: dict                               # measurement -> fields it reads
    make: Callable[[np.random.Generator, "DatasetContext"], dict]
    shape: str                                # aggregate | rows | last | the custom shape's name (iot)
    picks: tuple[str, int] | None = None      # (entity tag, n): a draw picks n of its distinct values

    def applies(self, ctx: "DatasetContext") -> str | None:
        """None if the dataset has what this type reads, else the reason in one line."""
        if self.picks and self.picks[0] in ctx.entity_tags and len(ctx.entity_tags[self.picks[0]]) < self.picks[1]:
            tag, n = self.picks
            return (f"query type {self.name} picks {n} distinct {tag} values; the dataset ({ctx.use_case}) has "
                    f"{len(ctx.entity_tags[tag])}")
        for m, fields in self.needs.items():
            t = ctx.table(m)
            if t is None:
                return f"query type {self.name} needs measurement {m!r}, which the dataset ({ctx.use_case}) lacks"
            missing = [f for f in fields if f not in t.field_names and f not in t.tags]
            if missing:
                return f"query type {self.name} needs {m}.{missing[0]}, which the dataset ({ctx.use_case}) lacks"
        return None


# ---- parameter drawing helpers ----------------------------------------------------------------

def draw_window(rng: np.random.Generator, ctx: DatasetContext, width_ns: int, align_ns: int) -> tuple[int, int]:
    """A random [start, start + width) inside the dataset, its start aligned to
    align_ns (so every dialect buckets it alike); the whole span if it is shorter."""
    span = ctx.end_ns - ctx.start_ns
    width = min(width_ns, span)
    first = -(-ctx.start_ns // align_ns) * align_ns
    last = ctx.end_ns - width
    if last < first:
        return ctx.start_ns, ctx.start_ns + width
    k = int(rng.integers(0, (last - first) // align_ns + 1))
    s = first + k * align_ns
    return s, s + width


def draw_entities(rng: np.random.Generator, ctx: DatasetContext, tag: str, n: int) -> list[str]:
    values = ctx.entity_tags[tag]
    if n > len(values):
        raise UserError(f"a query needs {n} distinct {tag} values; the dataset has {len(values)} "
                        f"(raise --scale or pick another query type)")
    idx = rng.choice(len(values), size=n, replace=False)
    return [values[i] for i in sorted(int(i) for i in idx)]
