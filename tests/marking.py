"""The test suite's markers by kind (not a phase of tsbench: how its tests are sorted),
applied at collection by tests/conftest.py, so no test file marks itself by hand.

A test is marked with every database (a package of tsbench/databases/) it uses. It
*asks* for a database (it may start its server) by

* a parameter naming a target, a server or a contract case ("influx-flux" is influx),
  under one of the names in PARAMETERS;
* a call in its own body, in the fixtures it uses or in the test-suite functions those
  call: a name as first argument of local_server, target_url, load_into, connect,
  server_class or target_class; a name after "-t", "--target" or "start" in a command
  line; a server class of the package made (PostgresServer(...));

and it *names* a database by sitting in tests/databases/<db>/, by using any other class
of the package, or by an experiment text ("target: postgres") that may only be checked.

A test is `slow` when it asks for a database that runs a server of its own (every
package with SERVERS but null, whose HTTP sink starts in a moment) or in the test's
process (IN_PROCESS_SERVERS), runs a command of tsbench other than QUICK_COMMANDS in a
process of its own (its imports alone take about a second: run_cli("load", ...),
"-m", "tsbench", "load", or a list of arguments "load", ..., "-t", ...), uses the JVM
layer (the `jvm` marker), or sits in a folder of SLOW_FOLDERS (whole commands end to
end, server faults and signals)."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import itertools
import pathlib
import re
import textwrap

TESTS = pathlib.Path(__file__).resolve().parent
PARAMETERS = {"target", "endpoint", "server", "kind", "name", "database", "db"}
ASKING = {"local_server", "target_url", "load_into", "connect", "server_class", "target_class"}
FLAGS = {"-t", "--target", "start"}
EXPERIMENT_TARGET = re.compile(r"\btarget:\s*[\"']?([\w-]+)")
SLOW_FOLDERS = ("e2e", "faults")
HARNESS = {"null"}          # the null package: the harness's own sink, no database server
IN_PROCESS_SERVERS = {"clickhouse"}     # chDB: ClickHouse's server in the test's process (seconds, 1 GB)
QUICK_COMMANDS = {"generate"}   # imports little: a fraction of a second in a process of its own


@functools.cache
def packages() -> dict[str, str]:
    """Every built-in target, server and package name -> its package."""
    from tsbench import databases

    out = {pkg: pkg for pkg in databases.PACKAGES}
    for names, find in ((databases.names(), databases.target_class),
                        (databases.server_names(), databases.server_class)):
        for name in names:
            out[name] = package_of(find(name)) or out.get(name)
    return {k: v for k, v in out.items() if v}


@functools.cache
def server_packages() -> frozenset[str]:
    """The packages whose database runs as a server of its own."""
    from tsbench import databases

    return frozenset(packages()[n] for n in databases.server_names() if n in packages()) - HARNESS


def package_of(obj) -> str | None:
    """The package of tsbench/databases/ a class or function comes from."""
    parts = getattr(obj, "__module__", "").split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["tsbench", "databases"] and parts[2] != "shared" else None


def package_named(value) -> str | None:
    """The package a name stands for: a target, a server, a package, or a case of one
    ("cassandra-wide", "elasticsearch-7.10")."""
    name = value if isinstance(value, str) else ""
    while name:
        if name in packages():
            return packages()[name]
        name = name.rpartition("-")[0]
    return None


def _call_name(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _strings(nodes) -> list[str | None]:
    """Each node a string literal's value, or None."""
    return [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in nodes]


def _after_flags(nodes) -> set[str]:
    items = _strings(nodes)
    return {b for a, b in itertools.pairwise(items) if a in FLAGS and b}


def _asked_in(tree: ast.AST) -> set[str]:
    """Names a parsed function asks for: a call's first argument, a command's target."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            first = _strings(node.args[:1])
            if _call_name(node) in ASKING and first and first[0]:
                out.add(first[0])
            out |= _after_flags(node.args)
        elif isinstance(node, (ast.List, ast.Tuple)):
            out |= _after_flags(node.elts)
    return out


@functools.cache
def commands() -> frozenset[str]:
    """The commands of tsbench's command line."""
    from tsbench.commands import cli

    return frozenset(cli.cli.list_commands(None))


