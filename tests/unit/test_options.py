"""One declaration per option (issue 36 items 1 and 7): every command's click options are
exactly its phase model's fields plus the command's own (listed here), made from the model
(its help, default and bounds); the experiment file's sections are the models; a model
field's default is written once in tsbench/; the query families are written once."""

from __future__ import annotations

import ast
import pathlib

import click
import pytest

from tsbench.commands import cli
from tsbench.core.options import UNSET, PhaseOptions, cli_of, default_of
from tsbench.data.options import DatasetSettings, GenerateCommand, ImportSettings
from tsbench.execute.options import ExecuteCommand, ExecuteSettings
from tsbench.experiments.options import RunCommand
from tsbench.load.options import DataFileCheck, LoadCommand, LoadSettings
from tsbench.queries.options import QueriesSettings
from tsbench.stream.options import StreamCommand, StreamSettings

PKG = pathlib.Path(__file__).resolve().parents[2] / "tsbench"
TARGET = {"target_name", "server", "options", "server_options"}
EXEC_OWN = {"queries_file", "load_file", "json_out", "quiet"} | TARGET

# every command: the models its options are made of (a model, or the model and the fields it
# leaves out) and the command's own parameters (click names)
COMMANDS = {
    "generate": ([GenerateCommand], {"quiet", "from_import"}),
    "load": ([LoadCommand, DataFileCheck], {"datafile", "ports", "gen", "json_out", "keep_server", "quiet"} | TARGET),
    "stream": ([StreamCommand, (DatasetSettings, {"end"})],
               {"ports", "json_out", "seconds_out", "queries_file", "keep_server", "quiet"} | TARGET),
    "queries generate": ([QueriesSettings], {"datafile", "dataset", "types", "family", "allow_empty", "output"}),
    "queries list": ([], {"markdown", "why", "datafile", "dataset"}),
    "execute": ([ExecuteCommand], EXEC_OWN),
    "validate": ([], EXEC_OWN),
    "run": ([RunCommand], {"experiment_file", "quiet"}),
    "report": ([], {"run_dirs", "output", "static"}),
    "compare": ([], {"base", "others", "threshold", "fail_on", "allow_different", "json_out", "markdown_out"}),
    "targets": ([], set()),
    "schema": ([], set()),
    "servers install": ([], {"kinds", "all_", "server_options"}),
    "servers start": ([], {"kind", "name", "ports", "server_options", "keep_data"}),
    "servers stop": ([], {"names", "all_"}),
    "servers list": ([], set()),
    "verify": ([DataFileCheck], {"datafile", "target_name", "server", "options", "json_out"}),
    "import": ([ImportSettings], {"file", "output", "quiet"}),
}


def _commands(group: click.Group = cli.cli, prefix: str = "") -> dict[str, click.Command]:
    out = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            out.update(_commands(cmd, prefix + name + " "))
        else:
            out[prefix + name] = cmd
    return out


def _model_fields(models: list) -> dict[str, type]:
    """The command-line fields of a command's models: name -> its model (a name in two: an error)."""
    out: dict[str, type] = {}
    for entry in models:
        model, skip = entry if isinstance(entry, tuple) else (entry, set())
        names = {n for n in model.model_fields if cli_of(model, n).command and n not in skip}
        assert not names & set(out), f"fields in two models of a command: {names & set(out)}"
        out.update(dict.fromkeys(names, model))
    return out


def test_every_command_is_listed():
    assert set(_commands()) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_commands_options_are_its_models_fields_and_its_own(name):
    models, own = COMMANDS[name]
    params, fields = {p.name for p in _commands()[name].params}, set(_model_fields(models))
    assert not own & fields, "an option of the command's own is also a field of its model"
    assert params == fields | own, (f"not declared: {sorted(params - fields - own)}; "
                                    f"missing: {sorted(fields | own - params)}")


@pytest.mark.parametrize("name", [n for n, (m, _) in COMMANDS.items() if m])
def test_a_model_option_carries_the_fields_help_default_and_bounds(name):
    fields = _model_fields(COMMANDS[name][0])
    for p in _commands()[name].params:
        if p.name not in fields:
            continue
        model = fields[p.name]
        field, meta = model.model_fields[p.name], cli_of(model, p.name)
        assert p.help == field.description, p.name
        if meta.multiple:
            assert p.multiple, p.name
            continue
        assert p.default == (default_of(model, p.name) if meta.default is UNSET else meta.default), p.name
        lo, above, hi = (next((getattr(m, k) for m in field.metadata if hasattr(m, k)), None)
                         for k in ("ge", "gt", "le"))
        if meta.bounds:
            lo, hi = meta.bounds
        if isinstance(p.type, click.IntRange | click.FloatRange):
            assert (p.type.min, p.type.max, p.type.min_open) == (lo if above is None else above, hi,
                                                                  above is not None), p.name
        else:
            assert lo is None and hi is None and above is None, f"{p.name}: bounds the command line does not check"


