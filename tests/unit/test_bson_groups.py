"""Grouping rendered BSON documents by key in C (phase 2: load, MongoDB's bucket
layout; native.bson_groups over ts_bson_groups), and the b_hour encoding its keys
use: golden bytes (pymongo's own encoder writes the same documents), groups in
the order of their first line, lines in order within a group, array keys past
"9", an empty part, refused input. No server."""

from __future__ import annotations

import datetime as dt
import random

import bson
import numpy as np
import pytest
from bson.codec_options import DatetimeConversion
from bson.raw_bson import RawBSONDocument

from tsbench.core.model import Column, Table
from tsbench.data import native
from tsbench.databases.mongodb.documents import EVENTS, bucket_key_ops, event_ops

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
CPU = Table("cpu", ("hostname", "region"), (Column("usage_user", "float"), Column("n", "int"),
                                            Column("note", "string")))


def render(ops, data: bytes):
    return native.render(native.Template(ops), data, 0, len(data))


def split(buf, ends) -> list[bytes]:
    return [bytes(buf[a:b]) for a, b in zip([0, *ends.tolist()], ends.tolist())]


def groups(data: bytes, table: Table = CPU, name: bytes = EVENTS.encode()):
    """(filters, updates) of a CSV part of `table`, each a list of BSON documents' bytes."""
    keys, kends = render(bucket_key_ops(table), data)
    docs, dends = render(event_ops(table), data)
    f, fends, u, uends = native.bson_groups(keys, kends, docs, dends, name)
    assert fends.dtype == np.uint64 and uends.dtype == np.uint64 and len(fends) == len(uends)
    return split(f, fends), split(u, uends)


def ms(t: str) -> bson.datetime_ms.DatetimeMS:
    return bson.datetime_ms.DatetimeMS((dt.datetime.fromisoformat(t[:19]).replace(tzinfo=UTC) - EPOCH)
                                       // dt.timedelta(milliseconds=1) + int((t[20:-1] or "0")[:3].ljust(3, "0")))


# ---- b_hour ---------------------------------------------------------------------------------

HOURS = [("1970-01-01T00:00:00Z", 0), ("2016-01-01T00:59:59.999999999Z", 1451606400000),
         ("2016-01-01T01:00:00Z", 1451610000000), ("2016-02-29T23:30:00.5Z", 1456786800000),
         ("1969-12-31T23:59:59.9995Z", -3600000), ("1969-12-31T23:00:00Z", -3600000),
         ("1969-12-31T22:59:59.999999999Z", -7200000), ("1677-09-21T00:12:43.145224192Z", -9223372800000),
         ("2262-04-11T23:47:16.854775807Z", 9223369200000)]


def test_b_hour_is_the_time_floored_to_its_utc_hour_golden():
    data = "".join(f"{t},x\n" for t, _ in HOURS).encode()
    out, ends = render([("open", "bson"), ("lit", b"\x09h\x00"), ("col", 0, "b_hour"), ("lit", b"\x09t\x00"),
                        ("col", 0, "b_date"), ("close",)], data)
    got = split(out, ends)
    assert got == [bson.encode({"h": bson.datetime_ms.DatetimeMS(h), "t": ms(t)}) for t, h in HOURS]
    for (t, h), doc in zip(HOURS, got):       # independently: the hour of the time's ms, floored
        t_ms = bson.decode(doc, codec_options=bson.CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_MS))["t"]
        assert h == int(t_ms) // 3_600_000 * 3_600_000 and h % 3_600_000 == 0


def test_b_hour_of_a_value_that_is_not_a_time_is_one_line():
    with pytest.raises(native.CsvRenderError, match="column 0 is not a time"):
        render([("col", 0, "b_hour")], b"2016-01-01 00:00:00,x\n")


# ---- bson_groups ---------------------------------------------------------------------------

