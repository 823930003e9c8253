"""Rendering CSV parts through templates in C (phase 2: load): golden bytes for
each encoding, the ends offsets, errors, and real generated batches checked
against Python's csv module."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import struct

import bson
import numpy as np
import pytest

from tsbench.core.errors import UserError
from tsbench.data import native
from tsbench.data.batches import BatchReader, csv_layout
from tsbench.data.datafile import open_datafile

from conftest import run_cli

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def render(ops, data: bytes) -> tuple[bytes, list[int]]:
    out, ends = native.render(native.Template(ops), data, 0, len(data))
    assert ends.dtype == np.uint64
    return bytes(out), [int(e) for e in ends]


def lines(ops, data: bytes) -> list[bytes]:
    out, ends = render(ops, data)
    return [out[a:b] for a, b in zip([0, *ends], ends)]


def es_ops(index: str, tags: list[str], fields: list[str]) -> list[tuple]:
    """An ES bulk action and document per line: null tags and fields left out."""
    ops = [("lit", b'{"index":{"_index":"%s"}}\n{"time":"' % index.encode()), ("col", 0, "raw"), ("lit", b'"')]
    for i, name in enumerate(tags + fields, start=1):
        enc = "json" if i <= len(tags) else "raw"
        ops += [("if", i, 2), ("lit", b',"%s":' % name.encode()), ("col", i, enc)]
    return ops + [("lit", b"}\n")]


# ---- golden values ----------------------------------------------------------------------

def test_es_ndjson_golden():
    ops = es_ops("cpu", ["hostname", "region"], ["usage_user", "usage_system"])
    data = (b"2016-01-01T00:00:00Z,host_0,eu-west-1,1.5,2\n"
            b"2016-01-01T00:00:10.123Z,host_1,,,-3\n"                 # a null tag and a null field
            b'2016-01-01T00:00:20Z,"h\\""1\t",,,\n')                   # escapes; all nulls after the tag
    out, ends = render(ops, data)
    want = [b'{"index":{"_index":"cpu"}}\n{"time":"2016-01-01T00:00:00Z","hostname":"host_0",'
            b'"region":"eu-west-1","usage_user":1.5,"usage_system":2}\n',
            b'{"index":{"_index":"cpu"}}\n{"time":"2016-01-01T00:00:10.123Z","hostname":"host_1",'
            b'"usage_system":-3}\n',
            b'{"index":{"_index":"cpu"}}\n{"time":"2016-01-01T00:00:20Z","hostname":"h\\\\\\"1\\t"}\n']
    assert out == b"".join(want)
    assert ends == list(np.cumsum([len(w) for w in want]))
    assert [json.loads(w.split(b"\n")[1]) for w in want][2] == {"time": "2016-01-01T00:00:20Z",
                                                                  "hostname": 'h\\"1\t'}


def test_json_inside_a_string_golden():
    data = b'2016-01-01T00:00:00.0000015Z,"O\'Brien ""the"" host"\n'
    assert render([("lit", b'"'), ("col", 1, "jsonin"), ("lit", b'"')], data)[0] == b'"O\'Brien \\"the\\" host"'


def ref_ns(t: str) -> int:
    """The epoch ns of an RFC 3339 UTC time, in Python (the test's reference)."""
    whole, frac = t[:19], t[20:-1]
    secs = (dt.datetime.fromisoformat(whole).replace(tzinfo=dt.timezone.utc) - EPOCH) // dt.timedelta(seconds=1)
    return secs * 10**9 + int(frac.ljust(9, "0") or 0)


TIMES = ["1970-01-01T00:00:00Z", "2016-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.9Z",
         "1969-12-31T23:59:59.999999999Z", "1969-12-31T23:59:59.0000001Z", "1900-02-28T23:59:59.5Z",
         "2000-02-29T12:00:00.25Z", "2016-01-01T00:00:10.123456789Z", "1677-09-21T00:12:43.145224192Z",
         "2262-04-11T23:47:16.854775807Z", "1800-03-01T00:00:00.000001Z"]
TIMES += [f"1969-12-31T23:59:58.{'123456789'[:k]}Z" for k in range(1, 10)]
TIMES += [f"2016-06-30T23:59:59.{'987654321'[:k]}Z" for k in range(1, 10)]


def test_sep_is_left_out_first_in_an_object_or_array_golden():
    """A separator before each member an IF may leave out: never first in an object or
    array, never at the line's start, always between two members."""
    ops = [("sep", b","), ("lit", b"["), ("if", 1, 2), ("sep", b","), ("col", 1, "json"), ("lit", b",{"),
           ("if", 2, 2), ("sep", b","), ("col", 2, "raw"), ("if", 3, 2), ("sep", b","), ("col", 3, "raw"),
           ("lit", b"}]")]
    assert lines(ops, b"t,a,1,2\nt,,1,2\nt,a,,2\nt,a,1,\nt,,,\n") == [
        b'["a",{1,2}]', b'[,{1,2}]', b'["a",{2}]', b'["a",{1}]', b'[,{}]']


def test_time_encodings_golden():
    assert [ref_ns(t) for t in TIMES[:6]] == [0, 1451606400000000000, -10**9, -100000000, -1, -999999900]
    ops = [("col", 0, "ns"), ("lit", b" "), ("col", 0, "ms"), ("lit", b" "), ("col", 0, "subms"),
           ("lit", b" "), ("col", 0, "day"), ("lit", b"\n")]
    got = lines(ops, "".join(f"{t},x\n" for t in TIMES).encode())
    want = [f"{ref_ns(t)} {ref_ns(t) // 10**6} {ref_ns(t) % 10**6} {t[:10]}\n".encode() for t in TIMES]
    assert got == want
    assert got[4] == b"-1 -1 999999 1969-12-31\n"
    assert got[9] == b"-9223372036854775808 -9223372036855 224192 1677-09-21\n"
    assert got[10] == b"9223372036854775807 9223372036854 775807 2262-04-11\n"


def test_cql_binary_time_values_golden():
    """Each a [bytes]: bigint ns, timestamp (ms, floor), int ns within the ms, date (days + 2^31)."""
    ops = [("col", 0, e) for e in ("v_ns", "v_ms", "v_subms", "v_date")]
    got = lines(ops, "".join(f"{t},x\n" for t in TIMES).encode())
    want = [struct.pack(">iqiqiiiI", 8, ref_ns(t), 8, ref_ns(t) // 10**6, 4, ref_ns(t) % 10**6, 4,
                        ref_ns(t) // (86400 * 10**9) + 2**31) for t in TIMES]
    assert got == want
    assert got[4][-4:] == struct.pack(">I", 2**31 - 1)          # 1969-12-31: day -1


def test_cql_binary_values_golden():
    data = (b'2016-01-01T00:00:00Z,"O\'Brien ""x""",0.1,-9223372036854775808,,-0\n'
            b'2016-01-01T00:00:00Z,\xc3\xa9,1e300,9223372036854775807,"",5e-324\n')
    ops = [("col", 1, "v_text"), ("col", 2, "v_double"), ("col", 3, "v_bigint"), ("col", 4, "v_text"),
           ("col", 5, "v_double")]
    got = lines(ops, data)
    assert got[0] == (struct.pack(">i", 11) + b"O'Brien \"x\"" + struct.pack(">id", 8, 0.1)
                      + struct.pack(">iq", 8, -2**63) + struct.pack(">i", -2)       # NULL: unset
                      + struct.pack(">id", 8, -0.0))
    assert got[1] == (struct.pack(">i", 2) + "é".encode() + struct.pack(">id", 8, 1e300)
                      + struct.pack(">iq", 8, 2**63 - 1) + struct.pack(">i", 0)     # "": an empty text
                      + struct.pack(">id", 8, 5e-324))


def test_open_close_make_one_value_of_several_ops():
    data = b"2016-01-02T03:04:05Z,host_0,,7\n2016-01-02T03:04:05Z,,eu,\n"
    key = [("open",), ("lit", b"cpu"), ("if", 1, 2), ("lit", b",h="), ("col", 1, "raw"),
           ("if", 2, 2), ("lit", b",r="), ("col", 2, "raw"), ("lit", b"#"), ("col", 0, "day"), ("close",),
           ("col", 3, "v_bigint")]
    got = lines(key, data)
    assert got[0] == struct.pack(">i", 23) + b"cpu,h=host_0#2016-01-02" + struct.pack(">iq", 8, 7)
    assert got[1] == struct.pack(">i", 19) + b"cpu,r=eu#2016-01-02" + struct.pack(">i", -2)
    for bad in ([("open",)], [("close",)], [("close",), ("open",)], [("open",)] * 5 + [("close",)] * 5,
                [("open", "json"), ("close",)]):
        with pytest.raises(ValueError, match="needs its|not valid"):
            native.Template(bad)


def test_bson_documents_golden():
    """A document per line, a nested one for the tags, null elements left out: the bytes
    pymongo's own encoder writes for the same dict."""
    data = (b'2016-01-01T00:00:10.123Z,host_0,"eu ""1""",1.5,-7\n'
            b"1969-12-31T23:59:59.9995Z,,,,\n")
    ops = [("open", "bson"), ("lit", b"\x09time\x00"), ("col", 0, "b_date"), ("lit", b"\x03tags\x00"),
           ("open", "bson")]
    for i, tag in ((1, b"hostname"), (2, b"region")):
        ops += [("if", i, 2), ("lit", b"\x02" + tag + b"\x00"), ("col", i, "b_string")]
    ops += [("close",), ("if", 3, 2), ("lit", b"\x01usage\x00"), ("col", 3, "b_double"),
            ("if", 4, 2), ("lit", b"\x12n\x00"), ("col", 4, "b_int64"), ("close",)]
    got = lines(ops, data)
    t0 = dt.datetime(2016, 1, 1, 0, 0, 10, 123000, tzinfo=dt.timezone.utc)
    assert got[0] == bson.encode({"time": t0, "tags": {"hostname": "host_0", "region": 'eu "1"'},
                                  "usage": 1.5, "n": bson.int64.Int64(-7)})
    assert got[1] == bson.encode({"time": bson.datetime_ms.DatetimeMS(-1), "tags": {}})     # ms floor


@pytest.mark.parametrize("enc,bad", [("v_double", "1.5x"), ("v_double", " 1"), ("v_double", "1" * 70),
                                     ("v_bigint", "1.5"), ("v_bigint", "9223372036854775808"),
                                     ("v_bigint", "-"), ("v_bigint", "12a")])
def test_a_value_that_is_not_a_number_is_one_line(enc, bad):
    data = f"2016-01-01T00:00:00Z,1\n2016-01-01T00:00:00Z,{bad}\n".encode()
    with pytest.raises(native.CsvRenderError) as e:
        native.render(native.Template([("col", 1, enc)]), data, 0, len(data))
    assert "column 1 is not a number" in str(e.value) and repr(f"2016-01-01T00:00:00Z,{bad}") in str(e.value)


def test_quoting_nulls_and_bytes():
    data = ('2016-01-01T00:00:00Z,"a,b",,"",é\u00fc\u4e2d,"x\n""y"""\r\n'
            '\n'                                        # a blank line renders nothing
            '2016-01-01T00:00:01Z,plain,"",,"\x01",z').encode()   # no final newline
    ops = [("col", 1, "raw")]
    for i in (2, 3, 4, 5):
        ops += [("lit", b"|"), ("if", i, 1), ("col", i, "json")]
    ops.append(("lit", b"\n"))
    out, ends = render(ops, data)
    first = 'a,b||""|"éü中"|"x\\n\\"y\\""\n'.encode()
    assert out == first + b'plain|""||"\\u0001"|"z"\n'
    assert ends == [len(first), len(out)]
    assert render([("col", 5, "raw"), ("lit", b";")], data)[0] == b'x\n"y";z;'
    assert render([("col", 3, "v_text"), ("col", 2, "v_text")], data)[0] == (
        struct.pack(">iiii", 0, -2, -2, 0))                # "" is an empty text, a NULL unset


def test_offset_and_length_and_empty():
    data = b"junk\n2016-01-01T00:00:00Z,a\n2016-01-01T00:00:01Z,b\ntail"
    start = data.index(b"2016")
    out, ends = native.render(native.Template([("col", 1, "raw")]), memoryview(data), start, len(data) - start - 4)
    assert (bytes(out), list(ends)) == (b"ab", [1, 2])
    out, ends = native.render(native.Template([("col", 1, "raw")]), data, 3, 0)
    assert (bytes(out), len(ends)) == (b"", 0)


def test_grows_the_output():
    """Worst-case escaping needs far more room than the first guess: the call resumes."""
    data = b"t,\x01\x01\x01\x01\x01\x01\x01\x01\n" * 5000
    ops = [("col", 1, "json")] * 4 + [("lit", b"\n")]
    out, ends = render(ops, data)
    one = b'"' + b"\\u0001" * 8 + b'"'
    assert out == (one * 4 + b"\n") * 5000
    assert ends[:2] == [len(one) * 4 + 1, 2 * (len(one) * 4 + 1)] and len(ends) == 5000


# ---- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["2016-13-01T00:00:00Z", "2015-02-29T00:00:00Z", "2016-01-01T24:00:00Z",
                                 "2016-01-01T00:00:00", "2016-01-01 00:00:00Z", "2016-01-01T00:00:00.Z",
                                 "2016-01-01T00:00:00.1234567890Z", "2016-01-01T00:00:0xZ",
                                 "2262-04-11T23:47:16.854775808Z", "", "1"])
def test_malformed_time(bad):
    data = f"2016-01-01T00:00:00Z,a\n{bad},host_9\n".encode()
    with pytest.raises(native.CsvRenderError) as e:
        native.render(native.Template([("col", 0, "ms")]), data, 0, len(data))
    assert isinstance(e.value, UserError)
    assert "column 0 is not a time" in str(e.value) and repr(f"{bad},host_9") in str(e.value)
    assert "\n" not in str(e.value)


def test_other_errors():
    data = b'2016-01-01T00:00:00Z,a\n2016-01-01T00:00:00Z\n'
    with pytest.raises(native.CsvRenderError, match=r"no column 1, in the line '2016-01-01T00:00:00Z'$"):
        native.render(native.Template([("if", 1, 0)]), data, 0, len(data))
    for bad in (b't,"abc\n', b't,"a"b\n'):
        with pytest.raises(native.CsvRenderError, match="malformed CSV line"):
            native.render(native.Template([("col", 1, "raw")]), bad, 0, len(bad))
    for ops in ([("col", 0, "hex")], [("col", 0, "cql")], [("if", 0, 1)], [("lit", "str")], [("col", -1, "raw")],
                [("x",)]):
        with pytest.raises(ValueError):
            native.Template(ops)


# ---- real batches -------------------------------------------------------------------------

@pytest.fixture(scope="module", params=[("devops", []), ("iot", ["-P", "null_tag=0.3", "-P", "null_field=0.3"])])
def datafile(request, tmp_path_factory):
    use_case, extra = request.param
    out = tmp_path_factory.mktemp("render") / f"{use_case}.csv"
    run_cli("generate", "-q", "--use-case", use_case, "--scale", "2", "--end", "2016-01-01T00:10:00Z",
            "--seed", "1", "--format", "csv", "-o", str(out), *extra)
    return open_datafile(out)


def parts(df):
    """(table, split part bytes) of every batch, as a CSV loader sees them."""
    tables = list(df.tables())
    layout = csv_layout(df.tables())
    for b in BatchReader(df.path, df.format, 97, df.compression, layout):
        buf, cuts = native.split_csv(layout, b.data)
        for t, c in zip(tables, cuts):
            if c is not None:
                off, n, rows, _ = c
                yield t, buf, off, n, rows


def test_real_batches_as_json(datafile):
    templates = {t.name: native.Template(es_ops(t.name, list(t.tags), list(t.field_names)))
                 for t in datafile.tables()}
    seen = 0
    for t, buf, off, n, rows in parts(datafile):
        out, ends = native.render(templates[t.name], buf, off, n)
        text = bytes(out).split(b"\n")
        assert len(ends) == rows and int(ends[-1]) == len(out) and len(text) == 2 * rows + 1
        ref = list(csv.reader(io.StringIO(bytes(buf[off: off + n]).decode(), newline="")))
        for i, row in enumerate(ref):
            want = {"time": row[0]}
            for name, v in zip(t.tags, row[1:]):
                if v != "":
                    want[name] = v
            for name, v in zip(t.field_names, row[1 + len(t.tags):]):
                if v != "":
                    want[name] = float(v)
            assert json.loads(text[2 * i]) == {"index": {"_index": t.name}}
            assert json.loads(text[2 * i + 1]) == want
        seen += rows
    assert seen == datafile.rows


def test_real_batches_times(datafile):
    tpl = native.Template([("col", 0, "ns"), ("lit", b","), ("col", 0, "ms"), ("lit", b","),
                           ("col", 0, "subms"), ("lit", b","), ("col", 0, "day"), ("lit", b"\n")])
    for _t, buf, off, n, rows in parts(datafile):
        out, _ = native.render(tpl, buf, off, n)
        times = [line.split(b",", 1)[0].decode() for line in bytes(buf[off: off + n]).splitlines()]
        want = "".join(f"{ref_ns(s)},{ref_ns(s) // 10**6},{ref_ns(s) % 10**6},{s[:10]}\n" for s in times)
        assert bytes(out) == want.encode()
