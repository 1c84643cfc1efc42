"""The one exception the warehouse raises, in its own module so storage helpers can raise it too."""


class WarehouseError(RuntimeError):
    """A warehouse read or write failed; the message names the table or URI and the reason, never a secret."""
