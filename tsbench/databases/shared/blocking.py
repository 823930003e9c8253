"""Blocking client calls off the event loop (phases 2-5), for targets whose driver is
synchronous (IoTDB's thrift Session): each call runs on a daemon thread of a small
pool. asyncio.to_thread would do the same on the loop's default executor, but a call
abandoned there (cancelled by the stall bound while a stopped server never answers)
is waited for when asyncio.run ends and again at the interpreter's exit, up to the
driver's own socket timeout; a daemon thread is waited for by nothing."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading

_idle: queue.SimpleQueue = queue.SimpleQueue()      # the job queues of the threads waiting for work


def _serve(jobs: queue.SimpleQueue) -> None:
    """One pool thread: run each job given to it, then offer itself again."""
    while True:
        fn, args, loop, fut = jobs.get()
        try:
            out, err = fn(*args), None
        except BaseException as exc:        # handed to the awaiting task, raised there
            out, err = None, exc
        with contextlib.suppress(RuntimeError):     # the loop closed meanwhile: nobody awaits it
            loop.call_soon_threadsafe(_settle, fut, out, err)
        _idle.put(jobs)


def _settle(fut: asyncio.Future, out, err) -> None:
    if fut.cancelled():
        return
    if err is not None:
        fut.set_exception(err)
    else:
        fut.set_result(out)


async def call(fn, *args):
    """fn(*args) on a pool thread (a new daemon thread when none is idle), awaited."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    try:
        jobs = _idle.get_nowait()
    except queue.Empty:
        jobs = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(jobs,), name="tsbench-blocking", daemon=True).start()
    jobs.put((fn, args, loop, fut))
    return await fut
