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
