"""Declarations of generated data (phase 1, generate): series, tags, fields and
their evolutions, and imperfect delivery (FAULT_SETTINGS), as plain Python
objects that use cases build and that `compile_schema` turns into the flat
arrays the C simulator takes.

Nothing here runs per row: a schema is compiled once per simulator.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, make_dataclass
from typing import Mapping, Sequence

from tsbench.core.errors import UserError

# must match the enums of csrc/tsbench.h
DIST = {"normal": 0, "uniform": 1, "const": 2}
EVO = {"fresh": 0, "walk": 1, "clamped_walk": 2, "monotonic_walk": 3, "constant": 4, "linear": 5, "ratio": 6}
INIT = {"const": 0, "uniform": 1, "draw": 2, "choice": 3, "by_tag": 4}
TYPE = {"float": 0, "int": 1}
PART = {"lit": 0, "entity": 1, "int": 2, "choice": 3, "choice_by": 4}
DERIVED = ("linear", "ratio")


@dataclass(frozen=True)
class Dist:
    """A step distribution: normal(mean, sd), uniform[lo, hi) or a constant."""

    kind: str
    a: float
    b: float = 0.0


def normal(mean: float, sd: float) -> Dist:
    return Dist("normal", mean, sd)


def uniform(lo: float, hi: float) -> Dist:
    return Dist("uniform", lo, hi)


def constant(x: float) -> Dist:
    return Dist("const", x)


@dataclass(frozen=True)
class Init:
    """How a field's state starts: a constant, a uniform draw, a draw of the
    step distribution, a random pick from values, or the value matching the
    choice made for a tag (by_tag: {tag value: number})."""

    kind: str = "const"
    a: float = 0.0
    b: float = 0.0
    values: tuple[float, ...] = ()
    tag: str | None = None
    by_tag: tuple[tuple[str, float], ...] = ()


def init_const(x: float) -> Init:
    return Init("const", x)


def init_uniform(lo: float, hi: float) -> Init:
    return Init("uniform", lo, hi)


def init_choice(values: Sequence[float]) -> Init:
    return Init("choice", values=tuple(values))


def init_by_tag(tag: str, mapping: Mapping[str, float]) -> Init:
    return Init("by_tag", tag=tag, by_tag=tuple(mapping.items()))


INIT_DRAW = Init("draw")


@dataclass(frozen=True)
class Field:
    """One field of a series and how it evolves each tick.

    Written value = state, truncated to `decimals`, then to an integer for
    type int. linear: const + sum(coef * written value of field); ratio:
    scale * num / den. `scale_by` names an earlier constant field whose value
    multiplies the step, bounds and initial parameters (mem: sd = total / 64)."""

    name: str
    evolution: str
    step: Dist | None = None
    lo: float = -math.inf
    hi: float = math.inf
    init: Init = Init()
    type: str = "int"
    decimals: int | None = None
    prob: float = 1.0
    reset: bool = False
    hidden: bool = False
    scale_by: str | None = None
    terms: tuple[tuple[float, str], ...] = ()
    const: float = 0.0
    ratio: tuple[str, str] | None = None
    scale: float = 1.0


# short constructors, named as in DATAMODEL.md
def nd(name: str, mean: float, sd: float, type: str = "float") -> Field:
    return Field(name, "fresh", normal(mean, sd), init=INIT_DRAW, type=type)


def wd(name: str, step: Dist, init: float | Init = 0.0, type: str = "int") -> Field:
    return Field(name, "walk", step, init=_init(init), type=type)


def cwd(name: str, step: Dist, lo: float, hi: float, init: float | Init = 0.0, type: str = "int",
        **kw) -> Field:
    return Field(name, "clamped_walk", step, lo=lo, hi=hi, init=_init(init), type=type, **kw)


def mwd(name: str, step: Dist, init: float | Init = 0.0, type: str = "int") -> Field:
    return Field(name, "monotonic_walk", step, init=_init(init), type=type)


def const(name: str, init: float | Init, type: str = "int", **kw) -> Field:
    return Field(name, "constant", constant(0.0), init=_init(init), type=type, **kw)


def lin(name: str, const: float = 0.0, terms: Sequence[tuple[float, str]] = (), type: str = "int") -> Field:
    return Field(name, "linear", terms=tuple(terms), const=const, type=type)


def ratio(name: str, num: str, den: str, scale: float = 1.0, type: str = "float") -> Field:
    return Field(name, "ratio", ratio=(num, den), scale=scale, type=type)


def _init(x: float | Init) -> Init:
    return x if isinstance(x, Init) else init_const(float(x))


@dataclass(frozen=True)
class Part:
    kind: str
    text: str = ""
    width: int = 0
    x: int = 0
    y: int = 0
    choices: tuple[str, ...] = ()
    parent: str | None = None
    by: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class Tag:
    """A tag key and its value, the concatenation of its parts."""

    key: str
    parts: tuple[Part, ...]

    @property
    def choices(self) -> tuple[str, ...] | None:
        """The values the first choice part picks among (their order is the choice index)."""
        for p in self.parts:
            if p.kind == "choice":
                return p.choices
            if p.kind == "choice_by":
                return None
        return None


_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ENTITY = re.compile(r"^entity(?:/(\d+))?(?:%(\d+))?(?::(\d+))?$")
_INT = re.compile(r"^int:(\d+)\.\.(\d+)(?::(\d+))?$")


def parse_template(template: str) -> tuple[Part, ...]:
    """Parse a tag value template.

    Literal text with placeholders: {entity} (the entity number; {entity/10%100}
    divides and takes a modulo; {entity:03} zero-pads), {int:LO..HI} (a number
    drawn once per entity, inclusive; {int:0..999:03} zero-pads),
    {choice:a|b|c} (one of the values, drawn once per entity). {{ and }} are
    literal braces."""
    parts: list[Part] = []
    pos = 0
    text = template.replace("{{", "\x00").replace("}}", "\x01")
    for m in _PLACEHOLDER.finditer(text):
        if m.start() > pos:
            parts.append(Part("lit", _unbrace(text[pos:m.start()])))
        body = m.group(1).strip()
        if (e := _ENTITY.match(body)):
            parts.append(Part("entity", x=int(e.group(1) or 1), y=int(e.group(2) or 0), width=int(e.group(3) or 0)))
            if parts[-1].x < 1:
                raise UserError(f"tag template {template!r}: the divisor must be >= 1")
        elif (i := _INT.match(body)):
            lo, hi = int(i.group(1)), int(i.group(2))
            if hi < lo:
                raise UserError(f"tag template {template!r}: {{int:{lo}..{hi}}} is empty")
            parts.append(Part("int", x=lo, y=hi - lo + 1, width=int(i.group(3) or 0)))
        elif body.startswith("choice:"):
            values = tuple(v for v in body[len("choice:"):].split("|"))
            if not all(values):
                raise UserError(f"tag template {template!r}: empty choice value")
            parts.append(Part("choice", choices=values))
        else:
            raise UserError(f"tag template {template!r}: unknown placeholder {{{body}}} "
                            "(use {entity}, {int:LO..HI} or {choice:a|b})")
        pos = m.end()
    rest = text[pos:]
    if "{" in rest or "}" in rest:
        raise UserError(f"tag template {template!r}: unbalanced brace")
    if rest:
        parts.append(Part("lit", _unbrace(rest)))
    return tuple(parts)


def _unbrace(s: str) -> str:
    if "{" in s or "}" in s:
        raise UserError(f"tag template text {s!r}: unbalanced brace (write {{{{ or }}}} for a literal one)")
    return s.replace("\x00", "{").replace("\x01", "}")


def tag(key: str, template: str) -> Tag:
    return Tag(key, parse_template(template))


def choice_tag(key: str, values: Sequence[str]) -> Tag:
    return Tag(key, (Part("choice", choices=tuple(values)),))


def choice_by_tag(key: str, parent: str, mapping: Mapping[str, Sequence[str]]) -> Tag:
    return Tag(key, (Part("choice_by", parent=parent, by=tuple((k, tuple(v)) for k, v in mapping.items())),))


@dataclass(frozen=True)
class Series:
    """A measurement: its own tags (after the entity tags) and fields."""

    name: str
    fields: tuple[Field, ...]
    tags: tuple[Tag, ...] = ()


@dataclass(frozen=True)
class FaultSetting:
    """One imperfect-delivery setting. FAULT_SETTINGS is the one definition: the
    Faults fields, the iot --param and custom `faults:` keys with their
    validation, and the fields of ts_faults (tsbench.h, same names and order;
    int is int32_t, float is double) all follow it."""

    name: str
    type: type        # int or float
    default: float    # with no faults declared: perfect data (custom schemas, devops, ...)
    iot: float        # the iot use case's default (TSBS's)
    lo: float         # the valid range, inclusive; hi None: unbounded
    hi: float | None
    doc: str

    @property
    def bounds(self) -> str:
        return f">= {self.lo}" if self.hi is None else f"within [{self.lo}, {self.hi}]"

    def check(self, v, where: str) -> None:
        """A UserError naming the setting unless v is of its type and within its range."""
        ok = isinstance(v, (int, float) if self.type is float else int) and not isinstance(v, bool)
        if not ok or not self.lo <= v <= (math.inf if self.hi is None else self.hi):
            raise UserError(f"{where}: faults: {self.name}={v!r} is not {self.type.__name__} {self.bounds}")


def _prob(name: str, iot: float, doc: str) -> FaultSetting:
    return FaultSetting(name, float, 0.0, iot, 0, 1, doc)


FAULT_SETTINGS: tuple[FaultSetting, ...] = (
    FaultSetting("group_size", int, 10, 10, 1, None,
                 "each (entity, series) stream is cut into groups of this many epochs"),
    _prob("group_drop", 0.01, "probability per group that every entry is dropped"),
    _prob("group_late", 0.05, "probability per group that every entry is delivered group_size epochs late"),
    _prob("missing", 0.10, "probability per entry that it is not delivered"),
    _prob("late", 0.30, "probability per entry that it is delivered 1..max_delay epochs late"),
    _prob("null_field", 0.10, "probability per entry that one field (not the only one) is null"),
    _prob("null_tag", 0.01, "probability per entry that one tag (never the first) is null"),
    FaultSetting("max_delay", int, 10, 10, 1, None, "the most epochs a late entry is delivered late"),
)


def fault_defaults(which: str = "default") -> dict[str, float]:
    """{name: default} of every setting; which: "default" (perfect data) or "iot"."""
    return {s.name: getattr(s, which) for s in FAULT_SETTINGS}


class _FaultsBase:
    """What Faults (fields: FAULT_SETTINGS) adds to its fields."""

    @property
    def max_lateness(self) -> int:
        """Epochs a record can be delivered after its own (the tail the simulator adds)."""
        late = 0
        if self.group_late > 0:
            late = self.group_size
        if self.late > 0:
            late = max(late, self.max_delay)
        return late

    def check(self, where: str) -> None:
        for s in FAULT_SETTINGS:
            s.check(getattr(self, s.name), where)


Faults = make_dataclass(
    "Faults", [(s.name, s.type, field(default=s.default)) for s in FAULT_SETTINGS], bases=(_FaultsBase,),
    frozen=True, namespace={"__module__": __name__, "__doc__": "Imperfect delivery, per (entity, series) "
                            "stream: one value per FAULT_SETTINGS entry, perfect data by default."})


@dataclass(frozen=True)
class Schema:
    name: str
    series: tuple[Series, ...]
    entity_tags: tuple[Tag, ...] = ()
    faults: Faults = field(default_factory=Faults)
    origin: str = ""   # the file it was declared in, for error messages

    def series_tags(self, s: int) -> tuple[Tag, ...]:
        return self.entity_tags + self.series[s].tags

    @property
    def values_per_epoch(self) -> int:
        """Written values per entity per epoch with perfect delivery."""
        return sum(1 for se in self.series for f in se.fields if not f.hidden)


@dataclass
class Compiled:
    """The flat arrays of ts_schema (tsbench.h), as plain Python lists."""

    strtab: bytes
    stroff: list[int]
    parts: list[tuple[int, int, int, int, int, int]]      # kind, width, a, b, x, y
    tags: list[tuple[int, int, int]]                        # key, first_part, n_parts
    n_entity_tags: int
    series: list[tuple[int, int, int, int, int]]            # name, first_field, n_fields, first_tag, n_tags
    fields: list[dict]
    table: list[float]
    itable: list[int]
    faults: Faults


def compile_schema(schema: Schema) -> Compiled:
    """Validate a schema and flatten it for the C simulator; errors name the
    series, field or tag."""
    strings: list[bytes] = []
    name = f"{schema.origin}: {schema.name}" if schema.origin else schema.name

    def s_idx(text: str) -> int:
        b = text.encode()
        if b"\x00" in b:
            raise UserError(f"{name}: NUL in {text!r}")
        strings.append(b)
        return len(strings) - 1

    parts: list[tuple[int, int, int, int, int, int]] = []
    tags: list[tuple[int, int, int]] = []
    itable: list[int] = []
    table: list[float] = []

    def add_tag(t: Tag, context: tuple[Tag, ...], where: str) -> None:
        first = len(parts)
        if not t.key:
            raise UserError(f"{where}: empty tag key")
        key = s_idx(t.key)
        for p in t.parts:
            if p.kind == "lit":
                parts.append((PART["lit"], 0, s_idx(p.text), 0, 0, 0))
            elif p.kind in ("entity", "int"):
                parts.append((PART[p.kind], p.width, 0, 0, p.x, p.y))
            elif p.kind == "choice":
                if not p.choices:
                    raise UserError(f"{where} tag {t.key!r}: no choices")
                first_s = len(strings)
                for c in p.choices:
                    s_idx(c)
                parts.append((PART["choice"], 0, first_s, len(p.choices), 0, 0))
            elif p.kind == "choice_by":
                keys = [x.key for x in context]
                if p.parent not in keys:
                    raise UserError(f"{where} tag {t.key!r}: parent tag {p.parent!r} must come before it")
                pos = keys.index(p.parent)
                parent_choices = context[pos].choices
                if parent_choices is None:
                    raise UserError(f"{where} tag {t.key!r}: parent tag {p.parent!r} is not a plain choice")
                by = dict(p.by)
                missing = [c for c in parent_choices if c not in by]
                if missing:
                    raise UserError(f"{where} tag {t.key!r}: no values for {p.parent}={missing[0]!r}")
                off = len(itable)
                for c in parent_choices:
                    vals = by[c]
                    if not vals:
                        raise UserError(f"{where} tag {t.key!r}: empty values for {p.parent}={c!r}")
                    first_s = len(strings)
                    for v in vals:
                        s_idx(v)
                    itable.extend((first_s, len(vals)))
                parts.append((PART["choice_by"], 0, pos, off, 0, 0))
            else:
                raise UserError(f"{where} tag {t.key!r}: unknown part {p.kind!r}")
        tags.append((key, first, len(parts) - first))

    seen = set()
    for t in schema.entity_tags:
        if t.key in seen:
            raise UserError(f"{name}: tag {t.key!r} declared twice")
        seen.add(t.key)
    for i, t in enumerate(schema.entity_tags):
        add_tag(t, schema.entity_tags[:i], name)

    series_out = []
    fields_out: list[dict] = []
    if not schema.series:
        raise UserError(f"{name}: no measurements")
    names = set()
    for si, se in enumerate(schema.series):
        where = f"{name} measurement {se.name!r}"
        if not se.name or se.name in names:
            raise UserError(f"{where}: empty or repeated measurement name")
        names.add(se.name)
        first_tag = len(tags)
        all_tags = schema.entity_tags + se.tags
        keys = [t.key for t in all_tags]
        if len(set(keys)) != len(keys):
            raise UserError(f"{where}: a tag key is declared twice")
        for i, t in enumerate(se.tags):
            add_tag(t, all_tags[: len(schema.entity_tags) + i], where)
        if not se.fields:
            raise UserError(f"{where}: no fields")
        fnames = [f.name for f in se.fields]
        if len(set(fnames)) != len(fnames):
            raise UserError(f"{where}: a field name is declared twice")
        first_field = len(fields_out)
        for fi, f in enumerate(se.fields):
            fields_out.append(_compile_field(f, fi, fnames, se, all_tags, table, s_idx, where))
        series_out.append((s_idx(se.name), first_field, len(se.fields), first_tag, len(se.tags)))

    stroff = [0]
    for b in strings:
        stroff.append(stroff[-1] + len(b) + 1)
    schema.faults.check(name)
    return Compiled(
        strtab=b"".join(b + b"\x00" for b in strings),
        stroff=stroff,
        parts=parts,
        tags=tags,
        n_entity_tags=len(schema.entity_tags),
        series=series_out,
        fields=fields_out,
        table=table,
        itable=itable,
        faults=schema.faults,
    )


def _compile_field(f: Field, fi: int, fnames: list[str], se: Series, all_tags: tuple[Tag, ...],
                   table: list[float], s_idx, where: str) -> dict:
    w = f"{where} field {f.name!r}"
    if f.evolution not in EVO:
        raise UserError(f"{w}: unknown evolution {f.evolution!r} (one of {', '.join(EVO)})")
    if f.type not in TYPE:
        raise UserError(f"{w}: unknown type {f.type!r} (int or float)")

    def ref(name: str) -> int:
        if name not in fnames:
            raise UserError(f"{w}: no field {name!r} in measurement {se.name!r}")
        if name == f.name:
            raise UserError(f"{w}: refers to itself")
        return fnames.index(name)

    d = dict(name=s_idx(f.name), type=TYPE[f.type], evo=EVO[f.evolution], dist=0, init=0,
             a=0.0, b=0.0, lo=-math.inf, hi=math.inf, ia=0.0, ib=0.0, table_off=0, table_len=0, tag=0,
             scale_by=-1, src1=-1, src2=-1, k0=0.0, k1=0.0, k2=0.0, prob=float(f.prob),
             decimals=-1 if f.decimals is None else int(f.decimals), reset=int(f.reset), hidden=int(f.hidden))
    if not 0.0 <= f.prob <= 1.0:
        raise UserError(f"{w}: probability {f.prob} is not within [0, 1]")
    if f.decimals is not None and not 0 <= f.decimals <= 15:
        raise UserError(f"{w}: decimals must be within 0..15")
    _refuse_nonfinite(f, se, w)
    if f.evolution in DERIVED:
        if f.evolution == "linear":
            if not 1 <= len(f.terms) <= 2:
                raise UserError(f"{w}: a linear field takes one or two terms")
            d["k0"] = float(f.const)
            d["k1"], d["src1"] = float(f.terms[0][0]), ref(f.terms[0][1])
            if len(f.terms) == 2:
                d["k2"], d["src2"] = float(f.terms[1][0]), ref(f.terms[1][1])
        else:
            if not f.ratio:
                raise UserError(f"{w}: a ratio field needs num and den")
            d["k0"], d["src1"], d["src2"] = float(f.scale), ref(f.ratio[0]), ref(f.ratio[1])
        return d
    step = f.step or constant(0.0)
    if step.kind not in DIST:
        raise UserError(f"{w}: unknown distribution {step.kind!r}")
    if step.kind == "normal" and step.b < 0:
        raise UserError(f"{w}: negative standard deviation")
    d.update(dist=DIST[step.kind], a=float(step.a), b=float(step.b), lo=float(f.lo), hi=float(f.hi))
    if f.evolution == "clamped_walk" and not f.lo <= f.hi:
        raise UserError(f"{w}: min {f.lo} is above max {f.hi}")
    if f.scale_by is not None:
        k = ref(f.scale_by)
        if k > fi or se.fields[k].evolution != "constant":
            raise UserError(f"{w}: scale_by must name an earlier constant field")
        d["scale_by"] = k
    init = f.init
    if init.kind not in INIT:
        raise UserError(f"{w}: unknown initial value kind {init.kind!r}")
    d.update(init=INIT[init.kind], ia=float(init.a), ib=float(init.b))
    if init.kind == "choice":
        if not init.values:
            raise UserError(f"{w}: no values to choose from")
        d["table_off"], d["table_len"] = len(table), len(init.values)
        table.extend(float(v) for v in init.values)
    elif init.kind == "by_tag":
        keys = [t.key for t in all_tags]
        if init.tag not in keys:
            raise UserError(f"{w}: no tag {init.tag!r} in measurement {se.name!r}")
        pos = keys.index(init.tag)
        choices = all_tags[pos].choices
        if choices is None:
            raise UserError(f"{w}: tag {init.tag!r} is not a plain choice")
        mapping = dict(init.by_tag)
        missing = [c for c in choices if c not in mapping]
        if missing:
            raise UserError(f"{w}: no value for {init.tag}={missing[0]!r}")
        d["tag"], d["table_off"], d["table_len"] = pos, len(table), len(choices)
        table.extend(float(mapping[c]) for c in choices)
    return d


def _refuse_nonfinite(f: Field, se: Series, w: str) -> None:
    """Refuse a field sure to write +/-Inf or NaN: a number that is not finite, or a
    ratio over a constant that is 0 (for some entity). What depends on the draws (a
    walk that overflows, a denominator that reaches 0) the generator stops at."""
    nums = [f.const, f.scale, *(c for c, _ in f.terms), f.init.a, f.init.b, *f.init.values,
            *(v for _, v in f.init.by_tag)] + ([f.step.a, f.step.b] if f.step else [])
    bad = next((x for x in nums if not math.isfinite(x)), None)
    if bad is not None or math.isnan(f.lo) or math.isnan(f.hi):
        raise UserError(f"{w}: {bad if bad is not None else math.nan} is not a finite number")
    den = next((x for x in se.fields if f.ratio and x.name == f.ratio[1]), None)
    if f.evolution == "ratio" and den is not None and den.evolution == "constant" and 0.0 in _constants(den):
        raise UserError(f"{w}: its denominator {den.name!r} is a constant 0 (for some entities): "
                        f"every value would be +/-Inf or NaN")


def _constants(f: Field) -> set[float]:
    """The written values a constant field can take (the raw ones when scaled by another field)."""
    i = f.init
    raw = {"const": [i.a], "choice": list(i.values), "by_tag": [v for _, v in i.by_tag]}.get(i.kind)
    if raw is None:                       # uniform or draw: decided by the draws, checked as they are written
        return set()
    return set(raw) if f.scale_by is not None else {_written(f, v) for v in raw}


def _written(f: Field, v: float) -> float:
    """v as the simulator writes it: truncated to decimals, then to an integer for type int."""
    if f.decimals is not None:
        v = math.trunc(v * 10 ** f.decimals) / 10 ** f.decimals
    return float(math.trunc(v)) if f.type == "int" else v
