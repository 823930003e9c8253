"""The package's structure, checked over the source (no import of tsbench needed):
the top-level folders of tsbench/ are layers and no module imports a higher one,
there is no import cycle in tsbench/, the top of tsbench/ is small, every database
package has the same files for the same roles and nothing outside it imports it, the
orchestration and experiment modules have no long function, and the docs'
query-support table (generated databases page) is the one `queries list --markdown` prints."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKG = ROOT / "tsbench"
ORCHESTRATION = ("experiments/runner.py", "experiments/session.py", "experiments/experiment.py",
                 "load/connect.py", "execute/run.py", "load/run.py", "stream/run.py", "cluster/loading.py",
                 *sorted(str(p.relative_to(PKG)) for p in (PKG / "commands").glob("*.py")))
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


def test_docs_query_table_is_the_derived_one():
    out = subprocess.run([sys.executable, "-m", "tsbench", "queries", "list", "--markdown"], capture_output=True,
                         text=True, check=True).stdout
    page = subprocess.run([sys.executable, str(ROOT / "docs" / "gen_pages.py"), "databases/index.md"],
                          capture_output=True, text=True, check=True).stdout
    assert out.strip() in page, "the databases page's query table differs from `python -m tsbench queries list --markdown`"


def test_the_needs_a_url_check_is_written_once():
    """A missing URL is refused by the shared Target class (needs_url, class data), not by each target."""
    again = [f"{p.relative_to(ROOT)}:{i}" for p in (PKG / "databases").rglob("*.py") if p.parent.name != "shared"
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"if not (self\.)?url\s*:", line) or "needs a url" in line.lower()
             or ("needs a server" in line and "UserError" in line)]
    assert not again, f"the needs-a-URL check repeated (declare needs_url = True instead): {again}"


# ---- layers: the top-level folders of tsbench/, lowest first; a module imports its own layer or lower ones
LAYERS = ("core", "data", "queries", "databases", "load", "execute", "stream", "cluster", "experiments", "commands")
# imports that still go up, each with the reason; the test fails if one goes away (remove it here) or another appears
KNOWN_UPWARD: dict[tuple[str, str], str] = {}     # (module, the higher one it imports): why, while it lasts
MAX_TOP_ENTRIES = 12


def _layer(mod: str) -> int:
    """A module's layer: the package's own __init__ is below every folder, __main__ above all."""
    parts = mod.split(".")
    if len(parts) == 1:
        return -1
    if parts[1] == "__main__":
        return len(LAYERS)
    assert parts[1] in LAYERS, f"{mod}: tsbench/{parts[1]} is in no layer: add it to LAYERS in its place"
    return LAYERS.index(parts[1])


def test_no_module_imports_a_higher_layer():
    upward = {(m, d) for m, deps in import_graph().items() for d in deps if _layer(d) > _layer(m)}
    new = sorted(upward - set(KNOWN_UPWARD))
    assert not new, "imports of a higher layer (order: " + " < ".join(LAYERS) + "): " + \
        ", ".join(f"{m} -> {d}" for m, d in new)
    gone = sorted(set(KNOWN_UPWARD) - upward)
    assert not gone, f"no longer imported upward, remove from KNOWN_UPWARD: {gone}"


def test_the_top_of_the_package_is_small():
    top = sorted(p.name for p in PKG.iterdir() if p.name != "__pycache__" and not p.name.endswith(".so"))
    assert len(top) <= MAX_TOP_ENTRIES, f"{len(top)} entries at the top of tsbench/ (at most {MAX_TOP_ENTRIES}): {top}"
    folders = sorted(p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(LAYERS), f"tsbench/'s folders {folders} are not the layers {sorted(LAYERS)}"


def _assigned(tree: ast.AST, name: str) -> ast.expr | None:
    """The value assigned to `name` at the top of a module or in a class body, if any."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for st in node.body:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, ast.AnnAssign) else []
                if any(isinstance(t, ast.Name) and t.id == name for t in targets) and st.value is not None:
                    return st.value
    return None


def _defines(tree: ast.AST, fn: str) -> bool:
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == fn for n in ast.walk(tree))


def _shared_base_defines(tree: ast.AST, fn: str) -> bool:
    """Whether a class of tree derives from a class of databases/shared that defines fn (the
    targets of one protocol share their query() there: shared/promapi.py)."""
    bases = {b.id for n in ast.walk(tree) if isinstance(n, ast.ClassDef) for b in n.bases if isinstance(b, ast.Name)}
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("tsbench.databases.shared."):
            src = PKG / "databases" / "shared" / (n.module.rsplit(".", 1)[1] + ".py")
            if {a.name for a in n.names} & bases and src.is_file() and _defines(ast.parse(src.read_text()), fn):
                return True
    return False


