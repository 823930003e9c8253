"""Shared helpers of the test suite: run the real command line, parse the
formats back (test-side parsers, independent of the C serializers)."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

from tsbench.commands import cli
from tsbench.data.dataset import DatasetSpec, resolve

import marking


def run_cli(*args: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m tsbench ARGS` in a subprocess, as a user runs it (env: extra variables)."""
    p = subprocess.run([sys.executable, "-m", "tsbench", *args], capture_output=True,
                       env={**os.environ, **env} if env else None)
    if check and p.returncode != 0:
        raise AssertionError(f"tsbench {' '.join(args)} failed: {p.stderr.decode()}")
    return p


def call(capsys, *argv: str) -> tuple[int, str]:
    """`tsbench ARGV` in-process: (exit code, stderr)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as ei:
        cli.main(list(argv))
    return ei.value.code, capsys.readouterr().err


def assert_one_line(code, err: str, needle: str) -> None:
    assert code == 2, err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err and err.startswith("tsbench: error: "), err
    assert needle in err, err


def run_notebook(run_dir):
    """experiments/analysis.ipynb executed on a run folder (TSBENCH_RUN); the executed notebook."""
    import nbclient
    import nbformat

    nb = nbformat.read(os.path.join(os.path.dirname(__file__), "..", "experiments", "analysis.ipynb"), as_version=4)
    os.environ["TSBENCH_RUN"] = str(run_dir)
    try:
        nbclient.NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    finally:
        del os.environ["TSBENCH_RUN"]
    return nb


def generate_bytes(tmp_path, *args: str, name: str = "out.dat") -> bytes:
    out = tmp_path / name
    run_cli("generate", "-q", "-o", str(out), *args)
    return out.read_bytes()


def dataset(**kw):
    return resolve(DatasetSpec(**kw))


def lift_process_plan(monkeypatch) -> None:
    """generate in this process then starts as many processes as asked, however little
    the work: the plan's thresholds (rows a process, bytes a share) and CPU count lifted."""
    from tsbench.data import generate as gen

    monkeypatch.setattr(gen, "MIN_ROWS_PER_PROCESS", 1)
    monkeypatch.setattr(gen, "MIN_SHARE_BYTES", 0)
    monkeypatch.setattr(gen, "usable_cpus", lambda: 64)


def _unescape(s: str) -> str:
    return s.replace("\\,", ",").replace("\\ ", " ").replace("\\=", "=").replace("\\\\", "\\")


def _split(s: str, sep: str) -> list[str]:
    """Split on sep where it is not escaped with a backslash."""
    out, cur, i = [], [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            cur.append(s[i:i + 2])
            i += 2
            continue
        if c == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


def parse_influx(text: str):
    """Yield (measurement, {tag: value}, {field: float|int}, ts_ns) per line."""
    for line in text.splitlines():
        head, fields, ts = _split(line, " ")
        parts = _split(head, ",")
        tags = {}
        for kv in parts[1:]:
            k, v = _split(kv, "=")
            tags[_unescape(k)] = _unescape(v)
        vals = {}
        for kv in _split(fields, ","):
            k, v = _split(kv, "=")
            vals[_unescape(k)] = int(v[:-1]) if v.endswith("i") else float(v)
        yield _unescape(parts[0]), tags, vals, int(ts)


def parse_csv(text: str, schema):
    """Yield (measurement, {tag: value|None}, {field: float|int|None}, ts_ns) per line."""
    import datetime as dt

    names = {se.name: i for i, se in enumerate(schema.series)}
    for row in csv.reader(io.StringIO(text)):
        s = names[row[0]]
        tags_decl = schema.series_tags(s)
        fields_decl = [f for f in schema.series[s].fields if not f.hidden]
        t = dt.datetime.fromisoformat(row[1].replace("Z", "+00:00"))
        ts = int(round(t.timestamp())) * 1_000_000_000
        tvals = row[2: 2 + len(tags_decl)]
        fvals = row[2 + len(tags_decl):]
        assert len(fvals) == len(fields_decl)
        tags = {tg.key: (v if v != "" else None) for tg, v in zip(tags_decl, tvals)}
        vals = {}
        for f, v in zip(fields_decl, fvals):
            vals[f.name] = None if v == "" else (int(v) if f.type == "int" else float(v))
        yield row[0], tags, vals, ts


def columns(ds, lo=None, hi=None, seed=None):
    """The columnar output of a whole dataset slice (one C call per 1M records)."""
    from tsbench.data.native import Simulator

    lo = 0 if lo is None else lo
    hi = ds.entities if hi is None else hi
    sim = Simulator(ds.compiled, ds.spec.seed if seed is None else seed, lo, hi, ds.start_ns, ds.interval_ns,
                    ds.epochs)
    width = max(sum(1 for f in se.fields if not f.hidden) for se in ds.schema.series)
    parts = []
    while True:
        r, cols = sim.fill_columns(1 << 20, width)
        parts.append(cols)
        if r.done:
            break
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}, sim


