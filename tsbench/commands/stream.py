"""`tsbench stream` (phase 2's other way in): generated points written for a duration at a
rate, with per-second figures, queries and freshness probes while writing."""

from __future__ import annotations

import click

from tsbench.commands.common import key_values, port_numbers, say_unless, writable, write_json
from tsbench.commands.fromodel import options_of
from tsbench.core import secrets
from tsbench.core.errors import UserError
from tsbench.core.options import build
from tsbench.data.options import DatasetSettings
from tsbench.stream.options import StreamCommand


@click.command("stream")
@click.option("--target", "-t", "target_name", required=True,
              help="Database (list them with: python -m tsbench targets).")
@click.option("--server", "-s", default="local", show_default=True,
              help="local (tsbench starts and stops it) or the URL of a running server.")
@click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE", help="Target option, repeatable.")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE",
              help="Option of a local server, repeatable.")
@click.option("--port", "ports", multiple=True, metavar="NAME=PORT", help="Fixed port for a local server.")
@options_of(DatasetSettings, skip=("end",))
@options_of(StreamCommand)
@click.option("--json", "json_out", default=None, callback=writable, help="Write the summary here.")
@click.option("--seconds", "seconds_out", default=None, callback=writable,
              help="Write the per-second table (one row per second and writer, latency histograms "
                   "included) here as parquet.")
@click.option("--queries", "queries_file", default=None,
              help="A queries file (tsbench queries generate) to run while writing, each query moved onto the "
                   "freshest data.")
@click.option("--keep-server", is_flag=True, help="Leave the local server running.")
@click.option("--quiet", "-q", is_flag=True, help="No per-second lines and no summary.")
def stream(target_name, server, options, server_options, ports, json_out, seconds_out, queries_file, keep_server, quiet,
           **settings) -> None:
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
    from tsbench.data.dataset import resolve
    from tsbench.experiments import session
    from tsbench.stream.churn import churn_of
    from tsbench.stream.run import StreamOptions

    cls = databases.target_class(target_name)
    data = {k: settings.pop(k) for k in DatasetSettings.model_fields if k in settings}      # the dataset's
    ratio = _ratio(settings.pop("query_ratio"), settings["query_rate"])
    if settings["query_rate"] is None:          # the file's default
        del settings["query_rate"]
    time_span = settings.pop("time")
    opts = build(StreamOptions, settings, progress=not quiet, query_ratio=ratio)
    if queries_file:
        from tsbench.queries import read_queries

        opts.queries = read_queries(queries_file)[1]
    opts.check()
    topts = key_values(options, "--option")
    cls.parse_options(secrets.resolve_env(topts, f"target {cls.name}"))
    if time_span:
        data["interval"] = _spread(time_span, data["interval"], opts.points_per_series)
    ds = resolve(_stream_spec(data))
    _check_probe(cls, ds, opts.freshness)
    churn_of(ds, opts.churn)                 # said before a server starts
    reach = session.Reach(target_name, server, topts, key_values(server_options, "--server-option"),
                          port_numbers(ports), keep_server, stall_seconds=opts.stall_seconds)
    summary, results = _stream_trials(reach, ds, opts, json_out, quiet)
    if json_out:
        write_json(json_out, summary)
    if seconds_out:
        _write_seconds(seconds_out, results)
    if not quiet:
        _print_stream(summary, opts)


def _stream_trials(reach, ds, opts, json_out, quiet) -> tuple[dict, list]:
    """--repeat N streams, each a new stream into an empty database (trials.py): the last
    one's summary with every trial's row (trials), and each StreamResult."""
    import dataclasses

    from tsbench.core import aiorun
    from tsbench.experiments import session, trials
    from tsbench.stream.run import StreamError

    rows, results, summary = [], [], {}

    async def one(k: int):
        trial_opts = dataclasses.replace(opts, if_exists=trials.if_exists(reach, k, opts.if_exists))
        async with session.open_target(trials.fresh(reach, k, opts.repeat), announce=not quiet) as c:
            try:
                res = await session.stream(c, ds, trial_opts)
            except StreamError as exc:
                rows.append(trials.trial_row("stream", k, {}, "failed", str(exc)))
                if json_out and getattr(exc, "result", None):
                    write_json(json_out, exc.result.summary() | {"trials": rows})
                raise
            rows.append(trials.trial_row("stream", k, trials.stream_columns(ds, res)))
            results.append(res)
            if k < opts.repeat - 1:
                say_unless(quiet, "tsbench")(f"{trials.label('stream', k, opts.repeat)}: "
                                             f"{res.summary()['rows_per_s'] or 0:,.0f} rows/s")
            summary.update(res.summary(), server_version=await session.server_version(c), trials=rows)

    aiorun.run(trials.each("stream", opts.repeat, one))
    return summary, results


def _ratio(ratio: str | None, query_rate: float | None) -> tuple[int, int] | None:
    if ratio is None:
        return None
    from tsbench.stream.mixed import parse_ratio     # (the queries' modules: only for a stream that runs them)

    if query_rate is not None:
        raise UserError("stream: --ratio (queries due by the writes) and --query-rate (by the clock): give one")
    return parse_ratio(ratio)


def _check_probe(cls, ds, freshness: bool) -> None:
    """--freshness on a target and dataset it can probe, said before a server starts."""
    if freshness:
        from tsbench.stream.fresh import check_probe

        check_probe(cls, ds)


def _spread(time_span: str, interval: str | None, points_per_series: int | None) -> str:
    from tsbench.stream.options import spread_interval

    if interval or not points_per_series:
        raise UserError("--time: give it with --points-per-series and without --interval (the interval is "
                        "the span over the points)")
    return spread_interval(time_span, points_per_series, "--time")


def _stream_spec(data: dict):
    """The dataset a stream draws from: its time range starts at --start (now: the current
    time); its end only bounds resolve(): the writers stop on their own terms."""
    from tsbench.data.dataset import DatasetSpec
    from tsbench.stream.run import start_now

    if data["start"] == "now":
        data["start"] = start_now(data["interval"])
    return DatasetSpec(**{**data, "params": key_values(data["params"])})


def _write_seconds(path: str, results: list) -> None:
    """The per-second table (StreamResult.seconds_rows) of each trial as parquet, with its trial."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tsbench.core.outfile import OutputFile

    rows = [{"trial": k, **r} for k, res in enumerate(results) for r in res.seconds_rows()]
    names = list(dict.fromkeys(k for r in rows for k in r))          # every column, each row's missing ones null
    rows = [{k: r.get(k) for k in names} for r in rows]
    with OutputFile(path, "--seconds") as f:      # a file object: pyarrow removes a path it failed to write
        pq.write_table(pa.Table.from_pylist(rows), f)


def _print_stream(s: dict, opts) -> None:
    from tsbench.experiments.trials import summary_lines

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
    if len(s["trials"]) > 1:
        lines.append(f"  the last of {len(s['trials'])} trials, each a new stream into an empty database:")
        lines += summary_lines(s["trials"])
    for c in s["client_slots"]:
        lines.append(f"  client slot {c['slot']} on {c['worker']} ({c['host']}): {c['writers']} writers, "
                     f"{c['rows']:,} rows in {c['seconds']:.2f} s, CPU {c['cpu_seconds']:.2f} s, "
                     f"started {c['start_s']:.3f} s after the driver")
    click.echo("\n".join(lines), err=True)
