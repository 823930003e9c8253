"""`tsbench report` (after a run): the report of one run folder or several."""

from __future__ import annotations

import click

from tsbench.commands.common import writable
from tsbench.core.errors import UserError


@click.command("report")
@click.argument("run_dirs", nargs=-1, required=True, metavar="RUN_DIR [RUN_DIR...]")
@click.option("--output", "-o", default=None, callback=writable,
              help="The HTML file (default: RUN_DIR/report.html; several runs: give it).")
@click.option("--static", is_flag=True,
              help="The static page of PNG plots (matplotlib) of one run instead of the interactive one.")
def report(run_dirs, output, static) -> None:
    """Write the report of run folders (results/<experiment>/<run-id>/): one HTML file that
    works offline, with filters over databases, settings and query types, latency relative to
    the best and its distribution, ingest, CPU and memory over time, the correctness matrix
    and efficiency; several runs share one page. Prints the cells' summary table."""
    from tsbench.experiments.report import text_summary, write_report, write_static

    if len(run_dirs) > 1 and (static or output is None):
        raise UserError("report: several runs make one page: give it --output FILE (and no --static)")
    if static:
        written = write_static(run_dirs[0], output)
    else:
        written = write_report(list(run_dirs), output)      # first: a failure is its one line alone
    for d in run_dirs:
        click.echo(text_summary(d), err=True)
    click.echo(f"report: {written}", err=True)
