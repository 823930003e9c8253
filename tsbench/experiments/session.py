"""The orchestration API (phases 2-5): the one way to reach a database, load a
data file into it, draw queries and run them, that `run` (runner.py) and the
`load`, `execute` and `validate` commands all call. The commands only parse
arguments and print; the runner only loops over cells and records.

    async with session.open_target(Reach("postgres", "local", {"index": "brin"})) as conn:
        res = await session.load(conn, datafile, LoadOptions(workers=4))      # LoadResult
        specs = session.draw(dataset, session.select_types(dataset, [], ["devops"]), 5, seed=1)
        out = await session.run_queries(conn, dataset, specs, ExecOptions(), session.reference(dataset))
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tsbench import queries
from tsbench.core import secrets
from tsbench.core.errors import UserError
from tsbench.core.watch import bounded, settle, watchdog
from tsbench.data.datafile import DataFile, tables_of
from tsbench.data.dataset import Dataset
from tsbench.load.connect import STALL_S, Connection, connect
from tsbench.queries.base import QuerySpec

if TYPE_CHECKING:      # each phase's module is imported where it runs: a stream starts without them
    from tsbench.execute.run import ExecOptions, ExecResult
    from tsbench.load.run import LoadOptions, LoadResult


@dataclass
class Reach:
    """How to reach a target: a local server tsbench starts ("local") or a URL."""

    target: str
    server: str = "local"
    options: dict = field(default_factory=dict)
    server_options: dict = field(default_factory=dict)
    ports: dict | None = None
    keep_server: bool = False
    name: str | None = None              # the local instance's name
    stall_seconds: float = STALL_S       # bounds connecting and the version probe (--stall-timeout)


@contextlib.asynccontextmanager
async def open_target(reach: Reach, announce: bool = True):
    """A Connection (target, local server, data dir); the local server stops when the block ends.
    `<name>_env: VAR` options take $VAR, and the URL's password and secret options are
    registered (secrets.py) before anything connects, so every later message is masked."""
    options = secrets.resolve_env(reach.options, f"target {reach.target}")
    secrets.register_target(reach.server, options, reach.server_options)
    async with connect(reach.target, reach.server, options, reach.server_options, reach.ports,
                       reach.keep_server, name=reach.name, announce=announce,
                       stall_seconds=reach.stall_seconds) as conn:
        yield conn


async def server_version(conn: Connection) -> str:
    """The version the database reports, else the one its local server was installed as."""
    v = await bounded(f"version of {conn.target.name}", conn.stall_seconds, conn.target.version())
    if not v and conn.server is not None and conn.server.state is not None:
        v = conn.server.state.version
    return v


async def load(conn: Connection, df: DataFile, opts: LoadOptions) -> LoadResult:
    """Phase 2 on an open target: create, timed load, verify, compact, disk figures."""
    if opts.cluster:
        from tsbench.cluster.loading import load as load_phase
    else:
        from tsbench.load.run import load as load_phase
    pids = conn.server.pids() if conn.server else None
    async with watchdog(f"load into {conn.target.name}", conn.server):     # the local server's end fails it at once
        return await load_phase(conn.target, df, opts, conn.datadir, pids)


async def stream(conn: Connection, ds: Dataset, opts):
    """Stream (generated on the fly) into an open target: create, timed writers, verify."""
    if opts.cluster:
        from tsbench.cluster.streaming import stream as stream_phase
    else:
        from tsbench.stream.run import stream as stream_phase
    pids = conn.server.pids() if conn.server else None
    async with watchdog(f"stream into {conn.target.name}", conn.server):
        return await stream_phase(conn.target, ds, opts, pids)


def select_types(ds: Dataset, types: list[str], families: list[str]) -> list[str]:
    """The query types to draw: those named, else every type of the families that fits the dataset
    (an import without families: stored_families)."""
    if types:
        return list(types)
    if not families and ds.stored:
        families = stored_families(ds)
    for f in families:
        if f not in queries.FAMILIES:
            raise UserError(f"--family: unknown family {f!r} (families: {', '.join(queries.FAMILIES)})")
    ctx = queries.context(ds)
    return [n for n, qt in queries.CATALOG.items() if qt.family in families and qt.applies(ctx) is None]


def stored_families(ds) -> list[str]:
    """The query families drawn on an import when none is named: generic, and the family of the
    use case its schema was recognized as (ds.use_case, e.g. devops for a TSBS devops file)."""
    return ["generic"] + ([ds.use_case] if ds.use_case in queries.FAMILIES and ds.use_case != "generic" else [])


def draw(ds: Dataset, types: list[str], count: int, seed: int, *, allow_empty: bool = False, reference=None,
         say=None) -> list[QuerySpec]:
    """Phase 3: `count` queries of each type, parameters from (seed, type, index) and
    the dataset's data only: a query whose reference answer is empty is redrawn (up
    to queries.ATTEMPTS draws; the rule is in tsbench/queries/__init__.py) unless
    allow_empty. reference: the dataset's Reference or a function returning one,
    asked at the first check (else draw builds one); say: progress lines."""
    return queries.generate(ds, types, count, seed, allow_empty=allow_empty, reference=reference, say=say)


def reference(ds: Dataset, say=None):
    """Phase 5's reference over the dataset: answers from the disk cache, else from the
    reference engine (DuckDB, from the simulator's columns), built at the first answer
    not cached (queries/cached.py). say: its progress lines and notes (default stderr)."""
    from tsbench.queries.cached import CachedReference

    return CachedReference(ds, say)


async def run_queries(conn: Connection, ds: Dataset, specs: list[QuerySpec], opts: ExecOptions,
                      ref=None) -> ExecResult:
    """Phases 4-5 on an open target holding the dataset: bind to its tables, execute, validate."""
    from tsbench.execute.run import execute

    tables = tables_of(ds, 0, 0)
    async with watchdog(f"queries on {conn.target.name}", conn.server):
        await bounded(f"attach to {conn.target.name}", opts.stall_seconds, conn.target.attach(tables))
        if opts.cluster:
            from tsbench.cluster.querying import execute as on_cluster

            res = await on_cluster(conn.target, specs, opts, ref, tables)
        else:
            res = await execute(conn.target, specs, opts, ref, conn.server)
        if any(r["status"] != "ok" for r in res.records):
            await settle(conn.server)
        return res
