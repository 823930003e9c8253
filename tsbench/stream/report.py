"""Stream: the per-second figures pushed while the run goes (--report-url, like inch's
-report-host), as InfluxDB line protocol POSTed to any endpoint that takes it: each
second, one line per writer and one for all writers together (measurement
tsbench_stream; tags target and writer; fields rows, values, bytes, batches, errors,
backoffs, series, p50_ms, p99_ms, max_ms; the time is the second's end). A push runs
beside the writers, bounded by 2 s; a failed one is counted and told at the end, and
never stops the run."""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from tsbench.core.errors import Fatal, Retryable, UserError
from tsbench.databases.shared.http import HttpClient
from tsbench.stream.stats import COUNTS, all_writers

PUSH_TIMEOUT_S = 2.0


def _tag(v: str) -> str:
    return v.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=").replace(" ", "\\ ")


def lines(target: str, rows: list[dict], t_ns: int) -> bytes:
    """The line-protocol lines of one second's rows (one per writer), plus all writers'."""
    total = all_writers(rows)
    out = []
    for writer, r in [*((str(r["writer"]), r) for r in rows), ("all", total)]:
        fields = [f"{k}={r[k]}i" for k in COUNTS] + [f"{k}={r[k]}" for k in ("p50_ms", "p99_ms", "max_ms")
                                                      if r.get(k) is not None]
        out.append(f"tsbench_stream,target={_tag(target)},writer={writer} {','.join(fields)} {t_ns}")
    return ("\n".join(out) + "\n").encode()


def check_url(url: str):
    """The URL split, or one UserError (naming host and port only: the rest may hold credentials)."""
    u = urlsplit(url)
    try:
        ok = u.scheme in ("http", "https") and u.hostname and (u.port or True)
    except ValueError:                   # a port that is not a number
        ok = False
    if not ok:
        raise UserError("--report-url: expected http(s)://HOST:PORT/PATH?QUERY "
                        "(InfluxDB 1.x: http://HOST:8086/write?db=NAME)")
    return u


class LineReport:
    def __init__(self, url: str, target: str):
        u = check_url(url)
        self.path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        self.http = HttpClient(f"{u.scheme}://{u.netloc}", f"--report-url {u.scheme}://{u.hostname}:{u.port or ''}",
                               limit=4, timeout=PUSH_TIMEOUT_S)
        self.target = target
        self.pushed = self.failed = 0
        self.first_failure = ""
        self._pending: set[asyncio.Task] = set()

    async def open(self) -> None:
        await self.http.open()

    def push(self, rows: list[dict]) -> None:
        """Send one second's rows, beside the writers."""
        task = asyncio.create_task(self._post(lines(self.target, rows, time.time_ns())))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _post(self, body: bytes) -> None:
        try:
            await self.http.post(self.path, body)
            self.pushed += 1
        except (Fatal, Retryable) as exc:
            self.failed += 1
            self.first_failure = self.first_failure or str(exc)

    async def close(self) -> str | None:
        """Wait for the pushes under way (each bounded), close; a line on failures, if any."""
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=PUSH_TIMEOUT_S + 1)
        await self.http.close()
        if self.failed:
            return f"--report-url: {self.failed} of {self.pushed + self.failed} pushes failed; the first: " \
                   f"{self.first_failure}"
        return None
