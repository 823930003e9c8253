"""Phase 4 (execute): QuestDB's queries over its PostgreSQL wire protocol (-O protocol=pgwire),
through psycopg (libpq), results in text (-O pg_results=text: psycopg sends a statement
without parameters as one simple-protocol Query message) or binary (pg_results=binary:
the extended protocol, Parse/Bind/Describe/Execute/Sync): one autocommit connection per concurrent
query, opened before timing (prepare) or, when none is free, by open_query_connection()
(timed apart by the executor). A query is sent once, never prepared server-side
(prepare=False: each drawn query is new text, as over HTTP); it is timed to the last
row received, which libpq holds as one result. The rows are decoded from that result
after the timed pass (rows()), as the HTTP path decodes its JSON then.

The port: the server's own `pg` port where tsbench runs it, else -O pg_port at the URL's
host; QuestDB's default credentials (admin/quest, database qdb) unless -O pg_user /
pg_password say otherwise."""

from __future__ import annotations

import urllib.parse

import psycopg
from psycopg.adapt import Transformer

from tsbench.core.errors import Fatal, UserError
from tsbench.databases.shared.server import local_state


def conninfo(url: str, options) -> dict:
    """libpq's connection parameters for the QuestDB at url (its HTTP address)."""
    st = local_state("questdb", url)
    port = st.ports["pg"] if st is not None and "pg" in st.ports else options.pg_port
    return {"host": urllib.parse.urlsplit(url).hostname or "127.0.0.1", "port": port, "dbname": "qdb",
            "user": options.pg_user, "password": options.pg_password.get_secret_value()}


class PgResult:
    """One query's answer as libpq received it (the rows not decoded yet)."""

    __slots__ = ("conn", "result")

    def __init__(self, result, conn):
        self.result, self.conn = result, conn

    def names(self) -> list[str]:
        return [(self.result.fname(i) or b"").decode("utf-8", "replace") for i in range(self.result.nfields)]

    def rows(self) -> list[tuple]:
        tx = Transformer.from_context(self.conn)
        tx.set_pgresult(self.result)
        return tx.load_rows(0, self.result.ntuples, tuple)


class PgWire:
    """The query connections of one target, free and all."""

    def __init__(self, what: str, params: dict, binary: bool):
        self.what, self.params, self.binary = what, params, binary
        self.free: list[psycopg.AsyncConnection] = []
        self.all: list[psycopg.AsyncConnection] = []

    async def connect(self) -> None:
        """One more connection, free."""
        try:
            conn = await psycopg.AsyncConnection.connect(**self.params, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise UserError(f"{self.what}: cannot reach its PostgreSQL wire port {self.params['port']}: "
                            f"{_one_line(exc)}") from None
        self.all.append(conn)
        self.free.append(conn)

    async def prepare(self, workers: int) -> None:
        while len(self.all) < workers:
            await self.connect()

    async def query(self, sql: str) -> PgResult:
        """The statement on a free connection, to the last row received."""
        conn = self.free.pop() if self.free else None
        if conn is None:
            await self.connect()
            conn = self.free.pop()
        try:
            cur = conn.cursor(binary=self.binary)
            await cur.execute(sql, prepare=False)
        except psycopg.Error as exc:
            self._give_back(conn)
            raise Fatal(f"{self.what}: {_one_line(exc)}") from None
        except BaseException:               # cancelled mid-answer: the connection's state is unknown
            conn.pgconn.finish()
            self._give_back(conn)
            raise
        self._give_back(conn)
        return PgResult(cur.pgresult, conn)

    def _give_back(self, conn: psycopg.AsyncConnection) -> None:
        """conn free again, or out of the pool if it closed."""
        if conn.closed:
            self.all.remove(conn)
        else:
            self.free.append(conn)

    async def close(self) -> None:
        for conn in self.all:
            await conn.close()
        self.all.clear()
        self.free.clear()


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
