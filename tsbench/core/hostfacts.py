"""Facts about the machine a part of a run ran on (all phases): the manifest's `host`,
and each Dask worker's facts when the clients are spread over a cluster."""

from __future__ import annotations

import os
import platform
import socket


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


def client_facts() -> dict:
    """host_facts plus the host's name and the tsbench that runs there: its version and
    the build id of its C core (a hash of the C sources it was compiled from)."""
    from tsbench import __version__
    from tsbench.data import native

    return {**host_facts(), "hostname": socket.gethostname(), "tsbench": __version__,
            "build": native.ffi.string(native.lib.ts_build_id()).decode()}
