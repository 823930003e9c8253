"""InfluxDB 1.x as a local server (phases 2-5): install (Go build of 1.8.10, or
Debian's 1.6.7 from apt), its own config file per instance (127.0.0.1 only,
no reporting, no _internal store, no continuous queries or retention), start
with `influxd run -config`, ready when GET /ping answers 204.

Options: version "1.8.10" (default; built with Go, apt if Go is absent) or
"apt"; flux (bool) turns on `[http] flux-enabled` (1.8 only)."""

from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

from tsbench.core.errors import UserError
from tsbench.databases.shared.install import apt_install, go_build
from tsbench.databases.shared.server import Server, bool_option, home, http_ok, say

GO_VERSION = "1.8.10"
MODULE = "github.com/influxdata/influxdb"
APT_BINARY = pathlib.Path("/usr/bin/influxd")
VERSIONS = (GO_VERSION, "apt")


def _go_dir() -> pathlib.Path:
    return home() / "bin" / f"influx-{GO_VERSION}"


class InfluxServer(Server):
    kind = "influx"
    port_names = ("http", "rpc")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        unknown = set(self.options) - {"version", "flux"}
        if unknown:
            raise UserError(f"server influx: unknown option {min(unknown)!r} (options: flux, version)")
        self.want = str(self.options.get("version", GO_VERSION))
        if self.want not in VERSIONS:
            raise UserError(f"server influx: option version: {self.want!r} is not one of {', '.join(VERSIONS)}")
        self.flux = bool_option("influx", "flux", self.options.get("flux", False))
        self._version: str | None = None

    # ---- install ------------------------------------------------------------------------
    def binary(self) -> pathlib.Path | None:
        if self.want == GO_VERSION:
            b = _go_dir() / "influxd"
            if b.is_file():
                return b
            if shutil.which("go") is not None:
                return None                      # Go is here: build it rather than take apt's
        return APT_BINARY if APT_BINARY.is_file() else None

    def install(self) -> None:
        if self.want == GO_VERSION and shutil.which("go") is not None:
            self._install_go()
        else:
            if self.want == GO_VERSION:
                say(f"influx: Go is not installed, so InfluxDB {GO_VERSION} cannot be built; "
                    f"installing Debian's influxdb (1.6.x) with apt instead")
            self._install_apt()

    def _install_go(self) -> None:
        log = home() / "bin" / f"influx-{GO_VERSION}.install.log"
        say(f"installing InfluxDB {GO_VERSION}: building {MODULE}/cmd/influxd with Go "
            f"(about a minute; log: {log})")
        dest = go_build(f"{MODULE}/cmd/influxd", f"v{GO_VERSION}", _go_dir() / "influxd", "influx", log,
                        ldflags=f"-X main.version={GO_VERSION}")
        say(f"installed InfluxDB {GO_VERSION} at {dest}")

    def _install_apt(self) -> None:
        apt_install("influxdb", "influx", home() / "bin" / "influx-apt.install.log")

    def version(self) -> str:
        if self._version is None:
            b = self.binary()
            if b is None:
                return ""
            p = subprocess.run([str(b), "version"], capture_output=True, text=True, timeout=30, check=False)
            m = re.search(r"v(\d[^\s,]*)", p.stdout + p.stderr)
            self._version = m.group(1) if m else (p.stdout.strip() or "unknown")
        return self._version

    # ---- run ----------------------------------------------------------------------------
    @property
    def config_file(self) -> pathlib.Path:
        return self.dir / "influxdb.conf"

    def prepare(self, datadir: pathlib.Path, ports: dict[str, int]) -> None:
        apt = self.binary() == APT_BINARY
        if self.flux and apt:
            raise UserError("server influx: option flux needs InfluxDB 1.8 (version: 1.8.10), not apt's 1.6")
        flux = f"  flux-enabled = {'true' if self.flux else 'false'}\n" if not apt else ""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(CONFIG.format(
            rpc=ports["rpc"], http=ports["http"], meta=datadir / "meta", data=datadir / "data",
            wal=datadir / "wal", flux=flux))

    def command(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return [str(self.binary()), "run", "-config", str(self.config_file)]

    def ready(self, ports: dict[str, int]) -> bool:
        return http_ok(f"http://127.0.0.1:{ports['http']}/ping", expect=lambda s: s == 204, timeout=1.0)

    def extra_state(self) -> dict:
        return {"config": str(self.config_file), "flux": self.flux}


# Caches snapshot to TSM after 10 s without writes (compaction then runs), and
# shards fully compact after 1 min cold, so `compact()` settles in bounded time.
# max-body-size 0: no limit, so 10,000-line batches of any width are taken.
CONFIG = """\
reporting-disabled = true
bind-address = "127.0.0.1:{rpc}"

[meta]
  dir = "{meta}"
  retention-autocreate = true
  logging-enabled = false

[data]
  dir = "{data}"
  wal-dir = "{wal}"
  wal-fsync-delay = "0s"
  index-version = "inmem"
  query-log-enabled = false
  trace-logging-enabled = false
  cache-max-memory-size = "1g"
  cache-snapshot-memory-size = "25m"
  cache-snapshot-write-cold-duration = "10s"
  compact-full-write-cold-duration = "1m"
  max-series-per-database = 0
  max-values-per-tag = 0

[coordinator]
  write-timeout = "30s"
  log-queries-after = "0s"

[retention]
  enabled = false

[shard-precreation]
  enabled = false

[monitor]
  store-enabled = false

[continuous_queries]
  enabled = false
  log-enabled = false

[subscriber]
  enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:{http}"
  auth-enabled = false
  log-enabled = false
  write-tracing = false
  pprof-enabled = false
  max-body-size = 0
  max-concurrent-write-limit = 0
  max-enqueued-write-limit = 0
{flux}
[logging]
  format = "logfmt"
  level = "info"
  suppress-logo = true
"""
