"""The bad-input corpus (issue 12): every command, experiment file and schema file,
given bad input, exits 2 with exactly one line on stderr naming the option, or the
file (and line), and no traceback. Most cases run in-process (tsbench.commands.cli.main), a few
as a user runs them; none starts a server (validation comes first). Also: an
unexpected exception is one line and a log file (exit 70), Ctrl-C is 130, and every
error line is masked."""

from __future__ import annotations

import json
import os
import pathlib
import re

import pytest

from tsbench.commands import cli

from conftest import assert_one_line, call, run_cli

END = "2016-01-01T00:10:00Z"


@pytest.fixture(scope="module")
def w(tmp_path_factory) -> pathlib.Path:
    """A work folder: data files, queries files, an experiment and broken run folders."""
    from tsbench import queries
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import generate

    d = tmp_path_factory.mktemp("bad")
    ds = resolve(DatasetSpec(scale=1, end=END))
    generate(ds, "influx", str(d / "data.lp"), show_progress=False)
    generate(ds, "csv", str(d / "data.csv"), show_progress=False)
    generate(resolve(DatasetSpec(scale=2, end=END)), "csv", str(d / "other.csv"), show_progress=False)
    queries.write_queries(d / "q.jsonl", ds, 1, queries.generate(ds, ["max-cpu-1"], 2, 1, allow_empty=True))
    (d / "empty.jsonl").write_text((d / "q.jsonl").read_text().splitlines()[0] + "\n")
    (d / "notq.jsonl").write_text("hello\n")
    (d / "nomanifest.lp").write_text("cpu,host=a v=1 1\n")
    (d / "exp.yaml").write_text(GOOD)
    _run_dirs(d)
    _damaged_gzip(ds, d)
    return d


def _damaged_gzip(ds, d: pathlib.Path) -> None:
    """bad.lp.gz: a gzip'd data file with 64 bytes in its middle changed, its size and
    manifest kept (the manifest's size check passes; the data does not decompress)."""
    from tsbench.data.generate import generate

    generate(ds, "influx", str(d / "bad.lp.gz"), show_progress=False)
    data = bytearray((d / "bad.lp.gz").read_bytes())
    mid = len(data) // 2
    data[mid: mid + 64] = bytes(b ^ 0x5A for b in data[mid: mid + 64])
    (d / "bad.lp.gz").write_bytes(data)


