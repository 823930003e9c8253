"""`tsbench report` (after a run): the HTML report of a run folder."""

from __future__ import annotations

import click

from tsbench.commands.common import writable


@click.command("report")
@click.argument("run_dir")
@click.option("--output", "-o", default=None, callback=writable, help="The HTML file (default: RUN_DIR/report.html).")
def report(run_dir, output) -> None:
    """Write the static HTML report of a run folder (results/<experiment>/<run-id>/):
    plots of ingest, throughput, disk, latency, server CPU and memory, and the
    validation verdicts. Prints the cells' summary table."""
    from tsbench.experiments.report import text_summary, write_report

    written = write_report(run_dir, output)       # first: a failure is its one line alone
    click.echo(text_summary(run_dir), err=True)
    click.echo(f"report: {written}", err=True)
