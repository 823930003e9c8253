"""OpenTelemetry OTLP/HTTP metrics request bodies (phase 2: load), for every target that takes
them: a batch of line protocol as one ExportMetricsServiceRequest protobuf encoded by the C core
(native.OtlpEncoder: csrc/otlp.c, which documents the mapping: a gauge per series named
measurement_field, the tags as attributes), gzip'd when the target's gzip option asks (as OTLP
exporters do). No Python per row."""

from __future__ import annotations

from tsbench.data import native
from tsbench.databases.shared.http import Gzip, GzipOption

CONTENT_TYPE = "application/x-protobuf"      # OTLP/HTTP's binary protobuf encoding


class OtlpBody:
    """One load worker's encoder: await body(data) is the batch on the wire, headers go with it."""

    def __init__(self, options: GzipOption):
        self.encoder = native.OtlpEncoder()
        self.gzip = Gzip(options, {"Content-Type": CONTENT_TYPE})
        self.headers = self.gzip.headers

    async def body(self, data):
        """data (whole lines of line protocol, ns times) as an ExportMetricsServiceRequest: its own
        bytes (the encoder's buffer is its next batch's while this one is on the wire)."""
        msg = self.encoder.encode(data).body
        return await self.gzip.body(msg) if self.gzip.level is not None else bytes(msg)
