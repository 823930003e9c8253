"""`tsbench verify` (after load): what a database holds against the data file, per table."""

from __future__ import annotations

import click

from tsbench.commands.common import key_values, writable, write_json
from tsbench.commands.fromodel import options_of
from tsbench.core.errors import UserError
from tsbench.load.options import DataFileCheck


@click.command("verify")
@click.argument("datafile")
@click.option("--target", "-t", "target_name", required=True,
              help="Database (list them with: python -m tsbench targets).")
@click.option("--server", "-s", required=True, help="The URL of the server holding the data (or a path for duckdb).")
@click.option("--option", "-O", "options", multiple=True, metavar="KEY=VALUE",
              help="Target option, repeatable, as given to load (database, schema, tags ...).")
@options_of(DataFileCheck)
@click.option("--json", "json_out", default=None, callback=writable, help="Write the per-table figures here.")
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
    reach = session.Reach(target_name, server, key_values(options, "--option"))

    async def go():
        async with session.open_target(reach, announce=False) as c:
            return await verify(c, df)

    v = aiorun.run(go())
    if json_out:
        write_json(json_out, {"data_file": str(df.path), "target": target_name, **v.to_json()})
    click.echo(render(v))
    click.echo(f"verify: {v.summary()}" if not v.ok else
               f"verify: all {len(v.tables)} tables hold what {df.path.name} has", err=True)
    return 0 if v.ok else 1
