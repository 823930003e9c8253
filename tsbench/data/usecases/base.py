"""The use-case protocol (phase 1): a use case turns its parameters, a scale and
a time range into a Schema declaration for the C simulator."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from tsbench.core.errors import UserError
from tsbench.data.schema import FAULT_SETTINGS, Schema

if TYPE_CHECKING:      # pydantic is imported where a use case has parameters: devops starts without it
    from pydantic import BaseModel, ValidationError


def fault_model(name: str, defaults: str) -> type[BaseModel]:
    """A pydantic model of the fault settings (FAULT_SETTINGS: types, ranges,
    docs) with their `defaults` ("default" or "iot"); unknown keys are errors."""
    from pydantic import ConfigDict, Field, create_model

    fields = {s.name: (s.type, Field(getattr(s, defaults), ge=s.lo, le=s.hi, description=s.doc))
              for s in FAULT_SETTINGS}
    return create_model(name, __config__=ConfigDict(extra="forbid", defer_build=True), **fields)


class UseCase:
    """Subclasses set `name`, optionally `Params` (a pydantic model of the
    --param KEY=VALUE options) and implement `schema()`."""

    name: ClassVar[str]
    Params: ClassVar[type[BaseModel] | None] = None      # None: no --param at all
    default_scale: ClassVar[int] = 1

    def __init__(self, params: dict | None = None):
        self.params = self._checked(params or {})
        self.interval_ns = 10_000_000_000

    def _checked(self, params: dict) -> BaseModel | None:
        """The --param options through the use case's Params model; one line on an error."""
        if self.Params is None:
            if params:
                raise UserError(f"--param {next(iter(params))}: use case {self.name} has no such parameter")
            return None
        from pydantic import ValidationError

        try:
            return self.Params(**params)
        except ValidationError as exc:
            raise UserError(_param_error(self.name, exc)) from None

    def entities(self, scale: int | None) -> int:
        """How many entities (hosts, trucks, series) a scale means."""
        n = self.default_scale if scale is None else scale
        if n < 1:
            raise UserError(f"--scale: must be a positive number of entities, got {n}")
        return n

    def time_range(self, start_ns: int, end_ns: int | None, interval_ns: int | None) -> tuple[int, int, int]:
        """(start_ns, interval_ns, epochs) of the run; the default is one day every 10 s."""
        interval = interval_ns or 10_000_000_000
        end = end_ns if end_ns is not None else start_ns + 86_400_000_000_000
        if end < start_ns:
            raise UserError("--end: the end is before the start")
        return start_ns, interval, -(-(end - start_ns) // interval)

    def schema(self) -> Schema:
        raise NotImplementedError


def _param_error(name: str, exc: ValidationError) -> str:
    e = exc.errors()[0]
    key = ".".join(str(x) for x in e["loc"]) or "?"
    if e["type"] == "extra_forbidden":
        return f"--param {key}: use case {name} has no such parameter"
    return f"--param {key}: {e['msg']}"
