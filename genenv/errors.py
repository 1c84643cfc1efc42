"""Errors shown to the user as one line instead of a traceback: a request that is wrong, a warehouse that failed."""


class WarehouseError(RuntimeError):
    """A warehouse read or write failed; the message names the table or URI and the reason, never a secret."""


class RerunError(RuntimeError):
    """A requested re-run cannot start; nothing was written."""


def first_line(exc: BaseException) -> str:
    """An exception's reason without the page under it: its message's first line, or its type's name."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