def pytest_collection_modifyitems(items):
    """Markers by kind: every database a test uses, and `slow` (tests/marking.py)."""
    marking.mark(items)


@pytest.fixture
def small_devops():
    return dataset(use_case="devops", scale=3, end="2016-01-01T01:00:00Z", seed=7)


def generator_series(ds, checks):
    """{(measurement, field, entity): (first tag value, [(time_ns, value)] in time order)}
    straight from the simulator's columnar output: what a database must give back."""
    cols, sim = columns(ds)
    names = [se.name for se in ds.schema.series]
    out = {}
    for meas, field, entity in checks:
        s = names.index(meas)
        visible = [f.name for f in ds.schema.series[s].fields if not f.hidden]
        rows = (cols["series"] == s) & (cols["entity"] == entity)
        order = np.argsort(cols["time"][rows], kind="stable")
        ts = cols["time"][rows][order].tolist()
        vals = cols["values"][rows][order, visible.index(field)].tolist()
        out[meas, field, entity] = sim.tag_values(entity, s)[0], list(zip(ts, vals))
    return out


@pytest.fixture(scope="session", autouse=True)
def tshome():
    """A tsbench home of the test session's own (server instances, state files), sharing
    the installed binaries and jars, so tests never meet a server a user left running. Set as
    $TSBENCH_HOME for the whole session."""
    from tsbench.databases.shared.server import home

    d = tempfile.mkdtemp(prefix="tsbench-home-")     # not under pytest's 0700 tree: postgres must reach it
    real = home()
    for shared in ("bin", "lib"):                    # built binaries and Maven jars
        (real / shared).mkdir(parents=True, exist_ok=True)
        os.symlink(real / shared, os.path.join(d, shared))
    old = os.environ.get("TSBENCH_HOME")
    os.environ["TSBENCH_HOME"] = d        # for the tests and the commands they run
    yield d
    if old is None:
        os.environ.pop("TSBENCH_HOME", None)
    else:
        os.environ["TSBENCH_HOME"] = old
    shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def local_server(kind: str, **options):
    """A real server of `kind` started by tsbench in a temporary instance dir under /tmp
    (reachable by servers that drop privileges, unlike pytest's 0700 tree), stopped after."""
    from tsbench import databases

    d = tempfile.mkdtemp(prefix=f"tsbench-{kind}-")
    srv = databases.server_class(kind)(name=f"test-{kind}-{os.getpid()}-{os.path.basename(d)}", instance_dir=d,
                            options=options)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def target_url(target: str, server_options: dict | None = None):
    """The URL of a fresh local instance of a target's database: a server tsbench starts,
    or an in-process database's file under a temporary dir; gone after."""
    from tsbench import databases

    cls = databases.target_class(target)
    if cls.server_kind is not None:
        with local_server(cls.server_kind, **(server_options or {})) as srv:
            yield srv.url
        return
    d = tempfile.mkdtemp(prefix=f"tsbench-{target}-")
    try:
        yield cls.local_url(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def endpoint(request):
    """(target, URL) of one fresh local instance of the target the test's parameter names
    (indirect), for the module."""
    with target_url(request.param) as url:
        yield request.param, url


@pytest.fixture(scope="module")
def pg():
    """A local PostgreSQL server for the module (a module needing another kind defines its own)."""
    with local_server("postgres") as srv:
        yield srv


def load_into(target: str, url: str, df, options: dict | None = None, compact: bool = True):
    """Load a data file into a target with the real loader (if_exists drop); the count is verified.
    compact=False: for queries only (InfluxDB's compaction waits out its 10 s cold-cache snapshot)."""
    import asyncio

    from tsbench.load.connect import connect
    from tsbench.load.run import LoadOptions, load

    async def go():
        async with connect(target, url, options or {}) as c:
            res = await load(c.target, df, LoadOptions(progress=False, if_exists="drop", compact=compact))
            assert res.verified, res.summary()
            return res
    return asyncio.run(go())


def execute_on(target: str, url: str, df, specs, reference, options: dict | None = None, **kw):
    """Run queries on a target with the real executor (the data file's tables attached, answers
    checked against the reference); ExecOptions keywords in kw."""
    import asyncio

    from tsbench.execute.run import ExecOptions, execute
    from tsbench.load.connect import connect

    async def go():
        async with connect(target, url, options or {}) as c:
            await c.target.attach(df.tables())
            return await execute(c.target, specs, ExecOptions(progress=False, **kw), reference)
    return asyncio.run(go())
