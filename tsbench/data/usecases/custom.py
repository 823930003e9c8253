"""The custom use case (phase 1): measurements, tags and fields with their
evolutions declared in a YAML file (--schema FILE). See
experiments/schemas/replication_lag.yaml for an example and the README for
every key. A typo names the file and the field in one line.
"""

from __future__ import annotations

import difflib
import pathlib
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic import Field as PField

from tsbench.core import yamlfile
from tsbench.core.errors import UserError
from tsbench.core.timeutil import parse_duration
from tsbench.data.schema import (
    EVO,
    INIT_DRAW,
    Dist,
    Faults,
    Field,
    Init,
    Schema,
    Series,
    Tag,
    choice_by_tag,
    choice_tag,
    init_by_tag,
    init_choice,
    init_const,
    init_uniform,
    parse_template,
)
from tsbench.data.usecases.base import UseCase, fault_model


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

class StepSpec(_M):
    normal: tuple[float, float] | None = None
    uniform: tuple[float, float] | None = None
    constant: float | None = None

class ByTagSpec(_M):
    tag: str
    values: dict[str, float]

class InitSpec(_M):
    uniform: tuple[float, float] | None = None
    choice: list[float] | None = None
    by_tag: ByTagSpec | None = None

class RatioSpec(_M):
    num: str
    den: str
    scale: float = 1.0

class FieldSpec(_M):
    name: str
    type: Literal["int", "float"] = "float"
    evolution: Literal["fresh", "walk", "clamped_walk", "monotonic_walk", "constant", "linear", "ratio"]
    step: StepSpec | None = None
    min: float | None = None
    max: float | None = None
    initial: Union[float, Literal["draw"], InitSpec] = 0.0
    decimals: int | None = PField(None, ge=0, le=15)
    probability: float = PField(1.0, ge=0, le=1)
    refill: bool = False
    hidden: bool = False
    scale_by: str | None = None
    terms: dict[str, float] | None = None
    constant: float = 0.0
    ratio: RatioSpec | None = None

class ChoiceBySpec(_M):
    tag: str
    values: dict[str, list[str]]

class TagSpec(_M):
    choice: list[str] | None = None
    choice_by: ChoiceBySpec | None = None

class MeasurementSpec(_M):
    name: str
    tags: dict[str, Union[str, TagSpec]] = {}
    fields: list[FieldSpec] = PField(min_length=1)

# faults: {KEY: VALUE}: the fault settings, perfect data by default (schema.FAULT_SETTINGS)
FaultSpec = fault_model("FaultSpec", "default")

class SchemaSpec(_M):
    name: str
    description: str = ""
    scale: int = PField(1, ge=1)
    interval: str = "10s"
    duration: str | None = None
    tags: dict[str, Union[str, TagSpec]] = {}
    measurements: list[MeasurementSpec] = PField(min_length=1)
    faults: FaultSpec = FaultSpec()

def _tag(key: str, spec, where: str) -> Tag:
    if isinstance(spec, str):
        return Tag(key, parse_template(spec))
    if (spec.choice is None) == (spec.choice_by is None):
        raise UserError(f"{where}.tags.{key}: give a template string, choice or choice_by")
    if spec.choice is not None:
        return choice_tag(key, spec.choice)
    return choice_by_tag(key, spec.choice_by.tag, spec.choice_by.values)

def _step(f: FieldSpec, where: str) -> Dist | None:
    s = f.step
    if s is None:
        return None
    given = [k for k in ("normal", "uniform", "constant") if getattr(s, k) is not None]
    if len(given) != 1:
        raise UserError(f"{where}.step: give exactly one of normal: [mean, sd], uniform: [lo, hi], constant: x")
    k = given[0]
    v = getattr(s, k)
    return Dist("const", v) if k == "constant" else Dist(k, *v)

def _init(f: FieldSpec, where: str) -> Init:
    i = f.initial
    if i == "draw":
        return INIT_DRAW
    if isinstance(i, (int, float)):
        return init_const(float(i))
    given = [k for k in ("uniform", "choice", "by_tag") if getattr(i, k) is not None]
    if len(given) != 1:
        raise UserError(f"{where}.initial: give a number, draw, uniform: [lo, hi], choice: [...] or by_tag")
    if i.uniform is not None:
        return init_uniform(*i.uniform)
    if i.choice is not None:
        return init_choice(i.choice)
    return init_by_tag(i.by_tag.tag, i.by_tag.values)

