"""The driver's side of every cluster phase (phase 2 `load --cluster` in loading.py,
`stream --cluster` in streaming.py, phase 4 in querying.py): the cluster opened and
its workers checked, each load slot's share placed (a byte range of the file, or its
group generated on its worker), one slot per worker submitted (pinned to it, never
retried elsewhere), their live messages handed to the phase, any slot's failure (its
error, or its worker leaving the cluster) turned into the cell's failure with the
worker's address and the cause within a second or two; a worker that dies while the
driver waits for an answer (its facts, the live counters) is one line too. On any way
out before all slots finished (a failure, Ctrl-C), the stop event is set so every slot
stops, bounded by STOP_WAIT_S, and what is left is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid

from tsbench.cluster.address import open_cluster
from tsbench.cluster.clientfacts import client_facts
from tsbench.cluster.facts import check_same_build, worker_facts
from tsbench.cluster.merge import shift_of
from tsbench.cluster.shares import GeneratedData
from tsbench.cluster.slot import ShareJob, make_share, remove_shares
from tsbench.core.clusteraddress import parse
from tsbench.core.errors import LoadError, UserError
from tsbench.data.batches import byte_ranges

POLL_S = 0.5             # the driver wakes when a slot ends, and at least this often
ALIVE_S = 1.0            # how often it asks the scheduler which workers it has
RPC_S = 30.0             # bound on one answer of the scheduler
STOP_WAIT_S = 10.0       # bound on the slots' stopping once told to
LEFT = "the worker left the cluster while it ran (its process ended or it lost its connection)"
DIED = "a cluster worker died or its connection broke"


class SlotFailed(LoadError):
    """A slot's error, or its worker gone: the address and the cause."""


def one_process_refused(cls) -> None:
    """A target reached from one process only (an in-process database) cannot have slots."""
    if not cls.multiprocess:
        raise UserError(f"--cluster: target {cls.name} is reached from one process only")


@contextlib.asynccontextmanager
async def maybe_cluster(text: str | None, target: str):
    """The Cluster of --cluster TEXT for slots of `target`, or None without one."""
    if not text:
        yield None
        return
    async with open_cluster(parse(text)) as client:
        workers = await _bounded(worker_facts(client, target), "the workers' facts", text)
        driver = client_facts()
        check_same_build(driver, workers)
        cluster = Cluster(client, text, driver, workers)
        cluster.driver_offset = await cluster._driver_offset()
        try:
            yield cluster
        finally:
            await asyncio.shield(cluster.remove_shares())


async def _bounded(coro, what: str, where: str):
    """An answer of the cluster within RPC_S; no answer, or a connection that broke on the way
    (distributed's CommClosedError, an OSError: a worker process ended), is one line."""
    try:
        return await asyncio.wait_for(coro, RPC_S)
    except TimeoutError:
        raise UserError(f"--cluster {where}: no answer for {what} within {RPC_S:g} s") from None
    except OSError as exc:
        raise UserError(f"--cluster {where}: {DIED} while waiting for {what} ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())})") from None


class Cluster:
    def __init__(self, client, text: str, driver: dict, workers: dict[str, dict]):
        self.client, self.text, self.driver, self.workers = client, text, driver, workers
        self.shares: list[tuple[str, tuple[int, int] | None]] = []     # per slot: path, byte range
        self.made: list[str] = []                                       # shares generated on the workers
        self.driver_offset = 0.0            # the scheduler's clock minus this machine's (s), taken at the start

    @property
    def slots(self) -> int:
        return len(self.workers)

    async def place(self, data) -> None:
        """Each slot's share: a byte range of a data file every worker sees, or (GeneratedData)
        its group generated on its worker, untimed; then data holds the summed counts."""
        n = self.slots
        if not isinstance(data, GeneratedData):
            self.shares = [(str(data.path), r) for r in byte_ranges(data.path, n)]
            return
        jobs = [ShareJob(i, n, data.dataset.spec, data.format) for i in range(n)]
        data.shares = await Slots(self, make_share, jobs).run()
        self.made = [r["path"] for r in data.shares]
        self.shares = [(p, None) for p in self.made]
        data.rows, data.values = sum(r["rows"] for r in data.shares), sum(r["values"] for r in data.shares)

    async def remove_shares(self) -> None:
        if self.made:
            with contextlib.suppress(Exception):      # a worker gone took its share with it; the rest are removed
                await asyncio.wait_for(self.client.run(remove_shares, self.made), RPC_S)

    def shift(self, addr: str) -> float:
        """Seconds to add to worker addr's clock for this machine's."""
        return shift_of(self.workers[addr]["clock_offset_s"], self.driver_offset)

    async def _driver_offset(self) -> float:
        """The scheduler's clock minus this machine's, from one round trip."""
        before = time.time()
        sched = await _bounded(self.client.run_on_scheduler(time.time), "the scheduler's clock", self.text)
        return sched - (before + time.time()) / 2


