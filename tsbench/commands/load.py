"""`tsbench load` (phase 2): a data file into a database, verified, compacted, its disk
bytes measured."""

from __future__ import annotations

import pathlib

import click

from tsbench.commands.common import key_values, port_numbers, writable, write_json
from tsbench.commands.fromodel import options_of
from tsbench.core import secrets
from tsbench.core.errors import UserError
from tsbench.core.options import build
from tsbench.load.options import DataFileCheck, LoadCommand


@click.command("load")
@click.argument("datafile", required=False)
@click.option("--target", "-t", "target_name", required=True,
              help="Database (list them with: python -m tsbench targets).")
@click.option("--server", "-s", default="local", show_default=True,
              help="local (tsbench installs, starts and stops it; local:KIND for another server kind the "
                   "target runs on, e.g. local:elasticsearch) or the URL of a running server.")
@options_of(LoadCommand)
@click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE",
              help="Target option, repeatable: influx api=v2; postgres tags=inline index=brin ...")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE",
              help="Option of a local server, repeatable: influx version=apt flux=true ...")
@click.option("--port", "ports", multiple=True, metavar="NAME=PORT",
              help="Fixed port for a local server (default: free ports on 127.0.0.1).")
@click.option("--generate", "gen", default=None, metavar="KEY=VALUE,...",
              help="Generate the data first in the target's format, e.g. "
                   "use_case=devops,scale=10,end=2016-01-01T02:00:00Z,seed=1 (into DATAFILE or a temp file).")
@click.option("--json", "json_out", default=None, callback=writable,
              help="Write the summary (with the per-second timeline) here.")
@click.option("--keep-server", is_flag=True, help="Leave the local server running (stop: tsbench servers stop).")
@options_of(DataFileCheck)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def load(datafile, target_name, server, options, server_options, ports, gen, json_out, keep_server, quiet,
         check_data, **settings) -> None:
    """Phase 2: load a generated data file into a database, verify the count,
    compact and measure disk bytes. DATAFILE may be an import folder (made by
    `python -m tsbench import FILE -o DIR`): its data is written in the target's
    format into a temporary file, loaded, verified and the file removed.

    \b
    Examples:
      python -m tsbench generate --scale 10 --end 2016-01-01T02:00:00Z -o devops.lp
      python -m tsbench load devops.lp --target influx --server local
      python -m tsbench import mine.lp -o mine && python -m tsbench load mine --target postgres
      python -m tsbench load --target postgres -O index=brin \\
        --generate use_case=devops,scale=10,end=2016-01-01T02:00:00Z
      python -m tsbench load devops.lp --target influx --cluster local:2
    """
    from tsbench import databases
    from tsbench.load.run import LoadOptions

    cls = databases.target_class(target_name)
    opts = build(LoadOptions, settings, progress=not quiet)
    opts.check()
    if opts.cluster:
        from tsbench.core.clusteraddress import parse

        parse(opts.cluster)
    topts = key_values(options, "--option")
    cls.parse_options(secrets.resolve_env(topts, f"target {cls.name}"))
    scratch = None
    if gen is not None and opts.cluster:
        if datafile is not None:
            raise UserError("load: with --cluster, --generate makes each worker's share on that worker; "
                            "give no DATAFILE (or load a DATAFILE every worker sees, without --generate)")
        from tsbench.cluster.shares import GeneratedData

        data = GeneratedData(_spec_of(gen), cls.format)
        _load_data(data, target_name, server, opts, topts, server_options, ports, keep_server, json_out,
                   quiet)
        return
    if gen is None and datafile is None:
        raise UserError("load: give a DATAFILE or --generate KEY=VALUE,...")
    loading = _loader_for(datafile, gen, opts)
    try:
        if gen is not None:
            if datafile is None:         # generated into a temporary dir, removed after the load or a failure
                import tempfile

                scratch = tempfile.mkdtemp(prefix="tsbench-")
                datafile = str(pathlib.Path(scratch) / f"data.{cls.format}")
            _generate_for(gen, cls.format, datafile, quiet)
        loading(datafile, target_name, server, opts, topts, server_options, ports, keep_server, json_out,
                quiet, check_data)
    finally:
        if scratch:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)


def _loader_for(datafile, gen, opts):
    """How DATAFILE is loaded: an import folder (_load_import), else a data file (_load_file)."""
    if datafile is None or not pathlib.Path(datafile).is_dir():
        return _load_file
    if gen is not None or opts.cluster:
        raise UserError(f"load: {datafile} is an import folder; it takes neither --generate nor --cluster")
    return _load_import


