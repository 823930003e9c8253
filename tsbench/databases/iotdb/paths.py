"""IoTDB tree-model paths of tsbench's records (phases 2-5): where target.py writes a row
and where the dialect (tree.py) finds it.

A measurement m of database db is the subtree root.<db>.`m`; below it, one level per
tag in the table's tag order, then the device's aligned timeseries, one per field:

    root.tsbench.`cpu`.`hostname=host_3`.`region=eu-west-1`. ... .`usage_user`

A tag level's node is `key=value`, or `key` alone for a null tag: a present value always
has the `=`, so a null is never taken for a value (an empty tag is null in both data
formats). So a tag sits at a fixed level (3 + its index), which tag filters (a node at
that level) and GROUP BY LEVEL rely on. Every node is written in backquotes (a backquote
in a name doubled), so any character of a tag value is kept. (Also here, as both the
target and the server's readiness check open sessions: quiet_client_logs().)"""

from __future__ import annotations

import logging
import re

from tsbench.core.errors import UserError

FIRST_TAG_LEVEL = 3          # root . db . measurement . tags...
DB_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def node(name: str) -> str:
    """A path node in backquotes."""
    return "`" + name.replace("`", "``") + "`"


def tag_node(key: str, value: str | None) -> str:
    return node(key if value is None else f"{key}={value}")


def database_path(db: str) -> str:
    if not DB_RE.match(db):
        raise UserError(f"target iotdb: database {db!r}: letters, digits and _ only, not starting with a digit")
    return f"root.{db}"


def measurement_path(db: str, measurement: str) -> str:
    return f"{database_path(db)}.{node(measurement)}"


def device_path(db: str, measurement: str, tags: tuple[str, ...], values) -> str:
    return ".".join([measurement_path(db, measurement), *(tag_node(k, v) for k, v in zip(tags, values))])


def split(path: str) -> list[str]:
    """The nodes of a path as IoTDB prints it (backquoted nodes unquoted)."""
    out, i, n = [], 0, len(path)
    while i < n:
        if path[i] == "`":
            j, buf = i + 1, []
            while j < n:
                if path[j] == "`":
                    if j + 1 < n and path[j + 1] == "`":
                        buf.append("`")
                        j += 2
                        continue
                    break
                buf.append(path[j])
                j += 1
            out.append("".join(buf))
            i = j + 2                     # past the closing quote and the dot
        else:
            j = path.find(".", i)
            j = n if j < 0 else j
            out.append(path[i:j])
            i = j + 1
    return out


def tag_value(key: str, name: str) -> str | None:
    """The tag value of a tag level's node (None: a null tag)."""
    if name == key:
        return None
    if not name.startswith(key + "="):
        raise ValueError(f"node {name!r} is not a node of tag {key!r}")
    return name[len(key) + 1:]


def quiet_client_logs() -> None:
    """The client (apache-iotdb) and thrift log each failure on stderr too (logging's last
    resort); tsbench reports it once, as its own one line."""
    for name in ("thrift", "IoTDB"):
        log = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
            log.addHandler(logging.NullHandler())
