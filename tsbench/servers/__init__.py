"""Server registry (phases 2-5): the databases tsbench installs and runs
itself, name -> Server class; third parties add more through the entry point
group `tsbench.servers`."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from ..errors import UserError
from .base import Server

BUILTIN = {
    "influx": "tsbench.servers.influx:InfluxServer",
    "postgres": "tsbench.servers.postgres:PostgresServer",
    "victoriametrics": "tsbench.servers.victoriametrics:VictoriaMetricsServer",
    "null-http": "tsbench.servers.nullhttp:NullHttpServer",
}

ENTRY_POINT_GROUP = "tsbench.servers"


def names() -> list[str]:
    extra = [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in BUILTIN]
    return list(BUILTIN) + sorted(extra)


def get(kind: str) -> type[Server]:
    if kind in BUILTIN:
        mod, _, cls = BUILTIN[kind].partition(":")
        return getattr(importlib.import_module(mod), cls)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == kind:
            return ep.load()
    raise UserError(f"unknown server {kind!r} (one of {', '.join(names())})")
