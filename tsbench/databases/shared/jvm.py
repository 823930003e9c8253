"""Servers that run on the JVM (phase 2 onwards): Java and Maven found or
installed, a server's jars resolved from Maven Central, and its command line.

    maven_lib(name, version, ["group:artifact:version"], what)
        -> $TSBENCH_HOME/lib/<name>-<version>/*.jar (the artifacts and their runtime
           dependencies; a generated pom and `mvn dependency:copy-dependencies`, in a
           temporary dir renamed into place when whole; Maven's own repository cache
           (~/.m2) makes a second resolve quick)

A JvmServer subclass names its artifacts and main class (a class, or a
single-file Java launcher run from source) and gives its system properties and
arguments; this module adds the heap (server option `heap`, default sized to
the machine), the GC log in the instance dir and `-cp lib/*` (or, for a server
run as a JPMS module, `module`: `-p lib -m module/main.Class`). Java 17 and Maven
come from Debian (`openjdk-17-jdk-headless`, `maven`): installed by tsbench
when it runs as root, else one line saying what to install."""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
from typing import ClassVar
from xml.sax.saxutils import escape

from tsbench.core.errors import ServerError, UserError
from tsbench.databases.shared.install import apt_install
from tsbench.databases.shared.server import Server, home, run_logged, say

JAVA_PACKAGE = "openjdk-17-jdk-headless"
MAVEN_PACKAGE = "maven"
JAVA_MIN = 17
COPY_DEPS = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies"
HEAP_RE = re.compile(r"\d+[mMgG]")
HEAP_CAP_MB = 1024        # the default heap: an eighth of the machine's memory, 256 MiB to 1 GiB


def _missing(tool: str, what: str) -> ServerError:
    return ServerError(f"{what}: {tool} is not installed (as root: apt-get install {JAVA_PACKAGE} {MAVEN_PACKAGE})")


def _tool(exe: str, package: str, what: str) -> pathlib.Path:
    found = shutil.which(exe)
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        apt_install(package, what, home() / "logs" / f"install-{package}.log")
        found = shutil.which(exe)
    if found is None:
        raise _missing(f"{'Java' if exe == 'java' else 'Maven'} (`{exe}`)", what)
    return pathlib.Path(found)


def java_version(java: pathlib.Path) -> int:
    """The feature release of a java executable (17 for "17.0.15"); 0 if it cannot tell."""
    try:
        p = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    m = re.search(r'version "(\d+)(?:\.(\d+))?', p.stderr + p.stdout)
    if not m:
        return 0
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major     # "1.8.0" is Java 8


def java_home_ok(what: str) -> pathlib.Path:
    """The `java` executable, Java 17 or later (installed through apt as root when missing)."""
    java = _tool("java", JAVA_PACKAGE, what)
    v = java_version(java)
    if v < JAVA_MIN:
        raise ServerError(f"{what}: {java} is Java {v or '(unknown version)'}; Java {JAVA_MIN}+ is needed "
                          f"(apt-get install {JAVA_PACKAGE}, or put it first on PATH)")
    return java


def lib_dir(name: str, version: str) -> pathlib.Path | None:
    """The resolved jars of name-version, if present and whole (the dir appears only when complete)."""
    d = home() / "lib" / f"{name}-{version}"
    return d if d.is_dir() and any(d.glob("*.jar")) else None


def pom(artifacts: list[str]) -> str:
    """A pom that depends on the artifacts ("group:artifact:version[:classifier]")."""
    deps = []
    for a in artifacts:
        parts = a.split(":")
        if len(parts) not in (3, 4):
            raise ValueError(f"a Maven artifact is group:artifact:version[:classifier], not {a!r}")
        cls = f"<classifier>{escape(parts[3])}</classifier>" if len(parts) == 4 else ""
        deps.append(f"<dependency><groupId>{escape(parts[0])}</groupId><artifactId>{escape(parts[1])}</artifactId>"
                    f"<version>{escape(parts[2])}</version>{cls}</dependency>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            "<groupId>tsbench</groupId><artifactId>server-lib</artifactId><version>1</version>"
            "<packaging>pom</packaging><dependencies>" + "".join(deps) + "</dependencies></project>\n")


