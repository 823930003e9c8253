"""The one error type users see: a UserError's message is printed as one line
by the CLI (no traceback). Every phase raises it for bad input."""


class UserError(Exception):
    """Bad input: the message names the option, or the file and field, and the fix."""