def _field(f: FieldSpec, where: str) -> Field:
    import math

    if f.evolution == "linear":
        if not f.terms:
            raise UserError(f"{where}.terms: a linear field needs terms: {{field: coefficient}}")
        return Field(f.name, "linear", type=f.type, terms=tuple((c, n) for n, c in f.terms.items()),
                     const=f.constant, decimals=f.decimals, hidden=f.hidden)
    if f.evolution == "ratio":
        if not f.ratio:
            raise UserError(f"{where}.ratio: a ratio field needs ratio: {{num: a, den: b, scale: 100}}")
        return Field(f.name, "ratio", type=f.type, ratio=(f.ratio.num, f.ratio.den), scale=f.ratio.scale,
                     decimals=f.decimals, hidden=f.hidden)
    step = _step(f, where)
    if step is None and f.evolution not in ("constant",):
        raise UserError(f"{where}.step: evolution {f.evolution} needs a step distribution")
    if f.evolution == "clamped_walk" and (f.min is None or f.max is None):
        raise UserError(f"{where}: a clamped_walk needs min and max")
    return Field(f.name, f.evolution, step, lo=-math.inf if f.min is None else f.min,
                 hi=math.inf if f.max is None else f.max, init=_init(f, where), type=f.type,
                 decimals=f.decimals, prob=f.probability, reset=f.refill, hidden=f.hidden, scale_by=f.scale_by)

def _locate(loc: tuple) -> str:
    out = ""
    for x in loc:
        out += f"[{x}]" if isinstance(x, int) else (f".{x}" if out else str(x))
    return out

def _explain(path: pathlib.Path, exc: ValidationError) -> str:
    errors = exc.errors()
    # an unknown key (a typo) explains the missing one it was meant to be: report it first
    e = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
    loc = tuple(x for x in e["loc"] if not (isinstance(x, str) and (x in ("str", "float", "int") or "[" in x
                                                                         or x.startswith("literal"))))
    where = _locate(loc)
    if e["type"] == "extra_forbidden":
        bad = loc[-1]
        model = _model_at(loc[:-1])
        hint = difflib.get_close_matches(str(bad), list(model.model_fields), n=1) if model else []
        fix = f" (did you mean {hint[0]!r}?)" if hint else ""
        return f"{path}: {where}: unknown key{fix}"
    if e["type"] == "missing":
        return f"{path}: {where}: missing"
    if e["type"] == "literal_error":
        return f"{path}: {where}: {e['msg'].lower()}, got {e.get('input')!r}"
    return f"{path}: {where}: {e['msg']}"

def _model_at(loc: tuple):
    model = SchemaSpec
    for x in loc:
        if isinstance(x, int):
            continue
        fld = model.model_fields.get(str(x))
        if fld is None:
            return None
        ann = fld.annotation
        nxt = None
        for cand in (ann, *getattr(ann, "__args__", ())):
            for sub in (cand, *getattr(cand, "__args__", ())):
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    nxt = sub
        if nxt is None:
            return None
        model = nxt
    return model

def load_schema_file(path: str | pathlib.Path) -> SchemaSpec:
    p = pathlib.Path(path)
    try:
        raw = yamlfile.load(p)                # bad YAML or a duplicate key: one line, FILE:LINE
    except FileNotFoundError:
        raise UserError(f"--schema: no such file {str(p)!r}") from None
    if not isinstance(raw, dict):
        raise UserError(f"{p}: expected a mapping with name and measurements")
    try:
        return SchemaSpec(**raw)
    except ValidationError as exc:
        raise UserError(_explain(p, exc)) from None

class Custom(UseCase):
    """custom: a schema declared in YAML (--schema FILE)."""

    name = "custom"

    def __init__(self, params: dict | None = None, schema_file: str | None = None):
        super().__init__(params)
        if not schema_file:
            raise UserError("--schema: the custom use case needs a schema file (--schema FILE.yaml)")
        self.path = pathlib.Path(schema_file)
        self.spec = load_schema_file(self.path)
        self.default_scale = self.spec.scale

    def time_range(self, start_ns, end_ns, interval_ns):
        interval = interval_ns or parse_duration(self.spec.interval, f"{self.path}: interval")
        if end_ns is None and self.spec.duration:
            end_ns = start_ns + parse_duration(self.spec.duration, f"{self.path}: duration")
        return super().time_range(start_ns, end_ns, interval)

    def schema(self) -> Schema:
        sp = self.spec
        where0 = str(self.path)
        entity_tags = tuple(_tag(k, v, where0) for k, v in sp.tags.items())
        series = []
        for i, m in enumerate(sp.measurements):
            w = f"{where0}: measurements[{i}]"
            tags = tuple(_tag(k, v, w) for k, v in m.tags.items())
            fields = tuple(_field(f, f"{w}.fields[{j}]") for j, f in enumerate(m.fields))
            series.append(Series(m.name, fields, tags))
        faults = Faults(**sp.faults.model_dump())
        return Schema(sp.name, tuple(series), entity_tags=entity_tags, faults=faults, origin=str(self.path))

assert set(EVO) == set(FieldSpec.model_fields["evolution"].annotation.__args__)
