"""The devops model of DATAMODEL.md: counts, clamps, counters, identities, tags."""

import numpy as np
import pytest

from tsbench.data.usecases.devops import REGIONS

from conftest import columns, dataset, generate_bytes, parse_influx


@pytest.fixture(scope="module")
def day():
    ds = dataset(use_case="devops", scale=2, seed=3)   # one day
    cols, sim = columns(ds)
    return ds, cols, sim


def field(ds, cols, meas, name):
    s = [se.name for se in ds.schema.series].index(meas)
    names = [f.name for f in ds.schema.series[s].fields if not f.hidden]
    rows = cols["series"] == s
    order = np.lexsort((cols["time"][rows], cols["entity"][rows]))   # per host, in time order
    return cols["entity"][rows][order], cols["values"][rows][order, names.index(name)]


def test_counts_per_day(day):
    ds, cols, _ = day
    assert ds.epochs == 8640
    assert len(cols["time"]) == 8640 * 2 * 9
    assert sum(1 for se in ds.schema.series for f in se.fields if not f.hidden) == 101
    assert [se.name for se in ds.schema.series] == ["cpu", "diskio", "disk", "kernel", "mem", "net", "nginx",
                                                    "postgresl", "redis"]
    assert [len(se.fields) for se in ds.schema.series] == [10, 7, 7, 6, 9, 8, 7, 16, 31]


def test_lines_per_host_epoch(tmp_path):
    text = generate_bytes(tmp_path, "--scale", "3", "--end", "2016-01-01T00:01:00Z", "--seed", "4").decode()
    rows = list(parse_influx(text))
    assert len(rows) == 3 * 6 * 9
    per = {}
    for meas, tags, vals, ts in rows:
        per.setdefault((tags["hostname"], ts), []).append(len(vals))
    assert all(len(v) == 9 and sum(v) == 101 for v in per.values())


@pytest.mark.parametrize("meas,names,lo,hi", [
    ("cpu", ["usage_user", "usage_idle", "usage_guest_nice"], 0, 100),
    ("nginx", ["active", "reading", "waiting", "writing"], 0, 100),
    ("postgresl", ["numbackends", "blk_write_time"], 0, 1000),
    ("postgresl", ["temp_bytes"], 0, 2 ** 30),
    ("redis", ["connected_clients"], 0, 10000),
    ("redis", ["used_memory"], 0, 16 * 2 ** 30),
    ("redis", ["mem_fragmentation_ratio"], 0, 100),
])
def test_clamps_hold(day, meas, names, lo, hi):
    ds, cols, _ = day
    for n in names:
        _, v = field(ds, cols, meas, n)
        assert v.min() >= lo and v.max() <= hi, n
        assert v.max() > v.min(), n   # it does move


@pytest.mark.parametrize("meas,names", [
    ("diskio", ["reads", "write_bytes", "io_time"]),
    ("kernel", ["interrupts", "disk_pages_out"]),
    ("net", ["bytes_sent", "drop_out"]),
    ("nginx", ["accepts", "requests"]),
    ("redis", ["total_connections_received", "keyspace_misses", "uptime_in_seconds"]),
])
def test_counters_never_decrease(day, meas, names):
    ds, cols, _ = day
    for n in names:
        ent, v = field(ds, cols, meas, n)
        for e in np.unique(ent):
            d = np.diff(v[ent == e])
            assert (d >= 0).all() and d.sum() > 0, n


def test_uptime_counts_seconds(day):
    ds, cols, _ = day
    ent, v = field(ds, cols, "redis", "uptime_in_seconds")
    assert (v[ent == 0] == np.arange(8640) * 10).all()


def test_mem_and_disk_identities(day):
    ds, cols, _ = day
    g = lambda m, n: field(ds, cols, m, n)[1]
    total, used, avail = g("mem", "total"), g("mem", "used"), g("mem", "available")
    assert set(np.unique(total)) <= {8 * 2 ** 30, 12 * 2 ** 30, 16 * 2 ** 30}
    assert (avail == total - used).all() and (g("mem", "free") == avail).all()
    assert np.allclose(g("mem", "used_percent"), 100 * used / total, rtol=0, atol=1e-12)
    assert np.allclose(g("mem", "available_percent"), 100 * avail / total, rtol=0, atol=1e-12)
    assert np.allclose(g("mem", "buffered_percent"), 100 * g("mem", "buffered") / total, rtol=0, atol=1e-12)
    assert (g("mem", "cached") <= total).all() and (g("mem", "used") >= 0).all()
    dt, df, du = g("disk", "total"), g("disk", "free"), g("disk", "used")
    assert (dt == 2 ** 40).all() and (du == dt - df).all()
    assert (g("disk", "used_percent") == np.floor(100 * du / dt)).all()
    assert (g("disk", "inodes_total") == dt // 4096).all()
    assert (g("disk", "inodes_free") == df // 4096).all()
    assert (g("disk", "inodes_used") == g("disk", "inodes_total") - g("disk", "inodes_free")).all()
    assert (g("kernel", "boot_time") >= 0).all() and (g("kernel", "boot_time") < 240).all()


def test_tag_values_come_from_the_documented_sets():
    ds = dataset(use_case="devops", scale=300, end="2016-01-01T00:00:10Z", seed=5)
    _, sim = columns(ds)
    seen = {k: set() for k in ("region", "os", "arch", "team", "service_environment", "service", "rack")}
    for e in range(300):
        for s, se in enumerate(ds.schema.series):
            tags = dict(zip([t.key for t in ds.schema.series_tags(s)], sim.tag_values(e, s)))
            assert tags["hostname"] == f"host_{e}"
            assert tags["datacenter"] in REGIONS[tags["region"]]
            for k in seen:
                seen[k].add(tags[k])
            if se.name == "diskio":
                a, b, c = tags["serial"].split("-")
                assert len(a) == len(b) == len(c) == 3
            if se.name == "disk":
                assert tags["path"] in {f"/dev/sda{i}" for i in range(10)}
                assert tags["fstype"] in {"ext3", "ext4", "btrfs"}
            if se.name == "net":
                assert tags["interface"] in {"eth0", "eth1", "eth2", "eth3"}
            if se.name in ("nginx", "redis"):
                assert 1024 <= int(tags["port"]) < 21024
                prefix, num = tags["server"].split("_")
                assert prefix == se.name and 0 <= int(num) < 100000
    assert seen["region"] == set(REGIONS)
    assert seen["os"] == {"Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"}
    assert seen["arch"] == {"x64", "x86"} and seen["team"] == {"SF", "NYC", "LON", "CHI"}
    assert seen["service_environment"] == {"production", "staging", "test"}
    assert seen["service"] == {str(i) for i in range(20)} and seen["rack"] <= {str(i) for i in range(100)}
    # the same host has the same tags in every measurement
    assert sim.tag_values(17, 0) == sim.tag_values(17, 8)[:10]


def test_variants():
    assert [f.name for f in dataset(use_case="cpu-only").schema.series[0].fields][:2] == ["usage_user",
                                                                                          "usage_system"]
    assert len(dataset(use_case="cpu-only").schema.series[0].fields) == 10
    assert [f.name for f in dataset(use_case="cpu-single").schema.series[0].fields] == ["usage_user"]
