"""Errors every phase shares. A UserError is printed as one line (cli.main)."""


class UserError(Exception):
    """Bad input or an unusable environment: one line naming the option, file or fix."""


class ServerError(UserError):
    """A server tsbench runs could not be installed, started or reached; the text
    carries the server's own words (the tail of its log or its answer)."""
