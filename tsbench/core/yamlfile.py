"""YAML files tsbench reads (experiments, schemas): safe loading that refuses a
duplicate key (YAML would keep the last silently) as one UserError naming the
file and line, and aliases that expand the document far beyond what it writes (a
"billion laughs": nested aliases, each of ten of the one before, to 10**9 values)."""

from __future__ import annotations

import pathlib
from typing import Any

import yaml

from tsbench.core.errors import UserError, yaml_error


class _Duplicate(Exception):
    def __init__(self, key, line: int, first: int):
        super().__init__(key)
        self.key, self.line, self.first = key, line, first


class _Loader(yaml.SafeLoader):
    """SafeLoader refusing a key given twice in one mapping (merge keys `<<` aside)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for k, _ in node.value:
            if k.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(k, deep=True)
            try:
                if key in seen:
                    raise _Duplicate(key, k.start_mark.line + 1, seen[key])
                seen[key] = k.start_mark.line + 1
            except TypeError:            # an unhashable key: SafeLoader reports it
                continue
        return super().construct_mapping(node, deep)


ALIAS_VALUES = 10_000     # values aliases may add to a document beyond those it writes out


def _expansion(root: yaml.Node) -> tuple[int, int]:
    """(values with every alias expanded, distinct values written): counted over the node
    graph once per node, so a billion laughs is counted in microseconds. A node that holds
    itself counts as unbounded."""
    sizes: dict[int, int] = {}
    busy = object()

    def size(node) -> int:
        known = sizes.get(id(node))
        if known is busy:
            return ALIAS_VALUES << 20       # a recursive alias: no end to its expansion
        if known is not None:
            return known
        sizes[id(node)] = busy
        children = node.value if isinstance(node, yaml.SequenceNode) else \
            [n for kv in node.value for n in kv] if isinstance(node, yaml.MappingNode) else []
        sizes[id(node)] = n = 1 + sum(size(c) for c in children)
        return n

    return size(root), len(sizes)


def _check_aliases(root: yaml.Node, path) -> None:
    expanded, written = _expansion(root)
    if expanded - written > ALIAS_VALUES:
        raise UserError(f"{path}: its aliases (*name) expand it to more than {ALIAS_VALUES:,} values beyond the "
                        f"{written:,} it writes out (nested aliases, a \"billion laughs\"?): write the values out")


def parse(text: str, path: str | pathlib.Path) -> tuple[Any, yaml.Node | None]:
    """The data and the node tree (for line numbers) of a YAML text; bad YAML or a
    duplicate key is one UserError `PATH:LINE: ...`."""
    try:
        loader = _Loader(text)          # it refuses a control character already
    except yaml.YAMLError as exc:
        raise yaml_error(path, exc) from None
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_aliases(node, path)
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.YAMLError as exc:
        raise yaml_error(path, exc) from None
    except _Duplicate as d:
        raise UserError(f"{path}:{d.line}: duplicate key {d.key!r} (first at line {d.first}; "
                        f"YAML would keep only the last)") from None
    finally:
        loader.dispose()


def load(path: str | pathlib.Path) -> Any:
    """The data of a YAML file (see parse); a missing file is the caller's FileNotFoundError."""
    return parse(pathlib.Path(path).read_text(), path)[0]
