"""An experiment file (all phases): YAML, checked with pydantic, naming the
datasets, the targets (server local or a URL, their options), the phases to run,
each phase's settings, and a `matrix:` of knobs expanded as a cartesian product
(minus `exclude:` entries) times `repetitions`; `query_cells:` picks the cells
that run the query phases (default: all). A bad file is reported in one
line naming the file, the line and the field, and what is allowed.

Matrix keys are dotted paths into a cell's settings: `dataset` and `target`
(names declared above), `load.workers`, `load.batch_size`, `execute.workers`,
`execute.cache`, `queries.count`, `dataset.scale`, `dataset.params.<key>`,
`target.options.<key>`, `target.server_options.<key>`."""

from __future__ import annotations

import copy
import itertools
import json
import pathlib
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import UserError, yaml_error

PHASES = ("generate", "load", "queries", "execute", "validate")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetDecl(_Strict):
    use_case: str = "devops"
    scale: int | None = None
    start: str = "2016-01-01T00:00:00Z"
    end: str | None = None
    interval: str | None = None
    seed: int = 1
    params: dict[str, Any] = {}
    schema_file: str | None = None


class TargetDecl(_Strict):
    target: str
    server: str = "local"
    options: dict[str, Any] = {}
    server_options: dict[str, Any] = {}


class LoadDecl(_Strict):
    workers: int = Field(4, ge=1)
    batch_size: int = Field(10_000, ge=1)
    processes: int = Field(1, ge=1)


class QueriesDecl(_Strict):
    types: list[str] = []
    families: list[Literal["devops", "iot", "flux", "relational"]] = []
    count: int = Field(10, ge=1)
    seed: int = 1


class ExecuteDecl(_Strict):
    workers: int = Field(1, ge=1)
    count: int | None = Field(None, ge=1)
    burn_in: int = Field(0, ge=0)
    cache: Literal["warm", "cold", "cold-query"] = "warm"


class Experiment(_Strict):
    """An experiment: `python -m tsbench schema` prints this model as JSON Schema."""

    name: str
    description: str = ""
    datasets: dict[str, DatasetDecl]
    targets: dict[str, TargetDecl]
    phases: list[Literal["generate", "load", "queries", "execute", "validate"]] = list(PHASES)
    load: LoadDecl = LoadDecl()
    queries: QueriesDecl = QueriesDecl()
    execute: ExecuteDecl = ExecuteDecl()
    matrix: dict[str, list[Any]] = {}
    exclude: list[dict[str, Any]] = []
    # the query phases (queries, execute, validate) run only in the cells matching one of
    # these (e.g. [{load.workers: 4}]: query each loaded database once); default: every cell
    query_cells: list[dict[str, Any]] = []
    repetitions: int = Field(1, ge=1)

    @field_validator("datasets", "targets")
    @classmethod
    def _not_empty(cls, v: dict) -> dict:
        if not v:
            raise ValueError("declare at least one")
        return v

    @field_validator("matrix")
    @classmethod
    def _matrix(cls, v: dict) -> dict:
        for k, vals in v.items():
            if not vals:
                raise ValueError(f"matrix key {k!r} has no values")
        return v


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


