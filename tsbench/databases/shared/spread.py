"""Several servers behind one target (phase 2, every target; `--server URL1,URL2,...`, as
influxdb-comparisons' loaders took -urls; a driver's own multi-host URL is left to it). Each URL gets its own instance of the target
class. A batch goes whole to the next server in turn (`-O spread=round-robin`, the
default), or is split by series in the C core (`-O spread=series`: every record to the
server its series key hashes to, so each series lives on one server, as a sharded
cluster keeps it; a server's push-back is retried for its part alone). Create, flush,
compaction and the disk figures go to every server; the count is their sum
(`-O spread_count=sum`, servers that each hold a share) or the first server's (`one`: a
cluster whose every node answers for all of it). Queries go to the first server."""

from __future__ import annotations

import asyncio
import random

from tsbench.core.errors import UserError
from tsbench.core.model import Batch, FieldStats, Table, Tables, TableStats
from tsbench.databases.shared.backoff import BackoffRule, write_with_backoff
from tsbench.databases.shared.target import Target

KEYS = ("spread", "spread_count")       # options of the spread itself, not of the target class
HOW = ("round-robin", "series")
COUNT = ("sum", "one")


def is_spread(url: str | None) -> bool:
    """Several URLs, each with its scheme. A driver's own multi-host URL
    (postgresql://h1:5432,h2:5432/db, mongodb://h1,h2/?replicaSet=r, cassandra://h1,h2)
    is one URL: the driver spreads over its hosts itself."""
    parts = (url or "").split(",")
    return len(parts) > 1 and all("://" in p for p in parts)


def make_target(cls: type[Target], url: str | None, options: dict | None = None) -> Target:
    """cls(url, options), or a Spread of cls over the comma-separated URLs."""
    return spread_class(cls)(url, options) if is_spread(url) else cls(url, options)


def check_spread_options(url: str | None, options: dict) -> None:
    """spread and spread_count only with several URLs."""
    given = [k for k in KEYS if k in options]
    if given and not is_spread(url):
        raise UserError(f"option {given[0]}: only with several URLs (--server URL1,URL2,...)")


def target_options(t: Target) -> dict:
    """The options that make the same target again with make_target (the spread's included)."""
    return {**t.options.model_dump(), **getattr(t, "spread", {})}


_CLASSES: dict[type, type] = {}


def spread_class(cls: type[Target]) -> type[Target]:
    """The target class cls as a spread over several URLs (same name, format, capabilities)."""
    if cls not in _CLASSES:
        _CLASSES[cls] = type(cls.__name__, (Spread, cls), {"member": cls})
    return _CLASSES[cls]


class Spread:
    """Mixed in before a target class: one member per URL takes the load; queries go to
    the first member."""

    member: type[Target]

    def __init__(self, url: str, options: dict | None = None):
        options = dict(options or {})
        self.spread = {"spread": options.pop("spread", "round-robin"),
                       "spread_count": options.pop("spread_count", "sum")}
        if self.spread["spread"] not in HOW or self.spread["spread_count"] not in COUNT:
            raise UserError(f"target {self.member.name}: option spread is one of {', '.join(HOW)} and spread_count "
                            f"one of {', '.join(COUNT)}; got {self.spread['spread']!r}, {self.spread['spread_count']!r}")
        urls = [u.strip() for u in url.split(",") if u.strip()]
        super().__init__(urls[0], options)
        self.url = ",".join(u.rstrip("/") for u in urls)
        self.members = [self.member(u, options) for u in urls]
        self.opened: list[Target] = []
        self.turn = 0
        self.layout = None
        self.rng = random.Random(0)
        if self.spread == {"spread": "round-robin", "spread_count": "sum"} and self.value_checks.get("series") is None:
            self.value_checks = {**self.value_checks, "series": "spread round-robin: a series is on every server"}

    async def open(self) -> None:
        for m in self.members:
            try:
                await m.open()
            except BaseException:          # re-raised at once: only the members opened so far are closed
                await self.close()
                raise
            self.opened.append(m)

    async def close(self) -> None:
        while self.opened:
            await self.opened.pop().close()

    async def create(self, tables: Tables, if_exists: str) -> None:
        await self._each("create", tables, if_exists)
        self._bind(tables)

    async def attach(self, tables: Tables) -> None:
        await self._each("attach", tables)
        self._bind(tables)

    def _bind(self, tables: Tables) -> None:
        if self.format == "csv":
            from tsbench.data.batches import csv_layout

            self.layout = csv_layout(tables)

    async def write(self, batch: Batch) -> None:
        if self.spread["spread"] == "round-robin":
            m, self.turn = self.members[self.turn % len(self.members)], self.turn + 1
            await m.write(batch)
            return
        from tsbench.data import native

        dst, cuts = native.route_series(self.format, batch.data, len(self.members), self.layout)
        view, opts = memoryview(dst), BackoffRule()
        await asyncio.gather(*(write_with_backoff(m, Batch(view[c.bytes[0]: c.bytes[0] + c.bytes[1]], c.rows,
                                                           c.values), opts, self.rng, lambda _pause: None)
                               for m, c in zip(self.members, cuts) if c.rows))

    async def flush(self) -> None:
        await self._each("flush")

    async def count(self, tables: Tables) -> int:
        if self.spread["spread_count"] == "one":
            return await self.members[0].count(tables)
        return sum([await m.count(tables) for m in self.members])

    async def stats(self, table: Table, tables: Tables) -> TableStats:
        """The first server's (spread_count one), or the servers' together: counts, sums and
        series added, the least min and the greatest max."""
        if self.spread["spread_count"] == "one":
            return await self.members[0].stats(table, tables)
        parts = [await m.stats(table, tables) for m in self.members]
        fields = {}
        for name in parts[0].fields:
            got = [p.fields[name] for p in parts if name in p.fields]
            lo = [f.min for f in got if f.min is not None]
            hi = [f.max for f in got if f.max is not None]
            fields[name] = FieldStats(sum(f.count for f in got), sum(f.sum for f in got), min(lo, default=None),
                                      max(hi, default=None))
        return TableStats(sum(p.series for p in parts), fields)

    async def compact(self) -> None:
        await self._each("compact")

    async def disk_bytes(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for m in self.members:
            for k, v in (await m.disk_bytes()).items():
                total[k] = total.get(k, 0) + v
        return total

    # ---- queries: the first server's -------------------------------------------------------------
    async def version(self) -> str:
        return await self.members[0].version()

    def dialect_name(self) -> str | None:
        return self.members[0].dialect_name()

    def dialect(self):
        return self.members[0].dialect()

    def render(self, spec, form: str = "tsbench"):
        return self.members[0].render(spec, form)

    async def prepare(self, workers: int) -> None:
        await self.members[0].prepare(workers)

    async def query(self, native):
        return await self.members[0].query(native)

    def finish(self, native, answer) -> list[tuple] | None:
        return self.members[0].finish(native, answer)

    def canonical(self, native, answer) -> list[tuple]:
        return self.members[0].canonical(native, answer)

    def answer_rows(self, native, answer) -> list[tuple]:
        return self.members[0].answer_rows(native, answer)

    def answer_lines(self, native, answer, max_rows: int) -> list[str]:
        return self.members[0].answer_lines(native, answer, max_rows)

    async def drop_caches(self) -> str | None:
        return await self.members[0].drop_caches()

    async def _each(self, method: str, *args) -> None:
        for m in self.members:
            await getattr(m, method)(*args)
