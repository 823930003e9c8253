"""The driver's side of `load --cluster` (phase 2): the same steps as load/run.py's load
(create, the timed part, verify, compact, disk figures), with the cluster opened and its
workers checked, each slot's share placed (a byte range of the file, or its group
generated on its worker: untimed), and one slot per worker (cluster/slot.py) as the
timed part's writers: their live counters feed the load's progress and stall watch,
and their timelines, CPU seconds and counts are merged on this machine's clock. The
cluster closes (shares generated on the workers removed) before the untimed checks."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from tsbench.cluster.drive import Cluster, Slots, maybe_cluster
from tsbench.cluster.merge import merged_timeline, on_driver_clock
from tsbench.cluster.slot import SlotJob, run_slot
from tsbench.databases.shared.spread import target_options
from tsbench.load.run import LoadResult, created_and_timed, failing, new_result, settled


async def load(target, df, opts, datadir: str | None = None, server_pids: list[int] | None = None) -> LoadResult:
    """Create, load from every slot (timed), verify, compact and measure. Raises LoadError
    on failure (the partial result is in exc.result)."""
    res = new_result(target, df, opts)
    with failing(res):
        async with maybe_cluster(opts.cluster, type(target).name) as cluster:    # started, checked, placed: untimed
            await cluster.place(df)
            tables = await created_and_timed(target, df, opts, res, server_pids,
                                             OnCluster(cluster, target, df.format, opts))
        await settled(target, df, tables, opts, res, datadir)
    return res


@dataclass
class ClusterRun:
    timeline: list[dict]
    clients: list[dict]             # per slot: worker, host, figures
    cpu_seconds: float              # the slots' worker processes, summed
    counted: int | None             # the slots' own counts, summed (a target whose count is local)


class OnCluster:
    """The timed part's writers with --cluster: one slot per worker over its share
    (a feeder, as load/run.py's Processes: parts, feed, into)."""

    def __init__(self, cluster: Cluster, target, fmt: str, opts):
        self.cluster, self.target, self.fmt, self.opts = cluster, target, fmt, opts
        self.parts = cluster.slots             # rows of the load's counters
        self.run: ClusterRun | None = None

    async def feed(self, tables, counters) -> None:
        """Each worker loads its share; counters (one row of N_COUNTERS per slot) follow
        them live and hold their totals at the end."""
        token = uuid.uuid4().hex[:12]
        jobs = [SlotJob(i, type(self.target).name, self.target.url, target_options(self.target), tables, path,
                        self.fmt, r, self.opts, f"tsbench-live-{token}", f"tsbench-stop-{token}")
                for i, (path, r) in enumerate(self.cluster.shares)]
        t0 = time.time()
        take = _into_counters(counters)
        results = await Slots(self.cluster, run_slot, jobs, token, take, take).run()
        self.run = _merge(self.cluster, results, t0)

    def into(self, res: LoadResult) -> None:
        """The slots' own timelines on this clock, their CPU seconds and counts (once they all finished)."""
        if self.run is not None:
            res.timeline, res.clients, res.counted_by_slots = self.run.timeline, self.run.clients, self.run.counted
            res.client_cpu_seconds += self.run.cpu_seconds


def _into_counters(counters):
    """A slot's live message or result: its cumulative totals, into its row of the load's counters."""
    def take(i: int, msg: dict) -> None:
        n = len(msg["totals"])
        counters[i * n: (i + 1) * n] = msg["totals"]
    return take


def _merge(cluster: Cluster, results: list[dict], t0: float) -> ClusterRun:
    slots, clients = [], []
    for r, a in zip(results, cluster.workers):
        f = cluster.workers[a]
        shift = cluster.shift(a)
        slots.append(on_driver_clock(r["samples"], shift))
        first = r["first_batch_time"]
        clients.append({"slot": r["slot"], "worker": a, "host": f["hostname"], "rows": r["totals"][0],
                        "values": r["totals"][1], "bytes": r["totals"][2],
                        "seconds": round(r["samples"][-1][0] - r["samples"][0][0], 3),
                        "cpu_seconds": round(r["cpu_seconds"], 3),
                        "start_to_first_batch_s": None if first is None else round(first + shift - t0, 3),
                        "clock_offset_s": round(shift, 6),
                        **{k: f[k] for k in ("cpu_model", "cores", "memory_bytes", "tsbench", "build")}})
    counts = [r["counted"] for r in results]
    counted = None if None in counts else sum(counts)
    return ClusterRun(merged_timeline(slots, t0), clients, sum(r["cpu_seconds"] for r in results), counted)
