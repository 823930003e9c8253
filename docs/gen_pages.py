"""The docs site's generated pages (run by the mkdocs-gen-files plugin at build time).

Nothing here is typed by hand: the command pages come from the click commands that
`tsbench` runs (found through the console script declared in pyproject.toml), the
experiment file's settings from the models that check a file, the database pages from the
registry (tsbench.databases: each target's options model, its servers' modules, the version
of an in-process engine's library as installed) and its support matrix
(tsbench/databases/shared/support.py), and the figures page from the JSON files the
self-benchmarks record in docs/figures/ (benchmarks/record.py).

`pages()` returns {path in the site: Markdown text}; `python docs/gen_pages.py PAGE` prints one
of them (databases/index.md, commands/load.md, ...) without building the site."""

from __future__ import annotations

import importlib
import inspect
import json
import pathlib
import re
import sys
import types
import typing

import click

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures"
if str(ROOT) not in sys.path:          # document the tree being built, not another installed copy
    sys.path.insert(0, str(ROOT))


# ---- commands -------------------------------------------------------------------------

def root_group() -> click.Group:
    """The click group behind the `tsbench` console script: the group with the most
    commands among those of the script's module."""
    ref = re.search(r'^tsbench\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    module = importlib.import_module(ref.partition(":")[0])
    groups = [v for v in vars(module).values() if isinstance(v, click.Group)]
    ctx = click.Context(click.Group())
    return max(groups, key=lambda g: len(g.list_commands(ctx)))


def commands() -> list[tuple[list[str], click.Command, click.Context]]:
    """Every command and group under the root, with its words (["queries", "list"]) and a context."""
    root = root_group()
    out = []

    def walk(cmd: click.Command, words: list[str], parent: click.Context | None) -> None:
        ctx = click.Context(cmd, info_name=words[-1] if words else "tsbench", parent=parent)
        if words:
            out.append((words, cmd, ctx))
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.list_commands(ctx)):
                sub = cmd.get_command(ctx, name)
                if not sub.hidden:
                    walk(sub, [*words, name], ctx)
    walk(root, [], None)
    return out


def command_path(words: list[str]) -> str:
    return "commands/" + "-".join(words) + ".md"


def _plain(text: str) -> str:
    """Text shown as written: outside `code spans`, < > & would be taken for HTML and * _ for emphasis."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        parts[i] = parts[i].replace("*", "\\*").replace("_", "\\_")
    return "`".join(parts)


def _cell(text: object) -> str:
    """Text fit for one Markdown table cell."""
    return _plain(" ".join(str(text).split())).replace("|", "\\|")


def _bounds(kind: click.ParamType) -> str:
    if not isinstance(kind, (click.IntRange, click.FloatRange)):
        return ""
    low = "" if kind.min is None else f"{kind.min} {'<' if kind.min_open else '≤'} "
    high = "" if kind.max is None else f" {'<' if kind.max_open else '≤'} {kind.max}"
    return f"{low}x{high}"


def _type_name(p: click.Parameter) -> str:
    kind = p.type
    if isinstance(p, click.Option) and p.is_flag:
        return "flag"
    if isinstance(kind, click.Choice):
        return "one of " + ", ".join(f"`{c}`" for c in kind.choices)
    names = {click.IntRange: "integer", click.FloatRange: "number"}
    name = names.get(type(kind), kind.name)
    return f"{name}, repeatable" if getattr(p, "multiple", False) else name


def _default(p: click.Parameter) -> str:
    value = p.default
    if value is None or callable(value) or "UNSET" in repr(value) or value == () or p.required:
        return ""
    if isinstance(p, click.Option) and p.is_flag and not p.secondary_opts and value != p.flag_value:
        return ""                   # a flag given alone is off unless given (--no-verify's default True is "verify")
    return f"`{value}`"


def _clean_help(text: str | None) -> str:
    lines = [ln for ln in inspect.cleandoc(text or "").splitlines() if ln.strip() != "\b"]
    return "\n".join(lines).split("\f")[0].strip()


def command_page(words: list[str], cmd: click.Command, ctx: click.Context) -> str:
    """A command's page: usage, its help, and a table of its arguments and options."""
    title = "tsbench " + " ".join(words)
    out = [f"# {title}", "", "```text", cmd.get_usage(ctx).replace("Usage: ", "", 1), "",
           _clean_help(cmd.help), "```", ""]
    if isinstance(cmd, click.Group):
        out += ["Subcommands:", ""]
        out += [f"- [{title} {n}]({'-'.join([*words, n])}.md): {_cell(c.get_short_help_str(90))}"
                for n, c in sorted(cmd.commands.items()) if not c.hidden]
        return "\n".join(out) + "\n"
    params = [p for p in cmd.params if not getattr(p, "hidden", False)]
    if not params:
        return "\n".join(out + ["This command has no options."]) + "\n"
    out += ["| argument or option | type | default | bounds | help |", "|---|---|---|---|---|"]
    for p in params:
        name = ", ".join(f"`{o}`" for o in p.opts) if isinstance(p, click.Option) else f"`{p.human_readable_name}`"
        out.append(f"| {name} | {_cell(_type_name(p))} | {_cell(_default(p))} | {_cell(_bounds(p.type))} | "
                   f"{_cell(getattr(p, 'help', None) or ('required' if p.required else ''))} |")
    return "\n".join(out) + "\n"


