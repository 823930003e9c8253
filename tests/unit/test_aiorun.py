"""aiorun.run: a phase's event loop ends within its bound even when a task it left
behind does not end when cancelled (as a driver's task cancelled twice while it
re-takes a lock: pymongo's pool, seen hanging a load's exit for ever)."""

from __future__ import annotations

import asyncio
import time

from tsbench.core import aiorun


async def _stubborn() -> None:
    """A task that swallows every cancellation for an hour."""
    end = time.monotonic() + 3600
    while time.monotonic() < end:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass


async def _phase() -> str:
    asyncio.create_task(_stubborn())
    await asyncio.sleep(0)
    return "done"


def test_a_task_that_ignores_cancellation_does_not_hold_up_the_end(monkeypatch):
    monkeypatch.setattr(aiorun, "TAIL_S", 0.5)
    t0 = time.monotonic()
    assert aiorun.run(_phase()) == "done"
    assert time.monotonic() - t0 < 10


def test_the_phase_s_error_is_raised_after_the_bounded_end(monkeypatch):
    monkeypatch.setattr(aiorun, "TAIL_S", 0.5)

    async def failing():
        asyncio.create_task(_stubborn())
        await asyncio.sleep(0)
        raise ValueError("the phase's own error")

    try:
        aiorun.run(failing())
    except ValueError as exc:
        assert str(exc) == "the phase's own error"
    else:
        raise AssertionError("the error was lost")
