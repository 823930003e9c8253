"""A queries file is code (issue 35 item 3): every field of every shape of a
hand-edited queries file given hostile values (SQL, InfluxQL, Flux and JSON
injection, quotes, comments, line breaks, huge, negative and wrongly typed
numbers, unicode) is refused in one line naming the file and line, before
anything renders it; through the command line, exit 2 and a DuckDB file left
as it was; and what the reader accepts renders through every dialect with its
strings quoted."""

from __future__ import annotations

import json
import os

import duckdb
import pytest

from tsbench import queries
from tsbench.core.errors import UserError

from conftest import dataset, run_cli

START, END = "2016-01-01T00:00:00Z", "2016-01-01T01:00:00Z"
DEVOPS = ("max-cpu-1", "double-groupby-1", "groupby-orderby-limit", "high-cpu-1", "lastpoint")

STRINGS = ["1) AS t FROM cpu m; DROP TABLE mem; --", "x' OR '1'='1", 'x" OR "1"="1', "cpu; DROP MEASUREMENT cpu",
           '") |> drop(columns: ["_value"]) //', '{"$where": "sleep(1000)"}', "a/* c */b", "usage_user\nDROP",
           "x\x00y", "h\u00f3st", "\u202ehost", "\uff07x", "`x`", "", " " * 200]
OBJECTS = [{"$gt": ""}, True, [1]]
HUGE = [2**63, 10**30, -2**63 - 1]
TIMES = ("start", "end")


def _specs() -> list[dict]:
    devops = dataset(use_case="devops", scale=2, start=START, end=END, seed=3)
    iot = dataset(use_case="iot", scale=4, start=START, end=END, seed=3)
    out = [s.to_dict() for s in queries.generate(devops, list(DEVOPS), 1, 7, allow_empty=True)]
    out += [s.to_dict() for s in queries.generate(iot, list(queries.iot.IOT_TYPES), 1, 7, allow_empty=True)]
    filtered = json.loads(json.dumps(out[0]))            # an aggregate with every optional key
    filtered["params"].update(value_filter={"field": "usage_user", "op": ">", "value": 10.0}, order="desc", limit=3)
    return out + [filtered]


SPECS = _specs()
HEAD = {"tsbench_queries": 1, "seed": 7, "dataset": {}}


def _write(path, spec: dict) -> None:
    path.write_text(json.dumps(HEAD) + "\n" + json.dumps(spec) + "\n")


def _paths(x, at=()):
    """Every place in a spec: (path, original value), containers and leaves."""
    if at:
        yield at, x
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, at + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x[:1]):           # the first of a list: the others are read alike
            yield from _paths(v, at + (i,))


def _hostile(at: tuple, original) -> list:
    """The values wrong at a place: every hostile string where a string belongs, a
    few of them elsewhere (a type error, however written), and wrong numbers for numbers."""
    if isinstance(original, str):
        return STRINGS + OBJECTS + [-1, 2.5]
    out = STRINGS[:3] + OBJECTS
    if isinstance(original, bool) or not isinstance(original, (int, float)):
        return out
    if isinstance(original, float):
        return out + [float("nan"), float("inf")]
    return out + HUGE + ([] if at[-1] in TIMES else [-1, 2.5])


def _put(spec: dict, at: tuple, value) -> dict:
    s = json.loads(json.dumps(spec))
    node = s
    for k in at[:-1]:
        node = node[k]
    node[at[-1]] = value
    return s


def test_the_drawn_files_read_back_as_drawn(tmp_path):
    for spec in SPECS:
        _write(tmp_path / "q.jsonl", spec)
        _, (back,) = queries.read_queries(tmp_path / "q.jsonl")
        assert back.to_dict() == spec


def test_every_field_of_every_shape_refuses_hostile_values(tmp_path):
    path = tmp_path / "q.jsonl"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)          # rewritten in place: thousands of files are slow to open
    tried = 0
    try:
        for spec in SPECS:
            for at, original in _paths(spec):
                for value in _hostile(at, original):
                    if value == original:
                        continue
                    text = (json.dumps(HEAD) + "\n" + json.dumps(_put(spec, at, value)) + "\n").encode()
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, text, 0)
                    with pytest.raises(UserError) as err:
                        queries.read_queries(path)
                    msg = str(err.value)
                    assert msg.startswith(f"{path}:2: ") and "\n" not in msg and len(msg) < 400, (at, value, msg)
                    tried += 1
    finally:
        os.close(fd)
    assert tried > 1000


