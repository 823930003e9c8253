"""Running a phase's event loop (phases 2-5): asyncio.run, with its end bounded. When
the phase's coroutine has ended, the tasks it left behind are cancelled and waited for
at most TAIL_S seconds; a task that has not ended by then (a driver's task cancelled
twice while it re-takes a lock: pymongo's pool, cancelled again by the stall watchdog)
is let go, where asyncio.run would wait for it for ever."""

from __future__ import annotations

import asyncio

TAIL_S = 5.0


def run(coro):
    """asyncio.run(coro) (Ctrl-C cancels it, as there), then a bounded end."""
    with asyncio.Runner() as runner:
        try:
            return runner.run(coro)
        finally:
            _end_leftovers(runner.get_loop())


def _end_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    left = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if not left:
        return
    for t in left:
        t.cancel()
    _, stuck = loop.run_until_complete(asyncio.wait(left, timeout=TAIL_S))
    for t in stuck:                         # let go: neither waited for nor reported when destroyed
        asyncio.tasks._unregister_task(t)
        t._log_destroy_pending = False