def _run_dirs(d: pathlib.Path) -> None:
    import pandas as pd

    good = '{"experiment": "x", "run_id": "1"}'
    for name, manifest in (("badjson", "{"), ("listjson", "[]"), ("trunc", good), ("garbage", good),
                           ("zero", good)):
        (d / name).mkdir()
        (d / name / "manifest.json").write_text(manifest)
    pd.DataFrame({"cell": [0], "status": ["ok"]}).to_parquet(d / "trunc" / "cells.parquet")
    full = (d / "trunc" / "cells.parquet").read_bytes()
    (d / "trunc" / "cells.parquet").write_bytes(full[:len(full) // 2])
    (d / "garbage" / "cells.parquet").write_text("not parquet")
    (d / "zero" / "cells.parquet").write_bytes(b"")


# ---- options of every command --------------------------------------------------------------------

GEN = ("generate", "--scale", "1", "--end", END, "-q")

COMMANDS = [
    # generate
    (GEN + ("--start", END, "-o", "{w}/x.lp"), "--end"),
    (("generate", "--start", "2016-01-01T00:00:00Z", "--end", "2016-01-01T00:00:00Z", "-o", "{w}/x.lp"), "--end"),
    (GEN + ("--seed", "-1", "-o", "{w}/x.lp"), "--seed"),
    (GEN + ("--seed", str(2 ** 64), "-o", "{w}/x.lp"), "--seed"),
    (GEN + ("--seed", "abc", "-o", "{w}/x.lp"), "--seed"),
    (GEN + ("--groups", "0", "-o", "{w}/x.lp"), "--groups"),
    (GEN + ("--groups", "-2", "-o", "{w}/x.lp"), "--groups"),
    (GEN + ("--group", "-1", "--groups", "2", "-o", "{w}/x.lp"), "--group"),
    (GEN + ("-j", "0", "-o", "{w}/x.lp"), "--processes"),
    (GEN + ("--processes", "-2", "-o", "{w}/x.lp"), "--processes"),
    (GEN + ("--scale", "1.5", "-o", "{w}/x.lp"), "--scale"),
    (GEN + ("-o", "{w}"), "--output"),
    (GEN + ("-o", "{w}/no/such/dir/x.lp"), "--output"),
    (GEN + ("-o", "/dev/full"), "--output"),
    (GEN + ("--groups", "2", "-o", "-"), "--output"),
    (GEN + ("-P", "missing", "-o", "{w}/x.lp"), "--param"),
    (GEN + ("-P", "=1", "-o", "{w}/x.lp"), "--param"),
    (GEN + ("--use-case", "iot", "-P", "late=-0.1", "-o", "{w}/x.lp"), "--param late"),
    (GEN + ("--use-case", "iot", "-P", "group_size=0", "-o", "{w}/x.lp"), "--param group_size"),
    (GEN + ("--schema", "{w}/exp.yaml", "-o", "{w}/x.lp"), "--schema"),
    (GEN + ("--use-case", "", "-o", "{w}/x.lp"), "--use-case"),
    (GEN + ("--interval", "-10s", "-o", "{w}/x.lp"), "--interval"),
    (GEN + ("--use-case", "custom", "--schema", "{w}", "-o", "{w}/x.lp"), "{w}"),
    # load (never starts a server: every case fails before)
    (("load", "-t", "duckdb"), "DATAFILE"),
    (("load", "{w}/missing.lp", "-t", "duckdb"), "missing.lp"),
    (("load", "{w}/nomanifest.lp", "-t", "duckdb"), "nomanifest.lp"),
    (("load", "{w}", "-t", "duckdb"), "{w}"),
    (("load", "{w}/data.lp", "-t", "nosuch"), "--target"),
    (("load", "{w}/data.lp"), "--target"),
    (("load", "{w}/data.lp", "-t", "influx", "-w", "0"), "--workers"),
    (("load", "{w}/data.lp", "-t", "influx", "--workers", "-1"), "--workers"),
    (("load", "{w}/data.lp", "-t", "influx", "-w", "ten"), "--workers"),
    (("load", "{w}/data.lp", "-t", "influx", "-b", "0"), "--batch-size"),
    (("load", "{w}/data.lp", "-t", "influx", "--repeat", "0"), "--repeat"),
    (("load", "{w}/data.lp", "-t", "influx", "--repeat", "1001"), "--repeat"),
    (("load", "{w}/data.lp", "-t", "influx", "-j", "0"), "--processes"),
    (("load", "{w}/data.lp", "-t", "influx", "--give-up-after", "0"), "--give-up-after"),
    (("load", "{w}/data.lp", "-t", "influx", "--give-up-after", "-5"), "--give-up-after"),
    (("load", "{w}/data.lp", "-t", "influx", "--give-up-after", "nan"), "--give-up-after"),
    (("load", "{w}/data.lp", "-t", "influx", "--if-exists", "maybe"), "--if-exists"),
    (("load", "{w}/data.lp", "-t", "influx", "-O", "api"), "--option"),
    (("load", "{w}/data.csv", "-t", "duckdb", "-O", "nosuch=1"), "nosuch"),
    # target options are bounded as the command's own numbers (bounds.py)
    (("load", "{w}/data.csv", "-t", "cassandra", "-O", "request_timeout=1e300"), "request_timeout"),
    (("load", "{w}/data.csv", "-t", "cassandra", "-O", "concurrency=100000000000"), "concurrency"),
    (("load", "{w}/data.csv", "-t", "elasticsearch", "-O", "shards=100000000000"), "shards"),
    (("load", "{w}/data.csv", "-t", "iotdb", "-O", "fetch_size=100000000000"), "fetch_size"),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "timeout=1e300"), "timeout"),
    (("load", "{w}/data.lp", "-t", "questdb", "-O", "wal_timeout=1e300"), "wal_timeout"),
    (("load", "{w}/data.lp", "-t", "null-http", "-O", "timeout=1e300"), "timeout"),
    (("load", "{w}/data.lp", "-t", "influx", "--server-option", "flux"), "--server-option"),
    (("load", "{w}/data.lp", "-t", "influx", "--port", "http=70000"), "--port"),
    (("load", "{w}/data.lp", "-t", "influx", "--port", "http=x"), "--port"),
    (("load", "{w}/data.lp", "-t", "influx", "--json", "{w}"), "--json"),
    (("load", "{w}/data.lp", "-t", "influx", "--json", "{w}/no/such/s.json"), "--json"),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "write_concern=-1"), "option write_concern: a number of members"),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "write_concern=0", "-O", "journal=true"),
     "journal=true needs an acknowledged write"),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "write_concern=-1"), "option write_concern: a number of members"),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "write_concern=0", "-O", "journal=true"),
     "journal=true needs an acknowledged write"),
    (("load", "{w}/data.csv", "-t", "cassandra", "--server", "cassandra://bench:hunter22@127.0.0.1:9/ks"),
     "target cassandra: cassandra://127.0.0.1:9: a user or password in the URL is not supported"),
    (("load", "{w}/data.csv", "-t", "cassandra", "--server", "cassandra://127.0.0.1:9/ks"),
     "the keyspace is an option: -O keyspace=NAME"),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "write_concern=-1"), "option write_concern: a number of members"),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "write_concern=0", "-O", "journal=true"),
     "journal=true needs an acknowledged write"),
    (("load", "{w}/data.csv", "-t", "cassandra", "--server", "cassandra://bench:hunter22@127.0.0.1:9/ks"),
     "target cassandra: cassandra://127.0.0.1:9: a user or password in the URL is not supported"),
    (("load", "{w}/data.csv", "-t", "cassandra", "--server", "cassandra://127.0.0.1:9/ks"),
     "the keyspace is an option: -O keyspace=NAME"),
    (("load", "{w}/bad.lp.gz", "-t", "null"), "{w}/bad.lp.gz: not valid gzip data ("),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "write_concern=-1"), "option write_concern: a number of members"),
    (("load", "{w}/data.csv", "-t", "mongodb", "-O", "write_concern=0", "-O", "journal=true"),
     "journal=true needs an acknowledged write"),
    (("load", "{w}/data.csv", "-t", "cassandra", "--server", "cassandra://bench:hunter22@127.0.0.1:9/ks"),
     "target cassandra: cassandra://127.0.0.1:9: a user or password in the URL is not supported"),
    (("load", "{w}/data.csv", "-t", "cassandra", "--server", "cassandra://127.0.0.1:9/ks"),
     "the keyspace is an option: -O keyspace=NAME"),
    (("load", "{w}/bad.lp.gz", "-t", "null"), "{w}/bad.lp.gz: not valid gzip data ("),
    (("load", "-t", "duckdb", "--generate", "use_case=nope"), "--use-case"),
    (("load", "-t", "duckdb", "--generate", "scale=0"), "--scale"),
    (("load", "-t", "duckdb", "--generate", "scale"), "--generate"),
    (("load", "-t", "duckdb", "--generate", f"scale=1,start={END},end={END}"), "--end"),
    (("load", "-t", "duckdb", "--generate", "scale=abc"), "--generate scale=abc"),
    (("load", "-t", "duckdb", "--generate", "scale=2,bogus=1"), "--param bogus: use case devops has no such"),
    # queries generate / list
    (("queries", "generate", "{w}/data.lp", "--types", ",", "-o", "{w}/q2.jsonl"), "--types"),
    (("queries", "generate", "{w}/data.lp", "--types", "", "-o", "{w}/q2.jsonl"), "--types"),
    (("queries", "generate", "{w}/data.lp", "--types", "nosuch", "-o", "{w}/q2.jsonl"), "nosuch"),
    (("queries", "generate", "{w}/data.lp", "-T", "max-cpu-1", "-n", "0", "-o", "{w}/q2.jsonl"), "--count"),
    (("queries", "generate", "{w}/data.lp", "-T", "max-cpu-1", "-n", "-4", "-o", "{w}/q2.jsonl"), "--count"),
    (("queries", "generate", "{w}/data.lp", "-T", "max-cpu-1", "--seed", "-1", "-o", "{w}/q2.jsonl"), "--seed"),
    (("queries", "generate", "{w}/data.lp", "-T", "max-cpu-1", "-o", "{w}"), "--output"),
    (("queries", "generate", "{w}/data.lp", "-T", "max-cpu-1", "-o", "{w}/no/q.jsonl"), "--output"),
    (("queries", "generate", "{w}/data.lp", "-T", "max-cpu-1"), "--output"),
    (("queries", "generate", "-T", "max-cpu-1", "-o", "{w}/q2.jsonl"), "--dataset"),
    (("queries", "generate", "--dataset", "use_case=nope", "-T", "max-cpu-1", "-o", "{w}/q2.jsonl"), "--use-case"),
    (("queries", "generate", "--dataset", "scale", "-T", "max-cpu-1", "-o", "{w}/q2.jsonl"), "--dataset"),
    (("queries", "generate", "--dataset", "seed=x", "-T", "max-cpu-1", "-o", "{w}/q2.jsonl"), "--dataset seed=x"),
    (("queries", "generate", "{w}/data.lp", "--family", "nope", "-o", "{w}/q2.jsonl"), "--family"),
    (("queries", "generate", "{w}/missing.lp", "-T", "max-cpu-1", "-o", "{w}/q2.jsonl"), "missing.lp"),
    (("queries", "list", "--bogus"), "--bogus"),
    (("queries", "list", "extra"), "extra"),
    (("queries", "nosuch"), "nosuch"),
    # execute
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "-w", "0"), "--workers"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "-n", "0"), "--count"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--repeat", "0"), "--repeat"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--count", "-3"), "--count"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--duration", "0"), "--duration"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--duration", "-1"), "--duration"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--duration", "inf"), "--duration"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--rate", "0"), "--rate"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--rate", "-2"), "--rate"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--burn-in", "-1"), "--burn-in"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--max-rows", "-1"), "--max-rows"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--cache", "hot"), "--cache"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--json", "{w}"), "--json"),
    (("execute", "{w}/q.jsonl"), "--target"),
    (("execute", "-t", "duckdb"), "QUERIES_FILE"),
    (("execute", "{w}/missing.jsonl", "-t", "duckdb", "--load", "{w}/data.csv"), "missing.jsonl"),
    (("execute", "{w}/notq.jsonl", "-t", "duckdb", "--load", "{w}/data.csv"), "notq.jsonl"),
    (("execute", "{w}/empty.jsonl", "-t", "duckdb", "--load", "{w}/data.csv"), "empty.jsonl"),
    (("execute", "{w}", "-t", "duckdb", "--load", "{w}/data.csv"), "{w}"),
    (("execute", "{w}/q.jsonl", "-t", "influx"), "--server local"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--load", "{w}/other.csv"), "another dataset"),
    # validate
    (("validate", "{w}/q.jsonl", "-t", "duckdb", "--json", "{w}/no/such/v.json"), "--json"),
    (("validate", "{w}/missing.jsonl", "-t", "duckdb", "--load", "{w}/data.csv"), "missing.jsonl"),
    (("validate", "{w}/q.jsonl", "-t", "postgres"), "--server local"),
    (("validate", "{w}/q.jsonl", "-t", "duckdb", "--workers", "2"), "--workers"),
    # run
    (("run", "{w}/missing.yaml"), "missing.yaml"),
    (("run", "{w}"), "{w}"),
    (("run", "{w}/exp.yaml", "--results", "{w}/data.lp", "-q"), "data.lp"),
    (("run",), "EXPERIMENT_FILE"),
    # report
    (("report", "{w}/nosuch"), "not a run folder"),
    (("report", "{w}/badjson"), "badjson/manifest.json"),
    (("report", "{w}/listjson"), "listjson/manifest.json"),
    (("report", "{w}/trunc"), "trunc/cells.parquet"),
    (("report", "{w}/garbage"), "garbage/cells.parquet"),
    (("report", "{w}/zero"), "zero/cells.parquet"),
    (("report", "{w}/trunc", "-o", "{w}"), "--output"),
    (("report", "{w}/trunc", "-o", "{w}/no/such/r.html"), "--output"),
    # servers, targets, schema, the top level
    (("servers", "start", "nosuch"), "nosuch"),
    (("servers", "start", "influx", "--name", "../evil"), "--name"),
    (("servers", "start", "influx", "--name", ".."), "--name"),
    (("servers", "start", "influx", "--port", "http=0"), "--port"),
    (("servers", "start", "influx", "--port", "http"), "--port"),
    (("servers", "start", "influx", "--server-option", "bogus=1"), "bogus"),
    (("servers", "stop", "../x"), "../x"),
    (("servers", "stop", "no-such-server"), "no-such-server"),
    (("servers", "stop"), "servers stop"),
    (("servers", "install"), "servers install"),
    (("servers", "install", "nosuch"), "nosuch"),
    (("servers", "bogus"), "bogus"),
    (("targets", "extra"), "extra"),
    (("schema", "--x"), "--x"),
    (("nosuchcommand",), "nosuchcommand"),
    (("--bogus",), "--bogus"),
]


