"""The experiment file (all phases): YAML, checked with pydantic, naming the
datasets, the targets (server local or a URL, their options), the phases to run,
each phase's settings, and a `matrix:` of knobs expanded as a cartesian product
(minus `exclude:` entries); `query_cells:` picks the cells that run the query
phases (default: all). `repeat:` (top level, the default of every phase, or a
phase's own `load.repeat`, `execute.repeat`, `stream.repeat`) is the number of
trials of each phase within a cell (runner.py runs them).

Matrix keys are dotted paths into a cell's settings: `dataset` and `target`
(names declared above), `load.workers`, `load.batch_size`, `load.processes`,
`load.cluster`, `execute.workers`, `execute.cluster`, `execute.cache`, `execute.count`, `queries.count`,
`dataset.scale`, `dataset.params.<key>`, `target.options.<key>`,
`target.server_options.<key>`, `stream.<key>` (the stream phase's settings).

`load_experiment` expands the matrix into typed `Cell`s and checks every one
before anything runs: its settings by the same models as the file (knobs
included), its target's options by the target, its local server's options by
the server class (constructed, not started). A bad file, declared value or
matrix value is one UserError naming the file, the line, the field and the
value, and what is allowed."""

from __future__ import annotations

import copy
import datetime
import itertools
import json
import pathlib
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from tsbench.core.clusteraddress import ClusterAddress
from tsbench.core import bounds, secrets, yamlfile
from tsbench.core.errors import UserError
from tsbench.data.dataset import DatasetSpec
from tsbench.data.options import DatasetSettings, ImportSettings
from tsbench.execute.options import ExecuteSettings
from tsbench.load.options import LoadSettings
from tsbench.queries.options import QueriesSettings
from tsbench.stream.options import StreamSettings

PHASES = ("generate", "load", "queries", "execute", "validate")     # the default
Phase = Literal["generate", "load", "verify", "queries", "execute", "validate", "stream"]   # verify: per-table recount
NAME = re.compile(r"[A-Za-z0-9._-]+")


def name_problem(name: str) -> str | None:
    """Why a name used in paths (experiment, dataset, target, server instance) is refused, else None."""
    if not NAME.fullmatch(name) or name in (".", ".."):
        return f"{name!r} is not a valid name (letters, digits, '.', '_' and '-' only, not '.' or '..')"
    return None


def _name(v: str) -> str:
    problem = name_problem(v)
    if problem:
        raise ValueError(problem)
    return v


