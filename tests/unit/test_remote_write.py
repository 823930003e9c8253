"""The remote-write encoder of the C core (csrc/remote_write.c through native.RemoteWriteEncoder):
its WriteRequests read back by a small protobuf reader written here (test-only), and golden bytes."""

from __future__ import annotations

import hashlib
import struct

import cramjam
import pytest

from tsbench.core.errors import UserError
from tsbench.data import native
from tsbench.databases.shared.remote_write import HEADERS, RemoteWriteBody

from devopslines import devops_batch, samples_by_series


def varint(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b: bytes) -> list[tuple[int, object]]:
    """A message's (field number, value) in order: bytes for length-delimited, ints, doubles."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        num, wire = key >> 3, key & 7
        if wire == 2:
            n, i = varint(b, i)
            out.append((num, b[i:i + n]))
            i += n
        elif wire == 0:
            v, i = varint(b, i)
            out.append((num, v - (1 << 64) if v >= 1 << 63 else v))
        elif wire == 1:
            out.append((num, struct.unpack("<d", b[i:i + 8])[0]))
            i += 8
        else:
            raise AssertionError(f"wire type {wire}")
    return out


def decode(body: bytes) -> list[tuple[list[tuple[str, str]], list[tuple[float, int]]]]:
    """WriteRequest -> [(labels [(name, value)] as sent, samples [(value, ms)])]."""
    series = []
    for num, ts in fields(body):
        assert num == 1
        labels, samples = [], []
        for n, m in fields(ts):
            f = dict(fields(m))
            if n == 1:
                labels.append((f[1].decode(), f[2].decode()))
            else:
                assert n == 2
                samples.append((f.get(1, 0.0), f.get(2, 0)))     # proto3: a field of value 0 is left out
        series.append((labels, samples))
    return series


LINES = (b'cpu,zone=z,Abc=x,host=a\\,b\\ c\\=d usage_user=1.5,n=3i,u=5u,b=t,s="text" 1451606400123456789\n'
         b'cpu,zone=z,Abc=x,host=a\\,b\\ c\\=d usage_user=2.5 1451606410000000000\n'
         b'disk,my\\ key=v,host=h used=-1i -1\n')


def test_labels_values_and_times():
    r = native.RemoteWriteEncoder().encode(LINES)
    got = decode(bytes(r.body))
    tags = [("Abc", "x"), ("host", "a,b c=d"), ("zone", "z")]

    def labels(name):
        return sorted(tags + [("__name__", name)])

    assert got == [
        (labels("cpu_usage_user"), [(1.5, 1451606400123), (2.5, 1451606410000)]),
        (labels("cpu_n"), [(3.0, 1451606400123)]),
        (labels("cpu_u"), [(5.0, 1451606400123)]),
        (labels("cpu_b"), [(1.0, 1451606400123)]),
        ([("__name__", "disk_used"), ("host", "h"), ("my_key", "v")], [(-1.0, -1)]),
    ]
    assert [n for n, _ in got[0][0]] == ["Abc", "__name__", "host", "zone"]   # bytes order: 'A' < '_' < 'h'
    assert (r.series, r.samples, r.skipped) == (5, 6, 1)


def test_zeros_left_out_as_proto3_does():
    body = bytes(native.RemoteWriteEncoder().encode(b"m a=0,b=-0.0,c=0i 0\nm a=1 1000000\n").body)
    series = decode(body)
    assert [s for _, s in series] == [[(0.0, 0), (1.0, 1)], [(-0.0, 0)], [(0.0, 0)]]
    assert str(series[1][1][0][0]) == "-0.0"                  # -0.0's bits are not 0: written
    assert body.count(b"\x12\x00") == 2                      # a+0 and c=0i at time 0: empty samples


def test_golden_bytes():
    body = bytes(native.RemoteWriteEncoder().encode(LINES).body)
    assert len(body) == 406
    assert hashlib.sha256(body).hexdigest()[:16] == "3ca89e3b38d130d9"


@pytest.mark.parametrize("encoder", [native.RemoteWriteEncoder, native.OtlpEncoder])
def test_small_buffers_grow_and_an_empty_batch_is_an_empty_request(encoder):
    """Both encoders of series protocols (the same growth loop in native._SeriesEncoder)."""
    want = bytes(encoder().encode(LINES).body)
    enc = encoder(points=1, fields=1, out_bytes=8)
    assert bytes(enc.encode(LINES).body) == want
    assert bytes(enc.encode(LINES).body) == want     # the grown arrays reused
    r = enc.encode(b"# a comment only\n\n")
    assert (bytes(r.body), r.series, r.samples) == (b"", 0, 0)


def test_devops_batch_against_its_lines(tmp_path):
    data = devops_batch(tmp_path)
    series, values = samples_by_series(data)
    want = {tuple(sorted([("__name__", name), *tags])): [(v, t // 1_000_000) for t, v in samples]
            for (name, tags), samples in series.items()}
    r = native.RemoteWriteEncoder().encode(data)
    got = {tuple(labels): samples for labels, samples in decode(bytes(r.body))}
    assert got == want
    assert (r.series, r.samples) == (len(want), values)


def test_a_line_that_is_not_line_protocol_is_a_user_error():
    with pytest.raises(UserError, match="remote-write: line 2 of a batch is not line protocol: no field set"):
        native.RemoteWriteEncoder().encode(b"cpu,host=a usage=1 1\ncpu,host=a\n")


def test_snappy_body_inflates_to_the_write_request():
    want = bytes(native.RemoteWriteEncoder().encode(LINES).body)
    assert bytes(cramjam.snappy.decompress_raw(RemoteWriteBody().body(LINES))) == want
    assert HEADERS["Content-Encoding"] == "snappy" and HEADERS["X-Prometheus-Remote-Write-Version"] == "0.1.0"
