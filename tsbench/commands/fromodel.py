"""A phase's model as a command's click options (all phases): each field of the model
(core/options.py) becomes one option named --field-name (or its Cli name), with its
short flag, its help (the field's description), its default, and a click type carrying
the field's bounds (shown in --help: 1<=x<=1024) or its choices (a Literal)."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

import click
from pydantic import BaseModel

from tsbench.commands.common import writable
from tsbench.core.options import UNSET, cli_of, default_of


class Finite(click.FloatRange):
    """A FloatRange that also refuses nan and inf."""

    def convert(self, value, param, ctx):
        import math

        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return v


def options_of(model: type[BaseModel], skip: tuple[str, ...] = ()):
    """A decorator adding the model's command-line fields (but those skipped) as click
    options, in the model's order."""
    def add(f):
        for decls, kw in reversed([option_of(model, n) for n in model.model_fields
                                   if cli_of(model, n).command and n not in skip]):
            f = click.option(*decls, **kw)(f)
        return f
    return add


def option_of(model: type[BaseModel], name: str) -> tuple[list[str], dict]:
    """A field's click option: its declarations and keywords."""
    field, cli = model.model_fields[name], cli_of(model, name)
    default = default_of(model, name) if cli.default is UNSET else cli.default
    if cli.flag:
        return [cli.flag, name], dict(is_flag=True, flag_value=not default, default=default, help=field.description)
    decls = [cli.name or "--" + name.replace("_", "-"), *([cli.short] if cli.short else []), name]
    if cli.multiple:
        return decls, dict(multiple=True, metavar=cli.metavar, help=field.description)
    kind = click.IntRange(*cli.bounds) if cli.bounds else _type(field.annotation, field.metadata)
    if kind is bool:
        return decls, dict(is_flag=True, default=default, help=field.description)
    return decls, dict(type=kind, default=default, metavar=cli.metavar, help=field.description,
                       show_default=default is not None,
                       callback=writable if cli.output else None)


def bound(metadata: list, kind: str) -> Any:
    """A field's bound of a kind (ge, gt, le, lt: pydantic's metadata of Field(ge=...)), else None."""
    return next((getattr(m, kind) for m in metadata if hasattr(m, kind)), None)


def _type(annotation: Any, metadata: list) -> Any:
    """The click type of a field: a range from its bounds, a choice from its Literal."""
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in args if a is not type(None))
        args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Literal:
        return click.Choice(list(args))
    lo, above, hi, below = (bound(metadata, k) for k in ("ge", "gt", "le", "lt"))
    if annotation is int:
        lo = above + 1 if above is not None else lo
        hi = below - 1 if below is not None else hi
        return click.IntRange(lo, hi) if lo is not None or hi is not None else int
    if annotation is float:
        return Finite(min=lo if above is None else above, max=hi, min_open=above is not None)
    return annotation if annotation is bool else None