def test_groups_of_a_part_golden():
    """Keys (series, hour) in the order first seen; each group's events in line order; a null tag
    is another series, a null field no element; the bytes pymongo's own encoder writes."""
    data = (b"2016-01-01T00:59:50Z,host_0,eu,1.5,1,a\n"
            b"2016-01-01T00:59:50Z,host_1,eu,2.5,2,\n"
            b"2016-01-01T01:00:00Z,host_0,eu,3.5,,b\n"        # host_0's next hour
            b"2016-01-01T00:59:59.999Z,host_0,eu,,4,\n"       # back to host_0's first hour
            b"2016-01-01T00:59:55Z,host_1,,5.5,5,c\n"         # host_1 without region: another series
            b"\n"                                              # a blank line renders nothing
            b'2016-01-01T00:00:00.0001Z,host_1,eu,-0.0,-9223372036854775808,"x,""y"""\n')
    filters, updates = groups(data)
    h0, h1 = dt.datetime(2016, 1, 1, tzinfo=UTC), dt.datetime(2016, 1, 1, 1, tzinfo=UTC)
    t = lambda s: dt.datetime.fromisoformat(s).replace(tzinfo=UTC)  # noqa: E731
    want = [({"tags": {"hostname": "host_0", "region": "eu"}, "hour": h0},
             [{"time": t("2016-01-01T00:59:50"), "usage_user": 1.5, "n": bson.Int64(1), "note": "a"},
              {"time": t("2016-01-01T00:59:59.999"), "n": bson.Int64(4)}]),
            ({"tags": {"hostname": "host_1", "region": "eu"}, "hour": h0},
             [{"time": t("2016-01-01T00:59:50"), "usage_user": 2.5, "n": bson.Int64(2)},
              {"time": h0, "usage_user": -0.0, "n": bson.Int64(-2**63), "note": 'x,"y"'}]),
            ({"tags": {"hostname": "host_0", "region": "eu"}, "hour": h1},
             [{"time": h1, "usage_user": 3.5, "note": "b"}]),
            ({"tags": {"hostname": "host_1"}, "hour": h0},
             [{"time": t("2016-01-01T00:59:55"), "usage_user": 5.5, "n": bson.Int64(5), "note": "c"}])]
    assert filters == [bson.encode(k) for k, _ in want]
    assert updates == [bson.encode({"$push": {"events": {"$each": ev}}}) for _, ev in want]
    decoded = bson.decode(updates[1], codec_options=bson.CodecOptions(tz_aware=True))
    assert list(decoded["$push"]["events"]["$each"][1]) == ["time", "usage_user", "n", "note"]


def test_many_lines_in_one_group_number_their_elements_past_nine():
    data = "".join(f"2016-01-01T00:{m:02d}:00Z,h,r,{m},{m},\n" for m in range(0, 60, 2)).encode()
    filters, updates = groups(data, name=b"ev")
    assert len(filters) == 1 and filters[0] == bson.encode(
        {"tags": {"hostname": "h", "region": "r"}, "hour": dt.datetime(2016, 1, 1, tzinfo=UTC)})
    want = [{"time": dt.datetime(2016, 1, 1, 0, m, tzinfo=UTC), "usage_user": float(m), "n": bson.Int64(m)}
            for m in range(0, 60, 2)]
    assert updates == [bson.encode({"$push": {"ev": {"$each": want}}})]
    assert b"\x0329\x00" in updates[0] and b"\x0330\x00" not in updates[0]


def test_random_parts_group_as_a_dict_does():
    """Many series and hours interleaved at random (hash collisions, probing): every group's
    key once, in first-seen order, and its lines' events in order: what a Python dict of
    lists makes of the same lines."""
    rng = random.Random(5)
    lines = []
    for i in range(3000):
        host, hour = rng.randrange(300), rng.randrange(4)
        region = "" if rng.random() < 0.1 else f"r{host % 3}"
        lines.append(f"2016-01-0{1 + hour // 2}T{hour:02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z,"
                     f"host_{host},{region},{i},{i},\n")
    data = "".join(lines).encode()
    filters, updates = groups(data)
    keys, kends = render(bucket_key_ops(CPU), data)
    docs, dends = render(event_ops(CPU), data)
    ref: dict[bytes, list[bytes]] = {}
    for k, d in zip(split(keys, kends), split(docs, dends)):
        ref.setdefault(k, []).append(d)
    assert len(ref) > 500 and filters == list(ref)
    opts = bson.CodecOptions(document_class=RawBSONDocument)
    for (k, evs), u in zip(ref.items(), updates):
        got = bson.decode(u, codec_options=opts)["$push"]["events"]["$each"]
        assert [e.raw for e in got] == evs
    assert sum(len(v) for v in ref.values()) == 3000


def test_an_empty_part_has_no_groups():
    empty = np.empty(0, np.uint64)
    f, fends, u, uends = native.bson_groups(b"", empty, b"", empty, b"events")
    assert (bytes(f), len(fends), bytes(u), len(uends)) == (b"", 0, b"", 0)


def test_input_that_is_not_bson_documents_is_refused():
    key = bson.encode({"k": 1})
    doc = bson.encode({"t": 1})
    ends = np.array([len(key)], np.uint64)
    dends = np.array([len(doc)], np.uint64)
    assert len(native.bson_groups(key, ends, doc, dends, b"events")[1]) == 1
    bad = bytearray(key)
    bad[0] += 1                                             # its length says one byte more
    for args in ((bytes(bad), ends, doc, dends, b"events"), (key, ends, doc[:-1] + b"\x01", dends, b"events"),
                 (key, ends, doc, dends, b"ev\x00ents")):
        with pytest.raises(RuntimeError, match="bson_groups: bad argument"):
            native.bson_groups(*args)
    with pytest.raises(ValueError, match="outside its buffer"):
        native.bson_groups(key[:-1], ends, doc, dends, b"events")
    with pytest.raises(ValueError, match="the same lines"):
        native.bson_groups(key, ends, doc, np.array([], np.uint64), b"events")
