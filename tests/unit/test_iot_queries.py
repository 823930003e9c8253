"""The iot query family (TSBS's thirteen, queries/iot.py): drawn queries, their
meaning recomputed in plain Python from the raw rows (independent of the SQL),
and DuckDB's answers equal to the reference engine's (PostgreSQL's, tags table
and inline: tests/databases/postgres/test_postgres_iot_queries.py).

The dataset: 20 trucks, two days, one epoch every 46 s. The interval is chosen
so the data ends while the trucks' tanks run low (fuel_state falls ~0.0005 a
tick and refuels at 0, a cycle of ~2000 ticks; 2 days at 46 s = 3756 ticks), so
low-fuel, which looks at each truck's newest row, has something to find."""

from __future__ import annotations

import json
from collections import defaultdict
from itertools import pairwise

import pytest

from tsbench import queries
from tsbench.queries.base import DAY, MINUTE, QuerySpec, SqlSpelling
from tsbench.queries.compare import compare, tolerance
from tsbench.queries.iot import IOT_TYPES
from tsbench.queries.reference import Reference
from tsbench.queries.shapes import sql as shape_sql

from conftest import execute_on, load_into
from querysets import IOT_PER_TYPE, TSBS_IOT, assert_all_valid, iot_csv, iot_specs

TEN = 10 * MINUTE


@pytest.fixture(scope="module")
def iot(tmp_path_factory):
    return iot_csv(tmp_path_factory)


@pytest.fixture(scope="module")
def specs(iot):
    return iot_specs(iot)


@pytest.fixture(scope="module")
def reference(iot):
    return Reference(iot.dataset)


@pytest.fixture(scope="module")
def expected(specs, reference):
    return {s.id: reference.expected(s) for s in specs}


# ---- the catalog ---------------------------------------------------------------------------

def test_the_thirteen_are_registered_as_custom_iot_types(iot, specs):
    assert set(IOT_TYPES) == set(TSBS_IOT) and len(IOT_TYPES) == 13
    assert {n for n, qt in queries.CATALOG.items() if qt.family == "iot"} == set(TSBS_IOT)
    ctx = queries.context(iot.dataset)
    for n in TSBS_IOT:
        qt = queries.CATALOG[n]
        assert qt.applies(ctx) is None and qt.doc
        assert n in queries.catalog.CUSTOM
    assert len(specs) >= 13 * IOT_PER_TYPE
    for s in specs:
        assert s.params["shape"] == "custom" and s.params["type"] == s.type
        assert QuerySpec.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    by = defaultdict(list)
    for s in specs[:13 * IOT_PER_TYPE]:
        by[s.type].append(s.params)
    fleets = {"East", "West", "North", "South"}
    for p in by["last-loc"] + by["low-fuel"] + by["high-load"]:
        assert p["fleet"] in fleets
    for p in by["single-last-loc"]:
        assert len(p["names"]) == 1 and p["names"][0].startswith("truck_")
    for p in by["stationary-trucks"]:
        assert p["end"] - p["start"] == TEN and p["start"] % MINUTE == 0
    for p in by["long-driving-sessions"]:
        assert p["end"] - p["start"] == 4 * 60 * MINUTE and p["start"] % TEN == 0 and p["min_periods"] == 22
    for p in by["long-daily-sessions"]:
        assert p["end"] - p["start"] == DAY and p["start"] % TEN == 0 and p["min_periods"] == 60
    for t in ("avg-load", "daily-activity", "breakdown-frequency", "avg-daily-driving-session"):
        assert all((p["start"], p["end"]) == (iot.dataset.start_ns, iot.dataset.end_ns) for p in by[t])


def test_draws_are_deterministic_and_need_iot(iot):
    a = queries.generate(iot.dataset, ["stationary-trucks", "last-loc"], 3, 5)
    assert a == queries.generate(iot.dataset, ["stationary-trucks", "last-loc"], 3, 5)
    assert [s.params for s in a[3:]] == [s.params for s in queries.generate(iot.dataset, ["last-loc"], 3, 5)]
    from tsbench.core.errors import UserError
    from tsbench.data.dataset import DatasetSpec, resolve

    devops = resolve(DatasetSpec(use_case="devops", scale=2, end="2016-01-01T00:10:00Z"))
    with pytest.raises(UserError, match=r"needs measurement 'readings'"):
        queries.generate(devops, ["last-loc"], 1, 1)


def test_every_type_has_a_non_trivial_answer(specs, expected):
    rows = defaultdict(int)
    for s in specs:
        rows[s.type] = max(rows[s.type], len(expected[s.id]))
    empty = [t for t in TSBS_IOT if rows[t] == 0]
    assert not empty, f"always empty here: {empty}"
    # and the fleet filters filter: last-loc answers some trucks, not all 20
    assert all(0 < len(expected[s.id]) < 20 for s in specs if s.type == "last-loc")