def load_experiment(path: str | pathlib.Path) -> Experiment:
    p = pathlib.Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise UserError(f"{p}: no such experiment file") from None
    try:
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise yaml_error(p, exc) from None
    if not isinstance(data, dict):
        raise UserError(f"{p}: an experiment file is a mapping (name:, datasets:, targets:, ...)")
    lines = _lines(node) if node is not None else {}
    try:
        exp = Experiment(**data)
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = tuple(e["loc"])
        line = next((lines[loc[:k]] for k in range(len(loc), 0, -1) if loc[:k] in lines), None)
        field = ".".join(str(x) for x in loc) or "(top)"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            parent = _model_at(loc[:-1])
            allowed = ", ".join(parent.model_fields) if parent else ""
            msg = f"unknown key{f' (allowed: {allowed})' if allowed else ''}"
        raise UserError(f"{p}:{line or 1}: {field}: {msg}") from None
    _check_names(p, exp, lines)
    for name, d in exp.datasets.items():      # a schema file is found beside the experiment file
        if d.schema_file and not pathlib.Path(d.schema_file).is_absolute():
            f = p.parent / d.schema_file
            if not f.is_file():
                raise UserError(f"{p}:{lines.get(('datasets', name, 'schema_file'), 1)}: datasets.{name}.schema_file: "
                                f"no such file {str(f)!r} (a relative path is taken from the experiment file's folder)")
            d.schema_file = str(f.resolve())
    return exp


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
    from . import targets

    for name, t in exp.targets.items():
        if t.target not in targets.names():
            raise UserError(f"{p}:{lines.get(('targets', name, 'target'), 1)}: targets.{name}.target: unknown "
                            f"target {t.target!r} (one of {', '.join(targets.names())})")
    for k in exp.matrix:
        if not _known_knob(k):
            raise UserError(f"{p}:{lines.get(('matrix', k), 1)}: matrix.{k}: unknown knob (allowed: dataset, "
                            f"target, load.workers, load.batch_size, load.processes, queries.count, "
                            f"execute.workers, execute.cache, execute.count, dataset.scale, dataset.params.KEY, "
                            f"target.options.KEY, target.server_options.KEY)")
    for name_key, decls in (("dataset", exp.datasets), ("target", exp.targets)):
        for v in exp.matrix.get(name_key, []):
            if v not in decls:
                raise UserError(f"{p}:{lines.get(('matrix', name_key), 1)}: matrix.{name_key}: {v!r} is not "
                                f"declared under {name_key}s: (declared: {', '.join(decls)})")
    for key in ("exclude", "query_cells"):
        for i, ex in enumerate(getattr(exp, key)):
            for k in ex:
                if not _known_knob(k):
                    raise UserError(f"{p}:{lines.get((key, i), 1)}: {key}[{i}].{k}: unknown knob")


def _known_knob(k: str) -> bool:
    return k in ("dataset", "target", "load.workers", "load.batch_size", "load.processes", "queries.count",
                 "execute.workers", "execute.cache", "execute.count", "dataset.scale") or \
        k.startswith(("dataset.params.", "target.options.", "target.server_options."))


# ---- cells -----------------------------------------------------------------------------------------

def cells(exp: Experiment) -> list[dict]:
    """Every cell: {id, dataset name, target name, knobs, repetition, dataset, target, load, queries, execute}."""
    axes = dict(exp.matrix)
    axes.setdefault("dataset", list(exp.datasets))
    axes.setdefault("target", list(exp.targets))
    keys = list(axes)
    out = []
    for combo in itertools.product(*(axes[k] for k in keys)):
        knobs = dict(zip(keys, combo))
        if any(all(knobs.get(k) == v for k, v in ex.items()) for ex in exp.exclude):
            continue
        for rep in range(exp.repetitions):
            cell = {"dataset": exp.datasets[knobs["dataset"]].model_dump(),
                    "target": exp.targets[knobs["target"]].model_dump(),
                    "load": exp.load.model_dump(), "queries": exp.queries.model_dump(),
                    "execute": exp.execute.model_dump()}
            cell = copy.deepcopy(cell)
            for k, v in knobs.items():
                if k in ("dataset", "target"):
                    continue
                node = cell
                *parents, last = k.split(".")
                for part in parents:
                    node = node.setdefault(part, {})
                node[last] = v
            out.append({"id": len(out), "dataset_name": knobs["dataset"], "target_name": knobs["target"],
                        "knobs": {k: v for k, v in knobs.items() if k not in ("dataset", "target")},
                        "queries_here": not exp.query_cells or any(all(knobs.get(k) == v for k, v in m.items())
                                                                   for m in exp.query_cells),
                        "repetition": rep, **cell})
    if not out:
        raise UserError("the matrix has no cells left (every combination is excluded)")
    return out


def describe_cell(c: dict) -> str:
    knobs = " ".join(f"{k}={v}" for k, v in c["knobs"].items())
    rep = f" rep {c['repetition'] + 1}" if c["repetition"] else ""
    where = "" if c.get("queries_here", True) else " (no query phases here)"
    return (f"cell {c['id']}: {c['dataset_name']} -> {c['target_name']} ({c['target']['target']}){rep} "
            f"{knobs}".rstrip() + where)