def commands_index() -> str:
    out = ["# Commands", "", "Every command of `python -m tsbench` (or `tsbench`), with its options as the",
           "command line declares them: this page and those it links to are generated from the click",
           "commands when the site is built.", "", "| command | what it does |", "|---|---|"]
    for words, cmd, _ in commands():
        out.append(f"| [tsbench {' '.join(words)}]({'-'.join(words)}.md) | {_cell(cmd.get_short_help_str(100))} |")
    return "\n".join(out) + "\n"


# ---- databases ------------------------------------------------------------------------

def _package_doc(cls: type) -> str:
    pkg = importlib.import_module(cls.__module__.rsplit(".", 1)[0])
    return inspect.cleandoc(pkg.__doc__ or "")


def _annotation(a: object) -> str:
    if typing.get_origin(a) is typing.Literal:
        return "one of " + ", ".join(f"`{v}`" for v in typing.get_args(a))
    if typing.get_origin(a) in (typing.Union, types.UnionType):
        return " or ".join("unset" if x is type(None) else _annotation(x) for x in typing.get_args(a))
    text = a.__name__ if isinstance(a, type) else str(a)
    return re.sub(r"\b(typing|pydantic\.types|pydantic)\.", "", text)


def _constraints(field) -> str:
    words = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<", "pattern": "matches"}
    out = []
    for meta in field.metadata:
        for key, sign in words.items():
            value = getattr(meta, key, None)
            if value is not None:
                out.append(f"{sign} `{value}`" if key == "pattern" else f"{sign} {value}")
    return ", ".join(out)


def options_table(model: type, noun: str = "option") -> list[str]:
    """An options model (a target's, a section of an experiment file) as a table: name, type,
    default, bounds, description."""
    fields = model.model_fields
    if not fields:
        return ["This target takes no options (`--option` / `options:`)."]
    out = [f"| {noun} | type | default | bounds | description |", "|---|---|---|---|---|"]
    for name, f in fields.items():
        value = None if f.is_required() else f.get_default(call_default_factory=True)
        default = "" if f.is_required() else f"`{value}`" if value is not None else "unset"
        out.append(f"| `{name}` | {_cell(_annotation(f.annotation))} | {_cell(default)} | "
                   f"{_cell(_constraints(f))} | {_cell(f.description or '')} |")
    return out


RECORDED = ("A run records the version it measured: `servers` in its manifest.json, `server_version` "
            "in cells.parquet ([Results](../results.md)).")


def _requirement(dist: str) -> str:
    """The line of pyproject.toml's dependencies that asks for the distribution dist."""
    import tomllib

    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return next((d for d in deps if re.match(rf"{re.escape(dist)}\b(?![-.])", d)), "")


def _in_process_version(cls: type) -> str:
    from importlib.metadata import PackageNotFoundError, version

    if not cls.keeps_data:
        return "Version: none: no database, only tsbench's own code (a sink)."
    lib = cls.engine_library
    try:
        have = f"{lib} {version(lib)}"
    except PackageNotFoundError:
        have = f"{lib}, not installed"
    return (f"Version: {have} (the library, which is the engine, installed where this page was built; "
            f"pyproject.toml asks for `{_requirement(lib)}`).")


def _server_version(cls: type, server: type) -> str:
    if not cls.keeps_data:
        return "Version: none: a sink, tsbench's own code."
    if hasattr(server, "fixed_version"):
        return f"Version: {server.fixed_version()}."
    return ("Version: the installed server's, which tsbench reads when it starts it (what it installs is "
            "said below).")


