"""The null HTTP sink (phase 2): a tiny local server that answers 204 to every
POST /write and counts the records it got, so a load through it measures the
HTTP path alone. A Content-Encoding: gzip body is inflated as it streams in (by
aiohttp) and counted in lines like any other; /count also says how many requests
came gzip'd and the bytes on the wire (their Content-Length). Run by tsbench as `python -m tsbench.databases.null.server PORT`."""

from __future__ import annotations

import json
import pathlib
import sys

from tsbench.databases.shared.server import Server, http_ok


class NullHttpServer(Server):
    kind = "null-http"
    port_names = ("http",)

    def binary(self) -> pathlib.Path | None:
        return pathlib.Path(sys.executable)

    def install(self) -> None:
        pass

    def version(self) -> str:
        return "null-http"

    def command(self, datadir, ports) -> list[str]:
        return [sys.executable, "-m", "tsbench.databases.null.server", str(ports["http"])]

    def ready(self, ports) -> bool:
        return http_ok(f"http://127.0.0.1:{ports['http']}/ping")


def main(port: int) -> None:
    from aiohttp import web

    state = {"rows": 0, "bytes": 0, "requests": 0, "gzip_requests": 0, "wire_bytes": 0}

    async def write(request: web.Request) -> web.Response:
        last = b"\n"
        async for chunk in request.content.iter_any():     # counted as it streams in, never joined
            state["rows"] += chunk.count(b"\n")
            state["bytes"] += len(chunk)
            last = chunk[-1:] or last
        state["rows"] += last != b"\n"
        state["requests"] += 1
        state["gzip_requests"] += request.headers.get("Content-Encoding", "").lower() == "gzip"
        state["wire_bytes"] += request.content_length or 0
        return web.Response(status=204)

    async def reset(request: web.Request) -> web.Response:
        state.update(dict.fromkeys(state, 0))
        return web.Response(status=204)

    async def count(request: web.Request) -> web.Response:
        return web.Response(text=json.dumps(state), content_type="application/json")

    async def ping(request: web.Request) -> web.Response:
        return web.Response(status=204)

    app = web.Application(client_max_size=1 << 30)
    app.add_routes([web.post("/write", write), web.post("/reset", reset), web.get("/count", count),
                    web.get("/ping", ping)])
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main(int(sys.argv[1]))