# ---- the meaning, recomputed ----------------------------------------------------------------

R_FIELDS = ("velocity", "longitude", "latitude", "fuel_consumption", "nominal_fuel_consumption")
D_FIELDS = ("fuel_state", "current_load", "load_capacity", "status")
TAGS = ("name", "fleet", "driver", "model")


@pytest.fixture(scope="module")
def raw(reference):
    out = {}
    for m, fields in (("readings", R_FIELDS), ("diagnostics", D_FIELDS)):
        cols = ("t",) + TAGS + fields
        q = f"SELECT epoch_ns(time), {', '.join(TAGS + fields)} FROM {m}"
        out[m] = [dict(zip(cols, r)) for r in reference.con.execute(q).fetchall()]
    return out


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _in(r, p):
    return p["start"] <= r["t"] < p["end"]


def _newest(rows, p, fields, keep=lambda r: True):
    best = {}
    for r in rows:
        if r["name"] is None or r["driver"] is None:
            continue
        if "fleet" in p and r["fleet"] != p["fleet"]:
            continue
        if "names" in p and r["name"] not in p["names"]:
            continue
        k = (r["name"], r["driver"])
        if k not in best or r["t"] > best[k]["t"]:
            best[k] = r
    return [(r["t"], r["name"], r["driver"], *(r[f] for f in fields)) for r in best.values() if keep(r)]


