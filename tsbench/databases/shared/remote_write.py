"""Prometheus remote-write 1.0 request bodies (phase 2: load), for every target that takes them:
a batch of line protocol as one WriteRequest protobuf encoded by the C core
(native.RemoteWriteEncoder: csrc/remote_write.c, which documents the series mapping), then
snappy-compressed (block format, as the protocol asks) by cramjam in one call. No Python per row.
The load phase builds a data file's bodies this way once, before its timed part (data/bodies.py),
and hands them to write() as Prebuilt batch data, which body() passes on as they are."""

from __future__ import annotations

import cramjam

from tsbench.data import native
from tsbench.data.bodies import Prebuilt

# the headers the remote-write 1.0 specification asks of a sender
HEADERS = {"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
           "X-Prometheus-Remote-Write-Version": "0.1.0"}


class RemoteWriteBody:
    """One load worker's encoder: body(data) is the batch on the wire, headers go with it."""

    headers = HEADERS

    def __init__(self):
        self.encoder = native.RemoteWriteEncoder()

    def body(self, data) -> memoryview:
        """data (whole lines of line protocol, ns times) as a snappy-compressed WriteRequest;
        a body built before the timed load (a Prebuilt) as it is."""
        if isinstance(data, Prebuilt):
            return data.body
        return memoryview(cramjam.snappy.compress_raw(self.encoder.encode(data).body))

    async def post(self, http, path: str, data) -> None:
        """data's body POSTed to path with the protocol's headers (http: the target's HttpClient)."""
        await http.post(path, self.body(data), headers=self.headers)


def _allowed(c: int, metric: bool, first: bool) -> bool:
    return (97 <= c <= 122 or 65 <= c <= 90 or c == 95 or (48 <= c <= 57 and not first)
            or (c == 58 and metric))


def series_name(text: str, metric: bool = True) -> str:
    """A metric name (metric) or label name as the encoder writes it: each byte a name may
    not hold (metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]*)
    becomes '_' (csrc/remote_write.c's sanitizing; a query names the series so)."""
    raw = text.encode("utf-8")
    return "".join(chr(c) if _allowed(c, metric, i == 0) else "_" for i, c in enumerate(raw))
