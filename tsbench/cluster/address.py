"""Opening `--cluster ADDRESS` (phases 2 and 4; the address's syntax is
core/clusteraddress.py's): `local:N` starts a Dask LocalCluster of N worker processes
on this machine (one thread each, on 127.0.0.1, closed at the end; they start with
SIGINT blocked, so a Ctrl-C reaches the driver alone, which stops them);
`tcp://HOST:PORT` joins a running Dask scheduler and uses the workers it has."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from tsbench.core.clusteraddress import Address
from tsbench.core.errors import UserError

CONNECT_S = 10.0          # bound on reaching a scheduler, and on a LocalCluster's workers starting
@contextlib.asynccontextmanager
async def open_cluster(addr: Address):
    """An asynchronous dask.distributed Client with at least one worker; a LocalCluster
    started for local:N is closed (its workers stopped) when the block ends. Both close to
    the end even if a Ctrl-C comes meanwhile (one half-closed warns as it is collected)."""
    import dask
    from distributed import Client

    # a task is never run twice: a slot whose worker died fails the cell instead
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        if addr.local_workers:
            cluster = await _local(addr)
            try:
                client = await Client(cluster, asynchronous=True)
                try:
                    await _wait_for_workers(client, addr)
                    yield client
                finally:
                    await to_the_end(client.close())
            finally:
                await to_the_end(cluster.close())
        else:
            client = await _join(addr)
            try:
                yield client
            finally:
                await to_the_end(client.close())


async def to_the_end(aw) -> None:
    """Await aw (a close, bounded by its own timeout) to its end even if this task is
    cancelled meanwhile (a Ctrl-C); the cancellation is raised after it."""
    task = asyncio.ensure_future(aw)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    task.result()


async def _local(addr: Address):
    """A LocalCluster of N one-thread worker processes on 127.0.0.1, or one line saying why not."""
    from distributed import LocalCluster

    try:
        with sigint_blocked():      # the worker processes start with it blocked: Ctrl-C is the driver's alone
            return await LocalCluster(n_workers=addr.local_workers, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None, memory_limit=0,
                                      silence_logs=logging.CRITICAL, asynchronous=True)
    except Exception as exc:          # reported in one line; a half-started cluster closes itself
        cause = exc.__cause__ or exc
        raise UserError(f"--cluster {addr.text}: the Dask worker processes did not start ({cause}): a cluster "
                        "worker died while starting (killed, out of memory), or a script that starts tsbench lacks "
                        "`if __name__ == \"__main__\":`, as multiprocessing needs") from None


@contextlib.contextmanager
def sigint_blocked():
    """SIGINT blocked in this thread inside the block, so the processes started from it (the
    worker processes, forked by threads it starts) inherit it blocked: a Ctrl-C at a terminal,
    sent to the whole process group, reaches the driver only, which stops the slots and
    closes the cluster; the workers print no traceback of their own. A Ctrl-C in the block
    waits for its end. multiprocessing's resource tracker is started first: starting it
    blocks and then unblocks SIGINT in the calling thread, which would end the block early."""
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


async def _join(addr: Address):
    from distributed import Client

    try:
        client = await Client(addr.text, asynchronous=True, timeout=CONNECT_S)
    except (OSError, TimeoutError) as exc:
        raise UserError(f"--cluster: no Dask scheduler answered at {addr.text} within {CONNECT_S:g} s "
                        f"({exc.__class__.__name__}: {exc})") from None
    try:
        await _wait_for_workers(client, addr)
    except BaseException:
        await client.close()
        raise
    return client


async def _wait_for_workers(client, addr: Address) -> None:
    try:
        await client.wait_for_workers(addr.local_workers or 1, timeout=CONNECT_S)
    except TimeoutError:
        raise UserError(f"--cluster: {addr.text} has no worker after {CONNECT_S:g} s "
                        "(start some: dask worker SCHEDULER_ADDRESS)") from None