Name = Annotated[str, AfterValidator(_name)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _changed(d: BaseModel, model: type[BaseModel]) -> list[str]:
    """The fields of model whose value in d is not the default (a cell's declaration has every
    field set, so what was set is what differs)."""
    return [n for n, f in model.model_fields.items() if getattr(d, n) != f.get_default(call_default_factory=True)]


class DatasetDecl(DatasetSettings, ImportSettings):
    """A dataset: generated (DatasetSettings: use case, scale, time range, seed) or, with
    file:, a file of your own read by the import's settings (ImportSettings), imported once."""

    file: str | None = Field(None, description="A line-protocol or CSV file of your own data (a relative path from "
                                               "the folder tsbench runs in), imported once into the results' data "
                                               "folder; the import's settings (format, precision, csv_*) say how to "
                                               "read it. Without it the dataset is generated.")

    @model_validator(mode="after")
    def _one_kind(self):
        generated, read = _changed(self, DatasetSettings), _changed(self, ImportSettings)
        if self.file and generated:
            raise ValueError(f"{generated[0]}: a dataset with file: holds the file's data; "
                             f"{', '.join(generated)} appl{'ies' if len(generated) == 1 else 'y'} to generated datasets")
        if not self.file and read:
            raise ValueError(f"{read[0]}: applies to a dataset with file: (a file of your own data)")
        return self

    def generated_settings(self) -> dict:
        """The DatasetSettings of a generated dataset (DatasetSpec's fields)."""
        return self.model_dump(include=set(DatasetSettings.model_fields))

    def import_settings(self) -> ImportSettings:
        return ImportSettings(**self.model_dump(include=set(ImportSettings.model_fields)))


class TargetDecl(_Strict):
    target: str = Field(description="The database (list them with: python -m tsbench targets).")
    server: str = Field("local", description="local (tsbench installs, starts and stops it; local:KIND for another "
                                             "server kind the target runs on) or the URL of a running server.")
    options: dict[str, Any] = Field({}, description="The target's options (its database page lists them).")
    server_options: dict[str, Any] = Field({}, description="Options of a local server (its database page says "
                                                           "which).")


LoadDecl = LoadSettings          # the load phase's options (load/options.py)


QueriesDecl = QueriesSettings    # the queries phase's options (queries/options.py)


ExecuteDecl = ExecuteSettings    # the execute phase's options (execute/options.py)


StreamDecl = StreamSettings      # the stream phase's options (stream/options.py)


SECTIONS = {"dataset": DatasetDecl, "target": TargetDecl, "load": LoadDecl, "queries": QueriesDecl,
            "execute": ExecuteDecl, "stream": StreamDecl}


class Cell(_Strict):
    """One cell of the matrix: the declared settings with the cell's knobs applied,
    checked by the same models as the file."""

    id: int
    dataset_name: str
    target_name: str
    knobs: dict[str, Any]          # matrix key -> value, without dataset and target
    queries_here: bool             # whether the query phases run here (query_cells:)
    dataset: DatasetDecl
    target: TargetDecl
    load: LoadDecl
    queries: QueriesDecl
    execute: ExecuteDecl
    stream: StreamDecl


class Experiment(_Strict):
    """An experiment: `python -m tsbench schema` prints this model as JSON Schema."""

    _cells: list[Cell] | None = PrivateAttr(None)     # set by load_experiment
    _overrides: list[str] = PrivateAttr(default_factory=list)   # `run --set` items, as given

    name: Name
    description: str = ""
    datasets: dict[Name, DatasetDecl]
    targets: dict[Name, TargetDecl]
    phases: list[Phase] = list(PHASES)
    cluster: ClusterAddress = None       # load, stream and execute from Dask workers, unless their section says
    load: LoadDecl = LoadDecl()
    queries: QueriesDecl = QueriesDecl()
    execute: ExecuteDecl = ExecuteDecl()
    stream: StreamDecl = StreamDecl()
    matrix: dict[str, list[Any]] = {}
    exclude: list[dict[str, Any]] = []
    # the query phases (queries, execute, validate) run only in the cells matching one of
    # these (e.g. [{load.workers: 4}]: query each loaded database once); default: every cell
    query_cells: list[dict[str, Any]] = []
    repeat: int = Field(1, ge=1, le=bounds.MAX_REPEAT,
                        description="Trials of each phase in every cell, unless the phase's section says (load.repeat, "
                                    "execute.repeat, stream.repeat); the cell's figures are the medians over them.")

    @field_validator("datasets", "targets", "phases")
    @classmethod
    def _not_empty(cls, v: dict | list) -> dict | list:
        if not v:
            raise ValueError("declare at least one")     # no phase: a cell doing nothing, reported ok
        return v

    @field_validator("phases")
    @classmethod
    def _stream_alone(cls, v: list) -> list:
        if "stream" in v and set(v) != {"stream"}:
            raise ValueError("stream goes alone (phases: [stream]): it writes data of its own, and runs the "
                             "queries: section's types while writing with stream.queries: true")
        return v

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, v: dict) -> dict:
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"matrix key {k!r} has no values")
        return v

    @property
    def cells(self) -> list[Cell]:
        """Every cell (expanded and checked when the file was loaded)."""
        return cells(self)


def json_schema() -> str:
    return json.dumps(Experiment.model_json_schema(), indent=2)


# ---- reading, with the line of every field ---------------------------------------------------------

def _lines(node, path=()) -> dict[tuple, int]:
    """YAML node tree -> {path: 1-based line} for every mapping key and sequence item."""
    out = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            p = path + (k.value,)
            out[p] = k.start_mark.line + 1
            out.update({q: n for q, n in _lines(v, p).items() if q != p})
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            out.update(_lines(v, path + (i,)))
    return out


