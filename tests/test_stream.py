"""`tsbench stream`: the bytes each writer streams are the bytes `generate` writes for
its share of the entities; batches are exactly --batch-size rows; the per-second
histograms merge into the run's; the open-loop rate holds within 2% at 50,000 points/s
against the null HTTP sink tsbench starts, over 10 s; pushed-back batches are retried
and counted, refused ones counted until --max-errors stops the run with the count (fault
server); a mixed run records writes and every query type per second; --target-latency
brings a queueing server's latency to about the target; the distinct series grow
through the first epoch; the per-second figures reach a line-protocol endpoint while the
run goes; bad options are one line."""

from __future__ import annotations

import asyncio

import pytest
from faultserver import FaultServer

from conftest import run_cli
from tsbench import session
from tsbench.connect import connect
from tsbench.databases.null.load import NullTarget
from tsbench.dataset import DatasetSpec, resolve
from tsbench.generate import generate
from tsbench.stream.run import StreamError, StreamOptions, stream
from tsbench.stream.stats import merged

SPEC = {"use_case": "devops", "scale": 5, "start": "2016-01-01T00:00:00Z", "end": "2016-01-01T00:05:00Z", "seed": 9}


class Capture(NullTarget):
    """Test-only: keeps every batch's bytes and row count, per writer's call order."""

    def __init__(self, url=None, options=None):
        super().__init__(url, options)
        self.batches: list[tuple[bytes, int]] = []

    async def write(self, batch) -> None:
        self.batches.append((bytes(batch.data), batch.rows))
        await super().write(batch)


def _stream(target, ds, **kw):
    async def go():
        await target.open()
        try:
            return await stream(target, ds, StreamOptions(progress=False, **kw))
        finally:
            await target.close()
    return asyncio.run(go())


@pytest.mark.parametrize("fmt", ["influx", "csv"])
def test_one_writer_streams_the_bytes_generate_writes(tmp_path, fmt):
    ds = resolve(DatasetSpec(**SPEC))
    generate(ds, fmt, str(tmp_path / "d"), show_progress=False)
    t = type("Capture", (Capture,), {"format": fmt})()                  # the format the target takes
    res = _stream(t, ds, writers=1, batch_size=7, points_per_series=ds.epochs)
    assert b"".join(b for b, _ in t.batches) == (tmp_path / "d").read_bytes()
    rows = [n for _, n in t.batches]
    assert set(rows[:-1]) == {7} and 0 < rows[-1] <= 7 and res.rows == sum(rows)   # exactly --batch-size
    assert res.verified and res.counted == res.rows == ds.entities * 9 * ds.epochs


def test_each_writer_streams_its_group_of_the_entities(tmp_path):
    ds = resolve(DatasetSpec(**SPEC))
    generate(ds, "influx", str(tmp_path / "d"), groups=2, show_progress=False)
    t = Capture()
    _stream(t, ds, writers=2, batch_size=1_000_000, points_per_series=ds.epochs)   # one batch per writer
    assert sorted(b for b, _ in t.batches) == sorted((tmp_path / f"d.g{g}").read_bytes() for g in (0, 1))


def test_per_second_histograms_merge_into_the_runs_and_series_grow_through_the_first_epoch():
    ds = resolve(DatasetSpec(use_case="synthetic", seed=3, params={"tags": "10,10", "fields": "1"}))
    res = _stream(NullTarget(), ds, writers=2, batch_size=25, rate=60, points_per_series=1)   # 100 series, ~1.7 s
    table = res.table
    assert sum(r["batches"] for r in table) == res.batches == 4 and res.rows == 100
    whole = merged([r["latency_hdr"] for r in table if r["latency_hdr"]])
    assert whole.get_total_count() == 4
    assert whole.get_value_at_percentile(99) / 1e3 == res.latency_ms["p99"]
    first, last = table[0]["second"], max(r["second"] for r in table)
    series = {s: sum(r["series"] for r in table if r["second"] == s) for s in (first, last)}
    assert series[first] < 100 and series[last] == 100                      # the series-creation phase shows


def test_rate_holds_within_2_percent_at_50k_points_per_second_on_the_null_http_sink():
    ds = resolve(DatasetSpec(use_case="cpu-only", scale=1000, seed=1))

    async def go():
        async with session.open_target(session.Reach("null-http", "local"), announce=False) as c:
            return await session.stream(c, ds, StreamOptions(writers=4, batch_size=1000, rate=50_000, duration=10,
                                                            progress=False))
    res = asyncio.run(go())
    assert res.verified and res.errors == 0
    rate = res.rows / res.seconds
    assert abs(rate - 50_000) / 50_000 < 0.02, (res.rows, res.seconds)
    inner = [sum(r["rows"] for r in res.table if r["second"] == s) for s in range(1, 9)]
    assert all(abs(n - 50_000) / 50_000 < 0.1 for n in inner), inner      # every whole second near the rate