class Slots:
    """One task per worker (fn(job), pinned to it), watched until all finished or one
    failed. With a token, the tasks' live messages (the Dask queue tsbench-live-TOKEN) go
    to on_live(slot, message) until the slot's result (to on_result(slot, result)), and
    tsbench-stop-TOKEN is the event that tells them to stop."""

    def __init__(self, cluster: Cluster, fn, jobs: list, token: str | None = None, on_live=None, on_result=None):
        from distributed import Event, Queue

        self.c, self.fn, self.jobs, self.on_live, self.on_result = cluster, fn, jobs, on_live, on_result
        self.addrs = list(cluster.workers)
        self.live = Queue(f"tsbench-live-{token}", client=cluster.client) if token else None
        self.stop = Event(f"tsbench-stop-{token}", client=cluster.client) if token else None
        self.token = token or uuid.uuid4().hex[:12]
        self.futures: list = []
        self.results: dict[int, dict] = {}

    async def run(self) -> list[dict]:
        self.futures = [self.c.client.submit(self.fn, j, workers=[a], allow_other_workers=False, pure=False,
                                             key=f"tsbench-{self.fn.__name__}-{j.slot}-{self.token}")
                        for j, a in zip(self.jobs, self.addrs)]
        try:
            await self._watch()
        finally:
            if len(self.results) < len(self.futures):
                await asyncio.shield(self._stop_all())
        return [self.results[i] for i in range(len(self.futures))]

    async def _watch(self) -> None:
        from distributed import wait

        next_alive = time.monotonic() + ALIVE_S
        while len(self.results) < len(self.futures):
            pending = [f for i, f in enumerate(self.futures) if i not in self.results]
            with contextlib.suppress(TimeoutError):          # no slot ended within POLL_S: look anyway
                await asyncio.wait_for(wait(pending, return_when="FIRST_COMPLETED"), POLL_S)
            await self._drain()
            for i, f in enumerate(self.futures):
                if i not in self.results and f.done():
                    self._take(i, await f if f.status == "finished" else {"error": await self._cause(f)})
            if time.monotonic() >= next_alive:
                next_alive = time.monotonic() + ALIVE_S
                await self._check_alive()
        await self._drain()

    def _take(self, i: int, r: dict) -> None:
        if "error" in r:
            self._fail(i, r["error"])
        self.results[i] = r
        if self.on_result is not None:
            self.on_result(i, r)

    async def _cause(self, f) -> str:
        from distributed import KilledWorker

        exc = await f.exception() if f.status == "error" else None
        if isinstance(exc, KilledWorker):
            return LEFT
        return str(exc) if exc else f"the task was {f.status}"

    def _fail(self, i: int, cause: str) -> None:
        a = self.addrs[i]
        raise SlotFailed(f"client slot {i} on {a} ({self.c.workers[a]['hostname']}): {cause}")

    async def _drain(self) -> None:
        if self.live is None:
            return
        for msg in await _bounded(self.live.get(batch=True), "the slots' counters", self.c.text):
            if msg["slot"] not in self.results and self.on_live is not None:
                self.on_live(msg["slot"], msg)

    async def _check_alive(self) -> None:
        info = await _bounded(self.c.client.scheduler.identity(), "the list of workers", self.c.text)
        for i, a in enumerate(self.addrs):
            if i not in self.results and a not in info.get("workers", {}):
                self._fail(i, LEFT)

    async def _stop_all(self) -> None:
        """Tell every task to stop; wait for them (bounded); cancel what is left."""
        with contextlib.suppress(Exception):      # a scheduler gone already: nothing left to tell
            if self.stop is not None:
                await asyncio.wait_for(self.stop.set(), RPC_S)
            pending = [f for f in self.futures if not f.done()]
            deadline = time.monotonic() + STOP_WAIT_S
            while pending and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                pending = [f for f in pending if not f.done()]
            await asyncio.wait_for(self.c.client.cancel(self.futures, force=True), RPC_S)