# ---- numbers too large: every numeric option has a bound, shown in --help (issue 35 items 7, 10) ---

BIG = "99999999999999999999"
HUGE = "1e300"
LOAD = ("load", "{w}/data.lp", "-t", "influx")
STREAM = ("stream", "-t", "null", "-q", "--duration", "1")
EXEC = ("execute", "{w}/q.jsonl", "-t", "duckdb")
QGEN = ("queries", "generate", "{w}/data.lp", "-T", "max-cpu-1", "-o", "{w}/q2.jsonl")

TOO_LARGE = [
    (GEN + ("--scale", "1000000001", "-o", "{w}/x.lp"), "--scale"),
    (GEN + ("--scale", BIG, "-o", "{w}/x.lp"), "--scale"),
    (GEN + ("--groups", "4097", "-o", "{w}/x.lp"), "--groups"),
    (GEN + ("--group", BIG, "--groups", "2", "-o", "{w}/x.lp"), "--group"),
    (GEN + ("-j", "257", "-o", "{w}/x.lp"), "--processes"),
    (("generate", "--start", "9999-01-01T00:00:00Z", "-o", "{w}/x.lp"), "--start"),
    (("generate", "--start", "-" + BIG, "-o", "{w}/x.lp"), "--start"),
    (GEN[:3] + ("--end", BIG, "-o", "{w}/x.lp"), "--end"),
    (GEN + ("--interval", "99999999999h", "-o", "{w}/x.lp"), "--interval"),
    (GEN + ("-u", "iot", "-P", "max_delay=99999999999", "-o", "{w}/x.lp"), "--param"),
    (GEN[:1] + ("-u", "synthetic", "-P", "tags=100000,100000,100000", "-o", "{w}/x.lp"), "--param"),
    (GEN[:1] + ("-u", "synthetic", "-P", "fields=" + BIG, "-o", "{w}/x.lp"), "--param fields"),
    (GEN[:1] + ("-u", "synthetic", "-P", "measurements=" + BIG, "-o", "{w}/x.lp"), "--param measurements"),
    (LOAD + ("-w", BIG), "--workers"),
    (LOAD + ("-w", "1025"), "--workers"),
    (LOAD + ("-b", BIG), "--batch-size"),
    (LOAD + ("-b", "1000001"), "--batch-size"),
    (LOAD + ("-j", BIG), "--processes"),
    (LOAD + ("--cluster", "local:" + BIG), "--cluster"),
    (STREAM + ("--cluster", "local:257"), "--cluster"),
    (STREAM + ("--repeat", BIG), "--repeat"),
    (LOAD + ("--give-up-after", HUGE), "--give-up-after"),
    (LOAD + ("--stall-timeout", HUGE), "--stall-timeout"),
    (("load", "-t", "duckdb", "--generate", "scale=" + BIG), "--scale"),
    (("load", "-t", "duckdb", "--generate", "start=9999-01-01T00:00:00Z"), "--start"),
    (STREAM + ("--scale", "1000000000000"), "--scale"),
    (STREAM + ("--start", "9999-01-01T00:00:00Z"), "--start"),
    (STREAM + ("--start", "2200-01-01T00:00:00Z"), "--start"),
    (STREAM + ("-w", BIG), "--writers"),
    (STREAM + ("-b", BIG), "--batch-size"),
    (STREAM + ("--rate", HUGE), "--rate"),
    (STREAM[:-2] + ("--duration", HUGE), "--duration"),
    (STREAM + ("--delay", HUGE), "--delay"),
    (STREAM + ("--target-latency", HUGE), "--target-latency"),
    (STREAM + ("--points-per-series", BIG), "--points-per-series"),
    (STREAM + ("--points-per-series", "999999999999"), "--points-per-series"),
    (STREAM + ("--max-errors", BIG), "--max-errors"),
    (STREAM + ("--give-up-after", HUGE), "--give-up-after"),
    (STREAM + ("--stall-timeout", HUGE), "--stall-timeout"),
    (STREAM + ("--query-rate", HUGE), "--query-rate"),
    (STREAM + ("--query-workers", BIG), "--query-workers"),
    (STREAM + ("--query-window", HUGE), "--query-window"),
    (STREAM + ("--freshness-every", HUGE), "--freshness-every"),
    (STREAM + ("--seed", BIG), "--seed"),
    (QGEN + ("-n", "1000001"), "--count"),
    (QGEN + ("--seed", BIG), "--seed"),
    (EXEC + ("-w", "1025"), "--workers"),
    (EXEC + ("-n", BIG), "--count"),
    (EXEC + ("--burn-in", BIG), "--burn-in"),
    (EXEC + ("--rate", HUGE), "--rate"),
    (EXEC + ("--duration", HUGE), "--duration"),
    (EXEC + ("--max-rows", BIG), "--max-rows"),
    (EXEC + ("--query-timeout", HUGE), "--query-timeout"),
    (EXEC + ("--stall-timeout", HUGE), "--stall-timeout"),
]
COMMANDS += TOO_LARGE