def load_experiment(path: str | pathlib.Path, overrides: tuple[str, ...] = ()) -> Experiment:
    """Read, check and expand an experiment file: every cell is built and checked
    here (its settings by the file's models, its target's options by the target,
    its server's options by the server class), so a bad file fails before anything runs.
    overrides: `KEY.PATH=YAML` items (`run --set`) applied to the file's data first."""
    p = pathlib.Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise UserError(f"{p}: no such experiment file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{p}: cannot read the experiment file ({getattr(exc, 'strerror', None) or exc})") from None
    data, node = yamlfile.parse(text, p)
    if not isinstance(data, dict):
        raise UserError(f"{p}: an experiment file is a mapping (name:, datasets:, targets:, ...)")
    lines = _lines(node) if node is not None else {}
    for item in overrides:
        apply_override(data, item)
    if "repetitions" in data:           # the old key: separate cells; now trials within one
        raise UserError(f"{p}:{lines.get(('repetitions',), 1)}: repetitions: replaced by repeat: N (N trials of "
                        "each phase within one cell, the figures the median over them)")
    exp = _validate(p, data, lines)
    exp._overrides = list(overrides)
    _check_names(p, exp, lines)
    for name, d in exp.datasets.items():
        if d.file and "stream" in exp.phases:
            raise UserError(f"{p}:{lines.get(('datasets', name, 'file'), 1)}: datasets.{name}.file: the stream phase "
                            f"generates its data as it writes; a file of your own is loaded by the load phase")
    for name, d in exp.datasets.items():      # a schema file is found beside the experiment file
        if d.schema_file and not pathlib.Path(d.schema_file).is_absolute():
            f = p.parent / d.schema_file
            if not f.is_file():
                raise UserError(f"{p}:{lines.get(('datasets', name, 'schema_file'), 1)}: datasets.{name}.schema_file: "
                                f"no such file {str(f)!r} (a relative path is taken from the experiment file's folder)")
            d.schema_file = str(f.resolve())
    exp._cells = _expand(exp, _Source(str(p), lines))
    _check_patterns(p, exp, lines)      # after the values: an entry that would match nothing
    return exp


def apply_override(data: dict, item: str) -> None:
    """Set one `a.b.c=VALUE` in the file's data (VALUE read as YAML: 4, [a, b], "2016-01-01T03:00:00Z");
    the keys on the way must be mappings (made if missing); under matrix the rest is one key
    (matrix.load.workers=[4])."""
    key, eq, text = item.partition("=")
    path = [k for k in key.strip().split(".")]
    if not eq or not all(path):
        raise UserError(f"--set {item!r}: expected KEY.PATH=VALUE, e.g. datasets.devops100.end=2016-01-01T03:00:00Z")
    value, _ = yamlfile.parse(text, f"--set {key}")
    if isinstance(value, datetime.date):          # a timestamp stays the text given, as the file's quoted ones
        value = text.strip()
    node, i = data, 0
    while i < len(path) - 1 and not (path[0] == "matrix" and i == 1):   # matrix keys are dotted: load.workers
        node = node.setdefault(path[i], {})
        i += 1
        if not isinstance(node, dict):
            raise UserError(f"--set {key}: {'.'.join(path[:i])} is not a mapping in the experiment file")
    node[".".join(path[i:])] = value


def _validate(p: pathlib.Path, data: dict, lines: dict) -> Experiment:
    """The file's data as an Experiment, or one line naming the first bad field."""
    try:
        return Experiment.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = tuple(e["loc"])
        line = next((lines[loc[:k]] for k in range(len(loc), 0, -1) if loc[:k] in lines), None)
        field = ".".join(str(x) for x in loc if x != "[key]") or "(top)"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            parent = _model_at(loc[:-1])
            allowed = ", ".join(parent.model_fields) if parent else ""
            msg = f"unknown key{f' (allowed: {allowed})' if allowed else ''}"
        raise UserError(f"{p}:{line or 1}: {field}: {msg}") from None


