"""One declaration per option (all phases): each phase's options are one pydantic model
(load/options.py, execute/options.py, stream/options.py, ...), the only place an option,
its default, its bounds and its help are written. From a model come the command's click
options (commands/fromodel.py), the experiment file's section (a phase's model is its
section; the command's own model adds the command-line-only fields) and so `tsbench
schema`'s JSON Schema, and the fields of the phase's runtime options dataclass
(options_fields, here). A field's `Cli` metadata says how it looks on the command line."""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tsbench.core import bounds

UNSET: Any = object()


@dataclasses.dataclass(frozen=True)
class Cli:
    """How a model field is given on the command line, and where else it is."""

    short: str | None = None       # a short flag: -w
    name: str | None = None        # the long name when it is not --field-name
    flag: str | None = None        # a bool given as this flag, which sets the opposite of the default (--no-verify)
    metavar: str | None = None
    default: Any = UNSET           # the command line's own default, when it differs from the file's
    command: bool = True           # an option of the command (False: the experiment file's only)
    bounds: tuple | None = None    # (lo, hi) the command line checks at once; the file leaves them to a later check
    multiple: bool = False         # a repeatable option (KEY=VALUE items: the command makes the field's dict)
    output: bool = False           # an output file: checked writable before any work


class PhaseOptions(BaseModel):
    """The base of every phase's model: strict (an unknown key is an error)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Stalls(PhaseOptions):
    """What every phase that waits on a server has: the bound on waiting with nothing answered."""

    stall_timeout: float = Field(120.0, gt=0, le=bounds.MAX_SECONDS,
                                 description="Seconds with nothing answered (a stopped or wedged server) before the "
                                             "phase fails.")


def repeat_field(each: str):
    """A phase's `repeat` (its trials): declared by each phase's model with what one trial is."""
    return Field(1, ge=1, le=bounds.MAX_REPEAT, description=f"Trials, each {each}; the figures are the median over "
                                                            "them (an experiment file's top-level repeat: gives the "
                                                            "default).")


def cli_of(model: type[BaseModel], name: str) -> Cli:
    """A field's Cli metadata (the default one when it has none)."""
    return next((m for m in model.model_fields[name].metadata if isinstance(m, Cli)), Cli())


def default_of(model: type[BaseModel], name: str) -> Any:
    return model.model_fields[name].get_default(call_default_factory=True)


def options_fields(model: type[BaseModel], rename: dict[str, str] | None = None, skip: tuple[str, ...] = ()):
    """A class decorator (under @dataclass): adds the model's fields, with their defaults,
    to a runtime options dataclass (rename: field -> the dataclass's name for it; skip:
    fields it has not; a field the class declares itself is its own: another meaning)."""
    rename = rename or {}

    def add(cls):
        notes = dict(getattr(cls, "__annotations__", {}))
        for n in model.model_fields:
            attr = rename.get(n, n)
            if attr in notes or n in skip:
                continue
            notes[attr] = Any
            default = default_of(model, n)
            setattr(cls, attr, dataclasses.field(default_factory=type(default)) if isinstance(default, (dict, list))
                    else default)
        cls.__annotations__ = notes
        cls.option_names = {n: rename.get(n, n) for n in model.model_fields if n not in skip}
        return cls
    return add


def build(cls, settings: dict, **more):
    """A runtime options dataclass (options_fields) from a model's field values, and more."""
    return cls(**{cls.option_names.get(k, k): v for k, v in settings.items()}, **more)
