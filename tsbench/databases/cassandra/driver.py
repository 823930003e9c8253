"""cassandra-driver under asyncio (phases 2-5): one Cluster and Session per
target, its own connection pool and I/O thread; each request's ResponseFuture
is bridged into an asyncio future (add_callbacks -> call_soon_threadsafe), so
nothing blocks the event loop. Connecting and shutting down (blocking calls)
run in a thread. Driver errors become tsbench's: push-back Retryable, refusals
Fatal with the server's words (classify()).

Loads send BATCH messages whose statements (prepared ids and bound values) were
serialized in the C core (schema.py's templates): a BoundBatch statement
carries those bytes and their statement count, and the session's protocol
handler (the driver's documented `client_protocol_handler` hook, subclassed)
writes them as the message body in one piece, with the driver's own header and
trailer (consistency, flags), so no value passes through Python."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import socket
import struct
import threading
import time

from cassandra import OperationTimedOut, ReadFailure, ReadTimeout, Unavailable, UnresolvableContactPoints, WriteTimeout
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, NoHostAvailable
from cassandra.connection import ConnectionException
from cassandra.policies import ConstantReconnectionPolicy, RoundRobinPolicy
from cassandra.protocol import BatchMessage, IsBootstrappingErrorMessage, OverloadedErrorMessage
from cassandra.query import BatchStatement, BatchType, tuple_factory

from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.databases.shared import blocking

CONNECT_TIMEOUT = 10.0
NO_HOST_GRACE = 60.0          # seconds NoHostAvailable counts as a (re)starting server
FETCH_SIZE = 5000
ADMIN_RETRIES, ADMIN_PAUSE = 3, 2.0    # a DDL or count statement pushed back (PUSH_BACK): tried again, 3 times

# The driver logs every server warning and reconnection attempt; tsbench reports errors itself.
logging.getLogger("cassandra").addHandler(logging.NullHandler())
logging.getLogger("cassandra").propagate = False

# A replica that failed a read (ReadFailure, code 1300, "Replica(s) failed to execute read") is
# taken as push-back too: a busy machine's count right after a load met it, and a retry read it.
PUSH_BACK = (OverloadedErrorMessage, IsBootstrappingErrorMessage, WriteTimeout, ReadTimeout, ReadFailure, Unavailable,
             OperationTimedOut, ConnectionException)


class BoundStatements:
    """The statements of one batch as the C core serialized them, and how many there are."""

    def __init__(self, data, count: int):
        self.data, self.count = data, count


class BoundBatch(BatchStatement):
    """An unlogged batch of pre-serialized prepared statements (retried whole: upserts)."""

    def __init__(self, statements: BoundStatements):
        super().__init__(batch_type=BatchType.UNLOGGED)
        self.is_idempotent = True
        self._statements_and_parameters = statements


class BoundBatchMessage(BatchMessage):
    """A BATCH message whose statements are written as the C core left them."""

    def send_body(self, f, protocol_version) -> None:
        trailer = io.BytesIO()      # the driver's own trailer: the message without statements, after
        BatchMessage(self.batch_type, (), self.consistency_level, self.serial_consistency_level,   # type, count
                     self.timestamp, self.keyspace).send_body(trailer, protocol_version)
        f.write(struct.pack(">BH", self.batch_type.value, self.queries.count))
        f.write(self.queries.data)
        f.write(trailer.getbuffer()[3:])


def bound_batch_handler(base: type) -> type:
    """The session's protocol handler, writing BoundStatements batches as BoundBatchMessage."""

    class BoundBatchHandler(base):
        @classmethod
        def encode_message(cls, msg, *args, **kwargs):
            if isinstance(msg, BatchMessage) and isinstance(msg.queries, BoundStatements):
                bound = BoundBatchMessage.__new__(BoundBatchMessage)
                bound.__dict__.update(msg.__dict__)
                msg = bound
            return super().encode_message(msg, *args, **kwargs)
    return BoundBatchHandler


def one_line(exc: BaseException) -> str:
    """The driver's message in one line (NoHostAvailable: the first host's error)."""
    if isinstance(exc, NoHostAvailable) and exc.errors:
        host, err = next(iter(exc.errors.items()))
        return f"no host available ({host}: {one_line(err) if isinstance(err, BaseException) else err})"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:1000]