def _servers_part(cls: type) -> list[str]:
    from tsbench.databases import server_class

    if cls.server_kind is None and cls.engine_library is None and cls.keeps_data:
        return ["No local server: a server of the user's by URL only (`--server URL`).", "",
                "Version: the user's server's; tsbench installs none and records none.", ""]
    if cls.server_kind is None:
        return ["tsbench runs it in-process (`--server local`): no server to install or start.", "",
                _in_process_version(cls), "", *([RECORDED, ""] if cls.keeps_data else [])]
    out = []
    for k, kind in enumerate((cls.server_kind, *cls.other_server_kinds)):
        server = server_class(kind)
        how = "`--server local`" if k == 0 else f"`--server local:{kind}`"
        out += [f"### Local server `{kind}` ({how})", "", _server_version(cls, server), "",
                _plain(inspect.cleandoc(inspect.getmodule(server).__doc__ or "")), ""]
    return out + ([RECORDED, ""] if cls.keeps_data else [])


def _facts(cls: type) -> list[str]:
    facts = {"data file format": cls.format,
             "count() counts": cls.count_unit if cls.can_count else "nothing: it cannot count (load with --no-verify)",
             "several load processes": "yes" if cls.multiprocess else "no (one process)",
             "keeps the data": "yes" if cls.keeps_data else "no (a sink)",
             "float digits kept": cls.float_digits or "the exact double",
             "query languages": ", ".join(cls.dialects) or "none"}
    return ["| fact | value |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in facts.items())]


def _queries_part(name: str, matrix) -> list[str]:
    cols = [c for c in matrix.columns if c == name or c.startswith(name + "/")]
    if not cols:
        return ["This target runs no queries (load only)."]
    out = []
    for col in cols:
        runs = [t.name for t in matrix.types if matrix.runs(col, t.name)]
        out += [f"### {col}", "", f"Runs {len(runs)} of the {len(matrix.types)} query types: "
                + ", ".join(f"`{t}`" for t in runs) + ".", ""]
        reasons = matrix.reasons(col)
        if reasons:
            out += ["| type it does not run | why |", "|---|---|"]
            out += [f"| `{t}` | {_cell(why)} |" for t, why in reasons.items()]
            out.append("")
    return out


def _form_ratios(name: str) -> tuple[dict[tuple[str, str], float], str]:
    """The newest recorded `bench_dialects` ratios of a target: (type, form) -> ratio to the
    fastest correct form, and the record's command and date (empty without one)."""
    for r in figure_records():
        if r["benchmark"] != "dialects":
            continue
        ratios = {}
        for f in r["figures"]:
            head, _, what = f["name"].partition(": ")
            db, qtype, form = (head.split(" ", 2) + ["", ""])[:3]
            if db == name and what == "ratio to the fastest":
                ratios[qtype, form] = f["value"]
        if ratios:
            return ratios, f"`{r['command']}` ({r['date']}, commit `{r['commit']}`)"
    return {}, ""


def _forms_part(name: str, cls: type) -> list[str]:
    """The query forms tried per type (each dialect's `forms`), with the recorded ratios."""
    ratios, run = _form_ratios(name)
    out = []
    for lang, dialect in cls.dialects.items():
        if not dialect.forms:
            continue
        out += [f"### {lang}", "", "Other forms of the same question that `nox -s bench_dialects` times against",
                "tsbench's own (answers checked equal to it). Ratio: the median, over every query and round, of",
                "a form's latency over tsbench's form's for the same query in the same round, over the fastest",
                "correct form's"
                + (f", from {run}." if ratios else " (no run recorded in docs/figures yet)."), "",
                "| query type | forms tried (ratio) | why tsbench's form is kept |", "|---|---|---|"]
        for qtype, forms in dialect.forms.items():
            tried = ", ".join(f"`{f}`" + (f" ({ratios[qtype, f]:.2f}x)" if (qtype, f) in ratios else "")
                              for f in ("tsbench", *forms))
            out.append(f"| `{qtype}` | {tried} | {_cell(dialect.form_reasons.get(qtype, ''))} |")
        out.append("")
    return out or ["No other query forms declared: tsbench's rendering is the only one measured."]


def database_page(name: str, matrix) -> str:
    from tsbench.databases import target_class

    cls = target_class(name)
    out = [f"# {name}", "", _plain(_package_doc(cls)), "", "## How tsbench runs it", "", *_servers_part(cls),
           "## What it is", "", *_facts(cls), "",
           f"## Options ({cls.options_model.__name__})", "",
           "Given as `--option KEY=VALUE` on the command line or under `options:` in an experiment file.", "",
           *options_table(cls.options_model), "", "## Query types", "", *_queries_part(name, matrix),
           "", "## Query forms", "", *_forms_part(name, cls)]
    return "\n".join(out).rstrip() + "\n"


def database_index(matrix) -> str:
    from tsbench.databases import names, target_class
    from tsbench.databases.shared.support import markdown_table

    out = ["# Databases", "", "Every target in the registry (`tsbench/databases/`), generated from it when the",
           "site is built.", "", "| target | what it is |", "|---|---|"]
    for name in names():
        first = _package_doc(target_class(name)).split("\n\n")[0]
        out.append(f"| [{name}]({name}.md) | {_cell(first)} |")
    out += ["", "## Query types by target", "",
            "The table `python -m tsbench queries list --markdown` prints: a row per query type, a column",
            "per target and query language.", "", markdown_table(matrix)]
    return "\n".join(out)


# ---- experiment files -----------------------------------------------------------------

def _section_model(annotation) -> type | None:
    """The pydantic model a field of the experiment holds: itself, or the values of a dict of them."""
    from pydantic import BaseModel

    for a in (annotation, *typing.get_args(annotation)):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


def experiment_settings_page() -> str:
    """Each section of an experiment file (the models `tsbench schema` is made from) as a table."""
    from tsbench.experiments.experiment import Experiment

    out = ["# Experiment file settings", "",
           "The settings of each section of an [experiment file](experiments.md), with their defaults,",
           "bounds and meaning: generated from the models that check a file (and that `python -m tsbench",
           "schema` prints as a JSON Schema) when the site is built. Which of them may also be matrix",
           "knobs is said on that page.", ""]
    for name, field in Experiment.model_fields.items():
        model = _section_model(field.annotation)
        if model is None:
            continue
        key = f"{name}.NAME" if typing.get_origin(field.annotation) is dict else name
        out += [f"## {key}", "", *options_table(model, "setting"), ""]
    return "\n".join(out).rstrip() + "\n"


# ---- figures --------------------------------------------------------------------------

def figure_records() -> list[dict]:
    """The recorded figures, newest first."""
    records = [json.loads(p.read_text()) | {"file": p.name} for p in sorted(FIGURES.glob("*.json"))]
    return sorted(records, key=lambda r: r["date"], reverse=True)


def _number(v: float) -> str:
    """A figure as people read it: thousands grouped, three significant digits below 100."""
    if isinstance(v, int) or abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _host_line(host: dict) -> str:
    gib = host.get("memory_bytes", 0) / 2**30
    return (f"{host.get('cpu_model') or 'unknown CPU'}, {host.get('cores')} cores, {gib:.1f} GiB, "
            f"Linux {host.get('kernel')}, Python {host.get('python')}")


def figures_page() -> str:
    out = ["# Measured figures", "",
           "Each section is one file in `docs/figures/`, written by a self-benchmark run with",
           "`--record docs/figures` (see [Development](development.md)): the command, the commit and",
           "the machine are those of that run. The dated history of earlier measurements is in",
           "`CHANGES.md` at the root of the repository.", ""]
    for r in figure_records():
        out += [f"## {r['benchmark']}: {r['date']}", "", "```sh", r["command"], "```", "",
                f"Commit `{r['commit']}`{' (with uncommitted changes)' if r.get('dirty') else ''}; "
                f"{_host_line(r['host'])}. File `{r['file']}`.", ""]
        if r.get("notes"):
            out += [f"Notes: {r['notes']}", ""]
        out += ["| figure | value | unit |", "|---|---|---|"]
        out += [f"| {_cell(f['name'])} | {_number(f['value'])} | {_cell(f['unit'])} |" for f in r["figures"]]
        out.append("")
    if not figure_records():
        out.append("No figures recorded yet.")
    return "\n".join(out).rstrip() + "\n"


# ---- all ------------------------------------------------------------------------------

def pages() -> dict[str, str]:
    from tsbench.databases import names
    from tsbench.databases.shared.support import support_matrix

    matrix = support_matrix()
    out = {"commands/index.md": commands_index()}
    out |= {command_path(w): command_page(w, c, ctx) for w, c, ctx in commands()}
    out["databases/index.md"] = database_index(matrix)
    out |= {f"databases/{n}.md": database_page(n, matrix) for n in names()}
    out["figures.md"] = figures_page()
    out["experiment-settings.md"] = experiment_settings_page()
    return out


def write_pages() -> None:
    import mkdocs_gen_files

    for path, text in pages().items():
        with mkdocs_gen_files.open(path, "w") as f:
            f.write(text)


if __name__ == "<run_path>":          # mkdocs-gen-files runs this file with runpy.run_path
    write_pages()
elif __name__ == "__main__":          # python docs/gen_pages.py PAGE: print one generated page
    print(pages()[sys.argv[1]], end="")
