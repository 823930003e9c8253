"""Errors every phase shares. A UserError is printed as one line (cli.main)."""


class UserError(Exception):
    """Bad input or an unusable environment: one line naming the option, file or fix."""


class ServerError(UserError):
    """A server tsbench runs could not be installed, started or reached; the text
    carries the server's own words (the tail of its log or its answer)."""


def yaml_error(path, exc: Exception) -> UserError:
    """A YAML file that does not parse, as one line: `FILE:LINE: not valid YAML (problem, line L column C)`."""
    mark = getattr(exc, "problem_mark", None)
    where = f":{mark.line + 1}" if mark else ""
    at = f", line {mark.line + 1} column {mark.column + 1}" if mark else ""
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())    # a reader's error spans lines
    return UserError(f"{path}{where}: not valid YAML ({problem}{at})")


class LoadError(UserError):
    """A load or stream that failed (phase 2): the server's words, a client slot's
    cause, or a count shortfall."""


class Retryable(Exception):
    """The server pushed back (overload, 429/503, reset): retry the same batch later."""


class Fatal(Exception):
    """The server refused the data or the query for good; the text is the server's own words."""


class Unsupported(Exception):
    """A query type a target does not run: recorded with the reason, never run."""


class ServerLacks(Unsupported):
    """A type the dialect implements but the server at hand cannot run (its release
    lacks a function): recorded as unsupported with the reason, like Unsupported."""
