"""The command line, `python -m tsbench COMMAND` (all phases). Bad input is
reported in one line naming the option or the file and field; no tracebacks."""

from __future__ import annotations

import importlib
import os
import pathlib
import sys

import click

from tsbench.core.errors import UserError

# every command: its module under tsbench/commands/ and the click command in it; a module is
# imported when its command runs (a command starts without the others' imports)
COMMANDS = {"generate": ("generate", "generate"), "load": ("load", "load"), "stream": ("stream", "stream"),
            "queries": ("queries", "queries_cmd"), "execute": ("execute", "execute"),
            "validate": ("validate", "validate"), "run": ("run", "run"), "report": ("report", "report"),
            "targets": ("targets", "targets_cmd"), "schema": ("schema", "schema"),
            "servers": ("servers", "servers_cmd"), "verify": ("verify", "verify_cmd"),
            "compare": ("compare", "compare"), "import": ("importfile", "import_cmd")}


class _PipeBroken(Exception):
    """A BrokenPipeError out of a command, on its way to main() (its __cause__)."""


class _Group(click.Group):
    """The command group: its commands come from COMMANDS, each module imported when
    asked for; their broken pipes reach main() (click itself ends any EPIPE with exit 1
    and no word, whether the reader of stdout went away or a database's socket did)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise _PipeBroken() from exc

    def list_commands(self, ctx) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx, name: str):
        if name not in COMMANDS:
            return None
        module, command = COMMANDS[name]
        return getattr(importlib.import_module(f"tsbench.commands.{module}"), command)


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on it)."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):   # no file descriptor (captured): not a pipe of ours
        return False


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="tsbench")
def cli() -> None:
    """tsbench: benchmark time-series databases.

    Phases: generate (data), load (into a database, verified), queries (drawn
    once, for every database), execute (latency per query type) and validate
    (every answer against a reference engine); `run` drives them all from an
    experiment file. `stream` writes generated points for a duration at a
    rate (inch's way). `servers` installs and runs the databases tsbench
    runs itself."""


def main(argv: list[str] | None = None) -> None:
    """The entry point. Exit codes: 0 done; 2 bad input or an unusable environment (one
    line naming the option, or the file and line); 3 a missing optional dependency; 70 an
    internal error (one line, the trace in a log file); 130 interrupted (Ctrl-C), 143
    terminated (SIGTERM: handled like Ctrl-C, so a local server is stopped either way); 141
    the reader of the output closed it (as a Unix tool killed by SIGPIPE ends, without a
    word); a command may return its own (1: what was checked differs). Every line is masked."""
    from tsbench.core import signals

    try:
        with signals.as_interrupt() as caught:
            rc = cli.main(args=argv, prog_name="tsbench", standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort):
        name = caught.name or "SIGINT"
        _say(f"tsbench: interrupted ({name})")
        sys.exit(signals.EXIT_CODES[name])
    except _PipeBroken as exc:          # (click's main ends a bare EPIPE itself: none reaches here)
        if _stdout_reader_gone():
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # the exit's flush of stdout
            sys.exit(EXIT_READER_GONE)
        _fail(exc.__cause__)             # another pipe (a database's socket): an error like any
    except Exception as exc:          # noqa: BLE001 - every error ends as one line
        _fail(exc)
    sys.exit(rc if isinstance(rc, int) else 0)


def _fail(exc: Exception) -> None:
    """End with exc's exit code and its one line."""
    code, line = _failure(exc)
    _say(line)
    sys.exit(code)


EXIT_READER_GONE = 128 + 13   # as a process killed by SIGPIPE (13) ends in a shell
INTERNAL_ERROR = 70          # EX_SOFTWARE: a bug of tsbench's


def _say(line: str) -> None:
    from tsbench.core.secrets import mask

    click.echo(mask(line), err=True)


def _failure(exc: Exception) -> tuple[int, str]:
    """The exit code and the one line for an exception that reached main()."""
    if isinstance(exc, UserError):
        return 2, f"tsbench: error: {exc}"
    if isinstance(exc, click.ClickException):
        return exc.exit_code, f"tsbench: error: {exc.format_message()}"
    if isinstance(exc, ImportError) and str(exc).startswith("tsbench:"):
        return 3, str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        return 2, f"tsbench: error: {exc.filename}: {exc.strerror or exc}"
    msg = " ".join(str(exc).split())
    return INTERNAL_ERROR, f"tsbench: internal error: {type(exc).__name__}: {msg}, details in {_crash_log(exc)}"


def _crash_log(exc: Exception) -> str:
    """The trace of exc, masked, in a new file under $TSBENCH_HOME/logs (else the temp
    dir); its path."""
    import tempfile
    import time
    import traceback

    from tsbench.core.secrets import mask

    text = mask(f"tsbench {' '.join(sys.argv[1:])}\n" + "".join(traceback.format_exception(exc)))
    dirs = [pathlib.Path(tempfile.gettempdir()) / "tsbench-logs"]
    try:
        from tsbench.databases.shared.server import home

        dirs.insert(0, home() / "logs")
    except Exception:                 # noqa: BLE001 - an unusable home: the temp dir
        pass
    for d in dirs:
        try:
            d.mkdir(parents=True, exist_ok=True)
            f = d / f"internal-error-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log"
            f.write_text(text)
            return str(f)
        except OSError:
            continue
    return "(no writable log directory)"