def maven_lib(name: str, version: str, artifacts: list[str], what: str) -> pathlib.Path:
    """Resolve the artifacts and their runtime dependencies into $TSBENCH_HOME/lib/<name>-<version>/."""
    done = lib_dir(name, version)
    if done is not None:
        return done
    java_home_ok(what)
    mvn = _tool("mvn", MAVEN_PACKAGE, what)
    dest = home() / "lib" / f"{name}-{version}"
    log = home() / "logs" / f"install-{name}-{version}.log"
    dest.parent.mkdir(parents=True, exist_ok=True)
    say(f"resolving {', '.join(artifacts)} from Maven Central (log: {log})")
    with tempfile.TemporaryDirectory(prefix=f".{name}-{version}-", dir=dest.parent) as tmp:
        (pathlib.Path(tmp) / "pom.xml").write_text(pom(artifacts))
        run_logged([str(mvn), "-B", "-q", COPY_DEPS, f"-DoutputDirectory={tmp}/lib", "-DincludeScope=runtime"],
                   f"{what}: resolving {name} {version} with Maven", log, cwd=tmp)
        got = pathlib.Path(tmp) / "lib"
        if not any(got.glob("*.jar")):
            raise ServerError(f"{what}: Maven resolved no jar for {', '.join(artifacts)} (log: {log})")
        if dest.exists():              # a half-made dir of an older tsbench: replaced
            shutil.rmtree(dest)
        os.replace(got, dest)
    return dest


def default_heap(floor_mb: int = 256, cap_mb: int = HEAP_CAP_MB, share: int = 8) -> str:
    """1/share of the machine's memory (an eighth), between floor_mb and cap_mb (256 MiB and 1 GiB)."""
    import psutil

    mb = psutil.virtual_memory().total // (share << 20)
    return f"{max(floor_mb, min(cap_mb, mb))}m"


class JvmServer(Server):
    """A server run by `java`: subclasses set the class data and the hooks below."""

    lib_name: ClassVar[str]
    lib_version: ClassVar[str]
    artifacts: ClassVar[tuple[str, ...]]
    main_class: ClassVar[str]                      # a class name, or the path of a single-file launcher (.java)
    module: ClassVar[str | None] = None            # run as a JPMS module instead: "module/main.Class" (-p lib -m)
    jvm_flags: ClassVar[tuple[str, ...]] = ()      # JPMS flags and the like
    options_allowed: ClassVar[tuple[str, ...]] = ("heap",)
    heap_mb: ClassVar[tuple[int, int, int]] = (256, HEAP_CAP_MB, 8)   # the default heap: floor, cap, 1/share
    ready_timeout = 120.0
    stop_timeout = 60.0

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        allowed = set(self.options_allowed) | {"heap"}
        unknown = set(self.options) - allowed
        if unknown:
            raise UserError(f"server {self.kind}: unknown option {min(unknown)!r} (options: {', '.join(sorted(allowed))})")
        self.heap = str(self.options.get("heap") or default_heap(*self.heap_mb))
        if not HEAP_RE.fullmatch(self.heap):
            raise UserError(f"server {self.kind}: option heap: {self.heap!r} is not a size like 512m or 2g")

    # ---- hooks ----------------------------------------------------------------------------
    def sysprops(self, datadir: pathlib.Path, ports: dict[str, int]) -> dict[str, str]:
        return {}

    def main_args(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return []

    def extra_jvm_flags(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return []

    # ---- install --------------------------------------------------------------------------
    @property
    def lib(self) -> pathlib.Path:
        d = lib_dir(self.lib_name, self.lib_version)
        if d is None:
            raise ServerError(f"{self.kind}: {self.lib_name} {self.lib_version} is not installed "
                              f"(python -m tsbench servers install {self.kind})")
        return d

    def binary(self) -> pathlib.Path | None:
        """What the server runs from: its jars' dir (with a `java` to run them), else None."""
        return lib_dir(self.lib_name, self.lib_version) if shutil.which("java") else None

    def install(self) -> None:
        maven_lib(self.lib_name, self.lib_version, list(self.artifacts), self.kind)

    @classmethod
    def fixed_version(cls) -> str:
        """The server's version, from class data alone (its docs page names it): its library's
        unless the server says otherwise."""
        return cls.lib_version

    def version(self) -> str:
        return self.fixed_version()

    # ---- run ------------------------------------------------------------------------------
    def command(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        java = java_home_ok(self.kind)
        gc = self.dir / "gc.log"
        props = [f"-D{k}={v}" for k, v in self.sysprops(datadir, ports).items()]
        return [str(java), f"-Xms{self.heap}", f"-Xmx{self.heap}", "-XX:+ExitOnOutOfMemoryError",
                f"-Xlog:gc*:file={gc}:time,uptime:filecount=2,filesize=10m",
                *self.jvm_flags, *self.extra_jvm_flags(datadir, ports), *props,
                *(["-p", str(self.lib), "-m", self.module] if self.module else
                  ["-cp", f"{self.lib}/*", self.main_class]),
                *self.main_args(datadir, ports)]
