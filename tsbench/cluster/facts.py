"""The workers of a cluster (phases 2 and 4): each one's host facts and its tsbench
(version and C-core build), gathered before any slot runs; a worker whose tsbench
differs from the driver's is refused in one line, since its bytes or figures could
differ."""

from __future__ import annotations

from tsbench.cluster.clientfacts import client_facts
from tsbench.core.errors import UserError


async def worker_facts(client, target: str) -> dict[str, dict]:
    """{worker address: client_facts() there, with its clock offset}. The offset (s) is
    what Dask measured at the worker's heartbeats: the scheduler's clock minus the worker's.
    Each worker imports what a slot of `target` runs on the way, so no slot's start waits
    for imports."""
    facts = await client.run(_facts_and_imports, target)
    delays = await client.run(_scheduler_delay)
    return {a: {**f, "clock_offset_s": delays.get(a, 0.0)} for a, f in sorted(facts.items())}


def _facts_and_imports(target: str) -> dict:
    import importlib

    from tsbench import databases

    for module in ("tsbench.data.generate", "tsbench.cluster.slot", "tsbench.cluster.stream_slot", "tsbench.stream.run",
                   "tsbench.stream.source"):                          # here, before the timed part
        importlib.import_module(module)
    databases.target_class(target)
    return client_facts()


def _scheduler_delay(dask_worker) -> float:
    return float(dask_worker.scheduler_delay)


def check_same_build(driver: dict, workers: dict[str, dict]) -> None:
    """One line naming the first worker whose tsbench version or build differs."""
    for addr, f in workers.items():
        if (f["tsbench"], f["build"]) != (driver["tsbench"], driver["build"]):
            raise UserError(f"--cluster: worker {addr} ({f['hostname']}) runs tsbench {f['tsbench']} build "
                            f"{f['build']}, this machine {driver['tsbench']} build {driver['build']}: "
                            "install the same tsbench on every worker")