def _buckets(rows, key, field, keep_bucket):
    """{key + (bucket,): [values of field]} for rows with key fields not None."""
    b = defaultdict(list)
    for r in rows:
        k = key(r)
        if k is None:
            continue
        b[k + (r["t"] // TEN * TEN,)].append(r[field])
    return {k: v for k, v in b.items() if keep_bucket(v)}


def _oracle(s: QuerySpec, raw) -> list[tuple]:
    p, R, D = s.params, raw["readings"], raw["diagnostics"]
    t = s.type
    if t in ("last-loc", "single-last-loc"):
        return _newest(R, p, ("longitude", "latitude"))
    if t == "low-fuel":
        return _newest(D, p, ("fuel_state",), lambda r: r["fuel_state"] is not None
                       and r["fuel_state"] < p["fuel_below"])
    if t == "high-load":
        return _newest(D, p, ("current_load", "load_capacity"), lambda r: None not in (
            r["current_load"], r["load_capacity"]) and r["current_load"] > p["load_above"] * r["load_capacity"])
    win = [r for r in (D if t in ("avg-load", "daily-activity", "breakdown-frequency") else R) if _in(r, p)]
    if t == "stationary-trucks":
        g = defaultdict(list)
        for r in win:
            if r["name"] and r["driver"] and r["fleet"] == p["fleet"]:
                g[r["name"], r["driver"]].append(r["velocity"])
        return [(*k, m) for k, v in g.items() if (m := _mean(v)) is not None and m < p["velocity_below"]]
    if t in ("long-driving-sessions", "long-daily-sessions"):
        b = _buckets(win, lambda r: (r["name"], r["driver"]) if r["name"] and r["driver"]
                     and r["fleet"] == p["fleet"] else None, "velocity",
                     lambda v: (m := _mean(v)) is not None and m > p["velocity_above"])
        n = defaultdict(int)
        for k in b:
            n[k[:2]] += 1
        return [(*k, c) for k, c in n.items() if c > p["min_periods"]]
    if t == "avg-vs-projected-fuel-consumption":
        g = defaultdict(list)
        for r in win:
            if r["name"] and r["fleet"] and r["velocity"] is not None and r["velocity"] > p["velocity_above"]:
                g[r["fleet"]].append(r)
        return [(f, _mean([r["fuel_consumption"] for r in v]), _mean([r["nominal_fuel_consumption"] for r in v]))
                for f, v in g.items()]
    if t == "avg-daily-driving-duration":
        b = _buckets(win, lambda r: (r["fleet"], r["name"], r["driver"]) if r["fleet"] and r["name"]
                     and r["driver"] else None, "velocity",
                     lambda v: (m := _mean(v)) is not None and m > p["velocity_above"])
        days = defaultdict(int)
        for k in b:
            days[k[:3] + (k[3] // DAY,)] += 1
        per = defaultdict(list)
        for k, c in days.items():
            per[k[:3]].append(c / 6)
        return [(*k, _mean(v)) for k, v in per.items()]
    if t == "avg-daily-driving-session":
        b = _buckets(win, lambda r: (r["name"],) if r["name"] else None, "velocity",
                     lambda v: _mean(v) is not None)
        seq = defaultdict(list)
        for (name, tb), v in sorted(b.items()):
            seq[name].append((tb, _mean(v) > p["velocity_above"]))
        out = defaultdict(list)
        for name, xs in seq.items():
            changes = [xs[i] for i in range(1, len(xs)) if xs[i][1] != xs[i - 1][1]]
            for (tb, driving), nxt in pairwise(changes):
                if driving:
                    out[tb // DAY * DAY, name].append((nxt[0] - tb) / MINUTE)
        return [(*k, _mean(v)) for k, v in out.items()]
    if t == "avg-load":
        g = defaultdict(list)
        for r in win:
            if r["fleet"] and r["model"] and r["name"]:
                g[r["fleet"], r["model"], r["name"]].append(r)
        per = defaultdict(list)
        for k, v in g.items():
            cap, load_ = _mean([r["load_capacity"] for r in v]), _mean([r["current_load"] for r in v])
            per[k[:2]].append((cap, None if load_ is None or not cap else load_ / cap))
        return [(*k, _mean([c for c, _ in v]), _mean([x for _, x in v])) for k, v in per.items()]
    if t == "daily-activity":
        b = _buckets(win, lambda r: (r["fleet"], r["model"], r["name"]) if r["fleet"] and r["model"]
                     and r["name"] else None, "status",
                     lambda v: (m := _mean(v)) is not None and m < p["status_below"])
        n = defaultdict(int)
        for k in b:
            n[k[3] // DAY * DAY, k[0], k[1]] += 1
        return [(*k, c / 144) for k, c in n.items()]
    if t == "breakdown-frequency":
        b = _buckets(win, lambda r: (r["model"], r["name"]) if r["model"] and r["name"] else None, "status",
                     lambda v: any(x is not None for x in v))
        seq = defaultdict(list)
        for k, v in sorted(b.items()):
            vals = [x for x in v if x is not None]
            seq[k[:2]].append(2 * sum(x != 0 for x in vals) >= len(vals))
        n = defaultdict(int)
        for (model, _), xs in seq.items():
            n[model] += sum(1 for i in range(1, len(xs)) if xs[i] and not xs[i - 1])
        return [(m, c) for m, c in n.items() if c]
    raise AssertionError(t)


def test_reference_answers_mean_what_the_docs_say(specs, expected, raw, reference):
    for s in specs:
        mm = compare(s.params, _oracle(s, raw), expected[s.id], tolerance(s, 0.0, reference))
        assert mm is None, f"{s.type} {s.params}: {mm.diff()}"


def test_nulls_exist_and_no_group_is_null(specs, expected, raw):
    """The data has NULL tags and fields (so the recomputation above exercises
    the rules for them), and no answer has a NULL group: such rows are ignored."""
    assert any(r["driver"] is None for r in raw["readings"]) and any(r["model"] is None for r in raw["diagnostics"])
    assert any(r["velocity"] is None for r in raw["readings"]) and any(r["status"] is None for r in raw["diagnostics"])
    for s in specs:
        has_time, group, _ = queries.shapes.columns(s.params)
        lead = (1 if has_time else 0) + len(group)
        assert all(None not in row[:lead] for row in expected[s.id]), s.type


def test_a_wrong_meaning_is_caught(specs, expected, reference):
    """The checks can fail: SQL that counts sessions under way at the first
    bucket, calls a half-broken bucket fine, or counts hours instead of days
    answers differently from the reference."""
    wrong = {"avg-daily-driving-session": ("WHERE driving <> prev", "WHERE driving <> coalesce(prev, NOT driving)"),
             "breakdown-frequency": (">= count(m.status)", "> count(m.status)"),
             "daily-activity": ("/ 144", "/ 6")}
    for t, (a, b) in wrong.items():
        s = next(s for s in specs if s.type == t)
        text = shape_sql(s.params, SqlSpelling())
        assert a in text
        got = reference.con.execute(text.replace(a, b)).fetchall()
        assert compare(s.params, expected[s.id], got, tolerance(s, 0.0, reference)) is not None, t


# ---- the engines ---------------------------------------------------------------------------

def _load(target, url, df, options=None):
    load_into(target, url, df, options)


def test_duckdb_answers_equal_the_reference(iot, specs, reference, tmp_path):
    url = f"duckdb:{tmp_path / 'iot.duckdb'}"
    _load("duckdb", url, iot)
    res = execute_on("duckdb", url, iot, specs, reference, workers=2)
    assert_all_valid(res, specs, TSBS_IOT)


def test_the_sql_differs_only_in_spelling(specs):
    """Same SQL text shape in both dialects: PostgreSQL's reads tags through the
    tag-set table and does time math in exact numerics; no DuckDB-only syntax."""
    from tsbench.databases.postgres.dialect import PostgresSpelling

    for s in specs:
        duck = shape_sql(s.params, SqlSpelling())
        for d in (PostgresSpelling("public", TAGS + ("device_version",)), PostgresSpelling("public", ())):
            text = shape_sql(s.params, d)
            assert "epoch_ns" not in text and "//" not in text and "QUALIFY" not in text.upper()
        assert "QUALIFY" not in duck.upper()
