"""Query specs read from a queries file (phase 3, read in phases 4-5): every
field of a drawn query parsed into typed, bounded values before anything is
rendered. A queries file is code a user can edit, so nothing of it reaches a
query text unchecked: names are identifiers (letters, digits, _), tag values
a plain alphabet, numbers of their type and range, the aggregate, operator and
order one of a few words; a spec that does not parse is refused in one line
naming the file and line. Renderers then spell names and literals with their
dialect's quoting functions only (queries/base.q and lit for SQL, ...).

The models follow the shapes (queries/shapes.py): aggregate, rows, last, and
custom (the iot types, whose parameters each type lists in `params`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from tsbench.queries.catalog import CATALOG, CUSTOM

INT64 = 2**63 - 1
IDENT = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"             # measurement, field and tag names
TYPE_NAME = r"^[a-z0-9-]{1,64}$"                     # a query type's name
TAG_VALUE = r"^[A-Za-z0-9_.:/+@ -]{1,128}$"          # tag values (host_0, us-west-1, F-150, Ubuntu16.10)
MAX_WIDTH = 100 * 366 * 86_400 * 10**9               # a time bucket: at most a century
MAX_LIMIT = 1_000_000                                # rows a LIMIT may ask for
MAX_LIST = 4096                                      # names or tag values in one list

Ident = Annotated[str, StringConstraints(pattern=IDENT)]
TagValue = Annotated[str, StringConstraints(pattern=TAG_VALUE)]
Time = Annotated[int, Field(ge=-INT64 - 1, le=INT64)]       # epoch ns, an int64
Width = Annotated[int, Field(ge=1, le=MAX_WIDTH)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]
Real = Annotated[float, Field(allow_inf_nan=False)]
Names = Annotated[list[Ident], Field(max_length=MAX_LIST)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, defer_build=True)


class ValueFilter(_Model):
    field: Ident
    op: Literal[">", ">=", "<", "<=", "="]
    value: Real


class _Fields(_Model):
    measurement: Ident
    fields: Annotated[list[Ident], Field(min_length=1, max_length=MAX_LIST)]
    types: list[Literal["float", "int"]]

    @model_validator(mode="after")
    def _one_type_a_field(self):
        if len(self.types) != len(self.fields):
            raise ValueError(f"{len(self.types)} types for {len(self.fields)} fields")
        return self


def _window(m):
    if m.start is not None and m.end is not None and m.end < m.start:
        raise ValueError(f"end {m.end} is before start {m.start}")
    return m


class _Filtered(_Fields):
    """The rows of a measurement in [start, end), optionally of some tag values and
    passing a value filter."""

    start: Time
    end: Time
    tag: Ident | None
    tag_values: Annotated[list[TagValue | None], Field(max_length=MAX_LIST)] | None    # None: a null tag
    value_filter: ValueFilter | None = None

    @model_validator(mode="after")
    def _filter(self):
        if self.tag_values is not None and self.tag is None:
            raise ValueError("tag_values without a tag")
        return _window(self)


class Aggregate(_Filtered):
    shape: Literal["aggregate"]
    agg: Literal["max", "min", "mean", "sum", "count"]
    bucket: Width | None
    group_by: Names
    order: Literal["desc"] | None = None
    limit: Limit | None = None


class Rows(_Filtered):
    shape: Literal["rows"]
    tags_out: Names | None
    limit: Limit | None = None


class Last(_Fields):
    shape: Literal["last"]
    group_by: Annotated[list[Ident], Field(min_length=1, max_length=MAX_LIST)]


class Custom(_Model):
    """An iot type's parameters: the ones its type lists (CUSTOM[type].params), each
    required, no other."""

    shape: Literal["custom"]
    type: Annotated[str, StringConstraints(pattern=TYPE_NAME)]
    fleet: TagValue | None = None
    names: Annotated[list[TagValue], Field(min_length=1, max_length=MAX_LIST)] | None = None
    start: Time | None = None
    end: Time | None = None
    fuel_below: Real | None = None
    load_above: Real | None = None
    velocity_below: Real | None = None
    velocity_above: Real | None = None
    status_below: Real | None = None
    min_periods: Annotated[int, Field(ge=0, le=MAX_LIMIT)] | None = None

    @model_validator(mode="after")
    def _its_own(self):
        if self.type not in CUSTOM:
            raise ValueError(f"no custom type {self.type}")
        wanted = set(CUSTOM[self.type].params)
        given = self.model_fields_set - {"shape", "type"}
        if given - wanted:
            raise ValueError(f"{self.type} takes no {sorted(given - wanted)[0]}")
        if wanted - given:
            raise ValueError(f"{self.type} needs {sorted(wanted - given)[0]}")
        return _window(self)


MODELS = {"aggregate": Aggregate, "rows": Rows, "last": Last, "custom": Custom}


class Spec(_Model):
    id: Annotated[int, Field(ge=0, le=INT64)]
    type: Annotated[str, StringConstraints(pattern=TYPE_NAME)]
    params: dict


class SpecError(ValueError):
    """A spec that does not parse, in one line."""


def parse(d) -> tuple[int, str, dict]:
    """(id, type, params) of a spec as read from a queries file, every field checked;
    SpecError with what is wrong. params keep the keys given, with typed values."""
    s = _validate(Spec, d, "")
    qt = CATALOG.get(s.type)
    if qt is None:
        raise SpecError(f"unknown query type {_show(s.type)}: no target runs it (see: python -m tsbench queries list)")
    shape = s.params.get("shape")
    model = MODELS.get(shape) if isinstance(shape, str) else None
    if model is None:
        raise SpecError(f"query type {s.type}: unknown shape {_show(shape)} (one of: {', '.join(MODELS)})")
    p = _validate(model, s.params, "params.")
    drawn = p.type if shape == "custom" else shape
    if shape == "custom" and p.type != s.type:
        raise SpecError(f"query type {s.type}: params.type is {p.type}")
    if drawn != qt.shape:
        raise SpecError(f"query type {s.type} is drawn in the {qt.shape} shape, not {drawn}")
    return s.id, s.type, p.model_dump(exclude_unset=True)


def _validate(model, d, prefix: str):
    try:
        return model.model_validate(d)
    except ValidationError as exc:
        e = exc.errors(include_url=False)[0]
        where = (prefix + ".".join(str(x) for x in e["loc"])).rstrip(".")
        raise SpecError(f"{where or 'spec'}: {e['msg']} (got {_show(e.get('input'))})") from None


def _show(v) -> str:
    """A value for a one-line message: ASCII, no line break, cut at 40 characters."""
    s = ascii(v)
    return s if len(s) <= 40 else s[:37] + "..."
