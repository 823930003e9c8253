"""VictoriaMetrics single-node as a local server (phases 2-5): install from
Debian (`victoria-metrics` 1.79.5, the default) or build a release with Go,
then run it on 127.0.0.1 only, with its data under the instance dir, a
100-year retention (the default month silently drops 2016 data) and no
response cache, so repeated queries measure the database, not the cache."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess

from tsbench.core.errors import ServerError, UserError
from tsbench.databases.shared.install import apt_install, go_build
from tsbench.databases.shared.server import Server, home, http_ok, say

APT_PACKAGE = "victoria-metrics"
APT_BINARY = pathlib.Path("/usr/bin/victoria-metrics")
GO_MODULE = "github.com/VictoriaMetrics/VictoriaMetrics"
OPTIONS = ("version",)
# the release built with Go for OTLP ingestion (/opentelemetry/v1/metrics, VictoriaMetrics 1.92 on):
# 30 s of build on 2 cores from an empty Go cache; `servers install --all` builds it for the tests
OTLP_RELEASE = "1.151.0"


class VictoriaMetricsServer(Server):
    kind = "victoriametrics"
    port_names = ("http",)
    also_installed = ({"version": OTLP_RELEASE},)

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        unknown = set(self.options) - set(OPTIONS)
        if unknown:
            raise UserError(f"server {self.kind}: unknown option {min(unknown)!r} (options: {', '.join(OPTIONS)})")
        v = str(self.options.get("version", "apt")).removeprefix("v")
        if v != "apt" and not re.fullmatch(r"\d+\.\d+\.\d+", v):
            raise UserError(f"server {self.kind}: option version: {v!r} is neither 'apt' (Debian's package) "
                            f"nor a release like 1.115.0 (built with Go)")
        self.release = v

    # ---- install ------------------------------------------------------------------------
    def binary(self) -> pathlib.Path | None:
        b = APT_BINARY if self.release == "apt" else home() / "bin" / f"victoria-metrics-{self.release}"
        return b if b.is_file() and os.access(b, os.X_OK) else None

    def install(self) -> None:
        log = home() / "logs" / f"install-victoriametrics-{self.release}.log"
        if self.release == "apt":
            self._install_apt(log)
        else:
            self._install_go(log)

    def _install_apt(self, log: pathlib.Path) -> None:
        if os.geteuid() != 0:
            raise ServerError(f"{self.kind}: installing Debian's {APT_PACKAGE} needs root (apt-get); install it "
                              f"yourself or use server option version: 1.115.0 (built with Go)")
        apt_install(APT_PACKAGE, self.kind, log)

    def _install_go(self, log: pathlib.Path) -> None:
        tag = f"v{self.release}"
        say(f"building VictoriaMetrics {tag} with Go ({GO_MODULE}/app/victoria-metrics; a few minutes)")
        go_build(f"{GO_MODULE}/app/victoria-metrics", tag, home() / "bin" / f"victoria-metrics-{self.release}",
                 self.kind, log, ldflags=f"-X {GO_MODULE}/lib/buildinfo.Version=victoria-metrics-{tag}",
                 try_install=False)

    # ---- run ----------------------------------------------------------------------------
    def command(self, datadir: pathlib.Path, ports: dict[str, int]) -> list[str]:
        # Only -httpListenAddr is set; graphite, influx TCP/UDP and OpenTSDB listeners are off
        # by default, and self-scraping (which would add series) is off by default too.
        return [str(self.ensure_installed()),
                f"-httpListenAddr=127.0.0.1:{ports['http']}",
                f"-storageDataPath={datadir}",
                "-retentionPeriod=100y",
                "-search.disableCache",          # no rollup-result cache: every query does the work
                "-search.latencyOffset=0s",      # recent samples are visible at once
                # counting a load reads every series: lift the 300,000-series guard of one query
                "-search.maxUniqueTimeseries=100000000",
                "-loggerLevel=WARN"]

    def ready(self, ports: dict[str, int]) -> bool:
        return http_ok(f"http://127.0.0.1:{ports['http']}/health", lambda s: s == 200)

    def version(self) -> str:
        """Debian's build carries no version (empty `-version` and vm_app_version): ask dpkg."""
        if self.release == "apt":
            p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", APT_PACKAGE], capture_output=True, text=True,
                               check=False)
            m = re.match(r"(\d+\.\d+\.\d+)", p.stdout)
            return m.group(1) if m else ""
        b = self.binary()
        p = subprocess.run([str(b), "-version"], capture_output=True, text=True, timeout=30, check=False) if b else None
        m = re.search(r"v(\d+\.\d+\.\d+)", (p.stdout + p.stderr) if p else "")
        return m.group(1) if m else ""
