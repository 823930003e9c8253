"""`tsbench schema`: the JSON Schema of experiment files."""

from __future__ import annotations

import click


@click.command("schema")
def schema() -> None:
    """Print the JSON Schema of experiment files (for editors and checks)."""
    from tsbench.experiments.experiment import json_schema

    click.echo(json_schema())