def _model_at(loc: tuple):
    """The pydantic model at a location of the file, to list its keys."""
    model = Experiment
    for part in loc:
        field = model.model_fields.get(str(part)) if isinstance(part, str) else None
        if field is None:
            if model in (Experiment,) or isinstance(part, int):
                continue
            return model
        ann = field.annotation
        sub = getattr(ann, "__args__", None)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            model = ann
        elif sub and isinstance(sub[-1], type) and issubclass(sub[-1], BaseModel):
            model = sub[-1]              # dict[str, Decl]: the next key is a name
        else:
            return None
    return model


def _check_names(p: pathlib.Path, exp: Experiment, lines: dict) -> None:
    from tsbench import databases

    for name, t in exp.targets.items():
        if t.target not in databases.names():
            raise UserError(f"{p}:{lines.get(('targets', name, 'target'), 1)}: targets.{name}.target: unknown "
                            f"target {t.target!r} (one of {', '.join(databases.names())})")
    for k in exp.matrix:
        if not _known_knob(k):
            raise UserError(f"{p}:{lines.get(('matrix', k), 1)}: matrix.{k}: unknown knob (allowed: dataset, "
                            f"target, load.workers, load.batch_size, load.processes, load.cluster, execute.cluster, "
                            f"queries.count, "
                            f"execute.workers, execute.cache, execute.count, dataset.scale, dataset.params.KEY, "
                            f"target.options.KEY, target.server_options.KEY, stream.KEY)")
    for name_key, decls in (("dataset", exp.datasets), ("target", exp.targets)):
        for v in exp.matrix.get(name_key, []):
            if v not in decls:
                raise UserError(f"{p}:{lines.get(('matrix', name_key), 1)}: matrix.{name_key}: {v!r} is not "
                                f"declared under {name_key}s: (declared: {', '.join(decls)})")


def _check_patterns(p: pathlib.Path, exp: Experiment, lines: dict) -> None:
    """exclude: and query_cells: entries name matrix keys and values (else they would match nothing)."""
    axes = {"dataset": list(exp.datasets), "target": list(exp.targets), **exp.matrix}
    for key in ("exclude", "query_cells"):
        for i, ex in enumerate(getattr(exp, key)):
            for k, v in ex.items():
                where = f"{p}:{lines.get((key, i, k), lines.get((key, i), 1))}: {key}[{i}].{k}"
                if not _known_knob(k):
                    raise UserError(f"{where}: unknown knob")
                if k not in axes:
                    raise UserError(f"{where}: not a key of the matrix (matrix: {', '.join(exp.matrix) or 'none'})")
                if v not in axes[k]:
                    what = f"declared {k}s" if k in ("dataset", "target") and k not in exp.matrix else "its values"
                    raise UserError(f"{where}: {v!r} is not among {what} "
                                    f"({', '.join(map(str, axes[k]))}); this entry would match nothing")


def _known_knob(k: str) -> bool:
    return k in ("dataset", "target", "load.workers", "load.batch_size", "load.processes", "load.cluster",
                 "execute.cluster", "queries.count",
                 "execute.workers", "execute.cache", "execute.count", "dataset.scale") or \
        k.startswith(("dataset.params.", "target.options.", "target.server_options.", "stream."))


# ---- cells -----------------------------------------------------------------------------------------

@dataclass
class _Source:
    """Where an experiment came from, to name the line of a bad value."""

    file: str          # the file, or "experiment NAME" for one built in code
    lines: dict | None  # _lines() of the file; None: no file

    def error(self, where: tuple, field: str, msg: str) -> UserError:
        if self.lines is None:
            return UserError(f"{self.file}: {field}: {msg}")
        line = next((self.lines[where[:k]] for k in range(len(where), 0, -1) if where[:k] in self.lines), 1)
        return UserError(f"{self.file}:{line}: {field}: {msg}")


def cells(exp: Experiment) -> list[Cell]:
    """Every cell of the experiment (see Cell), in matrix order."""
    if exp._cells is None:                  # built in code rather than read from a file
        exp._cells = _expand(exp, _Source(f"experiment {exp.name}", None))
    return list(exp._cells)