def _load_import(folder, target_name, *rest) -> None:
    """An import folder loaded: written in the target's format into a temporary file first."""
    from tsbench import databases
    from tsbench.data.storedfile import temporary_datafile

    with temporary_datafile(folder, databases.target_class(target_name).format) as path:
        _load_file(path, target_name, *rest)


def _load_file(datafile, target_name, server, opts, topts, server_options, ports, keep_server, json_out, quiet,
               check_data=False) -> None:
    from tsbench.data.datafile import open_datafile

    df = open_datafile(datafile, check_data=check_data)
    _load_data(df, target_name, server, opts, topts, server_options, ports, keep_server, json_out, quiet)


def _load_data(df, target_name, server, opts, topts, server_options, ports, keep_server, json_out, quiet) -> None:
    """Load a data file, or (GeneratedData) the shares the cluster's workers generate;
    --repeat N: N trials, each into an empty database (trials.py)."""
    import dataclasses

    from tsbench.core import aiorun
    from tsbench.experiments import session, trials
    from tsbench.load.run import LoadError

    reach = session.Reach(target_name, server, topts, key_values(server_options, "--server-option"),
                          port_numbers(ports), keep_server, stall_seconds=opts.stall_seconds)
    rows: list[dict] = []

    async def one(k: int):
        last = k == opts.repeat - 1
        trial_opts = dataclasses.replace(opts, if_exists=trials.if_exists(reach, k, opts.if_exists))
        async with session.open_target(trials.fresh(reach, k, opts.repeat), announce=not quiet) as c:
            try:
                res = await session.load(c, df, trial_opts)
            except LoadError as exc:
                rows.append(trials.trial_row("load", k, {}, "failed", str(exc)))
                if json_out:
                    failed = exc.result.summary() if getattr(exc, "result", None) else \
                        {"status": "failed", "reason": str(exc)}
                    write_json(json_out, {**failed, "data_file": df.path and str(df.path), "trials": rows})
                raise
            rows.append(trials.trial_row("load", k, trials.load_columns(res)))
            if not last:
                if not quiet:
                    click.echo(f"{trials.label('load', k, opts.repeat)}: {res.rate(res.rows):,.0f} rows/s", err=True)
                return
            summary = res.summary()
            summary.update(data_file=df.path and str(df.path), shares=getattr(df, "shares", None),
                           format=df.format, server=server,
                           server_version=await session.server_version(c),
                           workers=opts.workers, batch_size=opts.batch_size, processes=opts.processes, trials=rows)
            if json_out:
                write_json(json_out, summary)
            if not quiet:      # before the server stops
                _print_load(summary, c.server if keep_server else None)

    aiorun.run(trials.each("load", opts.repeat, one))


def _spec_of(gen: str):
    """--generate KEY=VALUE,... as the resolved dataset."""
    from tsbench.data.dataset import resolve, spec_from_pairs

    kv = {k.replace("-", "_"): v for k, v in key_values(tuple(x for x in gen.split(",") if x), "--generate").items()}
    return resolve(spec_from_pairs(kv, "--generate"))


def _generate_for(gen: str, fmt: str, datafile: str, quiet: bool) -> None:
    from tsbench.data.generate import generate as run_gen

    run_gen(_spec_of(gen), fmt, datafile, None, None, 1, 1, show_progress=not quiet)


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
    if s["bodies"]:
        b = s["bodies"]
        how = (f"built before the load in {b['seconds']:.2f} s, client CPU {b['cpu_seconds']:.2f} s" if b["built"]
               else "reused, built by an earlier load of this file and batch size")
        lines.append(f"  {b['format']} bodies: {how} (untimed), {b['bytes']:,} bytes")
    if s["disk"]:
        lines.append("  disk: " + ", ".join(f"{k} {n:,}" for k, n in s["disk"].items()))
    if len(s["trials"]) > 1:
        from tsbench.experiments.trials import summary_lines

        lines.append(f"  the last of {len(s['trials'])} trials, each into an empty database:")
        lines += summary_lines(s["trials"])
    if srv is not None and srv.state is not None:
        lines.append(f"  server left running: {srv.name} pid {srv.state.pid} at {srv.state.url}")
    click.echo("\n".join(lines), err=True)
