"""`tsbench generate` (phase 1): a dataset, deterministically, in a database's bulk format."""

from __future__ import annotations

import click

from tsbench.commands.common import key_values
from tsbench.commands.fromodel import options_of
from tsbench.data.options import DatasetSettings, GenerateCommand


@click.command("generate")
@options_of(GenerateCommand)
@click.option("--from-import", "from_import", default=None, metavar="DIR",
              help="Write the data of an import folder (python -m tsbench import FILE -o DIR) in --format "
                   "instead of generating: its loadable view, with a manifest.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary.")
def generate(quiet, from_import, **settings) -> None:
    """Phase 1: generate a dataset deterministically in a database's bulk format.

    \b
    Example:
      python -m tsbench generate --use-case devops --scale 100 \\
        --start 2016-01-01T00:00:00Z --end 2016-01-02T00:00:00Z --seed 123 --format influx -o f.lp
    """
    from tsbench.data.dataset import DatasetSpec, resolve
    from tsbench.data.generate import generate as run
    from tsbench.data.simmemory import disclose

    if from_import is not None:
        _from_import(from_import, settings, quiet)
        return
    settings["params"] = key_values(settings["params"])
    spec = DatasetSpec(**{k: settings.pop(k) for k in DatasetSettings.model_fields})
    output = settings["output"]
    ds = resolve(spec)
    manifests = run(ds, settings["format"], output, settings["compress"], settings["group"], settings["groups"],
                    settings["processes"], show_progress=not quiet)
    if not quiet and output != "-":
        for m in manifests:
            if m:
                t = m["timing"]
                rate = m["rows"] / t["seconds"] if t["seconds"] else 0
                procs = f", {t['processes']} processes" if t["processes"] > 1 else ""
                click.echo(f"{m['rows']:,} rows, {m['values']:,} values, {m['bytes']:,} bytes "
                           f"in {t['seconds']:.2f} s ({rate:,.0f} rows/s{procs}){disclose(t['memory'])}", err=True)


def _from_import(folder: str, settings: dict, quiet: bool) -> None:
    """generate --from-import DIR: the import's view as a data file of --format, and its manifest."""
    from tsbench.core.errors import UserError
    from tsbench.data.stored import open_stored
    from tsbench.data.storedfile import write_datafile

    if settings["output"] == "-":
        raise UserError("generate --from-import: give the data file with -o FILE (a manifest is written beside it)")
    if (settings["compress"] or "none") != "none" or settings["groups"] != 1 or settings["group"] is not None:
        raise UserError("generate --from-import writes one uncompressed file (no --compress, --group, --groups)")
    m = write_datafile(open_stored(folder), settings["format"], settings["output"])
    if not quiet:
        click.echo(f"{m['rows']:,} rows, {m['values']:,} values, {m['bytes']:,} bytes from {folder} "
                   f"in {m['timing']['seconds']:.2f} s", err=True)
