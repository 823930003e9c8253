"""`tsbench import` (phase 1, a user's own data): a line-protocol or CSV file as a stored
dataset, one Parquet file per measurement and import.json (tsbench.data.lpimport,
tsbench.data.csvimport)."""

from __future__ import annotations

import os

import click

FORMATS = {".csv": "csv", ".lp": "influx", ".txt": "influx", ".line": "influx"}


def file_format(file: str, given: str | None) -> str:
    """The format given, else the file's extension's (.csv: csv), else line protocol."""
    return given or FORMATS.get(os.path.splitext(file)[1].lower(), "influx")


def _check_options(fmt: str, precision: str, csv_given: dict[str, bool]) -> None:
    """No option of the other format (it would be ignored silently)."""
    from tsbench.core.errors import UserError
    given = [name for name, on in csv_given.items() if on]
    if fmt != "csv" and given:
        raise UserError(f"{given[0]} applies to CSV files; this file is read as line protocol "
                        "(give --format csv if it is CSV)")
    if fmt == "csv" and precision != "ns":
        raise UserError("--precision applies to line protocol; a CSV file's time unit is --csv-time-unit")


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--output", "-o", required=True, help="The dataset folder to write (must not exist).")
@click.option("--format", "fmt", type=click.Choice(["influx", "csv"]), default=None,
              help="The file's format: influx (line protocol) or csv. Default: from the extension "
                   "(.csv: csv; anything else: line protocol).")
@click.option("--precision", type=click.Choice(["ns", "us", "ms", "s"]), default="ns", show_default=True,
              help="Line protocol: the unit of the file's timestamps.")
@click.option("--csv-time", default="time", show_default=True, help="CSV: the time column.")
@click.option("--csv-time-unit", type=click.Choice(["ns", "us", "ms", "s", "rfc3339"]), default="ns",
              show_default=True, help="CSV: the time column's unit (integers), or rfc3339 (2016-01-01T00:00:00Z).")
@click.option("--csv-tags", default="", help="CSV: the tag columns, comma-separated; every other column is a field.")
@click.option("--csv-measurement", default=None, help="CSV: the measurement's name (default: the file's name).")
@click.option("--csv-types", default=None,
              help="CSV: field types, e.g. usage=float,count=integer (float, integer, unsigned, string, "
                   "boolean); a field not named takes its type from the first rows.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def import_cmd(file, output, fmt, precision, csv_time, csv_time_unit, csv_tags, csv_measurement, csv_types,
               quiet) -> None:
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

    if not os.path.isfile(file):
        raise UserError(f"{file}: no such file")
    fmt = file_format(file, fmt)
    _check_options(fmt, precision, {"--csv-time": csv_time != "time", "--csv-time-unit": csv_time_unit != "ns",
                                    "--csv-tags": bool(csv_tags), "--csv-measurement": csv_measurement is not None,
                                    "--csv-types": csv_types is not None})
    size = os.path.getsize(file)
    bar = Progress(size, f"import {os.path.basename(file)}", not quiet)
    try:
        if fmt == "csv":
            from tsbench.data.csvimport import import_csv, parse_types
            manifest = import_csv(file, output, csv_time, csv_time_unit, [t for t in csv_tags.split(",") if t],
                                  csv_measurement, parse_types(csv_types), bar.update)
        else:
            from tsbench.data.lpimport import import_file
            manifest = import_file(file, output, precision, bar.update)
    finally:
        bar.close()
    if not quiet:
        rows = manifest["rows"]
        click.echo(f"{sum(rows.values()):,} rows in {len(rows)} measurements from "
                   f"{manifest['source']['lines']:,} lines into {output}", err=True)
