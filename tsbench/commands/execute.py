"""`tsbench execute` (phase 4): a queries file against a database, latency per query type,
answers validated; the options and the running it shares with validate."""

from __future__ import annotations

import contextlib
import pathlib

import click

from tsbench.commands.common import key_values, say_unless, writable, write_json
from tsbench.commands.fromodel import options_of
from tsbench.core.errors import UserError
from tsbench.core.options import build
from tsbench.execute.options import ExecuteCommand


def exec_options(f):
    for opt in reversed([
        click.argument("queries_file"),
        click.option("--target", "-t", "target_name", required=True, help="Database (see: load --help)."),
        click.option("--server", "-s", default="local", show_default=True,
                     help="A URL, or local: start a server and --load DATAFILE into it first."),
        click.option("--load", "load_file", default=None, help="Load this data file (or import folder) first "
                                                                 "(with --if-exists drop)."),
        click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE", help="Target option."),
        click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE"),
        click.option("--json", "json_out", default=None, callback=writable,
                     help="Write the results (stats, validation, per query) here."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar and no table."),
    ]):
        f = opt(f)
    return f


@click.command("execute")
@exec_options
@options_of(ExecuteCommand)
def execute(queries_file, target_name, server, load_file, options, server_options, json_out, quiet,
            **settings) -> None:
    """Phase 4: run a queries file against a database: latency percentiles per
    query type, time to first byte, response bytes, errors; answers validated."""
    from tsbench.execute.run import ExecOptions

    opts = build(ExecOptions, settings, progress=not quiet)
    opts.check()
    results = run_queries(queries_file, target_name, server, load_file, options, server_options, opts, quiet)
    finish_queries(results, json_out, quiet, table=True, planned=opts.repeat)


def run_queries(queries_file, target_name, server, load_file, options, server_options, opts, quiet):
    """The ExecResult of each trial (--repeat: measured passes over the queries on one
    database), in order; a failed trial's is the last (the rest are skipped)."""
    from tsbench import databases, queries
    from tsbench.queries.storedview import dataset_of

    head, specs = queries.read_queries(queries_file)
    ds = dataset_of(head["dataset"])
    if databases.is_local(server) and not load_file:
        raise UserError("--server local starts an empty server: add --load DATAFILE (or give a server URL)")
    with contextlib.ExitStack() as scratch:
        if load_file and pathlib.Path(load_file).is_dir():           # an import folder: its target format
            from tsbench.data.storedfile import temporary_datafile

            fmt = databases.target_class(target_name).format
            load_file = scratch.enter_context(temporary_datafile(load_file, fmt))
        df = _datafile_for(load_file, ds, queries_file) if load_file else None
        return _run(df, ds, specs, target_name, server, options, server_options, opts, quiet)


def _run(df, ds, specs, target_name, server, options, server_options, opts, quiet):
    """run_queries with its data file (or none) open."""
    from tsbench.core import aiorun
    from tsbench.experiments import session, trials

    ref = session.reference(ds, say=say_unless(quiet, "tsbench")) if opts.validate else None
    reach = session.Reach(target_name, server, key_values(options, "--option"),
                          key_values(server_options, "--server-option"), stall_seconds=opts.stall_seconds)

    async def go():
        async with session.open_target(reach, announce=not quiet) as c:
            if df is not None:
                from tsbench.load.run import LoadOptions

                await session.load(c, df, LoadOptions(if_exists="drop", progress=not quiet,
                                                      stall_seconds=opts.stall_seconds))
            out = []

            async def one(k: int):
                if out and trials.query_failure(out[-1]):       # a failed trial: the rest are skipped
                    return
                if opts.repeat > 1:
                    say_unless(quiet, "tsbench")(trials.label("execute", k, opts.repeat))
                out.append(await session.run_queries(c, ds, specs, opts, ref))
            await trials.each("execute", opts.repeat, one)
            return out

    results = aiorun.run(go())
    if ref is not None:
        say_unless(quiet, "tsbench")(ref.note())
    return results


def _float_rule(rel_tol: float) -> str:
    """How floats were compared (queries/compare.py), in a few words."""
    rule = "stored floats exactly, sums and means within their rounding error"
    return rule + (f", every float within rel. {rel_tol:g}" if rel_tol else "")


def _datafile_for(load_file: str, ds, queries_file: str):
    """The data file to load first; it must hold the queries file's dataset."""
    from tsbench.data.datafile import open_datafile

    df = open_datafile(load_file)
    if df.dataset.describe() != ds.describe():
        raise UserError(f"{load_file} holds another dataset than the queries file {queries_file}")
    return df


def finish_queries(results, json_out, quiet, table: bool, planned: int = 1) -> None:
    """Print (the table, mismatches) and write the last trial's results, each trial's main
    figure beside them when there are several; a failed trial is one error line."""
    from tsbench.experiments import trials

    res = results[-1]
    summary = res.summary()
    rows = [trials.execute_row(k, r) for k, r in enumerate(results)]
    if json_out:
        write_json(json_out, {**summary, "records": [{"trial": k, **rec} for k, r in enumerate(results)
                                                     for rec in r.records], "trials": rows}, indent=1)
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
        if planned > 1:
            click.echo(f"the last of {len(results)} trials (passes over the queries):", err=True)
            click.echo("\n".join(trials.summary_lines(rows)), err=True)
    errors = sum(r["status"] == "error" for r in res.records)
    if bad or errors:
        which = f"{trials.label('execute', len(results) - 1, planned)}: " if planned > 1 else ""
        raise UserError(f"{which}{len(bad)} answers differ from the reference, {errors} queries failed "
                        f"({res.target}); first: " + (bad[0]["diff"].splitlines()[0] if bad else
                                                     next(r["error"] for r in res.records if r["error"])))