def test_push_back_is_retried_and_refusals_stop_the_run_past_max_errors():
    ds = resolve(DatasetSpec(**SPEC))
    with FaultServer() as fs:
        fs.faults = ["503"] * 3

        async def go(**kw):
            async with connect("null-http", fs.url) as c:
                return await stream(c.target, ds, StreamOptions(progress=False, writers=2, batch_size=100,
                                                                points_per_series=ds.epochs, **kw))
        ok = asyncio.run(go())
        assert ok.backoffs == 3 and ok.verified and fs.rows == ok.rows
        fs.always = "fatal"
        with pytest.raises(StreamError, match=r"stopped after 4 refused batches \(--max-errors 3\); the first: "
                                              r".*HTTP 400") as ei:
            asyncio.run(go(max_errors=3, if_exists="drop"))
        assert 4 <= ei.value.result.errors <= 5 and ei.value.result.status == "failed"   # 5: the other writer's in flight


def test_target_latency_adapts_the_delay_until_the_latency_is_about_the_target():
    """Four writers on a server that serves one write at a time for 20 ms: at once, each
    write waits for the three others (~80 ms); with a 50 ms target the delay grows until
    the latency is about the target, and the delay is in the per-second table."""
    ds = resolve(DatasetSpec(use_case="cpu-only", scale=40, seed=2))
    with FaultServer() as fs:
        fs.service_seconds = 0.02

        async def go(**kw):
            async with connect("null-http", fs.url) as c:
                return await stream(c.target, ds, StreamOptions(progress=False, writers=4, batch_size=10,
                                                                duration=4, if_exists="drop", **kw))
        free, held = asyncio.run(go()), asyncio.run(go(target_latency=0.05))
    assert free.latency_ms["p50"] > 70
    late = [r for r in held.table if r["second"] >= 2 and r["batches"]]
    merged_late = merged([r["latency_hdr"] for r in late])
    assert 35 < merged_late.get_value_at_percentile(50) / 1e3 < 60, held.latency_ms
    assert all(r["delay_ms"] > 0 for r in late) and held.rows > 0


def test_per_second_figures_are_pushed_as_line_protocol_while_the_run_goes():
    ds = resolve(DatasetSpec(use_case="cpu-only", scale=20, seed=2))
    with FaultServer() as fs:
        res = _stream(NullTarget(), ds, writers=2, batch_size=10, rate=200, duration=2.5,
                      report_url=f"{fs.url}/write?db=stats")
        seconds = len({r["second"] for r in res.table})
        assert seconds == 3 and fs.writes == seconds and fs.rows == 3 * seconds     # two writers and "all"
        assert res.summary()["report_note"] == ""
    res = _stream(NullTarget(), ds, writers=1, batch_size=10, rate=200, duration=1.2,
                  report_url="http://127.0.0.1:9/write")                            # nothing listens there
    assert "pushes failed" in res.report_note and res.status == "ok"


def test_bad_options_are_one_line():
    for args, words in ((["-t", "null"], "give --duration SECONDS or --points-per-series N"),
                        (["-t", "null", "--duration", "1", "--rate", "10", "--delay", "1"], "do not go together"),
                        (["-t", "null", "--duration", "1", "--rate", "10", "--target-latency", "1"], "do not go"),
                        (["-t", "null", "--duration", "0"], "--duration"),
                        (["-t", "null", "--duration", "1", "--report-url", "ftp://u:secret@h/x"], "--report-url")):
        p = run_cli("stream", *args, check=False)
        err = p.stderr.decode()
        assert p.returncode == 2 and words in err and err.count("\n") == 1 and "secret" not in err, err


def test_a_mixed_run_records_writes_and_each_query_type_per_second(tmp_path):
    """DuckDB (in-process) written to while three query types run at 20/s on the freshest data."""
    from tsbench.databases.duckdb.load import DuckDBTarget

    ds = resolve(DatasetSpec(use_case="devops", scale=4, seed=6))
    specs = session.draw(ds, ["single-groupby-1-1-1", "cpu-max-all-1", "lastpoint"], 2, seed=1, allow_empty=True)
    t = DuckDBTarget(f"duckdb:{tmp_path / 'm.duckdb'}")
    res = _stream(t, ds, writers=2, batch_size=200, rate=3000, duration=3, queries=specs, query_rate=20)
    q = res.queries
    assert res.rows > 0 and res.verified
    assert q["types"] == ["cpu-max-all-1", "lastpoint", "single-groupby-1-1-1"] and q["errors"] == 0, q
    assert 40 <= q["count"] <= 62 and q["latency_ms"]["p99"] > 0, q                 # ~20/s for 3 s
    assert {r["second"] for r in res.query_table} >= {0, 1, 2}
    assert sum(r["queries"] for r in res.query_table) == q["count"]
