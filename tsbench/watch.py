"""Bounds on waiting (phases 2 and 4): a watchdog beside a load or an execute that
fails it within a fraction of a second when the local server's process ends (its
exit status and the last lines of its log), or when nothing progressed for
stall_seconds (a stopped or wedged server that holds its connections open)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Callable

from .errors import ServerError

PERIOD_S = 0.2


class Stalled(ServerError):
    """No progress for the stall bound: the server holds the connections but answers nothing."""


def _check(what: str, server, progress, stall_seconds, last: list) -> ServerError | None:
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
        return Stalled(f"{what}: no progress for {stall_seconds:g} s (the server holds the connection "
                       f"but answers nothing; bound: --stall-timeout)")
    return None


@contextlib.asynccontextmanager
async def watchdog(what: str, server=None, progress: Callable[[], int] | None = None,
                   stall_seconds: float | None = None):
    """Run the block; if the server ends or progress() stays put for stall_seconds, the
    block is cancelled and the cause raised instead."""
    task = asyncio.current_task()
    cause: list[ServerError] = []

    async def watch() -> None:
        last = [progress() if progress else None, time.monotonic()]
        while not cause:
            await asyncio.sleep(PERIOD_S)
            err = _check(what, server, progress, stall_seconds, last)
            if err is not None:
                cause.append(err)
                task.cancel()

    watcher = asyncio.create_task(watch())
    try:
        yield
    except BaseException:          # the watcher's cancellation becomes its cause; anything else re-raised as it is
        if cause:
            task.uncancel()
            raise cause[0] from None
        raise
    finally:
        watcher.cancel()
    died = server.exit_report() if server is not None else None
    if died:                       # it ended while the block was finishing (its errors came first)
        raise ServerError(f"{what}: {died}")


async def settle(server, seconds: float = 1.0) -> None:
    """After failed requests: a killed server's sockets close before its process is
    reaped, so its end may show a moment after the errors; wait for it at most `seconds`."""
    deadline = time.monotonic() + seconds
    while server is not None and server.exit_report() is None and time.monotonic() < deadline:
        await asyncio.sleep(PERIOD_S / 4)


async def bounded(what: str, seconds: float, awaitable):
    """await a step that shows no progress of its own (create, flush, count, compact), at
    most `seconds`; past that the server is taken as stalled."""
    try:
        async with asyncio.timeout(seconds):
            return await awaitable
    except TimeoutError:
        raise Stalled(f"{what}: no answer within {seconds:g} s (bound: --stall-timeout)") from None
