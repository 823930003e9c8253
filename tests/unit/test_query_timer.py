"""One query timer (phase 4): the executor times query() to the last byte and the target's
finish() (client work the user waits for, client_s), and no database package reads a
clock on its query path. In-process: a fake target, and the source read as syntax."""

from __future__ import annotations

import ast
import asyncio
import pathlib
import time

import pytest

from tsbench.databases.shared.target import Target
from tsbench.execute.run import ExecOptions, execute
from tsbench.queries.base import Answer, QuerySpec

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATABASES = ROOT / "tsbench" / "databases"
CLOCKS = {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns",
          "process_time", "process_time_ns", "thread_time", "thread_time_ns"}
SEND_S, FINISH_S = 0.05, 0.2


class SlowFinish(Target):
    """Test-only: the server answers in SEND_S, and the client needs FINISH_S more to
    compute the rows from the answer."""

    name = "slow-finish"
    format = "influx"

    def render(self, spec):
        return spec.id

    async def query(self, native):
        await asyncio.sleep(SEND_S)
        return Answer([(native,)], 10, None)

    def finish(self, native, answer):
        time.sleep(FINISH_S)                       # the client's work: the worker waits for it
        return [tuple(r) for r in answer.raw]


def test_finish_is_inside_the_latency_and_is_client_s():
    specs = [QuerySpec(i, "t", {}) for i in range(3)]
    res = asyncio.run(execute(SlowFinish(), specs, ExecOptions(cache="none", progress=False)))
    assert [r["status"] for r in res.records] == ["ok"] * 3
    for r in res.records:
        assert r["client_s"] is not None and FINISH_S <= r["client_s"] < FINISH_S + 1.0, r
        assert r["latency"] >= SEND_S + r["client_s"] and r["latency"] < SEND_S + FINISH_S + 1.0, r
        assert r["rows"] == 1
    stats = {s["type"]: s for s in res.stats()}["all"]
    assert stats["client_p50_ms"] >= FINISH_S * 1e3 and stats["min_ms"] >= (SEND_S + FINISH_S) * 1e3


# ---- no target reads a clock on its query path ------------------------------------------------
def _time_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """A module's names for the time module (import time [as t]) and for its clocks
    (from time import perf_counter [as pc])."""
    modules, clocks = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "time"}
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            clocks |= {a.asname or a.name for a in node.names if a.name in CLOCKS}
    return modules, clocks


def _calls(fn: ast.AST, time_names: tuple[set[str], set[str]]) -> tuple[set[str], list[str]]:
    """The names a function calls (f(), x.f()) and the clocks it reads (time.perf_counter(),
    a name imported from time, loop.time()), outside its except clauses (the error path:
    a clock there may bound a grace, e.g. how long a cluster may be unreachable; it times
    no answer)."""
    modules, clocks = time_names
    names: set[str] = set()
    read: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.ExceptHandler):
            return
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                names.add(f.id)
                read.extend([f.id] if f.id in clocks else [])
            elif isinstance(f, ast.Attribute):
                names.add(f.attr)
                on_time = isinstance(f.value, ast.Name) and f.value.id in modules
                read.extend([ast.unparse(f)] if (on_time and f.attr in CLOCKS) or f.attr == "time" else [])
        for child in ast.iter_child_nodes(node):
            visit(child)
    visit(fn)
    return names, read


def _functions(pkg: pathlib.Path, databases: pathlib.Path) -> dict[str, list]:
    """name -> [(module, function node, the module's time names)] of a package; "(dialect)":
    every function of its dialect modules (dialect.py, dialects/)."""
    funcs: dict[str, list] = {}
    for path in sorted(pkg.rglob("*.py")):
        rel = str(path.relative_to(databases))
        tree = ast.parse(path.read_text(), rel)
        names = _time_names(tree)
        dialect = path.name == "dialect.py" or path.parent.name == "dialects"
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for key in [node.name] + (["(dialect)"] if dialect else []):
                    funcs.setdefault(key, []).append((rel, node, names))
    return funcs


def clocks_on_query_paths(databases: pathlib.Path) -> list[str]:
    """Every clock read in a function of a database package (not shared/) on its query
    path: query() and finish(), and every function of the same package they call, by
    name, transitively; a dialect module (dialect.py, dialects/) is on it whole. Waits
    with deadlines in create/compact/load are not on it."""
    found = []
    for pkg in sorted(p for p in databases.iterdir() if p.is_dir() and p.name not in ("shared", "__pycache__")):
        funcs = _functions(pkg, databases)
        todo, seen = ["query", "finish", "(dialect)"], set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for rel, fn, time_names in funcs.get(name, ()):
                calls, read = _calls(fn, time_names)
                found += [f"{rel}:{fn.lineno} {fn.name}() reads {c}()" for c in read]
                todo += calls
    return sorted(set(found))


def test_no_database_package_reads_a_clock_on_its_query_path():
    found = clocks_on_query_paths(DATABASES)
    assert not found, "the executor's timer (execute/timer.py) times queries, not the target:\n" + "\n".join(found)


@pytest.mark.parametrize("source, flagged", [
    ("import time\nclass T:\n    async def query(self, q):\n        return self._send(q)\n"
     "    def _send(self, q):\n        t0 = time.perf_counter()\n        return t0\n", True),
    ("class T:\n    def finish(self, q, a):\n        return asyncio.get_running_loop().time()\n", True),
    ("from time import perf_counter as pc\nclass T:\n    def finish(self, q, a):\n        return pc()\n", True),
    ("class T:\n    async def query(self, q):\n        return self.spelling.time_ns()\n", False),
    ("import time\nclass T:\n    async def compact(self):\n        deadline = time.monotonic() + 60\n"
     "    async def query(self, q):\n        return 1\n", False),
    ("import time\nclass T:\n    async def query(self, q):\n        try:\n            return 1\n"
     "        except OSError:\n            self.down(time.monotonic())\n", False),
])
def test_the_clock_check_can_fail(tmp_path, source, flagged):
    """A clock in a helper query() calls, or in finish(), is found; one in compact() or in
    an except clause (a grace on the error path) is not."""
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "target.py").write_text(source)
    assert bool(clocks_on_query_paths(tmp_path)) is flagged
