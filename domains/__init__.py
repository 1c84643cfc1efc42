"""Task families. Importing this package registers the built-in domains."""

from genenv.domains import tool_call  # noqa: F401
