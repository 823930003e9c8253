"""The server CPU of load and stream (load/measures.py, phase 2): a server's process tree
keeps the CPU of its children that ended, so the figure never falls when a backend exits."""

from __future__ import annotations

import subprocess
import sys

from tsbench.load.measures import CpuSpent, _cpu_of

# a "server" that starts a child burning about 0.3 CPU s, reaps it, then waits to be stopped
SERVER = """
import subprocess, sys
subprocess.run([sys.executable, "-c", "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.3: pass"])
print("reaped", flush=True)
sys.stdin.read()
"""


class _Res:
    client_cpu_seconds = server_cpu_seconds = None


def test_a_reaped_childs_cpu_stays_in_the_servers_cpu():
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        spent = CpuSpent([server.pid])
        assert server.stdout.readline().strip() == "reaped"
        res = _Res()
        spent.into(res)
        assert res.server_cpu_seconds >= 0.25, res.server_cpu_seconds
        assert _cpu_of([server.pid]) >= spent.server0 + 0.25
    finally:
        server.stdin.close()
        server.wait(timeout=30)
