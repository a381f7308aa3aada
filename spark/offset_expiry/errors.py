"""Errors a user can act on (wrong address, missing topic, bad flag): shown as one line, never a traceback."""


class InputError(Exception):
    """The analysis cannot run with what it was given, or cannot reach what it needs."""
