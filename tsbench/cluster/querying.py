"""The driver's side of `execute --cluster` (phase 4, and 5's checks): one slot per Dask
worker (cluster/query_slot.py) runs its share of the measured queries with its own
connection and --workers; the driver sets the run's go once every slot has warmed up, so
they measure at once, watches them as drive.Slots does, then merges their records
(workers numbered across slots, a slot column) and judges every distinct answer against
the reference engine here, untimed. The run's measured seconds are the longest slot's
(from the go to its end, its untimed checks excluded)."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

from tsbench.cluster.drive import Slots, maybe_cluster, one_process_refused
from tsbench.cluster.query_slot import QuerySlotJob, run_query_slot
from tsbench.core.watch import watchdog
from tsbench.databases.shared.spread import target_options
from tsbench.execute.run import ExecResult, Execution


async def execute(target, specs: list, opts, reference=None, tables=None) -> ExecResult:
    """The queries from every slot at once; answers judged on the driver."""
    opts.check()
    cls = type(target)
    one_process_refused(cls)
    async with maybe_cluster(opts.cluster, cls.name) as cluster:
        token = uuid.uuid4().hex[:12]
        n = cluster.slots
        mine = dataclasses.replace(opts, cluster=None, validate=False, progress=False,
                                   rate=opts.rate / n if opts.rate else None)
        jobs = [QuerySlotJob(i, n, cls.name, target.url, target_options(target), tables, specs, mine,
                             f"tsbench-live-{token}", f"tsbench-stop-{token}", f"tsbench-go-{token}")
                for i in range(n)]
        ready = _Ready(cluster, jobs[0].go, n)
        go = asyncio.create_task(ready.go_when_all())
        try:
            async with watchdog(f"queries on {cls.name}", progress=ready.progress, stall_seconds=opts.stall_seconds):
                results = await Slots(cluster, run_query_slot, jobs, token, ready.take).run()
        finally:
            go.cancel()
        return _merge(cluster, target, specs, opts, reference, results)


class _Ready:
    """The slots' live lines: who has warmed up (then the go), and answers so far (the stall watch)."""

    def __init__(self, cluster, go_name: str, n: int):
        from distributed import Event

        self.go = Event(go_name, client=cluster.client)
        self.ready: set[int] = set()
        self.answered = [0] * n
        self.all = asyncio.Event()

    def take(self, i: int, msg: dict) -> None:
        self.answered[i] = msg["answered"]
        if msg.get("ready"):
            self.ready.add(i)
            if len(self.ready) == len(self.answered):
                self.all.set()

    def progress(self) -> int:
        return sum(self.answered) + len(self.ready)

    async def go_when_all(self) -> None:
        await self.all.wait()
        await self.go.set()


def _merge(cluster, target, specs: list, opts, reference, results: list[dict]) -> ExecResult:
    ex = Execution(target, opts, reference)
    ex.specs = {s.id: s for s in specs}
    records, clients = [], []
    for r, addr in zip(results, cluster.workers):
        answers = r["answers"]
        for rec in r["records"]:
            rec.update(worker=r["slot"] * opts.workers + rec["worker"], slot=r["slot"])
            if rec["answer_digest"] is not None:
                ex.judge(rec, ex.specs[rec["id"]], answers[f"{rec['id']}:{rec['answer_digest']}"],
                         rec["answer_digest"])
            records.append(rec)
        f = cluster.workers[addr]
        clients.append({"slot": r["slot"], "worker": addr, "host": f["hostname"], "queries": len(r["records"]),
                        "seconds": round(r["end"] - r["start"] - r["check_seconds"], 3),
                        "cpu_seconds": round(r["cpu_seconds"], 3),
                        **{k: f[k] for k in ("cpu_model", "cores", "memory_bytes", "tsbench", "build")}})
    res = ex.res
    res.records, res.clients = records, clients
    res.unsupported = sorted({u for r in results for u in r["unsupported"]})
    res.seconds = max(c["seconds"] for c in clients)
    res.check_seconds = sum(r["check_seconds"] for r in results)
    ex.summarize()
    return res
