"""`tsbench targets`: every registered database and what it can do."""

from __future__ import annotations

import click


@click.command("targets")
def targets_cmd() -> None:
    """Every registered database: the data format it loads, what it counts, its
    server (none: in-process), its query languages with the number of query
    types each runs, and its options."""
    from tsbench import databases

    click.echo("target\tformat\tcounts\tserver\tdialects\toptions")
    for n in databases.names():
        c = databases.target_class(n).capabilities()
        dialects = ", ".join(f"{d} ({len(ts)} types)" for d, ts in c["dialects"].items()) or "-"
        click.echo(f"{n}\t{c['format']}\t{c['count_unit']}\t{c['server'] or 'in-process'}\t{dialects}\t"
                   f"{', '.join(c['options']) or '-'}")