@pytest.mark.parametrize("option", ["--scale", "--workers", "--batch-size", "--rate", "--duration", "--count"])
def test_the_bound_of_a_number_is_in_its_help(capsys, option):
    command = {"--scale": "stream", "--workers": "load", "--batch-size": "load", "--rate": "stream",
               "--duration": "stream", "--count": "execute"}[option]
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    text = capsys.readouterr().out
    block = re.search(rf"^\s+(-\w, )?{option} .*?(?=^\s+-)", text, re.M | re.S).group(0)
    assert re.search(r"x<=\d", block), block

@pytest.mark.parametrize("argv,needle", COMMANDS, ids=lambda a: " ".join(a) if isinstance(a, tuple) else None)
def test_bad_command_line(capsys, w, argv, needle):
    code, err = call(capsys, *(a.replace("{w}", str(w)) for a in argv))
    assert_one_line(code, err, needle.replace("{w}", str(w)))


# ---- experiment files ----------------------------------------------------------------------------

GOOD = f"""\
name: bad-input
datasets:
  d: {{scale: 1, end: "{END}"}}
targets:
  a: {{target: duckdb}}
matrix:
  load.workers: [1, 2]
"""

EXPERIMENTS = [
    (GOOD + "targets:\n  b: {target: duckdb}\n", ":8: duplicate key 'targets'"),
    (GOOD.replace("  a: {target: duckdb}\n", "  a: {target: duckdb}\n  a: {target: duckdb}\n"),
     ":6: duplicate key 'a' (first at line 5"),
    (GOOD.replace("  d: {", "  d: {scale: 2, "), ":3: duplicate key 'scale'"),
    (GOOD + "name: other\n", ":8: duplicate key 'name'"),
    (GOOD.replace("  load.workers: [1, 2]\n", "  load.workers: [1, 2]\n  load.workers: [4]\n"), ":8: duplicate key"),
    (GOOD.replace("name: bad-input", "name: ../../etc/evil"), ":1: name: '../../etc/evil' is not a valid name"),
    (GOOD.replace("name: bad-input", "name: ."), ":1: name"),
    (GOOD.replace("name: bad-input", "name: a b"), ":1: name"),
    (GOOD.replace("name: bad-input", "name: ''"), ":1: name"),
    (GOOD.replace("  d: {", "  ../d: {"), ":3: datasets.../d"),
    (GOOD.replace("  a: {target", "  ..: {target"), ":5: targets...: '..' is not a valid name"),
    (GOOD.replace("  a: {target", "  x/y: {target"), ":5: targets.x/y"),
    (GOOD + "exclude:\n  - {target: b}\n", ":9: exclude[0].target: 'b'"),
    (GOOD + "exclude:\n  - {dataset: nope}\n", ":9: exclude[0].dataset: 'nope'"),
    (GOOD + "exclude:\n  - {load.batch_size: 5}\n", ":9: exclude[0].load.batch_size: not a key of the matrix"),
    (GOOD + "exclude:\n  - {load.workers: 3}\n", ":9: exclude[0].load.workers: 3 is not among its values"),
    (GOOD + "exclude:\n  - {load.wrkers: 1}\n", ":9: exclude[0].load.wrkers: unknown knob"),
    (GOOD + "query_cells:\n  - {target: b}\n", ":9: query_cells[0].target: 'b'"),
    (GOOD + "  dataset.scale: [1, 0]\n", ":8: matrix.dataset.scale: 0: --scale"),
    (GOOD + "  dataset.scale: [-1]\n", ":8: matrix.dataset.scale"),
    (GOOD.replace("{scale: 1,", "{use_case: iot, scale: 1,") + "  dataset.params.missing: [0.1, 2]\n",
     ":8: matrix.dataset.params.missing: 2: --param missing"),
    (GOOD.replace("{scale: 1,", "{use_case: iot, scale: 1,") + "  dataset.params.bogus: [1]\n",
     ":8: matrix.dataset.params.bogus"),
    (GOOD.replace("{scale: 1,", "{start: \"" + END + "\", scale: 1,"), ":3: datasets.d: --end"),
    (GOOD.replace("{scale: 1,", "{use_case: nope, scale: 1,"), ":3: datasets.d: --use-case"),
    (GOOD.replace("{scale: 1,", "{interval: ten, scale: 1,"), ":3: datasets.d: --interval"),
    (GOOD.replace("{scale: 1,", "{seed: -1, scale: 1,"), ":3: datasets.d: --seed"),
    (GOOD.replace("{scale: 1,", "{start: yesterday, scale: 1,"), ":3: datasets.d: --start"),
    (GOOD.replace("[1, 2]", "[1, 0]"), ":7: matrix.load.workers: 0"),
    (GOOD + "  execute.cache: [warm, hot]\n", ":8: matrix.execute.cache: 'hot'"),
    (GOOD + "  execute.count: [0]\n", ":8: matrix.execute.count: 0"),
    (GOOD + "  queries.count: [5, -1]\n", ":8: matrix.queries.count: -1"),
    (GOOD + "  load.batch_size: [x]\n", ":8: matrix.load.batch_size: 'x'"),
    (GOOD + "  target: [a, b]\n", ":8: matrix.target: 'b' is not declared"),
    (GOOD + "repeat: 0\n", ":8: repeat"),
    (GOOD + "repeat: 1000000000\n", ":8: repeat"),
    (GOOD + "load: {repeat: 0}\n", ":8: load.repeat"),
    (GOOD + "execute: {repeat: 1001}\n", ":8: execute.repeat"),
    (GOOD + "stream: {repeat: 1000000000}\n", ":8: stream.repeat"),
    (GOOD + "repetitions: 2\n", ":8: repetitions: replaced by repeat: N"),
    (GOOD.replace("{scale: 1,", "{scale: 1000000000000,"), ":3: datasets.d: --scale"),
    (GOOD.replace("{scale: 1,", "{start: \"9999-01-01T00:00:00Z\", scale: 1,"), ":3: datasets.d: --start"),
    (GOOD + "  dataset.scale: [1, 1000000000000]\n", ":8: matrix.dataset.scale"),
    (GOOD + "load: {batch_size: 99999999999999999999}\n", ":8: load.batch_size"),
    (GOOD + "load: {workers: 100000}\n", ":8: load.workers"),
    (GOOD + "load: {processes: 100000}\n", ":8: load.processes"),
    (GOOD + "queries: {count: 99999999999}\n", ":8: queries.count"),
    (GOOD + "execute: {count: 99999999999999999999}\n", ":8: execute.count"),
    (GOOD + "execute: {burn_in: 99999999999999999999}\n", ":8: execute.burn_in"),
    (GOOD + "execute: {workers: 100000}\n", ":8: execute.workers"),
    (GOOD + "execute: {query_timeout: 1e300}\n", ":8: execute.query_timeout"),
    (GOOD + "stream: {writers: 100000}\n", ":8: stream.writers"),
    (GOOD + "stream: {batch_size: 99999999999999}\n", ":8: stream.batch_size"),
    (GOOD + "stream: {rate: 1e300}\n", ":8: stream.rate"),
    (GOOD + "stream: {duration: 1e300}\n", ":8: stream.duration"),
    (GOOD + "stream: {points_per_series: 99999999999999999999}\n", ":8: stream.points_per_series"),
    (GOOD + "stream: {query_workers: 100000}\n", ":8: stream.query_workers"),
    (GOOD + "load: {batch_size: 0}\n", ":8: load.batch_size"),
    (GOOD + "queries: {count: 0}\n", ":8: queries.count"),
    (GOOD + "execute: {burn_in: -1}\n", ":8: execute.burn_in"),
    (GOOD + "phases: [generate, fly]\n", ":8: phases.1"),
    (GOOD + "colour: red\n", ":8: colour: unknown key"),
    (GOOD.replace("target: duckdb", "target: nosuchdb"), ":5: targets.a.target: unknown target 'nosuchdb'"),
    (GOOD.replace("target: duckdb", "target: influx, server_options: {bogus: 1}"), ":5: targets.a.server_options"),
    (GOOD.replace("target: duckdb", "target: duckdb, options: {bogus: 1}"), ":5: targets.a.options"),
    (GOOD.replace("{scale: 1,", "{use_case: custom, schema_file: nope.yaml, scale: 1,"),
     ":3: datasets.d.schema_file: no such file"),
    ("- just\n- a list\n", "an experiment file is a mapping"),
    ("name: [unclosed\n", ":2: not valid YAML"),
    ("", "an experiment file is a mapping"),
    ("name: x\ndatasets: {}\ntargets: {a: {target: duckdb}}\n", ":2: datasets"),
]


