"""Errors that reach a user as one line, never as a traceback."""


class UserError(Exception):
    """Bad input or an unreachable dependency: the CLI prints the message alone and exits with 2."""
