"""Bounds on waiting (phases 2 and 4): a watchdog beside a load or an execute that
fails it within a fraction of a second when the local server's process ends (its
exit status and the last lines of its log), or when nothing progressed for
stall_seconds (a stopped or wedged server that holds its connections open); and
bounded() for a single step. docs/reliability.md says what this guarantees."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Callable

from tsbench.core.errors import ServerError

PERIOD_S = 0.2
# a client that, cancelled, waits on the server (psycopg asks a stopped server to cancel the query,
# then waits for it: 5 s + 5 s) is cancelled again this often, until the block ends
RECANCEL_S = 0.5


class Stalled(ServerError):
    """No progress for the stall bound: the server holds the connections but answers nothing."""


def _check(what: str, server, progress, stall_seconds, last: list, stalled: str | None) -> ServerError | None:
    """One look: the server's end, or a stall; None while all is well. last = [value, since]."""
    died = server.exit_report() if server is not None else None
    if died:
        return ServerError(f"{what}: {died}")
    if progress is None or not stall_seconds:
        return None
    now = progress()
    if now != last[0]:
        last[:] = [now, time.monotonic()]
    elif time.monotonic() - last[1] > stall_seconds:
        return Stalled(stalled or f"{what}: no progress for {stall_seconds:g} s (the server holds the "
                       f"connection but answers nothing; bound: --stall-timeout)")
    return None


@contextlib.asynccontextmanager
async def watchdog(what: str, server=None, progress: Callable[[], int] | None = None,
                   stall_seconds: float | None = None, stalled: str | None = None):
    """Run the block; if the server ends or progress() stays put for stall_seconds, the
    block is cancelled and the cause raised instead (a stall: Stalled, saying `stalled` if given)."""
    task = asyncio.current_task()
    cause: list[ServerError] = []
    cancels = [0]

    async def watch() -> None:
        last = [progress() if progress else None, time.monotonic()]
        while not cause:
            await asyncio.sleep(PERIOD_S)
            err = _check(what, server, progress, stall_seconds, last, stalled)
            if err is not None:
                cause.append(err)
        while True:                # cancelled again until the block ends (this watcher is cancelled then)
            cancels[0] += 1
            task.cancel()
            await asyncio.sleep(RECANCEL_S)

    watcher = asyncio.create_task(watch())
    try:
        yield
    except BaseException as exc:   # the watcher's cancellation becomes its cause
        if cause:
            watcher.cancel()
            for _ in range(cancels[0]):
                task.uncancel()
            raise cause[0] from None
        watcher.cancel()           # its own cancel must not land in the look below
        died = await _ended(server) if isinstance(exc, Exception) and not isinstance(exc, ServerError) else None
        if died:                   # a client's error (any kind) after the server's end: the end is the cause
            raise ServerError(f"{what}: {died}") from None
        raise                      # anything else re-raised as it is
    finally:
        watcher.cancel()
    died = server.exit_report() if server is not None else None
    if died:                       # it ended while the block was finishing (its errors came first)
        raise ServerError(f"{what}: {died}")


async def _ended(server) -> str | None:
    """How the server ended, if it did (looked for a moment: see settle()); None while it runs."""
    if server is None:
        return None
    await settle(server)
    return server.exit_report()


async def settle(server, seconds: float = 1.0) -> None:
    """After failed requests: a killed server's sockets close before its process is
    reaped, so its end may show a moment after the errors; wait for it at most `seconds`."""
    deadline = time.monotonic() + seconds
    while server is not None and server.exit_report() is None and time.monotonic() < deadline:
        await asyncio.sleep(PERIOD_S / 4)


async def bounded(what: str, seconds: float, awaitable):
    """await a step that shows no progress of its own (connect, create, flush, count,
    compact), at most `seconds`; past that the server is taken as stalled (the watchdog's
    cancellation: repeated, so a client's own wait on the server cannot hold it up)."""
    said = f"{what}: no answer within {seconds:g} s (bound: --stall-timeout)"
    async with watchdog(what, progress=lambda: 0, stall_seconds=seconds, stalled=said):
        return await awaitable
