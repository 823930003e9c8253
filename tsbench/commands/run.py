"""`tsbench run` (all phases): every cell of an experiment file, results and report."""

from __future__ import annotations

import sys

import click

from tsbench.commands.fromodel import options_of
from tsbench.experiments.options import RunCommand


@click.command("run")
@click.argument("experiment_file")
@options_of(RunCommand)
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
def run(experiment_file, dry_run, results, quiet, no_report, overrides, redact) -> None:
    """Run every cell of an experiment file: generate, load, verify, queries,
    execute, validate; results as parquet tables (cells, load, queries,
    resources), a manifest and an HTML report in results/<experiment>/<run-id>/."""
    from tsbench.experiments.experiment import cells, describe_cell, load_experiment

    exp = load_experiment(experiment_file, overrides)
    if dry_run:
        cs = cells(exp)
        for c in cs:
            click.echo(describe_cell(c))
        click.echo(f"{len(cs)} cells; phases: {', '.join(exp.phases)}", err=True)
        return
    from tsbench.core import signals
    from tsbench.experiments.report import text_summary, write_report
    from tsbench.experiments.runner import Runner

    runner = Runner(exp, results, quiet, redact)
    with signals.as_interrupt():         # SIGTERM after the cells as well: the same path as Ctrl-C
        out = runner.run()
        try:
            click.echo(text_summary(out), err=True)
            if not no_report:
                click.echo(f"report: {write_report(out)}", err=True)
        except KeyboardInterrupt:
            click.echo(f"report: not written (interrupted); write it with: python -m tsbench report {out}",
                       err=True)
    click.echo(f"results: {out}", err=True)
    if runner.interrupted:
        sys.exit(signals.EXIT_CODES[runner.interrupted])
    if runner.not_ok:
        click.echo(f"tsbench: {runner.not_ok} of {len(runner.cell_rows)} cells not ok (see the reason column)",
                   err=True)
        sys.exit(1)