def _database_packages() -> list[pathlib.Path]:
    return sorted(p for p in (PKG / "databases").iterdir()
                  if p.is_dir() and p.name not in ("shared", "__pycache__"))


def _package_faults(pkg: pathlib.Path) -> list[str]:
    """What a database package lacks of the common shape (target.py, dialect.py or dialects/,
    server.py), or holds in the wrong file (query() outside target.py)."""
    out = []
    init = ast.parse((pkg / "__init__.py").read_text())
    target = pkg / "target.py"
    if not target.is_file():
        return [f"{pkg.name}: no target.py (the Target class)"]
    tree = ast.parse(target.read_text())
    refs = {"TARGETS": "target", "SERVERS": "server"}
    for var, module in refs.items():
        value = _assigned(init, var)
        for ref in ast.literal_eval(value).values() if value is not None else ():
            if ref.partition(":")[0] != module:
                out.append(f"{pkg.name}: {var} names {ref!r}, not a class of {module}.py")
    if _assigned(init, "SERVERS") is not None and not (pkg / "server.py").is_file():
        out.append(f"{pkg.name}: declares SERVERS but has no server.py")
    dialect_files = [pkg / "dialect.py"] if (pkg / "dialect.py").is_file() else sorted((pkg / "dialects").glob("*.py"))
    if _assigned(tree, "dialects") is not None:
        if not dialect_files:
            out.append(f"{pkg.name}: renders queries but has no dialect.py or dialects/")
        if not (_defines(tree, "query") or _shared_base_defines(tree, "query")):
            out.append(f"{pkg.name}: renders queries but its target.py has no query()")
    out += [f"{pkg.name}: {f.relative_to(pkg)} defines query() (it belongs in target.py)"
            for f in dialect_files if _defines(ast.parse(f.read_text()), "query")]
    return out


def test_every_database_package_has_the_same_files_for_the_same_roles():
    faults = [f for pkg in _database_packages() for f in _package_faults(pkg)]
    assert not faults, faults
    registry = _assigned(ast.parse((PKG / "databases" / "__init__.py").read_text()), "PACKAGES")
    listed = set(ast.literal_eval(registry))
    assert listed == {p.name for p in _database_packages()}, "databases/__init__.py PACKAGES differs from the packages"


def test_the_layer_and_package_checks_can_fail(tmp_path, monkeypatch):
    """The checks above on a broken tree: an upward import, a crowded top, and a database
    package with its query() in its dialect, SERVERS without server.py, and no target.py."""
    pkg = tmp_path / "tsbench"
    for d in ("core", "data", "queries", "load", "execute", "stream", "cluster", "experiments", "commands",
              "databases/a", "databases/b", "databases/shared", "extra1", "extra2", "extra3"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "x.py").write_text("def f():\n    from tsbench.load import y\n")
    (pkg / "load" / "y.py").write_text("")
    (pkg / "load" / "run.py").write_text("from tsbench.cluster import drive\n")
    (pkg / "cluster" / "drive.py").write_text("")
    (pkg / "databases" / "__init__.py").write_text('PACKAGES = ("a", "b")\n')
    (pkg / "databases" / "a" / "__init__.py").write_text('TARGETS = {"a": "target:A"}\nSERVERS = {"a": "server:S"}\n')
    (pkg / "databases" / "a" / "target.py").write_text("class A:\n    dialects = {}\n")
    (pkg / "databases" / "a" / "dialect.py").write_text("class Q:\n    async def query(self, native):\n        pass\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PKG", pkg)
    monkeypatch.setattr(sys.modules[__name__], "KNOWN_UPWARD", {("tsbench.load.run", "tsbench.cluster.drive"): "named"})
    with pytest.raises(AssertionError, match=r"higher layer .*tsbench\.core\.x -> tsbench\.load\.y"):
        test_no_module_imports_a_higher_layer()
    with pytest.raises(AssertionError, match="entries at the top"):
        test_the_top_of_the_package_is_small()
    with pytest.raises(AssertionError) as bad:
        test_every_database_package_has_the_same_files_for_the_same_roles()
    for words in ("a: declares SERVERS but has no server.py", "a: renders queries but its target.py has no query()",
                  "a: dialect.py defines query()", "b: no target.py"):
        assert words in str(bad.value)
    (pkg / "core" / "x.py").write_text("")
    (pkg / "load" / "run.py").write_text("")
    with pytest.raises(AssertionError, match="no longer imported upward"):
        test_no_module_imports_a_higher_layer()
