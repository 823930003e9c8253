"""The facts of one client process of a run (phases 2 and 4 with --cluster): its host's
(core/hostfacts.py) and the tsbench it runs, version and C-core build, which the driver
compares across the Dask workers (facts.py)."""

from __future__ import annotations

import socket

from tsbench.core.hostfacts import host_facts


def client_facts() -> dict:
    """host_facts plus the host's name and the tsbench that runs there: its version and
    the build id of its C core (a hash of the C sources it was compiled from)."""
    from tsbench import __version__
    from tsbench.data import native

    return {**host_facts(), "hostname": socket.gethostname(), "tsbench": __version__,
            "build": native.ffi.string(native.lib.ts_build_id()).decode()}
