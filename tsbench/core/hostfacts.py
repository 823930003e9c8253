"""Facts about the machine a part of a run ran on (all phases): the manifest's `host`,
and the base of each Dask worker's facts (cluster/clientfacts.py) when the clients are spread
over a cluster."""

from __future__ import annotations

import os
import platform


def host_facts() -> dict:
    """CPU model, cores, memory (bytes), kernel and Python of this machine."""
    import psutil

    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu_model": cpu, "cores": os.cpu_count(), "memory_bytes": psutil.virtual_memory().total,
            "kernel": platform.release(), "python": platform.python_version()}
