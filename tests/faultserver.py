"""A fault-injecting HTTP server for the load tests: it speaks the null-http
sink's API (/ping, /write, /count, /reset) and misbehaves on purpose: answers
503 or a fatal 400 for a number of writes, resets connections, or stalls; serves writes
one at a time for a given time each (a queue: latency grows with the writers); at
GET / it answers 404, or a given JSON document with given headers (a server that
is not what the client expects); with visible_after set, /count of a time window counts
the lines stamped in it whose write was answered that long ago (a database whose writes
become visible late). It runs in a thread of the test process, on 127.0.0.1 and a free port."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
import time

from aiohttp import web


class FaultServer:
    def __init__(self):
        self.faults: list[str] = []       # consumed one per write: "503", "reset", "stall", "fatal"
        self.always: str | None = None    # a fault for every write
        self.stall_seconds = 2.0
        self.fatal_text = 'unable to parse "cpu,host=x usage=": missing field value'   # the fatal 400's words
        self.root: dict | None = None     # a JSON document answered at GET / (None: 404)
        self.root_headers: dict = {}      # and headers sent with it
        self.service_seconds = 0.0       # each write served alone for this long (a queue: more writers, more wait)
        self.visible_after: float | None = None   # seconds; set: /count?start=&end= counts a window, late
        self.stamped: list[tuple[float, list[int]]] = []   # per answered write: its answer time, its lines' timestamps
        self.rows = 0
        self.writes = 0
        self.arrived = 0                 # write requests received (answered or still queued)
        self.refused = 0
        self._serial: asyncio.Lock | None = None
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "FaultServer":
        self._thread.start()
        assert self._started.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        try:    # handlers of requests the client gave up on end with a reset; do not wait on them long
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        except concurrent.futures.TimeoutError:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self) -> None:
        logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)   # resets are the point here
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=1 << 30)
        app.add_routes([web.get("/ping", self._ping), web.post("/write", self._write),
                        web.get("/count", self._count), web.post("/reset", self._reset), web.get("/", self._root)])
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._started.set()
        self._loop.run_forever()

    async def _ping(self, request):
        return web.Response(status=204)

    async def _root(self, request):
        return web.Response(status=404) if self.root is None else web.json_response(self.root, headers=self.root_headers)

    async def _reset(self, request):
        self.rows = 0
        self.stamped = []
        return web.Response(status=204)

    async def _count(self, request):
        rows, q = self.rows, request.query
        if self.visible_after is not None and "start" in q and "end" in q:
            lo, hi, seen = int(q["start"]), int(q["end"]), time.monotonic() - self.visible_after
            rows = sum(lo <= ts < hi for at, stamps in self.stamped if at <= seen for ts in stamps)
        return web.Response(text=json.dumps({"rows": rows}), content_type="application/json")

    async def _write(self, request):
        self.arrived += 1
        fault = self.faults.pop(0) if self.faults else self.always
        if fault == "reset":
            self.refused += 1
            request.transport.abort()          # the connection dies mid-request
            await asyncio.sleep(0.1)
            return web.Response(status=204)
        body = await request.read()
        if fault == "stall":
            self.refused += 1
            await asyncio.sleep(self.stall_seconds)
            return web.Response(status=503, text="stalled")
        if fault == "503":
            self.refused += 1
            return web.Response(status=503, text="overloaded, try again")
        if fault == "fatal":
            self.refused += 1
            return web.Response(status=400, text=self.fatal_text)
        if self.service_seconds:
            self._serial = self._serial or asyncio.Lock()
            async with self._serial:
                await asyncio.sleep(self.service_seconds)
        self.writes += 1
        self.rows += body.count(b"\n")
        if self.visible_after is not None:
            self.stamped.append((time.monotonic(), [int(ln.rsplit(b" ", 1)[1]) for ln in body.splitlines() if ln]))
        return web.Response(status=204)
