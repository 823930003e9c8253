"""The C core's build id: a hash of every C source and header. The build
(_ffi_build.py) compiles it into the core; importing tsbench.data.native compares
it with the sources, so a stale compiled core is caught. No cffi here: the
check runs at every start of a command."""

import hashlib
import pathlib


def source_hash(csrc: pathlib.Path) -> str:
    """sha256 over the C sources and headers, in a fixed order (first 16 hex digits)."""
    h = hashlib.sha256()
    for p in sorted(list(csrc.glob("*.c")) + list(csrc.glob("*.h"))):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]
