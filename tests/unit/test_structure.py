"""The package's structure, checked over the source (no import of tsbench needed):
nothing outside a database's package imports it, there is no import cycle in
tsbench/, the orchestration and experiment modules have no long function, and
the README's query-support table is the one `queries list --markdown` prints."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "tsbench"
ORCHESTRATION = ("experiments/runner.py", "experiments/session.py", "commands/cli.py", "experiments/experiment.py",
                 "load/connect.py", "execute/run.py", "load/run.py", "stream/run.py")
MAX_FUNCTION_LINES = 60


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(mod: str, is_pkg: bool, level: int, target: str | None) -> str:
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def import_graph() -> dict[str, set[str]]:
    """module -> the tsbench modules it imports, anywhere in its body (functions included)."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = _resolve(name, is_pkg, node.level, node.module) if node.level else node.module
                names = [f"{src}.{a.name}" if f"{src}.{a.name}" in mods else src for a in node.names]
            else:
                continue
            edges |= {n for n in names if n in mods and n != name}
        graph[name] = edges
    return graph


def _database_of(mod: str) -> str | None:
    parts = mod.split(".")
    if len(parts) >= 3 and parts[:2] == ["tsbench", "databases"] and parts[2] != "shared" and (PKG / "databases" / parts[2]).is_dir():
        return ".".join(parts[:3])
    return None


def test_nothing_outside_a_database_package_imports_it():
    bad = [(m, d) for m, deps in import_graph().items() for d in deps
           if _database_of(d) and _database_of(d) != _database_of(m)]
    assert not bad, f"modules importing another database's package: {bad}"


# what every phase shares, below the databases: none of it imports tsbench.databases
LOWER = ("tsbench.core.model", "tsbench.core.errors", "tsbench.data.native", "tsbench.data.schema", "tsbench.data.dataset",
         "tsbench.data.datafile", "tsbench.data.batches", "tsbench.data.generate", "tsbench.core.timeutil", "tsbench.data.usecases",
         "tsbench.queries")


def test_lower_layers_do_not_import_the_databases():
    bad = [(m, d) for m, deps in import_graph().items() if m.startswith(LOWER) for d in deps
           if d.startswith("tsbench.databases")]
    assert not bad, f"modules below the databases importing them: {bad}"


def test_no_import_cycle():
    graph = import_graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state and (cycle := visit(d)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = visit(m)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checks_can_fail(tmp_path, monkeypatch):
    """The two checks above find a cycle and a stray import when there is one."""
    pkg = tmp_path / "tsbench"
    (pkg / "databases" / "a").mkdir(parents=True)
    for f in ("__init__.py", "databases/__init__.py", "databases/a/__init__.py"):
        (pkg / f).write_text("")
    (pkg / "x.py").write_text("from .y import f\n")
    (pkg / "y.py").write_text("def f():\n    from .databases.a import load\n    from . import x\n")
    (pkg / "databases" / "a" / "load.py").write_text("")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PKG", pkg)
    with pytest.raises(AssertionError, match="cycle"):
        test_no_import_cycle()
    with pytest.raises(AssertionError, match="another database"):
        test_nothing_outside_a_database_package_imports_it()


def _long_functions(path: pathlib.Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                out.append(f"{path.name}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_long_function_in_the_orchestration_modules():
    long = [f for name in ORCHESTRATION for f in _long_functions(PKG / name)]
    assert not long, long


def test_readme_query_table_is_the_derived_one():
    out = subprocess.run([sys.executable, "-m", "tsbench", "queries", "list", "--markdown"], capture_output=True,
                         text=True, check=True).stdout
    readme = (ROOT / "README.md").read_text()
    assert out.strip() in readme, "README's query table differs: paste `python -m tsbench queries list --markdown`"


def test_the_needs_a_url_check_is_written_once():
    """A missing URL is refused by the shared Target class (needs_url, class data), not by each target."""
    again = [f"{p.relative_to(ROOT)}:{i}" for p in (PKG / "databases").rglob("*.py") if p.parent.name != "shared"
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"if not (self\.)?url\s*:", line) or "needs a url" in line.lower()
             or ("needs a server" in line and "UserError" in line)]
    assert not again, f"the needs-a-URL check repeated (declare needs_url = True instead): {again}"
