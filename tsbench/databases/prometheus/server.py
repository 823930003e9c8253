"""Prometheus as a local server (phases 2-5): Debian's `prometheus` 2.42 fetched with
`apt-get download` and unpacked into tsbench's home (no system service), run on
127.0.0.1 only with its TSDB under the instance dir, the remote-write receiver on,
no scrape job, and an out-of-order window wide enough for any dataset's day; ready
when GET /-/ready answers 200."""

from __future__ import annotations

import pathlib
import re
import subprocess

from tsbench.core.errors import UserError
from tsbench.databases.shared.install import apt_extract
from tsbench.databases.shared.server import Server, home, http_ok

APT_PACKAGE = "prometheus"

# Samples older than the newest one in the head by more than this window are refused ("too
# old sample"): a load's timestamps arrive in any order across series, and a 2016 dataset may
# follow a sample of today (2026 minus 2016 is more than 3650d, which was refused): a century.
OUT_OF_ORDER_WINDOW = "100y"
RETENTION = "100y"     # retention counts back from the newest block: 2016 data stays


def _apt_dir() -> pathlib.Path:
    return home() / "bin" / "prometheus-apt"


class PrometheusServer(Server):
    kind = "prometheus"
    port_names = ("http",)

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if self.options:
            raise UserError(f"server {self.kind}: unknown option {min(self.options)!r} (it takes none)")
        self._version: str | None = None

    # ---- install ------------------------------------------------------------------------
    def binary(self) -> pathlib.Path | None:
        b = _apt_dir() / "usr" / "bin" / "prometheus"
        return b if b.is_file() else None

    def install(self) -> None:
        apt_extract(APT_PACKAGE, _apt_dir(), self.kind, home() / "logs" / "install-prometheus-apt.log")

    def version(self) -> str:
        """The release the binary reports (`prometheus, version 2.42.0+ds ...`), without Debian's suffix."""
        if self._version is None:
            b = self.binary()
            p = subprocess.run([str(b), "--version"], capture_output=True, text=True, timeout=30,
                               check=False) if b else None
            m = re.search(r"version (\d+\.\d+\.\d+)", (p.stdout + p.stderr) if p else "")
            self._version = m.group(1) if m else ""
        return self._version

    # ---- run ----------------------------------------------------------------------------
    @property
    def config_file(self) -> pathlib.Path:
        return self.dir / "prometheus.yml"

    def prepare(self, datadir: pathlib.Path, ports: dict[str, int]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(CONFIG.format(window=OUT_OF_ORDER_WINDOW))

    def command(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        return [str(self.ensure_installed()),
                f"--config.file={self.config_file}",
                f"--web.listen-address=127.0.0.1:{ports['http']}",
                f"--storage.tsdb.path={datadir}",
                f"--storage.tsdb.retention.time={RETENTION}",
                "--web.enable-remote-write-receiver",
                "--web.enable-admin-api",        # delete_series and clean_tombstones, for create's drop (next step)
                "--log.level=warn"]

    def ready(self, ports: dict[str, int]) -> bool:
        return http_ok(f"http://127.0.0.1:{ports['http']}/-/ready", lambda s: s == 200)

    def extra_state(self) -> dict:
        return {"config": str(self.config_file)}


# No scrape_configs: the server holds only what tsbench writes (not even its own metrics).
CONFIG = """\
storage:
  tsdb:
    out_of_order_time_window: {window}
"""
