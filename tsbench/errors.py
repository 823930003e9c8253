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
    return UserError(f"{path}{where}: not valid YAML ({getattr(exc, 'problem', None) or exc}{at})")
