"""Errors that mean "the request is wrong", shown to the user as one line instead of a traceback."""


class RerunError(RuntimeError):
    """A requested re-run cannot start; nothing was written."""