def test_the_experiment_sections_are_the_phase_models():
    from tsbench.experiments.experiment import SECTIONS, json_schema

    assert SECTIONS["load"] is LoadSettings and SECTIONS["execute"] is ExecuteSettings
    assert SECTIONS["stream"] is StreamSettings and SECTIONS["queries"] is QueriesSettings
    import json

    defs = json.loads(json_schema())["$defs"]
    assert SECTIONS["dataset"].__bases__ == (DatasetSettings, ImportSettings)     # and file: of its own
    for model in (LoadSettings, ExecuteSettings, StreamSettings, QueriesSettings, SECTIONS["dataset"]):
        props = defs[model.__name__]["properties"]
        assert set(props) == set(model.model_fields)
        assert all(props[n]["description"] == f.description for n, f in model.model_fields.items())
    assert set(defs["DatasetDecl"]["properties"]) == {*DatasetSettings.model_fields, *ImportSettings.model_fields,
                                                      "file"}


# ---- a default written once --------------------------------------------------------------------

def declared_defaults(tree: ast.AST) -> list[tuple[str, object, int]]:
    """(name, value, line) of every default a source declares with a literal: a class
    field (x: T = 4, x: T = Field(4, ...)), a function's parameter (x=4), a click option
    (click.option("--x", default=4))."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for s in node.body:
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None:
                    v = s.value
                    if isinstance(v, ast.Call) and getattr(v.func, "id", None) == "Field" and v.args:
                        v = v.args[0]
                    if isinstance(v, ast.Constant):
                        out.append((s.target.id, v.value, s.lineno))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            pos = a.posonlyargs + a.args
            pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            out += [(arg.arg, d.value, node.lineno) for arg, d in pairs if isinstance(d, ast.Constant)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "option":
            names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            dest = next((n for n in names if not n.startswith("-")),
                        next((n[2:].replace("-", "_") for n in names if n.startswith("--")), None))
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            if dest and isinstance(default, ast.Constant):
                out.append((dest, default.value, node.lineno))
    return out


def _trivial(v) -> bool:
    return v is None or isinstance(v, bool) or v in (0, 1, "") or not isinstance(v, (int, float, str))


def _models(cls=PhaseOptions) -> set:
    return {c for s in cls.__subclasses__() for c in {s} | _models(s)}


def _runtime_names() -> dict[str, set[str]]:
    """A model field's other names: the runtime options dataclasses' (stall_timeout: stall_seconds)."""
    from tsbench.execute.run import ExecOptions
    from tsbench.load.run import LoadOptions
    from tsbench.stream.run import StreamOptions

    out: dict[str, set[str]] = {}
    for cls in (LoadOptions, ExecOptions, StreamOptions):
        for field, attr in cls.option_names.items():
            out.setdefault(field, {field}).add(attr)
    return out


def test_a_models_default_is_written_once_in_the_package():
    found = [(n, v, f"{p.relative_to(PKG)}:{line}") for p in sorted(PKG.rglob("*.py"))
             for n, v, line in declared_defaults(ast.parse(p.read_text()))]
    names = _runtime_names()
    twice = {}
    for model in _models():
        for field, info in model.model_fields.items():
            v = info.get_default(call_default_factory=True)
            if _trivial(v):
                continue
            where = [w for n, d, w in found if n in names.get(field, {field}) and type(d) in (int, float, str)
                     and d == v]
            if len(where) != 1:
                twice[f"{model.__name__}.{field}={v!r}"] = where
    assert not twice, f"a default written other than once: {twice}"


def test_the_default_scan_finds_a_second_declaration():
    src = ("import click\nfrom pydantic import Field\n"
           "class A:\n    batch_size: int = Field(10_000, ge=1)\n"
           "class B:\n    batch_size: int = 10_000\n"
           "def f(batch_size=10_000): pass\n"
           "@click.option('--batch-size', '-b', default=10_000)\ndef g(batch_size): pass\n")
    assert [(n, v) for n, v, _ in declared_defaults(ast.parse(src))] == [("batch_size", 10_000)] * 4


# ---- the query families, once --------------------------------------------------------------------

def test_the_families_are_the_catalogs_and_written_once():
    from tsbench import queries

    fams = set(queries.FAMILIES)
    assert fams == {qt.family for qt in queries.CATALOG.values()} and len(fams) == len(queries.FAMILIES)
    lists = []
    for p in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text())):
            items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else []
            named = [e.value for e in items if isinstance(e, ast.Constant) and e.value in fams]
            if len(named) >= 2:
                lists.append(f"{p.relative_to(PKG)}:{node.lineno} {named}")
    assert not lists, f"the query families written out: {lists}"
