"""`tsbench import` (phase 1, a user's own data): a line-protocol file as a stored dataset, one
Parquet file per measurement and import.json (tsbench.data.lpimport)."""

from __future__ import annotations

import os

import click


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, help="The dataset folder to write (must not exist).")
@click.option("--precision", type=click.Choice(["ns", "us", "ms", "s"]), default="ns", show_default=True,
              help="The unit of the file's timestamps.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def import_cmd(file, output, precision, quiet) -> None:
    """Import a line-protocol file: its schema checked, then one Parquet file per measurement.

    \b
    Example:
      python -m tsbench import metrics.lp -o mydata --precision s
    """
    from tsbench.core.errors import UserError
    from tsbench.data.generate import Progress
    from tsbench.data.lpimport import import_file

    if not os.path.isfile(file):
        raise UserError(f"{file}: no such file")
    size = os.path.getsize(file)
    bar = Progress(size, f"import {os.path.basename(file)}", not quiet)
    try:
        manifest = import_file(file, output, precision, bar.update)
    finally:
        bar.close()
    if not quiet:
        rows = manifest["rows"]
        click.echo(f"{sum(rows.values()):,} rows in {len(rows)} measurements from "
                   f"{manifest['source']['lines']:,} lines into {output}", err=True)
