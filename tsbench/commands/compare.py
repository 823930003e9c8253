"""`tsbench compare` (after runs): BASE against each OTHER run folder, figure by figure,
with intervals, tests and verdicts (experiments/compare.py); exit 1 with --fail-on when
a verdict says so."""

from __future__ import annotations

import sys

import click

from tsbench.commands.common import writable
from tsbench.experiments.compare import THRESHOLD_PCT

FAIL_ON = {"slower": ("slower",), "faster": ("faster",), "different": ("slower", "faster")}


@click.command("compare")
@click.argument("base")
@click.argument("others", metavar="OTHER...", nargs=-1, required=True)
@click.option("--threshold", type=click.FloatRange(0, 1000), default=THRESHOLD_PCT, show_default=True,
              metavar="PCT", help="A ratio less than PCT% away from 1 is no difference, however sure.")
@click.option("--fail-on", type=click.Choice(sorted(FAIL_ON)), default=None,
              help="Exit 1 when a figure is significantly slower (worse), faster (better), or either.")
@click.option("--allow-different", is_flag=True,
              help="Compare runs that differ in dataset, queries, C build or machine (the differences head the output).")
@click.option("--json", "json_out", default=None, callback=writable, metavar="FILE", help="Write the comparison as JSON.")
@click.option("--markdown", "markdown_out", default=None, callback=writable, metavar="FILE",
              help="Write the comparison as a Markdown page.")
def compare(base, others, threshold, fail_on, allow_different, json_out, markdown_out) -> None:
    """Compare run folders: for every target and settings in BASE and OTHER, every
    figure both measured (rows/s, values/s, disk, CPU seconds, qps; query latency
    p50/p90/p99/mean per query type and over all), the ratio OTHER/BASE with its 95%
    interval, a p-value (bootstrap of the ratio over trials; Mann-Whitney U over the
    queries' latencies; Holm-corrected) and a verdict: faster, slower or no difference.

    \b
    Example:
      tsbench compare results/devops/20261127-2210 results/devops/20261128-0010 \\
          --fail-on slower --markdown compare.md
    """
    from tsbench.core.outfile import write_text
    from tsbench.experiments import compareout
    from tsbench.experiments.compare import compare_runs

    comparisons = compare_runs(base, list(others), threshold, allow_different)
    if json_out:
        write_text(json_out, "--json", compareout.to_json(comparisons, threshold))
    if markdown_out:
        write_text(markdown_out, "--markdown", compareout.markdown(comparisons, threshold))
    if "-" not in (json_out, markdown_out):
        click.echo(compareout.text(comparisons, threshold), nl=False)
    if fail_on and any(r.verdict in FAIL_ON[fail_on] for c in comparisons for r in c.rows):
        sys.exit(1)
