"""The syntax of `--cluster ADDRESS` (load, execute, stream and the experiment file check
it before anything starts): `local:N` (N Dask worker processes here) or `tcp://HOST:PORT`
(a running Dask scheduler). Plain text checks, no Dask; cluster/address.py opens one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

from tsbench.core.bounds import MAX_PROCESSES
from tsbench.core.errors import UserError

_LOCAL = re.compile(r"local:(\d+)")
_TCP = re.compile(r"(tcp|tls)://[^\s/:]+:\d+")


@dataclass(frozen=True)
class Address:
    text: str
    local_workers: int | None       # N of local:N, None for a scheduler's address


def parse(text: str) -> Address:
    """local:N or tcp://host:port, else one line saying what is accepted."""
    m = _LOCAL.fullmatch(text.strip())
    if m:
        n = int(m.group(1))
        if n < 1:
            raise UserError(f"--cluster: local:N needs at least 1 worker, got {text!r}")
        if n > MAX_PROCESSES:
            raise UserError(f"--cluster: local:N starts N worker processes here, at most {MAX_PROCESSES}; got {text!r}")
        return Address(text.strip(), n)
    if _TCP.fullmatch(text.strip()):
        return Address(text.strip(), None)
    raise UserError(f"--cluster: {text!r} is neither local:N (N worker processes here) "
                    "nor a Dask scheduler's address tcp://HOST:PORT")


def _checked(v: str | None) -> str | None:
    """An address in a pydantic model: parse()'s word, without the option's name."""
    if v is not None:
        try:
            parse(v)
        except UserError as exc:
            raise ValueError(str(exc).removeprefix("--cluster: ")) from None
    return v


ClusterAddress = Annotated[str | None, AfterValidator(_checked)]     # a field of a phase's options