@pytest.mark.parametrize("at, value, says", [
    (("params", "bucket"), "1) AS t FROM cpu m; DROP TABLE mem; --", "params.bucket"),
    (("params", "tag_values", 0), "host_0') OR 1=1; DROP TABLE mem; --", "params.tag_values.0"),
    (("params", "fields", 0), 'usage_user") FROM cpu; DROP TABLE mem; --', "params.fields.0"),
    (("params", "agg"), "median", "params.agg"),
    (("params", "shape"), "pivot", "unknown shape 'pivot'"),
    (("params", "end"), 2**64, "params.end"),
    (("type",), "max-cpu-1-edited", "unknown query type 'max-cpu-1-edited'"),
])
def test_the_command_line_refuses_and_leaves_the_database_untouched(tmp_path, at, value, says):
    devops = dataset(use_case="devops", scale=2, start=START, end=END, seed=3)
    db = tmp_path / "x.duckdb"
    con = duckdb.connect(str(db))
    for t in ("cpu", "mem"):
        con.execute(f"CREATE TABLE {t} (time TIMESTAMPTZ, hostname VARCHAR, usage_user DOUBLE)")
        con.execute(f"INSERT INTO {t} VALUES ('2016-01-01 00:00:00+00', 'host_0', 1.5)")
    con.close()
    spec = _put(SPECS[0], at, value)
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({**HEAD, "dataset": devops.describe()}) + "\n" + json.dumps(spec) + "\n")
    p = run_cli("validate", str(path), "-t", "duckdb", "-s", f"duckdb:{db}", "-q", check=False)
    err = p.stderr.decode()
    assert p.returncode == 2 and err.count("\n") == 1 and err.startswith(f"tsbench: error: {path}:2: "), err
    assert says in err
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall() == [("cpu",), ("mem",)]
    assert [con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("cpu", "mem")] == [1, 1]


# ---- what the reader accepts renders quoted, in every dialect ---------------------------------

TRICKY = "a -- DROP TABLE mem"          # a tag value the reader accepts: only quoting keeps it data


def _dialects(ds):
    from tsbench.data.datafile import tables_of
    from tsbench.databases.cassandra.dialects.series import CqlSeries
    from tsbench.databases.cassandra.dialects.wide import CqlWide
    from tsbench.databases.clickhouse.dialect import ClickHouseSpelling, ClickHouseSql
    from tsbench.databases.elasticsearch.dialect import EsDsl
    from tsbench.databases.influx.dialects.flux import Flux
    from tsbench.databases.influx.dialects.influxql import InfluxQL
    from tsbench.databases.iotdb.dialects.tree import IotdbTree
    from tsbench.databases.mongodb.dialect import Mql
    from tsbench.databases.opentsdb.dialect import TsdbApi
    from tsbench.databases.postgres.dialect import PostgresSpelling
    from tsbench.databases.questdb.dialect import QuestSql
    from tsbench.databases.victoriametrics.dialect import MetricsQL
    from tsbench.queries.sql import Sql

    tables = tables_of(ds, 0, 0)
    return [Sql(), Sql(PostgresSpelling("public", ("hostname", "name"))), ClickHouseSql(ClickHouseSpelling("db")),
            QuestSql(), InfluxQL(), Flux(), MetricsQL(), EsDsl(), Mql(), Mql("series"), TsdbApi(),
            IotdbTree("db", {t.name: t for t in tables.tables}), CqlSeries("ks", tables, []), CqlWide("ks", tables, [])]


def _strings(x, seen=None):
    """Every string inside a rendered query (its text, or the fields of its request objects)."""
    seen = set() if seen is None else seen
    if id(x) in seen:
        return
    seen.add(id(x))
    if isinstance(x, (str, bytes)):
        yield x.decode(errors="replace") if isinstance(x, bytes) else x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield from _strings(k, seen)
            yield from _strings(v, seen)
    elif isinstance(x, (list, tuple, set, frozenset)):
        for v in x:
            yield from _strings(v, seen)
    elif hasattr(x, "__dict__") or hasattr(x, "__slots__"):
        for k in getattr(x, "__slots__", ()) or vars(x):
            yield from _strings(getattr(x, k, None), seen)


def _quoted_only(text: str, value: str) -> bool:
    """The value is a whole string (a JSON value) or each occurrence sits between quotes."""
    if text == value:
        return True
    i = text.find(value)
    while i >= 0:
        before, after = text[i - 1:i], text[i + len(value):i + len(value) + 1]
        if before not in ("'", '"', "`", "=") or after not in ("'", '"', "`"):
            return False
        i = text.find(value, i + 1)
    return True


def test_accepted_values_render_quoted_in_every_dialect(tmp_path):
    from tsbench.core.errors import Unsupported
    from tsbench.queries.base import QuerySpec

    devops = dataset(use_case="devops", scale=2, start=START, end=END, seed=3)
    iot = dataset(use_case="iot", scale=4, start=START, end=END, seed=3)
    rendered = 0
    for spec in SPECS:
        tricky = spec
        for at, original in _paths(spec):
            if at[-2:-1] in (("tag_values",), ("names",)) or at[-1] == "fleet":
                tricky = _put(tricky, at, TRICKY)
        _write(tmp_path / "q.jsonl", tricky)
        _, (s,) = queries.read_queries(tmp_path / "q.jsonl")
        ds = iot if s.type in queries.iot.IOT_TYPES else devops
        for d in _dialects(ds):
            if s.type not in d.query_types():
                continue
            try:
                native = d.render(QuerySpec(s.id, s.type, s.params))
            except Unsupported:
                continue
            rendered += 1
            for text in _strings(native):
                assert _quoted_only(text, TRICKY), (d.name, s.type, text)
    assert rendered > 100