@pytest.mark.parametrize("text,needle", EXPERIMENTS)
def test_bad_experiment_file(capsys, tmp_path, text, needle):
    f = tmp_path / "e.yaml"
    f.write_text(text)
    code, err = call(capsys, "run", "--dry-run", str(f))
    assert_one_line(code, err, str(f))
    assert needle in err, err


def test_a_bad_schema_beside_an_experiment_fails_at_load(capsys, tmp_path):
    (tmp_path / "s.yaml").write_text("name: s\nmeasurements:\n  - name: m\n    fields: [{name: v}]\n")
    f = tmp_path / "e.yaml"
    f.write_text(GOOD.replace("{scale: 1,", "{use_case: custom, schema_file: s.yaml, scale: 1,"))
    code, err = call(capsys, "run", "--dry-run", str(f))
    assert_one_line(code, err, f"{f}:3: datasets.d: {tmp_path / 's.yaml'}: measurements[0].fields[0].evolution")


# ---- schema files (custom use case) --------------------------------------------------------------

FIELD = "{name: v, evolution: walk, step: {normal: [0, 1]}}"
SCHEMA = f"name: s\nmeasurements:\n  - name: m\n    fields: [{FIELD}]\n"

SCHEMAS = [
    ("- a\n- b\n", "expected a mapping"),
    ("", "expected a mapping"),
    (SCHEMA.replace("name: s\n", "nmae: s\n"), "nmae"),
    (SCHEMA.replace("evolution: walk", "evolution: wlak"), "measurements[0].fields[0].evolution"),
    (SCHEMA.replace("evolution: walk, ", ""), "measurements[0].fields[0].evolution"),
    (SCHEMA.replace("name: v,", "name: v, type: str,"), "measurements[0].fields[0].type"),
    (SCHEMA.replace(f"[{FIELD}]", "[]"), "measurements[0].fields"),
    ("name: s\nmeasurements: []\n", "measurements"),
    (SCHEMA + "interval: 10 parsecs\n", "interval"),
    (SCHEMA + "scale: 0\n", "scale"),
    (SCHEMA + "colour: red\n", "colour"),
    ("name: s\nmeasurements:\n\t- name: m\n", "not valid YAML"),
]


