"""Every format parses back to exactly the values the simulator holds."""

import math

import numpy as np
import pytest

from tsbench.data.native import Simulator

from conftest import columns, dataset, parse_csv, parse_influx


def _text(ds, fmt):
    sim = Simulator(ds.compiled, ds.spec.seed, 0, ds.entities, ds.start_ns, ds.interval_ns, ds.epochs)
    buf = bytearray(1 << 20)
    out = []
    while True:
        r = sim.fill(fmt, buf)
        out.append(bytes(buf[: r.bytes]))
        if r.done:
            return b"".join(out).decode()


def _bits(x):
    return np.float64(x).view(np.uint64)


@pytest.mark.parametrize("kw", [
    dict(use_case="devops", scale=3, end="2016-01-01T00:30:00Z", seed=11),
    dict(use_case="iot", scale=6, end="2016-01-01T02:00:00Z", seed=12),
    dict(use_case="synthetic", params={"tags": "2,3", "points": 40, "fields": 3}, seed=13),
])
def test_influx_and_csv_parse_back_to_the_columns(kw):
    ds = dataset(**kw)
    cols, _ = columns(ds)
    n = len(cols["time"])
    influx = list(parse_influx(_text(ds, "influx")))
    csvrows = list(parse_csv(_text(ds, "csv"), ds.schema))
    assert len(influx) == len(csvrows) == n > 0
    names = [se.name for se in ds.schema.series]
    for i in range(n):
        s = int(cols["series"][i])
        fields = [f for f in ds.schema.series[s].fields if not f.hidden]
        for meas, tags, vals, ts in (influx[i], csvrows[i]):
            assert meas == names[s] and ts == cols["time"][i]
            for j, f in enumerate(fields):
                want = cols["values"][i, j]
                got = vals.get(f.name)
                if math.isnan(want):
                    assert got is None, (i, f.name)
                else:
                    assert got is not None and _bits(float(got)) == _bits(want), (i, f.name, got, want)
                    assert isinstance(got, int) == (f.type == "int")
        # tags: the same in both formats, the null one missing
        itags, ctags = influx[i][1], csvrows[i][1]
        assert {k: v for k, v in ctags.items() if v is not None} == itags
        nt = int(cols["null_tag"][i])
        keys = [t.key for t in ds.schema.series_tags(s)]
        if nt >= 0:
            assert keys[nt] not in itags
        else:
            assert set(itags) == set(keys)


def test_influx_line_shape(small_devops):
    line = _text(small_devops, "influx").splitlines()[0]
    assert line.startswith("cpu,hostname=host_0,region=")
    keys = [kv.split("=")[0] for kv in line.split(" ")[0].split(",")[1:]]
    assert keys == ["hostname", "region", "datacenter", "rack", "os", "arch", "team", "service",
                    "service_version", "service_environment"]
    assert line.endswith(" 1451606400000000000")
    import re

    for kv in line.split(" ")[1].split(","):
        assert re.fullmatch(r"usage_\w+=-?\d+(\.\d+)?", kv), kv   # floats, no exponent, no i


def test_csv_timestamps_are_rfc3339():
    ds = dataset(use_case="cpu-single", scale=1, start="2016-02-29T23:59:50Z", end="2016-03-01T00:00:01Z",
                 interval="500ms")
    lines = _text(ds, "csv").splitlines()
    assert [ln.split(",")[1] for ln in lines[:3]] == ["2016-02-29T23:59:50Z", "2016-02-29T23:59:50.5Z",
                                                      "2016-02-29T23:59:51Z"]
    assert lines[-1].split(",")[1] == "2016-03-01T00:00:00.5Z"
