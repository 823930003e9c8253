"""`tsbench generate` (phase 1): a dataset, deterministically, in a database's bulk format."""

from __future__ import annotations

import click

from tsbench.commands.common import ENTITIES, GROUP, GROUPS, PROCESSES, SEED, key_values, writable


@click.command("generate")
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
@click.option("--output", "-o", default="-", show_default=True, callback=writable,
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
                       params=key_values(params), schema_file=schema_file)
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
