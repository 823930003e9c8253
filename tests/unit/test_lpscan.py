"""The import's line-protocol scanner (csrc/lp_scan.c through native.LpScanner) and the schema
it gathers (tsbench.data.lpscan): golden values worked out in Python from a hand-written file."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsbench.data import lpscan, native

# every value type and spelling, escapes in every place, comments, blank lines, CRLF,
# a line without a timestamp, a negative one, an out-of-order point, a field left out (a null)
GOLDEN = (b"# exported by hand\n"
          b'cpu,host=a\\ b,dc=x\\,y usage=1.5,n=-9223372036854775808i,u=18446744073709551615u,'
          b's="say \\"hi\\" \\\\o/",ok=TRUE 1000\n'
          b"\n"
          b"   # an indented comment\n"
          b'cpu,dc=x\\,y,host=a\\ b usage=-2.5e-3,n=9223372036854775807i,u=0u,s="",ok=f 2000\r\n'
          b"cpu,host=c,dc=z usage=0.1000000000000000055511151231257827,n=1i,u=1u,s=\"a,b c=d\",ok=false 1500\n"
          b"cpu,host=c,dc=z usage=3,n=2i,u=2u,s=\"\",ok=True 3000\n"
          b"cpu,host=c,dc=z usage=4,n=3i,u=3u,s=\"\",ok=t 2500\n"
          b"my\\ meas\\,x,tag\\=k=v\\=1 f\\,1\\=\\ k=10i,g=1E3 -5\n"
          b"my\\ meas\\,x,tag\\=k=v\\=1 f\\,1\\=\\ k=11i\n"
          b"mem,host=a\\ b free=.5,flag=F,t=T,tr=true,fa=FALSE,Tr=True,Fa=False 1\n")


def scan(buf: bytes, precision: str = "ns", caps=(64, 256, 256), max_errors: int = 10) -> native.LpBatch:
    return native.LpScanner(*caps, max_errors).scan(buf, 0, len(buf), 1, precision)


def decode(buf: bytes, b: native.LpBatch) -> list[tuple]:
    """Each point as (line, measurement, tags, fields, time) in Python values, spans as written."""
    a, out, t0, f0 = b.arrays, [], 0, 0
    for i in range(b.points):
        mo = int(a["meas_off"][i])
        tags = [(buf[o:o + kl], buf[o + kl + 1:o + kl + 1 + vl])
                for o, kl, vl in zip(*(a[k][t0:a["tag_end"][i]].tolist() for k in ("tag_off", "tag_klen", "tag_vlen")))]
        fields = []
        for j in range(f0, int(a["field_end"][i])):
            o, kl, vo, vl = (int(a[k][j]) for k in ("field_off", "field_klen", "field_voff", "field_vlen"))
            typ, bits = native.LP_TYPES[a["field_type"][j]], struct.pack("<q", int(a["field_value"][j]))
            val = {"float": struct.unpack("<d", bits)[0], "integer": struct.unpack("<q", bits)[0],
                   "unsigned": struct.unpack("<Q", bits)[0], "boolean": bool(struct.unpack("<q", bits)[0]),
                   "string": buf[vo:vo + vl]}[typ]
            fields.append((buf[o:o + kl], typ, val))
        out.append((int(a["line"][i]), buf[mo:mo + int(a["meas_len"][i])], tags, fields,
                    int(a["time"][i]) if a["has_time"][i] else None))
        t0, f0 = int(a["tag_end"][i]), int(a["field_end"][i])
    return out


def test_values_golden():
    b = scan(GOLDEN, "us")
    assert (b.lines, b.points, b.blank, b.comments, b.errors, b.done, b.used) == (11, 8, 1, 2, 0, True, len(GOLDEN))
    pts = decode(GOLDEN, b)
    assert pts[0] == (2, b"cpu", [(b"host", b"a\\ b"), (b"dc", b"x\\,y")],
                      [(b"usage", "float", 1.5), (b"n", "integer", -2 ** 63), (b"u", "unsigned", 2 ** 64 - 1),
                       (b"s", "string", b'say \\"hi\\" \\\\o/'), (b"ok", "boolean", True)], 1_000_000)
    assert pts[1][0] == 5 and pts[1][3] == [(b"usage", "float", float("-2.5e-3")), (b"n", "integer", 2 ** 63 - 1),
                                            (b"u", "unsigned", 0), (b"s", "string", b""), (b"ok", "boolean", False)]
    assert pts[1][4] == 2_000_000                                          # CRLF: the CR is not the timestamp's
    assert pts[2][3][0] == (b"usage", "float", float("0.1000000000000000055511151231257827"))   # strtod's path
    assert pts[2][3][3] == (b"s", "string", b"a,b c=d")
    assert pts[5] == (9, b"my\\ meas\\,x", [(b"tag\\=k", b"v\\=1")],
                      [(b"f\\,1\\=\\ k", "integer", 10), (b"g", "float", 1000.0)], -5_000)
    assert pts[6][4] is None                                               # no timestamp
    assert [f[2] for f in pts[7][3]] == [0.5, False, True, True, False, True, False]


@pytest.mark.parametrize("precision, factor", [("ns", 1), ("us", 10 ** 3), ("ms", 10 ** 6), ("s", 10 ** 9)])
def test_precisions(precision, factor):
    b = scan(b"m f=1 1451606400\nm f=1 -3\n", precision)
    assert b.arrays["time"].tolist() == [1451606400 * factor, -3 * factor]


def test_time_out_of_range_in_ns():
    b = scan(b"m f=1 9223372036854\nm f=1 9223372036855\n", "ms")
    assert b.points == 1 and b.arrays["err_line"].tolist() == [2]


def test_hashes_ignore_tag_order_and_needless_escapes():
    long = b"x" * 300
    buf = (b"m,a=1,b=2 f=1 1\nm,b=2,a=1 f=1 2\nm,a=1,b=3 f=1 3\n"
           b"m,k=" + long + b"=y f=1 4\nm,k=" + long + b"\\=y f=1 5\n")    # '=' needs no escape in a tag value
    a = scan(buf).arrays
    s = a["series"].tolist()
    assert s[0] == s[1] != s[2] and s[3] == s[4]
    assert a["tag_val"][-1] == a["tag_val"][-2]


BROKEN = [(b'm s="open 1', 9), (b"m f= 1", 5), (b"m f=12xi 1", 7), (b"m f=-1u 1", 8), (b"m f=1 12x", 11),
          (b"m,t=v", 3), (b"m,t f=1", 2), (b"m =1", 4), (b",t=v f=1", 1), (b"m f=1.2.3", 6),
          (b'm s="a"b 1', 10), (b"m f=nan", 6), (b"m f=1,", 4), (b"m ", 3)]


def test_broken_lines_give_their_line_numbers():
    buf = b"# head\n" + b"\n".join(line + b"\nm ok=1 1" for line, _ in BROKEN) + b"\n"
    b = scan(buf, max_errors=100)
    assert b.errors == len(BROKEN) and b.points == len(BROKEN)
    assert b.arrays["err_line"].tolist() == [2 + 2 * i for i in range(len(BROKEN))]
    assert b.arrays["err_code"].tolist() == [code for _, code in BROKEN]


def test_errors_past_the_bound_are_counted():
    b = scan(b"m f=x\n" * 7, max_errors=3)
    assert b.errors == 7 and b.arrays["err_line"].tolist() == [1, 2, 3]


def test_full_arrays_stop_at_a_line_and_resume():
    b = scan(GOLDEN, caps=(3, 100, 100))
    assert not b.done and b.points == 3 and GOLDEN[:b.used].count(b"\n") == b.lines == 6
    rest = native.LpScanner(64, 256, 256).scan(GOLDEN, b.used, len(GOLDEN), b.lines + 1, "ns")
    assert rest.arrays["line"].tolist() == [7, 8, 9, 10, 11]


SCHEMA = {
    "format": "influx", "precision": "us", "series": 4,
    "counts": {"lines": 11, "points": 8, "values": 35, "blank": 1, "comments": 2, "errors": 0, "no_time": 1,
               "file_lines": 11},
    "time": {"min_ns": -5000, "max_ns": 3_000_000},
    "out_of_order": {"points": 1, "share": 1 / 3},
    "measurements": {
        "cpu": {"points": 5, "series": 2,
                "tags": {"dc": {"cardinality": 2, "exact": True}, "host": {"cardinality": 2, "exact": True}},
                "fields": {k: {"type": t, "values": 5, "nulls": 0} for k, t in
                           [("n", "integer"), ("ok", "boolean"), ("s", "string"), ("u", "unsigned"), ("usage", "float")]},
                "time": {"min_ns": 1_000_000, "max_ns": 3_000_000},
                "interval": {"steps": 2, "min_ns": 1_000_000, "p10_ns": 1_000_000, "median_ns": 1_000_000,
                             "p90_ns": 1_000_000, "max_ns": 1_500_000, "regular_share": 0.5},
                "out_of_order": 1, "duplicates": 0},
        "my meas,x": {"points": 2, "series": 1, "tags": {"tag=k": {"cardinality": 1, "exact": True}},
                      "fields": {"f,1= k": {"type": "integer", "values": 2, "nulls": 0},
                                 "g": {"type": "float", "values": 1, "nulls": 1}},
                      "time": {"min_ns": -5000, "max_ns": -5000}, "interval": None, "out_of_order": 0, "duplicates": 0},
        "mem": {"points": 1, "series": 1, "tags": {"host": {"cardinality": 1, "exact": True}},
                "fields": {k: {"type": t, "values": 1, "nulls": 0} for k, t in
                           [("Fa", "boolean"), ("Tr", "boolean"), ("fa", "boolean"), ("flag", "boolean"),
                            ("free", "float"), ("t", "boolean"), ("tr", "boolean")]},
                "time": {"min_ns": 1000, "max_ns": 1000}, "interval": None, "out_of_order": 0, "duplicates": 0}},
    "errors": [], "bounds": {"tag_values_exact_up_to": lpscan.TAG_VALUES_EXACT}}


def test_schema_golden(tmp_path):
    path = tmp_path / "golden.lp"
    path.write_bytes(GOLDEN)
    assert lpscan.scan_file(str(path), "us") == SCHEMA


def test_type_change_names_the_line_and_both_types(tmp_path):
    path = tmp_path / "types.lp"
    path.write_bytes(b"m,h=a x=1 1\nm,h=b x=2 1\n\nm,h=a x=3i 2\nm,h=a x=4i 3\nm,h=a x=\"s\" 4\nm x=1 @\n")
    with pytest.raises(lpscan.LpScanError) as exc:
        lpscan.scan_file(str(path), "ns")
    assert str(exc.value).splitlines() == [
        f"{path}:4: field 'x' of measurement 'm' is integer here, float at line 1",
        f"{path}:6: field 'x' of measurement 'm' is string here, float at line 1",
        f"{path}:7: {native.LP_ERRORS[11]}"]
    assert lpscan.scan_file(str(path), "ns", strict=False)["counts"]["errors"] == 1      # type changes are the schema's


def test_tag_values_estimated_past_the_bound(monkeypatch):
    monkeypatch.setattr(lpscan, "TAG_VALUES_EXACT", 256)
    data = b"".join(b"m,h=%d,k=1 f=1 1\n" % i for i in range(4000))
    tags = lpscan.scan_stream(io.BytesIO(data), "ns")["measurements"]["m"]["tags"]
    assert tags["k"] == {"cardinality": 1, "exact": True}
    assert not tags["h"]["exact"] and abs(tags["h"]["cardinality"] - 4000) < 4000 * 0.25


@settings(max_examples=15, deadline=None, database=None)
@given(st.integers(1, len(GOLDEN) + 8), st.integers(1, 9))
def test_any_chunking_gives_the_same_schema(chunk_bytes, points):
    """Chunks of any size (lines longer than a chunk included) and arrays that fill up anywhere."""
    got = lpscan.scan_stream(io.BytesIO(GOLDEN), "us", chunk_bytes,
                             scanner=native.LpScanner(points, 8 * points, 8 * points))
    assert got == SCHEMA


def test_chunks_are_whole_lines():
    data = b"a\nbb\n" + b"c" * 50 + b"\nd"
    got = [bytes(buf[:n]) for buf, n in lpscan.chunks(io.BytesIO(data), 4)]
    assert b"".join(got) == data and all(c.endswith(b"\n") for c in got[:-1]) and got[-1] == b"d"


def test_steps_regularity():
    data = b"".join(b"m,h=%d f=1 %d\n" % (h, t * 10_000_000_000) for t in range(50) for h in range(3))
    m = lpscan.scan_stream(io.BytesIO(data), "ns")["measurements"]["m"]
    assert m["interval"] == {"steps": 147, "min_ns": 10 ** 10, "p10_ns": 10 ** 10, "median_ns": 10 ** 10,
                             "p90_ns": 10 ** 10, "max_ns": 10 ** 10, "regular_share": 1.0}
    assert np.isclose(m["time"]["max_ns"], 49 * 10 ** 10)


def _hard_floats(n: int) -> list[str]:
    """Shortest texts of random doubles, 17 to 19 digit decimals next to the midpoints between
    two doubles (where a rounding shortcut goes wrong), 19-20 digit integers times 10^+-22."""
    import math
    import random
    from decimal import Decimal, getcontext
    getcontext().prec = 60
    rng, texts = random.Random(7), []
    for _ in range(n):
        d = rng.uniform(1, 1e6) * 10 ** rng.randint(-6, 6)
        mid = (Decimal(d) + Decimal(math.nextafter(d, math.inf))) / 2
        texts.append(repr(d))
        for digits in (17, 18, 19):
            unit = Decimal(1).scaleb(mid.adjusted() - digits + 1)
            q = mid.quantize(unit)
            texts += [format(q, "f"), format(q + unit, "f"), format(q - unit, "f")]
        texts += [f"{rng.randrange(10 ** 18, 2 ** 64)}e-{rng.randint(0, 22)}", f"{rng.randrange(10 ** 18, 2 ** 64)}e{rng.randint(0, 22)}"]
    return texts


def test_floats_round_as_python_does():
    texts = _hard_floats(300)
    buf = "".join(f"m f={t}\n" for t in texts).encode()
    b = native.LpScanner(len(texts), 1, len(texts), 10).scan(buf, 0, len(buf), 1, "ns")
    assert b.points == len(texts)
    got = b.arrays["field_value"].view(np.float64)
    bad = [t for t, g in zip(texts, got.tolist()) if g != float(t)]
    assert not bad, bad[:5]


def test_a_line_larger_than_the_arrays_grows_them():
    wide = b"m,a=1,b=2,c=3 " + b",".join(b"f%d=%di" % (i, i) for i in range(40)) + b" 1\nm,a=1,b=2,c=3 f0=1i 2\n"
    schema = lpscan.scan_stream(io.BytesIO(wide), "ns", scanner=native.LpScanner(1, 2, 16))
    m = schema["measurements"]["m"]
    assert (m["points"], len(m["fields"]), m["fields"]["f39"]["nulls"], len(m["tags"])) == (2, 40, 1, 3)


def test_unescape_names_and_strings():
    pts = decode(GOLDEN, scan(GOLDEN))
    assert lpscan.unescape(pts[0][2][0][1], lpscan.NAME_ESCAPES) == "a b"
    assert lpscan.unescape(pts[5][1], lpscan.MEASUREMENT_ESCAPES) == "my meas,x"
    assert lpscan.unescape(b"a\\=b\\x\\\\", lpscan.NAME_ESCAPES) == "a=b\\x\\\\"    # other backslashes stay
    assert lpscan.unescape_string(pts[0][3][3][2]) == b'say "hi" \\o/'
