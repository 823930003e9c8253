"""The command line's shared pieces (all phases): KEY=VALUE and NAME=PORT lists, the
output-file and name checks run as click callbacks, and the JSON summary writer. (The
options of a phase, with their bounds, are made from its model: fromodel.py.)"""

from __future__ import annotations

import click

from tsbench.core import secrets
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
