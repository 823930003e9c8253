"""cffi builder of tsbench.data._native, the C core (used by setup.py's cffi_modules).

The cdef is the marked part of csrc/tsbench.h, so the header stays the one
description of the C API. The build id is a hash of every C source, so an
out-of-date compiled module can be detected at import (see tsbench.data.native).
"""

import importlib.util
import pathlib

from cffi import FFI

ROOT = pathlib.Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
SOURCES = ["sim.c", "formats.c", "fmt_double.c", "cut.c", "render.c", "bson_groups.c", "lp_scan.c", "series_group.c", "remote_write.c", "otlp.c"]


def source_hash(csrc: pathlib.Path = CSRC) -> str:
    """The build id (tsbench/core/buildid.py, loaded by path: setup.py runs this file outside the package)."""
    spec = importlib.util.spec_from_file_location("_tsbench_buildid", ROOT / "tsbench" / "core" / "buildid.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.source_hash(csrc)


def cdef_text(header: pathlib.Path = CSRC / "tsbench.h") -> str:
    text = header.read_text()
    start = text.index("/* CDEF BEGIN */") + len("/* CDEF BEGIN */")
    end = text.index("/* CDEF END */")
    return text[start:end]


ffibuilder = FFI()
ffibuilder.cdef(cdef_text())
ffibuilder.set_source(
    "tsbench.data._native",
    '#include "tsbench.h"\n',
    sources=[str((CSRC / s).relative_to(ROOT)) for s in SOURCES],
    include_dirs=[str(CSRC.relative_to(ROOT))],
    depends=sorted(str(h.relative_to(ROOT)) for h in CSRC.glob("*.h")),   # a header change rebuilds
    define_macros=[("TS_BUILD_ID", f'"{source_hash()}"')],
    extra_compile_args=["-O2", "-std=c11", "-fno-math-errno", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
