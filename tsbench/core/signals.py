"""Stopping a run (all phases): SIGTERM takes the same path as Ctrl-C (SIGINT), so a
run stops its servers and keeps its finished cells whichever it gets; the last
writes of results can be shielded from a further signal."""

from __future__ import annotations

import contextlib
import signal

EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}


class Caught:
    """The SIGTERM that stopped the work, if one did (name None: it was SIGINT, if anything)."""

    name: str | None = None


@contextlib.contextmanager
def as_interrupt():
    """SIGTERM handled like SIGINT: passed to whatever handles SIGINT at that moment
    (Python's KeyboardInterrupt, or asyncio's cancellation of the running task)."""
    caught = Caught()

    def on_term(signum, frame):
        caught.name = caught.name or "SIGTERM"
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)     # SIGINT keeps its handler: asyncio.run's needs the default
    try:
        yield caught
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def deferred():
    """SIGINT and SIGTERM noted but not acted on inside the block (a write that must finish)."""
    seen: list[int] = []
    olds = {s: signal.signal(s, lambda signum, frame: seen.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield seen
    finally:
        for s, h in olds.items():
            signal.signal(s, h)
