"""Reaching a target (phases 2-5): `server: local` installs and starts the
target's server in a fresh instance (or makes a fresh in-process database),
a URL uses a server someone else runs. The server stops when the block ends."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from tsbench import databases
from tsbench.core.watch import bounded
from tsbench.databases.shared.server import Server, home, say
from tsbench.databases.shared.spread import check_spread_options, make_target
from tsbench.databases.shared.target import Target

CLOSE_TIMEOUT_S = 10.0
STALL_S = 120.0                     # --stall-timeout's default: the bound on connecting (open, version)


@dataclass
class Connection:
    target: Target
    server: Server | None           # the local server tsbench started, if any
    datadir: str | None
    stall_seconds: float = STALL_S  # the bound on a step outside the phases (the version probe)


@contextlib.asynccontextmanager
async def connect(target_name: str, server: str = "local", options: dict | None = None,
                  server_options: dict | None = None, ports: dict | None = None, keep_server: bool = False,
                  name: str | None = None, instance_dir=None, announce: bool = True, stall_seconds: float = STALL_S):
    cls = databases.target_class(target_name)
    cls.parse_options(options or {})           # bad options fail before any install
    srv, datadir = None, None
    if databases.is_local(server):
        kind = databases.local_kind(cls, server)
        if kind is None:
            where = instance_dir or home() / "servers" / (name or cls.name)
            url = cls.local_url(where)
            datadir = str(where) if url is not None else None
        else:
            srv = databases.server_class(kind)(name=name, instance_dir=instance_dir, ports=ports,
                                                options=server_options)
            st = await srv.astart()            # a signal while it starts: stopped, then raised
            url, datadir = srv.url, str(srv.datadir)
            if announce:
                say(f"started {st.kind} {st.version} (pid {st.pid}) at {st.url}, data in {st.datadir}")
    else:
        url = server
    check_spread_options(url, options or {})
    try:
        t = make_target(cls, url, options)
        await bounded(f"connecting to {cls.name}", stall_seconds, t.open())     # its probes: a stopped server
        try:
            yield Connection(t, srv, datadir, stall_seconds)
        finally:
            await _close(t)
    finally:
        if srv is not None and not keep_server:
            pid = srv.state.pid if srv.state else None
            srv.stop()
            if announce:
                say(f"stopped {srv.kind} (pid {pid})")


async def _close(t: Target) -> None:
    """Close the target's connections, bounded: a stopped or dead server must not hold
    up stopping it."""
    try:
        async with asyncio.timeout(CLOSE_TIMEOUT_S):
            await t.close()
    except (TimeoutError, OSError):
        pass
