"""The database registry (phases 2-5): one line per database package.

A package `tsbench/databases/<name>/` says in its `__init__.py` which targets
and servers it holds, as "module:Class" references relative to the package
(TARGETS, SERVERS); the classes are imported only when asked for. Third
parties add targets and servers through the entry point groups
`tsbench.targets` and `tsbench.servers` (name = "pkg.module:Class").

Nothing outside a database's package imports it: everything else finds a
database here, by name."""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points

from tsbench.core.errors import UserError
from tsbench.databases.shared.server import Server
from tsbench.databases.shared.target import Target

PACKAGES = (
    "null",
    "influx",
    "postgres",
    "victoriametrics",
    "duckdb",
    "cassandra",
    "elasticsearch",
    "mongodb",
    "opentsdb",
    "questdb",
    "clickhouse",
    "iotdb",
    "prometheus",
    "remotewrite",
)

TARGET_GROUP = "tsbench.targets"
SERVER_GROUP = "tsbench.servers"


@cache
def _declared(attr: str) -> dict[str, str]:
    """name -> "tsbench.databases.<pkg>.<module>:Class" over every package's TARGETS or SERVERS."""
    out: dict[str, str] = {}
    for pkg in PACKAGES:
        mod = importlib.import_module(f"{__name__}.{pkg}")
        for name, ref in getattr(mod, attr, {}).items():
            out[name] = f"{mod.__name__}.{ref}"
    return out


def _load(ref: str):
    mod, _, cls = ref.partition(":")
    return getattr(importlib.import_module(mod), cls)


def _plugins(group: str, builtin: dict[str, str]) -> list:
    return [ep for ep in entry_points(group=group) if ep.name not in builtin]


def _names(attr: str, group: str) -> list[str]:
    builtin = _declared(attr)
    return list(builtin) + sorted(ep.name for ep in _plugins(group, builtin))


def names() -> list[str]:
    """Every target name: the built-in ones in registry order, then plugins'."""
    return _names("TARGETS", TARGET_GROUP)


def server_names() -> list[str]:
    return _names("SERVERS", SERVER_GROUP)


def _find(attr: str, group: str, base: type, what: str, name: str):
    builtin = _declared(attr)
    if name in builtin:
        return _load(builtin[name])
    for ep in _plugins(group, builtin):
        if ep.name == name:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, base)):
                raise UserError(f"{what} {name!r}: entry point {ep.value} is not a tsbench {base.__name__} class")
            return cls
    return None


def target_class(name: str) -> type[Target]:
    cls = _find("TARGETS", TARGET_GROUP, Target, "target", name)
    if cls is None:
        raise UserError(f"--target: unknown target {name!r} (one of {', '.join(names())})")
    return cls


def is_local(server: str) -> bool:
    """Whether a --server value asks for a local instance: "local" or "local:<server kind>"."""
    return server == "local" or server.startswith("local:")


def local_kind(cls: type[Target], server: str) -> str | None:
    """The server kind a local instance of target cls runs: "local" gives the target's
    default (None for an in-process database), "local:<kind>" one of the kinds it names."""
    if server == "local":
        return cls.server_kind
    kind = server.partition(":")[2]
    kinds = (cls.server_kind, *cls.other_server_kinds) if cls.server_kind else ()
    if kind not in kinds:
        offer = f"one of {', '.join('local:' + k for k in kinds)}" if kinds else "it runs in-process: use local"
        raise UserError(f"--server {server}: target {cls.name} has no local server {kind!r} ({offer})")
    return kind


def server_class(kind: str) -> type[Server]:
    cls = _find("SERVERS", SERVER_GROUP, Server, "server", kind)
    if cls is None:
        raise UserError(f"unknown server {kind!r} (one of {', '.join(server_names())})")
    return cls
