"""The command line's shared pieces (all phases): KEY=VALUE and NAME=PORT lists, the
bounded number types (bounds.py, shown in --help), the output-file and name checks run
as click callbacks, and the JSON summary writer."""

from __future__ import annotations

import click

from tsbench.core import bounds, secrets
from tsbench.core.errors import UserError


def key_values(values: tuple[str, ...], option: str = "--param") -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise UserError(f"{option}: expected KEY=VALUE, got {v!r}")
        out[key.strip()] = val.strip()
    return out


def port_numbers(values: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for k, v in key_values(values, "--port").items():
        if not v.isdigit() or not 0 < int(v) < 65536:
            raise UserError(f"--port: {k}={v} is not a port number")
        out[k] = int(v)
    return out


class Finite(click.FloatRange):
    """A FloatRange that also refuses nan and inf."""

    def convert(self, value, param, ctx):
        import math

        v = super().convert(value, param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return v


AT_LEAST_1 = click.IntRange(1, bounds.MAX_COUNT)          # every number has its bound (bounds.py), shown in --help
AT_LEAST_0 = click.IntRange(0, bounds.MAX_COUNT)
SEED = click.IntRange(0, 2 ** 64 - 1)
POSITIVE = Finite(min=0, max=bounds.MAX_SECONDS, min_open=True)     # seconds
SECONDS_0 = Finite(min=0, max=bounds.MAX_SECONDS)
RATE = Finite(min=0, max=bounds.MAX_RATE, min_open=True)
ENTITIES = click.IntRange(1, bounds.MAX_ENTITIES)
GROUP, GROUPS = click.IntRange(0, bounds.MAX_GROUPS - 1), click.IntRange(1, bounds.MAX_GROUPS)
PROCESSES = click.IntRange(1, bounds.MAX_PROCESSES)
WORKERS = click.IntRange(1, bounds.MAX_WORKERS)
BATCH_ROWS = click.IntRange(1, bounds.MAX_BATCH_ROWS)
QUERIES, QUERIES_0 = click.IntRange(1, bounds.MAX_QUERIES), click.IntRange(0, bounds.MAX_QUERIES)
PER_TYPE = click.IntRange(1, bounds.MAX_QUERIES_PER_TYPE)


def writable(ctx, param, value):
    """Click callback: an output file that cannot be written fails before any work."""
    from tsbench.core.outfile import problem

    why = problem(value) if value is not None else None
    if why:
        raise click.BadParameter(why, ctx, param)
    return value


def valid_names(ctx, param, value):
    """Click callback: names used in paths (server instances) are [A-Za-z0-9._-]+."""
    from tsbench.experiments.experiment import name_problem

    for v in [value] if isinstance(value, str) else value or ():
        problem = name_problem(v)
        if problem:
            raise click.BadParameter(problem, ctx, param)
    return value



def write_json(path: str, data: dict, indent: int = 2) -> None:
    import json

    from tsbench.core.outfile import write_text

    write_text(path, "--json", json.dumps(secrets.mask_deep(data), indent=indent) + "\n")


def say_unless(quiet: bool, prefix: str):
    """Progress lines on stderr after a prefix, none when quiet."""
    return (lambda m: None) if quiet else (lambda m: click.echo(f"{prefix}: {m}", err=True))
