"""The markers by kind (tests/marking.py): every database of the registry has a marker
declared in pyproject.toml, every folder of tests/databases/ is a database's, and, as
pytest collects them, every test under tests/databases/<db>/ carries <db> and every
contract case the marker of its database; the rules that find what a test asks for."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tomllib

from tsbench import databases
from tsbench.databases.postgres.server import PostgresServer

import marking
from conftest import local_server, run_cli

ROOT = pathlib.Path(__file__).resolve().parents[2]

LISTER = '''
import json, os

def pytest_collection_finish(session):
    out = {}
    for it in session.items:
        params = getattr(getattr(it, "callspec", None), "params", {})
        out[it.nodeid] = {"markers": sorted({m.name for m in it.iter_markers()}),
                          "params": {k: v for k, v in params.items() if isinstance(v, str)}}
    with open(os.environ["TSBENCH_MARKERS_OUT"], "w") as f:
        json.dump(out, f)
'''


def test_every_database_has_a_declared_marker():
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    declared = {m.split(":")[0] for m in ini["markers"]}
    assert set(databases.PACKAGES) | {"slow"} <= declared
    assert "--strict-markers" in ini["addopts"].split()


def test_every_database_folder_is_a_registered_database():
    folders = {p.name for p in (ROOT / "tests" / "databases").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders <= set(databases.PACKAGES), folders - set(databases.PACKAGES)


def _collected(tmp_path, *paths: str) -> dict:
    """{nodeid: {"markers", "params"}} as pytest collects `paths` with the suite's conftest."""
    (tmp_path / "list_markers.py").write_text(LISTER)
    out = tmp_path / "markers.json"
    env = {**os.environ, "TSBENCH_MARKERS_OUT": str(out),
           "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(tmp_path)) if p)}
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "-p", "list_markers", *paths], cwd=ROOT, env=env, capture_output=True, timeout=600, check=False)
    assert p.returncode == 0, p.stdout.decode()[-3000:]
    return json.loads(out.read_text())


def test_database_tests_and_contract_cases_carry_their_database_marker(tmp_path):
    items = _collected(tmp_path, "tests/databases", "tests/contract")
    missing = []
    for nodeid, it in items.items():
        parts = nodeid.split("::")[0].split("/")
        wanted = {parts[2]} if len(parts) > 3 and parts[1] == "databases" else set()
        if parts[1] == "contract":
            wanted |= {marking.package_named(v) or f"{v}?" for k, v in it["params"].items() if k in marking.PARAMETERS}
        missing += [f"{nodeid}: {db}" for db in sorted(wanted - set(it["markers"]))]
    assert any("contract" in nodeid and "influx" in it["markers"] for nodeid, it in items.items())
    assert not missing, "\n".join(missing[:20])


def _asks_by_call():
    with local_server("victoriametrics"):
        run_cli("load", "x.lp", "-t", "cassandra-wide")


def _asks_by_class():
    PostgresServer(name="never-started")


def _names_by_experiment():
    return "targets:\n  a: {target: questdb}\n"


def _calls_a_helper():
    return _asks_by_call()


def _runs_commands():
    run_cli("generate", "-q", "-o", "x.lp")
    run_cli("execute", "q.jsonl", "-t", "duckdb")
    subprocess.run([sys.executable, "-m", "tsbench", "report", "r"])
    return ["servers", "start", "null-http", "--name", "sink"], ("load", "execute")


# reached through SAMPLES only, so that the test below does not itself ask for these
SAMPLES = {f.__name__: f for f in (_asks_by_call, _asks_by_class, _names_by_experiment, _calls_a_helper,
                                   _runs_commands)}


def test_what_a_test_asks_for_names_and_runs_is_found():
    used = {name: marking.used_by(f) for name, f in SAMPLES.items()}
    assert used["_asks_by_call"] == ({"victoriametrics", "cassandra"}, set(), {"load"})
    assert used["_asks_by_class"] == ({"postgres"}, {"postgres"}, set())
    assert used["_names_by_experiment"] == (set(), {"questdb"}, set())
    assert used["_calls_a_helper"][0] == {"victoriametrics", "cassandra"}
    assert used["_runs_commands"] == ({"duckdb", "null"}, set(), {"execute", "report", "servers"})
    assert marking.package_named("influx-flux") == "influx" and marking.package_named("null-http") == "null"
    assert marking.package_named("opensearch") == "elasticsearch" and marking.package_named("csv") is None
    assert marking.server_packages() == set(databases.PACKAGES) - {"null", "duckdb", "clickhouse", "remotewrite"}