def _expand(exp: Experiment, src: _Source) -> list[Cell]:
    """The matrix as checked cells; the first bad value is one UserError."""
    _check_declared_targets(exp, src)
    axes = dict(exp.matrix)
    axes.setdefault("dataset", list(exp.datasets))
    axes.setdefault("target", list(exp.targets))
    keys = list(axes)
    out: list[Cell] = []
    checked: set[str] = set()
    for combo in itertools.product(*(axes[k] for k in keys)):
        knobs = dict(zip(keys, combo))
        if any(_matches(knobs, ex) for ex in exp.exclude):
            continue
        settings = _settings(exp, knobs, src)
        _check_cell_target(settings["target"], knobs, src, checked)
        _check_cell_dataset(settings["dataset"], knobs, src, checked)
        if settings["stream"].time is not None and settings["dataset"].interval is not None:
            raise src.error(("stream", "time"), "stream.time", f"it spreads the points over its span: leave "
                            f"dataset {knobs['dataset']}'s interval out")
        here = not exp.query_cells or any(_matches(knobs, m) for m in exp.query_cells)
        out.append(Cell(id=len(out), dataset_name=knobs["dataset"], target_name=knobs["target"],
                        knobs={k: v for k, v in knobs.items() if k not in ("dataset", "target")},
                        queries_here=here, **settings))
    if not out:
        raise src.error(("exclude",), "exclude", "the matrix has no cells left (every combination is excluded)")
    return out


def _matches(knobs: dict, pattern: dict) -> bool:
    return all(knobs.get(k) == v for k, v in pattern.items())


def _settings(exp: Experiment, knobs: dict, src: _Source) -> dict[str, BaseModel]:
    """The declared settings of a cell with its knobs applied, validated again."""
    raw = copy.deepcopy({"dataset": exp.datasets[knobs["dataset"]].model_dump(),
                         "target": exp.targets[knobs["target"]].model_dump(),
                         "load": exp.load.model_dump(), "queries": exp.queries.model_dump(),
                         "execute": exp.execute.model_dump(), "stream": exp.stream.model_dump()})
    for section, phases in (("load", {"load"}), ("stream", {"stream"}), ("execute", {"execute", "validate"})):
        if "repeat" not in getattr(exp, section).model_fields_set:
            raw[section]["repeat"] = exp.repeat            # the file's repeat: each phase whose section does not say
        if exp.cluster and raw[section].get("cluster") is None and phases & set(exp.phases):
            raw[section]["cluster"] = exp.cluster          # the file's cluster: for each phase that has slots
    for k, v in knobs.items():
        if k in ("dataset", "target"):
            continue
        node = raw
        *parents, last = k.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = v
    out = {}
    for section, model in SECTIONS.items():
        try:
            out[section] = model(**raw[section])
        except ValidationError as exc:
            e = exc.errors()[0]
            field = ".".join([section, *(str(x) for x in e["loc"])])
            k = _guilty_knob(knobs, section, field)
            if k not in knobs:            # no knob set it (the file's own check passed it): kept safe
                raise src.error((section,), field, e["msg"]) from None
            raise src.error(("matrix", k), f"matrix.{k}", f"{knobs[k]!r}: {e['msg']}") from None
    return out


def _guilty_knob(knobs: dict, section: str, field: str) -> str:
    """The knob that set a bad field (else the first knob of its section)."""
    ours = [k for k in knobs if k.startswith(section + ".")]
    return next((k for k in ours if field == k or field.startswith(k + ".") or k.startswith(field + ".")),
                ours[0] if ours else section)


def _target_problem(t: TargetDecl) -> tuple[str, str | None, str] | None:
    """(options or server_options, the key at fault if named, the message) if the
    target refuses its options or its local server its server options, else None."""
    from tsbench.databases import is_local, local_kind, server_class, target_class

    cls = target_class(t.target)
    try:
        cls.parse_options(secrets.resolve_env(t.options, f"target {t.target}"))
    except UserError as exc:
        return "options", _named_key(str(exc), t.options), str(exc)
    kind = local_kind(cls, t.server) if is_local(t.server) else None
    if kind is not None:
        try:
            server_class(kind)(options=t.server_options)     # checks its options, starts nothing
        except UserError as exc:
            return "server_options", _named_key(str(exc), t.server_options), str(exc)
    return None


