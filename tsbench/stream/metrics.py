"""Stream: the per-second figures as a Prometheus text endpoint (--metrics-port), for a
dashboard that scrapes a long run. prometheus_client serves it from a thread on
127.0.0.1; each second's rows update it: counters per writer (tsbench_stream_rows_total,
values, bytes, batches, errors, backoffs), gauges of the distinct series written so far
and of the last second's write latency (quantile 0.5, 0.99, 1 in seconds, from that
second's histogram), and the seconds of the run closed so far. Port 0 takes a free one
(said on stderr)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from tsbench.core.errors import UserError

COUNTED = ("rows", "values", "bytes", "batches", "errors", "backoffs")
QUANTILES = (("0.5", "p50_ms"), ("0.99", "p99_ms"), ("1", "max_ms"))


class MetricsEndpoint:
    def __init__(self, port: int, target: str):
        self.target = target
        reg = CollectorRegistry()
        by_writer = ["target", "writer"]
        self.counters = {k: Counter(f"tsbench_stream_{k}", f"{k} answered by the database, per writer", by_writer,
                                    registry=reg) for k in COUNTED}
        self.series = Gauge("tsbench_stream_series", "distinct series written so far, per writer", by_writer,
                            registry=reg)
        self.latency = Gauge("tsbench_stream_write_latency_seconds", "write latency in the last second, per writer",
                             [*by_writer, "quantile"], registry=reg)
        self.seconds = Gauge("tsbench_stream_seconds", "seconds of the run closed so far", ["target"], registry=reg)
        self.registry, self.port = reg, port

    async def open(self) -> None:
        try:
            self.server, self.thread = start_http_server(self.port, addr="127.0.0.1", registry=self.registry)
        except OSError as exc:
            raise UserError(f"--metrics-port {self.port}: cannot listen on 127.0.0.1: {exc.strerror or exc}") from None
        self.port = self.server.server_address[1]             # the free port taken for --metrics-port 0

    def push(self, rows: list[dict]) -> None:
        """One second's rows (one per writer) into the metrics."""
        for r in rows:
            labels = (self.target, str(r["writer"]))
            for k in COUNTED:
                if r[k]:
                    self.counters[k].labels(*labels).inc(r[k])
            self.series.labels(*labels).set(r["series"])
            for q, key in QUANTILES:
                if r[key] is not None:
                    self.latency.labels(*labels, q).set(r[key] / 1e3)
        if rows:
            self.seconds.labels(self.target).set(rows[0]["second"] + 1)

    async def close(self) -> str | None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
        return None