class Session:
    """One cluster connection; requests from any coroutine of the loop that opened it."""

    def __init__(self, cluster: Cluster, session, what: str):
        self.cluster, self.session, self.what = cluster, session, what
        self.loop = asyncio.get_running_loop()
        self._down_since: float | None = None

    async def close(self) -> None:
        await blocking.call(self.cluster.shutdown)

    # ---- errors ---------------------------------------------------------------------------
    def classify(self, exc: BaseException) -> Exception:
        """Retryable for push-back, Fatal (the server's words) for everything else."""
        if isinstance(exc, NoHostAvailable):
            now = time.monotonic()
            self._down_since = self._down_since or now
            if now - self._down_since < NO_HOST_GRACE:
                return Retryable(f"{self.what}: {one_line(exc)}")
            return Fatal(f"{self.what}: {one_line(exc)} for {now - self._down_since:.0f} s")
        if isinstance(exc, PUSH_BACK):
            return Retryable(f"{self.what}: {type(exc).__name__}: {one_line(exc)}")
        return Fatal(f"{self.what}: {one_line(exc)}")

    # ---- one request -----------------------------------------------------------------------
    def _future(self, stmt, params=None, all_pages: bool = True) -> asyncio.Future:
        """The rows of one statement (every page when all_pages) as an asyncio future."""
        fut = self.loop.create_future()
        fut.add_done_callback(_swallow)      # an error nobody awaits (a batch given up) is not logged
        rows: list = []
        try:
            rf = self.session.execute_async(stmt, params)
        except Exception as exc:             # e.g. NoHostAvailable raised at once
            fut.set_exception(exc)
            return fut

        def done(result, exc) -> None:
            if not fut.done():
                if exc is not None:
                    fut.set_exception(exc)
                else:
                    fut.set_result(result)

        def page(result) -> None:
            try:
                rows.extend(result or ())
                if all_pages and rf.has_more_pages:
                    rf.start_fetching_next_page()
                    return
            except Exception as exc:
                self.loop.call_soon_threadsafe(done, None, exc)
                return
            self._down_since = None
            self.loop.call_soon_threadsafe(done, rows, None)

        rf.add_callbacks(page, lambda exc: self.loop.call_soon_threadsafe(done, None, exc))
        return fut

    async def rows(self, cql, params=None, fetch_all: bool = True) -> list:
        """Every row of a statement (DDL, counts, the index: not the load). Push-back is
        retried ADMIN_RETRIES times, ADMIN_PAUSE s apart, then Fatal; other errors are Fatal."""
        for attempt in range(ADMIN_RETRIES + 1):
            try:
                return await self._future(cql, params, fetch_all)
            except Exception as exc:
                err = self.classify(exc)
                if not isinstance(err, Retryable) or attempt == ADMIN_RETRIES:
                    raise Fatal(str(err)) from None
            await asyncio.sleep(ADMIN_PAUSE)
        raise AssertionError("unreachable")

    async def run(self, cql: str, params=None) -> None:
        """A statement whose rows do not matter (DDL)."""
        await self.rows(cql, params, fetch_all=False)

    async def prepare(self, cql: str):
        """A prepared statement (the driver prepares synchronously: in a thread)."""
        try:
            return await blocking.call(self.session.prepare, cql)
        except Exception as exc:
            raise Fatal(f"{self.what}: preparing {cql[:200]}: {one_line(exc)}") from None

    # ---- many requests ---------------------------------------------------------------------
    async def write_all(self, batches: list[BoundStatements], in_flight: int) -> None:
        """Send every batch, in_flight at a time; the first error is raised (the rest still
        finish in the driver; their outcome is dropped)."""
        pending: set[asyncio.Future] = set()
        try:
            for batch in batches:
                if len(pending) >= in_flight:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for d in done:
                        d.result()
                pending.add(self._future(BoundBatch(batch), all_pages=False))
            if pending:
                done, pending = await asyncio.wait(pending)
                for d in done:
                    d.result()
        except Exception as exc:
            if isinstance(exc, (Fatal, Retryable, UserError)):
                raise
            raise self.classify(exc) from None

    async def read_all(self, stmts: list, in_flight: int) -> list[list]:
        """Every row of every (bound) statement, in_flight at a time, in the statements' order."""
        sem = asyncio.Semaphore(in_flight)

        async def one(s) -> list:
            async with sem:
                return await self._future(s)
        try:
            return list(await asyncio.gather(*(one(s) for s in stmts)))
        except Exception as exc:
            raise Fatal(f"{self.what}: {one_line(exc)}") from None


def _swallow(f: asyncio.Future) -> None:
    if not f.cancelled():
        f.exception()


async def connect(contacts: list[tuple[str, int]], request_timeout: float, what: str) -> Session:
    """A Session on the cluster; UserError naming the URL if no contact point answers."""
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=request_timeout,
                               row_factory=tuple_factory)
    try:
        cluster = Cluster(contact_points=contacts, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                          connect_timeout=CONNECT_TIMEOUT, control_connection_timeout=CONNECT_TIMEOUT,
                          reconnection_policy=ConstantReconnectionPolicy(0.5, max_attempts=None),
                          schema_metadata_enabled=False, token_metadata_enabled=False,
                          sockopts=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])   # no Nagle delay per batch
    except UnresolvableContactPoints:
        hosts = ", ".join(h for h, _ in contacts)
        raise UserError(f"{what}: cannot connect: no address found for {hosts}") from None
    try:
        session = await blocking.call(cluster.connect)
    except Exception as exc:
        await blocking.call(cluster.shutdown)
        raise UserError(f"{what}: cannot connect: {one_line(exc)}") from None
    except asyncio.CancelledError:      # the connect bound (a stopped server): the cluster must not live on,
        threading.Thread(target=cluster.shutdown, daemon=True).start()   # reconnecting for good
        raise
    session.default_fetch_size = FETCH_SIZE
    session.client_protocol_handler = bound_batch_handler(session.client_protocol_handler)
    return Session(cluster, session, what)


def tablestats_live(text: str, keyspace: str, tables: set[str]) -> int:
    """Sum of "Space used (live)" over tables in `nodetool tablestats -F json` output."""
    start = text.find("{")
    if start < 0:
        raise Fatal(f"cassandra: nodetool tablestats printed no JSON: {text.strip()[:300]}")
    doc = json.loads(text[start:])
    stats = doc.get(keyspace, {}).get("tables", {})
    return sum(int(v.get("space_used_live", 0)) for name, v in stats.items() if name in tables)
