"""`tsbench import` (phase 1, a user's own data): a line-protocol or CSV file as a stored
dataset, one Parquet file per measurement and import.json (tsbench.data.importing)."""

from __future__ import annotations

import os

import click

from tsbench.commands.fromodel import options_of
from tsbench.data.options import ImportSettings


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, help="The dataset folder to write (must not exist).")
@options_of(ImportSettings)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def import_cmd(file, output, quiet, **settings) -> None:
    """Import a line-protocol or CSV file: its schema checked, then one Parquet file per
    measurement and import.json (the schema report). A line that cannot be imported stops the
    import with FILE:LINE: reason and nothing is written.

    \b
    Examples:
      python -m tsbench import metrics.lp -o mydata --precision s
      python -m tsbench import export.csv -o mydata --csv-time ts --csv-time-unit ms \\
          --csv-tags host,region --csv-measurement cpu
      python -m tsbench import dump.csv -o mydata --csv-time-unit rfc3339 --csv-types load=float
    """
    from tsbench.core.errors import UserError
    from tsbench.data.generate import Progress
    from tsbench.data.importing import import_data

    if not os.path.isfile(file):
        raise UserError(f"{file}: no such file")
    bar = Progress(os.path.getsize(file), f"import {os.path.basename(file)}", not quiet)
    try:
        manifest = import_data(file, output, ImportSettings(**settings), bar.update)
    finally:
        bar.close()
    if not quiet:
        rows = manifest["rows"]
        click.echo(f"{sum(rows.values()):,} rows in {len(rows)} measurements from "
                   f"{manifest['source']['lines']:,} lines into {output}", err=True)