@pytest.mark.parametrize("text,needle", SCHEMAS)
def test_bad_schema_file(capsys, tmp_path, text, needle):
    f = tmp_path / "s.yaml"
    f.write_text(text)
    code, err = call(capsys, "generate", "--use-case", "custom", "--schema", str(f), "--end", END, "-q",
                     "-o", str(tmp_path / "x.lp"))
    assert_one_line(code, err, str(f))
    assert needle in err, err


# ---- the environment -----------------------------------------------------------------------------

def test_tsbench_home_not_a_directory(capsys, monkeypatch, tmp_path):
    (tmp_path / "f").write_text("")
    monkeypatch.setenv("TSBENCH_HOME", str(tmp_path / "f"))
    code, err = call(capsys, "servers", "list")
    assert_one_line(code, err, f"TSBENCH_HOME: {tmp_path / 'f'} is not a directory")


def test_tsbench_home_read_only(capsys, monkeypatch, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.access(ro, os.W_OK):        # root: a read-only file system instead
        ro = pathlib.Path("/sys/tsbench-home")
        if os.access("/sys", os.W_OK) and not pathlib.Path("/sys").is_mount():
            pytest.skip("no read-only place to point TSBENCH_HOME at")
    monkeypatch.setenv("TSBENCH_HOME", str(ro))
    code, err = call(capsys, "servers", "list")
    assert_one_line(code, err, f"TSBENCH_HOME: {ro} is not a writable directory")


# ---- as a user runs it ---------------------------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (("generate", "--seed", "-1", "-o", "-"), "--seed"),
    (("generate", "--scale", "1", "--end", END, "-q", "-o", "/dev/full"), "--output"),
    (("report", "{w}/badjson"), "manifest.json"),
    (("execute", "{w}/q.jsonl", "-t", "duckdb", "--duration", "-1"), "--duration"),
    (("stream", "-t", "null", "--scale", "1000000000000", "--duration", "1"), "--scale"),
    (("generate", "--scale", "1000000000000", "-o", "-"), "--scale"),
    (("generate", "--start", "9999-01-01T00:00:00Z", "-o", "-"), "--start"),
    (("stream", "-t", "null", "-b", "99999999999999", "--duration", "1"), "--batch-size"),
])
def test_bad_input_in_a_subprocess(w, args, needle):
    p = run_cli(*(a.replace("{w}", str(w)) for a in args), check=False)
    assert_one_line(p.returncode, p.stderr.decode(), needle)


