"""Installing servers from package registries (phase 2 onwards): Debian's apt
and Go module builds, shared by every server module. Each step's output goes
to a log file; a failure raises ServerError with the tool's last words."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import tempfile

from tsbench.core.errors import ServerError
from tsbench.databases.shared.server import run_logged, say


def apt_install(package: str, what: str, log: pathlib.Path) -> None:
    """`apt-get install` one Debian package (root only), updating the lists first if apt does not know it."""
    if os.geteuid() != 0:
        raise ServerError(f"{what}: installing Debian's {package} needs root (apt-get); install it yourself")
    if shutil.which("apt-get") is None:
        raise ServerError(f"{what}: apt-get is not available to install Debian's {package}")
    say(f"installing Debian's {package} with apt-get (log: {log})")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(["apt-cache", "show", package], capture_output=True, check=False).returncode != 0:
        run_logged(["apt-get", "update"], f"{what}: apt-get update", log, env=env)
    run_logged(["apt-get", "install", "-y", "--no-install-recommends", package],
               f"{what}: apt-get install {package}", log, env=env)


def go_build(package: str, version: str, dest: pathlib.Path, what: str, log: pathlib.Path,
             ldflags: str = "", try_install: bool = True) -> pathlib.Path:
    """Build Go package `package` (module path + /cmd/x) at `version` (a tag) into
    the file dest: `go install pkg@version` first, else a throw-away module
    (`go mod init w && go get pkg@version && go build`), for modules whose
    version list the proxy refuses. dest appears only once the build is whole."""
    if shutil.which("go") is None:
        raise ServerError(f"{what}: building {package}@{version} needs Go (`go` is not on PATH)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOSUMDB="off", GO111MODULE="on", GOFLAGS="-buildvcs=false", CGO_ENABLED="0")
    flags = ["-ldflags", ldflags] if ldflags else []
    name = package.rsplit("/", 1)[-1]
    with tempfile.TemporaryDirectory(prefix=f"{name}-build-", dir=dest.parent) as tmp:
        out = pathlib.Path(tmp) / "bin"
        out.mkdir()
        built = out / name
        try:
            if not try_install:
                raise ServerError("go install skipped")
            run_logged(["go", "install", *flags, f"{package}@{version}"], f"{what}: go install", log,
                       env=dict(env, GOBIN=str(out)), cwd=tmp)
        except ServerError:
            if try_install:
                say(f"{what}: go install was refused; building through a throw-away module instead")
            mod = pathlib.Path(tmp) / "w"
            mod.mkdir()
            run_logged(["go", "mod", "init", "w"], f"{what}: go mod init", log, env=env, cwd=str(mod))
            # get the package itself, not just its module, so go.sum covers what it imports
            run_logged(["go", "get", f"{package}@{version}"], f"{what}: go get", log, env=env, cwd=str(mod))
            run_logged(["go", "build", *flags, "-o", str(built), package], f"{what}: go build", log, env=env,
                       cwd=str(mod))
        if not built.is_file():
            raise ServerError(f"{what}: the Go build made no {name} binary (log: {log})")
        os.replace(built, dest)
    return dest


def apt_extract(package: str, dest: pathlib.Path, what: str, log: pathlib.Path) -> str:
    """Fetch one Debian package with `apt-get download` and unpack it (`dpkg-deb -x`) into
    the directory dest, not into the system: no service is installed or started, and no
    root is needed when apt's lists already know the package. dest appears only once
    whole; returns the package's Debian version."""
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise ServerError(f"{what}: apt-get and dpkg-deb are needed to fetch Debian's {package}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    say(f"fetching Debian's {package} with apt-get download into {dest} (log: {log})")
    with tempfile.TemporaryDirectory(prefix=f"{package}-deb-", dir=dest.parent) as tmp:
        run_logged(["apt-get", "download", package], f"{what}: apt-get download {package}", log, cwd=tmp)
        debs = sorted(pathlib.Path(tmp).glob(f"{package}_*.deb"))
        if len(debs) != 1:
            raise ServerError(f"{what}: apt-get download left no single {package} .deb (log: {log})")
        tree = pathlib.Path(tmp) / "tree"
        run_logged(["dpkg-deb", "-x", str(debs[0]), str(tree)], f"{what}: dpkg-deb -x", log)
        p = subprocess.run(["dpkg-deb", "-f", str(debs[0]), "Version"], capture_output=True, text=True, check=False)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tree, dest)
    return p.stdout.strip()
