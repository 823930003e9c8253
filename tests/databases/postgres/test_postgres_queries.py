"""Phases 4-5 on PostgreSQL: the drawn devops queries' answers equal the reference
engine's with tags in a table and inline, a connection's set-up timed apart from its
first query, and the cold cache modes restarting the server (before a pass, before
every query)."""

from __future__ import annotations

import asyncio

import pytest

from tsbench.execute.run import ExecOptions, execute
from tsbench.execute.timer import timed_query
from tsbench.load.connect import connect
from tsbench.queries.reference import Reference

from conftest import execute_on, load_into
from querysets import assert_all_valid, devops_csv, devops_specs


@pytest.fixture(scope="module")
def devops(tmp_path_factory):
    return devops_csv(tmp_path_factory)


@pytest.fixture(scope="module")
def specs(devops):
    return devops_specs(devops)


@pytest.fixture(scope="module")
def reference(devops):
    return Reference(devops.dataset)


def _load(url, df, options=None):
    load_into("postgres", url, df, options)


@pytest.mark.parametrize("tags", ["table", "inline"])
def test_postgres_answers_equal_the_reference(pg, devops, specs, reference, tags):
    opts = {"tags": tags, "database": f"q_{tags}", "index": "brin" if tags == "inline" else "btree"}
    _load(pg.url, devops, opts)
    res = execute_on("postgres", pg.url, devops, specs, reference, opts, workers=3)
    assert_all_valid(res, specs)


def _execute_cold(pg, devops, reference, some, database: str, cache: str):
    """Load into a fresh database of the session's PostgreSQL and run `some` twice with a cold cache mode."""
    opts = {"database": database}
    _load(pg.url, devops, opts)

    async def go():
        async with connect("postgres", pg.url, opts) as c:
            await c.target.attach(devops.tables())
            return await execute(c.target, some, ExecOptions(progress=False, cache=cache, count=2 * len(some)),
                                 reference, server=pg)
    res = asyncio.run(go())
    assert len(res.records) == 2 * len(some) and all(r["status"] == "ok" for r in res.records)
    assert all(v["ok"] for v in res.validation)
    # reconnected after each restart before the timer: no latency holds a connection set-up;
    # libpq gives no first byte: not measured
    assert all(r["connect_s"] is None and r["ttfb"] is None for r in res.records)
    # cold where the page cache could be dropped, else lukewarm with the reason
    assert (res.cache, bool(res.cache_note)) in ((cache, False), ("lukewarm", True))
    return res


def test_postgres_connection_setup_is_timed_apart(pg, devops, specs):
    _load(pg.url, devops, {"database": "q_conn"})

    async def go():
        async with connect("postgres", pg.url, {"database": "q_conn"}) as c:
            await c.target.attach(devops.tables())
            native = c.target.render(specs[0])
            cold = await timed_query(c.target, native)     # no connection ready: one is opened, timed apart
            await c.target.prepare(2)
            warm = [await timed_query(c.target, native) for _ in range(2)]
            return cold, warm
    cold, warm = asyncio.run(go())
    assert cold.connect_s is not None and cold.connect_s > 0 and cold.seconds > 0
    assert all(a.connect_s is None for a in warm)


def test_cold_cache_restarts_the_server(pg, devops, specs, reference):
    from tsbench.databases.shared.server import pid_alive

    before = pg.state.pid
    _execute_cold(pg, devops, reference, [s for s in specs if s.type in ("max-cpu-1", "lastpoint")], "q_cold", "cold")
    assert pg.state.pid != before and not pid_alive(before) and pid_alive(pg.state.pid)


def test_cold_query_restarts_before_every_query(pg, devops, specs, reference, monkeypatch):
    some = [s for s in specs if s.type in ("max-cpu-1", "lastpoint")][:3]
    restarts = []
    real = pg.restart
    monkeypatch.setattr(pg, "restart", lambda *a, **k: (restarts.append(pg.state.pid), real(*a, **k))[1])
    res = _execute_cold(pg, devops, reference, some, "q_coldq", "cold-query")
    assert len(restarts) == 2 * len(some) == len(set(restarts)) == len(res.records)     # a new server each time
