"""`tsbench stream` ends (phase 2): after its --duration within a bound however high the
--rate, also on a target whose write never waits (null: the writers used to keep the
event loop, so neither the duration's timer nor a signal was ever served); SIGINT and
SIGTERM mid-stream end it at once with 130 and 143; the same on a real server
(VictoriaMetrics, started once for the module)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import pytest

from conftest import target_url

AFTER_S = 30.0           # the bound past the duration: start-up, the last batch and the count, on a loaded machine
SIGNAL_S = 10.0          # from the signal to the exit
EXIT = {"SIGINT": 130, "SIGTERM": 143}


def _stream(*args: str, timeout: float) -> tuple[int, str, float]:
    """`tsbench stream ARGS` in a subprocess, killed past timeout: (exit code, stderr, seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "tsbench", "stream", *args], stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        pytest.fail(f"stream {' '.join(args)} still going after {timeout:g} s: {err[-2000:]}")
    return p.returncode, err, time.monotonic() - t0


@pytest.mark.parametrize("rate, duration", [("1e9", 2), ("3e6", 3), (None, 2)])
def test_a_null_stream_ends_soon_after_its_duration_however_high_the_rate(rate, duration):
    args = ["-t", "null", "--duration", str(duration), "-q", *(["--rate", rate] if rate else [])]
    code, err, took = _stream(*args, timeout=duration + AFTER_S)
    assert code == 0 and err == "", err
    assert took < duration + AFTER_S


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_ends_a_high_rate_stream_at_once(sig):
    p = subprocess.Popen([sys.executable, "-m", "tsbench", "stream", "-t", "null", "--rate", "1e9",
                          "--duration", "600"], stderr=subprocess.PIPE, text=True)
    try:
        first = _first_line(p, 60.0)                 # the first per-second line: the stream goes
        os.kill(p.pid, getattr(signal, sig))
        sent = time.monotonic()
        code = p.wait(timeout=SIGNAL_S)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail(f"{sig} did not end the stream within {SIGNAL_S:g} s")
    finally:
        if p.poll() is None:
            p.kill()
        err = first + p.stderr.read()
        p.stderr.close()
    assert first.startswith("stream null"), err
    assert code == EXIT[sig] and f"interrupted ({sig})" in err and "Traceback" not in err, err
    assert time.monotonic() - sent < SIGNAL_S


def _first_line(p: subprocess.Popen, seconds: float) -> str:
    """The first line p writes on stderr, or "" if none comes within seconds."""
    ready, _, _ = select.select([p.stderr], [], [], seconds)
    return p.stderr.readline() if ready else ""


@pytest.fixture(scope="module")
def vm_url():
    with target_url("victoriametrics") as url:
        yield url


def test_a_stream_into_a_server_ends_soon_after_its_duration_at_any_rate(vm_url):
    code, err, _ = _stream("-t", "victoriametrics", "-s", vm_url, "--duration", "2", "--rate", "1e9", "-q",
                              "--if-exists", "drop", timeout=2 + AFTER_S)
    assert code == 0 and err == "", err
