"""`tsbench validate` (phase 5): every query of a queries file once, each answer checked
against the reference engine."""

from __future__ import annotations

import click

from tsbench.commands.execute import exec_options, finish_queries, run_queries


@click.command("validate")
@exec_options
def validate(queries_file, target_name, server, load_file, options, server_options, json_out, quiet) -> None:
    """Phase 5: run every query of a queries file once and check each answer
    against the reference engine (DuckDB over the same data, from the simulator)."""
    from tsbench.execute.run import ExecOptions

    opts = ExecOptions(workers=1, cache="warm", validate=True, progress=not quiet)
    opts.cache = "none"
    res = run_queries(queries_file, target_name, server, load_file, options, server_options, opts, quiet)
    finish_queries(res, json_out, quiet, table=False)
