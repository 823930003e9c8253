"""Target registry (phases 2-5): name -> Target class. Built-in targets are
listed here, one line each; third parties register more through the Python
entry point group `tsbench.targets` (name = "pkg.module:Class")."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from ..errors import UserError
from .base import Target

BUILTIN = {
    "null": "tsbench.targets.null:NullTarget",
    "null-http": "tsbench.targets.null:NullHttpTarget",
    "influx": "tsbench.targets.influx:InfluxTarget",
    "postgres": "tsbench.targets.postgres:PostgresTarget",
    "victoriametrics": "tsbench.targets.victoriametrics:VictoriaMetricsTarget",
    "duckdb": "tsbench.targets.duckdb:DuckDBTarget",
}

ENTRY_POINT_GROUP = "tsbench.targets"


def _load(ref: str) -> type[Target]:
    mod, _, cls = ref.partition(":")
    return getattr(importlib.import_module(mod), cls)


def names() -> list[str]:
    extra = [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN]
    return list(BUILTIN) + sorted(extra)


def get(name: str) -> type[Target]:
    if name in BUILTIN:
        return _load(BUILTIN[name])
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, Target)):
                raise UserError(f"target {name!r}: entry point {ep.value} is not a tsbench Target class")
            return cls
    raise UserError(f"--target: unknown target {name!r} (one of {', '.join(names())})")