def _commands_in(tree: ast.AST) -> set[str]:
    """The commands a parsed function runs in a process of their own: run_cli("load", ...),
    "-m", "tsbench", "load" in an argument list, or a list of arguments "load", ..., "-t", ..."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            items = _strings(node.args)
            out |= {items[0]} if _call_name(node) == "run_cli" and items and items[0] else set()
        else:
            items = _strings(node.elts) if isinstance(node, (ast.List, ast.Tuple)) else []
        out |= {c for a, b, c in zip(items, items[1:], items[2:]) if (a, b) == ("-m", "tsbench") and c}
        if len(items) > 1 and items[0] in commands() and any(i and i.startswith("-") for i in items[1:]):
            out.add(items[0])
    return (out & commands()) - QUICK_COMMANDS


def _experiment_targets(value) -> set[str]:
    return set(EXPERIMENT_TARGET.findall(value)) if isinstance(value, str) else set()


def _ours(obj) -> bool:
    """A function of the test suite's own (not pytest's, not tsbench's)."""
    try:
        return inspect.isfunction(obj) and TESTS in pathlib.Path(inspect.getsourcefile(obj)).resolve().parents
    except TypeError:
        return False


def _scope(f, tree: ast.AST) -> dict:
    """The names a function sees: its module's globals and its own `from X import Y`."""
    out = dict(f.__globals__)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            try:
                mod = importlib.import_module(node.module)
            except ImportError:
                continue
            out.update({a.asname or a.name: getattr(mod, a.name, None) for a in node.names})
    return out


def _server_classes_made(tree: ast.AST, scope: dict) -> set[str]:
    from tsbench.databases.shared.server import Server

    made = {scope.get(_call_name(n)) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {package_of(c) for c in made if isinstance(c, type) and issubclass(c, Server)}


@functools.cache
def used_by(func) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(packages a test-suite function asks for, packages it names, commands it runs in a
    process of their own), with those of the test-suite functions it calls and of the
    module constants it reads."""
    seen, todo, asked, named, run = set(), [func], set(), set(), set()
    while todo:
        f = todo.pop()
        if f in seen or not _ours(f):
            continue
        seen.add(f)
        tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
        scope = _scope(f, tree)
        asked |= {package_named(n) for n in _asked_in(tree)} | _server_classes_made(tree, scope)
        run |= _commands_in(tree)
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Constant) else scope.get(getattr(node, "id", None))
            named |= {package_named(n) for n in _experiment_targets(value)}
            named |= {package_of(value)} if inspect.isclass(value) or inspect.isfunction(value) else set()
            if _ours(value):
                todo.append(value)
    return frozenset(asked - {None}), frozenset(named - {None}), frozenset(run)


def uses(item) -> tuple[set[str], set[str], set[str]]:
    """(every package a collected test uses, those it asks for, the commands it runs in a
    process of their own; a fixture's commands, run once for the tests that share it, not
    counted)."""
    rel = pathlib.Path(item.path).resolve().relative_to(TESTS).parts
    named = {rel[1]} if len(rel) > 2 and rel[0] == "databases" else set()
    params = getattr(getattr(item, "callspec", None), "params", {})
    asked = {package_named(v) for k, v in params.items() if k in PARAMETERS} - {None}
    asked_by_test, named_by_test, run = used_by(item.function)
    asked |= asked_by_test
    named |= named_by_test
    for defs in item._fixtureinfo.name2fixturedefs.values():
        for d in defs:
            asked_by_f, named_by_f, _ = used_by(d.func)
            asked |= asked_by_f
            named |= named_by_f
    return named | asked, asked, set(run)


def is_slow(item, asked: set[str], run: set[str]) -> bool:
    folder = pathlib.Path(item.path).resolve().relative_to(TESTS).parts[0]
    return (bool(asked & (server_packages() | IN_PROCESS_SERVERS)) or bool(run)
            or item.get_closest_marker("jvm") is not None or folder in SLOW_FOLDERS)


def mark(items) -> None:
    """Add the database markers and `slow` to collected tests."""
    import pytest

    for item in items:
        dbs, asked, run = uses(item)
        for db in sorted(dbs):
            item.add_marker(getattr(pytest.mark, db))
        if is_slow(item, asked, run):
            item.add_marker(pytest.mark.slow)