def test_a_cassandra_url_with_a_password_is_one_line_without_it(w):
    p = run_cli("load", str(w / "data.csv"), "-t", "cassandra", "--server", "cassandra://bench:hunter22@127.0.0.1:9",
                check=False)
    assert_one_line(p.returncode, p.stderr.decode(), "a user or password in the URL is not supported")
    assert b"hunter22" not in p.stderr + p.stdout


@pytest.mark.parametrize("gen", ["scale=abc", "scale=2,bogus=1", f"scale=1,start={END},end={END}"])
def test_a_failed_load_generate_leaves_no_temporary_folder(capsys, monkeypatch, tmp_path, gen):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, err = call(capsys, "load", "-t", "duckdb", "--generate", gen)
    assert code == 2 and list(tmp_path.iterdir()) == [], err


def test_bad_experiment_in_a_subprocess(tmp_path):
    f = tmp_path / "e.yaml"
    f.write_text(GOOD.replace("  a: {target: duckdb}\n", "  a: {target: duckdb}\n  a: {target: duckdb}\n"))
    p = run_cli("run", str(f), "--results", str(tmp_path / "r"), check=False)
    assert_one_line(p.returncode, p.stderr.decode(), f"{f}:6: duplicate key 'a'")
    assert not (tmp_path / "r").exists()