def _named_key(msg: str, options: dict) -> str | None:
    """The option a target's or server's message is about ("option K:", "unknown option 'K'")."""
    for m in re.finditer(r"option '?([^\s:'(]+)", msg):
        key = m.group(1).split(".")[0]
        if key in options:
            return key
    return None


def _check_declared_targets(exp: Experiment, src: _Source) -> None:
    """Every declared target's options as declared, blamed on the line of the option."""
    for name, t in exp.targets.items():
        problem = _target_problem(t)
        if problem is None:
            continue
        section, key, msg = problem
        if key is None:
            raise src.error(("targets", name, section), f"targets.{name}.{section}", msg)
        value = getattr(t, section)[key]
        raise src.error(("targets", name, section, key), f"targets.{name}.{section}.{key}", f"{value!r}: {msg}")


def _check_cell_target(t: TargetDecl, knobs: dict, src: _Source, checked: set[str]) -> None:
    """A cell's target options once its knobs are applied, blamed on the matrix key."""
    sig = t.model_dump_json()
    if sig in checked:
        return
    checked.add(sig)
    problem = _target_problem(t)
    if problem is None:
        return
    section, key, msg = problem
    k = f"target.{section}.{key}" if f"target.{section}.{key}" in knobs else \
        _guilty_knob(knobs, f"target.{section}", f"target.{section}")
    if k not in knobs:      # no knob of this section: the declaration itself (checked before; kept safe)
        raise src.error(("targets", knobs["target"], section), f"targets.{knobs['target']}.{section}", msg)
    raise src.error(("matrix", k), f"matrix.{k}", f"{knobs[k]!r}: {msg}")


def _dataset_problem(d: DatasetDecl) -> str | None:
    """Why a dataset cannot be generated (use case, scale, times, parameters, schema, empty), else None."""
    from tsbench.data.dataset import resolve
    from tsbench.data.generate import check_nonempty

    if d.file:
        return _file_problem(d)
    try:
        check_nonempty(resolve(DatasetSpec(**d.generated_settings())))
    except UserError as exc:
        return str(exc)
    return None


def _file_problem(d: DatasetDecl) -> str | None:
    """Why a file dataset cannot be imported as declared (no such file, a setting of the other format)."""
    import os

    from tsbench.data.importing import check_settings, file_format

    if not os.path.isfile(d.file):
        return (f"file: no such file {d.file!r} (a relative path is taken from the folder tsbench runs in; give "
                f"yours with --set datasets.NAME.file=PATH)")
    try:
        check_settings(file_format(d.file, d.format), d.import_settings(), option=str)
    except UserError as exc:
        return str(exc)
    return None


def _check_cell_dataset(d: DatasetDecl, knobs: dict, src: _Source, checked: set[str]) -> None:
    """A cell's dataset as generate would resolve it, blamed on the matrix key that set
    the bad value (the message names it as an option: --scale, --param KEY), else on
    the dataset's declaration."""
    sig = "dataset " + d.model_dump_json()
    if sig in checked:
        return
    checked.add(sig)
    msg = _dataset_problem(d)
    if msg is None:
        return
    for k in (k for k in knobs if k.startswith("dataset.")):
        leaf = k.split(".", 1)[1]
        option = f"--param {leaf[7:]}" if leaf.startswith("params.") else "--" + leaf.replace("_", "-")
        if msg.startswith(option + ":"):
            raise src.error(("matrix", k), f"matrix.{k}", f"{knobs[k]!r}: {msg}")
    name = knobs["dataset"]
    raise src.error(("datasets", name), f"datasets.{name}", msg)


def describe_cell(c: Cell) -> str:
    knobs = " ".join(f"{k}={v}" for k, v in c.knobs.items())
    where = "" if c.queries_here else " (no query phases here)"
    return f"cell {c.id}: {c.dataset_name} -> {c.target_name} ({c.target.target}) {knobs}".rstrip() + where
