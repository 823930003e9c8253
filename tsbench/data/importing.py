"""Importing a file of your own data (phase 1 for a user's data): the format from the option or
the file's extension, the options checked against it, then the line-protocol importer
(data/lpimport.py) or the CSV importer (data/csvimport.py). `tsbench import` and the
experiment runner (a datasets: entry with file:) both come here."""

from __future__ import annotations

import os

from tsbench.core.errors import UserError
from tsbench.data.options import ImportSettings

EXTENSIONS = {".csv": "csv", ".lp": "influx", ".txt": "influx", ".line": "influx"}
CSV_ONLY = ("csv_time", "csv_time_unit", "csv_tags", "csv_measurement", "csv_types")


def file_format(file: str, given: str | None) -> str:
    """The format given, else the file's extension's (.csv: csv), else line protocol."""
    return given or EXTENSIONS.get(os.path.splitext(file)[1].lower(), "influx")


def check_settings(fmt: str, s: ImportSettings, option=lambda name: "--" + name.replace("_", "-")) -> None:
    """No setting of the other format (it would be ignored silently); option(name) names a setting."""
    defaults = ImportSettings()
    given = [n for n in CSV_ONLY if getattr(s, n) != getattr(defaults, n)]
    if fmt != "csv" and given:
        raise UserError(f"{option(given[0])} applies to CSV files; this file is read as line protocol "
                        f"(give {option('format')} csv if it is CSV)")
    if fmt == "csv" and s.precision != defaults.precision:
        raise UserError(f"{option('precision')} applies to line protocol; a CSV file's time unit is "
                        f"{option('csv_time_unit')}")


def import_data(file: str, output: str, s: ImportSettings, progress=lambda done: None) -> dict:
    """Import file into the folder output (which must not exist); returns its import.json."""
    if not os.path.isfile(file):
        raise UserError(f"{file}: no such file")
    fmt = file_format(file, s.format)
    check_settings(fmt, s)
    if fmt == "csv":
        from tsbench.data.csvimport import import_csv, parse_types

        return import_csv(file, output, s.csv_time, s.csv_time_unit, [t for t in s.csv_tags.split(",") if t],
                          s.csv_measurement, parse_types(s.csv_types), progress)
    from tsbench.data.lpimport import import_file

    return import_file(file, output, s.precision, progress)