# ---- beyond bad input: internal errors, Ctrl-C, masking -----------------------------------------

@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_reader_that_closes_the_output_early_ends_generate_without_a_word(processes):
    """`generate -o - | head -c 10`: the exit code of a Unix tool killed by SIGPIPE (141),
    not click's word-less 1; nothing on stderr; no generator process left behind."""
    import subprocess
    import sys

    import psutil

    end = "2016-01-01T12:00:00Z"       # 3.9M rows: two processes where two CPUs are
    p = subprocess.Popen([sys.executable, "-m", "tsbench", "generate", "--scale", "100", "--end", end,
                          "-j", processes, "-o", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert len(p.stdout.read(10)) == 10
    p.stdout.close()
    _, err = p.communicate(timeout=60)
    assert (p.returncode, err) == (141, b"")
    left = [q.pid for q in psutil.process_iter(["cmdline"]) if end in (q.info["cmdline"] or ())]
    assert left == []


def test_an_internal_error_is_one_line_and_a_log(capsys, monkeypatch, tmp_path):
    def boom(*a, **k):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr("tsbench.experiments.experiment.load_experiment", boom)
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        cli.main(["run", str(tmp_path / "e.yaml")])
    err = capsys.readouterr().err
    assert ei.value.code == cli.INTERNAL_ERROR == 70
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("tsbench: internal error: RuntimeError: boom second line, details in "), err
    log = pathlib.Path(err.rsplit("details in ", 1)[1].strip())
    assert "Traceback" in log.read_text() and "boom" in log.read_text()
    log.unlink()


def test_a_broken_pipe_that_is_not_stdout_is_an_error_in_one_line(capsys, monkeypatch, tmp_path):
    """A database's socket closing mid-write (EPIPE) is not the reader of stdout going away:
    it is said, not ended in silence (click alone would exit 1 without a word)."""
    def closed(*a, **k):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("tsbench.experiments.experiment.load_experiment", closed)
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        cli.main(["run", str(tmp_path / "e.yaml")])
    err = capsys.readouterr().err
    assert ei.value.code == cli.INTERNAL_ERROR and err.count("\n") == 1, err
    assert err.startswith("tsbench: internal error: BrokenPipeError: [Errno 32] Broken pipe, details in "), err
    pathlib.Path(err.rsplit("details in ", 1)[1].strip()).unlink()


def test_ctrl_c_is_130_in_one_line(capsys, monkeypatch, tmp_path):
    def interrupt(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr("tsbench.experiments.experiment.load_experiment", interrupt)
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        cli.main(["run", str(tmp_path / "e.yaml")])
    err = capsys.readouterr().err
    assert ei.value.code == 130 and "tsbench: interrupted" in err and "Traceback" not in err, err


def test_error_lines_are_masked(capsys, monkeypatch, tmp_path):
    from tsbench.core.errors import UserError

    def leak(*a, **k):
        raise UserError("cannot reach postgresql://bench:hunter2@db.example:5432/tsbench")

    monkeypatch.setattr("tsbench.experiments.experiment.load_experiment", leak)
    code, err = call(capsys, "run", str(tmp_path / "e.yaml"))
    assert_one_line(code, err, "postgresql://bench:***@db.example")
    assert "hunter2" not in err


def test_the_corpus_is_large():
    n = len(COMMANDS) + len(EXPERIMENTS) + len(SCHEMAS) + 2 + 4 + 1 + 1 + 1
    assert n >= 100, n
    assert json.dumps([list(a) for a, _ in COMMANDS])      # plain data, one case per line
