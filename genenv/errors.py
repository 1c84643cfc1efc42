"""Errors that mean "the request is wrong", shown to the user as one line instead of a traceback."""


class RerunError(RuntimeError):
    """A requested re-run cannot start; nothing was written."""


def first_line(exc: BaseException) -> str:
    """An exception's reason without the page under it: its message's first line, or its type's name."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
