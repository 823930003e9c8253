"""The OTLP metrics encoder of the C core (csrc/otlp.c through native.OtlpEncoder): its
ExportMetricsServiceRequests read back by opentelemetry-proto's classes (a test dependency),
serialized again by the protobuf library to the same bytes, and golden bytes."""

from __future__ import annotations

import hashlib

import pytest

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from tsbench.core.errors import UserError
from tsbench.data import native

from devopslines import devops_batch, samples_by_series

LINES = (b'cpu,zone=z,Abc=x,host=a\\,b\\ c\\=d usage_user=1.5,n=3i,u=5u,b=t,s="text" 1451606400123456789\n'
         b'cpu,zone=z,Abc=x,host=a\\,b\\ c\\=d usage_user=2.5 1451606410000000000\n'
         b'disk,my\\ key=v,host=h used=-1i,zero=0 1000\n'
         b'disk,my\\ key=v,host=h used=2i\n')


def parse(body) -> ExportMetricsServiceRequest:
    msg = ExportMetricsServiceRequest()
    msg.ParseFromString(bytes(body))
    return msg


def metrics(body) -> list[tuple[str, list[tuple[list[tuple[str, str]], int, float]]]]:
    """[(metric name, [(attributes [(key, value)], time ns, value)])], after checking the envelope:
    one ResourceMetrics and one ScopeMetrics, neither with a resource nor a scope, every metric a gauge."""
    msg = parse(body)
    assert len(msg.resource_metrics) == 1
    rm = msg.resource_metrics[0]
    assert not rm.HasField("resource") and len(rm.scope_metrics) == 1
    sm = rm.scope_metrics[0]
    assert not sm.HasField("scope")
    out = []
    for m in sm.metrics:
        assert m.WhichOneof("data") == "gauge"
        points = []
        for p in m.gauge.data_points:
            assert p.WhichOneof("value") == "as_double" and p.start_time_unix_nano == 0
            points.append(([(a.key, a.value.string_value) for a in p.attributes], p.time_unix_nano, p.as_double))
        out.append((m.name, points))
    return out


def test_names_attributes_times_and_values():
    r = native.OtlpEncoder().encode(LINES)
    cpu = [("zone", "z"), ("Abc", "x"), ("host", "a,b c=d")]        # unescaped, in the line's order
    disk = [("my key", "v"), ("host", "h")]
    assert metrics(r.body) == [
        ("cpu_usage_user", [(cpu, 1451606400123456789, 1.5), (cpu, 1451606410000000000, 2.5)]),
        ("cpu_n", [(cpu, 1451606400123456789, 3.0)]),
        ("cpu_u", [(cpu, 1451606400123456789, 5.0)]),
        ("cpu_b", [(cpu, 1451606400123456789, 1.0)]),
        ("disk_used", [(disk, 1000, -1.0), (disk, 0, 2.0)]),             # no timestamp: time 0, left out
        ("disk_zero", [(disk, 1000, 0.0)]),
    ]
    assert (r.series, r.samples, r.skipped) == (6, 8, 1)


def test_the_protobuf_librarys_own_bytes():
    """Fields in number order, a time 0 left out, as_double 0 written (a oneof member): parsed and
    serialized again by the library, the body is the same bytes."""
    body = bytes(native.OtlpEncoder().encode(LINES).body)
    assert parse(body).SerializeToString() == body
    zero = bytes(native.OtlpEncoder().encode(b"m a=0\n").body)
    assert zero.endswith(bytes.fromhex("0a09210000000000000000"))   # a data point: as_double 0, no time
    assert parse(zero).SerializeToString() == zero


def test_golden_bytes():
    body = bytes(native.OtlpEncoder().encode(LINES).body)
    assert len(body) == 546
    assert hashlib.sha256(body).hexdigest()[:16] == "47f61051be0e3971"


def test_devops_batch_against_its_lines(tmp_path):
    data = devops_batch(tmp_path)
    want, values = samples_by_series(data)
    r = native.OtlpEncoder().encode(data)
    got: dict[tuple, list] = {}
    for name, points in metrics(r.body):
        for attrs, t, v in points:
            got.setdefault((name, tuple(attrs)), []).append((t, v))
    assert got == want
    assert (r.series, r.samples) == (len(want), values)
    assert parse(r.body).SerializeToString() == bytes(r.body)


def test_a_line_that_is_not_line_protocol_is_a_user_error():
    with pytest.raises(UserError, match="otlp: line 2 of a batch is not line protocol: no field set"):
        native.OtlpEncoder().encode(b"cpu,host=a usage=1 1\ncpu,host=a\n")
